"""``tracewatt analyze idle``: link settings screened from one run's idle intervals."""

from __future__ import annotations

import argparse
import sys

from tracewatt import _format
from tracewatt.analysis.idle import (
    SCREEN_TABLES,
    SCREENED_POLICIES,
    UnscreenablePolicy,
    screen_idle,
)
from tracewatt.cli.common import EXIT_OK, UsageError, results_folder, times
from tracewatt.results import Results


def cmd_analyze_idle(args: argparse.Namespace) -> int:
    path = results_folder(args.results)
    if not (path / "summary.json").is_file():
        raise UsageError(
            f"{args.results}: not a results folder (no summary.json); write one with "
            "`tracewatt run CONFIG -o DIR`"
        )
    if args.policy not in SCREENED_POLICIES:
        raise UsageError(f"--policy {args.policy}: {UnscreenablePolicy(args.policy)}")
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
            times("--timeouts", args.timeouts),
            times("--wakes", args.wakes),
            None if args.sleeps is None else times("--sleeps", args.sleeps),
            [k.strip() for k in args.links.split(",") if k.strip()] or None,
            args.control,
            args.policy,
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
            "counted",
            "confirm",
        ]
        paired = int(df["paired"].iloc[0])
        rows = [
            [
                f"{r.idle_timeout_us:g}",
                f"{r.wake_time_us:g}",
                f"{r.sleep_time_us:g}",
                f"{r.wakes:,.0f}",
                f"{r.lpi_fraction:.4f}",
                f"{r.link_saving_pct:.2f}",
                f"{r.penalty_bound_pct:.4f}",
                _counted(bool(r.exact), paired > 0, bool(r.pairs_exact)),
                "confirm" if r.confirm else "",
            ]
            for r in df.itertuples()
        ]
        sys.stdout.write(_format.table(cols, rows, [True] * 7 + [False, False]))
        bound = str(df["bound"].iloc[0])
        if bound == "no_delay":
            sys.stdout.write(
                "\noracle: sleeps at the start of every idle gap longer than its break-even "
                "time (idle_timeout_us here: sleep + wake time) and wakes just before the gap "
                "ends: no packet waits (penalty_bound_pct 0). Its link_saving_pct is the most "
                "any policy with these sleep and wake times can save without delaying "
                "traffic.\n"
            )
        else:
            sys.stdout.write(
                "\nconfirm: Pareto-optimal in link energy and penalty bound; check these by "
                "full simulation (tracewatt compare with --set power.links.idle_timeout_us=...)."
                "\n"
                + (
                    "penalty_bound_pct: the wakes (x wake + sleep time) the longest chain of "
                    "dependent messages can meet on its routes: a first-order bound on the "
                    "slowdown (see docs/cli.md).\n"
                    if bound == "critical_path"
                    else "penalty_bound_pct: every wake end to end (x wake + sleep time): a "
                    "worst case that grows with the machine; run with --set "
                    "output.messages=true for the critical-path bound.\n"
                )
            )
            if res.config["machine"].get("credits") == "reverse_link":
                sys.stdout.write(
                    "caveat: credits travel on the reverse link (machine.credits = "
                    "reverse_link): their frames end idle intervals and wake links as packets "
                    "do (counted above), but a credit delayed by a wake holds back a sender only "
                    "when its buffer is full, which the penalty bound does not count.\n"
                )
        sys.stdout.write(
            "counted: exact at the idle thresholds the run kept (output.idle_thresholds_us), "
            "interp. between them (from the idle-interval histogram) or where LPI refreshes are "
            "priced at their mean rate"
            + (
                "; paired links per link (both directions idle together, one wake per link, "
                "from pair_idle_thresholds) or per dir. (each direction alone: more wakes, and "
                "LPI and saving overestimated).\n"
                if paired
                else ".\n"
            )
            + "link_saving_pct does not change with the wake time: a link waking draws full "
            "power as the idle link it replaces would; what a wake costs is its delay "
            "(penalty_bound_pct), which lengthens the run and every other component's energy "
            "(tracewatt compare measures both).\n"
        )
        alone = sorted({float(t) for t in df.loc[~df["pairs_exact"], "idle_timeout_us"]})
        if paired and not alone:
            sys.stdout.write(
                f"paired: {paired} link directions screened as paired links (both directions "
                "idle together, one wake per link) from pair_idle_thresholds.\n"
            )
        elif paired:
            sys.stdout.write(
                f"caveat: {paired} screened link directions are `paired`; at idle timeout(s) "
                + ", ".join(f"{t:g}" for t in alone)
                + " us their rows count each direction alone (per dir.); run with --set "
                "output.pair_idle=true with these timeouts among output.idle_thresholds_us to "
                "screen them per link.\n"
            )
    return EXIT_OK


def _counted(exact: bool, paired: bool, pairs_exact: bool) -> str:
    """How a row's figures were counted (see the legend ``analyze idle`` prints)."""
    how = "exact" if exact else "interp."
    if paired:
        how += ", per link" if pairs_exact else ", per dir."
    return how
