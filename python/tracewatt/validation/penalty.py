"""Check 4: the analytic penalty bound: the paper's arithmetic, and a bound on a simulated
slowdown."""

from __future__ import annotations

from tracewatt.analysis.idle import penalty_bound, screen_idle
from tracewatt.compare import baseline_of, pct_change
from tracewatt.config import Config
from tracewatt.validation.common import (
    TIMEOUT_US,
    WAKE_US,
    Check,
    Panel,
    Series,
    npb_doc,
    run_all,
)


def check_penalty_bound() -> Check:
    """The paper's arithmetic (38,770 x 17 us = 0.659 s = 0.783 % of 84.1 s), and the bound
    computed from an always-on run bounds the simulated slowdown of a workload with compute
    phases (CG class A, 4 nodes x 4 ranks, independent control)."""
    s, pct = penalty_bound(38_770, 17e-6, 84.1)
    # The paper rounds 0.7837 % down to 0.783 %.
    arith_ok = abs(s - 0.659) < 0.0005 and abs(pct - 0.783) < 0.001
    power = {
        "control": "independent",
        "links": {"idle_timeout_us": TIMEOUT_US, "wake_time_us": WAKE_US},
    }
    doc = npb_doc("cg", "A", power)
    eee = Config.from_dict(doc, "<validate>")
    base, pol = run_all([baseline_of(eee).to_dict(), doc])
    screen = screen_idle(base, [TIMEOUT_US], [WAKE_US])
    bound_pct = float(screen["penalty_bound_pct"].iloc[0])
    slowdown = pct_change(pol.makespan_s, base.makespan_s)
    wakes_sim = pol.summary["links"]["wakes"]
    ok = arith_ok and slowdown <= bound_pct and bool(screen["exact"].iloc[0])
    return Check(
        "4",
        "Analytic penalty bound (Miwa et al. Fig. 21-23)",
        "38,770 x 17 us = 0.659 s = 0.783 % of 84.1 s; simulated slowdown <= bound",
        f"{s:.3f} s = {pct:.3f} %; CG.A slowdown {slowdown:.3f} % <= bound {bound_pct:.3f} %",
        ok,
        [
            f"screening: {int(screen['wakes'].iloc[0])} idle intervals > 600 us "
            "in the always-on run; "
            f"the EEE run woke {wakes_sim} times",
        ],
        panels=_penalty_panels(pct, slowdown, bound_pct),
    )


#: Miwa et al.'s penalty bound (Fig. 21-23), % of SP class C's run time.
PAPER_PENALTY_PCT = 0.783


def _penalty_panels(arith_pct: float, slowdown_pct: float, bound_pct: float) -> list[Panel]:
    """The paper's arithmetic beside its figure, and CG.A's slowdown beside its bound."""
    return [
        Panel(
            "penalty bound",
            "",
            "% of run time",
            ["paper: 38,770 wakes x 17 us / 84.1 s", "CG.A: slowdown under its bound"],
            [
                Series("computed / simulated", [arith_pct, slowdown_pct]),
                Series("paper / bound", [PAPER_PENALTY_PCT, bound_pct], target=True),
            ],
        )
    ]
