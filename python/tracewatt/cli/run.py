"""``tracewatt run``: one simulation, its summary, and its results written with ``-o``."""

from __future__ import annotations

import argparse
import sys
import time

from tracewatt.cli.common import (
    EXIT_OK,
    empty_output,
    load_config,
    output_dir,
    run_timing,
    warn_summary,
    write_timing,
)
from tracewatt.cli.progress import sim_progress
from tracewatt.report.run import message_latencies
from tracewatt.report.texts import summary_text
from tracewatt.results import summary_json
from tracewatt.simulation import simulate


def cmd_run(args: argparse.Namespace) -> int:
    cfg = load_config(args)
    out = output_dir(args)
    bar = sim_progress(args, cfg)
    start = time.monotonic()
    try:
        res = simulate(cfg, progress=bar.sim if bar else None)
    finally:
        if bar:
            bar.clear()
    timing = run_timing(res.summary, time.monotonic() - start)
    if not args.quiet:
        warn_summary(res.summary)
    if out is not None:
        empty_output(out)
        res.write(out)
        write_timing(out, timing)
    if args.json:
        sys.stdout.write(summary_json(res.summary))
    elif not args.quiet:
        sys.stdout.write(summary_text(res.summary, timing, message_latencies(res)))
        if out is not None:
            sys.stdout.write(f"results written to {out}\n")
    return EXIT_OK
