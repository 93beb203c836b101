"""`tracewatt study`: the default study definition and a small study run end to end."""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import CliResult, run_process
from tracewatt import Results
from tracewatt.errors import ConfigError
from tracewatt.study import StudySpec

Run = Callable[..., CliResult]

SMALL_STUDY = """
name = "small"
seed = 2

[base.machine]
ranks_per_node = 1

[[topologies]]
name = "ft"
preset = "miwa2014-16node"

[[topologies]]
name = "torus"
preset = "tracerp-torus-4x8x8"
set = { "machine.links.bandwidth_gbps" = 40.0 }

[[workloads]]
name = "perm"
ranks = 16
workload = { kind = "permutation", iterations = 2, bytes = 4096 }

[[workloads]]
name = "halo"
ranks = 16
workload = { kind = "near_neighbor", iterations = 2 }
set = { "jobs[0].workload.bytes" = 1024 }
"""


def test_default_study_definition() -> None:
    spec = StudySpec.load()
    topologies = {c.topology for c in spec.cells}
    workloads = {c.workload for c in spec.cells}
    assert len(spec.cells) == 15
    assert len(topologies) == 3 and len(workloads) == 5
    assert workloads == {"near_neighbor", "permutation", "qbox", "stencil4d", "a2a"}
    presets = set()
    for cell in spec.cells:
        # Each cell runs with EEE and with every link always on (the baseline of the savings).
        assert set(cell.configs) == {"eee", "always_on"}
        eee = cell.configs["eee"].resolved()  # every cell is a valid configuration
        base = cell.configs["always_on"].resolved()
        presets.add(eee["machine"]["preset"])
        assert eee["jobs"][0]["workload"]["kind"] == cell.workload
        assert eee["power"]["links"]["policy"] == "timeout"
        assert base["power"]["links"]["policy"] == "always_on"
    assert presets == {"tracerp-fattree-288", "tracerp-torus-4x8x8", "tracerp-dragonfly-342"}


def test_small_study_cli(run_cli: Run, tmp_path: Path) -> None:
    study = tmp_path / "small.toml"
    study.write_text(SMALL_STUDY)
    out = tmp_path / "out"
    r = run_cli("study", "--study", study, "-o", out, "--workers", "2")
    assert r.code == 0, r.err
    for header in ("topology", "workload", "ranks", "makespan_s", "messages", "mean_hops"):
        assert header in r.out
    with open(out / "study.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(row["topology"], row["workload"]) for row in rows] == [
        ("ft", "perm"),
        ("ft", "halo"),
        ("torus", "perm"),
        ("torus", "halo"),
    ]
    for row in rows:
        assert row["error"] == ""
        if row["workload"] == "halo":
            # 16 ranks on a 4 x 2 x 2 periodic grid: 6 messages per rank and iteration (a
            # 2-wide dimension's one neighbour gets one each way), 2 iterations.
            assert int(row["messages"]) == 16 * 6 * 2
        assert 0 <= float(row["link_busy_mean_pct"]) <= 100
        res = Results.read(out / row["topology"] / row["workload"])
        assert res.summary["makespan_s"] == pytest.approx(float(row["makespan_s"]))
        assert res.summary["seed"] == 2
    torus = Results.read(out / "torus" / "halo")
    assert torus.config["machine"]["links"]["bandwidth_gbps"] == 40.0
    assert torus.config["jobs"][0]["workload"]["bytes"] == 1024


def test_study_bad_cell_reports_and_continues(tmp_path: Path) -> None:
    study = tmp_path / "bad.toml"
    study.write_text(
        SMALL_STUDY.replace(
            'ranks = 16\nworkload = { kind = "near_neighbor"',
            'ranks = 17\nworkload = { kind = "near_neighbor"',
        )
    )
    out = tmp_path / "out"
    r = run_process(["study", "--study", study, "-o", out, "-q"])
    assert r.code == 2, r.err  # ft/halo needs 17 nodes of 16: a configuration error
    assert "tracewatt: error: ft/halo:" in r.err
    assert "jobs[0].nodes" in r.err
    with open(out / "study.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 4
    assert [row["error"] != "" for row in rows] == [False, True, False, False]


def test_study_definition_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="topologies"):
        StudySpec.from_toml("name = 'x'\n", "s.toml")
    with pytest.raises(ConfigError, match=r"workloads\[0\]\.rank"):
        StudySpec.from_toml(
            "[[topologies]]\nname='a'\npreset='miwa2014-16node'\n[[workloads]]\nname='w'\nrank=2\n",
            "s.toml",
        )


@pytest.mark.slow
def test_default_study_runs(tmp_path: Path) -> None:
    r = run_process(["study", "-o", tmp_path / "study", "-q"])
    assert r.code == 0, r.err
    with open(tmp_path / "study" / "study.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 15
    assert all(row["error"] == "" for row in rows)


def test_study_variants(tmp_path: Path) -> None:
    study = tmp_path / "v.toml"
    study.write_text(
        """
[[topologies]]
name = "ft"
preset = "miwa2014-16node"

[[workloads]]
name = "pp"
ranks = 2
workload = { kind = "pingpong", iterations = 5 }

[[variants]]
name = "eee"

[[variants]]
name = "always_on"
set = { "power.links.policy" = "always_on" }
"""
    )
    spec = StudySpec.load(study)
    (cell,) = spec.cells
    assert set(cell.configs) == {"eee", "always_on"}
    assert cell.configs["always_on"].resolved()["power"]["links"]["policy"] == "always_on"
    from tracewatt.study import run_study

    (res,) = run_study(spec, tmp_path / "out", workers=1)
    assert res.error is None
    assert (tmp_path / "out" / "ft" / "pp" / "eee" / "summary.json").is_file()
    assert (tmp_path / "out" / "ft" / "pp" / "always_on" / "summary.json").is_file()
