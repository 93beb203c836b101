"""`tracewatt sweep`: specs, the dataset, failures, resume, and execution on a local pool and on
real Dask clusters (worker processes killed, SIGINT)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import tracewatt
from conftest import CliResult, alive, descendants, run_process, start_process
from tracewatt import sweep
from tracewatt.errors import ConfigError

Run = Callable[..., CliResult]

# 16 single-rank nodes; `ITERATIONS` permutation rounds take a few milliseconds.
BASE = """
name = "t"
[base]
seed = 1
machine = {{ preset = "miwa2014-16node", ranks_per_node = 1 }}
[[base.jobs]]
name = "w"
ranks = 16
workload = {{ kind = "permutation", iterations = {iterations}, bytes = 4096 }}
"""

# 4 idle timeouts x 2 workloads, EEE against always-on.
TIMEOUTS_US = [0.5, 2.0, 8.0, 30.0]
EEE_VS_ALWAYS_ON = (
    'baseline = "always_on"\n'
    + BASE.format(iterations=2)
    + """
[axes]
"power.links.idle_timeout_us" = [0.5, 2.0, 8.0, 30.0]
[axes."jobs[0].workload"]
perm = { kind = "permutation", iterations = 2, bytes = 4096 }
halo = { kind = "near_neighbor", iterations = 2, bytes = 4096 }
[[variants]]
name = "eee"
[[variants]]
name = "always_on"
set = { "power.links.policy" = "always_on" }
"""
)

# 12 runs of a few tenths of a second each (2 workloads x 6 idle timeouts): long enough to kill
# a worker or interrupt the sweep while runs are in flight.
TWELVE = (
    BASE.format(iterations=4000)
    + """
[axes]
"jobs[0].workload.kind" = ["permutation", "near_neighbor"]
"power.links.idle_timeout_us" = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0]
"""
)


def spec_file(tmp_path: Path, text: str, name: str = "spec.toml") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def summary(out: Path, row: Any) -> dict[str, Any]:
    return dict(json.loads((out / row["dir"] / "summary.json").read_text()))


def mtimes(out: Path) -> dict[str, int]:
    return {str(p): p.stat().st_mtime_ns for p in sorted((out / "runs").rglob("*"))}


# --------------------------------------------------------------------------- spec


def test_grid_zip_random_and_groups(tmp_path: Path) -> None:
    base = BASE.format(iterations=2)
    grid = sweep.SweepSpec.from_toml(
        base + '[axes]\n"seed" = [1, 2]\n"power.links.idle_timeout_us" = [1, 2, 3]\n', "g.toml"
    )
    cells = [tuple(v for _, v, _ in c) for _, c in grid.cells()]
    assert cells == [(1, 1), (1, 2), (1, 3), (2, 1), (2, 2), (2, 3)]  # first axis slowest
    zipped = sweep.SweepSpec.from_toml(
        'mode = "zip"\n'
        + base
        + '[axes]\n"seed" = [1, 2]\n"power.links.idle_timeout_us" = [5, 6]\n',
        "z.toml",
    )
    assert [tuple(v for _, v, _ in c) for _, c in zipped.cells()] == [(1, 5), (2, 6)]
    rnd = (
        'mode = "random"\nsamples = 5\nseed = 7\n'
        + base
        + (
            "[axes]\n"
            '"power.links.idle_timeout_us" = { min = 1.0, max = 1000.0, log = true }\n'
            '"jobs[0].ranks" = { min = 2, max = 16, integer = true }\n'
            '"power.control" = ["paired", "independent"]\n'
        )
    )
    a = [c for _, c in sweep.SweepSpec.from_toml(rnd, "r.toml").cells()]
    b = [c for _, c in sweep.SweepSpec.from_toml(rnd, "r.toml").cells()]
    assert a == b and len(a) == 5  # seeded: the same samples every time
    assert len({c[0][1] for c in a}) == 5
    for (_, t, _), (_, n, _), (_, ctl, _) in a:
        assert 1.0 <= t <= 1000.0
        assert isinstance(n, int) and 2 <= n <= 16
        assert ctl in ("paired", "independent")
    groups = sweep.SweepSpec.from_toml(
        base
        + '[axes]\n"seed" = [1, 2]\n'
        + '[[groups]]\nname = "a"\naxes = { "power.links.idle_timeout_us" = [1, 2] }\n'
        + '[[groups]]\nname = "b"\naxes = { "power.links.wake_time_us" = [5] }\n',
        "gr.toml",
    )
    assert groups.axis_names == ["seed", "power.links.idle_timeout_us", "power.links.wake_time_us"]
    assert [(g, [v for _, v, _ in c]) for g, c in groups.cells()] == [
        ("a", [1, 1]),
        ("a", [1, 2]),
        ("a", [2, 1]),
        ("a", [2, 2]),
        ("b", [1, 5]),
        ("b", [2, 5]),
    ]


def test_base_file_relative_to_the_spec(tmp_path: Path) -> None:
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "base.toml").write_text(
        'seed = 3\n[machine]\npreset = "miwa2014-16node"\n'
        '[[jobs]]\nname = "w"\nranks = 2\nworkload = { kind = "pingpong" }\n'
    )
    spec = spec_file(tmp_path / "cfg", 'base = "base.toml"\n[axes]\n"jobs[0].ranks" = [2, 4]\n')
    runs = sweep.SweepSpec.load(spec).runs()
    assert [r.config.resolved()["jobs"][0]["ranks"] for r in runs] == [2, 4]
    assert all(r.config.resolved()["seed"] == 3 for r in runs)


@pytest.mark.parametrize(
    ("tail", "message"),
    [
        (
            '[axes]\n"power.links.idle_timout_us" = [1, 2]\n',
            "power.links.idle_timout_us: unknown field `idle_timout_us`",
        ),
        (
            'mode = "gird"\n[axes]\n',
            "spec.toml: mode: expected one of grid, zip, random, got 'gird'",
        ),
        (
            'mode = "zip"\n[axes]\n"seed" = [1, 2]\n"power.links.idle_timeout_us" = [1, 2, 3]\n',
            'spec.toml: axes: mode = "zip" needs axes of equal length; seed has 2, '
            "power.links.idle_timeout_us has 3",
        ),
        ("colour = 1\n[axes]\n", "spec.toml: colour: unknown field; expected one of"),
        (
            'baseline = "off"\n[axes]\n',
            "spec.toml: baseline: 'off' is not a variant; expected one of run",
        ),
        (
            '[axes]\n"seed" = { min = 1, max = 3 }\n',
            'spec.toml: axes.seed: a range {min, max} needs mode = "random"',
        ),
        (
            '[axes]\n[[variants]]\nname = "v"\nset = { "power.link.policy" = "always_on" }\n',
            "power.link: unknown field `link`",
        ),
        (
            'mode = "random"\nsamples = 9223372036854775807\n[axes]\nseed = [1, 2]\n',
            "spec.toml: the spec makes 9,223,372,036,854,775,807 cells x 1 variant(s) = "
            "9,223,372,036,854,775,807 runs, more than the 100,000 a sweep may have",
        ),
        (
            # Just over the limit: 1 x 50,001 cells, each run by 2 variants.
            '[axes]\n"jobs[0].ranks" = [16]\nseed = '
            + str(list(range(50001)))
            + '\n[[variants]]\nname = "a"\n[[variants]]\nname = "b"\n',
            "spec.toml: the spec makes 50,001 cells x 2 variant(s) = 100,002 runs, more than the "
            "100,000 a sweep may have",
        ),
        (
            'mode = "random"\nsamples = 2\n[axes]\n'
            '"power.links.idle_timeout_us" = { min = 0, max = 1, step = 2 }\n',
            "spec.toml: axes.power.links.idle_timeout_us.step: unknown field; expected one of "
            "integer, label, log, max, min",
        ),
        (
            "[axes]\nseed = { label = 3, values = [1, 2] }\n",
            "spec.toml: axes.seed.label: expected a non-empty string, got 3",
        ),
        (
            '[axes]\nseed = { label = "the seed", values = [1, 2], colour = 1 }\n',
            "spec.toml: axes.seed.colour: unknown field; expected one of label, values",
        ),
        (
            '[axes]\nseed = { label = "the seed", values = [] }\n',
            "spec.toml: axes.seed: expected at least one value",
        ),
        (
            '[axes]\n[[variants]]\nname = ""\n',
            "spec.toml: variants[0]: expected a table with a non-empty string `name`",
        ),
        (
            '[axes]\nseed = [1]\n[[groups]]\nname = "g"\naxes = { seed = [2] }\n',
            "spec.toml: groups[0].axes.seed: also a top-level axis (the top-level axes are "
            "crossed with each group's); give it in one place",
        ),
    ],
)
def test_spec_errors_exit_2(run_cli: Run, tmp_path: Path, tail: str, message: str) -> None:
    # Top-level keys first: after a table header they would belong to that table.
    head, sep, tail = tail.partition("[axes]\n")
    spec = spec_file(tmp_path, head + BASE.format(iterations=2) + sep + tail)
    r = run_cli("sweep", spec, "-o", tmp_path / "out", "-q")
    assert r.code == 2, r.err
    assert r.err.startswith("tracewatt: error: ") and message in r.err, r.err
    assert not (tmp_path / "out" / "runs").exists()  # nothing ran


def test_a_spec_without_base_is_a_spec_error(run_cli: Run, tmp_path: Path) -> None:
    spec = spec_file(tmp_path, 'name = "x"\n[axes]\nseed = [1, 2]\n')
    r = run_cli("sweep", spec, "-o", tmp_path / "out", "-q")
    assert (r.code, r.err) == (
        2,
        f"tracewatt: error: {spec}: base: missing; expected the configuration every run starts "
        "from (a file relative to the spec, or a [base] table)\n",
    )
    assert not (tmp_path / "out").exists()


def test_shipped_default_study_is_a_sweep(run_cli: Run) -> None:
    spec = sweep.SweepSpec.load(sweep.shipped_spec_path("default"))
    r = run_cli("sweep", "--list")
    listed = {name: text for name, text in (line.split(maxsplit=1) for line in r.out.splitlines())}
    assert r.code == 0 and listed["default"] == spec.description
    assert sorted(listed) == [
        "default",
        "fast-mode",
        "tracerp",
        "tracerp-credits",
        "tracerp-departures",
    ]
    r = run_cli("sweep", "--list", "--json")
    assert r.code == 0, r.err
    assert json.loads(r.out) == [{"name": n, "description": t} for n, t in listed.items()]
    runs = spec.runs()
    assert len(runs) == 30 and not any(r.error for r in runs)  # every run is a valid config
    assert len({r.hash for r in runs}) == 30
    assert spec.baseline == "always_on"
    cells = {(r.values["machine.preset"], r.values["jobs[0]"]) for r in runs}
    assert len(cells) == 15
    for r in runs:
        cfg = r.config.resolved()
        assert cfg["machine"]["preset"] == r.values["machine.preset"]
        assert cfg["jobs"][0]["workload"]["kind"] == r.values["jobs[0]"]
        # TraceRP's Fig. 2 at its own scale, on the flow model.
        assert cfg["jobs"][0]["ranks"] == 8192 and cfg["machine"]["network"] == "flow"
        policy = "always_on" if r.variant == "always_on" else "timeout"
        assert cfg["power"]["links"]["policy"] == policy
    assert {p for p, _ in cells} == {
        "tracerp-fattree-288",
        "tracerp-torus-4x8x8",
        "tracerp-dragonfly-342",
    }


def test_default_study_is_tracerp_fig2_on_flows() -> None:
    """The main job is the `tracerp` spec's Fig. 2 group, cell for cell, run on the flow model
    with every message a train at most, short messages whole and the all-to-all's full-lane
    algorithm: nothing else differs."""
    tracerp = {
        (r.values["machine.preset"], r.values["jobs[0]"], r.variant): r.config.resolved()
        for r in sweep.SweepSpec.load(sweep.shipped_spec_path("tracerp")).runs()
        if r.group == "fig2"
    }
    runs = sweep.SweepSpec.load(sweep.shipped_spec_path("default")).runs()
    assert len(runs) == len(tracerp) == 30
    for r in runs:
        variant = {"eee": "on_off"}.get(r.variant, r.variant)
        want = tracerp[(r.values["machine.preset"], r.values["jobs[0]"], variant)]
        want["machine"]["network"] = "flow"
        # The largest message, 10 MiB, in segments of half a 64 KiB buffer (8 packets of
        # 4 KiB): 10240 / 32 = 320.
        want["machine"]["flow_train_segments"] = 320
        want["machine"]["flow_segment_packets"] = 8
        # Short messages whole, for the study's ten minutes (docs/fast-mode.md).
        want["machine"]["flow_short_unit_packets"] = 0
        if r.values["jobs[0]"] == "a2a":
            want["jobs"][0]["workload"]["algo"] = "full_lane"
        got = r.config.resolved()
        # Only the job's name may differ (each spec names its own).
        assert got["jobs"][0].pop("name") == want["jobs"][0].pop("name") == r.values["jobs[0]"]
        assert got == want, (r.values, r.variant)


# --------------------------------------------------------------------------- dataset


def test_axes_without_a_label_are_named_as_a_reader_would() -> None:
    from tracewatt.sweep.labels import default_label

    assert default_label("power.links.idle_timeout_us") == "idle timeout (us)"
    assert default_label("machine.links.bandwidth_gbps") == "bandwidth (Gb/s)"
    assert default_label("machine.preset") == "machine"
    assert default_label("jobs[0]") == "workload"
    assert default_label("jobs.0.workload") == "workload"
    assert default_label("jobs[1].workload") == "job 1 workload"
    assert default_label("jobs[0].workload.kind") == "workload kind"
    assert default_label("jobs[0].trace.path") == "trace"
    assert default_label("mpi.wait.policy") == "MPI wait policy"
    assert default_label("power.links.policy") == "link policy"
    assert default_label("machine.ranks_per_node") == "ranks per node"


def test_idle_timeout_sweep_rows_savings_and_slowdowns(run_cli: Run, tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = run_cli("sweep", spec_file(tmp_path, EEE_VS_ALWAYS_ON), "-o", out, "-j", "2", "-q")
    assert r.code == 0, r.err
    meta, df = sweep.read_dataset(out)
    assert meta["axes"] == ["power.links.idle_timeout_us", "jobs[0].workload"]
    assert meta["variants"] == ["eee", "always_on"] and meta["baseline"] == "always_on"
    assert len(df) == 16 and (df["status"] == "ok").all() and (df["error"] == "").all()
    eee = df[df["variant"] == "eee"]
    assert len(eee) == 8
    cells = zip(eee["power.links.idle_timeout_us"], eee["jobs[0].workload"], strict=True)
    assert sorted(cells) == sorted((t, w) for t in TIMEOUTS_US for w in ("perm", "halo"))
    # Always on, the idle timeout cannot change a run: one always-on run per workload serves
    # every timeout, the first timeout's (8 EEE runs + 2).
    on = df[df["variant"] == "always_on"]
    assert on.groupby("jobs[0].workload")["dir"].nunique().to_dict() == {"perm": 1, "halo": 1}
    assert df["dir"].nunique() == 10
    for row in df.to_dict("records"):
        s = summary(out, row)
        cfg = s["config"]
        # Each EEE row is its own run: its directory holds the configuration of its values.
        timeout_us = row["power.links.idle_timeout_us"] if row["variant"] == "eee" else 0.5
        assert cfg["power"]["links"]["idle_timeout_us"] == timeout_us
        kind = {"perm": "permutation", "halo": "near_neighbor"}[row["jobs[0].workload"]]
        assert cfg["jobs"][0]["workload"]["kind"] == kind
        assert row["makespan_s"] == s["makespan_s"]
        assert row["energy_j"] == s["energy_j"]["total"]
        assert row["energy_switch_ports_j"] == s["energy_j"]["switch_ports"]
        assert row["avg_power_w"] == s["avg_power_w"]["total"]
        assert row["link_wakes"] == s["links"]["wakes"]
        done = json.loads((out / row["dir"] / "done.json").read_text())
        assert (row["run_wall_s"], row["run_cpu_s"]) == (done["wall_s"], done["cpu_s"])
        # The run's CPU time is one thread's: it cannot exceed its wall time (5 % for clock reads).
        assert 0 < done["cpu_s"] <= done["wall_s"] * 1.05
        if row["variant"] == "always_on":
            assert pd.isna(row["saving_pct"]) and pd.isna(row["slowdown_pct"])
            continue
        (base,) = df[
            (df["variant"] == "always_on")
            & (df["power.links.idle_timeout_us"] == row["power.links.idle_timeout_us"])
            & (df["jobs[0].workload"] == row["jobs[0].workload"])
        ].to_dict("records")
        b = summary(out, base)
        e, eb = s["energy_j"], b["energy_j"]
        assert row["saving_pct"] == pytest.approx(100 * (eb["total"] - e["total"]) / eb["total"])
        links, links_b = (x["switch_ports"] + x["nic_ports"] for x in (e, eb))
        assert row["link_saving_pct"] == pytest.approx(100 * (links_b - links) / links_b)
        assert row["slowdown_pct"] == pytest.approx(
            100 * (s["makespan_s"] - b["makespan_s"]) / b["makespan_s"]
        )
    # Each timeout gives its own run: the four EEE runs of a workload differ.
    for _, w in eee.groupby("jobs[0].workload"):
        assert w["energy_j"].nunique() == 4 and w["dir"].nunique() == 4


def test_a_failing_value_is_recorded_and_the_sweep_goes_on(tmp_path: Path) -> None:
    # -1 us is refused when the configuration is resolved; 17 ranks on 16 nodes only when the
    # run starts (in its worker).
    spec = spec_file(
        tmp_path,
        BASE.format(iterations=2)
        + '[axes]\n"power.links.idle_timeout_us" = [10.0, -1.0]\n"jobs[0].ranks" = [16, 17]\n',
    )
    out = tmp_path / "out"
    r = run_process(["sweep", spec, "-o", out, "-j", "2"])
    assert r.code == 1, r.err
    _, df = sweep.read_dataset(out)
    status = {
        (row["power.links.idle_timeout_us"], row["jobs[0].ranks"]): (row["status"], row["error"])
        for row in df.to_dict("records")
    }
    assert status[(10.0, 16)] == ("ok", "")
    assert status[(10.0, 17)][0] == "failed" and "jobs[0]" in status[(10.0, 17)][1]
    for ranks in (16, 17):
        st, err = status[(-1.0, ranks)]
        assert st == "failed"
        assert "power.links.idle_timeout_us: must be a non-negative number, got -1" in err
    assert "spec.toml[run, power.links.idle_timeout_us=-1, jobs[0].ranks=16]" in r.err
    assert len(r.out.splitlines()) == 2 + 4 + 1  # the table and where the results are
    ok = df[df["status"] == "ok"]
    assert ok["makespan_s"].notna().all() and df[df["status"] != "ok"]["makespan_s"].isna().all()


def test_groups_share_identical_runs(tmp_path: Path) -> None:
    spec = spec_file(
        tmp_path,
        BASE.format(iterations=2)
        + '[[groups]]\nname = "a"\naxes = { "power.links.idle_timeout_us" = [1.0, 2.0] }\n'
        + '[[groups]]\nname = "b"\naxes = { "power.links.idle_timeout_us" = [2.0, 5.0] }\n',
    )
    progress: list[tuple[int, int]] = []
    df = tracewatt.sweep(
        spec, tmp_path / "out", workers=1, progress=lambda p: progress.append((p.done, p.total))
    )
    meta = json.loads((tmp_path / "out" / "sweep.json").read_text())
    assert meta["groups"] == [
        {"name": "a", "axes": ["power.links.idle_timeout_us"], "mode": "grid"},
        {"name": "b", "axes": ["power.links.idle_timeout_us"], "mode": "grid"},
    ]
    assert list(zip(df["group"], df["power.links.idle_timeout_us"], strict=True)) == [
        ("a", 1.0),
        ("a", 2.0),
        ("b", 2.0),
        ("b", 5.0),
    ]
    # The 2 us run is the same configuration in both groups: it ran once, both rows show it.
    assert progress[-1] == (3, 3)
    assert df["dir"].iloc[1] == df["dir"].iloc[2] and df["dir"].nunique() == 3
    assert df["energy_j"].iloc[1] == df["energy_j"].iloc[2]


def _files(out: Path) -> dict[str, bytes]:
    return {n: (out / n).read_bytes() for n in ("sweep.json", "sweep.parquet")}


def test_a_directory_holding_another_sweep_is_refused(run_cli: Run, tmp_path: Path) -> None:
    base = BASE.format(iterations=2)
    first = spec_file(tmp_path, base + '[axes]\n"power.links.idle_timeout_us" = [1.0, 2.0]\n')
    wider = spec_file(
        tmp_path, base + '[axes]\n"power.links.idle_timeout_us" = [1.0, 2.0, 4.0]\n', "w.toml"
    )
    other = spec_file(tmp_path, base + '[axes]\n"power.links.idle_timeout_us" = [7.0]\n', "o.toml")
    out = tmp_path / "out"
    assert run_cli("sweep", first, "-o", out, "-j", "1", "-q").code == 0
    # The same spec resumes (nothing left to run).
    r = run_cli("sweep", first, "-o", out, "-j", "1")
    assert r.code == 0 and "2 runs, 2 already done; nothing to run" in r.err, r.err
    # Another spec is refused before anything runs, and the sweep there is left as it was.
    before, runs = _files(out), mtimes(out)
    r = run_cli("sweep", other, "-o", out, "-j", "1", "-q")
    assert (r.code, r.err) == (
        2,
        f"tracewatt: error: {out}: holds another sweep (`t`: 2 of the 2 runs of its "
        "sweep.parquet are not runs of this spec); give another directory, or replace that "
        "sweep (--force)\n",
    )
    assert _files(out) == before and mtimes(out) == runs
    # A spec that keeps every run of the dataset and adds one is the same sweep, grown.
    r = run_cli("sweep", wider, "-o", out, "-j", "1")
    assert r.code == 0 and "3 runs, 2 already done; 1 to run" in r.err, r.err
    # Back to the two runs: the dataset of three would lose a row.
    assert run_cli("sweep", first, "-o", out, "-j", "1", "-q").code == 2
    # --force replaces the sweep; the runs already there stay (found by their configuration).
    r = run_cli("sweep", other, "-o", out, "-j", "1", "-q", "--force")
    assert r.code == 0, r.err
    _, df = sweep.read_dataset(out)
    assert list(df["power.links.idle_timeout_us"]) == [7.0]
    assert len(list((out / "runs").iterdir())) == 4


def test_a_resumed_sweep_names_a_run_file_it_cannot_read(run_cli: Run, tmp_path: Path) -> None:
    """Resuming reads each finished run's done.json and summary.json: one that is not what the
    sweep wrote is an error naming it (exit 2), not an internal error."""
    spec = spec_file(
        tmp_path, BASE.format(iterations=2) + '[axes]\n"power.links.idle_timeout_us" = [1.0]\n'
    )
    out = tmp_path / "out"
    assert run_cli("sweep", spec, "-o", out, "-j", "1", "-q").code == 0
    (run_dir,) = (out / "runs").iterdir()
    for name, text, says in (
        ("summary.json", '{"makespan_s": 1}', "`energy_j` is missing"),
        ("done.json", "{", "not JSON"),
    ):
        good = (run_dir / name).read_text(encoding="utf-8")
        (run_dir / name).write_text(text, encoding="utf-8")
        r = run_cli("sweep", spec, "-o", out, "-j", "1", "-q")
        assert r.code == 2 and f"{run_dir / name}: " in r.err and says in r.err, r.err
        (run_dir / name).write_text(good, encoding="utf-8")


def test_a_sweep_written_by_another_version_is_the_same_sweep(tmp_path: Path) -> None:
    """Runs are hashed with the tracewatt version: the dataset of an older version lists them
    under the hashes that version gave, and the spec is still that sweep's."""
    spec = sweep.SweepSpec.from_toml(
        BASE.format(iterations=2) + '[axes]\n"power.links.idle_timeout_us" = [1.0, 2.0]\n', "s"
    )
    runs = spec.runs()
    out = tmp_path / "out"
    out.mkdir()
    (out / "sweep.json").write_text(json.dumps({"name": "t", "tracewatt_version": "0.0.1"}))
    old = [f"runs/{r.hash_under('0.0.1')}" for r in runs]
    assert old != [f"runs/{r.hash}" for r in runs]
    pd.DataFrame({"dir": old}).to_parquet(out / "sweep.parquet")
    assert sweep.other_sweep(out, runs) is None
    pd.DataFrame({"dir": [*old, "runs/0123456789abcdef"]}).to_parquet(out / "sweep.parquet")
    assert sweep.other_sweep(out, runs) == (
        f"{out}: holds another sweep (`t`: 1 of the 3 runs of its sweep.parquet are not runs of "
        "this spec)"
    )
    # One it cannot read is another sweep, which --force replaces.
    (out / "sweep.json").write_text("[1]")
    assert sweep.other_sweep(out, runs) == (
        f"{out}: cannot read the sweep there ({out / 'sweep.json'}: expected a sweep's description "
        "(name, axes, variants, ...); the file is an array, not an object)"
    )


# --------------------------------------------------------------------------- local pool


def test_local_pool_resubmits_the_runs_of_a_killed_worker(tmp_path: Path) -> None:
    import multiprocessing

    killed: list[int] = []

    def kill_one(p: sweep.Progress) -> None:
        if p.done == 1 and not killed:
            pid = multiprocessing.active_children()[0].pid
            assert pid is not None
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    out = tmp_path / "out"
    df = tracewatt.sweep(spec_file(tmp_path, TWELVE), out, workers=2, progress=kill_one)
    assert killed
    assert len(df) == 12 and (df["status"] == "ok").all(), df["error"].tolist()
    assert len(list((out / "runs").glob("*/done.json"))) == 12


# --------------------------------------------------------------------------- Dask


def test_local_cluster_runs_resumes_and_retries_a_killed_worker(tmp_path: Path) -> None:
    from distributed import LocalCluster

    spec = spec_file(tmp_path, TWELVE)
    killed: list[int] = []

    # Only the sweep's own client talks to the scheduler: a second client in this process
    # would run on another event loop, which the progress callback must not call into.
    def worker_pids(cluster: LocalCluster) -> list[int]:
        return [n.process.pid for n in cluster.workers.values() if n.process is not None]

    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        # A 12-run sweep on a LocalCluster of worker processes.
        first = tmp_path / "first"
        reference = tracewatt.sweep(spec, first, scheduler=cluster.scheduler_address)
        assert len(reference) == 12 and (reference["status"] == "ok").all()

        # The same sweep again, one worker process killed while it runs: after the first of 12
        # runs ends, both workers (one thread each) hold a run, so either one is mid-run.
        def kill_a_worker(p: sweep.Progress) -> None:
            if p.done == 1 and not killed:
                assert p.running > 0, "no run in flight to kill"
                pid = worker_pids(cluster)[0]
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)

        out = tmp_path / "killed"
        df = tracewatt.sweep(spec, out, scheduler=cluster.scheduler_address, progress=kill_a_worker)
        assert killed and killed[0] not in worker_pids(cluster)
    assert len(df) == 12 and (df["status"] == "ok").all(), df["error"].tolist()
    # Nothing lost: the same runs and the same numbers as without the kill.
    columns = ["dir", "makespan_s", "energy_j", "link_wakes"]
    pd.testing.assert_frame_equal(df[columns], reference[columns])

    # A rerun finds all 12 done: no run directory is touched and no cluster is started (the
    # Dask client library is not even imported).
    before = mtimes(out)
    code = (
        "import sys, tracewatt\n"
        f"df = tracewatt.sweep({str(spec)!r}, {str(out)!r}, cluster='local:2')\n"
        "print(len(df), (df['status'] == 'ok').sum(), 'distributed' in sys.modules)\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert p.stdout.split() == ["12", "12", "False"]
    assert mtimes(out) == before


def _stop_after(
    args: list[str], out: Path, runs_done: int, sig: signal.Signals
) -> tuple[int, float, str, set[int]]:
    """Starts ``tracewatt ARGS``, sends it ``sig`` once ``runs_done`` runs are finished; returns
    its exit code, the seconds it took to exit, its stderr, and the processes it had started
    that are still alive 10 s after it exited."""
    p = start_process(args)
    deadline = time.monotonic() + 120
    while len(list(out.glob("runs/*/done.json"))) < runs_done:
        assert p.poll() is None, p.communicate()[1]
        assert time.monotonic() < deadline
        time.sleep(0.05)
    children = descendants(p.pid)
    assert children, "the sweep runs in worker processes"
    t0 = time.monotonic()
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    took = time.monotonic() - t0
    deadline = time.monotonic() + 10
    while any(alive(c) for c in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    return p.returncode, took, err, {c for c in children if alive(c)}


@pytest.mark.parametrize(
    ("sig", "code", "message"),
    [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")],
)
@pytest.mark.parametrize("where", [["--cluster", "local:2"], ["-j", "2"]])
def test_a_stopped_sweep_keeps_finished_runs_and_leaves_no_worker(
    tmp_path: Path, where: list[str], sig: signal.Signals, code: int, message: str
) -> None:
    """Ctrl-C (SIGINT) and a batch scheduler's time limit (SIGTERM) stop the workers, keep the
    finished runs with their dataset, and exit 128 + the signal."""
    out = tmp_path / "out"
    got, took, err, left = _stop_after(
        ["sweep", str(spec_file(tmp_path, TWELVE)), "-o", str(out), *where], out, 2, sig
    )
    assert got == code, err
    assert took < 10.0, f"the sweep took {took:.1f} s to stop"
    assert err.endswith(f"tracewatt: error: {message}\n"), err
    assert not left, f"processes still running after the sweep stopped: {sorted(left)}"
    meta, df = sweep.read_dataset(out)
    finished = {f"runs/{p.parent.name}" for p in out.glob("runs/*/done.json")}
    assert 2 <= len(df) < 12
    assert set(df["dir"]) == finished and (df["status"] == "ok").all()
    assert meta["name"] == "t"
    if where[0] == "-j":
        # A rerun runs only what is left.
        r = run_process(["sweep", spec_file(tmp_path, TWELVE), "-o", out, "-j", "2"])
        assert r.code == 0, r.err
        assert f"12 runs, {len(df)} already done; {12 - len(df)} to run" in r.err
        assert len(sweep.read_dataset(out)[1]) == 12


# --------------------------------------------------------------------------- SLURM / PBS


# The job's scheduler runs here, with its dashboard on the default port, which another process
# may hold.
@pytest.mark.filterwarnings("ignore:Port 8787 is already in use")
def test_slurm_job_script() -> None:
    cluster = sweep.jobqueue_cluster(
        "slurm",
        {
            "queue": "compute",
            "account": "proj42",
            "walltime": "02:30:00",
            "cores": 8,
            "memory": "32GB",
        },
    )
    try:
        script = cluster.job_script()
    finally:
        cluster.close()
    lines = script.splitlines()
    assert lines[0] == "#!/usr/bin/env bash"
    for line in (
        "#SBATCH -p compute",
        "#SBATCH -A proj42",
        "#SBATCH -t 02:30:00",
        "#SBATCH --cpus-per-task=8",
        "#SBATCH --mem=30G",  # 32 GB = 29.8 GiB, which dask-jobqueue rounds to 30G
    ):
        assert line in lines, script
    # Eight single-threaded worker processes per job, sharing its memory (32 GB / 8).
    worker = lines[-1].split()
    assert worker[worker.index("--nworkers") + 1] == "8"
    assert worker[worker.index("--nthreads") + 1] == "1"
    assert worker[worker.index("--memory-limit") + 1] == "3.73GiB"


def test_cluster_options_are_checked(run_cli: Run, tmp_path: Path) -> None:
    spec = spec_file(tmp_path, BASE.format(iterations=2))
    r = run_cli("sweep", spec, "-o", tmp_path / "o", "--cluster", "slurm", "--cores", "4")
    assert r.code == 2
    assert (
        "--cluster slurm: memory (per job) is missing; give --memory, or memory in the spec's "
        "[cluster] table"
    ) in r.err
    r = run_cli("sweep", spec, "-o", tmp_path / "o", "--queue", "q", "--worker-timeout", "5")
    assert r.code == 2
    assert "--queue, --worker-timeout: only with --cluster slurm or --cluster pbs" in r.err
    r = run_cli("sweep", spec, "-o", tmp_path / "o", "--cluster", "local:0")
    assert r.code == 2 and "expected local:N (N >= 1), slurm or pbs" in r.err
    r = run_process(["sweep", spec, "-o", tmp_path / "o", "-j", "2", "--cluster", "local:2"])
    assert r.code == 2 and "argument --cluster: not allowed with argument -j/--workers" in r.err
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "notes.txt").write_text("mine")
    r = run_cli("sweep", spec, "-o", tmp_path / "full")
    assert r.code == 2 and "not a sweep's directory" in r.err
    with pytest.raises(ConfigError, match="no such file, nor a shipped sweep spec"):
        sweep.shipped_spec_path("nope")


def test_the_cluster_table_of_a_spec(tmp_path: Path) -> None:
    """A spec's [cluster] table gives the worker jobs' options; the call's (the command line's)
    take precedence; the job script has them."""
    text = BASE.format(iterations=2) + (
        "[cluster]\n"
        'queue = "compute"\n'
        "cores = 4\n"
        'memory = "8GB"\n'
        'python = "/opt/site/venv/bin/python"\n'
        'directives = ["--qos=short", "--constraint=skylake"]\n'
        'prologue = ["module load python/3.11", "source /opt/site/venv/bin/activate"]\n'
        'log_dir = "/scratch/logs"\n'
    )
    s = sweep.SweepSpec.load(spec_file(tmp_path, text))
    cluster = sweep.jobqueue_cluster("slurm", {**s.cluster, "queue": "debug"})
    try:
        lines = cluster.job_script().splitlines()
    finally:
        cluster.close()
    for line in (
        "#SBATCH -p debug",
        "#SBATCH --cpus-per-task=4",
        "#SBATCH --qos=short",
        "#SBATCH --constraint=skylake",
        "#SBATCH -o /scratch/logs/dask-worker-%J.out",
    ):
        assert line in lines, lines
    # The prologue in order, then the worker command on the site's Python.
    start = lines.index("module load python/3.11")
    assert lines[start + 1] == "source /opt/site/venv/bin/activate"
    assert lines[-1].startswith("/opt/site/venv/bin/python -m distributed.cli.dask_worker")
    # PBS: the same options as #PBS lines.
    cluster = sweep.jobqueue_cluster("pbs", {**s.cluster, "directives": ["-l place=scatter"]})
    try:
        lines = cluster.job_script().splitlines()
    finally:
        cluster.close()
    for line in ("#PBS -q compute", "#PBS -l place=scatter", "module load python/3.11"):
        assert line in lines, lines


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (
            "processes = 2",
            "[cluster]: processes: set by tracewatt, not an option: each job runs one "
            "single-threaded worker process per core (cores)",
        ),
        ("nodes = 2", "[cluster]: nodes: unknown option of worker jobs; expected one of queue,"),
        ('cores = "4"', "[cluster]: cores: expected a int, got '4'"),
        ('prologue = "module load x"', "[cluster]: prologue: expected a list of strings"),
        ("worker_timeout = 0", "[cluster]: worker_timeout: expected a positive number, got 0.0"),
    ],
)
def test_cluster_table_errors(tmp_path: Path, table: str, message: str) -> None:
    path = spec_file(tmp_path, BASE.format(iterations=2) + "[cluster]\n" + table + "\n")
    with pytest.raises(ConfigError) as e:
        sweep.SweepSpec.load(path)
    assert str(e.value).startswith(f"{path}: {message}"), str(e.value)
    # The same from Python, before anything runs.
    with pytest.raises(ConfigError, match="processes: set by tracewatt"):
        tracewatt.sweep(
            spec_file(tmp_path, BASE.format(iterations=2), "ok.toml"),
            tmp_path / "o",
            cluster="slurm",
            cluster_options={"cores": 2, "memory": "1GB", "processes": 2},
        )
    assert not (tmp_path / "o").exists()


def test_worker_job_states_as_the_progress_shows_them() -> None:
    from tracewatt.sweep.cluster import describe_jobs

    assert describe_jobs("slurm", {}) == ""
    pending = {"1": ("PENDING", "Resources"), "2": ("PENDING", "Resources")}
    assert describe_jobs("slurm", pending) == "2 worker jobs pending: Resources"
    mixed = {"1": ("RUNNING", "None"), "2": ("PENDING", "Priority"), "3": ("PENDING", "Resources")}
    assert describe_jobs("slurm", mixed) == (
        "3 worker jobs: 1 running, 2 pending: Priority, Resources"
    )
    assert describe_jobs("pbs", {"7.pbs": ("R", "")}) == "1 worker job running"
    assert describe_jobs("pbs", {"7.pbs": ("H", "held")}) == "1 worker job pending: held"


# --------------------------------------------------------------------------- a sweep's process


def test_a_killed_sweep_leaves_no_worker(tmp_path: Path) -> None:
    """SIGKILL of a sweep (the out-of-memory killer, a batch system) ends its worker processes
    too, mid-run; the same command then runs what is left."""
    out = tmp_path / "out"
    p = start_process(["sweep", spec_file(tmp_path, TWELVE), "-o", out, "-j", "2", "-q"])
    deadline = time.monotonic() + 120
    while len(list(out.glob("runs/*/done.json"))) < 1:
        assert p.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    children = descendants(p.pid)
    assert len(children) >= 2, "two worker processes"
    p.kill()
    p.communicate()
    t0 = time.monotonic()
    while any(alive(c) for c in children) and time.monotonic() - t0 < 10:
        time.sleep(0.05)
    took = time.monotonic() - t0
    assert not [c for c in children if alive(c)], "workers outlive the sweep"
    assert took < 3, f"the workers took {took:.1f} s to end"
    finished = len(list(out.glob("runs/*/done.json")))
    r = run_process(["sweep", spec_file(tmp_path, TWELVE), "-o", out, "-j", "2"])
    assert r.code == 0, r.err
    assert f"12 runs, {finished} already done; {12 - finished} to run" in r.err
    assert len(sweep.read_dataset(out)[1]) == 12


def test_a_worker_whose_parent_ended_ends_without_prctl() -> None:
    """The portable fallback of the kernel's parent-death signal: the watchdog thread of a
    worker ends it once its parent is gone."""
    # The parent's pid is given to the worker, as the pool does: the parent may have ended
    # before the worker starts.
    worker = (
        "import sys, threading, time\n"
        "from tracewatt.sweep.local import _watch_parent\n"
        "threading.Thread(target=_watch_parent, args=(int(sys.argv[1]),), daemon=True).start()\n"
        "time.sleep(60)\n"
    )
    parent = (
        "import os, subprocess, sys\n"
        f"w = subprocess.Popen([sys.executable, '-c', {worker!r}, str(os.getpid())],\n"
        "    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "print(w.pid)\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", parent], capture_output=True, text=True, timeout=60, check=True
    )
    pid = int(p.stdout)
    t0 = time.monotonic()
    # The worker still imports tracewatt (a second or so), then looks every WATCHDOG_S.
    while alive(pid) and time.monotonic() - t0 < 20:
        time.sleep(0.05)
    assert not alive(pid), "the orphaned worker lives on"


def test_a_second_sweep_into_a_directory_in_use_is_refused(run_cli: Run, tmp_path: Path) -> None:
    out = tmp_path / "out"
    spec = spec_file(tmp_path, TWELVE)
    first = start_process(["sweep", spec, "-o", out, "-j", "1", "-q"])
    try:
        deadline = time.monotonic() + 120
        while not list(out.glob("runs/*/done.json")):
            assert first.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        r = run_cli("sweep", spec, "-o", out, "-j", "1")
        assert r.code == 2
        assert r.err == (
            f"tracewatt: error: {out}: another sweep is using this directory (process "
            f"{first.pid} on {os.uname().nodename}, {out / '.lock'}); wait for it to end, or give "
            "another directory\n"
        )
    finally:
        _, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    assert len(sweep.read_dataset(out)[1]) == 12
    # The lock of a process that ended is no one's: the next sweep takes it.
    (out / ".lock").write_text("999999999 on elsewhere\n")
    r = run_cli("sweep", spec, "-o", out, "-q")
    assert r.code == 0 and r.err == "", r.err
