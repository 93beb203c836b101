"""The local executor of sweeps: a pool of worker processes on this machine."""

from __future__ import annotations

import multiprocessing
import signal
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


def _ignore_sigint() -> None:
    # Workers leave Ctrl-C to the parent, which terminates them: no worker tracebacks, and a
    # SIGINT sent to the parent alone stops them too.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


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
        pool = ProcessPoolExecutor(workers, mp_context=ctx, initializer=_ignore_sigint)
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
