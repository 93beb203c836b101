"""Link policies side by side (``tracewatt compare --policies``), their screening
(``analyze idle --policy``), and the oracle as the bound."""

from __future__ import annotations

import io
import math
import tomllib
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from conftest import EXAMPLES, CliResult, write_toml
from tracewatt import Config, Results, report, sweep
from tracewatt.analysis.tuning import tune
from tracewatt.compare import POLICY_COLUMNS, compare, compare_policies, link_policy_config
from tracewatt.errors import ResultsError

Run = Callable[..., CliResult]

# The paper's measured switch: 3.44 W a port active (docs/config.md, [power.switch]); the NIC
# ports take the switch port's figures.
PORT_ACTIVE_W = 3.44
WAKE_S = 17e-6

# examples/pingpong.toml's schedule: 20 rounds 1,000 us apart, above the 600 us timeout.
PINGPONG_1MS = """\
seed = 1
[machine]
ranks_per_node = 1
[machine.topology]
kind = "single_switch"
nodes = 2
[machine.links]
bandwidth_gbps = 10.0
[[jobs]]
name = "pp"
ranks = 2
[jobs.workload]
kind = "pingpong"
bytes = 64
iterations = 20
interval_us = 1000.0
"""


@pytest.fixture
def pingpong_1ms(tmp_path: Path) -> Path:
    return write_toml(tmp_path / "pp.toml", PINGPONG_1MS)


def test_the_policies_table_prices_each_policy_against_always_on(
    run_cli: Run, pingpong_1ms: Path, tmp_path: Path
) -> None:
    r = run_cli("compare", pingpong_1ms, "--policies", "timeout", "-o", tmp_path / "out")
    assert r.code == 0, r.err
    df = pd.read_parquet(tmp_path / "out" / "policies.parquet")
    assert list(df.columns) == list(POLICY_COLUMNS)
    assert list(df["policy"]) == ["always_on", "timeout"]
    base, timeout = df.iloc[0], df.iloc[1]
    # Two links, four ports (a switch and a NIC port each), always active.
    assert base["link_energy_j"] == pytest.approx(4 * PORT_ACTIVE_W * base["makespan_s"])
    assert (base["link_saving_j"], base["saving_pct"], base["wakes"]) == (0.0, 0.0, 0)
    # Rounds 2 to 20 find both (paired) links asleep: each wakes once a round, and the ping
    # waits 17 us for each wake.
    assert timeout["wakes"] == 19 * 2
    assert timeout["wake_delay_s"] == pytest.approx(38 * WAKE_S)
    assert timeout["link_saving_j"] == pytest.approx(
        base["link_energy_j"] - timeout["link_energy_j"]
    )
    assert timeout["link_saving_pct"] == pytest.approx(
        100 * timeout["link_saving_j"] / base["link_energy_j"]
    )
    assert timeout["saving_j"] == pytest.approx(base["energy_j"] - timeout["energy_j"])
    assert timeout["slowdown_pct"] == pytest.approx(
        100 * (timeout["makespan_s"] / base["makespan_s"] - 1)
    )
    # No oracle ran: no share, and the table says how to get one.
    assert df["oracle_share_pct"].isna().all()
    assert "add oracle to --policies" in r.out
    lines = r.out.splitlines()
    assert lines[0].split() == [
        "policy",
        "link",
        "energy",
        "link",
        "saved",
        "of",
        "links",
        "energy",
        "saved",
        "of",
        "total",
        "slowdown",
        "wakes",
        "of",
        "oracle",
    ]
    row = lines[3].split()
    assert row[0] == "timeout" and row[-2] == "38" and row[-1] == "-"


def test_each_distinct_configuration_runs_once(pingpong_1ms: Path) -> None:
    # always_on is the baseline itself, and a name given twice is one policy.
    c = compare_policies(Config.load(pingpong_1ms), ["always_on", "timeout", "timeout"])
    assert list(c.runs) == ["always_on", "timeout"]
    assert list(c.table["policy"]) == ["always_on", "timeout"]


def test_a_policy_applies_to_every_link_class_and_nothing_else(tmp_path: Path) -> None:
    # A fat-tree with an always-on override per level and MPI waits in mwait: the variant
    # puts every link table under the policy and keeps the baseline's waits (spin).
    cfg = Config.from_toml(
        """
[machine.topology]
kind = "fat_tree"
levels = 2
radix = 4
[machine.links]
bandwidth_gbps = 10.0
[power.node]
policy = "always_on"
[[power.tree]]
policy = "always_on"
idle_timeout_us = 50.0
[mpi.wait]
policy = "mwait"
[[jobs]]
name = "a"
ranks = 4
[jobs.workload]
kind = "pingpong"
iterations = 2
""",
        "ft.toml",
    )
    power = link_policy_config(cfg, "timeout").resolved()["power"]
    assert power["links"]["policy"] == "timeout"
    assert power["node"]["policy"] == "timeout"
    assert power["tree"][0] == {**power["tree"][0], "policy": "timeout", "idle_timeout_us": 50.0}
    assert link_policy_config(cfg, "timeout").resolved()["mpi"]["wait"]["policy"] == "spin"


def test_an_unknown_policy_is_a_usage_error_naming_the_option_and_the_policies(
    run_cli: Run, pingpong_1ms: Path
) -> None:
    r = run_cli("compare", pingpong_1ms, "--policies", "timeout,bogus")
    assert r.code == 2
    assert "--policies 'bogus'" in r.err
    assert "`always_on`" in r.err and "`timeout`" in r.err
    r = run_cli("compare", pingpong_1ms, "--policies", " , ")
    assert r.code == 2 and "--policies" in r.err


def test_the_json_table_is_the_parquet_one(
    run_cli: Run, pingpong_1ms: Path, tmp_path: Path
) -> None:
    r = run_cli("compare", pingpong_1ms, "--policies", "timeout", "--json", "-o", tmp_path / "o")
    assert r.code == 0, r.err
    printed = pd.read_json(io.StringIO(r.out), orient="records")
    written = pd.read_parquet(tmp_path / "o" / "policies.parquet")
    assert list(printed["policy"]) == list(written["policy"])
    assert printed["link_energy_j"].tolist() == pytest.approx(written["link_energy_j"].tolist())
    assert math.isnan(written["oracle_share_pct"].iloc[1])


def test_the_report_draws_each_policys_saving_at_its_slowdown(
    run_cli: Run, pingpong_1ms: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    assert run_cli("compare", pingpong_1ms, "--policies", "timeout", "-o", out).code == 0
    r = run_cli("report", out)
    assert r.code == 0, r.err
    page = (out / "report.html").read_text()
    assert 'id="policy_saving"' in page
    assert "Link policies against always-on" in page
    # Policy names label the points, never the configuration's path.
    assert str(pingpong_1ms) not in page and pingpong_1ms.name not in page
    table = report.load_policies(out)
    fig = report.policy_figures(table)[0].figure
    link_ax, machine_ax = fig.axes[:2]
    for ax, column in ((link_ax, "link_saving_pct"), (machine_ax, "saving_pct")):
        points = [float(v) for c in ax.collections for v in c.get_offsets()[0]]
        pairs = zip(table["slowdown_pct"], table[column], strict=True)
        expected = [float(v) for xy in pairs for v in xy]
        assert points == pytest.approx(expected)
        assert [t.get_text() for t in ax.texts] == ["always_on", "timeout"]
    # Without the oracle no bound is drawn, and the caption says how to get it.
    assert not link_ax.get_lines()
    assert "compare --policies ...,oracle" in report.policy_figures(table)[0].caption


def test_a_policies_table_without_its_columns_is_named(tmp_path: Path) -> None:
    pd.DataFrame({"policy": ["timeout"]}).to_parquet(tmp_path / "policies.parquet")
    with pytest.raises(ResultsError, match=r"policies\.parquet: no column makespan_s"):
        report.load_policies(tmp_path)


def test_analyze_idle_refuses_a_policy_it_cannot_screen(
    run_cli: Run, pingpong_1ms: Path, tmp_path: Path
) -> None:
    assert run_cli("run", pingpong_1ms, "-o", tmp_path / "run").code == 0
    for policy in ("adaptive", "perfbound", "always_on"):
        r = run_cli("analyze", "idle", tmp_path / "run", "--policy", policy)
        assert r.code == 2
        assert f"--policy {policy}: cannot screen the link policy '{policy}'" in r.err
        assert "timeout and oracle" in r.err


def test_analyze_idle_screens_the_oracle_by_hand(
    run_cli: Run, pingpong_1ms: Path, tmp_path: Path
) -> None:
    # An always-on run whose thresholds hold the break-even time: 2.88 us of sleep and 17 us
    # of wake (10GBASE-T's sleep, the measured wake), 19.88 us.
    run = tmp_path / "run"
    r = run_cli(
        "run",
        pingpong_1ms,
        "-o",
        run,
        "--set",
        'power.links.policy="always_on"',
        "--set",
        "output.pair_idle=true",
        "--set",
        "output.idle_thresholds_us=[19.88]",
    )
    assert r.code == 0, r.err
    r = run_cli("analyze", "idle", run, "--policy", "oracle", "--wakes", "17", "--json")
    assert r.code == 0, r.err
    row = pd.read_json(io.StringIO(r.out), orient="records").iloc[0]
    assert row["idle_timeout_us"] == pytest.approx(19.88)
    assert (row["penalty_bound_pct"], row["bound"]) == (0.0, "no_delay")
    assert bool(row["exact"]) and bool(row["pairs_exact"])
    # By hand from the run's own tables: every paired link's gaps past 19.88 us spend all but
    # the sleep and the wake in LPI (the last gap, if past it, all but the sleep), each of
    # its two directions; energy is the ports' active power less 1.36 W (3.44 - 2.08) in LPI.
    res = Results.read(run)
    pairs = res.tables["pair_idle_thresholds"]
    at = pairs[(pairs["threshold_s"] - 19.88e-6).abs() < 1e-12]
    even = 19.88e-6
    lpi = 2 * sum(
        p["total_s"] - p["count"] * even + (17e-6 if p["trailing_idle_s"] > even else 0.0)
        for p in at.to_dict("records")
    )
    assert row["lpi_s"] == pytest.approx(lpi, rel=1e-9)
    span = res.makespan_s
    assert row["link_energy_j"] == pytest.approx(4 * 3.44 * span - (3.44 - 2.08) * lpi)
    # One wake per link and gap but the last.
    wakes = sum(p["count"] - (p["trailing_idle_s"] > even) for p in at.to_dict("records"))
    assert row["wakes"] == wakes
    r = run_cli("analyze", "idle", run, "--policy", "oracle", "--wakes", "17")
    assert "no packet waits (penalty_bound_pct 0)" in r.out


def test_the_oracle_share_is_each_saving_over_the_oracles(pingpong_1ms: Path) -> None:
    c = compare_policies(Config.load(pingpong_1ms), ["timeout", "oracle"])
    rows = c.table.set_index("policy")
    oracle, timeout = rows.loc["oracle"], rows.loc["timeout"]
    assert c.has_oracle
    assert oracle["oracle_share_pct"] == 100.0
    assert timeout["oracle_share_pct"] == pytest.approx(
        100 * timeout["link_saving_j"] / oracle["link_saving_j"]
    )
    assert rows.loc["always_on", "oracle_share_pct"] == 0.0
    # The oracle wakes every link just in time: the run is always-on's, to the picosecond.
    assert (oracle["makespan_s"], oracle["wake_delay_s"]) == (
        rows.loc["always_on", "makespan_s"],
        0,
    )


EXAMPLE_CONFIGS = sorted(p.name for p in EXAMPLES.glob("*.toml"))


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("example", EXAMPLE_CONFIGS)
def test_the_oracle_delays_nothing_and_saves_the_most(example: str, seed: int) -> None:
    """On every example and seed: the oracle's makespan is always-on's, and no other policy
    spends less link energy. A delaying policy could (it sleeps in gaps its delays stretch):
    none does on these runs, and docs/policies.md says why the oracle is the bound of those
    that delay nothing. One documented exception: in the run's last stretch the oracle sleeps
    only past break-even, as if traffic came at the end, while `predictive` sleeps at once on
    a node whose ranks have all finished; it can gain at most one wake time of LPI per link
    direction there."""
    cfg = Config.load(EXAMPLES / example).with_overrides({"seed": seed})
    c = compare_policies(cfg, ["timeout", "adaptive", "perfbound", "predictive", "oracle"])
    rows = c.table.set_index("policy")
    oracle = rows.loc["oracle"]
    assert oracle["makespan_s"] == rows.loc["always_on", "makespan_s"]
    assert oracle["wake_delay_s"] == 0.0
    links = c.runs["predictive"].links
    last_stretch_j = float(
        ((links["port_active_w"] - links["port_lpi_w"]) * links["wake_time_s"]).sum()
    )
    for name, r in rows.iterrows():
        slack = last_stretch_j if name == "predictive" else 0.0
        assert oracle["link_energy_j"] <= r["link_energy_j"] + slack, name


def test_policy_is_a_sweep_axis_like_any_field(tmp_path: Path) -> None:
    spec = sweep.SweepSpec.from_dict(
        {
            "name": "policies",
            "baseline": "always_on",
            "base": tomllib.loads(PINGPONG_1MS),
            "axes": {"power.links.policy": ["timeout", "perfbound", "oracle"]},
            "variants": [
                {"name": "policy"},
                {"name": "always_on", "set": {"power.links.policy": "always_on"}},
            ],
        },
        "spec.toml",
    )
    df = sweep.run(spec, tmp_path / "out", workers=1)
    assert (df["status"] == "ok").all()
    # Three policy runs and one always-on run: always on, the policy axis changes nothing.
    assert df["dir"].nunique() == 4
    c = compare_policies(Config.from_toml(PINGPONG_1MS), ["timeout", "perfbound", "oracle"])
    by_policy = c.table.set_index("policy")
    for r in df[df["variant"] == "policy"].to_dict("records"):
        expected = by_policy.loc[r["power.links.policy"]]
        assert r["link_saving_pct"] == pytest.approx(expected["link_saving_pct"])
        assert r["slowdown_pct"] == pytest.approx(expected["slowdown_pct"])


def test_always_on_runs_once_whatever_a_policys_parameters(tmp_path: Path) -> None:
    # An axis over perfbound's bound: two perfbound runs, and one always-on run for both
    # cells, which the bound cannot change.
    spec = sweep.SweepSpec.from_dict(
        {
            "name": "bounds",
            "baseline": "always_on",
            "base": {**tomllib.loads(PINGPONG_1MS), "power": {"links": {"policy": "perfbound"}}},
            "axes": {"power.links.slowdown_bound": [0.005, 0.02]},
            "variants": [
                {"name": "perfbound"},
                {"name": "always_on", "set": {"power.links.policy": "always_on"}},
            ],
        },
        "spec.toml",
    )
    df = sweep.run(spec, tmp_path / "out", workers=1)
    assert (df["status"] == "ok").all()
    assert df.groupby("variant")["dir"].nunique().to_dict() == {"always_on": 1, "perfbound": 2}


def test_tune_confirms_perfbound_at_its_share_of_the_budget_and_predictive(
    tmp_path: Path,
) -> None:
    result = tune(
        Config.from_toml(PINGPONG_1MS),
        2.0,
        timeouts_us=[600.0],
        k=1,
        out_dir=tmp_path / "runs",
        workers=1,
        policies=["timeout", "perfbound", "predictive"],
    )
    settings = list(result.candidates["settings"])
    # The screened timeout, then perfbound on both link kinds at half the budget and at it
    # (a share of the run, 2 % -> 0.01 and 0.02), then predictive at its defaults.
    assert settings[0]["node"]["idle_timeout_us"] == 600.0
    assert settings[1:] == [
        *({"node": {"policy": "perfbound", "slowdown_bound": b}} for b in (0.01, 0.02)),
        {"node": {"policy": "predictive"}},
    ]
    assert result.candidates["link_saving_pct"].iloc[1:].isna().all()
    # Each candidate confirmed as compare prices it.
    for s, saving in zip(settings[1:], result.candidates["saving_pct"].iloc[1:], strict=True):
        overrides = {f"power.links.{k}": v for k, v in s["node"].items()}
        cfg = Config.from_toml(PINGPONG_1MS).with_overrides(overrides)
        assert saving == pytest.approx(compare(cfg).saving_pct)
    assert result.chosen is not None
    assert result.candidates["slowdown_pct"].iloc[result.chosen] <= 2.0


@pytest.mark.parametrize(
    ("policies", "message"),
    [
        ("oracle", "`oracle` is the bound, not a policy a port can run"),
        ("timeout,bogus", "`bogus` is not a link policy tune searches; expected timeout, adaptive"),
    ],
)
def test_tune_refuses_a_policy_it_cannot_search(
    run_cli: Run, pingpong_1ms: Path, policies: str, message: str
) -> None:
    r = run_cli("tune", pingpong_1ms, "--slowdown", "1", "--policies", policies)
    assert r.code == 2
    assert f"--policies {policies!r}" in r.err and message in r.err
