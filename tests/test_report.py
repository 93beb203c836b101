"""Reports: figures drawn from a run's results, the self-contained HTML report, and that report
opened in a real headless browser."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import EXAMPLES, PINGPONG, CliResult
from report_page import assert_offline_and_drawn, needs_browser, open_page, parse_html
from test_study import SMALL_STUDY
from tracewatt import cli, report
from tracewatt.report import figures, load
from tracewatt.report.sweep_plots import SWEEP_SAVING_METRICS
from tracewatt.results import Results

# The small study with EEE (waking right after each packet) against always-on: savings and
# slowdowns that are not zero.
STUDY = (
    'baseline = "always_on"\n'
    + SMALL_STUDY
    + """
[[variants]]
name = "eee"
set = { "power.links.idle_timeout_us" = 1.0 }

[[variants]]
name = "always_on"
set = { "power.links.policy" = "always_on" }
"""
)
FIGURES = ("energy_breakdown", "power_timeline", "idle_cdf", "lpi_heatmap")
NODE_BASE_W = 90.0  # docs/config.md, power.nodes.base_w default
INTERVAL_US = 100.0  # the ping-pong's send interval (conftest.PINGPONG)


def _eee_pingpong() -> dict[str, Any]:
    """The ping-pong with an idle timeout shorter than its send interval: links sleep between
    messages."""
    cfg = copy.deepcopy(PINGPONG)
    cfg["power"] = {"links": {"idle_timeout_us": 20.0}}
    return cfg


@pytest.fixture(scope="module")
def compare_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cmp")
    assert cli.main(["compare", "-q", "-o", str(out), _config_file(out.parent)]) == 0
    return out


def _config_file(directory: Path) -> str:
    path = directory / "eee-pingpong.json"
    path.write_text(json.dumps(_eee_pingpong()), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def compared(compare_dir: Path) -> tuple[Results, Results]:
    results, baseline = load(compare_dir)
    assert baseline is not None
    return results, baseline


@pytest.fixture(scope="module")
def study_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("study")
    (d / "small.toml").write_text(STUDY, encoding="utf-8")
    assert cli.main(["sweep", str(d / "small.toml"), "-q", "-o", str(d / "out")]) == 0
    return d / "out"


@pytest.fixture(scope="module")
def unnamed_compare_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A compare of the ping-pong whose job has no `name` (the summary calls it `job0`)."""
    out = tmp_path_factory.mktemp("unnamed")
    cfg = _eee_pingpong()
    del cfg["jobs"][0]["name"]
    (out / "unnamed.json").write_text(json.dumps(cfg), encoding="utf-8")
    assert cli.main(["compare", "-q", "-o", str(out / "res"), str(out / "unnamed.json")]) == 0
    return out / "res"


@pytest.fixture(scope="module")
def trace_run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped trace example's results: a job with `[jobs.trace]` and no workload."""
    out = tmp_path_factory.mktemp("trace") / "res"
    assert cli.main(["run", "-q", "-o", str(out), str(EXAMPLES / "trace-npb-cg.toml")]) == 0
    return out


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("run")
    assert cli.main(["run", "-q", "-o", str(out / "res"), _config_file(out)]) == 0
    return out / "res"


def test_breakdown_bars_are_the_energy_of_each_component(compared: tuple[Results, Results]) -> None:
    results, baseline = compared
    fig = results.plot.energy_breakdown()
    ax, saving_ax = fig.axes
    kinds = [t.get_text() for t in saving_ax.get_xticklabels()]
    # The axis is in the unit the command line would print its largest bar in.
    scale = _UNIT_SCALE[ax.get_ylabel()]
    base_bars, policy_bars = (
        dict(zip(kinds, (b.get_height() * scale for b in c.patches), strict=True))
        for c in ax.containers
    )
    # Node base power is constant: 2 nodes x 90 W over the run, worked out by hand.
    assert policy_bars["node_base"] == pytest.approx(2 * NODE_BASE_W * results.makespan_s)
    assert base_bars["node_base"] == pytest.approx(2 * NODE_BASE_W * baseline.makespan_s)
    # Link ports: the per-link table's energies, summed by the side that owns the port.
    for res, bars in ((results, policy_bars), (baseline, base_bars)):
        by_port = res.links.groupby("port")["energy_j"].sum()
        assert bars["switch_ports"] == pytest.approx(by_port["switch"])
        assert bars["nic_ports"] == pytest.approx(by_port["nic"])
        assert sum(bars.values()) == pytest.approx(res.summary["energy_j"]["total"])
    # EEE saves link energy: the policy's port bars are below the baseline's.
    assert policy_bars["switch_ports"] < base_bars["switch_ports"]
    # Below: each component's saving on its own scale, the node base's tall bars left out.
    saving_scale = _UNIT_SCALE[saving_ax.get_ylabel().replace("saved", "energy")]
    (savings,) = saving_ax.containers
    for kind, bar in zip(kinds, savings.patches, strict=True):
        want = baseline.summary["energy_j"][kind] - results.summary["energy_j"][kind]
        assert bar.get_height() * saving_scale == pytest.approx(want)
    by_port = {
        r: res.links.groupby("port")["energy_j"].sum()
        for r, res in (("p", results), ("b", baseline))
    }
    want_ports = by_port["b"]["switch"] - by_port["p"]["switch"]
    assert savings.patches[
        kinds.index("switch_ports")
    ].get_height() * saving_scale == pytest.approx(want_ports)
    # Each saving bar says its value, as the command line would print it.
    texts = [t.get_text() for t in saving_ax.texts]
    assert texts[kinds.index("switch_ports")].endswith("J")


_UNIT_SCALE = {"energy (J)": 1.0, "energy (mJ)": 1e-3, "energy (uJ)": 1e-6, "energy (kJ)": 1e3}


def test_timeline_legend_is_below_the_lines(compared: tuple[Results, Results]) -> None:
    """The legend sits under the axes, where it covers no line."""
    results, baseline = compared
    fig = results.plot.power_timeline(baseline)
    (ax,) = fig.axes
    assert ax.get_legend() is None
    (legend,) = fig.legends
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    box, axes_box = legend.get_window_extent(renderer), ax.get_window_extent(renderer)
    assert box.y1 <= axes_box.y0
    assert "baseline total" in [t.get_text() for t in legend.get_texts()]


def test_timeline_lines_are_the_timeline_columns(compared: tuple[Results, Results]) -> None:
    results, baseline = compared
    ax = results.plot.power_timeline(baseline).axes[0]
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    timeline = results.timeline
    for column in (c for c in timeline.columns if c.endswith("_w")):
        y = np.asarray(lines[column.removesuffix("_w")].get_ydata())
        np.testing.assert_array_equal(y[:-1], timeline[column].to_numpy())
    x_ms = np.asarray(lines["baseline total"].get_xdata())
    assert x_ms[-1] == pytest.approx(baseline.timeline["t_end_s"].iloc[-1] * 1e3)


def test_idle_cdf_steps_at_the_send_interval(compared: tuple[Results, Results]) -> None:
    results, _ = compared
    ax = results.plot.idle_cdf().axes[0]
    curves = [ln for ln in ax.get_lines() if not ln.get_label().endswith(("idle_timeout", "above"))]
    assert [ln.get_label() for ln in curves] == sorted(set(results.links["kind"]))
    for ln in curves:
        x_us, cdf = np.asarray(ln.get_xdata()), np.asarray(ln.get_ydata())
        assert cdf[-1] == pytest.approx(1.0)
        # A packet every 100 us each way: most idle intervals are a little under 100 us.
        median_us = x_us[np.searchsorted(cdf, 0.5)]
        assert 0.5 * INTERVAL_US < median_us <= 1.3 * INTERVAL_US
    timeouts = [ln for ln in ax.get_lines() if "idle_timeout" in str(ln.get_label())]
    assert timeouts and all(ln.get_xdata()[0] == pytest.approx(20.0) for ln in timeouts)


def test_heatmap_cells_are_each_links_lpi_share(compared: tuple[Results, Results]) -> None:
    results, _ = compared
    image = results.plot.lpi_heatmap().axes[0].images[0]
    grid = np.asarray(image.get_array())
    links = results.links.sort_values("link_id")
    for row, (_, rows) in enumerate(links.groupby("kind", sort=True)):
        expected = 100.0 * rows["lpi_s"].to_numpy() / results.makespan_s
        np.testing.assert_allclose(grid[row, : len(rows)], expected)
    # Links sleep through most of each 100 us gap after a 20 us timeout.
    assert np.nanmean(grid) > 30.0


def _report(run_cli: Any, args: list[str | Path]) -> CliResult:
    r: CliResult = run_cli("report", *args)
    assert r.code == 0, r.err
    return r


def test_html_is_self_contained_and_holds_every_figure(
    run_cli: Any, compare_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "r.html"
    r = _report(run_cli, [compare_dir, "-o", out])
    assert r.out == f"report written to {out}\n"
    text = out.read_text(encoding="utf-8")
    page = parse_html(text)
    assert page.figures == list(FIGURES)
    assert page.images == len(FIGURES)
    assert all(ref.startswith("data:") for ref in page.refs), page.refs
    assert "http://" not in text and "https://" not in text
    # The header names the machine, the workload and the policy; the summary the saving.
    assert "single_switch: 2 nodes" in text
    assert "pingpong, 2 ranks" in text
    assert "EEE: idle timeout 20 us" in text
    assert "energy saved" in text


def test_report_of_a_run_draws_no_baseline(run_cli: Any, run_dir: Path) -> None:
    _report(run_cli, [run_dir, "-q"])
    page = parse_html((run_dir / "report.html").read_text(encoding="utf-8"))
    assert page.figures == list(FIGURES)
    results, baseline = load(run_dir)
    assert baseline is None
    assert len(results.plot.energy_breakdown().axes[0].containers) == 1


def test_header_names_unnamed_jobs_and_trace_jobs(
    run_cli: Any, unnamed_compare_dir: Path, trace_run_dir: Path
) -> None:
    _report(run_cli, [unnamed_compare_dir, "-q"])
    text = (unnamed_compare_dir / "report.html").read_text(encoding="utf-8")
    assert "<tr><td>job job0</td><td>pingpong, 2 ranks</td></tr>" in text
    _report(run_cli, [trace_run_dir, "-q"])
    text = (trace_run_dir / "report.html").read_text(encoding="utf-8")
    # The trace's path as the configuration gives it (relative to the configuration).
    row = "<tr><td>job npb-cg</td><td>trace ../tests/data/dumpi/npb-cg.S-4ranks/, 4 ranks</td></tr>"
    assert row in text


def _summary(directory: Path, run: dict[str, Any]) -> dict[str, Any]:
    summary: dict[str, Any] = json.loads((directory / run["dir"] / "summary.json").read_text())
    return summary


def test_study_bars_are_each_runs_saving(run_cli: Any, study_dir: Path) -> None:
    r = _report(run_cli, [study_dir, "--figures", study_dir / "figs"])
    assert r.out == f"{study_dir / 'figs' / 'sweep_bars.png'}\n"
    frame, meta = report.load_sweep(study_dir)
    (bars,) = report.sweep_figures(frame, meta)
    axes = bars.figure.axes
    # Two topologies, two workloads: on a tie the later axis (the workload) goes along x.
    workloads = [t.get_text() for t in axes[-1].get_xticklabels()]
    assert workloads == ["perm", "halo"]
    runs = frame.set_index(["machine.preset", "jobs[0]", "variant"])
    for ax, (column, _) in zip(axes, SWEEP_SAVING_METRICS, strict=True):
        topologies = [str(c.get_label()) for c in ax.containers]
        assert topologies == ["ft", "torus"]
        for topology, container in zip(topologies, ax.containers, strict=True):
            for workload, bar in zip(workloads, container.patches, strict=True):
                # Worked out from the two runs' own summaries, not the dataset's columns.
                eee, base = (
                    _summary(study_dir, runs.loc[(topology, workload, v)])
                    for v in ("eee", "always_on")
                )
                e, b = eee["energy_j"], base["energy_j"]
                want = {
                    "saving_pct": 100 * (1 - e["total"] / b["total"]),
                    "link_saving_pct": 100
                    * (
                        1
                        - (e["switch_ports"] + e["nic_ports"])
                        / (b["switch_ports"] + b["nic_ports"])
                    ),
                    "slowdown_pct": 100 * (eee["makespan_s"] / base["makespan_s"] - 1),
                }[column]
                assert bar.get_height() == pytest.approx(want)
    _report(run_cli, [study_dir, "-q"])
    text = (study_dir / "report.html").read_text(encoding="utf-8")
    page = parse_html(text)
    assert page.figures == ["sweep_bars"]
    assert all(ref.startswith("data:") for ref in page.refs)
    assert '<td class="key">halo</td>' in text


def test_figures_are_written_as_files(run_cli: Any, compare_dir: Path, tmp_path: Path) -> None:
    r = _report(run_cli, [compare_dir, "--figures", tmp_path / "f", "--format", "svg"])
    assert r.out.split() == [str(tmp_path / "f" / f"{n}.svg") for n in FIGURES]
    assert (tmp_path / "f" / "idle_cdf.svg").read_text().lstrip().startswith("<?xml")
    assert not (compare_dir / "report.html").exists()  # only the figures were asked for
    # Same results, same bytes (no dates, no random SVG ids).
    _report(run_cli, [compare_dir, "--figures", tmp_path / "g", "--format", "svg"])
    for n in FIGURES:
        assert (tmp_path / "f" / f"{n}.svg").read_bytes() == (
            tmp_path / "g" / f"{n}.svg"
        ).read_bytes()


def test_report_of_a_folder_without_results_is_a_usage_error(run_cli: Any, tmp_path: Path) -> None:
    r = run_cli("report", tmp_path)
    assert r.code == 2
    assert f"{tmp_path}: not a results folder (no summary.json, sweep.json with" in r.err


def test_figures_only_where_there_is_data(compared: tuple[Results, Results]) -> None:
    results, baseline = compared
    bare = Results(results.summary, {"links": results.links})
    assert [f.name for f in figures(bare)] == ["energy_breakdown", "lpi_heatmap"]
    assert [f.name for f in figures(results, baseline)] == list(FIGURES)


# ------------------------------------------------------------------ headless browser


@needs_browser
@pytest.mark.parametrize(
    ("results", "expected"),
    [
        ("run_dir", FIGURES),
        ("compare_dir", FIGURES),
        ("unnamed_compare_dir", FIGURES),
        ("trace_run_dir", FIGURES),
        ("study_dir", ("sweep_bars",)),
    ],
)
def test_report_renders_in_headless_chromium(
    run_cli: Any,
    request: pytest.FixtureRequest,
    results: str,
    expected: tuple[str, ...],
    tmp_path: Path,
) -> None:
    html = tmp_path / "report.html"
    _report(run_cli, [request.getfixturevalue(results), "-o", html, "-q"])
    assert_offline_and_drawn(open_page(html), html, list(expected))


@needs_browser
def test_the_browser_check_sees_requests_and_console_messages(tmp_path: Path) -> None:
    # The same check on a page that breaks each rule: it must see every breach.
    bad = tmp_path / "bad.html"
    bad.write_text(
        '<!DOCTYPE html><html><body><figure id="f"><img alt="f" src="http://192.0.2.1/f.png">'
        '</figure><script>console.log("drawn")</script></body></html>',
        encoding="utf-8",
    )
    page = open_page(bad)
    assert page.requests == [bad.as_uri(), "http://192.0.2.1/f.png"]
    assert sorted(m["level"] for m in page.console) == ["INFO", "SEVERE"]
    with pytest.raises(AssertionError, match="requested"):
        assert_offline_and_drawn(page, bad, ["f"])
