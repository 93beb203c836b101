"""Figures of one run's results, as matplotlib figures (``Results.plot.<figure>()``).

Figures are built on the Agg canvas directly (no pyplot): nothing global changes, figures are
independent of any interactive backend, and they are safe to draw from several threads. Every
figure keeps the numbers it drew: an axis' bars and lines are the results' own values, so a test
(or a reader) can check a figure against the tables it came from.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tracewatt import _format
from tracewatt._dependencies import matplotlib_agg, matplotlib_colors, matplotlib_figure
from tracewatt._dependencies import matplotlib_ticker as ticker
from tracewatt._dependencies import numpy as np
from tracewatt._dependencies import pandas as pd
from tracewatt.analysis.idle import tables_span_s

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from tracewatt.results import Results

__all__ = [
    "FIGSIZE",
    "Plotter",
    "energy_breakdown",
    "idle_cdf",
    "lpi_heatmap",
    "lpi_share_by_kind",
    "new_figure",
    "power_timeline",
]

#: Width, height of every figure, inches: readable on a laptop screen at 100 dpi.
FIGSIZE = (9.0, 4.5)


def new_figure(figsize: tuple[float, float] = FIGSIZE) -> Figure:
    """An empty figure on its own Agg canvas."""
    fig = matplotlib_figure.Figure(figsize=figsize, layout="constrained")
    matplotlib_agg.FigureCanvasAgg(fig)
    return fig


def _components(energy_j: dict[str, float]) -> list[str]:
    return [k for k in energy_j if k != "total"]


def energy_breakdown(results: Results) -> Figure:
    """Energy per component kind (``summary.json`` ``energy_j``), in the command line's unit
    (J, kJ, ...); beside it the always-on baseline's where the results are a ``compare`` output
    (their summary has ``baseline``), and below, each kind's saving (baseline less policy) on
    its own scale: a node's base power dwarfs the ports whose saving the comparison is about.
    The title gives the saving and the slowdown."""
    summary = results.summary
    energy: dict[str, float] = summary["energy_j"]
    baseline = summary.get("baseline", {}).get("energy_j")
    kinds = _components(energy if baseline is None else {**baseline, **energy})
    fig = new_figure() if baseline is None else new_figure((9.0, 6.5))
    axes = [fig.add_subplot()] if baseline is None else list(fig.subplots(2, 1, sharex=True))
    ax = axes[0]
    x = np.arange(len(kinds))
    series = (
        [("policy", energy)] if baseline is None else [("baseline", baseline), ("policy", energy)]
    )
    largest = max(float(v.get(k, 0.0)) for _, v in series for k in kinds) if kinds else 0.0
    scale, unit = _format.unit_scale(largest, "J")
    width = 0.8 / len(series)
    for i, (label, values) in enumerate(series):
        heights = [float(values.get(k, 0.0)) / scale for k in kinds]
        offset = (i - (len(series) - 1) / 2) * width
        ax.bar(x + offset, heights, width, label=label)
    ax.set_ylabel(f"energy ({unit})")
    title = f"Energy per component, total {_format.joules(float(energy['total']))}"
    if baseline is not None:
        saving_pct, slowdown_pct = float(summary["saving_pct"]), float(summary["slowdown_pct"])
        title += (
            f" (baseline {_format.joules(float(baseline['total']))}):"
            f" saving {saving_pct:.2f} %, slowdown {slowdown_pct:.2f} %"
        )
        _saving_axes(axes[1], x, kinds, baseline, energy)
    ax.set_title(title, fontsize="medium")
    ax.legend()
    axes[-1].set_xticks(x, kinds, rotation=20, ha="right")
    return fig


def _saving_axes(
    ax: Axes, x: np.ndarray, kinds: list[str], baseline: dict[str, float], energy: dict[str, float]
) -> None:
    """Each kind's saving, baseline less policy (negative where the policy spent more), each
    bar labelled with its value."""
    savings = [float(baseline.get(k, 0.0)) - float(energy.get(k, 0.0)) for k in kinds]
    largest = max((abs(v) for v in savings), default=0.0)
    scale, unit = _format.unit_scale(largest, "J")
    bars = ax.bar(x, [v / scale for v in savings], 0.6, color="C2")
    ax.bar_label(bars, [_format.joules(v) for v in savings], fontsize="x-small")
    ax.axhline(0.0, color="black", linewidth=0.8)
    ax.set_ylabel(f"saved ({unit})")
    ax.set_title("Saving per component (baseline less policy)", fontsize="medium")


def _power_columns(timeline: pd.DataFrame) -> list[str]:
    return [c for c in timeline.columns if c.endswith("_w")]


def _steps(timeline: pd.DataFrame, column: str) -> tuple[np.ndarray, np.ndarray]:
    """A step line over the intervals: ms at each interval's start and the last one's end."""
    t_ms = np.append(timeline["t_start_s"].to_numpy(), timeline["t_end_s"].to_numpy()[-1:]) * 1e3
    w = timeline[column].to_numpy()
    return t_ms, np.append(w, w[-1:])


def power_timeline(results: Results, baseline: Results | None = None) -> Figure:
    """Power over time per component (``timeline.parquet``, every ``*_w`` column), W against
    ms; the baseline's total dashed where ``baseline`` is given."""
    # The class of `results`: Results, which this module imports for type checking only.
    if baseline is not None and not isinstance(baseline, type(results)):
        raise TypeError(f"baseline: expected Results or None, got {type(baseline).__name__}")
    timeline = results.timeline
    fig = new_figure()
    ax = fig.add_subplot()
    for column in _power_columns(timeline):
        t_ms, w = _steps(timeline, column)
        ax.step(t_ms, w, where="post", label=column.removesuffix("_w"))
    if baseline is not None and "total_w" in baseline.timeline:
        t_ms, w = _steps(baseline.timeline, "total_w")
        ax.step(t_ms, w, where="post", linestyle="--", color="black", label="baseline total")
    ax.set_xlabel("time (ms)")
    ax.set_ylabel("power (W)")
    ax.set_ylim(bottom=0.0)
    ax.set_title("Power over time")
    # Below the axes: inside, the legend would cover the lines it names.
    fig.legend(loc="outside lower center", fontsize="small", ncols=4)
    return fig


def idle_intervals_by_kind(results: Results) -> pd.DataFrame:
    """The idle-interval histogram summed over the links of each kind: ``kind, bin_hi_s,
    count, total_s``, sorted by kind then bin."""
    hist = results.idle_hist.merge(results.links[["link_id", "kind"]], on="link_id")
    grouped = hist.groupby(["kind", "bin_hi_s"], sort=True)[["count", "total_s"]].sum()
    return grouped.reset_index()


def _share_above_timeout_pct(results: Results, kind: str, timeout_s: float) -> float | None:
    """% of the kind's idle time in intervals longer than ``timeout_s``, exact from
    ``idle_thresholds`` where the timeout is one of its thresholds, else None."""
    if "idle_thresholds" not in results.tables:
        return None
    links = results.links
    ids = links.loc[links["kind"] == kind, "link_id"]
    th = results.idle_thresholds
    above = th[th["link_id"].isin(ids) & np.isclose(th["threshold_s"], timeout_s)]
    idle_s = float(links.loc[links["kind"] == kind, "idle_s"].sum())
    if above.empty or idle_s == 0.0:
        return None
    return 100.0 * float(above["total_s"].sum()) / idle_s


def idle_cdf(results: Results) -> Figure:
    """Cumulative share of idle intervals against their length, one line per link kind, log
    time axis; each kind's ``idle_timeout_s`` dotted, with the share of idle time above it."""
    by_kind = idle_intervals_by_kind(results)
    timeouts = results.links.groupby("kind", sort=True)["idle_timeout_s"].max()
    fig = new_figure()
    ax = fig.add_subplot()
    for i, (kind, rows) in enumerate(by_kind.groupby("kind", sort=True)):
        color = f"C{i}"
        cdf = rows["count"].cumsum().to_numpy() / rows["count"].sum()
        ax.step(rows["bin_hi_s"].to_numpy() * 1e6, cdf, where="post", color=color, label=kind)
        timeout_s = float(timeouts[kind])
        if timeout_s > 0:
            share = _share_above_timeout_pct(results, str(kind), timeout_s)
            note = "" if share is None else f": {share:.1f} % of idle time above"
            ax.axvline(
                timeout_s * 1e6, color=color, linestyle=":", label=f"{kind} idle_timeout{note}"
            )
    ax.set_xscale("log")
    ax.set_xlabel("idle interval (us)")
    ax.set_ylabel("share of idle intervals (cumulative)")
    ax.set_ylim(0.0, 1.0)
    ax.set_title("Idle intervals per link class")
    ax.legend(fontsize="small")
    return fig


def lpi_share_by_kind(results: Results) -> dict[str, np.ndarray]:
    """Per link kind, each link direction's time in LPI as % of the run (of the replay up to a
    trace window's end: the time the links table covers), by link id."""
    links = results.links.sort_values("link_id")
    makespan_s = tables_span_s(results)
    out: dict[str, np.ndarray] = {}
    for kind, rows in links.groupby("kind", sort=True):
        lpi_s = rows["lpi_s"].to_numpy(dtype=float)
        out[str(kind)] = 100.0 * lpi_s / makespan_s if makespan_s > 0 else np.zeros_like(lpi_s)
    return out


def lpi_heatmap(results: Results) -> Figure:
    """Each link direction's LPI share (% of the run) as one cell, a row per link kind, links in
    id order along the row (rows of fewer links end blank)."""
    shares = lpi_share_by_kind(results)
    width = max((len(v) for v in shares.values()), default=0)
    grid = np.full((len(shares), width), np.nan)
    for i, values in enumerate(shares.values()):
        grid[i, : len(values)] = values
    fig = new_figure((9.0, 1.2 + 0.5 * max(len(shares), 1)))
    ax = fig.add_subplot()
    image = ax.imshow(
        grid, aspect="auto", interpolation="nearest", norm=matplotlib_colors.Normalize(0.0, 100.0)
    )
    ax.set_yticks(np.arange(len(shares)), list(shares))
    ax.xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
    ax.set_xlabel("link direction (index within its kind, by link id)")
    ax.set_title("Time in low-power idle per link direction")
    fig.colorbar(image, ax=ax, label="LPI (% of run)")
    return fig


class Plotter:
    """The figures of one run: ``results.plot.energy_breakdown()`` and so on."""

    __slots__ = ("_results",)

    def __init__(self, results: Results) -> None:
        self._results = results

    def energy_breakdown(self) -> Figure:
        return energy_breakdown(self._results)

    def power_timeline(self, baseline: Results | None = None) -> Figure:
        return power_timeline(self._results, baseline)

    def idle_cdf(self) -> Figure:
        return idle_cdf(self._results)

    def lpi_heatmap(self) -> Figure:
        return lpi_heatmap(self._results)
