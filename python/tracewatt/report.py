"""The report of a results directory: its figures, and one self-contained HTML file.

A directory written by ``tracewatt run -o`` or ``tracewatt compare -o`` (whose ``summary.json``
has ``baseline`` and whose ``baseline/`` holds the baseline's tables), or by ``tracewatt study
-o`` (a sweep's ``sweep.parquet`` of two axes, see :func:`study_table`). The HTML embeds every
figure as a ``data:`` PNG and refers to nothing outside itself, so it opens offline and can be
mailed as one file.
"""

from __future__ import annotations

import base64
import html
import io
import os
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import pandas as pd
from matplotlib.figure import Figure

from tracewatt import plots
from tracewatt.results import Results

__all__ = [
    "FORMATS",
    "ReportFigure",
    "figures",
    "load",
    "page",
    "render_html",
    "render_study_html",
    "run_sections",
    "study_figures",
    "study_sections",
    "study_table",
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
    baseline = Results.read(d / "baseline") if "baseline" in results.summary else None
    return results, baseline


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


def study_table(directory: str | os.PathLike[str]) -> pd.DataFrame:
    """A study's table from its sweep (``sweep.parquet``, ``sweep.json``): a row per cell of
    the first two axes (``topology``, ``workload``), the runs that are compared with the
    baseline (their saving as ``machine_saving_pct``)."""
    from tracewatt.sweep import read_dataset

    meta, df = read_dataset(directory)
    topology, workload = meta["axes"][:2]
    if meta["baseline"] is not None:
        df = df[df["variant"] != meta["baseline"]]
    df = df.rename(
        columns={topology: "topology", workload: "workload", "saving_pct": "machine_saving_pct"}
    )
    return df.reset_index(drop=True)


def study_figures(study: pd.DataFrame) -> list[ReportFigure]:
    """The figures of a study (:func:`study_table`)."""
    return [
        ReportFigure(
            "study_bars",
            "Energy EEE saves and the time it costs, per workload and topology: look for tall "
            "saving bars over short slowdown bars.",
            plots.study_bars(study),
        )
    ]


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
    from tracewatt.cli import policies

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
    rows += [
        (f"job {j['name']}", f"{j['workload'].get('kind', '?')}, {j['ranks']} ranks")
        for j in config.get("jobs", [])
    ]
    rows += [(what.strip(), how) for what, how in policies(config)]
    return rows


def _summary_text(results: Results, baseline: Results | None) -> str:
    from tracewatt.cli import compare_text, summary_text

    if baseline is None:
        return summary_text(results.summary)
    from tracewatt.compare import Comparison

    return compare_text(Comparison(policy=results, baseline=baseline))


_STYLE = """
body { font-family: sans-serif; max-width: 960px; margin: 1em auto; padding: 0 1em; }
table.config td { padding: 0 1em 0 0; vertical-align: top; }
table.dataframe { display: block; overflow-x: auto; font-size: smaller; }
table.dataframe td, table.dataframe th { padding: 0 0.5em; text-align: right; }
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


def study_sections(study: pd.DataFrame) -> str:
    """A study's table (:func:`study_table`) as HTML."""
    table = study.to_html(index=False, na_rep="", float_format=lambda v: f"{v:.4g}", border=0)
    return f"<h2>Study</h2>\n{table}\n"


def render_html(results: Results, baseline: Results | None = None, title: str = "") -> str:
    """The report of a run (or a compare) as one HTML document."""
    return page(title, run_sections(results, baseline), figures(results, baseline))


def render_study_html(study: pd.DataFrame, title: str = "") -> str:
    """The report of a study (:func:`study_table`) as one HTML document."""
    return page(title, study_sections(study), study_figures(study))
