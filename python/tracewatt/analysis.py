"""Fast screening of link low-power settings from one run's idle intervals.

A link direction that sees an idle interval of length ``g`` under the ``timeout`` policy
(``idle_timeout`` T_o, ``sleep_time`` T_s, ``wake_time`` T_w) wakes once if ``g > T_o`` (unless
the interval is the one that ends the run: no packet follows it) and spends ``g - T_o - T_s`` in
LPI if that is positive. Summing over a run's idle intervals gives, for any
setting at once: the number of wakes, the LPI residency, the link-port energy and the penalty
bound ``wakes x T_w`` (no run can lose more time to wakes than all of them end to end).

Where these figures and a full simulation differ, and why:

- Timing shifts. A wake delays its packet by up to T_w, which moves later traffic: with a fixed
  send schedule the next idle interval is T_w shorter (LPI and energy differ by at most
  ``wakes x T_w x (P_active - P_lpi)``); with self-clocked traffic everything after shifts. If a
  shifted interval crosses T_o, a wake appears or disappears.
- Overlap. The bound counts every wake in full; wakes that overlap each other, or computation,
  cost less, so the simulated slowdown is lower (the EEE paper's point).
- Arrival while sleeping. A packet that finds a link in SLEEPING (``T_o < g <= T_o + T_s``) waits
  for the sleep and the wake; the screening charges only the wake.
- Paired control. A ``paired`` link is idle only when both directions are. With the run's
  ``pair_idle_thresholds`` (``[output] pair_idle = true``) its directions are screened from the
  link's own idle intervals, one wake per link, exactly at the kept thresholds
  (``pairs_exact``); without them, from each direction's intervals alone: it then wakes at most
  as often as the sum of its directions' counts (the bound still holds) and the energy is an
  optimistic estimate (``pairs_exact`` False).
- One class at a time. ``links`` restricts the screening to some link kinds (``node``,
  ``local``, ``global``, ``tree1``, ``torus0``, ...), so each class can get its own setting; the
  saving is then of those links' ports and the bound counts only their wakes.
- Resolution. Counts and totals are exact at the thresholds the run kept
  (``output.idle_thresholds_us``); between them they are interpolated from the log-spaced
  histogram (``exact`` is False in those rows).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from tracewatt.results import Results

_REL = 1e-9


def _over(results: Results, timeout_s: float) -> tuple[np.ndarray, np.ndarray, bool]:
    """Per link direction: count and total length (s) of idle intervals longer than
    ``timeout_s``, and whether that came from an exact threshold."""
    n = len(results.links)
    thr = results.idle_thresholds
    hit = thr[np.isclose(thr["threshold_s"], timeout_s, rtol=_REL, atol=1e-15)]
    if len(hit) == n:
        hit = hit.sort_values("link_id")
        return hit["count"].to_numpy(float), hit["total_s"].to_numpy(float), True
    h = results.idle_hist
    lo = h["bin_lo_s"].to_numpy(float)
    hi = h["bin_hi_s"].to_numpy(float)
    cnt = h["count"].to_numpy(float)
    tot = h["total_s"].to_numpy(float)
    # Bins wholly above the timeout count in full; the bin containing it in proportion to the
    # part above, with the intervals there taken as spread evenly over the bin.
    frac = np.where(lo >= timeout_s, 1.0, 0.0)
    inside = (lo < timeout_s) & (timeout_s < hi) & np.isfinite(hi)
    frac[inside] = (hi[inside] - timeout_s) / (hi[inside] - lo[inside])
    mean_above = np.where(inside, (timeout_s + hi) / 2.0, 0.0)
    c = cnt * frac
    t = np.where(inside, c * mean_above, tot * frac)
    ids = h["link_id"].to_numpy(int)
    count = np.bincount(ids, weights=c, minlength=n)
    total = np.bincount(ids, weights=t, minlength=n)
    return count, total, False


def _trailing_over(results: Results, timeout_s: float) -> np.ndarray:
    """1 for each link direction whose last idle interval (up to the end of the run, with no
    packet after it: it sleeps but never wakes) is longer than ``timeout_s``."""
    trailing = results.links.sort_values("link_id")["trailing_idle_s"].to_numpy(float)
    return (trailing > timeout_s * (1.0 + _REL)).astype(float)


def _paired(
    results: Results, timeout_s: float, count: np.ndarray, total: np.ndarray, woken: np.ndarray
) -> bool:
    """Replaces, in place, the figures of every ``paired`` link direction by its link's (both
    directions idle together: what its state machine sees; one wake per link, charged to its
    lower direction), from ``pair_idle_thresholds`` at an exact threshold. Returns whether
    every paired direction was covered (False: the run kept no such table, or not at this
    timeout)."""
    links = results.links.sort_values("link_id")
    paired = links["control"].to_numpy(str) == "paired" if "control" in links else None
    if paired is None or not paired.any():
        return True
    pairs = results.tables.get("pair_idle_thresholds")
    if pairs is None:
        return False
    hit = pairs[np.isclose(pairs["threshold_s"], timeout_s, rtol=_REL, atol=1e-15)]
    if len(hit) != pairs["pair_id"].nunique():
        return False
    a = hit["link_id_a"].to_numpy(int)
    b = hit["link_id_b"].to_numpy(int)
    on = paired[a]
    a, b = a[on], b[on]
    c = hit["count"].to_numpy(float)[on]
    t = hit["total_s"].to_numpy(float)[on]
    trail = (hit["trailing_idle_s"].to_numpy(float)[on] > timeout_s * (1.0 + _REL)).astype(float)
    for d in (a, b):
        count[d] = c
        total[d] = t
    woken[a] = np.maximum(c - trail, 0.0)
    woken[b] = 0.0
    return True


def _run_sleep_us(results: Results, mask: np.ndarray) -> float:
    """The sleep_time the run's configuration gives the selected link directions; an error if
    they differ."""
    sleep_s = results.links.sort_values("link_id")["sleep_time_s"].to_numpy(float)[mask]
    # Whole picoseconds, as the simulator keeps them, so equal settings compare equal.
    sleeps_us = np.unique(np.rint(sleep_s * 1e12)) / 1e6
    if len(sleeps_us) > 1:
        raise ValueError(
            "the selected links use different sleep times ("
            + ", ".join(f"{x:g}" for x in sleeps_us)
            + " us): screen one link kind at a time, or give the sleep times to screen"
        )
    return float(sleeps_us[0])


def port_power(results: Results) -> tuple[np.ndarray, np.ndarray]:
    """Active and LPI power (W) of the port driving each link direction."""
    links = results.links.sort_values("link_id")
    return links["port_active_w"].to_numpy(), links["port_lpi_w"].to_numpy()


def screen_idle(
    results: Results,
    timeouts_us: Sequence[float],
    wakes_us: Sequence[float],
    sleeps_us: Sequence[float] | None = None,
    links: Sequence[str] | None = None,
) -> pd.DataFrame:
    """One row per (idle_timeout, wake_time, sleep_time) with ``wakes``, ``lpi_s``,
    ``lpi_fraction``, ``link_energy_j``, ``link_saving_pct`` (against always-on ports),
    ``penalty_bound_s``, ``penalty_bound_pct``, ``max_link_wakes``, ``exact``, ``pairs_exact``
    (paired links screened from their own idle intervals), and ``confirm``
    (Pareto-optimal in energy and penalty bound: worth a full simulation). ``links``: only the
    link directions of these kinds (default: all); ``sleeps_us`` defaults to the run's sleep
    time on them."""
    for name, values in (
        ("timeouts_us", timeouts_us),
        ("wakes_us", wakes_us),
        ("sleeps_us", sleeps_us or []),
    ):
        bad = [v for v in values if not (np.isfinite(v) and v >= 0)]
        if bad:
            raise ValueError(f"{name}: times must be non-negative numbers, got {bad}")
    kinds = results.links.sort_values("link_id")["kind"].to_numpy(str)
    mask = np.ones(len(kinds), dtype=bool)
    if links is not None:
        unknown = sorted(set(links) - set(kinds))
        if unknown:
            raise ValueError(
                f"no links of kind {', '.join(unknown)} in this run; it has "
                + ", ".join(sorted(set(kinds)))
            )
        mask = np.isin(kinds, list(links))
    if sleeps_us is None:
        sleeps_us = [_run_sleep_us(results, mask)]
    run_s = results.makespan_s
    active_w, lpi_w = port_power(results)
    active_w, lpi_w = active_w[mask], lpi_w[mask]
    always_on_j = float(active_w.sum() * run_s)
    rows = []
    for to in timeouts_us:
        count, total, exact = _over(results, to * 1e-6)
        count, total = count.copy(), total.copy()
        woken = np.maximum(count - _trailing_over(results, to * 1e-6), 0.0)
        pairs_exact = _paired(results, to * 1e-6, count, total, woken)
        count, total, woken = count[mask], total[mask], woken[mask]
        for ts in sleeps_us:
            lpi = np.maximum(total - count * (to + ts) * 1e-6, 0.0)
            energy = float((active_w * run_s - (active_w - lpi_w) * lpi).sum())
            wakes = float(woken.sum())
            for tw in wakes_us:
                bound = wakes * tw * 1e-6
                rows.append(
                    {
                        "idle_timeout_us": float(to),
                        "wake_time_us": float(tw),
                        "sleep_time_us": float(ts),
                        "wakes": wakes,
                        "max_link_wakes": float(woken.max(initial=0.0)),
                        "lpi_s": float(lpi.sum()),
                        "lpi_fraction": float(lpi.sum() / (run_s * len(lpi))) if run_s > 0 else 0.0,
                        "link_energy_j": energy,
                        "link_saving_pct": 100.0 * (1.0 - energy / always_on_j)
                        if always_on_j
                        else 0.0,
                        "penalty_bound_s": bound,
                        "penalty_bound_pct": 100.0 * bound / run_s if run_s > 0 else 0.0,
                        "exact": exact,
                        "pairs_exact": pairs_exact,
                    }
                )
    df = pd.DataFrame(rows)
    df["confirm"] = _pareto(df["link_energy_j"].to_numpy(), df["penalty_bound_pct"].to_numpy())
    return df


def penalty_bound(wakes: float, wake_time_s: float, run_time_s: float) -> tuple[float, float]:
    """The EEE paper's bound: (seconds, percent of the run)."""
    s = wakes * wake_time_s
    return s, 100.0 * s / run_time_s


def _pareto(energy: np.ndarray, penalty: np.ndarray) -> np.ndarray:
    """True where no other setting is at least as good in both and better in one."""
    n = len(energy)
    keep = np.ones(n, dtype=bool)
    for i in range(n):
        better = (
            (energy <= energy[i])
            & (penalty <= penalty[i])
            & ((energy < energy[i]) | (penalty < penalty[i]))
        )
        keep[i] = not better.any()
    return keep
