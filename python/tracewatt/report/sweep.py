"""The report of a sweep: its description, its table of runs and its figures per group."""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Any

from tracewatt._dependencies import pandas as pd
from tracewatt.errors import ResultsError
from tracewatt.report import sweep_plots
from tracewatt.report.document import ReportFigure, page, slug
from tracewatt.sweep.dataset import read_dataset, sweep_axes, sweep_groups


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


def sweep_figures(frame: pd.DataFrame, meta: dict[str, Any]) -> list[ReportFigure]:
    """The figures of a sweep: per group, its grouped bars where no numeric axis varies, and
    its curves against each numeric axis that does."""
    out = []
    baseline = meta.get("baseline")
    for group in sweep_groups(frame, meta, sweep_axes(frame, meta)):
        suffix = f"_{slug(group.name)}" if group.name else ""
        if not group.numeric:
            out.append(
                ReportFigure(
                    f"sweep_bars{suffix}",
                    (
                        f"Energy saved and time lost against {baseline} per "
                        f"{' x '.join(group.categorical) or 'run'}: look for tall saving bars "
                        "over short slowdown bars."
                    )
                    if baseline is not None
                    else f"Energy and run time per {' x '.join(group.categorical) or 'run'}.",
                    sweep_plots.sweep_bars(group),
                )
            )
        for axis in group.numeric:
            relative = f" relative to {baseline}" if baseline is not None else ""
            out.append(
                ReportFigure(
                    f"sweep_curves{suffix}_{slug(axis)}",
                    f"Energy and run time{relative} against {axis}: the best setting is where "
                    "energy has stopped falling and run time has not started rising.",
                    sweep_plots.sweep_curves(group, axis),
                )
            )
    return out


#: The columns of a sweep's table in its report (the dataset holds more: every component).
_SWEEP_TABLE = (
    "makespan_s",
    "energy_j",
    "saving_pct",
    "link_saving_pct",
    "slowdown_pct",
    "link_wakes",
    "lpi_share",
    "status",
    "error",
)


def sweep_sections(frame: pd.DataFrame, meta: dict[str, Any]) -> str:
    """A sweep's description (``sweep.json``) and table (``sweep.parquet``, main columns)."""
    e = html.escape
    failed = int((frame["status"] != "ok").sum())
    head = [
        ("sweep", f"{meta.get('name', '')}: {meta.get('description', '')}"),
        ("mode", str(meta.get("mode", "grid"))),
        ("axes", ", ".join(sweep_axes(frame, meta))),
        ("variants", ", ".join(meta.get("variants", []))),
        ("baseline", str(meta.get("baseline") or "none")),
        ("runs", f"{len(frame)} ({failed} failed)"),
    ]
    rows = "".join(f"<tr><td>{e(k)}</td><td>{e(v)}</td></tr>\n" for k, v in head)
    columns = ["group", "variant", *sweep_axes(frame, meta)]
    columns += [c for c in _SWEEP_TABLE if c in frame.columns]
    if not frame["group"].astype(bool).any():
        columns.remove("group")
    table = frame[columns].to_html(
        index=False, na_rep="", float_format=lambda v: f"{v:.4g}", border=0
    )
    return f'<h2>Sweep</h2>\n<table class="config">\n{rows}</table>\n<h2>Runs</h2>\n{table}\n'


def render_sweep_html(frame: pd.DataFrame, meta: dict[str, Any], title: str = "") -> str:
    """The report of a sweep (``sweep.parquet`` as a DataFrame, ``sweep.json`` as a dict)."""
    return page(title, sweep_sections(frame, meta), sweep_figures(frame, meta))
