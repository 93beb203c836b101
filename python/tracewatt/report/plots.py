"""Figures of one run's results, as matplotlib figures (``Results.plot.<figure>()``).

Figures are built on the Agg canvas directly (no pyplot): nothing global changes, figures are
independent of any interactive backend, and they are safe to draw from several threads. Every
figure keeps the numbers it drew: an axis' bars and lines are the results' own values, so a test
(or a reader) can check a figure against the tables it came from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from tracewatt.analysis import tables_span_s
from tracewatt.results import Results

__all__ = [
    "SWEEP_ABSOLUTE_METRICS",
    "SWEEP_SAVING_METRICS",
    "Plotter",
    "SweepGroup",
    "check_figure",
    "energy_breakdown",
    "idle_cdf",
    "lpi_heatmap",
    "power_timeline",
    "sweep_bars",
    "sweep_curves",
    "sweep_groups",
]

#: Width, height of every figure, inches: readable on a laptop screen at 100 dpi.
FIGSIZE = (9.0, 4.5)


def _figure(figsize: tuple[float, float] = FIGSIZE) -> Figure:
    fig = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _components(energy_j: dict[str, float]) -> list[str]:
    return [k for k in energy_j if k != "total"]


def energy_breakdown(results: Results) -> Figure:
    """Energy per component kind (``summary.json`` ``energy_j``), J; beside it the always-on
    baseline's where the results are a ``compare`` output (their summary has ``baseline``).
    The title gives the saving and the slowdown."""
    summary = results.summary
    energy: dict[str, float] = summary["energy_j"]
    baseline = summary.get("baseline", {}).get("energy_j")
    kinds = _components(energy if baseline is None else {**baseline, **energy})
    fig = _figure()
    ax = fig.add_subplot()
    x = np.arange(len(kinds))
    series = (
        [("policy", energy)] if baseline is None else [("baseline", baseline), ("policy", energy)]
    )
    width = 0.8 / len(series)
    for i, (label, values) in enumerate(series):
        heights = [float(values.get(k, 0.0)) for k in kinds]
        offset = (i - (len(series) - 1) / 2) * width
        ax.bar(x + offset, heights, width, label=label)
    ax.set_xticks(x, kinds, rotation=20, ha="right")
    ax.set_ylabel("energy (J)")
    title = f"Energy per component, total {float(energy['total']):.4g} J"
    if baseline is not None:
        saving_pct, slowdown_pct = float(summary["saving_pct"]), float(summary["slowdown_pct"])
        title += (
            f" (baseline {float(baseline['total']):.4g} J):"
            f" saving {saving_pct:.2f} %, slowdown {slowdown_pct:.2f} %"
        )
    ax.set_title(title)
    ax.legend()
    return fig


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
    if baseline is not None and not isinstance(baseline, Results):
        raise TypeError(f"baseline: expected Results or None, got {type(baseline).__name__}")
    timeline = results.timeline
    fig = _figure()
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
    ax.legend(fontsize="small", ncols=2)
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
    fig = _figure()
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
    fig = _figure((9.0, 1.2 + 0.5 * max(len(shares), 1)))
    ax = fig.add_subplot()
    image = ax.imshow(grid, aspect="auto", interpolation="nearest", norm=Normalize(0.0, 100.0))
    ax.set_yticks(np.arange(len(shares)), list(shares))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
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


# ------------------------------------------------------------------ sweeps

#: ``sweep.parquet`` columns the sweep bars draw, with their axis labels: against a baseline
#: variant, then without one.
SWEEP_SAVING_METRICS = (
    ("saving_pct", "machine energy saved (%)"),
    ("link_saving_pct", "link energy saved (%)"),
    ("slowdown_pct", "slowdown (%)"),
)
SWEEP_ABSOLUTE_METRICS = (("energy_j", "energy (J)"), ("makespan_s", "run time (s)"))


@dataclass(frozen=True)
class SweepGroup:
    """The runs of one group of a sweep (``sweep.parquet`` rows, the baseline variant's
    excluded) and how they vary: ``categorical`` and ``numeric`` are the axes with more than one
    value in the group, in spec order (``variant`` counts as a categorical axis where there are
    several variants besides the baseline); ``fixed`` the axes with one value, and that value."""

    name: str
    rows: pd.DataFrame
    categorical: list[str]
    numeric: list[str]
    fixed: dict[str, Any]
    baseline: str | None
    random: bool


def _is_numeric(values: pd.Series) -> bool:
    v = values.dropna().infer_objects()
    return pd.api.types.is_numeric_dtype(v) and not pd.api.types.is_bool_dtype(v)


def sweep_groups(frame: pd.DataFrame, meta: dict[str, Any], axes: list[str]) -> list[SweepGroup]:
    """The groups of a sweep dataset, in dataset order. ``axes`` are its axis columns."""
    baseline = meta.get("baseline")
    modes = {g["name"]: g.get("mode") for g in meta.get("groups", []) if isinstance(g, dict)}
    out = []
    for name, rows in frame.groupby("group", sort=False):
        random = "random" in (meta.get("mode"), modes.get(name))
        policy = rows[rows["variant"] != baseline] if baseline is not None else rows
        categorical, numeric, fixed = [], [], {}
        for axis in axes:
            values = policy[axis].dropna()
            if values.empty:
                continue  # another group's axis
            if values.nunique() == 1:
                fixed[axis] = values.iloc[0]
            elif _is_numeric(values):
                numeric.append(axis)
            else:
                categorical.append(axis)
        if policy["variant"].nunique() > 1:
            categorical.append("variant")
        out.append(
            SweepGroup(
                str(name),
                policy,
                categorical,
                numeric,
                fixed,
                baseline,
                random,
            )
        )
    return out


def _labels(rows: pd.DataFrame, columns: list[str]) -> pd.Series:
    """Each row's values of ``columns`` joined as one label ("" where there are none)."""
    if not columns:
        return pd.Series("", index=rows.index)
    return rows[columns].astype(str).agg(" / ".join, axis=1)


def _fixed_text(fixed: dict[str, Any]) -> str:
    return ", ".join(f"{k} = {v}" for k, v in fixed.items())


def sweep_bars(group: SweepGroup) -> Figure:
    """TraceRP Fig. 2-style grouped bars of one sweep group with no varying numeric axis: a
    panel per metric (saving, link saving and slowdown against the baseline; energy and run time
    without one), the categorical axis with the most values (the later one on a tie) along x, a
    bar per combination of the others. Failed runs draw no bar."""
    metrics = SWEEP_SAVING_METRICS if group.baseline is not None else SWEEP_ABSOLUTE_METRICS
    cats = group.categorical
    # The later axis on a tie: spec order usually puts the machine before the workload.
    along = max(reversed(cats), key=lambda c: group.rows[c].nunique()) if cats else None
    across = [c for c in cats if c != along]
    rows = group.rows.assign(
        _x=_labels(group.rows, [along] if along else []), _bar=_labels(group.rows, across)
    )
    xs, bars = list(dict.fromkeys(rows["_x"])), list(dict.fromkeys(rows["_bar"]))
    fig = _figure((9.0, 2.3 * len(metrics) + 0.8))
    axes = fig.subplots(len(metrics), 1, sharex=True, squeeze=False)[:, 0]
    x = np.arange(len(xs))
    width = 0.8 / len(bars)
    for ax, (column, label) in zip(axes, metrics, strict=True):
        values = rows.set_index(["_x", "_bar"])[column].astype(float)
        for i, bar in enumerate(bars):
            heights = [values.get((label_x, bar), np.nan) for label_x in xs]
            ax.bar(x + (i - (len(bars) - 1) / 2) * width, heights, width, label=bar or None)
        ax.axhline(0.0, color="black", linewidth=0.8)
        ax.set_ylabel(label)
    against = f" against {group.baseline}" if group.baseline is not None else ""
    title = f"{group.name + ': ' if group.name else ''}per {' x '.join(cats) or 'run'}{against}"
    if group.fixed:
        title += f"\n({_fixed_text(group.fixed)})"
    axes[0].set_title(title, fontsize="medium")
    if across:
        fig.legend(
            *axes[0].get_legend_handles_labels(),
            loc="outside lower center",
            fontsize="small",
            ncols=min(len(bars), 4),
            title=" / ".join(across),
        )
    axes[-1].set_xticks(x, xs, rotation=20, ha="right")
    if along:
        axes[-1].set_xlabel(along)
    return fig


def sweep_curves(group: SweepGroup, axis: str) -> Figure:
    """TraceRP Fig. 3-5-style curves of one sweep group: energy and run time against the
    numeric ``axis`` (as % of the baseline variant's where there is one, else J and s), a line
    per combination of the group's other varying axes (in a random sweep, of its categorical
    axes only, drawn as points). Failed runs are left out."""
    others = [a for a in group.categorical + group.numeric if a != axis]
    if group.random:
        others = [a for a in others if a in group.categorical]
    rows = group.rows[group.rows["status"] == "ok"]
    rows = rows.assign(_line=_labels(rows, others)).sort_values(axis, kind="stable")
    if group.baseline is not None:
        panels = [
            (100.0 - rows["saving_pct"], f"energy (% of {group.baseline})"),
            (100.0 + rows["slowdown_pct"], f"run time (% of {group.baseline})"),
        ]
    else:
        panels = [(rows["energy_j"], "energy (J)"), (rows["makespan_s"], "run time (s)")]
    fig = _figure((9.0, 4.0))
    axes = fig.subplots(1, 2)
    x_values = rows[axis].to_numpy(dtype=float)
    log = bool(len(x_values)) and x_values.min() > 0 and x_values.max() >= 100 * x_values.min()
    style = {"marker": "o", "linestyle": "none" if group.random else "-"}
    for ax, (values, label) in zip(axes, panels, strict=True):
        for line, idx in rows.groupby("_line", sort=False).groups.items():
            ax.plot(
                rows.loc[idx, axis].to_numpy(dtype=float),
                values.loc[idx].to_numpy(dtype=float),
                label=str(line) or None,
                **style,
            )
        ax.set_xlabel(axis)
        ax.set_ylabel(label)
        if log:
            ax.set_xscale("log")
    title = f"{group.name + ': ' if group.name else ''}energy and run time against {axis}"
    if group.fixed:
        title += f"\n({_fixed_text(group.fixed)})"
    fig.suptitle(title, fontsize="medium")
    if others:
        fig.legend(
            *axes[0].get_legend_handles_labels(),
            loc="outside right upper",
            fontsize="small",
            title=" / ".join(others),
        )
    return fig


# ------------------------------------------------------------------ validation


def _panel_axes(panel: dict[str, Any], ax: Axes) -> None:
    """One panel of a check's figure (``validate.json``): lines over numeric x, bars over
    labels; simulated series solid, target series dashed with hollow markers (hatched bars)."""
    x_values, series = panel["x"], panel["series"]
    if all(isinstance(x, str) for x in x_values):
        x = np.arange(len(x_values))
        width = 0.8 / max(len(series), 1)
        for i, s in enumerate(series):
            heights = np.array([np.nan if v is None else v for v in s["y"]], dtype=float)
            style: dict[str, Any] = (
                {"fill": False, "hatch": "//", "edgecolor": "black"} if s["target"] else {}
            )
            ax.bar(
                x + (i - (len(series) - 1) / 2) * width, heights, width, label=s["label"], **style
            )
        ax.set_xticks(x, x_values)
        ax.axhline(0.0, color="black", linewidth=0.8)
    else:
        for s in series:
            y = np.array([np.nan if v is None else v for v in s["y"]], dtype=float)
            if s["target"]:
                ax.plot(x_values, y, "--", marker="D", fillstyle="none", label=s["label"])
            else:
                ax.plot(x_values, y, "-", marker="o", label=s["label"])
        if panel["x_log"]:
            ax.set_xscale("log")
    ax.set_title(panel["title"], fontsize="medium")
    ax.set_xlabel(panel["x_label"])
    ax.set_ylabel(panel["y_label"])
    ax.legend(fontsize="x-small")


def check_figure(check: dict[str, Any]) -> Figure:
    """A validation check (a ``validate.json`` record): its panels, two per row."""
    panels = check["panels"]
    ncols = min(len(panels), 2)
    nrows = -(-len(panels) // ncols)
    fig = _figure((9.0, 3.8 * nrows + 0.4))
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for ax, panel in zip(axes, panels, strict=False):
        _panel_axes(panel, ax)
    for ax in axes[len(panels) :]:
        ax.set_visible(False)
    verdict = "passed" if check["passed"] else "FAILED"
    fig.suptitle(f"check {check['id']} ({verdict}): simulated beside target", fontsize="medium")
    return fig
