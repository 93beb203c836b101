#!/usr/bin/env python3
"""Times ``tracewatt report`` of a study folder (the main job's, by default): the target is under
10 s for the default study. Usage:

    python3 -m tracewatt study -o study-results     # once (the main job does it)
    python3 scripts/bench_report.py                 # times `tracewatt report study-results`
    python3 scripts/bench_report.py DIR --repeat 5

The report is written to a temporary folder and deleted afterwards. It measures the tracewatt
that `import tracewatt` finds (reinstall with `pip install .` after changes).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from tracewatt import cli

TARGET_S = 10.0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("results", nargs="?", default="study-results", help="a results or study folder")
    p.add_argument("--repeat", type=int, default=3, help="timed renders (default 3)")
    args = p.parse_args()
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            start = time.perf_counter()
            code = cli.main(["report", args.results, "-q", "-o", str(Path(tmp) / f"r{i}.html")])
            times.append(time.perf_counter() - start)
            if code != 0:
                return code
    best, median = min(times), statistics.median(times)
    print(
        f"tracewatt report {args.results}: best {best:.2f} s, median {median:.2f} s"
        f" over {len(times)} (target < {TARGET_S:.0f} s)"
    )
    return 0 if median < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
