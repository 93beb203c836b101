"""``tracewatt validate``: the papers' checks, target beside simulated value."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tracewatt._tracewatt import __version__
from tracewatt.cli.common import (
    EXIT_OK,
    EXIT_VALIDATION,
    UsageError,
    _warn,
    empty_output,
    output_dir,
)
from tracewatt.validation import CHECKS, run_checks
from tracewatt.validation.common import CLASS_B_TRACES, class_b_trace, verdict


def cmd_validate(args: argparse.Namespace) -> int:
    select = args.check or None
    for k in select or []:
        if k not in CHECKS:
            raise UsageError(f"--check {k}: no such check; expected one of {', '.join(CHECKS)}")
    data = None
    if args.slow:
        data = Path(args.data)
        missing = [t for t in CLASS_B_TRACES if not class_b_trace(data, t).is_dir()]
        if missing:
            raise UsageError(
                f"--slow replays the NPB class B traces; {class_b_trace(data, missing[0])} not "
                "found (give the folder holding dumpi/npb-<name>.B-4ranks with --data)"
            )
    out = output_dir(args)
    checks = []
    for k in CHECKS:
        if select is not None and k not in select:
            continue
        if not args.quiet and not args.json:
            _warn(f"check {k}: running")
        checks.extend(run_checks([k], data, args.network or "packet"))
    if out is not None:
        record = {"tracewatt_version": __version__, "checks": [c.record() for c in checks]}
        empty_output(out)
        (out / "validate.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        if not args.quiet:
            _warn(f"checks' data written to {out / 'validate.json'} (`tracewatt report {out}`)")
    if args.json:
        sys.stdout.write(json.dumps([c.to_dict() for c in checks], indent=2) + "\n")
    elif not args.quiet:
        for c in checks:
            sys.stdout.write(
                f"[{verdict(c.passed)}] {c.id}. {c.name}\n  target:    {c.target}\n"
                f"  simulated: {c.simulated}\n"
            )
            if args.verbose or c.passed is not True:
                sys.stdout.write("".join(f"    {d}\n" for d in c.details))
    # A check that does not apply fails nothing.
    return EXIT_OK if all(c.passed is not False for c in checks) else EXIT_VALIDATION
