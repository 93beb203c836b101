"""The report of a results directory: its figures, and one self-contained HTML file.

A directory written by ``tracewatt run -o`` or ``tracewatt compare -o`` (whose ``summary.json``
has ``baseline`` and whose ``baseline/`` holds the baseline's tables), by ``tracewatt sweep -o``
or ``tracewatt study -o`` (``sweep.parquet`` and ``sweep.json``, see :func:`sweep_figures`), or
by ``tracewatt validate -o`` (``validate.json``, see :func:`validation_figures`). The HTML embeds
every figure as a ``data:`` PNG and refers to nothing outside itself, so it opens offline and
can be mailed as one file.
"""

from __future__ import annotations

import base64
import html
import io
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib
import pandas as pd
from matplotlib.figure import Figure

from tracewatt import plots
from tracewatt.errors import ResultsError
from tracewatt.results import NUMBER, Results, read_json

__all__ = [
    "FORMATS",
    "ReportFigure",
    "figures",
    "load",
    "load_sweep",
    "load_validation",
    "page",
    "render_html",
    "render_sweep_html",
    "run_sections",
    "sweep_axes",
    "sweep_figures",
    "sweep_sections",
    "validation_figures",
    "validation_sections",
    "write_figures",
]

#: Formats ``write_figures`` writes.
FORMATS = ("png", "svg")

# Resolution of the figures: 100 dpi at the figures' 9 in width fits a laptop screen.
_DPI = 100
# No software version or date in the files: the same results give the same bytes.
_METADATA = {"png": {"Software": None}, "svg": {"Date": None, "Creator": None}}


@dataclass(frozen=True)
class ReportFigure:
    """One figure of a report: its file stem, a one-line caption, and the figure."""

    name: str
    caption: str
    figure: Figure


def load(directory: str | os.PathLike[str]) -> tuple[Results, Results | None]:
    """The results in ``directory`` and, for a ``compare`` output, its baseline's."""
    d = Path(directory)
    results = Results.read(d)
    if "baseline" not in results.summary:
        return results, None
    if not (d / "baseline" / "summary.json").is_file():
        raise ResultsError(
            f"{d / 'baseline'}: a compare output's baseline results are missing (no summary.json)"
        )
    return results, Results.read(d / "baseline")


def _has(results: Results, table: str) -> bool:
    return table in results.tables and not results.tables[table].empty


def figures(results: Results, baseline: Results | None = None) -> list[ReportFigure]:
    """Every figure the results have the data for, in report order."""
    out = [
        ReportFigure(
            "energy_breakdown",
            "Energy per component"
            + (
                " beside the always-on baseline: the saving is the gap between the bars."
                if baseline is not None
                else ": which parts of the machine the energy goes to."
            ),
            plots.energy_breakdown(results),
        )
    ]
    if _has(results, "timeline"):
        out.append(
            ReportFigure(
                "power_timeline",
                "Power over time per component: dips are links and cores in low-power states"
                + ("; the dashed line is the baseline's total." if baseline is not None else "."),
                plots.power_timeline(
                    results,
                    baseline if baseline is not None and _has(baseline, "timeline") else None,
                ),
            )
        )
    if _has(results, "idle_hist") and _has(results, "links"):
        out.append(
            ReportFigure(
                "idle_cdf",
                "Idle intervals per link class: only intervals right of the dotted idle_timeout "
                "reach low-power idle.",
                plots.idle_cdf(results),
            )
        )
    if _has(results, "links"):
        out.append(
            ReportFigure(
                "lpi_heatmap",
                "Share of the run each link direction spent in low-power idle: dark cells are "
                "links that never slept.",
                plots.lpi_heatmap(results),
            )
        )
    return out


def _png_bytes(figure: Figure) -> bytes:
    buf = io.BytesIO()
    figure.savefig(buf, format="png", dpi=_DPI, metadata=_METADATA["png"])
    return buf.getvalue()


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_")


def sweep_axes(frame: pd.DataFrame, meta: dict[str, Any]) -> list[str]:
    """The axis columns of a sweep dataset: ``sweep.json`` ``axes``, then its groups' own, in
    spec order."""
    names = list(meta.get("axes", []))
    for g in meta.get("groups", []):
        if isinstance(g, dict):
            names += list(g.get("axes", []))
    return [n for n in dict.fromkeys(names) if n in frame.columns]


def load_sweep(directory: str | os.PathLike[str]) -> tuple[pd.DataFrame, dict[str, Any]]:
    """A sweep directory's dataset (``sweep.parquet``) and description (``sweep.json``)."""
    from tracewatt.sweep import read_dataset

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
    for group in plots.sweep_groups(frame, meta, sweep_axes(frame, meta)):
        suffix = f"_{_slug(group.name)}" if group.name else ""
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
                    plots.sweep_bars(group),
                )
            )
        for axis in group.numeric:
            relative = f" relative to {baseline}" if baseline is not None else ""
            out.append(
                ReportFigure(
                    f"sweep_curves{suffix}_{_slug(axis)}",
                    f"Energy and run time{relative} against {axis}: the best setting is where "
                    "energy has stopped falling and run time has not started rising.",
                    plots.sweep_curves(group, axis),
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


def load_validation(directory: str | os.PathLike[str]) -> dict[str, Any]:
    """A ``validate -o`` directory's ``validate.json``: ``{tracewatt_version, checks}``."""
    data: dict[str, Any] = read_json(
        Path(directory) / "validate.json", "an object with a list `checks`", _VALIDATION
    )
    return data


# What the report reads of validate.json (validate.Check.record).
_SERIES = {"label": str, "y": [(*NUMBER, type(None))], "target": bool}
_PANEL = {
    "title": str,
    "x_label": str,
    "y_label": str,
    "x": [(*NUMBER, str)],
    "series": [_SERIES],
    "x_log": bool,
}
_VALIDATION = {
    "checks": [
        {
            "id": str,
            "name": str,
            "target": str,
            "simulated": str,
            "passed": bool,
            "panels?": [_PANEL],
        }
    ]
}


def validation_figures(validation: dict[str, Any]) -> list[ReportFigure]:
    """A figure per check that has one, its caption the check's target and simulated value."""
    return [
        ReportFigure(
            f"check_{_slug(c['id'])}",
            f"{c['id']}. {c['name']}. Target: {c['target']}. Simulated: {c['simulated']}.",
            plots.check_figure(c),
        )
        for c in validation["checks"]
        if c.get("panels")
    ]


def validation_sections(validation: dict[str, Any]) -> str:
    """Each check's verdict, target and simulated value, as the HTML table."""
    e = html.escape
    rows = "".join(
        f"<tr><td>{e(c['id'])}</td><td>{'PASS' if c['passed'] else 'FAIL'}</td>"
        f"<td>{e(c['name'])}</td><td>{e(c['target'])}</td><td>{e(c['simulated'])}</td></tr>\n"
        for c in validation["checks"]
    )
    return (
        f"<h2>Validation (tracewatt {e(str(validation.get('tracewatt_version', '?')))})</h2>\n"
        '<table class="checks">\n<tr><th>check</th><th>verdict</th><th>what</th>'
        f"<th>target</th><th>simulated</th></tr>\n{rows}</table>\n"
    )


def write_figures(
    report_figures: list[ReportFigure], directory: str | os.PathLike[str], fmt: str
) -> list[Path]:
    """Writes each figure as ``<name>.<fmt>`` into ``directory`` (created if needed)."""
    if fmt not in FORMATS:
        raise ValueError(f"figure format {fmt!r}: expected one of {', '.join(FORMATS)}")
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    paths = []
    for f in report_figures:
        path = d / f"{f.name}.{fmt}"
        # A fixed salt for the ids of SVG elements, which are random otherwise.
        with matplotlib.rc_context({"svg.hashsalt": "tracewatt"}):
            f.figure.savefig(path, format=fmt, dpi=_DPI, metadata=_METADATA[fmt])
        paths.append(path)
    return paths


def _header(results: Results) -> list[tuple[str, str]]:
    from tracewatt.texts import policies

    config = results.config
    machine = config.get("machine", {})
    info = results.summary.get("machine", {})
    topology = machine.get("preset") or machine.get("topology", {}).get("kind", "?")
    rows = [
        (
            "machine",
            f"{topology}: {info.get('nodes', '?')} nodes, {info.get('switches', '?')} switches,"
            f" {info.get('links', '?')} links",
        )
    ]
    # The summary's jobs carry the resolved names (`job0` for a job without one), in the
    # configuration's order.
    for job, done in zip(config.get("jobs", []), results.summary.get("jobs", []), strict=True):
        rows.append((f"job {done['name']}", f"{_job_source(job)}, {job['ranks']} ranks"))
    rows += [(what.strip(), how) for what, how in policies(config)]
    return rows


def _job_source(job: dict[str, Any]) -> str:
    """What a job runs: its workload's kind, or the trace it replays."""
    if "trace" in job:
        return f"trace {job['trace']['path']}"
    return str(job["workload"]["kind"])


def _summary_text(results: Results, baseline: Results | None) -> str:
    from tracewatt.texts import compare_text, summary_text

    if baseline is None:
        return summary_text(results.summary)
    from tracewatt.compare import Comparison

    return compare_text(Comparison(policy=results, baseline=baseline))


_STYLE = """
body { font-family: sans-serif; max-width: 960px; margin: 1em auto; padding: 0 1em; }
table.config td { padding: 0 1em 0 0; vertical-align: top; }
table.dataframe { display: block; overflow-x: auto; font-size: smaller; }
table.dataframe td, table.dataframe th { padding: 0 0.5em; text-align: right; }
table.checks td, table.checks th { padding: 0.2em 0.5em; text-align: left; vertical-align: top; }
pre { background: #f4f4f4; padding: 0.5em; overflow-x: auto; }
figure { margin: 1.5em 0; }
figure img { max-width: 100%; height: auto; }
figcaption { font-style: italic; }
"""


def _figure_html(f: ReportFigure) -> str:
    data = base64.b64encode(_png_bytes(f.figure)).decode("ascii")
    return (
        f'<figure id="{f.name}">\n<img alt="{html.escape(f.name)}" '
        f'src="data:image/png;base64,{data}">\n'
        f"<figcaption>{html.escape(f.caption)}</figcaption>\n</figure>\n"
    )


def page(title: str, sections: str, report_figures: list[ReportFigure]) -> str:
    """One HTML document: a heading, ``sections`` (HTML), then the figures."""
    e = html.escape
    heading = f"tracewatt report{': ' + title if title else ''}"
    body = "".join(_figure_html(f) for f in report_figures)
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{e(heading)}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n"
        f"<h1>{e(heading)}</h1>\n{sections}<h2>Figures</h2>\n{body}</body>\n</html>\n"
    )


def run_sections(results: Results, baseline: Results | None = None) -> str:
    """The configuration and the summary of a run (or a compare), as HTML."""
    e = html.escape
    head = "".join(
        f"<tr><td>{e(what)}</td><td>{e(how)}</td></tr>\n" for what, how in _header(results)
    )
    return (
        f'<h2>Configuration</h2>\n<table class="config">\n{head}</table>\n'
        f"<h2>Summary</h2>\n<pre>{e(_summary_text(results, baseline))}</pre>\n"
    )


def render_html(results: Results, baseline: Results | None = None, title: str = "") -> str:
    """The report of a run (or a compare) as one HTML document."""
    return page(title, run_sections(results, baseline), figures(results, baseline))
