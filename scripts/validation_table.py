#!/usr/bin/env python3
"""Writes README.md's validation table from ``tracewatt validate --json`` and keeps that output in
docs/data/validation.json, against which tests/test_docs.py holds the table and the checks.
Usage:

    python3 scripts/validation_table.py              # runs `tracewatt validate --json` (minutes)
    python3 scripts/validation_table.py --from FILE  # a `tracewatt validate --json` output instead
    python3 scripts/validation_table.py --check      # exit 1 if README's table is not the JSON's

The table goes between the markers ``<!-- validation-table:start -->`` and
``<!-- validation-table:end -->`` of README.md. It runs the tracewatt that ``python -m tracewatt``
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
README = ROOT / "README.md"
JSON_PATH = ROOT / "docs" / "data" / "validation.json"
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


def run_validate() -> list[dict[str, Any]]:
    """Every check, as `python -m tracewatt validate --json` prints them."""
    cmd = [sys.executable, "-m", "tracewatt", "validate", "--json"]
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


def table_span(text: str) -> tuple[int, int]:
    """Where the table lies in README.md's text: after the start marker's line, before the end's."""
    start, end = text.find(START), text.find(END)
    if start < 0 or end < start:
        raise TableError(f"{README}: expected the lines {START} and then {END}")
    return text.index("\n", start) + 1, end


def readme_table(text: str) -> str:
    a, b = table_span(text)
    return text[a:b].strip()


def with_table(text: str, table: str) -> str:
    a, b = table_span(text)
    return text[:a] + table + "\n" + text[b:]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    g = p.add_mutually_exclusive_group()
    g.add_argument("--from", dest="source", type=Path, help="a `tracewatt validate --json` output")
    g.add_argument("--check", action="store_true", help="compare README's table with the JSON")
    args = p.parse_args(argv)
    try:
        text = README.read_text(encoding="utf-8")
        if args.check:
            if readme_table(text) != render(load_checks(JSON_PATH)):
                print(
                    f"{README}: the validation table is not {JSON_PATH}'s; "
                    "run python3 scripts/validation_table.py",
                    file=sys.stderr,
                )
                return 1
            return 0
        checks = load_checks(args.source) if args.source else run_validate()
        JSON_PATH.write_text(json.dumps(checks, indent=2, ensure_ascii=False) + "\n", "utf-8")
        README.write_text(with_table(text, render(checks)), encoding="utf-8")
    except TableError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
