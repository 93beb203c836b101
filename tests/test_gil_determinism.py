"""The run releases the GIL; same config and seed give byte-identical output; a different seed
changes a random workload."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import tracewatt
from conftest import EXAMPLES, run_process
from tracewatt import Config

# A simulation of roughly a second (on a laptop-class core, release build).
LONG: dict[str, Any] = {
    "seed": 2,
    "machine": {"preset": "bench-dragonfly-1056"},
    "jobs": [
        {
            "ranks": 1056,
            "workload": {"kind": "uniform_random", "messages": 40, "bytes": 4096},
        }
    ],
}


def test_simulation_releases_the_gil() -> None:
    counter = 0
    stop = threading.Event()

    def spin() -> None:
        nonlocal counter
        while not stop.is_set():
            counter += 1

    # Baseline: how fast the thread counts with the GIL to itself.
    t = threading.Thread(target=spin)
    t.start()
    time.sleep(0.2)
    stop.set()
    t.join()
    rate_alone = counter / 0.2

    counter = 0
    stop.clear()
    t = threading.Thread(target=spin)
    t.start()
    t0 = time.perf_counter()
    tracewatt.simulate(LONG)
    elapsed = time.perf_counter() - t0
    during = counter
    stop.set()
    t.join()
    assert elapsed > 0.2, f"the simulation was too short ({elapsed:.3f} s) to test anything"
    # With the GIL held for the whole run, the thread would get almost nothing (one switch
    # interval at most). Released, it counts at a good fraction of its solo speed.
    assert during > 0.25 * rate_alone * elapsed, (during, rate_alone, elapsed)


def _files(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())}


def test_cli_output_is_byte_identical(tmp_path: Path) -> None:
    cfg = EXAMPLES / "two-jobs.toml"
    a, b = tmp_path / "a", tmp_path / "b"
    r1 = run_process(["run", cfg, "-o", a, "--quiet"])
    r2 = run_process(["run", cfg, "-o", b, "--quiet"])
    assert r1.code == 0 and r2.code == 0, r1.err + r2.err
    fa, fb = _files(a), _files(b)
    assert {
        "idle_hist.parquet",
        "idle_thresholds.parquet",
        "jobs.parquet",
        "links.parquet",
        "ranks.parquet",
        "summary.json",
    } <= set(fa)
    assert sorted(fa) == sorted(fb)
    # timing.json, the run's wall time, is the one file documented as not deterministic.
    for name in set(fa) - {"timing.json"}:
        assert fa[name] == fb[name], f"{name} differs between two identical runs"
    summary, timing = json.loads(fa["summary.json"]), json.loads(fa["timing.json"])
    assert set(timing) == {"wall_s", "events", "events_per_s"}
    assert timing["events"] == summary["events"]
    assert timing["wall_s"] > 0
    assert timing["events_per_s"] == pytest.approx(timing["events"] / timing["wall_s"])


def test_seed_changes_random_workload(random_fattree: dict[str, Any]) -> None:
    cfg = Config.from_dict(random_fattree)
    a = tracewatt.simulate(cfg)
    b = tracewatt.simulate(cfg)
    c = tracewatt.simulate(cfg.with_overrides(seed=6))
    assert a == b
    assert a.summary["seed"] == 5 and c.summary["seed"] == 6
    assert not a.links["bytes"].equals(c.links["bytes"]) or a.makespan_s != c.makespan_s


def test_cli_seed_option_changes_output(tmp_path: Path) -> None:
    cfg = EXAMPLES / "two-jobs.toml"
    r1 = run_process(["run", cfg, "-o", tmp_path / "a", "-q"])
    r2 = run_process(["run", cfg, "-o", tmp_path / "b", "-q", "--seed", "11"])
    assert r1.code == 0 and r2.code == 0, r1.err + r2.err
    assert (tmp_path / "a" / "links.parquet").read_bytes() != (
        tmp_path / "b" / "links.parquet"
    ).read_bytes()
