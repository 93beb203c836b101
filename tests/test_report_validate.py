"""`tracewatt validate -o DIR` hands each check's data to the report (``validate.json``), and the
report draws each check beside its target."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from report_page import assert_offline_and_drawn, needs_browser, open_page, parse_html
from tracewatt.report import check_plots
from tracewatt.validation import mpi_wait

INTERVALS_US = [100.0, 300.0, 500.0, 700.0, 1000.0, 1500.0, 2000.0]
WAKE_US = 17.0
SHARE = 39 / 40  # the check's first round finds the links fresh
# Miwa et al. Fig. 4-5 (docs/references.md section 1): backplane, port active and port LPI power, W.
SWITCHES_W = {"powerconnect-8132": (96.0, 3.44, 2.08), "m7100": (83.0, 3.59, 2.22)}


@pytest.fixture(scope="module")
def validation_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tracewatt import cli

    d = tmp_path_factory.mktemp("validate")
    assert cli.main(["validate", "--check", "1", "--check", "3", "-q", "-o", str(d)]) == 0
    return d


@pytest.fixture(scope="module")
def checks(validation_dir: Path) -> dict[str, dict[str, Any]]:
    data = json.loads((validation_dir / "validate.json").read_text(encoding="utf-8"))
    return {c["id"]: c for c in data["checks"]}


def _series(panel: dict[str, Any]) -> dict[str, list[float | None]]:
    return {s["label"]: s["y"] for s in panel["series"]}


def test_pingpong_data_is_the_step_of_one_wake_per_link(checks: dict[str, Any]) -> None:
    paired, independent = checks["1"]["panels"]
    for panel, wakes_per_link in ((paired, 1), (independent, 2)):
        assert panel["x"] == INTERVALS_US
        y = {k: np.asarray(v, dtype=float) for k, v in _series(panel).items()}
        off = y["EEE on 0 link(s)"]
        for links in (1, 2):
            added = y[f"EEE on {links} link(s)"] - off
            # Flat below the 600 us timeout; one 17 us wake per EEE link (direction) above it.
            want = [
                wakes_per_link * links * WAKE_US * SHARE if i > 600 else 0 for i in INTERVALS_US
            ]
            np.testing.assert_allclose(added, want, atol=1e-3)
            np.testing.assert_allclose(y[f"target, {links} link(s)"] - off, want, atol=1e-9)
    # The paper's points (paired links, 10GBASE-T): +24 and +42 us at 2 ms only.
    points = _series(paired)
    off_2ms = points["EEE on 0 link(s)"][-1]
    assert off_2ms is not None
    assert points["paper Fig. 7, 1 link(s): EEE off +24 us"] == [None] * 6 + [off_2ms + 24.0]
    assert points["paper Fig. 7, 2 link(s): EEE off +42 us"] == [None] * 6 + [off_2ms + 42.0]
    assert not any(s["label"].startswith("paper") for s in independent["series"])


def test_idle_switch_targets_are_the_papers_figures(checks: dict[str, Any]) -> None:
    for panel, (model, (backplane, active, lpi)) in zip(
        checks["3"]["panels"], SWITCHES_W.items(), strict=True
    ):
        assert panel["title"] == model
        ports = np.arange(1, 9)
        assert panel["x"] == list(map(float, ports))
        y = {k: np.asarray(v, dtype=float) for k, v in _series(panel).items()}
        np.testing.assert_allclose(y["target, always_on"], backplane + ports * active)
        # With EEE: LPI power, plus each port at full power for its first 602.88 us of 1 s.
        eee = backplane + ports * lpi + ports * (active - lpi) * 602.88e-6
        np.testing.assert_allclose(y["target, timeout"], eee)
        np.testing.assert_allclose(y["always_on"], y["target, always_on"], rtol=1e-9)
        np.testing.assert_allclose(y["timeout"], y["target, timeout"], rtol=1e-9)


def test_figures_draw_the_records_data(checks: dict[str, Any]) -> None:
    for check in checks.values():
        fig = check_plots.check_figure(check)
        for ax, panel in zip(fig.axes, check["panels"], strict=True):
            lines = ax.get_lines()
            assert [ln.get_label() for ln in lines] == [s["label"] for s in panel["series"]]
            for line, s in zip(lines, panel["series"], strict=True):
                np.testing.assert_array_equal(line.get_xdata(), panel["x"])
                want = [np.nan if v is None else v for v in s["y"]]
                np.testing.assert_array_equal(line.get_ydata(), want)
                assert (line.get_linestyle() == "--") == s["target"]


def test_labelled_panels_are_bars() -> None:
    check = {
        "id": "x",
        "passed": False,
        "panels": [
            {
                "title": "t",
                "x_label": "",
                "y_label": "power saved (W)",
                "x": ["whole system", "switch ports"],
                "x_log": False,
                "series": [
                    {"label": "simulated", "y": [83.5, 62.8], "target": False},
                    {"label": "paper", "y": [93.7, None], "target": True},
                ],
            }
        ],
    }
    ax = check_plots.check_figure(check).axes[0]
    simulated, paper = ax.containers
    assert [b.get_height() for b in simulated.patches] == [83.5, 62.8]
    assert paper.patches[0].get_height() == 93.7 and np.isnan(paper.patches[1].get_height())
    assert paper.patches[0].get_hatch() == "//" and simulated.patches[0].get_hatch() is None


def test_printed_output_is_unchanged_by_o(run_cli: Any, tmp_path: Path) -> None:
    plain = run_cli("validate", "--check", "3", "--json")
    written = run_cli("validate", "--check", "3", "--json", "-o", tmp_path / "v")
    assert plain.code == written.code == 0
    assert plain.out == written.out
    (printed,) = json.loads(plain.out)
    assert set(printed) == {"id", "name", "target", "simulated", "passed", "details"}
    (saved,) = json.loads((tmp_path / "v" / "validate.json").read_text())["checks"]
    assert {k: v for k, v in saved.items() if k != "panels"} == printed


def test_report_of_a_validation(run_cli: Any, validation_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    r = run_cli("report", validation_dir, "-o", out)
    assert r.code == 0, r.err
    text = out.read_text(encoding="utf-8")
    page = parse_html(text)
    assert page.figures == ["check_1", "check_3"]
    assert all(ref.startswith("data:") for ref in page.refs)
    assert "<td>1</td><td>PASS</td>" in text and "<td>3</td><td>PASS</td>" in text
    # Each figure beside its target: the caption carries it.
    assert "Target: flat below 600 us; above it +17 us per EEE link (paired)" in text


def test_a_validate_json_without_checks_is_a_usage_error(run_cli: Any, tmp_path: Path) -> None:
    (tmp_path / "validate.json").write_text('{"checks": 3}', encoding="utf-8")
    r = run_cli("report", tmp_path)
    assert r.code == 2
    assert f"{tmp_path / 'validate.json'}: expected an object with a list `checks`" in r.err


def test_a_check_without_its_fields_is_a_usage_error(
    run_cli: Any, checks: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    path = tmp_path / "validate.json"
    panel = checks["1"]["panels"][0]
    for data, problem in [
        ({"checks": [{"id": "x"}]}, "`checks[0].name` is missing"),
        (
            {"checks": [{**checks["3"], "passed": "yes"}]},
            "`checks[0].passed` is a string, not true or false or null",
        ),
        (
            {"checks": [{**checks["1"], "panels": [{**panel, "series": [{"label": "a"}]}]}]},
            "`checks[0].panels[0].series[0].y` is missing",
        ),
    ]:
        path.write_text(json.dumps(data), encoding="utf-8")
        r = run_cli("report", tmp_path)
        assert (r.code, r.out) == (2, "")
        assert r.err == (
            f"tracewatt: error: {path}: expected an object with a list `checks`; {problem}\n"
        )
        assert not (tmp_path / "report.html").exists()


def test_validate_o_refuses_a_non_empty_directory(run_cli: Any, tmp_path: Path) -> None:
    (tmp_path / "old.txt").write_text("x", encoding="utf-8")
    r = run_cli("validate", "--check", "3", "-o", tmp_path)
    assert r.code == 2
    assert "the output directory is not empty; use --force" in r.err


@needs_browser
def test_validation_report_renders_in_headless_chromium(
    run_cli: Any, validation_dir: Path, tmp_path: Path
) -> None:
    html = tmp_path / "report.html"
    assert run_cli("report", validation_dir, "-o", html, "-q").code == 0
    assert_offline_and_drawn(open_page(html), html, ["check_1", "check_3"])


def test_mpi_wait_figure_is_each_jobs_runs_against_spin() -> None:
    # Made-up runs of one job: the figure draws each policy's slowdown and saving per threshold.
    runs = {
        (p, t): mpi_wait.WaitRun(
            slowdown_pct=i + 0.5 * j,
            saved_pct=-i,
            low_power_waits=1,
            low_power_s=0,
            by_state=(1, 0, 0, 0),
        )
        for i, p in enumerate(mpi_wait.WAIT_POLICIES)
        for j, t in enumerate(mpi_wait.WAIT_THRESHOLDS)
    }
    fixed = runs[("block", mpi_wait.WAIT_THRESHOLDS[0])]
    sweep = mpi_wait.WaitSweep("CG skeleton", spin=None, runs=runs, block_fixed=fixed)  # type: ignore[arg-type]
    time_panel, energy_panel = mpi_wait._mpi_wait_panels([sweep])
    n = len(mpi_wait.WAIT_THRESHOLDS)
    assert time_panel.x == energy_panel.x == mpi_wait.WAIT_THRESHOLDS
    block, mwait, target = time_panel.series
    assert (block.label, block.y) == ("CG skeleton block", [0.5 * j for j in range(n)])
    assert (mwait.label, mwait.y) == ("CG skeleton mwait", [1 + 0.5 * j for j in range(n)])
    assert target.target and target.y == [1.0] * n
    assert [s.y for s in energy_panel.series] == [[0] * n, [-1] * n]
