#!/usr/bin/env python3
"""Writes README.md's validation table from ``tracewatt validate --json`` and keeps that output in
docs/data/validation.json, against which tests/test_docs.py holds the table and the checks; with
``--network flow``, the same for ``validate --network flow``: docs/fast-mode.md's table and
docs/data/validation-flow.json. Usage:

    python3 scripts/validation_table.py              # runs `tracewatt validate --json` (minutes)
    python3 scripts/validation_table.py --from FILE  # a `tracewatt validate --json` output instead
    python3 scripts/validation_table.py --check      # exit 1 if README's table is not the JSON's
    python3 scripts/validation_table.py --network flow [--from FILE | --check]

The table goes between the markers ``<!-- validation-table:start -->`` and
``<!-- validation-table:end -->`` of its page. It runs the tracewatt that ``python -m tracewatt``
finds with this interpreter (put a checkout's in-place build first with PYTHONPATH=python).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
#: Per network model, the page that shows its table and the file that keeps its checks.
PAGES = {
    "packet": (ROOT / "README.md", ROOT / "docs" / "data" / "validation.json"),
    "flow": (ROOT / "docs" / "fast-mode.md", ROOT / "docs" / "data" / "validation-flow.json"),
}
START = "<!-- validation-table:start -->"
END = "<!-- validation-table:end -->"
#: The fields of a check in `validate --json` that the table shows.
FIELDS = ("id", "name", "target", "simulated", "passed")
#: `validate`'s exit statuses that still carry every check's result (4: a check failed).
VALIDATE_DONE = (0, 4)


class TableError(Exception):
    """Input the script cannot use; the message names the file and what was expected."""


def load_checks(path: Path) -> list[dict[str, Any]]:
    """The checks of a `validate --json` output, each with the fields the table needs."""
    try:
        checks = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise TableError(f"{path}: not a `tracewatt validate --json` output: {e}") from None
    return checked(checks, str(path))


def checked(checks: Any, source: str) -> list[dict[str, Any]]:
    if not isinstance(checks, list) or not checks:
        raise TableError(f"{source}: expected a non-empty JSON list of checks")
    for i, c in enumerate(checks):
        missing = [f for f in FIELDS if not isinstance(c, dict) or f not in c]
        if missing:
            raise TableError(f"{source}: check {i} lacks {', '.join(missing)}")
    return checks


def run_validate(network: str) -> list[dict[str, Any]]:
    """Every check, as `python -m tracewatt validate --json --network NETWORK` prints them."""
    cmd = [sys.executable, "-m", "tracewatt", "validate", "--json", "--network", network]
    p = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if p.returncode not in VALIDATE_DONE:
        raise TableError(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()}")
    try:
        return checked(json.loads(p.stdout), "tracewatt validate --json")
    except json.JSONDecodeError as e:
        raise TableError(f"tracewatt validate --json printed no JSON: {e}") from None


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(checks: list[dict[str, Any]]) -> str:
    """The Markdown table: a row per check, the check's own texts."""
    rows = ["| check | target | simulated | result |", "|---|---|---|---|"]
    for c in checks:
        label = f"{c['id']}. {c['name']}" if c["id"].isdigit() else f"`{c['id']}`: {c['name']}"
        result = {True: "passes", False: "**fails**", None: "not applicable"}[c["passed"]]
        rows.append(f"| {cell(label)} | {cell(c['target'])} | {cell(c['simulated'])} | {result} |")
    return "\n".join(rows)


def table_span(text: str, page: Path = PAGES["packet"][0]) -> tuple[int, int]:
    """Where the table lies in a page's text: after the start marker's line, before the end's."""
    start, end = text.find(START), text.find(END)
    if start < 0 or end < start:
        raise TableError(f"{page}: expected the lines {START} and then {END}")
    return text.index("\n", start) + 1, end


def readme_table(text: str, page: Path = PAGES["packet"][0]) -> str:
    a, b = table_span(text, page)
    return text[a:b].strip()


def with_table(text: str, table: str, page: Path) -> str:
    a, b = table_span(text, page)
    return text[:a] + table + "\n" + text[b:]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    g = p.add_mutually_exclusive_group()
    g.add_argument("--from", dest="source", type=Path, help="a `tracewatt validate --json` output")
    g.add_argument("--check", action="store_true", help="compare the page's table with the JSON")
    p.add_argument(
        "--network",
        choices=sorted(PAGES),
        default="packet",
        help="the network model validated (packet: README.md; flow: docs/fast-mode.md)",
    )
    args = p.parse_args(argv)
    page, json_path = PAGES[args.network]
    try:
        text = page.read_text(encoding="utf-8")
        if args.check:
            if readme_table(text, page) != render(load_checks(json_path)):
                print(
                    f"{page}: the validation table is not {json_path}'s; run python3 "
                    f"scripts/validation_table.py --network {args.network}",
                    file=sys.stderr,
                )
                return 1
            return 0
        checks = load_checks(args.source) if args.source else run_validate(args.network)
        json_path.write_text(json.dumps(checks, indent=2, ensure_ascii=False) + "\n", "utf-8")
        page.write_text(with_table(text, render(checks), page), encoding="utf-8")
    except TableError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
