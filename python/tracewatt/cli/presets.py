"""``tracewatt presets``: the names of the built-in machines."""

from __future__ import annotations

import argparse
import json
import sys

from tracewatt.cli.common import EXIT_OK
from tracewatt.simulation import presets


def cmd_presets(args: argparse.Namespace) -> int:
    names = presets()
    if args.json:
        sys.stdout.write(json.dumps(names) + "\n")
    else:
        sys.stdout.write("".join(f"{n}\n" for n in names))
    return EXIT_OK
