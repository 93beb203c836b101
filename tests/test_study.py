"""`tracewatt study`: the shipped default sweep spec, and a small study-shaped sweep end to end
(the report tests draw its figures)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import CliResult, run_process
from tracewatt import Results, sweep

Run = Callable[..., CliResult]

# Two machines x two workloads, labelled as the study's table and figures name them.
SMALL_STUDY = """
name = "small"

[base]
seed = 2
machine.ranks_per_node = 1

[[base.jobs]]
name = "job"
ranks = 16

[axes."machine.preset"]
ft = "miwa2014-16node"
torus = "tracerp-torus-4x8x8"

[axes."jobs[0]".perm]
name = "perm"
ranks = 16
workload = { kind = "permutation", iterations = 2, bytes = 4096 }

[axes."jobs[0]".halo]
name = "halo"
ranks = 16
workload = { kind = "near_neighbor", iterations = 2, bytes = 1024 }
"""


def test_small_study_sweep(run_cli: Run, tmp_path: Path) -> None:
    spec = tmp_path / "small.toml"
    spec.write_text(SMALL_STUDY)
    out = tmp_path / "out"
    r = run_cli("sweep", spec, "-o", out, "-j", "2")
    assert r.code == 0, r.err
    assert r.out.splitlines()[0].split() == [
        "machine.preset",
        "jobs[0]",
        "status",
        "makespan_s",
        "energy_j",
        "lpi_share",
    ]
    _, df = sweep.read_dataset(out)
    assert list(zip(df["machine.preset"], df["jobs[0]"], strict=True)) == [
        ("ft", "perm"),
        ("ft", "halo"),
        ("torus", "perm"),
        ("torus", "halo"),
    ]
    for row in df.to_dict("records"):
        assert row["status"] == "ok" and row["error"] == ""
        if row["jobs[0]"] == "halo":
            # 16 ranks on a 4 x 2 x 2 periodic grid: 6 messages per rank and iteration (a
            # 2-wide dimension's one neighbour gets one each way), 2 iterations.
            assert row["messages"] == 16 * 6 * 2
        res = Results.read(out / row["dir"])
        assert res.summary["makespan_s"] == row["makespan_s"]
        assert res.summary["seed"] == 2
        preset = {"ft": "miwa2014-16node", "torus": "tracerp-torus-4x8x8"}[row["machine.preset"]]
        assert res.config["machine"]["preset"] == preset
        assert res.config["jobs"][0]["name"] == row["jobs[0]"]


@pytest.mark.slow
def test_default_study_runs(tmp_path: Path) -> None:
    out = tmp_path / "study"
    r = run_process(["study", "-o", out])
    assert r.code == 0, r.err
    assert len(r.out.splitlines()) == 2 + 30 + 1
    meta, df = sweep.read_dataset(out)
    assert meta["name"] == "default" and meta["baseline"] == "always_on"
    assert len(df) == 30 and (df["status"] == "ok").all()
    assert df[df["variant"] == "eee"]["saving_pct"].notna().all()
    assert run_process(["report", out, "-q"]).code == 0
