"""``tracewatt tune``: the best link setting per link class within a slowdown budget."""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

from tracewatt import _format
from tracewatt.analysis.tuning import DEFAULT_TIMEOUTS_US, describe, tune
from tracewatt.cli.common import EXIT_OK, UsageError, load_config, output_file, times


def _percent(text: str) -> float:
    try:
        value = float(text.strip().removesuffix("%"))
    except ValueError as e:
        raise UsageError(f"--slowdown {text!r}: expected a percentage, e.g. 1%") from e
    if not (value >= 0 and value != float("inf")):
        raise UsageError(f"--slowdown {text!r}: expected a non-negative percentage")
    return value


def cmd_tune(args: argparse.Namespace) -> int:
    cfg = load_config(args)
    if args.output is not None:
        output_file(args.output)
    budget = _percent(args.slowdown)
    timeouts = (
        list(DEFAULT_TIMEOUTS_US) if args.timeouts is None else times("--timeouts", args.timeouts)
    )
    wakes = None if args.wake_time is None else times("--wake-time", args.wake_time)
    controls = None
    if args.control is not None:
        controls = [c.strip() for c in args.control.split(",") if c.strip()]
        if not controls:
            raise UsageError(f"--control {args.control!r}: expected paired and/or independent")
    for c in controls or []:
        if c not in ("paired", "independent"):
            raise UsageError(f"--control {c!r}: expected paired and/or independent")
    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
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
                policies=policies,
                confirm=args.confirm,
            )
        except ValueError as e:
            if str(e).startswith("policies: "):
                raise UsageError(f"--policies {args.policies!r}: {e}") from None
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
            describe(r["settings"]),
            _screened(r["link_saving_pct"]),
            _screened(r["penalty_bound_pct"]),
            f"{r['saving_pct']:.3f}",
            f"{r['slowdown_pct']:.3f}",
        ]
        for i, r in enumerate(result.candidates.to_dict("records"))
    ]
    if rows:
        sys.stdout.write(_format.table(cols, rows, [False, False, True, True, True, True]))
    screened, confirmed = result.networks
    if (screened, confirmed) != ("packet", "packet"):
        sys.stdout.write(f"screened on the {screened} model, confirmed on the {confirmed} model\n")
    if result.chosen is None:
        sys.stdout.write(
            f"\nno screened setting saves energy within a {budget:g} % slowdown: keep always-on.\n"
        )
        return EXIT_OK
    best = result.candidates.iloc[result.chosen]
    only_timeouts = all(s.get("policy", "timeout") == "timeout" for s in best["settings"].values())
    what = " (idle_timeout/wake_time per link kind)" if only_timeouts else ""
    sys.stdout.write(
        f"\nchosen{what}: {rows[result.chosen][1]}\n"
        f"whole-machine energy saving {best['saving_pct']:.3f} %, confirmed slowdown "
        f"{best['slowdown_pct']:.3f} % (budget {budget:g} %)\n"
    )

    if args.output is not None:
        sys.stdout.write(f"written to {args.output}\n")
    return EXIT_OK


def _screened(value: float) -> str:
    """A screened figure; ``-`` for a candidate only the simulation prices."""
    return "-" if math.isnan(value) else f"{value:.2f}"
