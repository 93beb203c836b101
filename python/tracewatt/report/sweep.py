"""The report of a sweep: its description, its table of runs and its figures per group."""

from __future__ import annotations

import html
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tracewatt import _format
from tracewatt._dependencies import pandas as pd
from tracewatt.errors import ResultsError
from tracewatt.report import sweep_plots
from tracewatt.report.document import ReportFigure, page, slug
from tracewatt.report.run import setting_rows
from tracewatt.sweep.dataset import axis_labels, read_dataset, sweep_axes, sweep_groups


def load_sweep(directory: str | os.PathLike[str]) -> tuple[pd.DataFrame, dict[str, Any]]:
    """A sweep directory's dataset (``sweep.parquet``) and description (``sweep.json``)."""
    d = Path(directory)
    meta, frame = read_dataset(d)
    missing = [c for c in _SWEEP_COLUMNS if c not in frame.columns]
    if missing:
        raise ResultsError(f"{d / 'sweep.parquet'}: no column {', '.join(missing)}")
    return frame, meta


# The sweep.parquet columns every figure needs.
_SWEEP_COLUMNS = ("group", "variant", "status", "makespan_s", "energy_j")


#: Why a run with EEE can be faster than always-on, said under figures that may show it.
FASTER_CAPTION = (
    " A negative slowdown (a run faster with EEE than always on) is real: wake delays hold some "
    "packets back, which reorders them and changes where they contend in the network; nothing "
    "else differs between the two runs (the simulator draws no random number differently)."
)


def sweep_figures(frame: pd.DataFrame, meta: dict[str, Any]) -> list[ReportFigure]:
    """The figures of a sweep: per group, its grouped bars where no numeric axis varies, and
    its curves against each numeric axis that does."""
    out = []
    baseline = meta.get("baseline")
    for group in sweep_groups(frame, meta, sweep_axes(frame, meta)):
        suffix = f"_{slug(group.name)}" if group.name else ""
        faster = (
            FASTER_CAPTION
            if "slowdown_pct" in group.rows and bool((group.rows["slowdown_pct"] < 0).any())
            else ""
        )
        per = " x ".join(group.labels[c] for c in group.categorical) or "run"
        if not group.numeric:
            out.append(
                ReportFigure(
                    f"sweep_bars{suffix}",
                    (
                        f"Energy saved and time lost against {baseline} per {per}: look for "
                        'tall saving bars over short slowdown bars; "0" marks a bar of zero, '
                        f"a failed run has no bar.{faster}"
                    )
                    if baseline is not None
                    else f"Energy and run time per {per}.",
                    sweep_plots.sweep_bars(group),
                )
            )
        for axis in group.numeric:
            relative = f" relative to {baseline}" if baseline is not None else ""
            out.append(
                ReportFigure(
                    f"sweep_curves{suffix}_{slug(axis)}",
                    f"Energy and run time{relative} against {group.labels[axis]}: the best "
                    "setting is where energy has stopped falling and run time has not started "
                    f"rising.{faster}",
                    sweep_plots.sweep_curves(group, axis),
                )
            )
    return out


def _pct(digits: int) -> Callable[[float], str]:
    return lambda v: f"{v + 0.0:.{digits}f}"


#: How ``tracewatt sweep``'s table and the report's print a sweep's metric columns.
METRIC_FORMATS: dict[str, Callable[[float], str]] = {
    "makespan_s": _format.seconds,
    "energy_j": _format.joules,
    "saving_pct": _pct(2),
    "link_saving_pct": _pct(1),
    "slowdown_pct": _pct(2),
    "link_wakes": _format.count,
}

#: The metric columns of a sweep's table in its report, with their headings (units in them) and
#: how their values print. The dataset holds more (every component).
_SWEEP_TABLE: tuple[tuple[str, str, Callable[[float], str]], ...] = (
    ("makespan_s", "run time", METRIC_FORMATS["makespan_s"]),
    ("energy_j", "energy", METRIC_FORMATS["energy_j"]),
    ("saving_pct", "saving %", METRIC_FORMATS["saving_pct"]),
    ("link_saving_pct", "link saving %", METRIC_FORMATS["link_saving_pct"]),
    ("slowdown_pct", "slowdown %", METRIC_FORMATS["slowdown_pct"]),
    ("link_wakes", "link wakes", METRIC_FORMATS["link_wakes"]),
    ("lpi_share", "LPI %", lambda v: f"{100 * v:.1f}"),
)


def _runs_table(frame: pd.DataFrame, meta: dict[str, Any]) -> str:
    """The runs as an HTML table narrow enough for the page: the axes under their labels, the
    main metrics under short headings; failed runs' errors listed below it."""
    e = html.escape
    axes = sweep_axes(frame, meta)
    labels = axis_labels(meta, axes)
    keys: list[tuple[str, str]] = []
    if frame["group"].astype(bool).any():
        keys.append(("group", "group"))
    keys += [(a, labels[a]) for a in axes]
    if frame["variant"].nunique() > 1:
        keys.append(("variant", "variant"))
    failed = frame["status"] != "ok"
    if failed.any():
        keys.append(("status", "status"))
    metrics = [m for m in _SWEEP_TABLE if m[0] in frame.columns]
    head = "".join(f'<th class="key">{e(h)}</th>' for _, h in keys)
    head += "".join(f"<th>{e(h)}</th>" for _, h, _ in metrics)
    body = []
    for rec in frame.to_dict("records"):
        cells = "".join(f'<td class="key">{e(_cell(rec[k]))}</td>' for k, _ in keys)
        for column, _, fmt in metrics:
            v = rec[column]
            cells += f"<td>{'' if v is None or v != v else e(fmt(v))}</td>"
        body.append(f"<tr>{cells}</tr>\n")
    table = f'<table class="runs">\n<tr>{head}</tr>\n{"".join(body)}</table>\n'
    if failed.any():
        items = "".join(
            f"<li>{e(', '.join(_cell(rec[k]) for k, _ in keys if k != 'status'))}: "
            f"{e(str(rec['error']))}</li>\n"
            for rec in frame[failed].to_dict("records")
        )
        table += f"<p>Failed runs:</p>\n<ul>\n{items}</ul>\n"
    return table


def _cell(v: Any) -> str:
    if v is None or (isinstance(v, float) and v != v):
        return ""
    return f"{v:g}" if isinstance(v, float) else str(v)


#: An axis with more values than this is shown by its span.
_LISTED_VALUES = 12


def _settings(frame: pd.DataFrame, meta: dict[str, Any]) -> list[tuple[str, str]]:
    """What a sweep compares: its base configuration's key settings (machine and scale, jobs,
    power policies; ``sweep.json`` ``base``), what each variant changes, and the values of each
    axis."""
    rows: list[tuple[str, str]] = []
    base = meta.get("base")
    axes = sweep_axes(frame, meta)
    labels = axis_labels(meta, axes)
    if isinstance(base, dict):
        cell = base.get("cell") or {}
        if cell:
            # The base lacks what an axis gives (e.g. the job): shown as the first cell has it.
            given = ", ".join(f"{labels.get(k, k)} = {_cell(v)}" for k, v in cell.items())
            rows.append(("base", f"as the first run completes it ({given})"))
        rows += setting_rows(base["config"], base["machine"])
    sets = meta.get("variant_sets") or {}
    baseline = meta.get("baseline")
    for name in meta.get("variants", []):
        changes = ", ".join(f"{k} = {_cell(v)}" for k, v in (sets.get(name) or {}).items())
        role = " (the baseline)" if name == baseline else ""
        rows.append((f"variant {name}{role}", changes or "the base configuration as it is"))
    for a in axes:
        values = list(dict.fromkeys(frame[a].dropna()))
        shown = ", ".join(_cell(v) for v in values)
        if len(values) > _LISTED_VALUES:
            # A random sweep's samples: their span, not a list longer than the page.
            shown = f"{len(values)} values, {_cell(min(values))} to {_cell(max(values))}"
        rows.append((f"axis {labels[a]}", f"{shown} ({a})"))
    return rows


def sweep_sections(frame: pd.DataFrame, meta: dict[str, Any]) -> str:
    """A sweep's description (``sweep.json``: what it compares, at what scale) and its runs
    (``sweep.parquet``, main columns)."""
    e = html.escape
    failed = int((frame["status"] != "ok").sum())
    simulated = frame.loc[frame["dir"].astype(bool), "dir"].nunique() if "dir" in frame else None
    runs = f"{len(frame)} ({failed} failed)"
    if simulated is not None and simulated < len(frame):
        runs += f"; {simulated} simulations (runs of the same configuration share one)"
    head = [
        ("sweep", ": ".join(t for t in (meta.get("name"), meta.get("description")) if t)),
        *_settings(frame, meta),
        ("mode", str(meta.get("mode", "grid"))),
        ("runs", runs),
    ]
    rows = "".join(f"<tr><td>{e(k)}</td><td>{e(v)}</td></tr>\n" for k, v in head)
    return (
        f'<h2>Sweep</h2>\n<table class="config">\n{rows}</table>\n'
        f"<h2>Runs</h2>\n{_runs_table(frame, meta)}"
    )


def render_sweep_html(frame: pd.DataFrame, meta: dict[str, Any], title: str = "") -> str:
    """The report of a sweep (``sweep.parquet`` as a DataFrame, ``sweep.json`` as a dict)."""
    return page(title, sweep_sections(frame, meta), sweep_figures(frame, meta))
