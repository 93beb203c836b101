"""The report of a sweep directory (``sweep.parquet`` + ``sweep.json``): TraceRP Fig. 2-style
bars and Fig. 3-5-style curves, checked against the dataset they were drawn from (one built by
hand in the documented format, and a real small sweep checked against its runs' summaries)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import tracewatt
from report_page import assert_offline_and_drawn, needs_browser, open_page, parse_html
from tracewatt import cli, report
from tracewatt.report.sweep_plots import SWEEP_SAVING_METRICS

PRESETS = ("ft", "torus")
JOBS = ("nn", "qbox", "a2a")
TIMEOUTS_US = (1250.0, 0.0, 50.0)  # not in order: the curves sort them
PRESET, JOB, TIMEOUT = "machine.preset", "jobs[0]", "power.links.idle_timeout_us"


def _row(group: str, variant: str, preset: str, job: str, timeout_us: float) -> dict[str, Any]:
    """A run with energy and time that differ per cell and fall with the timeout for EEE."""
    base_j = 100.0 * (1 + PRESETS.index(preset)) + 10.0 * JOBS.index(job)
    base_s = 1.0 + 0.5 * JOBS.index(job) + 0.25 * PRESETS.index(preset)
    eee = variant == "eee"
    return {
        "group": group,
        "variant": variant,
        PRESET: preset,
        JOB: job,
        TIMEOUT: timeout_us,
        "status": "ok",
        "error": "",
        "dir": f"runs/{group}{variant}{preset}{job}{timeout_us:g}",
        "energy_j": base_j * (0.6 + 0.0002 * timeout_us + 0.01 * JOBS.index(job))
        if eee
        else base_j,
        "makespan_s": base_s * (1.1 - 0.00005 * timeout_us) if eee else base_s,
        "link_wakes": 7,
        "lpi_share": 0.5,
    }


def _with_savings(frame: pd.DataFrame) -> pd.DataFrame:
    """The baseline columns as the sweep computes them: against the always_on run of the cell."""
    cell = ["group", PRESET, JOB, TIMEOUT]
    base = frame.loc[frame["variant"] == "always_on", [*cell, "energy_j", "makespan_s"]]
    joined = frame.merge(base, on=cell, how="left", suffixes=("", "_base"))
    eee = frame["variant"] == "eee"
    frame["saving_pct"] = np.where(
        eee, 100 * (1 - joined["energy_j"] / joined["energy_j_base"]), np.nan
    )
    frame["link_saving_pct"] = 1.5 * frame["saving_pct"]
    frame["slowdown_pct"] = np.where(
        eee, 100 * (joined["makespan_s"] / joined["makespan_s_base"] - 1), np.nan
    )
    return frame


def sweep_frame() -> pd.DataFrame:
    """Two groups: "fig2" every preset x job at 600 us, "fig3" the timeout axis too; EEE
    failed on torus / a2a in fig2."""
    rows = [
        _row(group, variant, preset, job, timeout_us)
        for group, timeouts in (("fig2", (600.0,)), ("fig3", TIMEOUTS_US))
        for timeout_us in timeouts
        for preset in PRESETS
        for job in JOBS
        for variant in ("eee", "always_on")
    ]
    frame = _with_savings(pd.DataFrame(rows))
    failed = (frame["group"] == "fig2") & (frame[PRESET] == "torus") & (frame[JOB] == "a2a")
    failed &= frame["variant"] == "eee"
    metrics = ["energy_j", "makespan_s", "saving_pct", "link_saving_pct", "slowdown_pct"]
    frame.loc[failed, metrics] = np.nan
    frame.loc[failed, ["status", "error"]] = ["failed", "ConfigError: bad value"]
    return frame


META: dict[str, Any] = {
    "name": "synthetic",
    "description": "a sweep in the documented format",
    "mode": "grid",
    "axes": [PRESET, JOB],
    "groups": [
        {"name": "fig2", "axes": {TIMEOUT: [600.0]}},
        {"name": "fig3", "axes": {TIMEOUT: list(TIMEOUTS_US)}},
    ],
    "variants": ["eee", "always_on"],
    "baseline": "always_on",
    "tracewatt_version": "0.1.0",
}
FIGURES = ["sweep_bars_fig2", "sweep_curves_fig3_power_links_idle_timeout_us"]


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("sweep")
    sweep_frame().to_parquet(d / "sweep.parquet")
    (d / "sweep.json").write_text(json.dumps(META), encoding="utf-8")
    return d


def test_bars_are_the_datasets_savings_per_job_and_preset() -> None:
    frame = sweep_frame()
    figs = {f.name: f for f in report.sweep_figures(frame, META)}
    assert list(figs) == FIGURES
    axes = figs["sweep_bars_fig2"].figure.axes
    # Jobs (3 values) along x, a bar per preset (2 values).
    assert [t.get_text() for t in axes[-1].get_xticklabels()] == list(JOBS)
    eee = frame[(frame["group"] == "fig2") & (frame["variant"] == "eee")]
    for ax, (column, _) in zip(axes, SWEEP_SAVING_METRICS, strict=True):
        assert [c.get_label() for c in ax.containers] == list(PRESETS)
        for preset, bars in zip(PRESETS, ax.containers, strict=True):
            for job, bar in zip(JOBS, bars.patches, strict=True):
                row = eee[(eee[PRESET] == preset) & (eee[JOB] == job)]
                if preset == "torus" and job == "a2a":
                    assert np.isnan(bar.get_height())  # the failed run draws no bar
                else:
                    assert bar.get_height() == pytest.approx(float(row[column].iloc[0]))


def test_curves_are_energy_and_time_relative_to_the_baseline_run() -> None:
    frame = sweep_frame()
    fig = report.sweep_figures(frame, META)[1].figure
    energy_ax, time_ax = fig.axes[:2]
    fig3 = frame[frame["group"] == "fig3"]
    base = fig3[fig3["variant"] == "always_on"].set_index([PRESET, JOB, TIMEOUT])
    labels = [f"{p} / {j}" for p in PRESETS for j in JOBS]
    for ax, column in ((energy_ax, "energy_j"), (time_ax, "makespan_s")):
        lines = ax.get_lines()
        assert [ln.get_label() for ln in lines] == labels
        for line, label in zip(lines, labels, strict=True):
            preset, job = label.split(" / ")
            x_us = np.asarray(line.get_xdata())
            assert list(x_us) == sorted(TIMEOUTS_US)
            # Worked out from the energy and run time columns, not the saving columns.
            runs = fig3[(fig3["variant"] == "eee") & (fig3[PRESET] == preset) & (fig3[JOB] == job)]
            runs = runs.set_index(TIMEOUT).loc[x_us]
            want = [100 * runs.loc[t, column] / base.loc[(preset, job, t), column] for t in x_us]
            np.testing.assert_allclose(np.asarray(line.get_ydata()), want)
    # EEE spends less energy but more time than always-on in every run drawn.
    assert all(max(ln.get_ydata()) < 100.0 for ln in energy_ax.get_lines())
    assert all(min(ln.get_ydata()) > 100.0 for ln in time_ax.get_lines())


def test_without_a_baseline_the_figures_are_absolute() -> None:
    frame = sweep_frame()
    frame = frame[(frame["variant"] == "eee") & (frame["status"] == "ok")]
    frame = frame.drop(columns=["saving_pct", "link_saving_pct", "slowdown_pct"])
    meta = {**META, "variants": ["eee"], "baseline": None}
    bars, curves = (f.figure for f in report.sweep_figures(frame, meta))
    assert [ax.get_ylabel() for ax in bars.axes] == ["energy (J)", "run time (s)"]
    ft_nn = frame[(frame["group"] == "fig2") & (frame[PRESET] == "ft") & (frame[JOB] == "nn")]
    assert bars.axes[0].containers[0].patches[0].get_height() == ft_nn["energy_j"].iloc[0]
    line = curves.axes[1].get_lines()[0]
    runs = frame[(frame["group"] == "fig3") & (frame[PRESET] == "ft") & (frame[JOB] == "nn")]
    np.testing.assert_array_equal(line.get_ydata(), runs.sort_values(TIMEOUT)["makespan_s"])


def test_absolute_figures_are_in_the_command_lines_units() -> None:
    """Run times of some ms and energies of some kJ are drawn in ms and kJ, as `tracewatt sweep`
    prints them (2.634 ms, not 0.002634 s)."""
    frame = sweep_frame()
    frame = frame[(frame["variant"] == "eee") & (frame["status"] == "ok")]
    frame = frame.drop(columns=["saving_pct", "link_saving_pct", "slowdown_pct"])
    frame = frame.assign(makespan_s=frame["makespan_s"] * 1e-3, energy_j=frame["energy_j"] * 1e3)
    meta = {**META, "variants": ["eee"], "baseline": None}
    bars, curves = (f.figure for f in report.sweep_figures(frame, meta))
    assert [ax.get_ylabel() for ax in bars.axes] == ["energy (kJ)", "run time (ms)"]
    assert [ax.get_ylabel() for ax in curves.axes[:2]] == ["energy (kJ)", "run time (ms)"]
    ft_nn = frame[(frame["group"] == "fig2") & (frame[PRESET] == "ft") & (frame[JOB] == "nn")]
    # The bar is the run's energy in kJ: the dataset's J over 1,000.
    height = bars.axes[0].containers[0].patches[0].get_height()
    assert height == pytest.approx(ft_nn["energy_j"].iloc[0] / 1e3)
    assert report.sweep_sections(frame, meta).count(" ms</td>") == len(frame)


def test_a_random_sweep_draws_points_per_categorical_value() -> None:
    # Two numeric axes sampled at random: a line per preset would zig-zag, so points.
    rng = np.random.default_rng(1)
    frame = pd.DataFrame(
        {
            "group": "",
            "variant": "run",
            PRESET: ["ft", "torus"] * 4,
            TIMEOUT: rng.uniform(1, 1000, 8),
            "power.links.wake_time_us": rng.uniform(1, 20, 8),
            "status": "ok",
            "energy_j": rng.uniform(50, 60, 8),
            "makespan_s": rng.uniform(1, 2, 8),
        }
    )
    meta = {"mode": "random", "axes": [TIMEOUT, PRESET, "power.links.wake_time_us"]}
    figs = report.sweep_figures(frame, meta)
    assert [f.name for f in figs] == [
        "sweep_curves_power_links_idle_timeout_us",
        "sweep_curves_power_links_wake_time_us",
    ]
    lines = figs[0].figure.axes[0].get_lines()
    assert [ln.get_label() for ln in lines] == ["ft", "torus"]
    assert all(ln.get_linestyle() == "None" for ln in lines)
    assert sorted(lines[0].get_xdata()) == sorted(frame.loc[frame[PRESET] == "ft", TIMEOUT])


def test_report_of_a_sweep_directory(run_cli: Any, sweep_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    r = run_cli("report", sweep_dir, "-o", out)
    assert r.code == 0, r.err
    text = out.read_text(encoding="utf-8")
    page = parse_html(text)
    assert page.figures == FIGURES
    assert page.images == len(FIGURES)
    assert all(ref.startswith("data:") for ref in page.refs)
    assert "<td>48 (1 failed)</td>" in text  # 2 x 3 cells x (1 + 3 timeouts) x 2 variants
    assert "ConfigError: bad value" in text
    r = run_cli("report", sweep_dir, "--figures", tmp_path / "figs")
    assert r.out.split() == [str(tmp_path / "figs" / f"{n}.png") for n in FIGURES]


def test_a_sweep_parquet_that_is_not_parquet_is_a_usage_error(
    run_cli: Any, sweep_dir: Path, tmp_path: Path
) -> None:
    (tmp_path / "sweep.json").write_bytes((sweep_dir / "sweep.json").read_bytes())
    (tmp_path / "sweep.parquet").write_text("group,variant\n", encoding="utf-8")
    r = run_cli("report", tmp_path)
    assert r.code == 2
    assert f"{tmp_path / 'sweep.parquet'}: not a Parquet table" in r.err


def test_a_broken_sweep_json_is_a_usage_error(
    run_cli: Any, sweep_dir: Path, tmp_path: Path
) -> None:
    (tmp_path / "sweep.parquet").write_bytes((sweep_dir / "sweep.parquet").read_bytes())
    (tmp_path / "sweep.json").write_text("{", encoding="utf-8")
    r = run_cli("report", tmp_path)
    assert r.code == 2
    assert f"{tmp_path / 'sweep.json'}: not JSON" in r.err


def test_a_sweep_json_without_a_sweeps_description_is_a_usage_error(
    run_cli: Any, sweep_dir: Path, tmp_path: Path
) -> None:
    (tmp_path / "sweep.parquet").write_bytes((sweep_dir / "sweep.parquet").read_bytes())
    expected = "expected a sweep's description (name, axes, variants, ...)"
    for meta, problem in [
        ({}, "`name` is missing"),
        ([META], "the file is an array, not an object"),
        ({**META, "axes": "power.links.idle_timeout_us"}, "`axes` is a string, not an array"),
        ({**META, "groups": [{"axes": []}]}, "`groups[0].name` is missing"),
        ({**META, "baseline": 1}, "`baseline` is a number, not a string or null"),
    ]:
        (tmp_path / "sweep.json").write_text(json.dumps(meta), encoding="utf-8")
        r = run_cli("report", tmp_path)
        assert (r.code, r.out) == (2, "")
        assert r.err == f"tracewatt: error: {tmp_path / 'sweep.json'}: {expected}; {problem}\n"


# ------------------------------------------------------------------ a real sweep

# Two workloads on a 4-node switch, EEE against always-on: a group over the control mode (bars)
# and one over idle_timeout (curves).
SMALL_SWEEP = """
name = "small-sweep"
description = "two workloads: bars over control, curves over idle_timeout"
baseline = "always_on"

[base]
seed = 1
machine.topology = { kind = "single_switch", nodes = 4 }
machine.links = { bandwidth_gbps = 10.0 }

[[base.jobs]]
name = "job"
ranks = 4

[axes."jobs[0]".pingpong]
name = "pingpong"
ranks = 2
workload = { kind = "pingpong", bytes = 64, iterations = 20, interval_us = 100.0 }

[axes."jobs[0]".halo]
name = "halo"
ranks = 4
workload = { kind = "near_neighbor", iterations = 5, bytes = 1024, compute_us = 100.0 }

[[groups]]
name = "control"
axes = { "power.control" = { label = "link directions", values = ["independent", "paired"] } }

[[groups]]
name = "timeout"
axes = { "power.links.idle_timeout_us" = [1.0, 20.0, 400.0] }

[[variants]]
name = "eee"

[[variants]]
name = "always_on"
set = { "power.links.policy" = "always_on" }
"""
SMALL_FIGURES = ["sweep_bars_control", "sweep_curves_timeout_power_links_idle_timeout_us"]


@pytest.fixture(scope="module")
def small_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("small-sweep")
    (d / "spec.toml").write_text(SMALL_SWEEP, encoding="utf-8")
    assert cli.main(["sweep", str(d / "spec.toml"), "-q", "-j", "2", "-o", str(d / "out")]) == 0
    return d / "out"


def _summaries(directory: Path, runs: pd.DataFrame) -> list[dict[str, Any]]:
    return [json.loads((directory / d / "summary.json").read_text()) for d in runs["dir"]]


def test_real_sweep_figures_are_its_runs(small_sweep: Path) -> None:
    frame, meta = report.load_sweep(small_sweep)
    bars, curves = report.sweep_figures(frame, meta)
    assert [bars.name, curves.name] == SMALL_FIGURES
    # Bars: the control mode (2 values, later than jobs[0] on the tie) along x, a bar per job;
    # each the saving worked out from the two runs' own summaries.
    saving_ax = bars.figure.axes[0]
    assert [t.get_text() for t in bars.figure.axes[-1].get_xticklabels()] == [
        "independent",
        "paired",
    ]
    control = frame[frame["group"] == "control"]
    for container in saving_ax.containers:
        job = container.get_label()
        for mode, bar in zip(("independent", "paired"), container.patches, strict=True):
            cell = control[(control["jobs[0]"] == job) & (control["power.control"] == mode)]
            eee, base = _summaries(small_sweep, cell.set_index("variant").loc[["eee", "always_on"]])
            want = 100 * (1 - eee["energy_j"]["total"] / base["energy_j"]["total"])
            assert bar.get_height() == pytest.approx(want)
    # Curves: a line per job over the timeouts, energy and run time as % of always-on's.
    timeout = frame[frame["group"] == "timeout"]
    for ax, key in zip(curves.figure.axes[:2], ("energy_j", "makespan_s"), strict=True):
        assert [ln.get_label() for ln in ax.get_lines()] == ["pingpong", "halo"]
        for line in ax.get_lines():
            runs = timeout[timeout["jobs[0]"] == line.get_label()]
            eee = _summaries(small_sweep, runs[runs["variant"] == "eee"])
            base = _summaries(small_sweep, runs[runs["variant"] == "always_on"])

            def value(s: dict[str, Any], key: str = key) -> float:
                return float(s[key]["total"] if key == "energy_j" else s[key])

            want = [100 * value(e) / value(b) for e, b in zip(eee, base, strict=True)]
            assert list(line.get_xdata()) == [1.0, 20.0, 400.0]
            np.testing.assert_allclose(line.get_ydata(), want)
            # A 400 us timeout never expires within the halo's 0.53 ms of 100 us compute
            # phases: no link sleeps, and EEE's run is always-on's.
            if line.get_label() == "halo":
                assert line.get_ydata()[-1] == pytest.approx(100.0, abs=1e-9)


@needs_browser
@pytest.mark.parametrize(
    ("directory", "expected"), [("sweep_dir", FIGURES), ("small_sweep", SMALL_FIGURES)]
)
def test_sweep_report_renders_in_headless_chromium(
    run_cli: Any,
    request: pytest.FixtureRequest,
    directory: str,
    expected: list[str],
    tmp_path: Path,
) -> None:
    html = tmp_path / "report.html"
    assert run_cli("report", request.getfixturevalue(directory), "-o", html, "-q").code == 0
    assert_offline_and_drawn(open_page(html), html, expected)


def test_runs_of_the_same_configuration_share_one_simulation(small_sweep: Path) -> None:
    """Always-on runs differ only in the sleep settings of links that never sleep: per job one
    always-on simulation serves both control modes and all three timeouts. 2 jobs x (2 + 3 EEE
    runs + 1 always-on) = 12 simulations for the 2 x (2 + 3) x 2 = 20 rows."""
    frame, _ = report.load_sweep(small_sweep)
    assert len(frame) == 20
    assert len(list((small_sweep / "runs").iterdir())) == 12
    on = frame[frame["variant"] == "always_on"]
    assert on.groupby("jobs[0]")["dir"].nunique().to_dict() == {"halo": 1, "pingpong": 1}
    # The shared run is what each of its cells would have run alone: the halo always on with
    # paired control and a 1 us timeout, simulated on its own.
    spec = tomllib.loads(SMALL_SWEEP)
    config = {**spec["base"], "jobs": [spec["axes"]["jobs[0]"]["halo"]]}
    config["power"] = {
        "control": "paired",
        "links": {"policy": "always_on", "idle_timeout_us": 1.0},
    }
    alone = tracewatt.simulate(config).summary
    shared = json.loads(
        (small_sweep / on[on["jobs[0]"] == "halo"]["dir"].iloc[0] / "summary.json").read_text()
    )
    assert shared["makespan_s"] == alone["makespan_s"]
    assert shared["energy_j"] == alone["energy_j"]
    # A resumed sweep finds every run done and simulates nothing.
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "tracewatt",
            "sweep",
            str(small_sweep.parent / "spec.toml"),
            "-o",
            str(small_sweep),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert "12 runs, 12 already done; nothing to run" in r.stderr


def _cli_cells(out: str) -> list[list[str]]:
    """The rows of the table `tracewatt sweep` prints, split on runs of two spaces or more."""
    lines = out.splitlines()
    return [
        re.split(r"\s{2,}", line.strip())
        for line in lines[2:]
        if line and not line.startswith("results")
    ]


@needs_browser
def test_sweep_report_reads_as_the_command_line_and_fits_the_page(
    run_cli: Any, small_sweep: Path, tmp_path: Path
) -> None:
    html = tmp_path / "report.html"
    assert run_cli("report", small_sweep, "-o", html, "-q").code == 0
    page = open_page(
        html,
        {
            "table": "const t = document.querySelector('table.runs');"
            " return [t.scrollWidth, t.clientWidth, t.parentElement.clientWidth];",
            "headers": "return [...document.querySelectorAll('table.runs th')]"
            ".map(h => h.innerText);",
            "first_row": "return [...document.querySelector('table.runs tr:nth-child(2)').cells]"
            ".map(c => c.innerText);",
        },
    )
    # Every column shows at a laptop's viewport: nothing behind a scrollbar.
    scroll_w, client_w, body_w = page.measured["table"]
    assert scroll_w <= client_w <= body_w
    # Axes under the names a reader knows (the spec's label, or the field's), metrics with units.
    assert page.measured["headers"] == [
        "group",
        "workload",
        "link directions",
        "idle timeout (us)",
        "variant",
        "run time",
        "energy",
        "saving %",
        "link saving %",
        "slowdown %",
        "link wakes",
        "LPI %",
    ]
    # The first run's time and energy as `tracewatt sweep` prints them.
    r = run_cli("sweep", small_sweep.parent / "spec.toml", "-o", small_sweep)
    cli_row = _cli_cells(r.out)[0]
    assert cli_row[:5] == ["control", "pingpong", "independent", "eee", "ok"]
    row = page.measured["first_row"]
    assert row[:3] == ["control", "pingpong", "independent"]
    assert (row[5], row[6]) == (cli_row[5], cli_row[6])
    assert re.fullmatch(r"\d+(\.\d+)? [mu]s", row[5]) and re.fullmatch(r"\d+(\.\d+)? m?J", row[6])
    # The header: the machine and scale of the base, each variant's change, each axis' values.
    for line in (
        "machine\tsingle_switch: 4 nodes, 1 switches, 4 links, 1 rank(s) per node",
        "network model\tpacket (every packet through every switch)",
        "variant eee\tthe base configuration as it is",
        "variant always_on (the baseline)\tpower.links.policy = always_on",
        "axis workload\tpingpong, halo (jobs[0])",
        "axis link directions\tindependent, paired (power.control)",
        "axis idle timeout (us)\t1, 20, 400 (power.links.idle_timeout_us)",
        "runs\t20 (0 failed); 12 simulations (runs of the same configuration share one)",
    ):
        assert line in page.text.splitlines(), line
    assert "jobs[0]\t" not in page.text and "machine.preset" not in page.text


def test_figures_name_axes_as_a_reader_does(small_sweep: Path) -> None:
    frame, meta = report.load_sweep(small_sweep)
    bars, curves = (f.figure for f in report.sweep_figures(frame, meta))
    assert bars.axes[-1].get_xlabel() == "link directions"
    assert bars.legends[0].get_title().get_text() == "workload"
    assert (
        bars.axes[0].get_title() == "control: per workload and link directions, against always_on"
    )
    assert curves.axes[0].get_xlabel() == "idle timeout (us)"
    assert curves.legends[0].get_title().get_text() == "workload"


def test_zero_bars_are_marked_and_faster_runs_explained() -> None:
    """A saving of exactly 0 gets a "0" where its bar would be; a failed run gets nothing. A
    negative slowdown is explained in the caption."""
    frame = sweep_frame()
    cell = (frame["group"] == "fig2") & (frame[PRESET] == "ft") & (frame[JOB] == "qbox")
    cell &= frame["variant"] == "eee"
    frame.loc[cell, "slowdown_pct"] = 0.0
    frame.loc[
        (frame["group"] == "fig2") & (frame[JOB] == "nn") & (frame["variant"] == "eee"),
        "slowdown_pct",
    ] = -1.5
    (bars, curves) = report.sweep_figures(frame, META)
    slowdown_ax = bars.figure.axes[2]
    marks = [(t.get_text(), t.xy) for t in slowdown_ax.texts]
    # qbox is the second job along x; ft the first of two bars (width 0.4, centred at -0.2).
    assert marks == [("0", (pytest.approx(1 - 0.2), 0.0))]
    assert "A negative slowdown" in bars.caption and "reorders" in bars.caption
    # The fig3 group's runs are all slower: no such sentence under its curves.
    assert "negative slowdown" not in curves.caption
