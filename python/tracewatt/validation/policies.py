"""Check ``policies``: the link policies side by side on a real trace (NPB CG class S, 4 ranks,
from the repository's tests/data), the oracle as the bound of every other.

The oracle knows every idle gap: it sleeps at the start of each one longer than the break-even
time (sleep + wake: the transitions at full power) and wakes just before it ends, so the run
is always-on's, packet for packet. Its link energy follows by hand from the always-on run's idle
intervals (``analyze idle --policy oracle``: each gap past break-even less the sleep and the
wake in LPI, the run's last gap less the sleep), which the simulated oracle must match. No
policy that delays nothing can save more; one that delays traffic sleeps in gaps it stretches,
and the check reports it where it does (docs/policies.md).
"""

from __future__ import annotations

import math
from pathlib import Path

from tracewatt.analysis.idle import screen_idle
from tracewatt.compare import ALWAYS_ON, ORACLE, compare_policies
from tracewatt.config import Config
from tracewatt.errors import ConfigError
from tracewatt.validation.common import SLEEP_US, WAKE_US, Check, Panel, Series

#: The repository's real NPB CG class S trace (4 ranks), under its tests/data.
TRACE = Path("tests") / "data" / "dumpi" / "npb-cg.S-4ranks"


def repository_trace() -> Path:
    """The trace in the checkout the package runs from, else in the clone the command runs in
    (an installed package next to its clone)."""
    for root in (Path(__file__).resolve().parents[3], Path.cwd()):
        if (root / TRACE).is_dir():
            return root / TRACE
    raise ConfigError(
        f"validate policies: reads the repository's real trace {TRACE}; run it from a clone of "
        "the repository (or with the package of a checkout on PYTHONPATH)"
    )


#: The policies compared, beside always-on.
POLICIES = ["timeout", "adaptive", "perfbound", "predictive", ORACLE]

#: The break-even time of the measured switch's links: 2.88 us of sleep and 17 us of wake.
BREAK_EVEN_US = SLEEP_US + WAKE_US


def trace_config(trace: Path | None = None) -> Config:
    """The trace (default: the repository's) on one 10 Gb/s switch, a rank per node
    (examples/trace-npb-cg.toml), the always-on run keeping its links' own idle intervals at the
    break-even time."""
    path = str(trace or repository_trace())
    return Config.from_dict(
        {
            "seed": 1,
            "machine": {
                "ranks_per_node": 1,
                "topology": {"kind": "single_switch", "nodes": 4},
                "links": {"bandwidth_gbps": 10.0, "latency_ns": 2500.0},
            },
            "jobs": [{"name": "npb-cg", "ranks": 4, "trace": {"path": path}}],
            "output": {"pair_idle": True, "idle_thresholds_us": [BREAK_EVEN_US]},
        },
        "<validate policies>",
    )


def check_policies() -> Check:
    """On the trace: the oracle's makespan is always-on's exactly; its link energy is the one
    worked out from the always-on run's idle intervals (to 1e-9) and at most every other
    policy's."""
    c = compare_policies(trace_config(), POLICIES)
    rows = {str(r["policy"]): r for r in c.table.to_dict("records")}
    base, oracle = rows.pop(ALWAYS_ON), rows.pop(ORACLE)
    hand = screen_idle(c.runs[ALWAYS_ON], [], [WAKE_US], [SLEEP_US], policy=ORACLE).iloc[0]
    hand_j = float(hand["link_energy_j"])
    oracle_j = float(oracle["link_energy_j"])
    same_time = oracle["makespan_s"] == base["makespan_s"]
    by_hand = bool(hand["exact"]) and math.isclose(oracle_j, hand_j, rel_tol=1e-9)
    beaten = [name for name, r in rows.items() if r["link_energy_j"] < oracle_j]
    ok = same_time and by_hand and not beaten
    details = [
        f"{name}: link saving {r['link_saving_pct']:.2f} % ({r['oracle_share_pct']:.1f} % of "
        f"the oracle's), slowdown {r['slowdown_pct']:.3f} %, {int(r['wakes'])} wakes"
        for name, r in rows.items()
    ]
    details.append(
        f"oracle by hand: {int(hand['wakes'])} gaps past {BREAK_EVEN_US:g} us, "
        f"{hand['lpi_s'] * 1e3:.4f} ms of LPI over the link directions, {hand_j:.6g} J; "
        f"simulated {oracle_j:.6g} J"
    )
    details += [
        f"{name} saves more link energy than the oracle: it delays traffic "
        f"({rows[name]['slowdown_pct']:.3f} % slowdown), stretching the gaps it sleeps in"
        for name in beaten
    ]
    names = list(rows)
    saving: list[float | None] = [float(r["link_saving_pct"]) for r in rows.values()]
    bound: list[float | None] = [float(oracle["link_saving_pct"])] * len(rows)
    slowdown: list[float | None] = [float(r["slowdown_pct"]) for r in rows.values()]
    none: list[float | None] = [None] * len(rows)
    return Check(
        "policies",
        "Link policies against the oracle (NPB CG class S trace)",
        "oracle: always-on's makespan, its link energy by hand, at most every policy's",
        f"oracle makespan {'=' if same_time else '!='} always-on's; link saving "
        f"{oracle['link_saving_pct']:.2f} % (by hand {hand['link_saving_pct']:.2f} %); "
        f"{len(beaten)} of {len(rows)} policies below it",
        ok,
        details,
        panels=[
            Panel(
                "link energy saved",
                "",
                "% of always-on's link energy",
                names,
                [Series("simulated", saving), Series("oracle (the bound)", bound, target=True)],
            ),
            Panel(
                "slowdown",
                "",
                "% of always-on's makespan",
                [*names, ORACLE],
                [
                    Series("simulated", [*slowdown, float(oracle["slowdown_pct"])]),
                    Series("oracle: none", [*none, 0.0], target=True),
                ],
            ),
        ],
    )
