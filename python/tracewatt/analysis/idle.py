"""Fast screening of link low-power settings from one run's idle intervals.

A link direction that sees an idle interval of length ``g`` under the ``timeout`` policy
(``idle_timeout`` T_o, ``sleep_time`` T_s, ``wake_time`` T_w) wakes once if ``g > T_o`` (unless
the interval is the one that ends the run: no packet follows it) and spends ``g - T_o - T_s`` in
LPI if that is positive. Summing over a run's idle intervals gives, for any
setting at once: the number of wakes, the LPI residency, the link-port energy and a bound on
the slowdown (below).

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
messages. Routes are the shortest paths of the machine's link graph (twice their
switch-to-switch hops for dragonfly ``valiant`` / ``ugal`` routing). It leaves out a packet
queued behind another route's delayed packet, beyond the sleep + wake time after it, and, with
``machine.credits = "reverse_link"``, a sender held back by a credit a wake delayed (its buffer
full); the credit frames themselves end idle intervals and wake links as packets do.

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
- Resolution. Counts and totals are exact at the thresholds the run kept
  (``output.idle_thresholds_us``); between them they are interpolated from the log-spaced
  histogram (``exact`` is False in those rows).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tracewatt._dependencies import numpy as np
from tracewatt._dependencies import pandas as pd

if TYPE_CHECKING:
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


def _paired_mask(results: Results, control: str | None) -> np.ndarray:
    """Which link directions the candidate setting pairs: all with ``control = "paired"``, none
    with ``"independent"``, the run's own control with None."""
    links = results.links.sort_values("link_id")
    if control is not None:
        return np.full(len(links), control == "paired")
    if "control" not in links:
        return np.zeros(len(links), dtype=bool)
    return np.asarray(links["control"].to_numpy(str) == "paired")


def _paired(
    results: Results,
    timeout_s: float,
    paired: np.ndarray,
    count: np.ndarray,
    total: np.ndarray,
    woken: np.ndarray,
    can_wake: np.ndarray,
) -> bool:
    """Replaces, in place, the figures of every ``paired`` link direction by its link's (both
    directions idle together: what its state machine sees; one wake per link, charged to its
    lower direction, and either direction's packets can meet it), from
    ``pair_idle_thresholds`` at an exact threshold. Returns whether every paired direction was
    covered (False: the run kept no such table, or not at this timeout)."""
    if not paired.any():
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
    can_wake[a] = can_wake[b] = woken[a] > 0
    return True


def _screen_at(
    results: Results, timeout_s: float, paired: np.ndarray, mask: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, bool, bool]:
    """Per link direction at one timeout: idle intervals longer than it (count, total), the
    wakes they make, whether the direction can wake (among ``mask``), whether the figures are
    exact, and whether the paired directions were screened from their links' intervals."""
    count, total, exact = _over(results, timeout_s)
    count, total = count.copy(), total.copy()
    woken = np.maximum(count - _trailing_over(results, timeout_s), 0.0)
    can_wake = (woken > 0) & mask
    pairs_exact = _paired(results, timeout_s, paired, count, total, woken, can_wake)
    return count, total, woken, can_wake & mask, exact, pairs_exact


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


#: Dragonfly routings that may take a non-minimal path (``adaptive`` is UGAL's alias there).
_NON_MINIMAL = frozenset({"valiant", "ugal", "adaptive"})


class _Routes:
    """Every message of a run on its route: the sender node's uplink and the receiver node's
    downlink (link ids; -1 within a node), the reverse route's (a rendezvous clear-to-send),
    and its switch-to-switch hops by link kind along a shortest path of the link graph."""

    def __init__(self, results: Results, messages: pd.DataFrame) -> None:
        links = results.links.sort_values("link_id")
        src = links["src"].to_numpy(str)
        dst = links["dst"].to_numpy(str)
        kinds = links["kind"].to_numpy(str)
        ids = links["link_id"].to_numpy(int)
        node_link = kinds == "node"
        from_node = node_link & (links["port"].to_numpy(str) == "nic")
        uplink = {src[i]: ids[i] for i in np.flatnonzero(from_node)}
        downlink = {dst[i]: ids[i] for i in np.flatnonzero(node_link & ~from_node)}
        self.kinds = sorted(set(kinds[~node_link]))
        kind_ix = {k: i for i, k in enumerate(self.kinds)}
        adj: dict[str, list[tuple[str, int]]] = {}
        for i in np.flatnonzero(~node_link):
            adj.setdefault(src[i], []).append((dst[i], kind_ix[kinds[i]]))
        ranks = results.ranks
        node_of = {
            (j, r): f"n{n}"
            for j, r, n in zip(ranks["job"], ranks["rank"], ranks["node"], strict=True)
        }
        index_of = {key: i for i, key in enumerate(node_of)}
        self.n_ranks = len(node_of)
        jobs = messages["job"].to_numpy(str)
        s_keys = list(zip(jobs, messages["src_rank"].to_numpy(int), strict=True))
        d_keys = list(zip(jobs, messages["dst_rank"].to_numpy(int), strict=True))
        self.src = np.array([index_of[k] for k in s_keys], dtype=np.int64)
        self.dst = np.array([index_of[k] for k in d_keys], dtype=np.int64)
        s_node = [node_of[k] for k in s_keys]
        d_node = [node_of[k] for k in d_keys]
        remote = np.array([a != b for a, b in zip(s_node, d_node, strict=True)], dtype=bool)

        def pick(table: dict[str, int], nodes: list[str]) -> np.ndarray:
            # Typed, so a run without messages still gives integer (empty) link ids.
            ids = np.array([table.get(n, -1) for n in nodes], dtype=np.int64)
            return np.where(remote, ids, -1)

        self.up, self.down = pick(uplink, s_node), pick(downlink, d_node)
        self.rev_up, self.rev_down = pick(uplink, d_node), pick(downlink, s_node)
        # Switch-to-switch hops per kind, by breadth-first search from each source switch.
        paths: dict[str, dict[str, np.ndarray]] = {}
        self.inner = np.zeros((len(messages), len(self.kinds)))
        dst_of = dict(zip(src[node_link], dst[node_link], strict=True))
        for m in np.flatnonzero(remote):
            a, b = dst_of[s_node[m]], dst_of[d_node[m]]
            if a not in paths:
                paths[a] = _bfs(adj, a, len(self.kinds))
            self.inner[m] = paths[a][b]
        machine = results.config.get("machine", {})
        routing = machine.get("routing", {}).get("algorithm", "")
        if machine.get("topology", {}).get("kind") == "dragonfly" and routing in _NON_MINIMAL:
            # A non-minimal route goes through an intermediate switch: at most two minimal ones.
            self.inner *= 2
        self.start = messages["start_s"].to_numpy(float)
        self.end = messages["end_s"].to_numpy(float)
        eager = results.config.get("mpi", {}).get("eager_limit_bytes", np.inf)
        self.rendezvous = messages["bytes"].to_numpy(float) > eager
        # What the run counted per message and kept threshold (rows with none left out), for
        # wakes delaying a link by up to its longest sleep + wake time.
        self.horizon_s = float((links["sleep_time_s"] + links["wake_time_s"]).max())
        self.met: dict[float, np.ndarray] = {}
        counted = results.tables.get("message_wake_hops")
        if counted is not None:
            for t in results.idle_thresholds["threshold_s"].unique():
                rows = counted[counted["threshold_s"] == t]
                met = np.zeros(len(messages))
                met[rows["message"].to_numpy(int)] = rows["hops"].to_numpy(float)
                self.met[float(t)] = met

    def hops(
        self, can_wake: np.ndarray, kind_can_wake: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Per message, the hops of its route (and of the reverse route) whose links can wake:
        ``can_wake`` per link id for the node links, ``kind_can_wake`` per switch-link kind."""
        inner = self.inner @ kind_can_wake.astype(float)

        def at(ids: np.ndarray) -> np.ndarray:
            return np.where(ids >= 0, can_wake[np.maximum(ids, 0)], False).astype(float)

        return at(self.up) + at(self.down) + inner, at(self.rev_up) + at(self.rev_down) + inner

    def delays(
        self, timeout_s: float, can_wake: np.ndarray, kind_can_wake: np.ndarray, counted: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per message, the wake hops of a rendezvous request ``a``, its clear-to-send ``r`` and
        its data or an eager message ``b`` (see :meth:`chain`): from the routes, and no more
        than the run counted for the message (``message_wake_hops``) at the largest threshold it
        kept at or below this timeout (a gap longer than the timeout is longer than that
        threshold too; a rendezvous message's three phases are then one sum, in ``r``), if
        ``counted``."""
        fwd, rev = self.hops(can_wake, kind_can_wake)
        below = [t for t in self.met if t <= timeout_s * (1.0 + _REL)]
        if not (below and counted):
            return fwd, rev, fwd
        met = self.met[max(below)]
        rdv = self.rendezvous
        r = np.where(rdv, np.minimum(met, 2.0 * fwd + rev), 0.0)
        return np.zeros_like(fwd), r, np.where(rdv, 0.0, np.minimum(met, fwd))

    def chain(self, a: np.ndarray, r: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The largest delay any rank accumulates along the messages it waits for, per column
        of the per-message delays (messages, settings): an eager message delays its receiver
        by ``b``; a rendezvous message's request by ``a``, its clear-to-send (on the return
        route; the sender waits for it) by ``r``, and its data by ``b``."""
        n = len(self.src)
        delay = np.zeros((self.n_ranks, b.shape[1]))
        snap = np.zeros_like(b)
        # Arrivals before sends at the same instant: a rank's send then carries what it received.
        times = np.concatenate([self.end, self.start])
        order = np.lexsort((np.repeat([0, 1], n), times))
        for e in order:
            if e >= n:
                m = e - n
                snap[m] = delay[self.src[m]]
                continue
            d, s = self.dst[e], self.src[e]
            if self.rendezvous[e]:
                cts = np.maximum(snap[e] + a[e], delay[d]) + r[e]
                np.maximum(delay[s], cts, out=delay[s])
                np.maximum(delay[d], cts + b[e], out=delay[d])
            else:
                np.maximum(delay[d], snap[e] + b[e], out=delay[d])
        return np.asarray(delay.max(axis=0, initial=0.0), dtype=float)


def _bfs(adj: dict[str, list[tuple[str, int]]], start: str, n_kinds: int) -> dict[str, np.ndarray]:
    """Hops per link kind on a shortest path from ``start`` to every reachable switch."""
    seen = {start: np.zeros(n_kinds)}
    frontier = [start]
    while frontier:
        nxt = []
        for u in frontier:
            for v, k in adj.get(u, ()):
                if v not in seen:
                    hops = seen[u].copy()
                    hops[k] += 1
                    seen[v] = hops
                    nxt.append(v)
        frontier = nxt
    return seen


def port_power(results: Results) -> tuple[np.ndarray, np.ndarray]:
    """Active and LPI power (W) of the port driving each link direction."""
    links = results.links.sort_values("link_id")
    return links["port_active_w"].to_numpy(), links["port_lpi_w"].to_numpy()


def refresh_share(results: Results) -> np.ndarray:
    """Per link direction, the share of LPI spent refreshing at active power
    (``refresh_time / refresh_period``; 0 without refreshes)."""
    links = results.links.sort_values("link_id")
    if "refresh_period_s" not in links:  # results written before the columns existed
        return np.zeros(len(links))
    period = links["refresh_period_s"].to_numpy(float)
    refresh = links["refresh_time_s"].to_numpy(float)
    share: np.ndarray = np.divide(refresh, period, out=np.zeros(len(links)), where=period > 0)
    return share


#: The run's tables :func:`screen_idle` reads (every run writes them).
SCREEN_TABLES = ("links", "idle_hist", "idle_thresholds", "ranks")


def tables_span_s(results: Results) -> float:
    """The time a run's tables cover, from 0: the whole replay. With a trace window that is up
    to the window's end (``summary["window"]["end_s"]``), while the summary's makespan and
    energy are the window's own; the link and idle tables hold every interval from 0."""
    window = results.summary.get("window")
    return float(window["end_s"]) if window else results.makespan_s


def screen_idle(
    results: Results,
    timeouts_us: Sequence[float],
    wakes_us: Sequence[float],
    sleeps_us: Sequence[float] | None = None,
    links: Sequence[str] | None = None,
    control: str | None = None,
) -> pd.DataFrame:
    """One row per (idle_timeout, wake_time, sleep_time) with ``wakes``, ``lpi_s``,
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
    for name, values in (
        ("timeouts_us", timeouts_us),
        ("wakes_us", wakes_us),
        ("sleeps_us", sleeps_us),
    ):
        if values is None:
            continue
        if not len(values):
            raise ValueError(f"{name}: expected at least one time")
        bad = [v for v in values if not (np.isfinite(v) and v >= 0)]
        if bad:
            raise ValueError(f"{name}: times must be non-negative numbers, got {bad}")
    if control not in (None, "paired", "independent"):
        raise ValueError(f"control: expected paired or independent, got {control!r}")
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
    paired = _paired_mask(results, control)
    messages = results.tables.get("messages")
    routes = _Routes(results, messages) if messages is not None else None
    run_s = tables_span_s(results)
    active_w, lpi_w = port_power(results)
    active_w, lpi_w = active_w[mask], lpi_w[mask]
    # Refreshes at their mean rate: a stretch of LPI holds floor(len / period) of them, so this
    # overestimates their energy by under one refresh per stretch, and the row is not exact.
    refresh = refresh_share(results)[mask]
    always_on_j = float(active_w.sum() * run_s)
    # The bound is priced at the screened timeouts, and at the kept thresholds below them (and
    # 0, every idle interval): where a delayed schedule moves the threshold a gap must pass.
    kept = sorted(float(t) for t in results.idle_thresholds["threshold_s"].unique())
    floors = sorted({0.0, *(t for t in kept if t <= max(timeouts_us, default=0.0) * 1e-6)})
    levels = [to * 1e-6 for to in timeouts_us] + floors
    figures = [_screen_at(results, t, paired, mask) for t in levels]
    wakes_at = np.array([float(f[2][mask].sum()) for f in figures])
    if routes is not None:
        kind_of = [kinds == k for k in routes.kinds]

        def chains(counted: bool) -> np.ndarray:
            phases = [
                routes.delays(
                    t, f[3], np.array([f[3][k].any() for k in kind_of], dtype=bool), counted
                )
                for t, f in zip(levels, figures, strict=True)
            ]
            if not len(routes.src):
                return np.zeros(len(levels))
            return routes.chain(*(np.stack(x, axis=1) for x in zip(*phases, strict=True)))

        longest_us = max(wakes_us, default=0.0) + max(sleeps_us, default=0.0)
        within = chains(True)
        beyond = within if longest_us * 1e-6 <= routes.horizon_s else chains(False)
    else:
        within = beyond = np.full(len(levels), np.nan)

    def price(col: int, chain: np.ndarray, d_s: float) -> tuple[float, int]:
        """The bound (s) for a wake + sleep of ``d_s`` and the level it is priced at: every
        delay is at most the bound, so a gap grows by at most that much and a wake needs a gap
        longer than the timeout less the bound; down to the level where that holds."""
        at, bound = col, 0.0
        while True:
            met = wakes_at[at] if np.isnan(chain[at]) else min(chain[at], wakes_at[at])
            bound = max(bound, float(met) * d_s)
            need = max(levels[col] - bound, 0.0) * (1.0 + _REL)
            lower = max(len(timeouts_us) + i for i, t in enumerate(floors) if t <= need)
            if bound == 0.0 or levels[lower] >= levels[at]:
                return bound, at
            at = lower

    rows = []
    for col, to in enumerate(timeouts_us):
        count, total, woken, _, exact, pairs_exact = figures[col]
        count, total, woken = count[mask], total[mask], woken[mask]
        for ts in sleeps_us:
            lpi = np.maximum(total - count * (to + ts) * 1e-6, 0.0)
            energy = float((active_w * run_s - (active_w - lpi_w) * lpi * (1.0 - refresh)).sum())
            for tw in wakes_us:
                d_s = (tw + ts) * 1e-6
                counts_hold = routes is not None and d_s <= routes.horizon_s * (1.0 + _REL)
                chain = within if counts_hold else beyond
                bound, at = price(col, chain, d_s)
                rows.append(
                    {
                        "idle_timeout_us": float(to),
                        "wake_time_us": float(tw),
                        "sleep_time_us": float(ts),
                        "wakes": wakes_at[col],
                        "max_link_wakes": float(woken.max(initial=0.0)),
                        "lpi_s": float(lpi.sum()),
                        "lpi_fraction": float(lpi.sum() / (run_s * len(lpi))) if run_s > 0 else 0.0,
                        "link_energy_j": energy,
                        "link_saving_pct": 100.0 * (1.0 - energy / always_on_j)
                        if always_on_j
                        else 0.0,
                        "chain_wakes": float(chain[at]),
                        "bound_threshold_us": levels[at] * 1e6,
                        "penalty_bound_s": bound,
                        "penalty_bound_pct": 100.0 * bound / run_s if run_s > 0 else 0.0,
                        "bound": "wake_sum" if routes is None else "critical_path",
                        "exact": exact and not refresh.any(),
                        "paired": int((paired & mask).sum()),
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
