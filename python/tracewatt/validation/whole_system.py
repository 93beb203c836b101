"""Check ``whole-system``: EEE's saving on the whole 16-node machine, nodes included (Miwa et
al., Fig. 24-25)."""

from __future__ import annotations

from tracewatt.compare import baseline_of, pct_change
from tracewatt.config import Config
from tracewatt.validation.common import (
    Check,
    Panel,
    Series,
    run_doc,
)

#: Miwa et al. Fig. 24-25 (docs/references.md section 1): EEE saved 93.7 W = 4.72 % of the system,
#: 21.3-21.9 W per switch of its 3; run time 342.79 s -> 342.76 s.
WHOLE_SYSTEM_SAVED_W, WHOLE_SYSTEM_PCT, WHOLE_SYSTEM_SWITCH_W = 93.7, 4.72, 3 * 21.6


def check_whole_system() -> Check:
    """EEE on the miwa2014 machine, nodes priced, light traffic (16 ranks computing 20 ms
    between 64 KiB halo exchanges): the saving, its share of system power, and where it is."""
    doc = {
        "machine": {"preset": "miwa2014-16node"},
        "jobs": [
            {
                "ranks": 16,
                "workload": {
                    "kind": "near_neighbor",
                    "iterations": 20,
                    "bytes": 65536,
                    "compute_us": 20_000.0,
                },
            }
        ],
    }
    pol = run_doc(doc)
    base = run_doc(baseline_of(Config.from_dict(doc, "<validate>")).to_dict())
    bw, pw = base.summary["avg_power_w"], pol.summary["avg_power_w"]
    saved = bw["total"] - pw["total"]
    switch_saved = bw["switch_ports"] - pw["switch_ports"]
    pct = 100.0 * saved / bw["total"]
    slow = pct_change(pol.makespan_s, base.makespan_s)
    ok = (
        abs(saved - WHOLE_SYSTEM_SAVED_W) / WHOLE_SYSTEM_SAVED_W <= 0.15
        and abs(pct - WHOLE_SYSTEM_PCT) <= 1.0
        and abs(switch_saved - WHOLE_SYSTEM_SWITCH_W) / WHOLE_SYSTEM_SWITCH_W <= 0.10
        and switch_saved / saved >= 2 / 3
        and abs(slow) <= 0.5
    )
    details = [
        f"{k:18} always-on {bw[k]:8.2f} W, EEE {pw[k]:8.2f} W, saved {bw[k] - pw[k]:6.2f} W"
        for k in bw
    ]
    details.append(
        "paper: 1,985 W system, 93.7 W saved (4.72 %), 21.3-21.9 W per switch (64.8 W in all), "
        "the rest in the nodes (their NICs); run time 342.79 -> 342.76 s. The node power is "
        "the preset's, derived from that total (docs/config.md)"
    )
    return Check(
        "whole-system",
        "EEE on the whole 16-node 10GBASE-T machine with its nodes (Miwa et al. Fig. 24-25): "
        "light traffic, 16 ranks",
        "saving 93.7 W within 15 %, 4.72 % of system power within 1 point, switch ports' "
        "64.8 W within 10 % and at least 2/3 of the saving; run time within 0.5 %",
        f"{bw['total']:.0f} W system; saved {saved:.1f} W ({pct:.2f} %), switch ports "
        f"{switch_saved:.1f} W ({100 * switch_saved / saved:.0f} %); run time {slow:+.3f} %",
        ok,
        details,
        panels=_whole_system_panels(saved, switch_saved, pct, slow),
    )


#: Miwa et al. Fig. 24-25: run time 342.79 s always on, 342.76 s with EEE.
PAPER_WHOLE_SYSTEM_RUN_S = (342.79, 342.76)


def _whole_system_panels(saved_w: float, switch_w: float, pct: float, slow: float) -> list[Panel]:
    """The power saved, its share and the run time change beside Fig. 24-25's."""
    paper_slow = pct_change(PAPER_WHOLE_SYSTEM_RUN_S[1], PAPER_WHOLE_SYSTEM_RUN_S[0])
    return [
        Panel(
            "power saved",
            "",
            "power saved (W)",
            ["whole system", "switch ports"],
            [
                Series("simulated", [saved_w, switch_w]),
                Series("paper", [WHOLE_SYSTEM_SAVED_W, WHOLE_SYSTEM_SWITCH_W], target=True),
            ],
        ),
        Panel(
            "share and cost",
            "",
            "share (%)",
            ["system power saved", "run time change"],
            [
                Series("simulated", [pct, slow]),
                Series("paper", [WHOLE_SYSTEM_PCT, paper_slow], target=True),
            ],
        ),
    ]
