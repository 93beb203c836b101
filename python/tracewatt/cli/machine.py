"""``tracewatt machine``: what a configuration's machine is made of."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from tracewatt import _format
from tracewatt.cli.common import EXIT_OK, load_config
from tracewatt.simulation import machine


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
    info = machine(load_config(args))
    if args.json:
        sys.stdout.write(json.dumps(info, indent=2, sort_keys=True) + "\n")
    else:
        sys.stdout.write(machine_text(info))
    return EXIT_OK
