"""Fast screening of link low-power settings from one run's idle intervals.

A link direction that sees an idle interval of length ``g`` under the ``timeout`` policy
(``idle_timeout`` T_o, ``sleep_time`` T_s, ``wake_time`` T_w) wakes once if ``g > T_o`` (unless
the interval is the one that ends the run: no packet follows it) and spends ``g - T_o - T_s`` in
LPI if that is positive. Summing over a run's idle intervals gives, for any setting at once:
the number of wakes, the LPI residency, the link-port energy and a bound on the slowdown
(below). The arithmetic is the Rust core's (``tracewatt-screen``, with the link
state machine's own LPI and energy formulas); this module reads the run's tables for it.

The penalty bound. A packet that finds a link asleep waits at most ``T_s + T_w`` (the rest of
the sleep, then the wake) per hop. With the run's messages (``[output] messages = true``) the
bound follows each rank's critical path. A message can meet a wake only on a hop where its
packets start after an idle gap longer than T_o, or follow such a packet within the run's
longest sleep + wake time (the run counts these per message: ``message_wake_hops``;
elsewhere, or for one link class, also the hops of its route whose link can sleep at this
timeout, the smaller count), so ``w(m)`` = those hops x (T_s + T_w). A rank's delay grows
along the messages it waits for, ``D[dst] = max(D[dst], D[src] at the send + w(m))`` in the
order of the run (a rendezvous message is request, clear-to-send and data:
``C = max(D[src] + w(m), D[dst]) + w(return)``, then ``D[src] >= C`` and
``D[dst] >= C + w(m)``), and the makespan grows by at most ``B = max over ranks of D``. A
delayed schedule stretches a gap by at most ``B``, so new wakes need a gap longer than
``T_o - B``: the bound is priced again at the kept threshold below that, until it stops
moving (``bound_threshold_us``). It is also never more than every wake end to end
(``wakes x (T_s + T_w)``, the EEE paper's bound), which is what is left without the
messages. Routes are the ones the run's packets took (the messages table's ``hops_<class>``:
per link class, the most links of that class one packet of the message, or of its rendezvous
request or clear-to-send, crossed), so adaptive, Valiant and UGAL routes count as taken.
It leaves out a packet queued behind another route's delayed packet, beyond the sleep + wake
time after it, and, with ``machine.credits = "reverse_link"``, a sender held back by a credit
a wake delayed (its buffer full); the credit frames themselves end idle intervals and wake
links as packets do.

Where these figures and a full simulation differ, and why:

- Timing shifts. A wake delays its packet by up to T_w, which moves later traffic: with a fixed
  send schedule the next idle interval is T_w shorter (LPI and energy differ by at most
  ``wakes x T_w x (P_active - P_lpi)`` per direction a wake wakes: twice that for a ``paired``
  link, whose wake wakes both); with self-clocked traffic everything after shifts. If a
  shifted interval crosses T_o, a wake appears or disappears.
- Refreshes. LPI's refreshes (``refresh_time`` at active power every ``refresh_period``) are
  priced at their mean rate; a stretch of LPI holds ``floor(length / period)`` of them, so the
  energy is high by under one refresh per stretch, and rows of links with refreshes are not
  ``exact``.
- Overlap. The bound counts every wake on a critical path in full; wakes that overlap each
  other, or computation, cost less, so the simulated slowdown is lower (the EEE paper's point).
- Arrival while sleeping. A packet that finds a link in SLEEPING (``T_o < g <= T_o + T_s``) waits
  for the sleep and the wake; the screening charges only the wake.
- Paired control. A ``paired`` link is idle only when both directions are. The candidate
  control is the run's (``links.parquet`` ``control``) unless ``control`` names one for every
  screened link. With the run's ``pair_idle_thresholds`` (``[output] pair_idle = true``) paired
  directions are screened from the link's own idle intervals, one wake per link, exactly at the
  kept thresholds (``pairs_exact``); without them, from each direction's intervals alone: it
  then wakes at most as often as the sum of its directions' counts (the bound still holds) and
  the energy is an optimistic estimate (``pairs_exact`` False).
- One class at a time. ``links`` restricts the screening to some link kinds (``node``,
  ``local``, ``global``, ``tree1``, ``torus0``, ...), so each class can get its own setting; the
  saving is then of those links' ports and the bound counts only their wakes.
- Policies. Only policies whose decision to sleep depends on the gap alone follow from the
  intervals of a run they did not shape: ``timeout`` and ``oracle`` (:data:`SCREENED_POLICIES`).
  The oracle knows every gap: it sleeps at the start of each one longer than the break-even
  time ``T_s + T_w`` and wakes ``T_w`` before it ends, so no packet waits (penalty bound 0,
  ``bound`` ``no_delay``) and a gap ``g`` spends ``g - T_s - T_w`` in LPI; the gap that ends the
  run, slept when past break-even too, needs no wake: ``g - T_s``. Its rows' timeout is the
  break-even time. The screen prices the PHY's deep sleep alone: with a fast-wake depth
  configured the simulated oracle picks the better depth per gap, and can save more. The
  others decide from what they have seen (``adaptive``), from the delays they cause
  (``perfbound``), or from the MPI calls they forecast (``predictive``): only a simulation
  prices them (``tracewatt compare --policies``).
- Resolution. Counts and totals are exact at the thresholds the run kept
  (``output.idle_thresholds_us``); between them they are interpolated from the log-spaced
  histogram (``exact`` is False in those rows).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tracewatt import _tracewatt
from tracewatt._dependencies import numpy as np
from tracewatt._dependencies import pandas as pd

if TYPE_CHECKING:
    from tracewatt.results import Results

#: The run's tables :func:`screen_idle` reads (every run writes them).
SCREEN_TABLES = ("links", "idle_hist", "idle_thresholds", "ranks")

#: The link policies :func:`screen_idle` can screen: those whose decision to sleep depends on
#: the idle gap alone.
SCREENED_POLICIES = ("timeout", "oracle")


class UnscreenablePolicy(ValueError):
    """A link policy the screening cannot price from one run's idle intervals."""

    def __init__(self, policy: str) -> None:
        super().__init__(
            f"cannot screen the link policy {policy!r}: screening prices only "
            f"{' and '.join(SCREENED_POLICIES)}, whose decision to sleep depends on the idle "
            f"gap alone; compare it by simulation (tracewatt compare CONFIG --policies "
            f"{policy})"
        )
        self.policy = policy


def tables_span_s(results: Results) -> float:
    """The time a run's tables cover, from 0: the whole replay. With a trace window that is up
    to the window's end (``summary["window"]["end_s"]``), while the summary's makespan and
    energy are the window's own; the link and idle tables hold every interval from 0."""
    window = results.summary.get("window")
    return float(window["end_s"]) if window else results.makespan_s


def _paired_mask(links: pd.DataFrame, control: str | None) -> np.ndarray:
    """Which link directions the candidate setting pairs: all with ``control = "paired"``, none
    with ``"independent"``, the run's own control with None."""
    if control is not None:
        return np.full(len(links), control == "paired")
    if "control" not in links:
        return np.zeros(len(links), dtype=bool)
    return np.asarray(links["control"].to_numpy(str) == "paired")


def _run_sleep_us(links: pd.DataFrame, mask: np.ndarray) -> float:
    """The sleep_time the run's configuration gives the selected link directions; an error if
    they differ."""
    sleep_s = links["sleep_time_s"].to_numpy(float)[mask]
    # Whole picoseconds, as the simulator keeps them, so equal settings compare equal.
    sleeps_us = np.unique(np.rint(sleep_s * 1e12)) / 1e6
    if len(sleeps_us) > 1:
        raise ValueError(
            "the selected links use different sleep times ("
            + ", ".join(f"{x:g}" for x in sleeps_us)
            + " us): screen one link kind at a time, or give the sleep times to screen"
        )
    return float(sleeps_us[0])


def _f64(values: Any) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.float64)


def _i64(values: Any) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.int64)


def _flags(values: Any) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.uint8)


def _node_number(names: pd.Series) -> np.ndarray:
    """``n12`` -> 12 (the links table names nodes so)."""
    return _i64(names.str[1:].astype(int))


def _messages(results: Results, links: pd.DataFrame, classes: list[str]) -> dict[str, Any] | None:
    """The run's messages as the core takes them: sender and receiver (rank and node), the node
    links at both ends, the route's switch-to-switch hops per class, the times, the protocol,
    and what the run counted. None without the messages table, or one written without its
    routes (no ``hops_<class>`` columns: the bound then counts every wake)."""
    messages = results.tables.get("messages")
    if messages is None or any(f"hops_{k}" not in messages for k in classes):
        return None
    ranks = results.ranks
    index = pd.MultiIndex.from_arrays([ranks["job"].to_numpy(str), ranks["rank"].to_numpy(int)])
    jobs = messages["job"].to_numpy(str)

    def rank_of(column: str) -> np.ndarray:
        keys = pd.MultiIndex.from_arrays([jobs, messages[column].to_numpy(int)])
        found = index.get_indexer(keys)
        if (found < 0).any():
            raise ValueError(f"messages: a {column} of no rank in the ranks table")
        return _i64(found)

    src, dst = rank_of("src_rank"), rank_of("dst_rank")
    node = ranks["node"].to_numpy(int)
    nic = links[(links["kind"] == "node") & (links["port"] == "nic")]
    switch = links[(links["kind"] == "node") & (links["port"] != "nic")]
    up_node, down_node = _node_number(nic["src"]), _node_number(switch["dst"])
    nodes = int(max(node.max(initial=-1), up_node.max(initial=-1), down_node.max(initial=-1))) + 1
    uplink, downlink = np.full(nodes, -1, dtype=np.int64), np.full(nodes, -1, dtype=np.int64)
    uplink[up_node] = nic["link_id"].to_numpy(int)
    downlink[down_node] = switch["link_id"].to_numpy(int)
    eager = results.config.get("mpi", {}).get("eager_limit_bytes", np.inf)
    hops = np.zeros((len(messages), len(classes)))
    for i, k in enumerate(classes):
        hops[:, i] = messages[f"hops_{k}"].to_numpy(float)
    counted = results.tables.get("message_wake_hops")
    return {
        "ranks": len(ranks),
        "src": src,
        "dst": dst,
        "src_node": _i64(node[src]),
        "dst_node": _i64(node[dst]),
        "uplink": uplink,
        "downlink": downlink,
        "hops": _f64(hops),
        "classes": len(classes),
        "start_s": _f64(messages["start_s"]),
        "end_s": _f64(messages["end_s"]),
        "rendezvous": _flags(messages["bytes"].to_numpy(float) > eager),
        # Wakes delay a link by up to its sleep + wake time: the run's counts hold that far.
        "horizon_s": float((links["sleep_time_s"] + links["wake_time_s"]).max()),
        "counted": None
        if counted is None
        else {
            "message": _i64(counted["message"]),
            "threshold_s": _f64(counted["threshold_s"]),
            "hops": _f64(counted["hops"]),
        },
    }


def screen_idle(
    results: Results,
    timeouts_us: Sequence[float],
    wakes_us: Sequence[float],
    sleeps_us: Sequence[float] | None = None,
    links: Sequence[str] | None = None,
    control: str | None = None,
    policy: str = "timeout",
) -> pd.DataFrame:
    """One row per (idle_timeout, wake_time, sleep_time) of the ``timeout`` policy, or with
    ``policy="oracle"`` one per (wake_time, sleep_time) of the oracle (``timeouts_us`` play no
    part; ``idle_timeout_us`` is the break-even time, the penalty bound 0; see the module's
    notes); another policy raises :class:`UnscreenablePolicy`. Columns: ``wakes``, ``lpi_s``,
    ``lpi_fraction``, ``link_energy_j``, ``link_saving_pct`` (against always-on ports),
    ``chain_wakes`` (the most wakes one rank's critical path can meet; NaN without the run's
    messages), ``bound_threshold_us`` (the idle threshold it is priced at),
    ``penalty_bound_s`` and ``penalty_bound_pct`` (``bound``: ``critical_path`` or, without
    messages, ``wake_sum``), ``max_link_wakes``, ``exact``, ``paired`` (how many of
    the screened directions are paired), ``pairs_exact`` (paired links screened from their own
    idle intervals), and ``confirm`` (Pareto-optimal in energy and penalty bound: worth a full
    simulation). ``links``: only the link directions of these kinds (default: all);
    ``sleeps_us`` defaults to the run's sleep time on them; ``control``: the candidate control
    (``paired`` or ``independent``; default: the run's)."""
    if policy not in SCREENED_POLICIES:
        raise UnscreenablePolicy(policy)
    for name, values in (
        ("timeouts_us", timeouts_us),
        ("wakes_us", wakes_us),
        ("sleeps_us", sleeps_us),
    ):
        if values is None or (name == "timeouts_us" and policy == "oracle"):
            continue
        if not len(values):
            raise ValueError(f"{name}: expected at least one time")
        bad = [v for v in values if not (np.isfinite(v) and v >= 0)]
        if bad:
            raise ValueError(f"{name}: times must be non-negative numbers, got {bad}")
    if control not in (None, "paired", "independent"):
        raise ValueError(f"control: expected paired or independent, got {control!r}")
    table = results.links.sort_values("link_id")
    kinds = table["kind"].to_numpy(str)
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
        sleeps_us = [_run_sleep_us(table, mask)]
    classes = sorted(set(kinds[kinds != "node"]))
    class_of = {k: i for i, k in enumerate(classes)}
    # Results written before the refresh columns existed have no refreshes to price.
    no_refresh = np.zeros(len(table))
    link_columns = {
        "trailing_idle_s": _f64(table["trailing_idle_s"]),
        "active_w": _f64(table["port_active_w"]),
        "lpi_w": _f64(table["port_lpi_w"]),
        "refresh_period_s": _f64(table.get("refresh_period_s", no_refresh)),
        "refresh_time_s": _f64(table.get("refresh_time_s", no_refresh)),
        "class": _i64([class_of.get(k, -1) for k in kinds]),
        "paired": _flags(_paired_mask(table, control)),
        "selected": _flags(mask),
    }
    thr = results.idle_thresholds
    hist = results.idle_hist
    pairs = results.tables.get("pair_idle_thresholds")
    rows = _tracewatt.screen_idle(
        link_columns,
        {
            "link": _i64(thr["link_id"]),
            "threshold_s": _f64(thr["threshold_s"]),
            "count": _f64(thr["count"]),
            "total_s": _f64(thr["total_s"]),
        },
        {
            "link": _i64(hist["link_id"]),
            "lo_s": _f64(hist["bin_lo_s"]),
            "hi_s": _f64(hist["bin_hi_s"]),
            "count": _f64(hist["count"]),
            "total_s": _f64(hist["total_s"]),
        },
        None
        if pairs is None
        else {
            "pairs": int(pairs["pair_id"].nunique()),
            "a": _i64(pairs["link_id_a"]),
            "b": _i64(pairs["link_id_b"]),
            "threshold_s": _f64(pairs["threshold_s"]),
            "count": _f64(pairs["count"]),
            "total_s": _f64(pairs["total_s"]),
            "trailing_idle_s": _f64(pairs["trailing_idle_s"]),
        },
        _messages(results, table, classes),
        tables_span_s(results),
        [float(t) for t in timeouts_us],
        [float(t) for t in wakes_us],
        [float(t) for t in sleeps_us],
        policy == "oracle",
    )
    return pd.DataFrame(rows)


def penalty_bound(wakes: float, wake_time_s: float, run_time_s: float) -> tuple[float, float]:
    """The EEE paper's bound: (seconds, percent of the run)."""
    s = wakes * wake_time_s
    return s, 100.0 * s / run_time_s
