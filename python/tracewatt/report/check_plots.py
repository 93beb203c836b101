"""The figure of a validation check (a ``validate.json`` record): its panels, target beside
simulated."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tracewatt._dependencies import numpy as np
from tracewatt.report.plots import new_figure

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


def _panel_axes(panel: dict[str, Any], ax: Axes) -> None:
    """One panel of a check's figure (``validate.json``): lines over numeric x, bars over
    labels; simulated series solid, target series dashed with hollow markers (hatched bars)."""
    x_values, series = panel["x"], panel["series"]
    if all(isinstance(x, str) for x in x_values):
        x = np.arange(len(x_values))
        width = 0.8 / max(len(series), 1)
        for i, s in enumerate(series):
            heights = np.array([np.nan if v is None else v for v in s["y"]], dtype=float)
            style: dict[str, Any] = (
                {"fill": False, "hatch": "//", "edgecolor": "black"} if s["target"] else {}
            )
            ax.bar(
                x + (i - (len(series) - 1) / 2) * width, heights, width, label=s["label"], **style
            )
        ax.set_xticks(x, x_values)
        ax.axhline(0.0, color="black", linewidth=0.8)
    else:
        for s in series:
            y = np.array([np.nan if v is None else v for v in s["y"]], dtype=float)
            if s["target"]:
                ax.plot(x_values, y, "--", marker="D", fillstyle="none", label=s["label"])
            else:
                ax.plot(x_values, y, "-", marker="o", label=s["label"])
        if panel["x_log"]:
            ax.set_xscale("log")
    ax.set_title(panel["title"], fontsize="medium")
    ax.set_xlabel(panel["x_label"])
    ax.set_ylabel(panel["y_label"])
    ax.legend(fontsize="x-small")


def check_figure(check: dict[str, Any]) -> Figure:
    """A validation check (a ``validate.json`` record): its panels, two per row."""
    panels = check["panels"]
    ncols = min(len(panels), 2)
    nrows = -(-len(panels) // ncols)
    fig = new_figure((9.0, 3.8 * nrows + 0.4))
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for ax, panel in zip(axes, panels, strict=False):
        _panel_axes(panel, ax)
    for ax in axes[len(panels) :]:
        ax.set_visible(False)
    verdict = "passed" if check["passed"] else "FAILED"
    fig.suptitle(f"check {check['id']} ({verdict}): simulated beside target", fontsize="medium")
    return fig
