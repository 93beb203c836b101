"""Traces end to end from Python and the command line: ``[jobs.trace]`` runs for every readable
trace, ``tracewatt trace info`` / ``trace convert`` / ``record``, a stuck trace through
``tracewatt run``, and NPB's replays against the traces' and NPB's own timings.

The real traces are the repository's ``tests/data`` (provenance in its README). Tests marked
``optional`` read the NPB class B traces (the optional data, ``conftest.OPTIONAL_DATA``); they run
only with ``-m optional`` and skip, saying why, where that data is missing."""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import tracewatt
from conftest import ROOT, CliResult
from tracewatt import cli
from tracewatt.cli import trace as cli_trace

DATA = ROOT / "tests" / "data"


@pytest.fixture
def trace_cli(
    run_cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., CliResult]]:
    """``run_cli`` with the trace commands registered (until cli.py registers them itself)."""
    original = cli.build_parser

    def build_parser() -> argparse.ArgumentParser:
        p = original()
        sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
        if "trace" not in sub.choices:
            cli_trace.register(sub)
        return p

    monkeypatch.setattr(cli, "build_parser", build_parser)
    yield run_cli


def _config(trace: Path | str, ranks: int, **trace_opts: Any) -> dict[str, Any]:
    return {
        "seed": 1,
        "machine": {
            "ranks_per_node": 1,
            "topology": {"kind": "single_switch", "nodes": ranks},
            "links": {"bandwidth_gbps": 10.0, "latency_ns": 2500.0},
        },
        "jobs": [{"name": "trace", "ranks": ranks, "trace": {"path": str(trace), **trace_opts}}],
    }


def _info(path: Path | str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(tracewatt._tracewatt.trace_info(str(path)))
    return out


def _split_list(tmp: Path) -> Path:
    """actions0.txt + actions1.txt are one 2-rank trace (SimGrid's ``split_traces`` list)."""
    a = DATA / "simgrid-ti" / "actions"
    lst = tmp / "split_traces"
    lst.write_text(f"{a / 'actions0.txt'}\n{a / 'actions1.txt'}\n", encoding="utf-8")
    return lst


def _readable(tmp: Path) -> list[Path]:
    """Every trace in tests/data: 4 DUMPI, 3 OTF2, 10 SimGrid action files, the 32-rank SimGrid
    trace and the split pair."""
    dumpi = sorted(p for p in (DATA / "dumpi").iterdir() if p.is_dir())
    otf2 = sorted(p for p in (DATA / "otf2").iterdir() if p.is_dir())
    actions = sorted(
        p
        for p in (DATA / "simgrid-ti" / "actions").glob("*.txt")
        if p.name not in ("actions0.txt", "actions1.txt")
    )
    return [*dumpi, *otf2, *actions, DATA / "simgrid-ti" / "ti-32ranks", _split_list(tmp)]


# --------------------------------------------------------------------------- simulate


def test_every_readable_trace_simulates(tmp_path: Path) -> None:
    traces = _readable(tmp_path)
    assert len(traces) == 19
    for p in traces:
        info = _info(p)
        res = tracewatt.simulate(_config(p, int(info["ranks"])))
        assert len(res.ranks) == info["ranks"], p
        # Every point-to-point byte the trace recorded is sent; collectives other than barrier
        # add their own messages. Calls the reader skips (and reports: sst-macro's archive has
        # some) send nothing, so there the recorded bytes are no target.
        sent = int(res.ranks["bytes_sent"].sum())
        if info["collective_bytes"] == 0 and not info["unsupported"]:
            assert sent == info["p2p_bytes"], p
        elif not info["unsupported"]:
            assert sent > info["p2p_bytes"], p
        # The run ends when its last rank does.
        assert res.summary["makespan_s"] == res.ranks["finish_s"].max(), p


def test_four_ranks_per_node() -> None:
    """All of FT on one node: its messages go through memory, so no link carries a packet, and
    the ranks compute and send exactly what they do spread over four nodes."""
    cfg = _config(DATA / "dumpi" / "npb-ft.S-4ranks", 4)
    spread = tracewatt.simulate(cfg)
    cfg["machine"]["ranks_per_node"] = 4
    cfg["machine"]["topology"]["nodes"] = 2
    res = tracewatt.simulate(cfg)
    assert res.summary["jobs"][0]["nodes"] == 1
    assert res.summary["network"]["packets"] == 0
    assert spread.summary["network"]["packets"] > 0
    for key in ("count", "bytes"):
        assert res.summary["messages"][key] == spread.summary["messages"][key], key
    for col in ("compute_s", "bytes_sent", "sends"):
        assert res.ranks[col].tolist() == spread.ranks[col].tolist(), col


def _npb_figure(path: Path, key: str) -> float:
    """``<key> = <number>`` or ``<key>,<number>`` in an NPB output file."""
    m = re.search(re.escape(key) + r"\s*[=,]\s*([0-9.eE+-]+)", path.read_text(encoding="utf-8"))
    assert m, (path, key)
    return float(m.group(1))


@pytest.mark.parametrize("name", ["npb-cg.S-4ranks", "npb-ft.S-4ranks"])
def test_npb_replay_within_the_traced_run(name: str) -> None:
    """The traced runs had 4 ranks on 2 cores, each rank spending most of its time inside MPI
    calls waiting for the rank that shared its core. The replay gives every rank a node of its
    own and moves CG's 4.7 MB and FT's 6.3 MB per rank at 10 Gb/s (4-5 ms), so it ends after
    the longest rank's recorded compute and before the traced span (first call to last). That
    span holds NPB's timed loop (``Time in seconds``, two decimals) and lies within the
    program's lifetime (``Total time``, the benchmark's own timer)."""
    d = DATA / "dumpi" / name
    out = d / "npb-output.txt"
    span = _info(d)["duration_s"]
    res = tracewatt.simulate(_config(d, 4))
    assert res.ranks["compute_s"].max() < res.summary["makespan_s"] < span
    timed = _npb_figure(out, "Time in seconds")
    assert timed - 0.005 <= span <= _npb_figure(out, "[MO833] Total time")


def _walltimes_ns(dump: Path) -> list[tuple[int, int]]:
    """(entering, returning) wall-clock times, ns, of every call in sst-dumpi's text dump."""
    text = dump.read_text(encoding="utf-8")

    def ns(kind: str) -> list[int]:
        found = re.findall(rf" {kind} at walltime (\d+)\.(\d{{9}})", text)
        return [int(s) * 10**9 + int(frac) for s, frac in found]

    enter, leave = ns("entering"), ns("returning")
    assert len(enter) == len(leave) > 0, dump
    return list(zip(enter, leave, strict=True))


def test_testtrace_rank0_computes_what_sst_dumpi_recorded() -> None:
    """Rank 0 of sst-dumpi's test trace computes, in the replay, exactly the time between its
    calls in sst-dumpi's own text dump (92 us: 24, 6, 7, 15, 10, 8, 15 and 7 us)."""
    d = DATA / "dumpi" / "sst-dumpi-testtrace"
    calls = _walltimes_ns(d / "testtrace-0000.txt")
    gaps_ns = sum(nxt[0] - cur[1] for cur, nxt in itertools.pairwise(calls))
    assert gaps_ns == 92_000
    res = tracewatt.simulate(_config(d, 4))
    assert res.ranks["compute_s"].iloc[0] == pytest.approx(gaps_ns * 1e-9, abs=1e-15)


def test_relative_path_against_config_dir(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "t.txt").write_text("0 init\n1 init\n0 send 1 0 10\n1 recv 0 0 10\n")
    cfg = tmp_path / "conf" / "run.toml"
    cfg.write_text(
        "[machine]\n[machine.topology]\nkind = 'single_switch'\nnodes = 2\n"
        "[machine.links]\nbandwidth_gbps = 10.0\n"
        "[[jobs]]\nranks = 2\n[jobs.trace]\npath = '../t.txt'\n",
        encoding="utf-8",
    )
    assert tracewatt.simulate(cfg).summary["messages"]["count"] == 1
    with pytest.raises(tracewatt.ConfigError, match=r"jobs\[0\]\.trace\.path"):
        tracewatt.simulate(_config("no-such-trace-dir", 2))


def test_trace_errors_are_trace_errors(tmp_path: Path) -> None:
    assert issubclass(tracewatt.TraceError, tracewatt.WorkloadError)
    otf2 = tmp_path / "otf2"
    shutil.copytree(DATA / "otf2" / "pipit-ping-pong", otf2)
    evt = otf2 / "traces" / "1.evt"
    evt.chmod(0o644)
    evt.write_bytes(evt.read_bytes()[:500])
    with pytest.raises(tracewatt.TraceError, match=r"1\.evt: rank 1, byte offset \d+"):
        tracewatt.simulate(_config(otf2, 2))
    for f in (DATA / "dumpi" / "sst-dumpi-testtrace").iterdir():
        shutil.copy(f, tmp_path / f.name)
    b = tmp_path / "testtrace-0001.bin"
    b.write_bytes(b.read_bytes()[:300])
    with pytest.raises(tracewatt.TraceError, match=r"testtrace-0001\.bin.*byte offset"):
        tracewatt._tracewatt.trace_info(str(tmp_path))
    with pytest.raises(tracewatt.ConfigError, match=r"jobs\[0\]\.ranks.*4 ranks"):
        tracewatt.simulate(_config(DATA / "dumpi" / "npb-cg.S-4ranks", 5))


def test_stuck_trace_run_exits_3_naming_the_ranks(
    trace_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    # Both ranks receive before they send: matched messages, but a deadlock in this order.
    t = tmp_path / "stuck.txt"
    t.write_text(
        "0 init\n1 init\n0 recv 1 0 64\n0 send 1 0 64\n1 recv 0 0 64\n1 send 0 0 64\n"
        "0 finalize\n1 finalize\n",
        encoding="utf-8",
    )
    cfg = tmp_path / "stuck.toml"
    cfg.write_text(
        "[machine]\n[machine.topology]\nkind = 'single_switch'\nnodes = 2\n"
        "[machine.links]\nbandwidth_gbps = 10.0\n"
        "[[jobs]]\nname = 'stuck'\nranks = 2\n[jobs.trace]\npath = 'stuck.txt'\n",
        encoding="utf-8",
    )
    r = trace_cli("run", cfg)
    assert r.code == 3, r.err
    assert "rank 0" in r.err and "receive from rank 1" in r.err, r.err
    assert "rank 1" in r.err and "receive from rank 0" in r.err, r.err


# --------------------------------------------------------------------------- trace info


# Per-trace call counts summed over ranks, from tests/data/README.md (testbgp: per rank x 7;
# OTF2 ping-pong and stencil4d), the crate README (NPB CG/FT: 6720 send/irecv/wait; FT's
# comm_splits) and, for sst-macro's OTF2 archive, the reference OTF2 library's Enter counts.
EXPECTED_CALLS: dict[str, dict[str, int]] = {
    "dumpi/sst-macro-testbgp": {
        "isend": 84 * 7,
        "irecv": 84 * 7,
        "waitall": 14 * 7,
        "alltoall": 49,
    },
    "dumpi/npb-cg.S-4ranks": {"send": 6720, "irecv": 6720, "wait": 6720},
    "dumpi/npb-ft.S-4ranks": {"comm_split": 8},
    "otf2/pipit-ping-pong": {"send": 16, "recv": 16},
    "otf2/tracer-stencil4d-32ranks": {"send": 512, "irecv": 512, "barrier": 96},
    "otf2/sst-macro-10ranks": {
        "isend": 1440,
        "irecv": 1440,
        "wait": 1080,
        "waitall": 480,
        "allreduce": 360,
        "iallreduce": 360,
        "comm_split": 20,
    },
}
EXPECTED_NAMES: dict[str, set[str]] = {
    "dumpi/sst-dumpi-testtrace": {"init", "barrier", "isend", "recv", "wait", "allreduce"},
    "simgrid-ti/ti-32ranks": {"alltoall", "alltoallv", "allreduce", "bcast", "gather"},
    "simgrid-ti/actions/actions_with_isend.txt": {"isend", "wait"},
    "simgrid-ti/actions/actions_waitall.txt": {"waitall"},
}


@pytest.mark.parametrize("rel", sorted({*EXPECTED_CALLS, *EXPECTED_NAMES}))
def test_trace_info_json_counts(trace_cli: Callable[..., CliResult], rel: str) -> None:
    r = trace_cli("trace", "info", "--json", DATA / rel)
    assert r.code == 0, r.err
    info = json.loads(r.out)
    assert info["ranks"] >= 2
    for name, n in EXPECTED_CALLS.get(rel, {}).items():
        assert info["calls"].get(name) == n, (name, info["calls"])
    assert EXPECTED_NAMES.get(rel, set()) <= set(info["calls"]), info["calls"]
    if rel.startswith(("dumpi/", "otf2/")):
        assert info["format"] == rel.split("/")[0] and info["duration_s"] > 0


def test_trace_info_table(trace_cli: Callable[..., CliResult]) -> None:
    r = trace_cli("trace", "info", DATA / "dumpi" / "npb-cg.S-4ranks")
    assert r.code == 0, r.err
    assert "format                   dumpi" in r.out
    assert re.search(r"^irecv\s+6,720$", r.out, re.M), r.out
    assert "total" in r.out


def test_trace_info_bytes_on_the_wire_and_flops(trace_cli: Callable[..., CliResult]) -> None:
    # CG.S sends 291,632 B x 16 x 4 = 18,664,448 B point to point (see test_examples); its
    # collectives' arguments are 48 B (4 ranks x 12 B of bcast and reduce buffers), which
    # binomial trees send as 3 messages each: 3 x 12 B on the wire.
    r = trace_cli("trace", "info", "--json", DATA / "dumpi" / "npb-cg.S-4ranks")
    info = json.loads(r.out)
    assert (info["p2p_bytes"], info["collective_bytes"]) == (18_664_448, 48)
    assert info["wire_bytes"] == 18_664_448 + 3 * 12
    assert info["rank_flops"] == []
    r = trace_cli("trace", "info", DATA / "dumpi" / "npb-cg.S-4ranks")
    assert "collective count x size  48 B  (48 B)" in r.out
    assert "bytes on the wire        17.8 MiB  (18,664,484 B)" in r.out
    # SimGrid: flops per rank (compute lines and reductions' comp_size, summed with awk).
    r = trace_cli("trace", "info", DATA / "simgrid-ti" / "ti-32ranks")
    assert re.search(r"^ +0 +73,132,290,173$", r.out, re.M), r.out
    assert re.search(r"^total +2,274,465,493,572$", r.out, re.M), r.out


def test_trace_info_shows_rank_times_and_shared_core_warnings(
    trace_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    # NPB FT class S was traced with 4 ranks on 2 cores: wall-clock compute 2-3x CPU time.
    ft = DATA / "dumpi" / "npb-ft.S-4ranks"
    info = _info(ft)
    shared = [
        t["rank"] for t in info["rank_times"] if t["compute_wall_s"] > 1.5 * t["compute_cpu_s"]
    ]
    assert shared == [0, 1, 2, 3]
    r = trace_cli("trace", "info", ft)
    assert r.code == 0, r.err
    assert re.search(r"rank\s+compute \(wall\)\s+compute \(CPU\)\s+inside MPI", r.out), r.out
    warned = re.findall(r"^warning: rank (\d+): compute on the wall clock", r.out, re.M)
    assert [int(w) for w in warned] == shared, r.out
    for clock, warns in [("wall", True), ("cpu", False)]:
        toml = tmp_path / f"{clock}.toml"
        toml.write_text(
            "seed = 1\n[machine]\nranks_per_node = 1\n[machine.topology]\n"
            'kind = "single_switch"\nnodes = 4\n[machine.links]\nbandwidth_gbps = 10.0\n'
            'latency_ns = 2500.0\n[[jobs]]\nname = "ft"\nranks = 4\n[jobs.trace]\n'
            f'path = "{ft}"\ncompute_clock = "{clock}"\n'
        )
        r = trace_cli("run", toml)
        assert r.code == 0, r.err
        assert ("warning: ft: rank 0: compute on the wall clock" in r.err) == warns, r.err


def test_trace_info_table_otf2(trace_cli: Callable[..., CliResult]) -> None:
    r = trace_cli("trace", "info", DATA / "otf2" / "pipit-ping-pong" / "traces.otf2")
    assert r.code == 0, r.err
    assert "format                   otf2" in r.out
    assert re.search(r"^send\s+16$", r.out, re.M), r.out


def test_trace_info_errors(trace_cli: Callable[..., CliResult], tmp_path: Path) -> None:
    r = trace_cli("trace", "info", tmp_path / "missing")
    assert r.code == 2 and "no such file" in r.err
    (tmp_path / "junk.txt").write_text("hello\n")
    r = trace_cli("trace", "info", tmp_path / "junk.txt")
    assert r.code == 3 and "not a trace" in r.err
    r = trace_cli("trace", "info", DATA / "dumpi" / "npb-cg.S-4ranks", "--flops-per-s", "0")
    assert r.code == 2
    cg = DATA / "dumpi" / "npb-cg.S-4ranks"
    bad_options = [
        ("--compute-scale", "inf", "--compute-scale: expected a finite number >= 0, got inf"),
        ("--compute-scale", "nan", "--compute-scale: expected a finite number >= 0, got nan"),
        ("--compute-scale", "-1", "--compute-scale: expected a finite number >= 0, got -1.0"),
        ("--flops-per-s", "inf", "--flops-per-s: expected a finite number > 0, got inf"),
        ("--flops-per-s", "0", "--flops-per-s: expected a finite number > 0, got 0.0"),
    ]
    for option, value, message in bad_options:
        for command in (["info", cg], ["convert", cg, "-o", tmp_path / "out"]):
            r = trace_cli("trace", *command, option, value)
            assert (r.code, r.err) == (2, f"tracewatt: error: {message}\n"), (command, option)
            assert not (tmp_path / "out").exists()
    with pytest.raises(SystemExit) as e:
        trace_cli("trace", "bogus")
    assert e.value.code == 2


# --------------------------------------------------------------------------- convert


@pytest.mark.parametrize(
    "rel",
    [
        "dumpi/npb-cg.S-4ranks",
        "dumpi/npb-ft.S-4ranks",
        "simgrid-ti/ti-32ranks",
        "otf2/sst-macro-10ranks",
        "otf2/tracer-stencil4d-32ranks",
    ],
)
def test_convert_then_run_same_makespan(
    trace_cli: Callable[..., CliResult], tmp_path: Path, rel: str
) -> None:
    src = DATA / rel
    out = tmp_path / "native"
    r = trace_cli("trace", "convert", src, "-o", out)
    assert r.code == 0, r.err
    assert "converted" in r.out
    ni = _info(out)
    si = _info(src)
    assert ni["format"] == "native" and ni["ranks"] == si["ranks"] and ni["calls"] == si["calls"]
    a = tracewatt.simulate(_config(src, si["ranks"])).summary["makespan_s"]
    b = tracewatt.simulate(_config(out, si["ranks"])).summary["makespan_s"]
    assert a == b


def _files(d: Path) -> dict[str, bytes]:
    return {f.name: f.read_bytes() for f in sorted(d.iterdir())}


def test_convert_refuses_an_output_overlapping_its_input(
    trace_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    nat = tmp_path / "nat"
    assert trace_cli("trace", "convert", DATA / "dumpi" / "npb-cg.S-4ranks", "-o", nat).code == 0
    before = _files(nat)
    # The output is the input, lies inside it, or holds it (a native trace named by its index).
    for src, out in [(nat, nat), (nat, nat / "sub"), (nat / "trace.twi", nat)]:
        r = trace_cli("trace", "convert", src, "-o", out)
        assert (r.code, r.err) == (
            2,
            f"tracewatt: error: -o {out}: the output overlaps the input trace {src}; give a "
            "directory outside it\n",
        )
        assert _files(nat) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nat"]


def test_failed_convert_leaves_the_output_as_it_was(
    trace_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    """The conversion is written beside OUT and moved in only when complete: a trace that fails
    on its last rank, after the others were written, leaves no file of it in OUT."""
    out = tmp_path / "out"
    assert trace_cli("trace", "convert", DATA / "otf2" / "pipit-ping-pong", "-o", out).code == 0
    (out / "notes.txt").write_text("kept\n")
    before = _files(out)
    bad = tmp_path / "bad"
    assert trace_cli("trace", "convert", DATA / "dumpi" / "npb-cg.S-4ranks", "-o", bad).code == 0
    with (bad / "rank-3.twr").open("r+b") as f:
        f.truncate(100)
    listing = sorted(p.name for p in tmp_path.iterdir())
    for target in (out, tmp_path / "new"):
        r = trace_cli("trace", "convert", bad, "-o", target)
        assert r.code == 3 and "rank-3.twr" in r.err, r.err
        # No temporary directory is left beside it, and a new OUT is not created.
        assert sorted(p.name for p in tmp_path.iterdir()) == listing
    assert _files(out) == before


def test_convert_replaces_the_trace_in_an_existing_output(
    trace_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    """A 2-rank trace over a 4-rank one: the old rank files go, other files stay."""
    out = tmp_path / "out"
    assert trace_cli("trace", "convert", DATA / "dumpi" / "npb-cg.S-4ranks", "-o", out).code == 0
    (out / "notes.txt").write_text("kept\n")
    src = DATA / "otf2" / "pipit-ping-pong"
    r = trace_cli("trace", "convert", "--json", src, "-o", out)
    assert r.code == 0, r.err
    assert json.loads(r.out)["path"] == str(out)
    assert sorted(p.name for p in out.iterdir()) == [
        "notes.txt",
        "rank-0.twr",
        "rank-1.twr",
        "trace.twi",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert _info(out)["calls"] == _info(src)["calls"]


def test_convert_to_an_unwritable_output_is_a_usage_error(
    trace_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    (tmp_path / "file").write_text("")
    out = tmp_path / "file" / "out"
    r = trace_cli("trace", "convert", DATA / "otf2" / "pipit-ping-pong", "-o", out)
    assert (r.code, r.err) == (
        2,
        f"tracewatt: error: {out}: cannot write the converted trace there: {out.parent} is a "
        "file\n",
    )
    r = trace_cli("trace", "convert", DATA / "otf2" / "pipit-ping-pong", "-o", "/proc/tw-out")
    assert r.code == 2 and "/proc/tw-out: cannot write the converted trace there" in r.err


# --------------------------------------------------------------------------- record


needs_mpi = pytest.mark.skipif(
    shutil.which("mpicc") is None or shutil.which("mpirun") is None,
    reason="mpicc/mpirun not found (apt-get install openmpi-bin libopenmpi-dev)",
)

# tracer/tests/ring.c, per rank; its last receive (a wildcard) is cancelled.
RING_CALLS_PER_RANK = {
    "send": 5,
    "recv": 11,
    "isend": 16,
    "irecv": 11,
    "cancel": 1,
    "waitall": 6,
    "allreduce": 6,
    "exscan": 1,
}
RING_P2P_BYTES = 4 * (5 * 8000 + 10 * 400 + 5 * 8 + 8)


def _ring(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """tracer/tests/ring.c built, and the command running it on 4 ranks; the tracer builds into
    a cache of the test's own."""
    exe = tmp_path / "ring_c"
    subprocess.run(
        ["mpicc", "-O2", "-o", str(exe), str(ROOT / "tracer" / "tests" / "ring.c")], check=True
    )
    monkeypatch.setenv("OMPI_ALLOW_RUN_AS_ROOT", "1")
    monkeypatch.setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(cli_trace.TRACER_LIB_ENV, raising=False)
    return ["mpirun", "--oversubscribe", "-np", "4", str(exe)]


def _check_ring(info: dict[str, Any]) -> None:
    assert info["format"] == "native" and info["ranks"] == 4
    for name, n in RING_CALLS_PER_RANK.items():
        assert info["calls"][name] == 4 * n, (name, info["calls"])
    assert info["p2p_bytes"] == RING_P2P_BYTES


@needs_mpi
def test_record_round_trip(
    trace_cli: Callable[..., CliResult], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cmd = _ring(tmp_path, monkeypatch)
    out = tmp_path / "rec"
    r = trace_cli("record", "--json", "-o", out, "--", *cmd)
    assert r.code == 0, r.err
    # The first record builds the tracer into the cache.
    build = cli_trace.tracer_sources() / "build.sh"
    cache = tmp_path / "cache" / "tracewatt"
    assert r.err.startswith(f"tracewatt: building the tracer: sh {build} {cache}/tracer-"), r.err
    info = json.loads(r.out)
    _check_ring(info)
    res = tracewatt.simulate(_config(out, 4))
    # The replay sends every recorded point-to-point byte, plus its collectives' messages.
    assert res.ranks["bytes_sent"].sum() > info["p2p_bytes"]
    # A second recording into the same directory needs --force; the tracer is not built again.
    r = trace_cli("record", "-o", out, "--", *cmd)
    assert r.code == 2 and "--force" in r.err
    r = trace_cli("record", "--force", "-o", out, "--", *cmd)
    assert r.code == 0, r.err
    assert "building the tracer" not in r.err


def _record_outside(
    cwd: Path,
    python: list[str | Path],
    tracewatt_cmd: list[str | Path],
    cmd: list[str],
    env: dict[str, str],
) -> Path:
    """Records ``cmd`` with ``tracewatt_cmd record`` from ``cwd`` (outside the checkout), checks
    the recording, and returns where that installation finds the tracer's sources."""
    code = "from tracewatt.cli import trace; print(trace.tracer_sources())"
    where = subprocess.run(
        [*python, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    assert where.returncode == 0, where.stderr
    p = subprocess.run(
        [*tracewatt_cmd, "record", "--json", "-o", "rec", "--", *cmd],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert p.returncode == 0, p.stderr
    _check_ring(json.loads(p.stdout))
    return Path(where.stdout.strip())


@needs_mpi
def test_record_from_an_installed_copy_outside_the_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The package laid out as a wheel installs it (files, no links, no checkout beside it),
    run from a directory outside the checkout: ``record`` builds the tracer from the sources
    inside the package."""
    cmd = _ring(tmp_path, monkeypatch)
    site = tmp_path / "site"
    shutil.copytree(
        Path(tracewatt.__file__).parent,
        site / "tracewatt",
        symlinks=False,
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    sources = _record_outside(
        tmp_path, [sys.executable], [sys.executable, "-m", "tracewatt"], cmd, env
    )
    assert sources == site / "tracewatt" / "_tracer"
    built = list((tmp_path / "cache" / "tracewatt").glob("tracer-*/libtwtrace.so"))
    assert [b.parent.parent for b in built] == [tmp_path / "cache" / "tracewatt"]


@pytest.mark.slow
@needs_mpi
def test_pip_install_then_record_from_anywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """README's install, ``pip install .``, into a fresh virtual environment (a Rust release
    build: minutes), then ``tracewatt record`` from a directory outside the checkout."""
    cmd = _ring(tmp_path, monkeypatch)
    venv = tmp_path / "venv"
    # The system's packages (pandas, pyarrow, maturin) serve the venv: no download.
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv], check=True)
    pip = [venv / "bin" / "pip", "install", "--no-deps", "--no-build-isolation", ROOT]
    installed = subprocess.run(pip, capture_output=True, text=True, check=False)
    assert installed.returncode == 0, installed.stderr
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    sources = _record_outside(
        tmp_path, [venv / "bin" / "python"], [venv / "bin" / "tracewatt"], cmd, env
    )
    assert sources.is_relative_to(venv), sources


def test_record_usage_errors(trace_cli: Callable[..., CliResult], tmp_path: Path) -> None:
    r = trace_cli("record", "-o", tmp_path / "x")
    assert r.code == 2 and "command" in r.err
    r = trace_cli(
        "record", "-o", tmp_path / "x", "--tracer-lib", tmp_path / "nope.so", "--", "true"
    )
    assert r.code == 2 and "nope.so" in r.err
    r = trace_cli("record", "-o", tmp_path / "x", "--", "no-such-command-xyz")
    assert r.code == 2 and "not found" in r.err


def test_record_checks_its_output_before_running_anything(
    trace_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    # Checked before the tracer (a library that is not there would be named first) and the
    # command (which would leave its marker).
    marker = tmp_path / "ran"
    (tmp_path / "file").write_text("")
    for out, why in [
        (tmp_path / "file" / "x", "Not a directory"),
        (Path("/proc/tw-record-out"), "No such file or directory"),
    ]:
        r = trace_cli(
            "record", "-o", out, "--tracer-lib", tmp_path / "nope.so", "--", "touch", marker
        )
        assert (r.code, r.out) == (2, "")
        assert r.err == f"tracewatt: error: {out}: cannot write the trace there: {why}\n"
    assert not marker.exists()
    r = trace_cli("record", "-o", tmp_path / "file", "--", "touch", marker)
    assert (r.code, r.out) == (2, "")
    assert r.err == (
        f"tracewatt: error: {tmp_path / 'file'}: exists and is not a directory; give a directory "
        "for -o\n"
    )
    assert not marker.exists()


@pytest.mark.skipif(shutil.which("mpicc") is None, reason="mpicc not found")
def test_the_tracer_is_built_once_per_sources_in_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for name in ("build.sh", "twtrace.c", "funcs.h"):
        shutil.copy(ROOT / "tracer" / name, src / name)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    mpicc = shutil.which("mpicc")
    assert mpicc is not None
    lib = cli_trace._built_tracer(src, quiet=True)
    cache = cli_trace.tracer_cache_dir(src, mpicc)
    assert cache.parent == tmp_path / "cache" / "tracewatt"
    assert lib == cache / "libtwtrace.so" and lib.is_file()
    # The build's scratch folder is gone: only the library is left.
    assert [f.name for f in cache.iterdir()] == ["libtwtrace.so"]
    # Found there again, not rebuilt.
    built = lib.stat().st_mtime_ns
    assert cli_trace._built_tracer(src, quiet=True) == lib
    assert lib.stat().st_mtime_ns == built
    # Other sources, or another MPI's compiler wrapper, build elsewhere.
    assert cli_trace.tracer_cache_dir(src, "/opt/other-mpi/bin/mpicc") != cache
    with (src / "twtrace.c").open("a") as f:
        f.write("\n")
    assert cli_trace.tracer_cache_dir(src, mpicc) != cache


def test_a_relative_xdg_cache_home_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    d = cli_trace.tracer_cache_dir(ROOT / "tracer", "/usr/bin/mpicc")
    assert d.parent == tmp_path / ".cache" / "tracewatt"


# --------------------------------------------------------------------------- optional data

# Per rank MPI calls of the NPB class B traces, as sst-dumpi's dumpi2ascii counts them
# (README, Optional data; FT's rank 0 makes one call more than the others).
CLASS_B_CALLS_PER_RANK: dict[str, list[int]] = {
    "ft": [55, 54, 54, 54],
    "cg": [23_947] * 4,
    "mg": [8_873] * 4,
    "sp": [12_461] * 4,
    "bt": [7_469] * 4,
}


@pytest.mark.optional
@pytest.mark.parametrize("bench", sorted(CLASS_B_CALLS_PER_RANK))
def test_npb_class_b_trace_info(
    trace_cli: Callable[..., CliResult], shared: Path, bench: str
) -> None:
    d = shared / "dumpi" / f"npb-{bench}.B-4ranks"
    r = trace_cli("trace", "info", "--json", d)
    assert r.code == 0, r.err
    info = json.loads(r.out)
    assert info["ranks"] == 4 and info["unsupported"] == []
    assert sum(info["calls"].values()) == sum(CLASS_B_CALLS_PER_RANK[bench])
    # NPB's timed loop runs between the first and the last traced call.
    assert _npb_figure(d / "run.log", "Time in seconds") - 0.005 <= info["duration_s"]
