#!/usr/bin/env python3
"""Times ``tracewatt analyze joblog`` on a synthetic SWF log (default: 1,000,000 jobs).

The log is generated here (seeded, so every run reads the same bytes) into a temporary folder,
plain and gzip, and deleted afterwards; nothing is committed. Usage:

    python3 scripts/bench_joblog.py             # 1,000,000 jobs
    python3 scripts/bench_joblog.py --jobs 200000

It measures the tracewatt that `import tracewatt` finds (reinstall with `pip install .`, or put
the sources first with PYTHONPATH=python and an in-place build of the extension).
"""

from __future__ import annotations

import argparse
import gzip
import random
import tempfile
import time
from pathlib import Path

import tracewatt
from tracewatt.analysis import joblog

NODES, CORES = 1024, 16


def write_log(path: Path, jobs: int, seed: int = 1) -> None:
    """A log shaped like the archive's: header, then jobs arriving about a minute apart with
    power-of-two processor counts, log-normal run times and per-processor memory spread over
    distinct values (so nothing about it repeats conveniently); some used memory unknown."""
    rng = random.Random(seed)
    submit = 0
    with path.open("w", encoding="ascii") as f:
        f.write(f"; Version: 2.2\n; MaxNodes: {NODES}\n; MaxProcs: {NODES * CORES}\n;\n")
        for job in range(1, jobs + 1):
            submit += rng.randrange(0, 120)
            wait = rng.randrange(0, 3600)
            run = max(1, int(rng.lognormvariate(7.0, 1.5)))
            procs = 2 ** rng.randrange(0, 11)
            used = rng.randrange(50_000, 8_000_000) if rng.random() < 0.9 else -1
            req = rng.randrange(50_000, 8_000_000)
            f.write(
                f"{job} {submit} {wait} {run} {procs} {run * 0.9:.2f} {used} {procs} "
                f"{run * 2} {req} 1 1 1 1 1 1 -1 -1\n"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1_000_000)
    args = ap.parse_args()
    print(f"tracewatt {tracewatt.__version__} from {Path(tracewatt.__file__).parent}")
    settings = joblog.resolve_settings()
    with tempfile.TemporaryDirectory() as tmp:
        plain = Path(tmp) / "synthetic.swf"
        t0 = time.perf_counter()
        write_log(plain, args.jobs)
        print(f"generated {args.jobs:,} jobs in {time.perf_counter() - t0:.1f} s")
        packed = Path(tmp) / "synthetic.swf.gz"
        with plain.open("rb") as src, gzip.open(packed, "wb", compresslevel=6) as dst:
            dst.write(src.read())
        for path in (plain, packed):
            t0 = time.perf_counter()
            r = joblog.analyze(path, settings)
            wall = time.perf_counter() - t0
            mb = path.stat().st_size / 1e6
            print(
                f"{path.name:<18} {mb:7.1f} MB  {wall:6.2f} s  "
                f"{r.jobs / wall / 1e6:.2f} M jobs/s  (share {r.share_fits_first_dimms:.4f}, "
                f"ratio {r.saving_ratio})"
            )


if __name__ == "__main__":
    main()
