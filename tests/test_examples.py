"""Every example configuration runs."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import tracewatt
from conftest import EXAMPLES

EXAMPLE_FILES = sorted(EXAMPLES.glob("*.toml"))


def test_examples_exist() -> None:
    names = {p.name for p in EXAMPLE_FILES}
    assert {
        "pingpong.toml",
        "miwa-npb-ft.toml",
        "dragonfly-uniform.toml",
        "fattree-stencil4d.toml",
        "two-jobs.toml",
        "custom-torus.toml",
        "dragonfly-backplane.toml",
        "paced-stream.toml",
    } <= names


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.name)
def test_example_runs(path: Path) -> None:
    t0 = time.perf_counter()
    res = tracewatt.simulate(path)
    wall = time.perf_counter() - t0
    s = res.summary
    assert s["makespan_s"] > 0
    assert s["messages"]["count"] > 0
    cfg_jobs = tracewatt.Config.load(path).resolved()["jobs"]
    assert len(s["jobs"]) == len(cfg_jobs)
    assert len(res.ranks) == sum(j["ranks"] for j in cfg_jobs)
    assert (res.ranks["finish_s"] <= s["makespan_s"]).all()
    assert wall < 30, f"{path.name} took {wall:.1f} s; examples should be quick"


def test_two_jobs_are_placed_apart() -> None:
    res = tracewatt.simulate(EXAMPLES / "two-jobs.toml")
    by_job = res.ranks.groupby("job")["node"].apply(set)
    assert not (by_job["halo"] & by_job["perm"])
    jobs = res.jobs.set_index("job")
    assert jobs.loc["perm", "start_s"] == pytest.approx(20e-6)
    assert jobs.loc["halo", "nodes"] == 64 and jobs.loc["perm", "nodes"] == 32
