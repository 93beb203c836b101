"""Checks that two `tracewatt run -o DIR` result directories hold the same results, byte for byte.

    python scripts/compare_results.py BEFORE_DIR AFTER_DIR

Every file but `timing.json` (wall-clock times, different on every run) must exist in both and
be identical: the check that a change meant only to make the simulator faster changed no
result. For a Parquet table that differs, the columns that differ are named. Exit status 0 when
identical, 1 when not, 2 for unusable arguments.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow.parquet as pq

#: Files that legitimately differ between two runs of one configuration.
SKIPPED = {"timing.json"}


def _differing_columns(a: Path, b: Path) -> str:
    ta, tb = pq.read_table(a), pq.read_table(b)
    if ta.schema != tb.schema:
        return "schemas differ"
    if ta.num_rows != tb.num_rows:
        return f"{ta.num_rows} rows against {tb.num_rows}"
    cols = [n for n in ta.column_names if not ta[n].equals(tb[n])]
    return "columns " + ", ".join(cols) if cols else "same values, different bytes"


def compare(before: Path, after: Path) -> list[str]:
    """The differences between two result directories, one line each (none: identical)."""
    names_a = {p.name for p in before.iterdir() if p.is_file()} - SKIPPED
    names_b = {p.name for p in after.iterdir() if p.is_file()} - SKIPPED
    problems = [f"{n}: only in {before}" for n in sorted(names_a - names_b)]
    problems += [f"{n}: only in {after}" for n in sorted(names_b - names_a)]
    for name in sorted(names_a & names_b):
        a, b = before / name, after / name
        if a.read_bytes() == b.read_bytes():
            continue
        detail = _differing_columns(a, b) if name.endswith(".parquet") else "contents differ"
        problems.append(f"{name}: {detail}")
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not all(Path(d).is_dir() for d in argv):
        sys.stderr.write("usage: python scripts/compare_results.py BEFORE_DIR AFTER_DIR\n")
        return 2
    before, after = Path(argv[0]), Path(argv[1])
    problems = compare(before, after)
    for line in problems:
        sys.stdout.write(line + "\n")
    if not problems:
        n = len({p.name for p in before.iterdir() if p.is_file()} - SKIPPED)
        sys.stdout.write(f"identical: {n} files\n")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
