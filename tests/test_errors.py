"""Bad configurations give clear errors that name the file and the field, with exit code 2
(configuration/topology) or 3 (workload)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import tracewatt
from conftest import PINGPONG, CliResult
from tracewatt import Config

Run = Callable[..., CliResult]


def _set(d: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(d)
    from tracewatt.config import set_path

    set_path(out, path, value)
    return out


def _without(d: dict[str, Any], *path: str) -> dict[str, Any]:
    out = copy.deepcopy(d)
    node = out
    for p in path[:-1]:
        node = node[p]
    del node[path[-1]]
    return out


FATTREE_BAD = {
    "machine": {
        "topology": {"kind": "fat_tree", "levels": 2, "radix": 8, "nodes_per_leaf": 12},
        "links": {"bandwidth_gbps": 10.0},
    },
    "jobs": [{"ranks": 2, "workload": {"kind": "pingpong"}}],
}

# (id, config, exception class, substrings the message must contain)
CASES: list[tuple[str, dict[str, Any], type[Exception], list[str]]] = [
    (
        "unknown-machine-field",
        _set(PINGPONG, "machine.bandwith_gbps", 10.0),
        tracewatt.ConfigError,
        ["machine", "bandwith_gbps"],
    ),
    (
        "wrong-type",
        _set(PINGPONG, "machine.links.bandwidth_gbps", "fast"),
        tracewatt.ConfigError,
        ["machine.links.bandwidth_gbps"],
    ),
    (
        "wrong-type-int",
        _set(PINGPONG, "jobs[0].ranks", 2.5),
        tracewatt.ConfigError,
        ["jobs[0].ranks"],
    ),
    (
        "unknown-preset",
        {"machine": {"preset": "nope-1"}, "jobs": PINGPONG["jobs"]},
        tracewatt.ConfigError,
        ["machine.preset", "nope-1", "tracerp-fattree-288"],
    ),
    (
        "unknown-workload-kind",
        _set(PINGPONG, "jobs[0].workload.kind", "bogus"),
        tracewatt.ConfigError,
        ["jobs[0].workload", "bogus"],
    ),
    (
        "unknown-workload-field",
        _set(PINGPONG, "jobs[0].workload.size", 3),
        tracewatt.ConfigError,
        ["jobs[0].workload", "size"],
    ),
    (
        "missing-links",
        _without(PINGPONG, "machine", "links"),
        tracewatt.ConfigError,
        ["machine", "links"],
    ),
    (
        "fat-tree-nodes-per-leaf-over-radix",
        FATTREE_BAD,
        tracewatt.TopologyError,
        ["nodes_per_leaf"],
    ),
    (
        "job-needs-more-nodes",
        _set(PINGPONG, "jobs[0].ranks", 3),
        tracewatt.ConfigError,
        ["jobs[0].nodes", "3", "2"],
    ),
    (
        "buffer-smaller-than-packet",
        _set(_set(PINGPONG, "machine.buffer_bytes", 1000), "machine.packet_bytes", 4096),
        tracewatt.ConfigError,
        ["machine.buffer_bytes", "4096"],
    ),
    (
        "negative-bandwidth",
        _set(PINGPONG, "machine.links.bandwidth_gbps", -1.0),
        tracewatt.ConfigError,
        ["machine.links.bandwidth_gbps"],
    ),
    (
        "no-jobs",
        _set(PINGPONG, "jobs", []),
        tracewatt.ConfigError,
        ["jobs"],
    ),
    (
        "unknown-governor",
        _set(PINGPONG, "mpi.wait", {"policy": "block", "governor": "ladder"}),
        tracewatt.ConfigError,
        ["mpi.wait.governor", "ladder", "menu", "fixed"],
    ),
    (
        "wake-latency-renamed",
        _set(PINGPONG, "mpi.wait", {"policy": "block", "wake_latency_us": 30.0}),
        tracewatt.ConfigError,
        ["mpi.wait.wake_latency_us", "wake_overhead_us"],
    ),
    (
        "negative-c-state-power",
        _set(PINGPONG, "power.cores", {"c6_w": -1.0}),
        tracewatt.ConfigError,
        ["power.cores.c6_w", "non-negative"],
    ),
]


@pytest.mark.parametrize(("name", "cfg", "exc", "needles"), CASES, ids=[c[0] for c in CASES])
def test_bad_config_api(
    name: str, cfg: dict[str, Any], exc: type[Exception], needles: list[str]
) -> None:
    with pytest.raises(exc) as e:
        tracewatt.simulate(Config.from_dict(cfg, source="bad.json"))
    msg = str(e.value)
    assert msg.startswith("bad.json"), msg
    for n in needles:
        assert n in msg, f"{n!r} not in {msg!r}"


@pytest.mark.parametrize(("name", "cfg", "exc", "needles"), CASES, ids=[c[0] for c in CASES])
def test_bad_config_cli(
    name: str,
    cfg: dict[str, Any],
    exc: type[Exception],
    needles: list[str],
    run_cli: Run,
    tmp_path: Path,
) -> None:
    import json

    path = tmp_path / "bad.json"
    path.write_text(json.dumps(cfg))
    r = run_cli("run", path)
    assert r.code == 2, r.err
    assert r.out == ""
    assert r.err.startswith(f"tracewatt: error: {path}"), r.err
    for n in needles:
        assert n in r.err


def test_toml_syntax_error_has_line(run_cli: Run, tmp_path: Path) -> None:
    path = tmp_path / "broken.toml"
    path.write_text("seed = 1\n[machine\nranks_per_node = 2\n")
    r = run_cli("run", path)
    assert r.code == 2
    assert f"{path}:2:" in r.err


def test_files_that_are_not_utf8_name_the_file_and_the_byte(
    run_cli: Run, tmp_path: Path, pingpong_toml: Path
) -> None:
    """TOML and JSON are UTF-8: a Latin-1 `é` (0xe9) in a comment on line 2, at byte 14 (after
    `seed = 1`, its newline and `# caf`), is a configuration error for every file a command
    reads as one."""
    bad = b"seed = 1\n# caf\xe9\n"
    cfg = tmp_path / "latin1.toml"
    cfg.write_bytes(bad + pingpong_toml.read_bytes().replace(b"seed = 1\n", b""))
    spec = tmp_path / "spec.toml"
    spec.write_bytes(bad)
    settings = tmp_path / "joblog.toml"
    settings.write_bytes(bad)
    log = tmp_path / "log.swf"
    log.write_text("; MaxNodes: 1\n1 0 0 10 1 -1 1024 1 10 -1 1 -1 -1 -1 -1 -1 -1 -1\n")
    for args, path, what in [
        (["run", cfg], cfg, "configuration"),
        (["machine", cfg], cfg, "configuration"),
        (["sweep", spec, "-o", tmp_path / "out"], spec, "sweep spec"),
        (["analyze", "joblog", log, "--config", settings], settings, "settings file"),
    ]:
        r = run_cli(*args)
        assert (r.code, r.err) == (
            2,
            f"tracewatt: error: {path}: byte offset 14 (line 2): not UTF-8 (byte 0xe9); save the "
            f"{what} as UTF-8\n",
        ), args
    with pytest.raises(tracewatt.ConfigError, match=r"spec\.toml: byte offset 14 \(line 2\)"):
        tracewatt.sweep.SweepSpec.from_dict({"base": "spec.toml"}, "s.toml", tmp_path)
    from tracewatt.analysis.tuning import apply_fragment

    with pytest.raises(tracewatt.ConfigError, match="save the tuned fragment as UTF-8"):
        apply_fragment(tracewatt.Config.load(pingpong_toml), spec)


def test_toml_unknown_field_in_machine_names_it(run_cli: Run, tmp_path: Path) -> None:
    path = tmp_path / "typo.toml"
    path.write_text(
        '[machine]\nrank_per_node = 2\ntopology = { kind = "single_switch", nodes = 2 }\n'
        "links = { bandwidth_gbps = 10.0 }\n"
        '[[jobs]]\nranks = 2\nworkload = { kind = "pingpong" }\n'
    )
    r = run_cli("machine", path)
    assert r.code == 2
    assert "rank_per_node" in r.err and "machine" in r.err


def test_exception_hierarchy() -> None:
    assert issubclass(tracewatt.TopologyError, tracewatt.ConfigError)
    assert issubclass(tracewatt.ConfigError, tracewatt.TracewattError)
    assert issubclass(tracewatt.WorkloadError, tracewatt.TracewattError)
    assert issubclass(tracewatt.DeadlockError, tracewatt.TracewattError)
    assert issubclass(tracewatt.RunInterrupted, tracewatt.TracewattError)
    assert issubclass(tracewatt.ResultsError, tracewatt.TracewattError)
    assert issubclass(tracewatt.TracewattError, Exception)


def test_workload_field_error_is_a_config_error_naming_the_field(
    run_cli: Run, tmp_path: Path
) -> None:
    # A generator's parameter out of range is a configuration error (exit 2), like any other
    # field; it used to be a WorkloadError (exit 3).
    cfg = _set(PINGPONG, "jobs[0].workload.iterations", 0)
    with pytest.raises(tracewatt.ConfigError) as e:
        tracewatt.simulate(Config.from_dict(cfg, source="bad.json"))
    assert str(e.value) == "bad.json: jobs[0].workload.iterations: must be >= 1"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(cfg))
    r = run_cli("run", path)
    assert r.code == 2, r.err
    assert r.err == f"tracewatt: error: {path}: jobs[0].workload.iterations: must be >= 1\n"


def test_a_rank_count_the_generator_cannot_use_is_a_workload_error() -> None:
    cfg = _set(PINGPONG, "jobs[0].ranks", 1)
    with pytest.raises(tracewatt.WorkloadError, match=r"pingpong needs at least 2 ranks, got 1"):
        tracewatt.simulate(cfg)


def test_time_fields_name_the_field_and_the_maximum(run_cli: Run, tmp_path: Path) -> None:
    # The three values: each used to wrap to 0 and run silently.
    for field, value in (
        ("power.links.idle_timeout_us", 1.9e13),
        ("jobs[0].start_us", 1e14),
        ("power.links.wake_time_us", 1e14),
    ):
        path = tmp_path / "t.json"
        path.write_text(json.dumps(_set(PINGPONG, field, value)))
        r = run_cli("run", path)
        assert r.code == 2, r.err
        assert r.err.startswith(f"tracewatt: error: {path}: {field}: must be at most 1e12 us")


def test_too_small_bandwidth_is_a_config_error_not_a_panic(run_cli: Run, tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps(_set(PINGPONG, "machine.links.bandwidth_gbps", 1e-12)))
    r = run_cli("run", path)
    assert r.code == 2, r.err
    assert r.err == (
        f"tracewatt: error: {path}: machine.links.bandwidth_gbps: must be at least 1e-9 "
        "(1 bit/s), got 0.000000000001\n"
    )


# A workload that cannot finish (a receive with no matching send) needs a hand-written rank
# program or trace; no built-in generator can express one. That test (DeadlockError, exit code 3,
# the message naming the waiting ranks) is left to the trace-format work.


HUGE = {
    "machine": {
        "topology": {"kind": "torus", "dims": [4000, 2500]},
        "links": {"bandwidth_gbps": 10.0},
        "ranks_per_node": 400,
    },
    "jobs": [{"ranks": 4_000_000_000, "workload": {"kind": "pingpong"}}],
}


def test_a_run_larger_than_memory_is_refused_at_once(run_cli: Run, tmp_path: Path) -> None:
    # 10^7 nodes, 4 x 10^9 ranks: terabytes. Refused before anything is built (this used to
    # abort the process with "memory allocation failed"), with exit code 2.
    assert issubclass(tracewatt.MemoryLimitError, tracewatt.ConfigError)
    with pytest.raises(
        tracewatt.MemoryLimitError, match=r"^huge\.json: the run needs an estimated"
    ):
        tracewatt.simulate(Config.from_dict(HUGE, source="huge.json"))
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(HUGE))
    for command in ("run", "compare"):
        r = run_cli(command, path)
        assert r.code == 2, r.err
        assert "(60,000,000 link directions and 4,000,000,000 ranks" in r.err
        assert "MemAvailable" in r.err


def test_nan_from_python_names_the_field(run_cli: Run, pingpong_toml: Path) -> None:
    # Not JSON's "Out of range float values are not JSON compliant", which names no field.
    cfg = _set(PINGPONG, "jobs[0].workload.interval_us", float("nan"))
    with pytest.raises(tracewatt.ConfigError) as e:
        tracewatt.simulate(cfg)
    assert str(e.value) == "<dict>: jobs[0].workload.interval_us: must be a finite number, got nan"
    r = run_cli("run", pingpong_toml, "--set", "power.links.wake_time_us=inf")
    assert r.code == 2
    assert r.err == (
        "tracewatt: error: --set 'power.links.wake_time_us=inf': power.links.wake_time_us: "
        "must be a finite number, got inf\n"
    )
    with pytest.raises(tracewatt.ConfigError, match=r"^<dict>: jobs\[0\]\.nodes: expected a table"):
        tracewatt.simulate(_set(PINGPONG, "jobs[0].nodes", {1, 2}))


def test_errors_inside_workload_and_topology_tables_name_the_field(
    run_cli: Run, tmp_path: Path
) -> None:
    cases = [
        (
            _set(PINGPONG, "jobs[0].workload.iterations", -1),
            "jobs[0].workload.iterations: expected a non-negative integer, got -1",
        ),
        (
            _set(PINGPONG, "machine.topology.nodes", "two"),
            'machine.topology.nodes: expected a non-negative integer, got "two"',
        ),
    ]
    for cfg, want in cases:
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(cfg))
        r = run_cli("run", path)
        assert r.code == 2, r.err
        assert r.err == f"tracewatt: error: {path}: {want}\n"
