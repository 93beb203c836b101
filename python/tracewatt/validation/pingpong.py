"""Check 1: EEE ping-pong latency (Miwa et al., Fig. 7)."""

from __future__ import annotations

from tracewatt.validation.common import (
    TIMEOUT_US,
    WAKE_US,
    Check,
    Panel,
    Series,
    pingpong_doc,
    run_all,
)


def _pingpong_added_us(control: str, interval_us: float, eee_links: int, share: float) -> float:
    """The round trip's target increase over EEE off: above idle_timeout a wake per EEE link
    (paired) or per EEE link direction traversed (independent), in ``share`` of the rounds."""
    per_link = 1 if control == "paired" else 2
    return per_link * eee_links * WAKE_US * share if interval_us > TIMEOUT_US else 0.0


def check_pingpong() -> Check:
    """Round-trip time flat below idle_timeout; above it one wake_time more per EEE link
    (paired) or per EEE link direction traversed (independent)."""
    rounds = 40
    share = (rounds - 1) / rounds  # the first round finds the links fresh from t = 0
    single = {"kind": "single_switch", "nodes": 2}
    intervals = [100.0, 300.0, 500.0, 700.0, 1000.0, 1500.0, 2000.0]
    eee_sets: list[list[int]] = [[], [0], [0, 1]]
    cases = [(c, i, e) for c in ("paired", "independent") for i in intervals for e in range(3)]
    res = run_all([pingpong_doc(single, [0, 1], i, rounds, c, eee_sets[e]) for c, i, e in cases])
    rtt = {
        k: 2.0 * r.summary["messages"]["latency_mean_s"] for k, r in zip(cases, res, strict=True)
    }
    details, ok = [], True
    for c, i, e in cases:
        if e == 0:
            continue
        want_us = _pingpong_added_us(c, i, e, share)
        got_us = (rtt[(c, i, e)] - rtt[(c, i, 0)]) * 1e6
        good = abs(got_us - want_us) < 1e-3
        ok &= good
        details.append(
            f"{c:11} interval {i:6.0f} us, EEE on {e} link(s): RTT +{got_us:7.3f} us "
            f"(target +{want_us:7.3f}) {'ok' if good else 'FAIL'}"
        )
    return Check(
        "1",
        "EEE ping-pong round trip (Miwa et al. Fig. 7)",
        "flat below 600 us; above it +17 us per EEE link (paired), +34 us (independent)",
        "as targeted in every case" if ok else "mismatch, see details",
        ok,
        details,
        panels=_pingpong_panels(intervals, rtt, share),
    )


#: Miwa et al. Fig. 7 (docs/references.md section 1): the response time at a 2 ms send interval rose
#: 24 us with EEE on one link and 18 us more with EEE on both.
PAPER_RTT_ADDED_US = {1: 24.0, 2: 42.0}
PAPER_RTT_INTERVAL_US = 2000.0


def _pingpong_panels(
    intervals: list[float], rtt: dict[tuple[str, float, int], float], share: float
) -> list[Panel]:
    """Round-trip time against the send interval for 0, 1 and 2 EEE links, per control mode,
    beside the check's target and (paired, as the paper's links) the paper's points."""
    panels = []
    for c in ("paired", "independent"):
        off_us = [rtt[(c, i, 0)] * 1e6 for i in intervals]
        series = [
            Series(f"EEE on {e} link(s)", [rtt[(c, i, e)] * 1e6 for i in intervals])
            for e in range(3)
        ]
        series += [
            Series(
                f"target, {e} link(s)",
                [
                    o + _pingpong_added_us(c, i, e, share)
                    for o, i in zip(off_us, intervals, strict=True)
                ],
                target=True,
            )
            for e in (1, 2)
        ]
        if c == "paired":  # the paper's 10GBASE-T links sleep in pairs
            series += [
                Series(
                    f"paper Fig. 7, {e} link(s): EEE off +{added:g} us",
                    [
                        o + added if i == PAPER_RTT_INTERVAL_US else None
                        for o, i in zip(off_us, intervals, strict=True)
                    ],
                    target=True,
                )
                for e, added in PAPER_RTT_ADDED_US.items()
            ]
        panels.append(
            Panel(f"{c} control", "send interval (us)", "round-trip time (us)", intervals, series)
        )
    return panels
