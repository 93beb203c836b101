"""PHY presets end to end: the wake a named PHY gives is what a real ping-pong pays, and the
resolved configuration shows it."""

from __future__ import annotations

from typing import Any

import pytest

import tracewatt
from conftest import EXAMPLES

ROUNDS = 40
# The first round finds the links fresh from t = 0; every later one finds them in LPI.
SHARE = (ROUNDS - 1) / ROUNDS


def _pingpong(control: str, node_links: dict[str, Any]) -> dict[str, Any]:
    return {
        "machine": {"preset": "miwa2014-16node", "topology": {"kind": "single_switch", "nodes": 2}},
        "jobs": [
            {
                "ranks": 2,
                "workload": {
                    "kind": "pingpong",
                    "bytes": 64,
                    "iterations": ROUNDS,
                    "interval_us": 1000.0,
                },
            }
        ],
        "power": {"control": control, "node": node_links},
    }


@pytest.mark.parametrize(
    ("phy", "wake_us", "control", "wakes_per_link"),
    [
        # Backplane PHYs may sleep each direction alone: a round trip wakes both directions.
        ("10gbase-kr", 15.38, "independent", 2),
        ("40gbase-kr4-fec", 6.5, "independent", 2),
        ("fast-wake", 0.34, "independent", 2),
        # 1000BASE-T's LPI is symmetric: one wake per link per round trip.
        ("1000base-t", 16.0, "paired", 1),
    ],
)
def test_a_named_phy_adds_its_wake_to_every_round_trip(
    phy: str, wake_us: float, control: str, wakes_per_link: int
) -> None:
    base = tracewatt.simulate(_pingpong(control, {"policy": "always_on"}))
    eee = tracewatt.simulate(_pingpong(control, {"phy": phy}))
    rtt_extra_us = 2e6 * (
        eee.summary["messages"]["latency_mean_s"] - base.summary["messages"]["latency_mean_s"]
    )
    links_on_path = 2
    want_us = links_on_path * wakes_per_link * wake_us * SHARE
    assert rtt_extra_us == pytest.approx(want_us, abs=1e-3)
    assert eee.config["power"]["node"]["wake_time_us"] == pytest.approx(wake_us)


@pytest.mark.parametrize(
    ("control", "wakes_us"),
    [
        # The request's NIC wakes node 0's link (5 us), the switch node 1's (40 us); the reply
        # finds both awake.
        ("paired", 5.0 + 40.0),
        # Each direction alone: the reply's NIC and switch port wake theirs too.
        ("independent", 2 * (5.0 + 40.0)),
    ],
)
def test_a_nic_wakes_its_link_in_its_own_wake_time(control: str, wakes_us: float) -> None:
    base = tracewatt.simulate(_pingpong(control, {"policy": "always_on"}))
    doc = _pingpong(control, {"wake_time_us": 40.0})
    doc["power"]["nic"] = {"wake_time_us": 5.0}
    eee = tracewatt.simulate(doc)
    rtt_extra_us = 2e6 * (
        eee.summary["messages"]["latency_mean_s"] - base.summary["messages"]["latency_mean_s"]
    )
    assert rtt_extra_us == pytest.approx(wakes_us * SHARE, abs=1e-3)
    links = eee.links
    wake_us = links.groupby("port")["wake_time_s"].unique().map(lambda v: sorted(v * 1e6))
    assert wake_us.to_dict() == {"nic": pytest.approx([5.0]), "switch": pytest.approx([40.0])}


def test_a_negative_nic_wake_time_is_an_error_naming_the_field() -> None:
    doc = _pingpong("paired", {})
    doc["power"]["nic"] = {"wake_time_us": -1.0}
    with pytest.raises(tracewatt.ConfigError) as e:
        tracewatt.simulate(doc)
    assert "power.nic.wake_time_us" in str(e.value)


def test_an_unknown_phy_is_an_error_naming_the_field_and_the_presets() -> None:
    with pytest.raises(tracewatt.ConfigError) as e:
        tracewatt.simulate(_pingpong("paired", {"phy": "10gbase-sr"}))
    msg = str(e.value)
    assert "power.node.phy" in msg and "unknown PHY `10gbase-sr`" in msg
    assert "40gbase-kr4" in msg


def test_each_link_sleeps_by_its_own_control() -> None:
    # Paired by default; node 1's link alone is independent. A round trip wakes node 0's link
    # once and node 1's link once per direction.
    base = tracewatt.simulate(_pingpong("paired", {"policy": "always_on"}))
    doc = _pingpong("paired", {"phy": "10gbase-kr"})
    doc["power"]["node_links"] = [
        {"nodes": [1], "link": {"control": "independent", "phy": "10gbase-kr"}}
    ]
    eee = tracewatt.simulate(doc)
    rtt_extra_us = 2e6 * (
        eee.summary["messages"]["latency_mean_s"] - base.summary["messages"]["latency_mean_s"]
    )
    assert rtt_extra_us == pytest.approx(3 * 15.38 * SHARE, abs=1e-3)
    assert eee.summary["links"]["wakes"] == 3 * (ROUNDS - 1)


def test_each_link_class_wakes_with_its_own_phy() -> None:
    cfg = tracewatt.Config.load(EXAMPLES / "dragonfly-backplane.toml").with_overrides(
        {"power.local.idle_timeout_us": 50.0, "power.global.idle_timeout_us": 50.0}
    )
    links = tracewatt.simulate(cfg).links
    # The links table shows each direction's configured timing.
    for kind, timeout_us, sleep_us, wake_us in [
        ("node", 600.0, 2.88, 17.0),
        ("local", 50.0, 4.9, 15.38),
        ("global", 50.0, 0.9, 5.5),
    ]:
        sel = links[links["kind"] == kind]
        for column, want_us in [
            ("idle_timeout_s", timeout_us),
            ("sleep_time_s", sleep_us),
            ("wake_time_s", wake_us),
        ]:
            assert sel[column].to_numpy() * 1e6 == pytest.approx(want_us, rel=1e-12), column
    by_kind = links.groupby("kind")[["wakes", "wake_s"]].sum()
    # Each wake spends the PHY's wake time in WAKING: 10GBASE-KR locally, 40GBASE-KR4 globally.
    for kind, wake_us in [("local", 15.38), ("global", 5.5)]:
        wakes, wake_s = float(by_kind["wakes"][kind]), float(by_kind["wake_s"][kind])
        assert wakes > 0
        assert wake_s / wakes * 1e6 == pytest.approx(wake_us, rel=1e-9)
