"""The ``tracewatt`` command line. See ``docs/cli.md``.

Exit codes: 0 success; 1 unexpected internal error; 2 usage, configuration or topology error;
3 workload, trace or deadlock error (the run could not complete); 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO

from tracewatt import _format
from tracewatt._cli_base import (
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_USAGE,
    EXIT_VALIDATION,
    PROG,
    Terminated,
    UsageError,
    _error,
    _warn,
    exit_code,
    sigterm_stops,
    writable_dir,
)
from tracewatt.config import Config, parse_value
from tracewatt.errors import TracewattError
from tracewatt.texts import compare_text, summary_text

# --------------------------------------------------------------------------- progress


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


def _show_progress(args: argparse.Namespace) -> bool:
    return not args.quiet and not getattr(args, "json", False) and sys.stderr.isatty()


def _sim_progress(args: argparse.Namespace, cfg: Config) -> ProgressLine | None:
    """The progress line of a simulation, with its estimate, or None where none is drawn."""
    if not _show_progress(args):
        return None
    from tracewatt import _tracewatt

    return ProgressLine(sys.stderr, _tracewatt.estimate_sim_time(cfg.text, cfg.format, cfg.source))


# --------------------------------------------------------------------------- config


def _load_config(args: argparse.Namespace) -> Config:
    path = Path(args.config)
    if not path.exists():
        raise UsageError(f"{args.config}: no such file")
    if path.is_dir():
        raise UsageError(f"{args.config}: is a directory, not a configuration file")
    cfg = Config.load(path)
    overrides: dict[str, Any] = {}
    for item in getattr(args, "set", None) or []:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"--set {item!r}: expected PATH=VALUE, e.g. seed=3")
        overrides[key] = parse_value(value.strip())
    if getattr(args, "seed", None) is not None:
        overrides["seed"] = args.seed
    return cfg.with_overrides(overrides) if overrides else cfg


# --------------------------------------------------------------------------- output


def _output_dir(args: argparse.Namespace) -> Path | None:
    """Checks ``-o DIR`` before anything is simulated, so a long run's results are not lost to a
    typo: DIR is created if missing and must be writable; an existing non-empty DIR is refused
    unless ``--force``. Returns DIR as an absolute path, which errors name. A forced DIR is
    emptied only by :func:`_empty_output`, once the results are there to replace it: a run
    that fails (a bad configuration, a deadlock, Ctrl-C) leaves the previous results as they
    were."""
    if args.output is None:
        return None
    out = Path(args.output).absolute()
    if out.is_dir() and any(out.iterdir()) and not args.force:
        raise UsageError(
            f"{out}: the output directory is not empty; use --force to replace its contents"
        )
    return writable_dir(out, "the results")


def _empty_output(out: Path) -> None:
    """Empties an ``-o DIR`` that ``--force`` let through (no stale results, e.g. a
    ``baseline/``, stay beside the new ones)."""
    for child in out.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


def _output_file(path: str) -> Path:
    """Checks where an output file goes before anything is simulated: not a directory, in a
    directory that exists and can be written. Returns it as an absolute path."""
    out = Path(path).absolute()
    if out.is_dir():
        raise UsageError(f"{out}: is a directory; give a file for -o")
    if not out.parent.is_dir():
        raise UsageError(f"{out}: cannot write it: {out.parent} is not a directory")
    if not os.access(out.parent, os.W_OK) or (out.exists() and not os.access(out, os.W_OK)):
        raise UsageError(f"{out}: cannot write it: permission denied")
    return out


# --------------------------------------------------------------------------- run


def run_timing(summary: dict[str, Any], wall_s: float) -> dict[str, float]:
    """What ``timing.json`` holds: the run's wall time, its events and their rate."""
    events = int(summary["events"])
    return {
        "wall_s": wall_s,
        "events": events,
        "events_per_s": events / wall_s if wall_s > 0 else 0.0,
    }


def _write_timing(directory: Path, timing: dict[str, float]) -> None:
    # Wall time differs from run to run, so it lives apart from the deterministic files.
    (directory / "timing.json").write_text(json.dumps(timing, indent=2, sort_keys=True) + "\n")


def cmd_run(args: argparse.Namespace) -> int:
    from tracewatt import simulate
    from tracewatt.results import summary_json

    cfg = _load_config(args)
    out = _output_dir(args)
    bar = _sim_progress(args, cfg)
    start = time.monotonic()
    try:
        res = simulate(cfg, progress=bar.sim if bar else None)
    finally:
        if bar:
            bar.clear()
    timing = run_timing(res.summary, time.monotonic() - start)
    if not args.quiet:
        _warn_summary(res.summary)
    if out is not None:
        _empty_output(out)
        res.write(out)
        _write_timing(out, timing)
    if args.json:
        sys.stdout.write(summary_json(res.summary))
    elif not args.quiet:
        sys.stdout.write(summary_text(res.summary, timing))
        if out is not None:
            sys.stdout.write(f"results written to {out}\n")
    return EXIT_OK


# --------------------------------------------------------------------------- machine


def machine_text(info: dict[str, Any]) -> str:
    lines = [
        f"preset                {info.get('preset') or '-'}",
        f"nodes                 {_format.count(info.get('nodes'))}",
        f"switches              {_format.count(info.get('switches'))}",
        f"links                 {_format.count(info.get('links'))}",
        f"diameter              {info.get('diameter_hops')} hops",
        f"virtual channels      {info.get('virtual_channels')}",
        f"ranks per node        {info.get('ranks_per_node')}",
        "",
    ]
    rows = [
        [
            str(c.get("kind")),
            _format.count(c.get("links")),
            f"{float(c.get('bandwidth_gbps', 0.0)):g}",
            f"{float(c.get('latency_ns', 0.0)):g}",
        ]
        for c in info.get("link_classes", [])
    ]
    lines.append(
        _format.table(
            ["link class", "links", "bandwidth_gbps", "latency_ns"], rows, [False, True, True, True]
        ).rstrip("\n")
    )
    return "\n".join(lines) + "\n"


def cmd_machine(args: argparse.Namespace) -> int:
    from tracewatt import machine

    info = machine(_load_config(args))
    if args.json:
        sys.stdout.write(json.dumps(info, indent=2, sort_keys=True) + "\n")
    else:
        sys.stdout.write(machine_text(info))
    return EXIT_OK


# --------------------------------------------------------------------------- presets


def cmd_presets(args: argparse.Namespace) -> int:
    from tracewatt import presets

    names = presets()
    if args.json:
        sys.stdout.write(json.dumps(names) + "\n")
    else:
        sys.stdout.write("".join(f"{n}\n" for n in names))
    return EXIT_OK


# --------------------------------------------------------------------------- sweep


class SweepDisplay:
    """Progress of a sweep on stderr: a rich bar (runs done, running, failed, ETA) on a
    terminal, a plain line per finished run otherwise, nothing with ``-q``; failures are
    reported unless ``-q``."""

    def __init__(self, args: argparse.Namespace, name: str, where: str) -> None:
        self.quiet = bool(args.quiet)
        self.name, self.where = name, where
        self.bar: Any = None
        self.task: Any = None
        if _show_progress(args):
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
            )

            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[running]} running, {task.fields[failed]} failed"),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=Console(stderr=True, no_color=True, highlight=False),
            )

    def __call__(self, p: Any) -> None:
        if self.quiet:
            return
        todo = p.total - p.skipped
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


def _sweep_target(args: argparse.Namespace) -> dict[str, Any]:
    """The executor options of ``sweep`` / ``study`` as keyword arguments of ``sweep.run``."""
    jq = {k: getattr(args, k) for k in ("queue", "account", "walltime", "cores", "memory")}
    given = [f"--{k}" for k, v in jq.items() if v is not None]
    if args.jobs is not None:
        given.append("--jobs")
    if given and args.cluster not in ("slurm", "pbs"):
        raise UsageError(f"{', '.join(given)}: only with --cluster slurm or --cluster pbs")
    if args.cluster in ("slurm", "pbs") and (args.cores is None or args.memory is None):
        raise UsageError(f"--cluster {args.cluster}: give --cores and --memory (per job)")
    if args.cluster is not None and args.cluster not in ("slurm", "pbs"):
        n = args.cluster.removeprefix("local:")
        if not args.cluster.startswith("local:") or not n.isdigit() or int(n) < 1:
            raise UsageError(f"--cluster {args.cluster}: expected local:N (N >= 1), slurm or pbs")
    return {
        "workers": args.workers,
        "scheduler": args.scheduler,
        "cluster": args.cluster,
        "cluster_options": jq,
        "jobs": args.jobs or 1,
    }


def _where(args: argparse.Namespace) -> str:
    if args.scheduler is not None:
        return f"on the Dask scheduler {args.scheduler}"
    if args.cluster is not None:
        return f"on a Dask cluster ({args.cluster})"
    return f"on {args.workers or os.cpu_count() or 1} local process(es)"


def _sweep_dir(path: str) -> Path:
    """``-o DIR``: new, empty, or a sweep's (which is resumed)."""
    from tracewatt import sweep

    return sweep.check_out_dir(path)


def _run_sweep(args: argparse.Namespace, spec_path: Path, out: Path) -> int:
    from tracewatt import sweep

    spec = sweep.SweepSpec.load(spec_path)
    target = _sweep_target(args)
    display = SweepDisplay(args, spec.name, _where(args))
    try:
        # A batch job's time limit ends the sweep with SIGTERM: stop as on Ctrl-C (workers
        # stopped, finished runs kept, their dataset written), not with workers left running.
        with sigterm_stops():
            df = sweep.run(spec, out, progress=display, replace=args.force, **target)
    finally:
        display.close()
    if args.json:
        sys.stdout.write(df.to_json(orient="records", indent=2) + "\n")
    elif not args.quiet:
        sys.stdout.write(sweep_table(df, spec.axis_names))
        if args.output is not None:
            sys.stdout.write(f"results written to {out}/ (sweep.parquet, sweep.json, runs/)\n")
    return EXIT_INTERNAL if (df["status"] != "ok").any() else EXIT_OK


def sweep_table(df: Any, axes: Sequence[str]) -> str:
    """The table ``sweep`` and ``study`` print: a row per run."""
    groups = ["group"] if (df["group"] != "").any() else []
    variants = ["variant"] if df["variant"].nunique() > 1 else []
    metrics = [
        ("makespan_s", _format.seconds),
        ("energy_j", lambda v: f"{v:.4g}"),
        ("lpi_share", lambda v: f"{v:.3f}"),
        ("saving_pct", lambda v: f"{v:.2f}"),
        ("link_saving_pct", lambda v: f"{v:.1f}"),
        ("slowdown_pct", lambda v: f"{v:.2f}"),
    ]
    metrics = [(k, f) for k, f in metrics if k in df.columns]
    headers = [*groups, *axes, *variants, "status", *(k for k, _ in metrics)]
    rows = []
    for rec in df.to_dict("records"):
        cells = [str(rec[k]) if rec[k] is not None else "" for k in [*groups, *axes, *variants]]
        cells = [c if c not in ("nan", "None") else "" for c in cells]
        cells.append(str(rec["status"]))
        for k, f in metrics:
            v = rec[k]
            # `+ 0.0` prints a saving of -0.0 as 0.00.
            cells.append("" if v is None or v != v else f(v + 0.0))
        rows.append(cells)
    right = [False] * (len(headers) - len(metrics)) + [True] * len(metrics)
    return _format.table(headers, rows, right)


def cmd_sweep(args: argparse.Namespace) -> int:
    from tracewatt import sweep

    if args.list:
        shipped = sweep.list_shipped()
        if args.json:
            listed = [{"name": name, "description": text} for name, text in shipped]
            sys.stdout.write(json.dumps(listed, indent=2) + "\n")
            return EXIT_OK
        width = max(len(name) for name, _ in shipped) + 2
        for name, description in shipped:
            sys.stdout.write(f"{name:<{width}}{description}\n")
        return EXIT_OK
    if args.spec is None:
        raise UsageError("give a sweep spec (a TOML file, or a shipped one: --list)")
    if args.output is None:
        raise UsageError("give the sweep's directory: -o DIR")
    spec = Path(args.spec)
    if not spec.is_file():
        spec = sweep.shipped_spec_path(args.spec)
    return _run_sweep(args, spec, _sweep_dir(args.output))


def cmd_study(args: argparse.Namespace) -> int:
    from tracewatt import sweep

    spec = sweep.shipped_spec_path("default")
    if args.output is not None:
        return _run_sweep(args, spec, _sweep_dir(args.output))
    with tempfile.TemporaryDirectory(prefix="tracewatt-study-") as tmp:
        return _run_sweep(args, spec, Path(tmp))


# --------------------------------------------------------------------------- compare


def _warn_summary(summary: dict[str, Any]) -> None:
    """What a run's summary warns about (its traces, the run itself), on stderr."""
    for w in [*summary.get("trace_warnings", []), *summary.get("warnings", [])]:
        _warn(f"warning: {w}")


def cmd_compare(args: argparse.Namespace) -> int:
    from tracewatt.compare import compare, comparison_json

    cfg = _load_config(args)
    out = _output_dir(args)
    bar = _sim_progress(args, cfg)
    try:
        c = compare(cfg, progress=bar.sim if bar else None)
    finally:
        if bar:
            bar.clear()
    wall_s = c.policy_wall_s
    timing = run_timing(c.policy.summary, wall_s) if wall_s is not None else None
    if not args.quiet:
        _warn_summary(c.policy.summary)
    if out is not None:
        _empty_output(out)
        c.baseline.write(out / "baseline")
        c.policy.write(out)
        # The policy's summary, extended with the baseline and the savings, replaces its own.
        (out / "summary.json").write_text(comparison_json(c))
        if timing is not None:
            _write_timing(out, timing)
    if args.json:
        sys.stdout.write(comparison_json(c))
    elif not args.quiet:
        sys.stdout.write(compare_text(c, timing))
    return EXIT_OK


# --------------------------------------------------------------------------- tune


def _percent(text: str) -> float:
    try:
        value = float(text.strip().removesuffix("%"))
    except ValueError as e:
        raise UsageError(f"--slowdown {text!r}: expected a percentage, e.g. 1%") from e
    if not (value >= 0 and value != float("inf")):
        raise UsageError(f"--slowdown {text!r}: expected a non-negative percentage")
    return value


def cmd_tune(args: argparse.Namespace) -> int:
    import tempfile

    from tracewatt.tuning import DEFAULT_TIMEOUTS_US, tune

    cfg = _load_config(args)
    if args.output is not None:
        _output_file(args.output)
    budget = _percent(args.slowdown)
    timeouts = (
        list(DEFAULT_TIMEOUTS_US) if args.timeouts is None else _times("--timeouts", args.timeouts)
    )
    wakes = None if args.wake_time is None else _times("--wake-time", args.wake_time)
    controls = None
    if args.control is not None:
        controls = [c.strip() for c in args.control.split(",") if c.strip()]
        if not controls:
            raise UsageError(f"--control {args.control!r}: expected paired and/or independent")
    for c in controls or []:
        if c not in ("paired", "independent"):
            raise UsageError(f"--control {c!r}: expected paired and/or independent")
    with tempfile.TemporaryDirectory(prefix="tracewatt-tune-") as tmp:
        try:
            result = tune(
                cfg,
                budget,
                timeouts_us=timeouts,
                wakes_us=wakes,
                controls=controls,
                k=args.k,
                out_dir=args.runs or tmp,
                workers=args.workers,
            )
        except ValueError as e:
            raise UsageError(f"{args.config}: {e}") from None
    if args.output is not None:
        Path(args.output).write_text(result.fragment(), encoding="utf-8")
    if args.json:
        sys.stdout.write(result.candidates.to_json(orient="records", indent=2) + "\n")
        return EXIT_OK
    if args.quiet:
        return EXIT_OK
    cols = ["candidate", "setting", "link_saving_pct", "bound_pct", "saving_pct", "slowdown_pct"]
    rows = [
        [
            f"c{i + 1}" + (" *" if i == result.chosen else ""),
            "; ".join(
                f"{kind} {s['idle_timeout_us']:g}/{s['wake_time_us']:g} us"
                + (f" {s['control']}" if s.get("control") else "")
                for kind, s in r["settings"].items()
            )
            or "always-on",
            f"{r['link_saving_pct']:.2f}",
            f"{r['penalty_bound_pct']:.2f}",
            f"{r['saving_pct']:.3f}",
            f"{r['slowdown_pct']:.3f}",
        ]
        for i, r in enumerate(result.candidates.to_dict("records"))
    ]
    if rows:
        sys.stdout.write(_format.table(cols, rows, [False, False, True, True, True, True]))
    if result.chosen is None:
        sys.stdout.write(
            f"\nno screened setting saves energy within a {budget:g} % slowdown: keep always-on.\n"
        )
        return EXIT_OK
    best = result.candidates.iloc[result.chosen]
    sys.stdout.write(
        f"\nchosen (idle_timeout/wake_time per link kind): {rows[result.chosen][1]}\n"
        f"whole-machine energy saving {best['saving_pct']:.3f} %, confirmed slowdown "
        f"{best['slowdown_pct']:.3f} % (budget {budget:g} %)\n"
    )
    if args.output is not None:
        sys.stdout.write(f"written to {args.output}\n")
    return EXIT_OK


# --------------------------------------------------------------------------- analyze


def _times(option: str, text: str) -> list[float]:
    """The times (us) of a comma-separated option: at least one, each finite and >= 0."""
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError as e:
        raise UsageError(f"{option} {text!r}: expected a comma-separated list of times, us") from e
    if not values:
        raise UsageError(f"{option} {text!r}: expected at least one time, us")
    bad = [v for v in values if not (math.isfinite(v) and v >= 0)]
    if bad:
        raise UsageError(
            f"{option} {text!r}: times must be finite numbers >= 0, got "
            + ", ".join(f"{v:g}" for v in bad)
        )
    return values


def cmd_analyze_idle(args: argparse.Namespace) -> int:
    from tracewatt.analysis import SCREEN_TABLES, screen_idle
    from tracewatt.results import Results

    path = Path(args.results)
    if not (path / "summary.json").is_file():
        raise UsageError(
            f"{args.results}: not a results folder (no summary.json); write one with "
            "`tracewatt run CONFIG -o DIR`"
        )
    res = Results.read(path)
    missing = [t for t in SCREEN_TABLES if t not in res.tables]
    if missing:
        raise UsageError(
            f"{path / (missing[0] + '.parquet')}: missing; analyze idle needs the run's "
            f"{', '.join(SCREEN_TABLES)} tables (write the results again with tracewatt run -o)"
        )
    try:
        df = screen_idle(
            res,
            _times("--timeouts", args.timeouts),
            _times("--wakes", args.wakes),
            None if args.sleeps is None else _times("--sleeps", args.sleeps),
            [k.strip() for k in args.links.split(",") if k.strip()] or None,
            args.control,
        )
    except ValueError as e:
        raise UsageError(f"{args.results}: {e}") from None
    if args.output is not None:
        df.to_csv(args.output, index=False)
    if args.json:
        sys.stdout.write(df.to_json(orient="records", indent=2) + "\n")
    elif not args.quiet:
        cols = [
            "idle_timeout_us",
            "wake_time_us",
            "sleep_time_us",
            "wakes",
            "lpi_fraction",
            "link_saving_pct",
            "penalty_bound_pct",
            "exact",
            "confirm",
        ]
        rows = [
            [
                f"{r.idle_timeout_us:g}",
                f"{r.wake_time_us:g}",
                f"{r.sleep_time_us:g}",
                f"{r.wakes:,.0f}",
                f"{r.lpi_fraction:.4f}",
                f"{r.link_saving_pct:.2f}",
                f"{r.penalty_bound_pct:.4f}",
                "yes" if r.exact else "interp.",
                "confirm" if r.confirm else "",
            ]
            for r in df.itertuples()
        ]
        sys.stdout.write(_format.table(cols, rows, [True] * 7 + [False, False]))
        bound = str(df["bound"].iloc[0])
        sys.stdout.write(
            "\nconfirm: Pareto-optimal in link energy and penalty bound; check these by full "
            "simulation (tracewatt compare with --set power.links.idle_timeout_us=...).\n"
            + (
                "penalty_bound_pct: the wakes (x wake + sleep time) the longest chain of "
                "dependent messages can meet on its routes: a first-order bound on the "
                "slowdown (see docs/cli.md).\n"
                if bound == "critical_path"
                else "penalty_bound_pct: every wake end to end (x wake + sleep time): a worst "
                "case that grows with the machine; run with --set output.messages=true for the "
                "critical-path bound.\n"
            )
        )
        if res.config["machine"].get("credits") == "reverse_link":
            sys.stdout.write(
                "caveat: credits travel on the reverse link (machine.credits = reverse_link): "
                "their frames end idle intervals and wake links as packets do (counted above), "
                "but a credit delayed by a wake holds back a sender only when its buffer is "
                "full, which the penalty bound does not count.\n"
            )
        paired = int(df["paired"].iloc[0])
        if paired and bool(df["pairs_exact"].all()):
            sys.stdout.write(
                f"paired: {paired} link directions screened as paired links (both directions "
                "idle together, one wake per link) from pair_idle_thresholds.\n"
            )
        elif paired:
            sys.stdout.write(
                f"caveat: {paired} screened link directions are `paired` (they sleep "
                "only when both directions are idle); the screening counts each direction's "
                "idle intervals alone, so its LPI share and saving overestimate theirs; run "
                "with --set output.pair_idle=true (at these timeouts among "
                "output.idle_thresholds_us) to screen them exactly.\n"
            )
    return EXIT_OK


def cmd_analyze_joblog(args: argparse.Namespace) -> int:
    from tracewatt import joblog

    given = {name: getattr(args, name) for name in joblog.JOBLOG_OPTIONS}
    try:
        settings = joblog.resolve_settings(
            args.config, given, label=lambda name: "--" + name.replace("_", "-")
        )
        result = joblog.analyze(args.log, settings)
    except joblog.JoblogError as e:
        raise UsageError(str(e)) from None
    if args.json:
        sys.stdout.write(json.dumps(result.to_dict(), indent=2, sort_keys=True) + "\n")
    else:
        sys.stdout.write(joblog.format_text(result))
    return EXIT_OK


# --------------------------------------------------------------------------- validate


def cmd_validate(args: argparse.Namespace) -> int:
    from tracewatt.validate import CHECKS, run_checks

    select = args.check or None
    for k in select or []:
        if k not in CHECKS:
            raise UsageError(f"--check {k}: no such check; expected one of {', '.join(CHECKS)}")
    data = None
    if args.slow:
        from tracewatt.validate import CLASS_B_TRACES, class_b_trace

        data = Path(args.data)
        missing = [t for t in CLASS_B_TRACES if not class_b_trace(data, t).is_dir()]
        if missing:
            raise UsageError(
                f"--slow replays the NPB class B traces; {class_b_trace(data, missing[0])} not "
                "found (give the folder holding dumpi/npb-<name>.B-4ranks with --data)"
            )
    out = _output_dir(args)
    checks = []
    for k in CHECKS:
        if select is not None and k not in select:
            continue
        if not args.quiet and not args.json:
            _warn(f"check {k}: running")
        checks.extend(run_checks([k], data))
    if out is not None:
        from tracewatt import __version__

        record = {"tracewatt_version": __version__, "checks": [c.record() for c in checks]}
        _empty_output(out)
        (out / "validate.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        if not args.quiet:
            _warn(f"checks' data written to {out / 'validate.json'} (`tracewatt report {out}`)")
    if args.json:
        sys.stdout.write(json.dumps([c.to_dict() for c in checks], indent=2) + "\n")
    elif not args.quiet:
        for c in checks:
            verdict = "PASS" if c.passed else "FAIL"
            sys.stdout.write(
                f"[{verdict}] {c.id}. {c.name}\n  target:    {c.target}\n"
                f"  simulated: {c.simulated}\n"
            )
            if args.verbose or not c.passed:
                sys.stdout.write("".join(f"    {d}\n" for d in c.details))
    return EXIT_OK if all(c.passed for c in checks) else EXIT_VALIDATION


# --------------------------------------------------------------------------- report


def cmd_report(args: argparse.Namespace) -> int:
    from tracewatt import report

    path = Path(args.results)
    if args.format is not None and args.figures is None:
        # The HTML embeds PNGs whatever --format says: silently ignoring it would mislead.
        raise UsageError(f"--format {args.format}: only with --figures DIR (the HTML embeds PNG)")
    if (path / "sweep.json").is_file() and (path / "sweep.parquet").is_file():
        frame, meta = report.load_sweep(path)
        report_figures = report.sweep_figures(frame, meta)
        sections = report.sweep_sections(frame, meta)
    elif (path / "validate.json").is_file():
        validation = report.load_validation(path)
        report_figures = report.validation_figures(validation)
        sections = report.validation_sections(validation)
    elif (path / "summary.json").is_file():
        results, baseline = report.load(path)
        report_figures = report.figures(results, baseline)
        sections = report.run_sections(results, baseline)
    else:
        raise UsageError(
            f"{args.results}: not a results folder (no summary.json, sweep.json with "
            "sweep.parquet, or validate.json); write one with `tracewatt run CONFIG -o DIR`, "
            "`tracewatt compare CONFIG -o DIR`, `tracewatt sweep SPEC -o DIR`, `tracewatt study "
            "-o DIR` or `tracewatt validate -o DIR`"
        )
    if args.figures is not None:
        written = report.write_figures(report_figures, args.figures, args.format or "png")
        if not args.quiet:
            sys.stdout.write("".join(f"{p}\n" for p in written))
        if args.output is None:
            return EXIT_OK
    out = Path(args.output) if args.output is not None else path / "report.html"
    out.write_text(report.page(str(path), sections, report_figures), encoding="utf-8")
    if not args.quiet:
        sys.stdout.write(f"report written to {out}\n")
    return EXIT_OK


# --------------------------------------------------------------------------- parser


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    from tracewatt import __version__

    p = _Parser(
        prog=PROG,
        description="Packet-level simulation of HPC interconnects and their energy.",
        epilog="Exit codes: 0 ok, 1 internal error, 2 usage/config/topology error, "
        "3 workload/trace/deadlock error, 130 interrupted. See docs/cli.md.",
    )
    p.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    def add_force(sp: argparse.ArgumentParser) -> None:
        sp.add_argument(
            "--force",
            action="store_true",
            help="empty a non-empty output directory first (without it, one is refused)",
        )

    def add_set(sp: argparse.ArgumentParser) -> None:
        sp.add_argument(
            "--set",
            action="append",
            metavar="PATH=VALUE",
            default=[],
            help="override a configuration field; VALUE is a TOML literal "
            "(e.g. --set machine.links.bandwidth_gbps=40 --set 'jobs[0].nodes=4'); repeatable",
        )

    r = sub.add_parser("run", help="run one simulation", description="Run one simulation.")
    r.add_argument("config", metavar="CONFIG", help="configuration file (.toml or .json)")
    r.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        help="write summary.json and the Parquet tables to DIR (default: write nothing)",
    )
    add_force(r)
    r.add_argument(
        "--json", action="store_true", help="print summary.json to stdout instead of the table"
    )
    r.add_argument("-q", "--quiet", action="store_true", help="no progress bar, no summary table")
    r.add_argument("--seed", type=int, metavar="N", help="override the configuration's seed")
    add_set(r)
    r.set_defaults(func=cmd_run)

    m = sub.add_parser(
        "machine", help="describe a configuration's machine", description="Describe the machine."
    )
    m.add_argument("config", metavar="CONFIG", help="configuration file (.toml or .json)")
    m.add_argument("--json", action="store_true", help="print the description as JSON")
    add_set(m)
    m.set_defaults(func=cmd_machine)

    pr = sub.add_parser("presets", help="list the machine presets", description="List presets.")
    pr.add_argument("--json", action="store_true", help="print a JSON list")
    pr.set_defaults(func=cmd_presets)

    def add_sweep_options(sp: argparse.ArgumentParser) -> None:
        ex = sp.add_mutually_exclusive_group()
        ex.add_argument(
            "-j",
            "--workers",
            type=int,
            metavar="N",
            help="local worker processes (default: one per core)",
        )
        ex.add_argument(
            "--scheduler", metavar="ADDR", help="run on this Dask scheduler (tcp://HOST:PORT)"
        )
        ex.add_argument(
            "--cluster",
            metavar="KIND",
            help="start a Dask cluster: local:N (N worker processes here), slurm or pbs "
            "(dask-jobqueue)",
        )
        jq = sp.add_argument_group("slurm / pbs (per job)")
        jq.add_argument("--queue", metavar="Q", help="queue / partition")
        jq.add_argument("--account", metavar="A", help="account to charge")
        jq.add_argument("--walltime", metavar="HH:MM:SS", help="wall time per job")
        jq.add_argument("--cores", type=int, metavar="N", help="cores per job (= worker processes)")
        jq.add_argument("--memory", metavar="SIZE", help="memory per job, e.g. 16GB")
        jq.add_argument("--jobs", type=int, metavar="N", help="jobs to submit (default 1)")
        sp.add_argument(
            "--force",
            action="store_true",
            help="replace the sweep DIR holds when it is another one (without it, it is refused)",
        )
        sp.add_argument("--json", action="store_true", help="print the rows as JSON instead")
        sp.add_argument("-q", "--quiet", action="store_true", help="no progress, no table")

    sw = sub.add_parser(
        "sweep",
        help="run a sweep spec in parallel (local processes or Dask); resumable",
        description="Run every configuration of a sweep spec (base x axes x variants) on a "
        "local process pool or a Dask cluster. Finished runs in DIR are skipped.",
    )
    sw.add_argument(
        "spec", metavar="SPEC", nargs="?", help="a sweep spec (TOML), or a shipped one's name"
    )
    sw.add_argument(
        "-o", "--output", metavar="DIR", help="the sweep's directory (runs/, sweep.parquet)"
    )
    sw.add_argument(
        "--list", action="store_true", help="list the shipped sweep specs (--json: as JSON)"
    )
    add_sweep_options(sw)
    sw.set_defaults(func=cmd_sweep)

    s = sub.add_parser(
        "study",
        help="run the default study (TraceRP machines x workloads, EEE vs always-on)",
        description="Run the shipped sweep spec `default`: the same as `tracewatt sweep "
        "default -o DIR`.",
    )
    s.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        help="the sweep's directory (default: a temporary one; only the table is kept)",
    )
    add_sweep_options(s)
    s.set_defaults(func=cmd_study)

    c = sub.add_parser(
        "compare",
        help="run a configuration and its always-on baseline; print savings and slowdown",
        description="Run the configuration's power policy and the always-on baseline (at once, on "
        "two threads) and print energy saved and slowdown.",
    )
    c.add_argument("config", metavar="CONFIG", help="configuration file (.toml or .json)")
    c.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        help="write the policy's results to DIR (summary.json gains baseline, saving_pct, "
        "slowdown_pct) and the baseline's to DIR/baseline",
    )
    add_force(c)
    c.add_argument("--json", action="store_true", help="print the comparison summary as JSON")
    c.add_argument("-q", "--quiet", action="store_true", help="no progress bar, no table")
    c.add_argument("--seed", type=int, metavar="N", help="override the configuration's seed")
    add_set(c)
    c.set_defaults(func=cmd_compare)

    t = sub.add_parser(
        "tune",
        help="the best link idle_timeout (wake_time, control) per link class within a budget",
        description="Screen link settings per link class from one always-on run, confirm the best "
        "by full simulation (a sweep), print the chosen one and write it as a config fragment.",
    )
    t.add_argument("config", metavar="CONFIG", help="configuration file (.toml or .json)")
    t.add_argument(
        "--slowdown", required=True, metavar="PCT", help="slowdown budget, percent (e.g. 1%%)"
    )
    t.add_argument("--timeouts", help="idle_timeout values to screen, us")
    t.add_argument("--wake-time", metavar="US,...", help="also tune wake_time over these, us")
    t.add_argument("--control", metavar="C,...", help="also tune control: paired,independent")
    t.add_argument("-k", type=int, default=4, help="candidates confirmed by simulation")
    t.add_argument("-o", "--output", metavar="TOML", help="write the chosen setting there")
    t.add_argument(
        "--runs", metavar="DIR", help="keep the confirming sweep there (default: a temporary one)"
    )
    t.add_argument("-j", "--workers", type=int, metavar="N", help="worker processes")
    t.add_argument("--json", action="store_true", help="print the candidates as JSON")
    t.add_argument("-q", "--quiet", action="store_true", help="print nothing")
    add_set(t)
    t.set_defaults(func=cmd_tune)

    a = sub.add_parser("analyze", help="analyses of results", description="Analyses of results.")
    asub = a.add_subparsers(dest="analysis", metavar="ANALYSIS", parser_class=_Parser)
    asub.required = True
    ai = asub.add_parser(
        "idle",
        help="screen idle_timeout / wake_time settings from a run's idle intervals",
        description="From one run's idle intervals (ideally always-on), the wakes, LPI residency, "
        "link energy and penalty bound of every (idle_timeout, wake_time, sleep_time) setting.",
    )
    ai.add_argument("results", metavar="RESULTS", help="a results folder written by run -o")
    ai.add_argument(
        "--timeouts",
        default="10,50,250,600,1250,1600,16000,160000",
        help="idle_timeout values, us, comma-separated",
    )
    ai.add_argument("--wakes", default="5,10,17,170,850,1700", help="wake_time values, us")
    ai.add_argument("--sleeps", help="sleep_time values, us (default: the run's)")
    ai.add_argument(
        "--links",
        default="",
        metavar="KINDS",
        help="only links of these kinds, comma-separated (node, local, global, tree1, torus0, ...)",
    )
    ai.add_argument(
        "--control",
        choices=["paired", "independent"],
        help="the candidate control of the screened links (default: the run's)",
    )
    ai.add_argument("-o", "--output", metavar="CSV", help="also write the table as CSV")
    ai.add_argument("--json", action="store_true", help="print the table as JSON")
    ai.add_argument("-q", "--quiet", action="store_true", help="print nothing")
    ai.set_defaults(func=cmd_analyze_idle)
    aj = asub.add_parser(
        "joblog",
        help="DIMM standby energy of the hotplug policies over a cluster job log (SWF)",
        description="From a Standard Workload Format job log (plain or gzip): the share of "
        "node-time whose memory fits the first DIMM of each channel, and the DIMM standby energy "
        "of always_on, bandwidth_preserving and ideal. Settings not given come from --config, "
        "else the paper's CX400 node. See docs/cli.md for the definitions.",
    )
    aj.add_argument("log", metavar="LOG", help="an SWF job log (.swf or .swf.gz)")
    aj.add_argument(
        "--config", metavar="FILE", help="a TOML file with a [joblog] table of these settings"
    )
    aj.add_argument("--channels", type=int, metavar="N", help="memory channels per node (8)")
    aj.add_argument("--dimms-per-channel", type=int, metavar="N", help="DIMMs per channel (2)")
    aj.add_argument("--dimm-gib", type=float, metavar="GIB", help="capacity of a DIMM (8)")
    aj.add_argument(
        "--dimm-standby-w", type=float, metavar="W", help="standby power of a DIMM that is on (0.9)"
    )
    aj.add_argument(
        "--idle-node-gib", type=float, metavar="GIB", help="memory in use on an idle node (2)"
    )
    aj.add_argument(
        "--cores-per-node",
        type=int,
        metavar="N",
        help="processors per node (default: the header's MaxProcs / MaxNodes)",
    )
    aj.add_argument(
        "--nodes", type=int, metavar="N", help="the machine's nodes (default: the header's)"
    )
    aj.add_argument(
        "--assume-gib",
        type=float,
        metavar="GIB",
        help="memory per node of jobs whose line gives none (default: skip them)",
    )
    aj.add_argument("--json", action="store_true", help="print the results as JSON")
    aj.set_defaults(func=cmd_analyze_joblog)

    v = sub.add_parser(
        "validate",
        help="reproduce the papers' checks; print target beside simulated value",
        description="Run the validation checks of research.md. Exit status 4 if any fails.",
    )
    v.add_argument(
        "--check", action="append", metavar="ID", help="run only this check (repeatable)"
    )
    v.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        help="also write DIR/validate.json: each check with the data of its figure "
        "(`tracewatt report DIR` draws them)",
    )
    add_force(v)
    v.add_argument("--json", action="store_true", help="print the checks as a JSON list")
    v.add_argument(
        "--slow",
        action="store_true",
        help="also run the checks' slower parts on the data beside the repository "
        "(checks 5 and mpi-wait: the real NPB class B traces)",
    )
    v.add_argument(
        "--data",
        default="../shared/data",
        metavar="DIR",
        help="where --slow finds that data (default: ../shared/data)",
    )
    v.add_argument("-v", "--verbose", action="store_true", help="print every check's details")
    v.add_argument("-q", "--quiet", action="store_true", help="print nothing; exit status only")
    v.set_defaults(func=cmd_validate)

    rp = sub.add_parser(
        "report",
        help="figures and a self-contained HTML report of a results folder",
        description="Write one HTML file (figures embedded, no external links) for a results "
        "folder written by run -o or compare -o; or, with --figures, the figures as files.",
    )
    rp.add_argument(
        "results",
        metavar="RESULTS",
        help="a results folder (run -o, compare -o, sweep -o or study -o)",
    )
    rp.add_argument(
        "-o",
        "--output",
        metavar="HTML",
        help="the HTML file to write (default: RESULTS/report.html; with --figures, none unless "
        "given)",
    )
    rp.add_argument("--figures", metavar="DIR", help="write each figure to DIR/<figure>.FORMAT")
    rp.add_argument(
        "--format", choices=("png", "svg"), help="format of the --figures files (default png)"
    )
    rp.add_argument("-q", "--quiet", action="store_true", help="print nothing")
    rp.set_defaults(func=cmd_report)

    # Imported here: cli_trace imports this module's helpers.
    from tracewatt import cli_trace

    cli_trace.register(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        for opt in ("workers", "jobs", "cores"):
            value = getattr(args, opt, None)
            if value is not None and value < 1:
                parser.error(f"--{opt} must be at least 1")
        code: int = args.func(args)
        return code
    except KeyboardInterrupt as e:
        _error("terminated" if isinstance(e, Terminated) else "interrupted")
        return exit_code(e)
    except (TracewattError, UsageError) as e:
        _error(str(e))
        return exit_code(e)
    except BrokenPipeError:
        # stdout closed early (e.g. `| head`): not an error of ours.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except OSError as e:
        _error(f"{e.filename + ': ' if e.filename else ''}{e.strerror or e}")
        return EXIT_INTERNAL
    except Exception as e:
        _error(f"internal error: {type(e).__name__}: {e} (please report this)")
        if os.environ.get("TRACEWATT_DEBUG"):
            traceback.print_exc()
        return EXIT_INTERNAL
    except BaseException as e:
        # A Rust panic surfaces as pyo3's PanicException, a BaseException.
        if type(e).__name__ == "PanicException":
            _error(f"internal error: {e} (please report this)")
            if os.environ.get("TRACEWATT_DEBUG"):
                traceback.print_exc()
            return EXIT_INTERNAL
        raise


def entry() -> NoReturn:
    sys.exit(main())


if __name__ == "__main__":
    entry()
