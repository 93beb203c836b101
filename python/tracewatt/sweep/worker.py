"""One run of a sweep, as a worker (a local process or a Dask worker) runs it."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tracewatt.config import Config
from tracewatt.results import _atomic_write_bytes
from tracewatt.simulation import simulate

#: Called with a run's hash and its outcome (``{"status", "error"}``) as it finishes.
OnResult = Callable[[str, dict[str, Any]], None]
#: Called with the number of runs in flight whenever it changes.
OnRunning = Callable[[int], None]


def execute(config: Config, run_dir: str) -> dict[str, Any]:
    """Runs one configuration into ``run_dir`` (in a worker): the results, then ``done.json``.
    A run that fails writes ``error.json`` instead; the error is returned, not raised."""
    d = Path(run_dir)
    d.mkdir(parents=True, exist_ok=True)
    (d / "error.json").unlink(missing_ok=True)
    start, start_cpu = time.monotonic(), time.thread_time()
    try:
        simulate(config).write(d)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # a Rust panic is a BaseException: it fails this run only
        error = f"{type(e).__name__}: {e}"
        write_json(d / "error.json", {"status": "failed", "error": error})
        return {"status": "failed", "error": error}
    # The engine is single-threaded and runs in this thread; the worker process's own threads
    # (heartbeats, communication) would inflate a process CPU time.
    took = {"wall_s": time.monotonic() - start, "cpu_s": time.thread_time() - start_cpu}
    write_json(d / "done.json", {"status": "ok", "error": "", **took})
    return {"status": "ok", "error": ""}


def write_json(path: Path, d: Mapping[str, Any]) -> None:
    _atomic_write_bytes(path, (json.dumps(d, indent=2) + "\n").encode("utf-8"))
