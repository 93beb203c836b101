"""The report of a results directory: its figures, and one self-contained HTML file.

A directory written by ``tracewatt run -o`` or ``tracewatt compare -o`` (whose ``summary.json``
has ``baseline`` and whose ``baseline/`` holds the baseline's tables), by ``tracewatt sweep -o``
or ``tracewatt study -o`` (``sweep.parquet`` and ``sweep.json``, see :func:`sweep_figures`), or
by ``tracewatt validate -o`` (``validate.json``, see :func:`validation_figures`). The HTML embeds
every figure as a ``data:`` PNG and refers to nothing outside itself, so it opens offline and
can be mailed as one file.
"""

from __future__ import annotations

from tracewatt.report.document import FORMATS, ReportFigure, page, write_figures
from tracewatt.report.run import figures, load, render_html, run_sections
from tracewatt.report.sweep import load_sweep, render_sweep_html, sweep_figures, sweep_sections
from tracewatt.report.validation import load_validation, validation_figures, validation_sections
from tracewatt.sweep.dataset import sweep_axes

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
