"""`tracewatt tune`: per-class candidates under a slowdown budget, confirmed by simulation."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

import tracewatt
from conftest import EXAMPLES, CliResult
from test_cli import LONG_RUN
from tracewatt import cli, sweep
from tracewatt.analysis.idle import screen_idle
from tracewatt.analysis.tuning import (
    TuneResult,
    apply_fragment,
    class_path,
    pick_candidates,
    sweep_spec,
)
from tracewatt.compare import compare
from tracewatt.config import parse_value


def test_link_kinds_map_to_their_power_tables() -> None:
    assert class_path("node") == "power.node"
    assert class_path("global") == "power.global"
    # tree1 is the first level of switch-to-switch links: [machine.links] tree[0].
    assert class_path("tree1") == "power.tree[0]"
    assert class_path("torus2") == "power.torus[2]"
    with pytest.raises(ValueError, match="no \\[power\\] table"):
        class_path("bus")


def test_candidates_within_the_bound_come_first_then_spread_over_the_rest() -> None:
    screened = pd.DataFrame(
        {
            "settings": [{"node": {"i": n}} for n in range(7)],
            "link_saving_pct": [40.0, 30.0, 25.0, 20.0, 10.0, 5.0, 0.0],
            "within_bound": [False, False, True, False, False, False, True],
        }
    )
    # One within the bound (25 %; the 0 % one saves nothing), then 3 of the 5 beyond it
    # spread from most to least saving: positions 0, 2, 4 -> 40, 20, 5 %.
    picked = pick_candidates(screened, 4)
    assert list(picked["link_saving_pct"]) == [25.0, 40.0, 20.0, 5.0]
    assert list(pick_candidates(screened, 1)["link_saving_pct"]) == [25.0]


def test_the_confirming_sweep_has_the_baseline_and_a_variant_per_candidate() -> None:
    cfg = tracewatt.Config.load(EXAMPLES / "miwa-npb-ft.toml")
    cand = [{"node": {"idle_timeout_us": 50.0, "wake_time_us": 17.0, "control": "paired"}}, {}]
    spec = sweep_spec(cfg, ["node", "tree1"], cand)
    assert spec["baseline"] == "always_on"
    assert spec["base"]["power"]["tree"] == [{}] and spec["base"]["power"]["node"] == {}
    v = {x["name"]: x["set"] for x in spec["variants"]}
    assert v["always_on"] == {
        "power.links.policy": "always_on",
        "power.node.policy": "always_on",
        "power.tree[0].policy": "always_on",
    }
    assert v["c1"] == {
        "power.node.policy": "timeout",
        "power.node.idle_timeout_us": 50.0,
        "power.node.wake_time_us": 17.0,
        "power.node.control": "paired",
        "power.tree[0].policy": "always_on",
    }
    assert v["c2"]["power.node.policy"] == "always_on"


def test_the_fragment_loads_with_the_configuration(tmp_path: Path) -> None:
    settings = {
        "node": {"idle_timeout_us": 50.0, "wake_time_us": 17.0, "control": None},
        "tree1": {"idle_timeout_us": 10.0, "wake_time_us": 5.0, "control": "independent"},
    }
    result = TuneResult(pd.DataFrame({"settings": [settings]}), 0, 1.0)
    path = tmp_path / "tuned.toml"
    path.write_text(result.fragment())
    cfg = apply_fragment(tracewatt.Config.load(EXAMPLES / "miwa-npb-ft.toml"), path)
    power = cfg.resolved()["power"]
    assert power["node"]["idle_timeout_us"] == 50.0 and power["node"]["policy"] == "timeout"
    assert power["tree"][0]["wake_time_us"] == 5.0
    assert power["tree"][0]["control"] == "independent"
    # The header's --set lines give the same configuration.
    sets = [x[len("#   ") :] for x in result.fragment().splitlines() if x.startswith("#   ")]
    overrides = {k: parse_value(v) for k, _, v in (x.partition("=") for x in sets)}
    base = tracewatt.Config.load(EXAMPLES / "miwa-npb-ft.toml")
    assert base.with_overrides(overrides).resolved()["power"] == power
    # A screened kind the chosen setting leaves out is always-on in the confirming sweep, so the
    # fragment says so (before, it fell back to the configuration's own [power.links]).
    only_tree = TuneResult(
        pd.DataFrame({"settings": [{"tree1": settings["tree1"]}]}), 0, 1.0, ("node", "tree1")
    )
    path.write_text(only_tree.fragment())
    power = apply_fragment(base, path).resolved()["power"]
    assert base.resolved()["power"]["links"]["policy"] == "timeout"
    assert power["node"]["policy"] == "always_on"
    assert power["tree"][0]["idle_timeout_us"] == 10.0 and power["tree"][0]["policy"] == "timeout"


def test_tune_on_npb_ft_picks_a_setting_within_the_budget(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("tracewatt.sweep")
    out = tmp_path / "tuned.toml"
    code = cli.main(
        [
            "tune",
            str(EXAMPLES / "miwa-npb-ft.toml"),
            "--slowdown",
            "1%",
            "-o",
            str(out),
            "--runs",
            str(tmp_path / "runs"),
            "-j",
            "1",
        ]
    )
    assert code == 0
    text = capsys.readouterr().out
    assert "chosen" in text and "confirmed slowdown" in text
    # Checked independently of the sweep: the written setting, simulated against always-on.
    cfg = apply_fragment(tracewatt.Config.load(EXAMPLES / "miwa-npb-ft.toml"), out)
    c = compare(cfg)
    assert c.slowdown_pct <= 1.0
    assert c.saving_pct > 0


def test_tune_refuses_a_bad_budget(capsys: pytest.CaptureFixture[str]) -> None:
    cfg = str(EXAMPLES / "miwa-npb-ft.toml")
    assert cli.main(["tune", cfg, "--slowdown", "one"]) == 2
    assert "--slowdown 'one': expected a percentage" in capsys.readouterr().err
    assert cli.main(["tune", cfg, "--slowdown", "1", "--control", "sometimes"]) == 2


def test_tune_checks_its_outputs_before_simulating(
    tmp_path: Path, run_cli: Callable[..., CliResult], pingpong_toml: Path
) -> None:
    """Refused at once, before the screening run (of about a minute here), with exit 2: a file,
    a run's results or another sweep given as --runs, and an -o that cannot be written."""
    cfg = tmp_path / "long.toml"
    cfg.write_text(LONG_RUN)
    (tmp_path / "file").write_text("")
    results = tmp_path / "results"
    assert run_cli("run", pingpong_toml, "-o", results, "-q").code == 0
    other = tmp_path / "other"
    spec = {"name": "other", "base": {"seed": 1}}
    sweep.run(sweep.SweepSpec.from_dict(spec, "other.toml"), other, workers=1)
    listing = sorted(p.name for p in results.iterdir())
    cases = [
        (
            ["--runs", tmp_path / "file"],
            f"{tmp_path / 'file'}: exists and is not a directory; give a directory for --runs",
        ),
        (
            ["--runs", results],
            f"{results}: not empty and not a sweep's directory (no sweep.json); give a new or "
            "empty directory for --runs, or a sweep's to resume it",
        ),
        (
            ["--runs", other],
            f"{other}: holds another sweep (`other`), not the confirming sweep of a tune of "
            f"{cfg}; give a new or empty directory for --runs",
        ),
        (["-o", tmp_path], f"{tmp_path}: is a directory; give a file for -o"),
        (
            ["-o", tmp_path / "missing" / "t.toml"],
            f"{tmp_path / 'missing' / 't.toml'}: cannot write it: {tmp_path / 'missing'} is not "
            "a directory",
        ),
    ]
    for options, message in cases:
        t0 = time.monotonic()
        r = run_cli("tune", cfg, "--slowdown", "1", *options)
        assert (r.code, r.err) == (2, f"tracewatt: error: {message}\n")
        assert time.monotonic() - t0 < 5
    assert sorted(p.name for p in results.iterdir()) == listing
    assert not (tmp_path / "missing").exists()


def test_wake_time_and_control_are_tuned_when_asked() -> None:
    """Screened over two wake times and both controls: every candidate uses one of them, both
    controls appear, and a paired node link (one wake for both directions, counted from the
    link's own idle intervals) never wakes more than its directions alone."""
    from tracewatt.analysis.tuning import _screening_config, screen_candidates

    cfg = tracewatt.Config.load(EXAMPLES / "miwa-npb-ft.toml")
    run = tracewatt.simulate(_screening_config(cfg, [10.0, 600.0]))
    df = screen_candidates(run, 100.0, [10.0, 600.0], [5.0, 17.0], ["paired", "independent"])
    settings = [s for c in df["settings"] for s in c.values()]
    assert {s["wake_time_us"] for s in settings} <= {5.0, 17.0}
    assert {s["control"] for s in settings} == {"paired", "independent"}
    paired = screen_idle(run, [600.0], [17.0], links=["node"], control="paired").iloc[0]
    alone = screen_idle(run, [600.0], [17.0], links=["node"], control="independent").iloc[0]
    assert bool(paired["pairs_exact"]) and paired["paired"] == 32 and alone["paired"] == 0
    assert paired["wakes"] <= alone["wakes"]
