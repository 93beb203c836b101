"""``tracewatt compare``: a configuration against its always-on baseline."""

from __future__ import annotations

import argparse
import sys

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
from tracewatt.compare import compare, comparison_json
from tracewatt.report.texts import compare_text


def cmd_compare(args: argparse.Namespace) -> int:
    cfg = load_config(args)
    out = output_dir(args)
    bar = sim_progress(args, cfg)
    try:
        c = compare(cfg, progress=bar.sim if bar else None)
    finally:
        if bar:
            bar.clear()
    wall_s = c.policy_wall_s
    timing = run_timing(c.policy.summary, wall_s) if wall_s is not None else None
    if not args.quiet:
        warn_summary(c.policy.summary)
    if out is not None:
        empty_output(out)
        c.baseline.write(out / "baseline")
        c.policy.write(out)
        # The policy's summary, extended with the baseline and the savings, replaces its own.
        (out / "summary.json").write_text(comparison_json(c))
        if timing is not None:
            write_timing(out, timing)
    if args.json:
        sys.stdout.write(comparison_json(c))
    elif not args.quiet:
        sys.stdout.write(compare_text(c, timing))
    return EXIT_OK
