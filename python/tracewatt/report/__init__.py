"""The report of a results directory: its figures, and one self-contained HTML file.

A directory written by ``tracewatt run -o`` or ``tracewatt compare -o`` (whose ``summary.json``
has ``baseline`` and whose ``baseline/`` holds the baseline's tables), by ``tracewatt sweep -o``
or ``tracewatt study -o`` (``sweep.parquet`` and ``sweep.json``, see :func:`sweep_figures`), by
``tracewatt compare --policies -o`` (``policies.parquet``, see :func:`policy_figures`), or
by ``tracewatt validate -o`` (``validate.json``, see :func:`validation_figures`). The HTML embeds
every figure as a ``data:`` PNG and refers to nothing outside itself, so it opens offline and
can be mailed as one file.
"""

from __future__ import annotations

from tracewatt.compare import POLICIES_FILE
from tracewatt.report.document import FORMATS, ReportFigure, page, write_figures
from tracewatt.report.policies import (
    load_policies,
    policy_figures,
    policy_sections,
)
from tracewatt.report.run import figures, load, render_html, run_sections
from tracewatt.report.sweep import load_sweep, render_sweep_html, sweep_figures, sweep_sections
from tracewatt.report.validation import load_validation, validation_figures, validation_sections
from tracewatt.sweep.dataset import sweep_axes

__all__ = [
    "FORMATS",
    "POLICIES_FILE",
    "ReportFigure",
    "figures",
    "load",
    "load_policies",
    "load_sweep",
    "load_validation",
    "page",
    "policy_figures",
    "policy_sections",
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
