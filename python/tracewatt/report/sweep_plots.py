"""Figures of a sweep's groups of runs (``sweep.parquet``): grouped bars over categorical axes and
curves against numeric ones."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tracewatt import _format
from tracewatt._dependencies import numpy as np
from tracewatt._dependencies import pandas as pd
from tracewatt.report.plots import new_figure

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from tracewatt.sweep.dataset import SweepGroup


#: ``sweep.parquet`` columns the sweep bars draw, with their axis labels: against a baseline
#: variant, then without one.
SWEEP_SAVING_METRICS = (
    ("saving_pct", "machine energy saved (%)"),
    ("link_saving_pct", "link energy saved (%)"),
    ("slowdown_pct", "slowdown (%)"),
)
SWEEP_ABSOLUTE_METRICS = (("energy_j", "energy (J)"), ("makespan_s", "run time (s)"))


def _labels(rows: pd.DataFrame, columns: list[str]) -> pd.Series:
    """Each row's values of ``columns`` joined as one label ("" where there are none)."""
    if not columns:
        return pd.Series("", index=rows.index)
    return rows[columns].astype(str).agg(" / ".join, axis=1)


def _in_unit(values: pd.Series, label: str) -> tuple[float, str]:
    """The scale and axis label that show ``values`` in the unit the command line prints their
    largest in (``run time (ms)`` for 0.002634 s); a label in J or s only, others as given."""
    for unit in ("J", "s"):
        if label.endswith(f"({unit})"):
            finite = values.dropna().abs()
            scale, prefixed = _format.unit_scale(float(finite.max()) if len(finite) else 0.0, unit)
            return scale, f"{label.removesuffix(f'({unit})')}({prefixed})"
    return 1.0, label


def _fixed_text(group: SweepGroup) -> str:
    return ", ".join(f"{group.labels.get(k, k)} = {v}" for k, v in group.fixed.items())


def _named(group: SweepGroup, axes: list[str]) -> str:
    """The axes as a reader names them: ``machine and workload``."""
    names = [group.labels.get(a, a) for a in axes]
    return " and ".join(names) if len(names) < 3 else ", ".join(names[:-1]) + " and " + names[-1]


def _mark_zeros(ax: Axes, x: np.ndarray, heights: list[float]) -> None:
    """A bar of exactly zero draws nothing: a small "0" at its place tells it from a missing
    (failed) run, which draws nothing either."""
    for xi, h in zip(x, heights, strict=True):
        if h == 0.0:
            ax.annotate(
                "0",
                (xi, 0.0),
                xytext=(0, 2),
                textcoords="offset points",
                ha="center",
                va="bottom",
                fontsize="x-small",
            )


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
    fig = new_figure((9.0, 2.3 * len(metrics) + 0.8))
    axes = fig.subplots(len(metrics), 1, sharex=True, squeeze=False)[:, 0]
    x = np.arange(len(xs))
    width = 0.8 / len(bars)
    for ax, (column, given) in zip(axes, metrics, strict=True):
        scale, label = _in_unit(rows[column].astype(float), given)
        values = rows.set_index(["_x", "_bar"])[column].astype(float) / scale
        for i, bar in enumerate(bars):
            heights = [float(values.get((label_x, bar), np.nan)) for label_x in xs]
            at = x + (i - (len(bars) - 1) / 2) * width
            ax.bar(at, heights, width, label=bar or None)
            _mark_zeros(ax, at, heights)
        ax.axhline(0.0, color="black", linewidth=0.8)
        ax.set_ylabel(label)
    against = f", against {group.baseline}" if group.baseline is not None else ""
    title = f"{group.name + ': ' if group.name else ''}per {_named(group, cats) or 'run'}{against}"
    if group.fixed:
        title += f"\n({_fixed_text(group)})"
    axes[0].set_title(title, fontsize="medium")
    if across:
        fig.legend(
            *axes[0].get_legend_handles_labels(),
            loc="outside lower center",
            fontsize="small",
            ncols=min(len(bars), 4),
            title=" / ".join(group.labels.get(a, a) for a in across),
        )
    axes[-1].set_xticks(x, xs, rotation=20, ha="right")
    if along:
        axes[-1].set_xlabel(group.labels.get(along, along))
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
    fig = new_figure((9.0, 4.0))
    axes = fig.subplots(1, 2)
    x_values = rows[axis].to_numpy(dtype=float)
    log = bool(len(x_values)) and x_values.min() > 0 and x_values.max() >= 100 * x_values.min()
    style = {"marker": "o", "linestyle": "none" if group.random else "-"}
    for ax, (values, given) in zip(axes, panels, strict=True):
        scale, label = _in_unit(values.astype(float), given)
        for line, idx in rows.groupby("_line", sort=False).groups.items():
            ax.plot(
                rows.loc[idx, axis].to_numpy(dtype=float),
                values.loc[idx].to_numpy(dtype=float) / scale,
                label=str(line) or None,
                **style,
            )
        ax.set_xlabel(group.labels.get(axis, axis))
        ax.set_ylabel(label)
        if log:
            ax.set_xscale("log")
    name = group.labels.get(axis, axis)
    title = f"{group.name + ': ' if group.name else ''}energy and run time against {name}"
    if group.fixed:
        title += f"\n({_fixed_text(group)})"
    fig.suptitle(title, fontsize="medium")
    if others:
        fig.legend(
            *axes[0].get_legend_handles_labels(),
            loc="outside right upper",
            fontsize="small",
            title=" / ".join(group.labels.get(a, a) for a in others),
        )
    return fig
