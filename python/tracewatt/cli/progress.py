"""The progress displays of the command line: a simulation's line and a sweep's bar, on stderr."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any, TextIO

from tracewatt import _format, _tracewatt
from tracewatt._dependencies import rich_console, rich_progress
from tracewatt.cli.common import PROG, _warn
from tracewatt.config import Config


class ProgressLine:
    """A one-line progress display on a terminal (redrawn with carriage returns).

    ``estimate_s`` is a lower bound of the run's simulated time
    (``_tracewatt.estimate_sim_time``): while the run is below it the line shows a bar, the share
    done and an ETA; without one, or once the run has passed it, only the simulated time, events
    and rates, which are always true."""

    def __init__(self, stream: TextIO, estimate_s: float | None = None) -> None:
        self.stream = stream
        self.estimate_s = estimate_s
        self.start = time.monotonic()
        self.width = 0

    def draw(self, text: str) -> None:
        pad = max(0, self.width - len(text))
        self.width = len(text)
        self.stream.write("\r" + text + " " * pad)
        self.stream.flush()

    def sim(self, p: dict[str, Any]) -> None:
        self.draw(self.sim_text(float(p["sim_time_s"]), int(p["events"]), self.elapsed_s()))

    def elapsed_s(self) -> float:
        return time.monotonic() - self.start

    def sim_text(self, sim_s: float, events: int, wall_s: float) -> str:
        rate = f"{_format.count(round(events / wall_s))} events/s" if wall_s > 0 else "-"
        tail = f" | {_format.count(events)} events ({rate}) | {_format.seconds(wall_s)}"
        est = self.estimate_s
        if est is None or not 0 < sim_s < est:
            return f"sim {_format.seconds(sim_s)}{tail}"
        frac = sim_s / est
        # Wall time per simulated second so far, over the simulated time left.
        eta_s = wall_s * (est - sim_s) / sim_s
        return (
            f"[{'#' * int(frac * 20):<20}] {frac * 100:3.0f} %"
            f" sim {_format.seconds(sim_s)} of ~{_format.seconds(est)}"
            f"{tail}, ETA {_format.seconds(eta_s)}"
        )

    def clear(self) -> None:
        if self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0


def show_progress(args: argparse.Namespace) -> bool:
    return not args.quiet and not getattr(args, "json", False) and sys.stderr.isatty()


def sim_progress(args: argparse.Namespace, cfg: Config) -> ProgressLine | None:
    """The progress line of a simulation, with its estimate, or None where none is drawn."""
    if not show_progress(args):
        return None
    return ProgressLine(sys.stderr, _tracewatt.estimate_sim_time(cfg.text, cfg.format, cfg.source))


class SweepDisplay:
    """Progress of a sweep on stderr: a rich bar (runs done, running, failed, ETA) on a
    terminal, a plain line per finished run otherwise, nothing with ``-q``; failures, and the
    states of worker jobs on a batch system as they change, are reported unless ``-q``."""

    def __init__(self, args: argparse.Namespace, name: str, where: str) -> None:
        self.quiet = bool(args.quiet)
        self.name, self.where = name, where
        self.bar: Any = None
        self.task: Any = None
        self.jobs = ""
        if show_progress(args):
            rp = rich_progress
            self.bar = rp.Progress(
                rp.TextColumn("{task.description}"),
                rp.BarColumn(),
                rp.MofNCompleteColumn(),
                rp.TextColumn("{task.fields[running]} running, {task.fields[failed]} failed"),
                rp.TextColumn("ETA"),
                rp.TimeRemainingColumn(),
                console=rich_console.Console(stderr=True, no_color=True, highlight=False),
            )

    def __call__(self, p: Any) -> None:
        if self.quiet:
            return
        todo = p.total - p.skipped
        if p.jobs != self.jobs:
            # The worker jobs on a batch system (a callback of its own): pending, running.
            self.jobs = p.jobs
            if p.jobs:
                self._say(f"{PROG}: sweep `{self.name}`: {p.jobs}")
            return
        if p.last is None:
            _warn(
                f"sweep `{self.name}`: {p.total} runs, {p.skipped} already done"
                + (f"; {todo} to run {self.where}" if todo else "; nothing to run")
            )
            if self.bar is not None and todo:
                self.bar.start()
                self.task = self.bar.add_task("runs", total=todo, running=0, failed=0)
            return
        if p.last_error:
            # Most errors name the run already (its configuration's source).
            named = p.last.config.source in p.last_error
            self._say(f"{PROG}: error: {'' if named else p.last.label + ': '}{p.last_error}")
        elif self.bar is None:
            _warn(f"[{p.done}/{todo}] {p.last.label}: done")
        if self.task is not None:
            self.bar.update(self.task, completed=p.done, running=p.running, failed=p.failed)

    def _say(self, line: str) -> None:
        if self.bar is not None and self.task is not None:
            self.bar.console.print(line, markup=False)
        else:
            print(line, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.task is not None:
            self.bar.stop()
