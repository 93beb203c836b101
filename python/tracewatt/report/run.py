"""The report of a run, or of a compare (a run beside its always-on baseline)."""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Any

from tracewatt import _format
from tracewatt.compare import Comparison
from tracewatt.errors import ResultsError
from tracewatt.report import plots
from tracewatt.report.document import ReportFigure, page
from tracewatt.report.texts import compare_text, network_model, policies, summary_text
from tracewatt.results import Results


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


def _header(results: Results) -> list[tuple[str, str]]:
    return setting_rows(results.config, results.summary.get("machine", {}))


def setting_rows(config: dict[str, Any], machine: dict[str, Any]) -> list[tuple[str, str]]:
    """A resolved configuration's key settings as (what, how): its machine and scale (from
    ``machine``, ``tracewatt machine --json`` or a summary's ``machine``), its jobs, and the
    power policies it applies."""
    m = config.get("machine", {})
    topology = m.get("preset") or m.get("topology", {}).get("kind", "?")
    per_node = machine.get("ranks_per_node", m.get("ranks_per_node"))
    rows = [
        (
            "machine",
            f"{topology}: {_format.count(machine.get('nodes'))} nodes,"
            f" {_format.count(machine.get('switches'))} switches,"
            f" {_format.count(machine.get('links'))} links,"
            f" {_format.count(per_node)} rank(s) per node",
        ),
        ("network model", network_model(m)),
    ]
    # Named as the summary names them: `job0` for a job without a name.
    for i, job in enumerate(config.get("jobs", [])):
        name = job.get("name") or f"job{i}"
        rows.append((f"job {name}", f"{_job_source(job)}, {_format.count(job['ranks'])} ranks"))
    rows += [(what.strip(), how) for what, how in policies(config)]
    return rows


def _job_source(job: dict[str, Any]) -> str:
    """What a job runs: its workload's kind, or the trace it replays."""
    if "trace" in job:
        return f"trace {job['trace']['path']}"
    return str(job["workload"]["kind"])


def message_latencies(results: Results) -> list[float] | None:
    """Every message's latency, s, where the run kept its messages (``messages.parquet``)."""
    messages = results.tables.get("messages")
    if messages is None or "latency_s" not in messages:
        return None
    return [float(v) for v in messages["latency_s"]]


def _summary_text(results: Results, baseline: Results | None) -> str:
    if baseline is None:
        return summary_text(results.summary, latencies_s=message_latencies(results))
    return compare_text(Comparison(policy=results, baseline=baseline))


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
