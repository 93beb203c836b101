"""Check 2: Reviriego's switch power model against simulated switch power (TraceRP), on every
topology."""

from __future__ import annotations

from typing import Any

from tracewatt.results import Results
from tracewatt.validation.common import (
    BACKPLANE_W,
    PORT_ACTIVE_W,
    PORT_LPI_W,
    SLEEP_US,
    TIMEOUT_US,
    WAKE_US,
    Check,
    Panel,
    Series,
    pingpong_doc,
    run_all,
)

#: Two nodes on different switches of each topology family (plus a single switch).
TOPOLOGIES: list[tuple[str, dict[str, Any], list[int]]] = [
    ("single switch", {"kind": "single_switch", "nodes": 4}, [0, 3]),
    (
        "fat-tree",
        {
            "kind": "fat_tree",
            "levels": 2,
            "radix": 4,
            "nodes_per_leaf": 2,
            "leaves": 4,
            "spines": 2,
        },
        [0, 7],
    ),
    ("torus", {"kind": "torus", "dims": [3, 3]}, [0, 8]),
    (
        "dragonfly",
        {
            "kind": "dragonfly",
            "groups": 3,
            "routers_per_group": 2,
            "nodes_per_router": 1,
            "global_links_per_router": 1,
        },
        [0, 5],
    ),
]


def reviriego_w(res: Results, interval_s: float) -> list[float]:
    """Reviriego et al.'s model per switch: P_base + P_dynamic x sum over ports of
    min(1, (T_f + T_sleep + T_wake) / I) for each port that sends one packet per interval I,
    where T_sleep is everything from a packet's end to low power (idle_timeout + sleep_time)."""
    links = res.links.set_index("link_id")
    e = res.energy
    ports = e[(e["component"] == "link_port") & e["switch"].notna()]
    out = []
    for _, owned in ports.groupby("switch"):
        g = links.loc[owned["id"]]
        n_ports = len(g)
        p = BACKPLANE_W + n_ports * PORT_LPI_W
        for _, row in g.iterrows():
            if row["packets"] == 0:
                continue
            t_f = row["busy_s"] / row["packets"]
            active = t_f + (TIMEOUT_US + SLEEP_US + WAKE_US) * 1e-6
            p += (PORT_ACTIVE_W - PORT_LPI_W) * min(1.0, active / interval_s)
        out.append(p)
    return out


def check_reviriego() -> Check:
    """Simulated switch power within 1 % of Reviriego's model, for ping-pong from busy to idle,
    independent control (TraceRP's), on every topology."""
    intervals = [50.0, 300.0, 700.0, 1000.0, 2000.0, 5000.0]
    cases = [(name, topo, nodes, i) for name, topo, nodes in TOPOLOGIES for i in intervals]
    # At least 200 ms of run, so the start (every port awake for idle_timeout + sleep_time from
    # t = 0, which the model ignores) weighs under 0.3 % of a port's swing.
    res = run_all(
        [pingpong_doc(t, n, i, max(60, int(200_000 / i)), "independent", n) for _, t, n, i in cases]
    )
    details, worst = [], 0.0
    for (name, _, _, i), r in zip(cases, res, strict=True):
        model = reviriego_w(r, i * 1e-6)
        sim = r.switches.sort_values("switch_id")["avg_power_w"].tolist()
        err = max(abs(s - m) / m for s, m in zip(sim, model, strict=True))
        worst = max(worst, err)
        details.append(
            f"{name:13} interval {i:6.0f} us: switch 0 simulated {sim[0]:8.3f} W, "
            f"model {model[0]:8.3f} W, "
            f"worst switch error {100 * err:.3f} %"
        )
    ok = worst < 0.01
    return Check(
        "2",
        "Reviriego switch power model vs simulation (TraceRP)",
        "every switch within 1 % at every load, every topology",
        f"worst error {100 * worst:.3f} %",
        ok,
        details,
        panels=_reviriego_panels(cases, res, intervals),
    )


def _reviriego_panels(
    cases: list[tuple[str, dict[str, Any], list[int], float]],
    res: list[Results],
    intervals: list[float],
) -> list[Panel]:
    """Switch 0's power against the send interval, simulated and modelled, per topology."""
    power: dict[str, tuple[list[float | None], list[float | None]]] = {}
    for (name, _, _, i), r in zip(cases, res, strict=True):
        sim, model = power.setdefault(name, ([], []))
        sim.append(float(r.switches.sort_values("switch_id")["avg_power_w"].iloc[0]))
        model.append(reviriego_w(r, i * 1e-6)[0])
    return [
        Panel(
            name,
            "send interval (us)",
            "switch 0 power (W)",
            intervals,
            [Series("simulated", sim), Series("Reviriego's model", model, target=True)],
            x_log=True,
        )
        for name, (sim, model) in power.items()
    ]
