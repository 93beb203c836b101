"""The local executor of sweeps: a pool of worker processes on this machine."""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from tracewatt.sweep.spec import Run
from tracewatt.sweep.worker import OnResult, OnRunning, execute

#: A worker process that dies this many times while running one run fails that run.
MAX_ATTEMPTS = 3


#: Seconds between a worker's looks at whether the sweep's process is still its parent.
WATCHDOG_S = 0.5

_PR_SET_PDEATHSIG = 1


def _init_worker(parent: int) -> None:
    """Runs first in each worker process: a worker ends with the sweep's process ``parent``,
    also when that process is killed (SIGKILL, the out-of-memory killer) and cannot stop it."""
    # Workers leave Ctrl-C to the parent, which terminates them: no worker tracebacks, and a
    # SIGINT sent to the parent alone stops them too.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform == "linux":
        # The kernel sends SIGKILL to this process when its parent ends. The worker has nothing
        # to save: a run it leaves unfinished has no done.json and runs again on resume.
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    # Elsewhere, and should the parent have ended before prctl: a thread that ends the process
    # once its parent is another (an orphan is given to init or a subreaper). A simulation
    # releases the GIL, so it looks also while a run is in flight.
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(WATCHDOG_S)
    os._exit(1)


def run_pool(
    todo: Mapping[str, Run], out: Path, workers: int, on_result: OnResult, on_running: OnRunning
) -> None:
    """Runs ``todo`` (hash -> run) on a pool of worker processes, at most ``workers`` at once.
    A worker that dies breaks the pool: a new one takes over and the runs that were in flight
    start again (a run fails once its worker has died :data:`MAX_ATTEMPTS` times)."""
    pending = deque(todo)
    attempts = dict.fromkeys(todo, 0)
    ctx = multiprocessing.get_context("spawn")
    while pending:
        pool = ProcessPoolExecutor(
            workers, mp_context=ctx, initializer=_init_worker, initargs=(os.getpid(),)
        )
        inflight: dict[Future[dict[str, Any]], str] = {}
        try:
            broken = False
            while (pending and not broken) or inflight:
                while pending and not broken and len(inflight) < workers:
                    h = pending.popleft()
                    inflight[pool.submit(execute, todo[h].config, str(out / todo[h].dir))] = h
                on_running(len(inflight))
                finished, _ = wait(inflight, return_when=FIRST_COMPLETED)
                for f in finished:
                    h = inflight.pop(f)
                    on_running(len(inflight))
                    try:
                        outcome = f.result()
                    except BrokenProcessPool:
                        broken = True
                        attempts[h] += 1
                        if attempts[h] < MAX_ATTEMPTS:
                            pending.appendleft(h)
                            continue
                        outcome = _died(attempts[h])
                    on_result(h, outcome)
        except BaseException:
            _terminate_workers()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)


def _died(n: int) -> dict[str, Any]:
    return {"status": "failed", "error": f"the worker process running it died {n} time(s)"}


def _terminate_workers() -> None:
    # The pool cannot stop a running task: its worker processes are ended directly.
    children = multiprocessing.active_children()
    for p in children:
        p.terminate()
    for p in children:
        p.join(timeout=5)
