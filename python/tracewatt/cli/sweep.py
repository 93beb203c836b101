"""``tracewatt sweep`` and ``tracewatt study`` (the shipped sweep ``default``): a sweep spec's
runs on local processes or Dask, and their table."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tracewatt import _format, sweep
from tracewatt.cli.common import EXIT_INTERNAL, EXIT_OK, UsageError, parse_set, sigterm_stops
from tracewatt.cli.progress import SweepDisplay
from tracewatt.report.sweep import METRIC_FORMATS
from tracewatt.sweep.cluster import KINDS
from tracewatt.sweep.options import JOB_OPTIONS


def _sweep_target(args: argparse.Namespace) -> dict[str, Any]:
    """The executor options of ``sweep`` / ``study`` as keyword arguments of ``sweep.run``."""
    jq = {k: getattr(args, k) for k in JOB_OPTIONS if k != "jobs"}
    given = [_flag(k) for k, v in jq.items() if v is not None]
    if args.jobs is not None:
        given.append("--jobs")
    if given and args.cluster not in KINDS:
        raise UsageError(f"{', '.join(given)}: only with --cluster slurm or --cluster pbs")
    if args.cluster is not None and args.cluster not in KINDS:
        n = args.cluster.removeprefix("local:")
        if not args.cluster.startswith("local:") or not n.isdigit() or int(n) < 1:
            raise UsageError(f"--cluster {args.cluster}: expected local:N (N >= 1), slurm or pbs")
    return {
        "workers": args.workers,
        "scheduler": args.scheduler,
        "cluster": args.cluster,
        "cluster_options": {k: v for k, v in jq.items() if v is not None},
        "jobs": args.jobs,
    }


def _flag(option: str) -> str:
    """The command-line option of a worker-job option (``log_dir``: ``--log-dir``)."""
    return "--directive" if option == "directives" else f"--{option.replace('_', '-')}"


def _where(args: argparse.Namespace) -> str:
    if args.scheduler is not None:
        return f"on the Dask scheduler {args.scheduler}"
    if args.cluster is not None:
        return f"on a Dask cluster ({args.cluster})"
    return f"on {args.workers or os.cpu_count() or 1} local process(es)"


def _sweep_dir(path: str) -> Path:
    """``-o DIR``: new, empty, or a sweep's (which is resumed)."""
    return sweep.check_out_dir(path)


def _run_sweep(args: argparse.Namespace, spec_path: Path, out: Path) -> int:
    spec = sweep.SweepSpec.load(spec_path)
    for item in args.set:
        spec = spec.with_base_field(*parse_set(item))
    if getattr(args, "network", None) is not None:
        spec = spec.with_base_field("machine.network", args.network)
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
    formats: dict[str, Callable[[float], str]] = {
        **METRIC_FORMATS,
        "lpi_share": lambda v: f"{v:.3f}",
    }
    order = ("makespan_s", "energy_j", "lpi_share", "saving_pct", "link_saving_pct", "slowdown_pct")
    metrics = [(k, formats[k]) for k in order]
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
    spec = sweep.shipped_spec_path("default")
    if args.output is not None:
        return _run_sweep(args, spec, _sweep_dir(args.output))
    with tempfile.TemporaryDirectory(prefix="tracewatt-study-") as tmp:
        return _run_sweep(args, spec, Path(tmp))
