"""The parts of every report: its figures with their captions, the figure files, and the one
self-contained HTML document (figures embedded as ``data:`` PNGs, nothing outside it)."""

from __future__ import annotations

import base64
import html
import io
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tracewatt._dependencies import matplotlib

if TYPE_CHECKING:
    from matplotlib.figure import Figure


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


def _png_bytes(figure: Figure) -> bytes:
    buf = io.BytesIO()
    figure.savefig(buf, format="png", dpi=_DPI, metadata=_METADATA["png"])
    return buf.getvalue()


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_")


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


_STYLE = """
body { font-family: sans-serif; max-width: 960px; margin: 1em auto; padding: 0 1em; }
table.config td { padding: 0 1em 0 0; vertical-align: top; }
table.runs { border-collapse: collapse; font-size: smaller; }
table.runs th { padding: 0 0.4em; text-align: right; vertical-align: bottom; }
table.runs td { padding: 0 0.4em; text-align: right; white-space: nowrap; }
table.runs .key { text-align: left; }
table.runs tr:nth-child(even) { background: #f4f4f4; }
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
