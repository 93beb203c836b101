"""The report of link policies side by side (``tracewatt compare --policies -o DIR``): their
table, and each one's energy saved against the time it costs, the oracle's saving marked as
the bound of the policies that delay nothing."""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import TYPE_CHECKING

from tracewatt._dependencies import pandas as pd
from tracewatt.compare import ORACLE, POLICIES_FILE, POLICY_COLUMNS
from tracewatt.errors import ResultsError
from tracewatt.report.document import ReportFigure
from tracewatt.report.plots import new_figure
from tracewatt.report.texts import policies_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def load_policies(directory: str | os.PathLike[str]) -> pd.DataFrame:
    """The table of a ``compare --policies`` output folder (``policies.parquet``)."""
    path = Path(directory) / POLICIES_FILE
    try:
        table = pd.read_parquet(path)
    except (OSError, ValueError) as e:
        raise ResultsError(f"{path}: cannot read the policies table: {e}") from e
    missing = [c for c in POLICY_COLUMNS if c not in table.columns]
    if missing:
        raise ResultsError(
            f"{path}: no column {', '.join(missing)}; expected the table compare --policies writes"
        )
    return table


def saving_vs_slowdown(table: pd.DataFrame) -> Figure:
    """Per policy, its saving against always-on (%, link ports on the left, the whole machine
    on the right) at its slowdown (%); the oracle's saving a dashed line: no policy that
    delays nothing saves more."""
    fig = new_figure()
    axes = fig.subplots(1, 2)
    oracle = table[table["policy"] == ORACLE]
    for ax, column, what in (
        (axes[0], "link_saving_pct", "link ports"),
        (axes[1], "saving_pct", "whole machine"),
    ):
        for i, r in enumerate(table.to_dict("records")):
            bound = r["policy"] == ORACLE
            ax.scatter(
                [r["slowdown_pct"]],
                [r[column]],
                marker="*" if bound else "o",
                s=140 if bound else 50,
                color="black" if bound else f"C{i}",
                zorder=3,
            )
            ax.annotate(
                str(r["policy"]),
                (r["slowdown_pct"], r[column]),
                textcoords="offset points",
                xytext=(6, 4),
                fontsize="small",
            )
        if not oracle.empty:
            ax.axhline(
                float(oracle[column].iloc[0]),
                color="black",
                linestyle="--",
                linewidth=0.8,
                label="oracle: the bound",
            )
            ax.legend(loc="lower right", fontsize="small")
        ax.set_xlabel("slowdown against always-on (%)")
        ax.set_ylabel("energy saved (% of always-on's)")
        ax.set_title(f"Saving of the {what}", fontsize="medium")
    return fig


def policy_figures(table: pd.DataFrame) -> list[ReportFigure]:
    bound = (
        " The dashed line is the oracle's saving, which sleeps in every idle gap past its "
        "break-even time and delays nothing: no policy that delays nothing saves more."
        if (table["policy"] == ORACLE).any()
        else " Compare with the oracle (compare --policies ...,oracle) to see the bound."
    )
    return [
        ReportFigure(
            "policy_saving",
            "Energy each link policy saves against always-on, at the slowdown it costs: "
            f"up and to the left is better.{bound}",
            saving_vs_slowdown(table),
        )
    ]


def policy_sections(table: pd.DataFrame) -> str:
    """The policies' table as ``compare --policies`` prints it, as HTML."""
    text = policies_text(table, bool((table["policy"] == ORACLE).any()))
    return f"<h2>Link policies against always-on</h2>\n<pre>{html.escape(text)}</pre>\n"
