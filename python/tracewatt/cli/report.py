"""``tracewatt report``: the figures and the HTML report of a results folder."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tracewatt import report
from tracewatt.cli.common import EXIT_OK, UsageError, results_folder


def cmd_report(args: argparse.Namespace) -> int:
    path = results_folder(args.results)
    if args.format is not None and args.figures is None:
        # The HTML embeds PNGs whatever --format says: silently ignoring it would mislead.
        raise UsageError(f"--format {args.format}: only with --figures DIR (the HTML embeds PNG)")
    if (path / "sweep.json").is_file() and (path / "sweep.parquet").is_file():
        frame, meta = report.load_sweep(path)
        report_figures = report.sweep_figures(frame, meta)
        sections = report.sweep_sections(frame, meta)
    elif (path / report.POLICIES_FILE).is_file():
        table = report.load_policies(path)
        report_figures = report.policy_figures(table)
        sections = report.policy_sections(table)
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
            "sweep.parquet, policies.parquet or validate.json); write one with `tracewatt run "
            "CONFIG -o DIR`, `tracewatt compare CONFIG [--policies P,...] -o DIR`, `tracewatt "
            "sweep SPEC -o DIR`, `tracewatt study -o DIR` or `tracewatt validate -o DIR`"
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
