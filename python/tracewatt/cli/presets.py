"""``tracewatt presets``: the built-in machines, each with a one-line description."""

from __future__ import annotations

import argparse
import json
import sys

from tracewatt.cli.common import EXIT_OK
from tracewatt.simulation import presets


def cmd_presets(args: argparse.Namespace) -> int:
    listed = presets()
    if args.json:
        records = [{"name": n, "description": d} for n, d in listed.items()]
        sys.stdout.write(json.dumps(records, indent=2) + "\n")
    else:
        width = max(len(n) for n in listed) + 2
        sys.stdout.write("".join(f"{n:<{width}}{d}\n" for n, d in listed.items()))
    return EXIT_OK
