"""`[machine] network` and `--network`: the flow-level model through the command line, a
sweep's `network` column, and the checks `validate --network flow` runs."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import CliResult, write_toml
from tracewatt import sweep
from tracewatt.report.texts import network_model
from tracewatt.validation import run_checks

Run = Callable[..., CliResult]

# One 3,500-byte message each way between the two nodes of one switch: 1000-byte packets on
# 8 Gb/s links (1 ns a byte), 50 ns links, a 100 ns switch, no MPI overheads. One way takes
# 3500 ns + 2 x 50 ns + 100 ns = 3.7 us in either model (the packet model's last packet, 500 B,
# leaves the source from 3000 to 3500 ns, its head is through the switch at 3150 ns, and it
# leaves the switch from 3150 to 3650 ns, in at 3700 ns), so the round trip takes 7.4 us.
PING_PONG = """\
seed = 3
[machine]
packet_bytes = 1000
buffer_bytes = 8000
switch_latency_ns = 100
[machine.topology]
kind = "single_switch"
nodes = 2
[machine.links]
bandwidth_gbps = 8.0
latency_ns = 50
[mpi]
send_overhead_ns = 0
recv_overhead_ns = 0
[[jobs]]
ranks = 2
[jobs.workload]
kind = "pingpong"
bytes = 3500
iterations = 1
interval_us = 0.0
[power.links]
policy = "always_on"
"""
ROUND_TRIP_S = 7.4e-6


@pytest.fixture
def ping_pong(tmp_path: Path) -> Path:
    return write_toml(tmp_path / "pp.toml", PING_PONG)


def _summary(r: CliResult) -> dict:  # type: ignore[type-arg]
    assert r.code == 0, r.err
    return json.loads(r.out)  # type: ignore[no-any-return]


def test_network_option_overrides_the_configuration(run_cli: Run, ping_pong: Path) -> None:
    packet = _summary(run_cli("run", ping_pong, "--json"))
    assert "model" not in packet["network"]
    assert "network" not in packet["config"]["machine"]
    flow = _summary(run_cli("run", ping_pong, "--json", "--network", "flow"))
    assert flow["network"]["model"] == "flow"
    assert flow["config"]["machine"]["network"] == "flow"
    for s in (packet, flow):
        assert s["makespan_s"] == pytest.approx(ROUND_TRIP_S, rel=1e-12)
    # The option wins over the file, both ways.
    flow_text = PING_PONG.replace("[machine]\n", '[machine]\nnetwork = "flow"\n', 1)
    in_file = write_toml(ping_pong.parent / "flow.toml", flow_text)
    assert _summary(run_cli("run", in_file, "--json"))["network"]["model"] == "flow"
    back = _summary(run_cli("run", in_file, "--json", "--network", "packet"))
    assert "model" not in back["network"]


def test_the_printed_summary_says_flows(run_cli: Run, ping_pong: Path) -> None:
    r = run_cli("run", ping_pong, "--network", "flow")
    assert r.code == 0, r.err
    # The model named with its trains, the defaults' 32 segments of 4 packets, and short
    # messages packet by packet (docs/config.md).
    assert (
        "network model         flow (messages of up to half a buffer switch by switch packet by "
        "packet, up to 32 segments of 4 packets as trains, " in r.out
    )
    # Two messages, one flow each.
    assert "flows                 2" in r.out
    assert not any(line.startswith("packets") for line in r.out.splitlines())
    c = run_cli("compare", ping_pong, "--network", "flow", "--json")
    assert c.code == 0, c.err
    assert json.loads(c.out)["config"]["machine"]["network"] == "flow"


def test_pages_name_the_flow_model_with_its_trains() -> None:
    # The main job's spec (python/tracewatt/studies/default.toml) sends up to 320 segments of
    # 8 packets, and its short messages whole.
    main = {
        "network": "flow",
        "flow_train_segments": 320,
        "flow_segment_packets": 8,
        "flow_short_unit_packets": 0,
    }
    assert network_model(main) == (
        "flow (messages of up to half a buffer switch by switch whole, up to 320 segments of 8 "
        "packets as trains, larger ones as flows sharing link bandwidth max-min fairly; "
        "docs/fast-mode.md)"
    )
    # The defaults, which a resolved configuration leaves out: 32 segments of 4 packets.
    assert "up to 32 segments of 4 packets as trains" in network_model({"network": "flow"})
    assert network_model({"network": "flow", "flow_train_segments": 0}) == (
        "flow (messages of up to half a buffer switch by switch packet by packet, larger ones as "
        "flows sharing link bandwidth max-min fairly; docs/fast-mode.md)"
    )
    units = {"network": "flow", "flow_train_segments": 0, "flow_short_unit_packets": 2}
    assert network_model(units) == (
        "flow (messages of up to half a buffer switch by switch in units of 2 packets, larger "
        "ones as flows sharing link bandwidth max-min fairly; docs/fast-mode.md)"
    )
    # The packet model has no trains, whatever the table says of them.
    assert network_model({"flow_train_segments": 320}) == (
        "packet (every packet through every switch)"
    )


def test_the_same_flow_run_gives_the_same_bytes(run_cli: Run, ping_pong: Path) -> None:
    outs = []
    for name in ("a", "b"):
        out = ping_pong.parent / name
        r = run_cli("run", ping_pong, "--network", "flow", "-o", out, "-q")
        assert r.code == 0, r.err
        outs.append(
            {
                p.relative_to(out): p.read_bytes()
                for p in sorted(out.rglob("*"))
                if p.is_file() and p.name != "timing.json"
            }
        )
    assert outs[0] == outs[1]
    assert len(outs[0]) > 5


def test_nic_coalescing_is_refused_on_flows(run_cli: Run, ping_pong: Path) -> None:
    r = run_cli("run", ping_pong, "--network", "flow", "--set", "power.nic.coalescing=true", "-q")
    assert r.code == 2
    assert "power.nic.coalescing" in r.err and "[power.nic] coalescing" in r.err, r.err


def test_a_bad_network_value_is_a_usage_error(run_cli: Run, ping_pong: Path) -> None:
    with pytest.raises(SystemExit) as e:
        run_cli("run", ping_pong, "--network", "fluid")
    assert e.value.code == 2
    r = run_cli("run", ping_pong, "--set", 'machine.network="fluid"', "-q")
    assert r.code == 2
    assert "machine.network" in r.err, r.err


def test_every_sweep_row_records_its_network(run_cli: Run, tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text(
        'name = "nets"\nbase = "pp.toml"\n[axes]\n"machine.network" = ["packet", "flow"]\n'
    )
    write_toml(tmp_path / "pp.toml", PING_PONG)
    df = sweep.run(spec, tmp_path / "out", workers=1)
    assert list(df["network"]) == ["packet", "flow"]
    assert list(df["makespan_s"]) == pytest.approx([ROUND_TRIP_S] * 2, rel=1e-12)
    # --network sets the base: every run of a spec without that axis is a flow run.
    plain = tmp_path / "plain.toml"
    plain.write_text('name = "one"\nbase = "pp.toml"\n')
    r = run_cli("sweep", plain, "-o", tmp_path / "out2", "--network", "flow", "--json", "-j", "1")
    assert r.code == 0, r.err
    assert [row["network"] for row in json.loads(r.out)] == ["flow"]


def test_sweep_set_overrides_the_base_of_every_run(run_cli: Run, tmp_path: Path) -> None:
    write_toml(tmp_path / "pp.toml", PING_PONG)
    plain = tmp_path / "plain.toml"
    plain.write_text('name = "one"\nbase = "pp.toml"\n')
    # A 300 ns switch adds 200 ns each way: 3,500 ns + 2 x 50 ns + 300 ns = 3.9 us one way.
    r = run_cli(
        "sweep", plain, "-o", tmp_path / "a", "--set", "machine.switch_latency_ns=300",
        "--network", "flow", "--json", "-j", "1",
    )  # fmt: skip
    assert r.code == 0, r.err
    [row] = json.loads(r.out)
    assert row["network"] == "flow" and row["makespan_s"] == pytest.approx(7.8e-6, rel=1e-12)
    # An axis over the same field still varies it: the spec's 100 ns is the base's 7.4 us.
    axis = tmp_path / "axis.toml"
    axis.write_text(plain.read_text() + '[axes]\n"machine.switch_latency_ns" = [100.0]\n')
    r = run_cli(
        "sweep", axis, "-o", tmp_path / "b", "--set", "machine.switch_latency_ns=300",
        "--json", "-j", "1",
    )  # fmt: skip
    assert r.code == 0, r.err
    assert json.loads(r.out)[0]["makespan_s"] == pytest.approx(ROUND_TRIP_S, rel=1e-12)
    r = run_cli("sweep", plain, "-o", tmp_path / "c", "--set", "machine.switch_latency_ns")
    assert r.code == 2 and "expected PATH=VALUE" in r.err, r.err
    r = run_cli("sweep", plain, "-o", tmp_path / "d", "--set", "machine.switch_latncy_ns=1")
    assert r.code == 2 and "machine.switch_latncy_ns: unknown field" in r.err, r.err


def test_packet_runs_share_their_hash_whatever_the_flow_settings(tmp_path: Path) -> None:
    write_toml(tmp_path / "pp.toml", PING_PONG)
    spec = tmp_path / "spec.toml"
    spec.write_text(
        'base = "pp.toml"\n[axes]\n"machine.network" = ["packet", "flow"]\n'
        '"machine.flow_train_segments" = [16, 0, 320]\n"machine.flow_segment_packets" = [4, 1]\n'
    )
    runs = sweep.SweepSpec.load(spec).runs()
    v = "machine.network", "machine.flow_train_segments", "machine.flow_segment_packets"
    hashes = {tuple(r.values[k] for k in v): r.hash for r in runs}
    cells = [(n, k) for n in (16, 0, 320) for k in (4, 1)]
    # The packet model has no trains: its six runs are one; each flow run is its own.
    assert len({hashes["packet", n, k] for n, k in cells}) == 1
    assert len({hashes["flow", n, k] for n, k in cells}) == 6
    assert hashes["packet", 16, 4] not in {hashes["flow", n, k] for n, k in cells}


def test_the_ping_pong_check_is_exact_on_flows_and_coalescing_says_why() -> None:
    [pingpong, nic] = run_checks(["1", "nic-coalescing"], network="flow")
    assert pingpong.passed, pingpong.details
    # Not run, and so neither passed nor failed.
    assert nic.passed is None
    assert nic.simulated.startswith('not applicable to network = "flow": interrupt coalescing')


@pytest.mark.parametrize(
    ("options", "confirmed"),
    [((), "packet"), (("--confirm", "flow"), "flow"), (("--confirm", "packet"), "packet")],
)
def test_tune_screens_on_flows_and_confirms_on_packets_unless_told(
    run_cli: Run, tmp_path: Path, options: tuple[str, ...], confirmed: str
) -> None:
    # Three round trips 50 us apart: the links idle 42.6 us between them, where a 1 us timeout
    # sleeps; what matters here is the model each step ran on.
    one, three = "iterations = 1\ninterval_us = 0.0", "iterations = 3\ninterval_us = 50.0"
    text = PING_PONG.replace(one, three)
    cfg = write_toml(tmp_path / "gaps.toml", text)
    runs = tmp_path / "runs"
    r = run_cli(
        "tune", cfg, "--slowdown", "100", "--timeouts", "1", "-k", "1",
        "--runs", runs, "-j", "1", "--network", "flow", *options,
    )  # fmt: skip
    assert r.code == 0, r.err
    _, df = sweep.read_dataset(runs)
    assert set(df["network"]) == {confirmed}
    if confirmed == "packet":
        assert "screened on the flow model, confirmed on the packet model" in r.out
