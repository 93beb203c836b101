"""The report of ``tracewatt validate -o``: each check's verdict, and its figure."""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Any

from tracewatt.report.check_plots import check_figure
from tracewatt.report.document import ReportFigure, slug
from tracewatt.results import NUMBER, read_json
from tracewatt.validation.common import verdict


def load_validation(directory: str | os.PathLike[str]) -> dict[str, Any]:
    """A ``validate -o`` directory's ``validate.json``: ``{tracewatt_version, checks}``."""
    data: dict[str, Any] = read_json(
        Path(directory) / "validate.json", "an object with a list `checks`", _VALIDATION
    )
    return data


# What the report reads of validate.json (validation.common.Check.record).
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
            "passed": (bool, type(None)),
            "panels?": [_PANEL],
        }
    ]
}


def validation_figures(validation: dict[str, Any]) -> list[ReportFigure]:
    """A figure per check that has one, its caption the check's target and simulated value."""
    return [
        ReportFigure(
            f"check_{slug(c['id'])}",
            f"{c['id']}. {c['name']}. Target: {c['target']}. Simulated: {c['simulated']}.",
            check_figure(c),
        )
        for c in validation["checks"]
        if c.get("panels")
    ]


def validation_sections(validation: dict[str, Any]) -> str:
    """Each check's verdict, target and simulated value, as the HTML table."""
    e = html.escape
    rows = "".join(
        f"<tr><td>{e(c['id'])}</td><td>{verdict(c['passed'])}</td>"
        f"<td>{e(c['name'])}</td><td>{e(c['target'])}</td><td>{e(c['simulated'])}</td></tr>\n"
        for c in validation["checks"]
    )
    return (
        f"<h2>Validation (tracewatt {e(str(validation.get('tracewatt_version', '?')))})</h2>\n"
        '<table class="checks">\n<tr><th>check</th><th>verdict</th><th>what</th>'
        f"<th>target</th><th>simulated</th></tr>\n{rows}</table>\n"
    )
