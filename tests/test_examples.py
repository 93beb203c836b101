"""Every example configuration runs, and sends the messages worked out by hand from its
workload (and, for ping-pong, takes the time worked out by hand)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import tracewatt
from conftest import EXAMPLES

EXAMPLE_FILES = sorted(EXAMPLES.glob("*.toml"))

# Per example and job: (messages, bytes), from the workload's definition.
EXPECTED_MESSAGES: dict[str, dict[str, tuple[int, int]]] = {
    # 200 rounds, a 64-byte message each way.
    "pingpong.toml": {"pingpong": (200 * 2, 200 * 2 * 64)},
    # 128 ranks on an 8 x 4 x 4 periodic grid: 6 distinct neighbours, 4 iterations of 4 KiB.
    "custom-torus.toml": {"halo": (128 * 6 * 4, 128 * 6 * 4 * 4096)},
    # 1,056 ranks x 4 messages of 2 KiB.
    "dragonfly-uniform.toml": {"uniform": (1056 * 4, 1056 * 4 * 2048)},
    # 4 x 4 x 4 x 4 periodic grid: 8 neighbours, 3 iterations of 16 KiB.
    "fattree-stencil4d.toml": {"stencil4d": (256 * 8 * 3, 256 * 8 * 3 * 16384)},
    # FT class S (64^3 complex points, N = 262,144), 16 ranks, 1-D layout: one alltoall per FFT
    # of 16 N / 16^2 = 16 KiB per pair, 3 FFTs (the forward one, then one per iteration); per
    # iteration the 16-byte checksum reduce to rank 0 (binomial tree: 15 messages).
    "miwa-npb-ft.toml": {"ft": (3 * 16 * 15 + 2 * 15, 3 * 16 * 15 * 16384 + 2 * 15 * 16)},
    # CG class A (na = 14,000), 64 ranks on an 8 x 8 grid (L = 1,750 rows each), 3 outer
    # iterations of 26 steps. Per step each rank: 3 row-reduction exchanges of 8 L = 14,000 B,
    # the transpose exchange of 14,000 B (except the 8 diagonal ranks, their own partners) and
    # 2 dot products of 3 exchanges of 8 B; per outer iteration 3 exchanges of 16 B (the norm).
    "dragonfly-backplane.toml": {
        "cg": (
            3 * (64 * 26 * 9 + 56 * 26 + 64 * 3),
            3 * (64 * 26 * (3 * 14_000 + 6 * 8) + 56 * 26 * 14_000 + 64 * 3 * 16),
        )
    },
    # The trace's 6,720 sends of 291,632 B per rank and conj_grad call (16 calls, 4 ranks);
    # its barrier (dissemination, 2 rounds of 4 empty messages), bcast and reduce (binomial
    # trees: 3 messages each, of the call's buffer; the trace records 48 collective bytes =
    # 4 ranks x (bcast + reduce buffer), so 3 x 12 B).
    "trace-npb-cg.toml": {"npb-cg": (6720 + 8 + 3 + 3, 291_632 * 16 * 4 + 3 * 12)},
    # The same trace, waiting in mwait: the same messages.
    "mwait-trace-cg.toml": {"npb-cg": (6720 + 8 + 3 + 3, 291_632 * 16 * 4 + 3 * 12)},
    # 64 ranks on a 4 x 4 x 4 periodic grid: 6 neighbours, 3 iterations of 8 KiB. (The perm
    # job's random permutations: test_two_jobs_are_placed_apart.)
    "two-jobs.toml": {"halo": (64 * 6 * 3, 64 * 6 * 3 * 8192)},
    # 600 Mb/s of 1,500-byte frames (12,000 bits): 50,000 frames/s, so 2,500 in 0.05 s paced and
    # 6 bursts of 400 in 0.048 s shaped; a 64-byte ACK per 2 frames.
    "paced-stream.toml": {
        "paced": (2500 + 1250, 2500 * 1500 + 1250 * 64),
        "shaped": (2400 + 1200, 2400 * 1500 + 1200 * 64),
    },
}


def test_examples_exist() -> None:
    assert {p.name for p in EXAMPLE_FILES} == set(EXPECTED_MESSAGES)


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.name)
def test_example_runs(path: Path) -> None:
    t0 = time.perf_counter()
    res = tracewatt.simulate(path)
    wall = time.perf_counter() - t0
    s = res.summary
    cfg_jobs = tracewatt.Config.load(path).resolved()["jobs"]
    assert len(s["jobs"]) == len(cfg_jobs)
    assert len(res.ranks) == sum(j["ranks"] for j in cfg_jobs)
    assert res.ranks["finish_s"].max() == s["makespan_s"]
    expected = EXPECTED_MESSAGES[path.name]
    sent = res.ranks.groupby("job")[["sends", "bytes_sent"]].sum()
    for job, want in expected.items():
        assert (sent.loc[job, "sends"], sent.loc[job, "bytes_sent"]) == want, job
    if len(cfg_jobs) == 1:
        (want,) = expected.values()
        assert (s["messages"]["count"], s["messages"]["bytes"]) == want
    assert wall < 30, f"{path.name} took {wall:.1f} s; examples should be quick"


def test_pingpong_example_time_by_hand() -> None:
    """A 64-byte message crosses 2 links of 10 Gb/s (51.2 ns to serialise, 2.5 us latency each)
    and the switch (1 us, cut-through): 6.0512 us, plus the 1 us send overhead from posting the
    send. Rank 0 posts its send, computes the 1,000 us interval and finds the reply there, so
    each of the 200 rounds takes 1,001 us. Between rounds both links idle past the 600 us EEE
    timeout and sleep; every ping but the first waits 17 us for each (the two wakes in series
    along its path: 41.0512 us); its reply finds them awake (``paired`` 10GBASE-T links wake
    both directions): 7.0512 us. So 199 x 2 wakes, and a mean latency of
    (201 x 7.0512 + 199 x 41.0512) / 400 us."""
    s = tracewatt.simulate(EXAMPLES / "pingpong.toml").summary
    assert s["makespan_s"] == pytest.approx(200 * 1001e-6, rel=1e-12)
    assert s["messages"]["latency_max_s"] == pytest.approx(7.0512e-6 + 2 * 17e-6, rel=1e-9)
    mean_s = (201 * 7.0512e-6 + 199 * 41.0512e-6) / 400
    assert s["messages"]["latency_mean_s"] == pytest.approx(mean_s, rel=1e-9)
    assert s["links"]["wakes"] == 199 * 2
    below = tracewatt.Config.load(EXAMPLES / "pingpong.toml").with_overrides(
        {"jobs.0.workload.interval_us": 500.0}
    )
    s = tracewatt.simulate(below).summary
    # Below the timeout no link ever sleeps: 200 rounds of 501 us, every message 7.0512 us.
    assert s["makespan_s"] == pytest.approx(200 * 501e-6, rel=1e-12)
    assert s["messages"]["latency_max_s"] == pytest.approx(7.0512e-6, rel=1e-9)
    assert s["links"]["wakes"] == 0


def test_two_jobs_are_placed_apart() -> None:
    res = tracewatt.simulate(EXAMPLES / "two-jobs.toml")
    by_job = res.ranks.groupby("job")["node"].apply(set)
    assert not (by_job["halo"] & by_job["perm"])
    jobs = res.jobs.set_index("job")
    assert jobs.loc["perm", "start_s"] == pytest.approx(20e-6)
    assert jobs.loc["halo", "nodes"] == 64 and jobs.loc["perm", "nodes"] == 32
    # 3 random permutations of 32 ranks: every rank not mapped to itself sends one 32 KiB block.
    perm = res.ranks[res.ranks["job"] == "perm"]
    assert perm["sends"].max() <= 3
    assert perm["bytes_sent"].sum() == perm["sends"].sum() * 32768


def test_mwait_trace_replay_pays_one_wake_per_low_power_wait() -> None:
    """Replaying a DUMPI trace with mwait: every wait that went to low power delays its rank by
    the 3 us wake of C1 (no message comes while entering: enter_overhead 0), and those delays are
    what the run gains over spinning at most."""
    path = EXAMPLES / "mwait-trace-cg.toml"
    cfg = tracewatt.Config.load(path).with_overrides({"mpi.wait.enter_overhead_us": 0.0})
    res = tracewatt.simulate(cfg)
    spin = tracewatt.simulate(cfg.with_overrides({"mpi.wait.policy": "spin"}))
    cores = res.cores
    want = (cores["low_power_waits"] * 3e-6).tolist()
    assert cores["wake_delay_s"].tolist() == pytest.approx(want, abs=1e-15)
    # MWAIT's C1 only: every low-power wait and all its time there.
    assert cores["c1_waits"].tolist() == cores["low_power_waits"].tolist()
    assert cores["c1_s"].tolist() == cores["mwait_s"].tolist()
    assert (cores[["c1e_waits", "c3_waits", "c6_waits"]] == 0).all().all()
    # The cores' wait states add up to the time the engine counted each rank blocked in MPI.
    parts = ["spin_s", "mwait_s", "transition_s", "copy_s", "recv_s"]
    waited = cores[parts].sum(axis=1)
    assert waited.tolist() == pytest.approx(res.ranks["wait_s"].tolist(), abs=1e-12)
    # Each wake delays its own rank; the run grows by at most all of them together.
    assert 0.0 <= res.makespan_s - spin.makespan_s <= cores["wake_delay_s"].sum() + 1e-15


def test_messages_table_holds_every_message_with_its_latency_by_hand(tmp_path: Path) -> None:
    """The ping-pong example with `[output] messages`: 400 messages of 64 bytes, each arriving
    1 us (send overhead) + 6.0512 us after its send was posted, plus two 17 us wakes for every
    ping after the first (see the test above); the summary's binned p50 is within its 1/64
    resolution of the exact one."""
    cfg = tracewatt.Config.load(EXAMPLES / "pingpong.toml").with_overrides(
        {"output.messages": True}
    )
    res = tracewatt.simulate(cfg)
    m = res.messages
    assert len(m) == 400
    assert set(m["bytes"]) == {64}
    woken = [7.0512e-6 + (2 * 17e-6 if i % 2 == 0 and i > 0 else 0.0) for i in range(400)]
    assert m["latency_s"].tolist() == pytest.approx(woken, rel=1e-9)
    assert (m["end_s"] - m["start_s"]).tolist() == pytest.approx(m["latency_s"].tolist())
    # Rank 0 pings rank 1 and rank 1 answers, alternately.
    assert m["src_rank"].tolist()[:4] == [0, 1, 0, 1]
    exact_p50 = float(m["latency_s"].median())
    binned = res.summary["messages"]["latency_p50_s"]
    assert exact_p50 * (1 - 1 / 64) <= binned <= exact_p50
    # Written and read back with the other tables.
    res.write(tmp_path / "out")
    back = tracewatt.Results.read(tmp_path / "out")
    assert back.messages.equals(m)
