#!/usr/bin/env python3
"""Times the start of the command line: ``tracewatt --version`` and ``tracewatt --help`` against a
bare ``python -c pass`` of the same interpreter, and prints the ratios. The target is 5x at most
(issue #14): the CLI must not import pandas or pyarrow before a command needs them. Usage:

    python3 scripts/bench_startup.py            # best of 20 runs each
    python3 scripts/bench_startup.py --runs 50

It measures the tracewatt that `python -m tracewatt` finds with this interpreter. Not a test:
wall times depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

TARGET_RATIO = 5.0


def best_of(cmd: list[str], runs: int) -> float:
    """The shortest wall time of ``runs`` runs, s (the least disturbed by other load)."""
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20, help="runs of each command (best is kept)")
    args = ap.parse_args()
    py = sys.executable
    bare_s = best_of([py, "-c", "pass"], args.runs)
    print(f"python -c pass        {bare_s * 1e3:8.1f} ms")
    worst = 0.0
    for flag in ("--version", "--help"):
        t = best_of([py, "-m", "tracewatt", flag], args.runs)
        worst = max(worst, t / bare_s)
        print(f"tracewatt {flag:<11} {t * 1e3:8.1f} ms  {t / bare_s:5.1f}x")
    verdict = "within" if worst <= TARGET_RATIO else "OVER"
    print(f"worst ratio {worst:.1f}x: {verdict} the {TARGET_RATIO:g}x target")
    return 0 if worst <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
