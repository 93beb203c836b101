"""The shipped `tracerp` sweep spec: its setup, and a reduced run of every group."""

from __future__ import annotations

import copy
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tracewatt

SPEC = Path(tracewatt.__file__).parent / "studies" / "tracerp.toml"


def _doc() -> dict[str, Any]:
    return tomllib.loads(SPEC.read_text(encoding="utf-8"))


def reduced(doc: dict[str, Any], ranks: int, ranks_per_node: int, shrink: int) -> dict[str, Any]:
    """The documented reduction (docs/tracerp.md): fewer ranks, fewer per node, messages
    ``shrink`` times smaller, one iteration."""
    d = copy.deepcopy(doc)
    d.setdefault("base", {}).setdefault("machine", {})["ranks_per_node"] = ranks_per_node
    for job in d["axes"]["jobs[0]"].values():
        job["ranks"] = ranks
        w = job["workload"]
        w["iterations"] = 1
        for key in ("bytes", "alltoall_bytes", "allreduce_bytes", "bcast_bytes"):
            if key in w:
                w[key] = max(8, w[key] // shrink)
    return d


def test_the_spec_sets_up_tracerps_study() -> None:
    doc = _doc()
    assert doc["axes"]["machine.preset"] == [
        "tracerp-fattree-288",
        "tracerp-torus-4x8x8",
        "tracerp-dragonfly-342",
    ]
    jobs = doc["axes"]["jobs[0]"]
    assert sorted(jobs) == ["a2a", "near_neighbor", "permutation", "qbox", "stencil4d"]
    assert {j["ranks"] for j in jobs.values()} == {8192}
    # TraceR's replay configuration: communication only.
    assert {j["workload"]["compute_us"] for j in jobs.values()} == {0.0}
    # 32 ranks per node come from the presets themselves.
    for preset in doc["axes"]["machine.preset"]:
        machine = tracewatt.machine({"machine": {"preset": preset}, "jobs": [jobs["a2a"]]})
        assert machine["ranks_per_node"] == 32
    groups = {g["name"]: g["axes"] for g in doc["groups"]}
    assert groups["fig2"] == {
        "power.links.idle_timeout_us": [600.0],
        "power.links.wake_time_us": [17.0],
    }
    assert groups["fig3"]["power.links.idle_timeout_us"] == [0.0, 10.0, 50.0, 250.0, 1250.0]
    assert groups["fig3"]["power.links.wake_time_us"] == [17.0]
    assert groups["fig4"]["power.links.wake_time_us"] == [0.0]
    assert groups["fig5"] == {
        "power.links.idle_timeout_us": [0.0],
        "power.links.wake_time_us": [0.0, 5.0, 10.0, 15.0, 20.0],
    }
    assert doc["base"]["power"]["control"] == "independent"


def test_a_reduced_tracerp_runs_every_group(tmp_path: Path) -> None:
    sweep = pytest.importorskip("tracewatt.sweep")
    spec = sweep.SweepSpec.from_dict(reduced(_doc(), 64, 1, 256), "tracerp (reduced)")
    runs = spec.runs()
    # 3 machines x 5 benchmarks x (1 + 5 + 5 + 5 settings) x 2 variants; the always-on
    # baseline is one run per machine and benchmark, and fig4's (0, 0) is fig5's.
    assert len(runs) == 480
    assert len({r.hash for r in runs}) == 15 * (15 + 1)
    df = sweep.run(spec, tmp_path / "out", workers=2)
    assert (df["status"] == "ok").all()
    on = df[df["variant"] == "on_off"]
    off = df[df["variant"] == "always_on"]
    assert (off["link_wakes"] == 0).all() and off["saving_pct"].isna().all()
    assert on["saving_pct"].notna().all() and on["slowdown_pct"].notna().all()
    # Fig. 4 (no wake cost): a longer timeout leaves less time in LPI, so the link saving can
    # only shrink as it grows.
    fig4 = on[on["group"] == "fig4"]
    for _, cell in fig4.groupby(["machine.preset", "jobs[0]"]):
        s = cell.sort_values("power.links.idle_timeout_us")["link_saving_pct"].to_numpy()
        assert (np.diff(s) <= 1e-9).all(), s


def test_the_departures_spec_varies_only_its_own_axis_from_tracerps_cells() -> None:
    """`tracerp-departures` measures two departures from the paper on tracerp's own cells: its
    runs without compute are tracerp's Fig. 2 qbox runs (the same configuration, so the same
    run hash), and its a2a differs from tracerp's only in its iteration count and routing."""
    sweep = pytest.importorskip("tracewatt.sweep")
    tracerp = {
        (r.variant, r.values["machine.preset"], r.values["jobs[0]"]): r
        for r in sweep.SweepSpec.load(SPEC).runs()
        if r.group == "fig2"
    }
    departures = sweep.SweepSpec.load(SPEC.with_name("tracerp-departures.toml")).runs()
    assert len(departures) == 22 and not any(r.error for r in departures)
    qbox = [r for r in departures if r.group == "qbox_compute"]
    assert len(qbox) == 18
    for r in qbox:
        same = tracerp[(r.variant, r.values["machine.preset"], "qbox")]
        if r.values["jobs[0].workload.compute_us"] == 0.0:
            assert r.hash == same.hash
        else:
            assert r.hash != same.hash
            expected = copy.deepcopy(same.config.to_dict())
            expected["jobs"][0]["workload"]["compute_us"] = r.values["jobs[0].workload.compute_us"]
            assert r.config.to_dict() == expected
    a2a = [r for r in departures if r.group == "a2a_routing"]
    assert sorted((r.variant, r.values["machine.routing.algorithm"]) for r in a2a) == [
        ("always_on", "minimal"),
        ("always_on", "ugal"),
        ("on_off", "minimal"),
        ("on_off", "ugal"),
    ]
    for r in a2a:
        expected = copy.deepcopy(
            tracerp[(r.variant, "tracerp-dragonfly-342", "a2a")].config.to_dict()
        )
        expected["jobs"][0]["workload"]["iterations"] = 1
        expected["machine"]["routing"] = {"algorithm": r.values["machine.routing.algorithm"]}
        assert r.config.to_dict() == expected


def test_the_credits_spec_is_tracerps_fig2_and_fig5_with_credits_on_the_reverse_link() -> None:
    """`tracerp-credits` changes one thing in tracerp's Fig. 2 and Fig. 5 runs (a2a left out):
    credits go back as frames on the reverse link direction."""
    sweep = pytest.importorskip("tracewatt.sweep")
    tracerp = {
        (r.group, r.variant, tuple(sorted(r.values.items()))): r
        for r in sweep.SweepSpec.load(SPEC).runs()
        if r.group in ("fig2", "fig5") and r.values["jobs[0]"] != "a2a"
    }
    credits = sweep.SweepSpec.load(SPEC.with_name("tracerp-credits.toml")).runs()
    assert len(credits) == len(tracerp) == 3 * 4 * 6 * 2 and not any(r.error for r in credits)
    for r in credits:
        same = tracerp[(r.group, r.variant, tuple(sorted(r.values.items())))]
        expected = copy.deepcopy(same.config.to_dict())
        assert "credits" not in expected["machine"]  # tracerp's: the default, out of band
        expected["machine"]["credits"] = "reverse_link"
        assert r.config.to_dict() == expected


ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("dataset", sorted((ROOT / "docs" / "data").glob("tracerp-*.parquet")))
def test_the_docs_tables_are_drawn_from_the_committed_datasets(dataset: Path) -> None:
    """Every table row `scripts/tracerp_tables.py` draws from a committed dataset is in
    docs/tracerp.md as drawn: the page cannot drift from its data."""
    out = subprocess.run(
        [sys.executable, ROOT / "scripts" / "tracerp_tables.py", dataset],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = [line for line in out.splitlines() if line.startswith("| ")]
    assert len(rows) > 10, out
    doc = (ROOT / "docs" / "tracerp.md").read_text(encoding="utf-8")
    missing = [r for r in rows if r not in doc.splitlines()]
    assert not missing, f"{dataset.name}: rows not in docs/tracerp.md:\n" + "\n".join(missing)
