"""Fast screening against full simulation: exact where the theory says so, a bound elsewhere."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tracewatt
from conftest import EXAMPLES, CliResult
from tracewatt import cli
from tracewatt.analysis.idle import penalty_bound, screen_idle
from tracewatt.compare import baseline_of, compare
from tracewatt.report.plots import lpi_share_by_kind

TIMEOUT_US, WAKE_US = 600.0, 17.0


def _pingpong(interval_us: float, policy: str, wake_us: float = WAKE_US) -> dict[str, Any]:
    return {
        "machine": {"preset": "miwa2014-16node", "topology": {"kind": "single_switch", "nodes": 2}},
        "jobs": [
            {
                "ranks": 2,
                "workload": {"kind": "pingpong", "iterations": 50, "interval_us": interval_us},
            }
        ],
        "power": {
            "control": "independent",
            "links": {"policy": policy, "idle_timeout_us": TIMEOUT_US, "wake_time_us": wake_us},
        },
    }


@pytest.mark.parametrize("wake_us", [WAKE_US, 0.0])
@pytest.mark.parametrize("interval_us", [300.0, 1000.0, 2500.0])
def test_screening_counts_exactly_the_wakes_a_simulation_makes(
    interval_us: float, wake_us: float
) -> None:
    """A wake of zero time is still a wake: the run counts every exit from low power, as the
    screen counts every idle gap longer than the timeout."""
    base = tracewatt.simulate(_pingpong(interval_us, "always_on"))
    eee = tracewatt.simulate(_pingpong(interval_us, "timeout", wake_us))
    row = screen_idle(base, [TIMEOUT_US], [wake_us]).iloc[0]
    assert row["exact"]
    # Wakes never overlap here and the send schedule is fixed: the count is exact.
    assert row["wakes"] == eee.summary["links"]["wakes"]
    # Energy differs only by the documented timing shift: at most wakes x wake x (P_a - P_lpi).
    e_sim = eee.summary["energy_j"]["switch_ports"] + eee.summary["energy_j"]["nic_ports"]
    shift = row["wakes"] * wake_us * 1e-6 * (3.44 - 2.08)
    assert abs(row["link_energy_j"] - e_sim) <= shift + 1e-9
    # The penalty bound bounds the slowdown.
    slowdown_s = eee.makespan_s - base.makespan_s
    assert slowdown_s <= row["penalty_bound_s"] + 1e-12


def test_screening_between_thresholds_is_interpolated_and_close() -> None:
    base = tracewatt.simulate(_pingpong(1000.0, "always_on"))
    exact = screen_idle(base, [600.0], [17.0]).iloc[0]
    near = screen_idle(base, [601.0], [17.0]).iloc[0]
    assert not near["exact"]
    assert near["wakes"] == pytest.approx(exact["wakes"], rel=0.02)
    df = screen_idle(base, [10.0, 600.0, 16000.0], [17.0, 170.0])
    assert len(df) == 6
    # Longer timeouts never wake more, and never save more.
    by_to = df[df["wake_time_us"] == 17.0].sort_values("idle_timeout_us")
    assert list(by_to["wakes"]) == sorted(by_to["wakes"], reverse=True)
    assert list(by_to["link_energy_j"]) == sorted(by_to["link_energy_j"])
    assert df["confirm"].any()


def test_penalty_bound_reproduces_the_papers_arithmetic() -> None:
    s, pct = penalty_bound(38_770, 17e-6, 84.1)
    assert s == pytest.approx(0.65909)
    assert pct == pytest.approx(0.7837, abs=1e-4)


def test_compare_reports_saving_and_slowdown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tracewatt.Config.from_dict(_pingpong(1000.0, "timeout"))
    c = compare(cfg)
    assert c.baseline.summary["links"]["wakes"] == 0
    assert c.policy.summary["links"]["wakes"] > 0
    assert 0 < c.link_saving_pct < 100
    assert c.slowdown_pct >= 0
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps(_pingpong(1000.0, "timeout")))
    out = tmp_path / "out"
    assert cli.main(["compare", str(path), "--json", "-o", str(out)]) == 0
    s = json.loads(capsys.readouterr().out)
    assert set(s["baseline"]) >= {"makespan_s", "energy_j", "avg_power_w"}
    assert s["saving_pct"] == pytest.approx(c.saving_pct)
    assert s["slowdown_pct"] == pytest.approx(c.slowdown_pct)
    assert json.loads((out / "summary.json").read_text())["saving_pct"] == pytest.approx(
        c.saving_pct
    )
    assert (out / "baseline" / "summary.json").is_file()


def test_a_policy_that_is_the_baseline_saves_exactly_zero_not_minus_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Links always on and MPI spinning: the policy run is the baseline run, so every saving is
    +0.0 (a -0.0 printed as "-0.000 %" reads as a loss)."""
    c = compare(tracewatt.Config.from_dict(_pingpong(1000.0, "always_on")))
    savings = [c.saving_pct, c.link_saving_pct, *c.summary()["saving_by_component_pct"].values()]
    assert savings == [0.0] * len(savings)
    assert all(math.copysign(1.0, v) == 1.0 for v in savings), savings
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps(_pingpong(1000.0, "always_on")))
    assert cli.main(["compare", str(path)]) == 0
    assert "-0.0" not in capsys.readouterr().out


def test_analyze_idle_cli_prints_and_writes_the_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps(_pingpong(1000.0, "always_on")))
    res = tmp_path / "res"
    assert cli.main(["run", str(path), "-o", str(res), "-q"]) == 0
    csv = tmp_path / "screen.csv"
    code = cli.main(
        ["analyze", "idle", str(res), "--timeouts", "600,1600", "--wakes", "17", "-o", str(csv)]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "penalty_bound_pct" in out and "confirm" in out
    assert len(csv.read_text().splitlines()) == 3
    assert cli.main(["analyze", "idle", str(tmp_path / "nope")]) == 2
    # One link kind; a kind the run does not have is a usage error naming the kinds it has.
    assert cli.main(["analyze", "idle", str(res), "--links", "node", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 8 * 6
    assert cli.main(["analyze", "idle", str(res), "--links", "global"]) == 2
    assert "no links of kind global in this run; it has node" in capsys.readouterr().err
    # Screened as paired, the output says how many directions and from which table; the run
    # kept no pair intervals, so it says how to get them.
    assert cli.main(["analyze", "idle", str(res), "--control", "paired"]) == 0
    assert "caveat: 4 screened link directions are `paired`" in capsys.readouterr().out
    paired = tmp_path / "paired"
    assert (
        cli.main(["run", str(path), "-o", str(paired), "-q", "--set", "output.pair_idle=true"]) == 0
    )
    assert cli.main(["analyze", "idle", str(paired), "--control", "paired"]) == 0
    assert "paired: 4 link directions screened as paired links" in capsys.readouterr().out


def _cross_leaf_pingpong(power: dict[str, Any]) -> dict[str, Any]:
    # Nodes 0 and 8 sit on different leaves: the path is node, tree1, tree1, node links.
    return {
        "machine": {"preset": "miwa2014-16node"},
        "jobs": [
            {
                "ranks": 2,
                "allocation": "list",
                "node_list": [0, 8],
                "workload": {"kind": "pingpong", "iterations": 30, "interval_us": 1000.0},
            }
        ],
        "power": {"control": "independent", **power},
    }


def test_screening_one_link_kind_counts_exactly_that_kinds_wakes() -> None:
    base = tracewatt.simulate(_cross_leaf_pingpong({"links": {"policy": "always_on"}}))
    cases: list[tuple[str, dict[str, Any]]] = [
        ("tree1", {"links": {"policy": "always_on"}, "tree": [{"policy": "timeout"}]}),
        ("node", {"node": {"policy": "timeout"}, "links": {"policy": "always_on"}}),
    ]
    for kind, power in cases:
        eee = tracewatt.simulate(_cross_leaf_pingpong(power))
        row = screen_idle(base, [TIMEOUT_US], [WAKE_US], links=[kind]).iloc[0]
        sim = eee.links.groupby("kind")["wakes"].sum()
        assert sim[kind] > 0 and sim.drop(kind).sum() == 0
        assert row["wakes"] == sim[kind]
        # The saving is of those links' ports only: the others stay at always-on power.
        ports = eee.links[eee.links["kind"] == kind]["energy_j"].sum()
        shift = row["wakes"] * WAKE_US * 1e-6 * (3.44 - 2.08)
        assert abs(row["link_energy_j"] - ports) <= shift + 1e-9


def test_screening_defaults_to_the_selected_links_sleep_time() -> None:
    run = tracewatt.simulate(
        _cross_leaf_pingpong({"links": {"policy": "always_on"}, "node": {"phy": "10gbase-kr"}})
    )
    assert screen_idle(run, [600.0], [17.0], links=["node"]).iloc[0]["sleep_time_us"] == 4.9
    assert screen_idle(run, [600.0], [17.0], links=["tree1"]).iloc[0]["sleep_time_us"] == 2.88
    with pytest.raises(ValueError, match=r"different sleep times \(2.88, 4.9 us\)"):
        screen_idle(run, [600.0], [17.0])
    # Given sleep times need no default.
    assert len(screen_idle(run, [600.0], [17.0], sleeps_us=[1.0])) == 1
    with pytest.raises(ValueError, match="no links of kind global"):
        screen_idle(run, [600.0], [17.0], links=["global"])


def test_negative_or_nan_times_are_refused_naming_the_parameter(tmp_path: Path) -> None:
    res = tracewatt.simulate(EXAMPLES / "pingpong.toml")
    with pytest.raises(
        ValueError, match=r"timeouts_us: times must be non-negative numbers, got \[-1"
    ):
        screen_idle(res, [-1.0, 600.0], [17.0])
    with pytest.raises(ValueError, match="wakes_us"):
        screen_idle(res, [600.0], [float("nan")])
    res.write(tmp_path / "r")
    assert cli.main(["analyze", "idle", str(tmp_path / "r"), "--timeouts", "-5", "-q"]) == 2


def test_screening_a_run_without_messages(
    tmp_path: Path, run_cli: Callable[..., CliResult]
) -> None:
    """A run that kept its messages but sent none: every link direction idles the whole
    millisecond (one trailing interval, which no packet ends): no wake, no bound, and LPI from
    the timeout plus the sleep to the end."""
    cfg = {
        "machine": {
            "topology": {"kind": "single_switch", "nodes": 2},
            "links": {"bandwidth_gbps": 10.0},
        },
        "output": {"messages": True},
        "jobs": [
            {
                "name": "a",
                "ranks": 2,
                "start_us": 1000.0,
                "workload": {"kind": "uniform_random", "messages": 0},
            }
        ],
    }
    res = tracewatt.simulate(cfg)
    assert res.summary["makespan_s"] == 1e-3 and len(res.messages) == 0
    df = screen_idle(res, [10.0, 600.0], [17.0])
    sleep_us = 2.88  # the default PHY's (docs/config.md, power.links)
    assert list(df["wakes"]) == [0.0, 0.0] and list(df["chain_wakes"]) == [0.0, 0.0]
    assert list(df["penalty_bound_s"]) == [0.0, 0.0]
    assert list(df["bound"]) == ["critical_path", "critical_path"]
    for row, timeout_us in zip(df.to_dict("records"), (10.0, 600.0), strict=True):
        assert row["lpi_s"] == pytest.approx(4 * (1000.0 - timeout_us - sleep_us) * 1e-6)
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps(cfg))
    assert run_cli("run", path, "-o", tmp_path / "res", "-q").code == 0
    r = run_cli("analyze", "idle", tmp_path / "res", "--timeouts", "10,600", "--wakes", "17")
    assert r.code == 0, r.err
    # tune screens the same way: its one candidate is the 10 us timeout on the node links,
    # with the screening's saving and no bound; no packet meets a wake, so no slowdown.
    r = run_cli("tune", path, "--slowdown", "1", "--timeouts", "10", "-j", "1", "--json")
    assert r.code == 0, r.err
    (c,) = json.loads(r.out)
    assert c["settings"] == {
        "node": {"idle_timeout_us": 10.0, "wake_time_us": 17.0, "control": None}
    }
    assert c["link_saving_pct"] == pytest.approx(df["link_saving_pct"].iloc[0])
    assert (c["penalty_bound_pct"], c["slowdown_pct"]) == (0.0, 0.0)


def test_empty_or_bad_time_lists_are_usage_errors(
    tmp_path: Path, run_cli: Callable[..., CliResult]
) -> None:
    res = tracewatt.simulate(EXAMPLES / "pingpong.toml")
    with pytest.raises(ValueError, match="timeouts_us: expected at least one time"):
        screen_idle(res, [], [17.0])
    with pytest.raises(ValueError, match="sleeps_us: expected at least one time"):
        screen_idle(res, [600.0], [17.0], sleeps_us=[])
    res.write(tmp_path / "r")
    cfg = EXAMPLES / "pingpong.toml"
    cases = [
        (["analyze", "idle", tmp_path / "r", "--timeouts", ""], "--timeouts '': expected at "),
        (["analyze", "idle", tmp_path / "r", "--timeouts", ",,"], "--timeouts ',,': expected at "),
        (["analyze", "idle", tmp_path / "r", "--sleeps", ""], "--sleeps '': expected at "),
        (["tune", cfg, "--slowdown", "1", "--timeouts", ""], "--timeouts '': expected at "),
        (["tune", cfg, "--slowdown", "1", "--wake-time", ""], "--wake-time '': expected at "),
    ]
    for args, message in cases:
        r = run_cli(*args)
        assert (r.code, r.err) == (2, f"tracewatt: error: {message}least one time, us\n")
    # A bad time names the option it came from, not the field the screening run puts it in.
    for args in (
        ["tune", cfg, "--slowdown", "1", "--timeouts=-1,5"],
        ["analyze", "idle", tmp_path / "r", "--timeouts=-1,5"],
    ):
        r = run_cli(*args)
        assert (r.code, r.err) == (
            2,
            "tracewatt: error: --timeouts '-1,5': times must be finite numbers >= 0, got -1\n",
        )
    r = run_cli("analyze", "idle", tmp_path / "r", "--wakes", "inf,x")
    assert (r.code, r.err) == (
        2,
        "tracewatt: error: --wakes 'inf,x': expected a comma-separated list of times, us\n",
    )


def test_the_links_table_says_which_directions_are_paired() -> None:
    # The ping-pong example runs the default control: every link paired.
    links = tracewatt.simulate(EXAMPLES / "pingpong.toml").links
    assert set(links["control"]) == {"paired"}
    ind = tracewatt.Config.load(EXAMPLES / "pingpong.toml").with_overrides(
        {"power.control": "independent"}
    )
    assert set(tracewatt.simulate(ind).links["control"]) == {"independent"}


def test_paired_links_screen_exactly_from_their_own_idle_intervals() -> None:
    """NPB FT on paired 10GBASE-T links: screening the always-on run with the links' own idle
    intervals (both directions together) predicts the wakes the EEE simulation counts, one per
    link; from each direction alone it can only bound them from above."""
    cfg = tracewatt.Config.load(EXAMPLES / "miwa-npb-ft.toml")
    base = baseline_of(cfg)
    eee_wakes = tracewatt.simulate(cfg).summary["links"]["wakes"]
    with_pairs = screen_idle(
        tracewatt.simulate(base.with_overrides({"output.pair_idle": True})), [600.0], [17.0]
    )
    assert bool(with_pairs["pairs_exact"].iloc[0])
    assert with_pairs["wakes"].iloc[0] == eee_wakes
    alone = screen_idle(tracewatt.simulate(base), [600.0], [17.0])
    assert not bool(alone["pairs_exact"].iloc[0])
    assert alone["wakes"].iloc[0] >= eee_wakes


def test_critical_path_bound_counts_the_wakeable_hops_of_the_ping_pong_chain() -> None:
    """Worked by hand: 30 rounds of a cross-leaf ping-pong (node, tree1, tree1, node: 4 hops
    each way), a round every 1,001 us, independent control, 600 us timeout. Every message waits
    for the one before it, so the chain is all 60 messages. The first round finds every link
    awake (its gaps are a few us); each later message meets a wake on each of its 4 hops:
    58 x 4 = 232 hops, as many as the run's 8 directions x 29 wakes.

    With a 0.1 us wake and no sleep the bound is 232 x 0.1 = 23.2 us: no gap grows by more, so
    a wake needs a gap over 600 - 23.2 us, priced at the kept threshold below (250 us), where
    the counts are the same. With a 17 us wake (+ 2.88 us sleep) it would be 4.6 ms, more than
    the timeout: any gap could then become a wake, so it is priced at 0, every hop of every
    message: 60 x 4 = 240 hops, 240 x 19.88 us."""
    cfg = _cross_leaf_pingpong({"links": {"policy": "always_on"}})
    cfg["output"] = {"messages": True}
    run = tracewatt.simulate(cfg)
    # The route each message took: its two node links and the two leaf-spine links.
    assert list(run.messages.filter(like="hops_").columns) == ["hops_node", "hops_tree1"]
    assert set(run.messages["hops_node"]) == {2} and set(run.messages["hops_tree1"]) == {2}
    counted = run.tables["message_wake_hops"]
    at_600 = counted[np.isclose(counted["threshold_s"], 600e-6)]
    assert len(at_600) == 58 and set(at_600["hops"]) == {4}
    assert set(at_600["message"]) == set(range(2, 60))
    fast = screen_idle(run, [TIMEOUT_US], [0.1], sleeps_us=[0.0]).iloc[0]
    assert fast["bound"] == "critical_path"
    assert (fast["chain_wakes"], fast["wakes"], fast["bound_threshold_us"]) == (232, 232, 250)
    assert fast["penalty_bound_s"] == pytest.approx(232 * 0.1e-6)
    slow = screen_idle(run, [TIMEOUT_US], [WAKE_US]).iloc[0]
    assert (slow["chain_wakes"], slow["bound_threshold_us"]) == (240, 0)
    assert slow["penalty_bound_s"] == pytest.approx(240 * (17.0 + 2.88) * 1e-6)
    # From the routes alone every hop of every message can wake: 240, capped at the 232 wakes.
    routes_only = tracewatt.Results(
        run.summary, {k: v for k, v in run.tables.items() if k != "message_wake_hops"}
    )
    alone = screen_idle(routes_only, [TIMEOUT_US], [0.1], sleeps_us=[0.0]).iloc[0]
    assert alone["chain_wakes"] == 240
    assert alone["penalty_bound_s"] == pytest.approx(232 * 0.1e-6)
    # Only the node links: 2 of the 4 hops of each of the 58 later messages.
    node = screen_idle(run, [TIMEOUT_US], [0.1], sleeps_us=[0.0], links=["node"]).iloc[0]
    assert node["chain_wakes"] == 116
    assert node["penalty_bound_s"] == pytest.approx(116 * 0.1e-6)


def test_messages_record_the_routes_their_packets_took_on_a_dragonfly() -> None:
    """The UGAL dragonfly example: a minimal route crosses at most one global link and a local
    link in each of its two groups; a Valiant detour through an intermediate group at most two
    global links and four local ones (a local hop in each group, two in the intermediate one).
    Some messages of the example take each; messages between ranks of one node cross no link."""
    cfg = tracewatt.Config.load(EXAMPLES / "dragonfly-uniform.toml")
    m = tracewatt.simulate(cfg.with_overrides({"output.messages": True})).messages
    assert list(m.filter(like="hops_").columns) == ["hops_node", "hops_local", "hops_global"]
    assert set(m["hops_node"]) <= {0, 2}
    local = m[m["hops_node"] == 0]
    assert (local[["hops_local", "hops_global"]] == 0).all().all()
    assert m["hops_global"].max() == 2 and m["hops_local"].max() <= 4
    minimal = (m["hops_global"] <= 1) & (m["hops_local"] <= 2)
    assert minimal.any() and (~minimal).any()


def _ft(size: str, iterations: int) -> tracewatt.Config:
    return tracewatt.Config.load(EXAMPLES / "miwa-npb-ft.toml").with_overrides(
        {"jobs[0].workload.class": size, "jobs[0].workload.iterations": iterations}
    )


@pytest.mark.parametrize(
    ("cfg", "control"),
    [
        (_ft("S", 2), "paired"),
        (_ft("S", 2), "independent"),
        (tracewatt.Config.from_dict(_pingpong(0.0, "timeout")), "independent"),
        (tracewatt.Config.load(EXAMPLES / "custom-torus.toml"), "independent"),
        (tracewatt.Config.load(EXAMPLES / "dragonfly-uniform.toml"), "independent"),
        (tracewatt.Config.load(EXAMPLES / "fattree-stencil4d.toml"), "paired"),
    ],
    ids=["ft-paired", "ft-independent", "pingpong", "torus", "dragonfly-ugal", "fattree-stencil"],
)
def test_critical_path_bound_holds_against_full_simulation(
    cfg: tracewatt.Config, control: str
) -> None:
    """Simulated slowdown <= bound at every screened timeout and wake time, on FT's all-to-alls
    (paired and independent), a back-to-back ping-pong where every wake is on the critical
    path, and the torus, UGAL dragonfly and fat-tree examples."""
    cfg = cfg.with_overrides({"power.control": control})
    timeouts, wakes = [0.0, 1.0, 10.0, 50.0, 600.0], [5.0, 17.0]
    base = tracewatt.simulate(
        baseline_of(cfg).with_overrides(
            {
                "output.messages": True,
                "output.pair_idle": True,
                "output.idle_thresholds_us": timeouts,
            }
        )
    )
    screen = screen_idle(base, timeouts, wakes)
    assert (screen["bound"] == "critical_path").all()
    assert bool(screen["pairs_exact"].all())
    for r in screen.itertuples():
        run = tracewatt.simulate(
            cfg.with_overrides(
                {
                    "power.links.idle_timeout_us": r.idle_timeout_us,
                    "power.links.wake_time_us": r.wake_time_us,
                }
            )
        )
        slowdown_s = run.makespan_s - base.makespan_s
        assert slowdown_s <= r.penalty_bound_s + 1e-12, (r.idle_timeout_us, r.wake_time_us)


def _one_way(policy: str, credits: str) -> dict[str, Any]:
    """50 frames from node 0 to node 1, 1 ms apart (1,250 B at 10 Mb/s)."""
    return {
        "machine": {
            "preset": "miwa2014-16node",
            "topology": {"kind": "single_switch", "nodes": 2},
            "packet_bytes": 1250,
            "credits": credits,
        },
        "jobs": [
            {
                "ranks": 2,
                "workload": {
                    "kind": "paced_stream",
                    "frame_bytes": 1250,
                    "rate_mbps": 10.0,
                    "duration_s": 0.05,
                },
            }
        ],
        "power": {
            "control": "independent",
            "links": {"policy": policy, "idle_timeout_us": TIMEOUT_US, "wake_time_us": WAKE_US},
        },
    }


def test_credit_frames_are_idle_intervals_the_screening_sees(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A stream of 50 frames, one every 1 ms against a 600 us timeout, acknowledged every second
    frame (25 acks back): each of the 49 frames after the first wakes node 0's uplink and node
    1's downlink, each ack node 1's uplink and the switch's port towards node 0. With credits on
    the reverse link every frame's credit also goes out on that port, ahead of any ack: it wakes
    49 times instead of 25. The screening of the always-on run counts the same wakes."""
    for credits, back in [("out_of_band", 25), ("reverse_link", 49)]:
        base = tracewatt.simulate(_one_way("always_on", credits))
        eee = tracewatt.simulate(_one_way("timeout", credits))
        links = eee.links.set_index(["src", "dst"])["wakes"]
        assert links[("s0", "n0")] == back, credits
        assert eee.summary["links"]["wakes"] == 49 + 25 + back + 49, credits
        row = screen_idle(base, [TIMEOUT_US], [WAKE_US]).iloc[0]
        assert row["exact"] and row["wakes"] == 49 + 25 + back + 49, credits
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps(_one_way("always_on", "reverse_link")))
    res = tmp_path / "res"
    assert cli.main(["run", str(path), "-o", str(res), "-q"]) == 0
    assert cli.main(["analyze", "idle", str(res), "--timeouts", "600", "--wakes", "17"]) == 0
    assert "caveat: credits travel on the reverse link" in capsys.readouterr().out


def test_a_windowed_run_is_screened_over_the_time_its_tables_cover() -> None:
    """With a trace window the summary's makespan is the window's length, but the links table
    covers the replay from 0 to the window's end: the screen's LPI share and the heatmap's are
    over that span (before, over the window: an LPI share of 2.8)."""
    cfg = tracewatt.Config.load(EXAMPLES / "trace-npb-cg.toml").with_overrides(
        {"jobs[0].trace.window": {"start_s": 0.05}}
    )
    res = tracewatt.simulate(cfg)
    end_s = res.summary["window"]["end_s"]
    assert res.makespan_s < end_s
    links = res.links
    # Screened at a 1 us timeout, most of the replay is in LPI: over the window alone the share
    # would pass 1.
    row = screen_idle(res, [1.0], [17.0]).iloc[0]
    assert row["lpi_s"] > res.makespan_s * len(links)
    assert row["lpi_fraction"] == pytest.approx(row["lpi_s"] / (end_s * len(links)), rel=1e-12)
    assert row["lpi_fraction"] < 1.0
    share = lpi_share_by_kind(res)["node"]
    want = 100.0 * links.sort_values("link_id")["lpi_s"].to_numpy() / end_s
    assert share.tolist() == pytest.approx(want.tolist(), rel=1e-12)


def test_refreshes_are_priced_at_their_mean_rate_and_the_row_is_not_exact() -> None:
    """10GBASE-T's refresh (1.28 us at active power every 39.68 us of LPI) on independent links:
    with no wake and sleep time the timing is the always-on run's, so wakes and LPI are exact,
    and the screen prices LPI x 1.28 / 39.68 at active power. A stretch of LPI holds
    floor(length / 39.68 us) refreshes, so the screen is high by under one refresh (1.28 us x
    (3.44 - 2.08) W) per stretch: per wake, and per link for the stretch that ends the run."""
    base = tracewatt.Config.load(EXAMPLES / "pingpong.toml").with_overrides(
        {
            "power.control": "independent",
            "power.links.refresh_period_us": 39.68,
            "power.links.refresh_time_us": 1.28,
        }
    )
    always_on = tracewatt.simulate(base.with_overrides({"power.links.policy": "always_on"}))
    row = screen_idle(always_on, [10.0], [0.0], [0.0]).iloc[0]
    sim = tracewatt.simulate(
        base.with_overrides(
            {
                "power.links.idle_timeout_us": 10.0,
                "power.links.wake_time_us": 0.0,
                "power.links.sleep_time_us": 0.0,
            }
        )
    )
    assert row["wakes"] == sim.summary["links"]["wakes"]
    assert row["lpi_s"] == pytest.approx(float(sim.links["lpi_s"].sum()), rel=1e-12)
    assert not row["exact"]
    energy_j = sim.summary["energy_j"]["switch_ports"] + sim.summary["energy_j"]["nic_ports"]
    stretches = row["wakes"] + len(sim.links)
    assert 0.0 <= row["link_energy_j"] - energy_j <= stretches * 1.28e-6 * (3.44 - 2.08)
    # Without refreshes the same row is exact.
    plain = tracewatt.simulate(
        base.with_overrides(
            {"power.links.policy": "always_on", "power.links.refresh_period_us": 0.0}
        )
    )
    row = screen_idle(plain, [10.0], [0.0], [0.0]).iloc[0]
    assert row["exact"]
