"""What every command module of the CLI shares: exit codes and how messages are printed.

Kept apart from ``cli`` so that command modules (``cli_trace``) import it, and ``cli`` imports
them, without an import cycle.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

from tracewatt.errors import (
    ConfigError,
    DeadlockError,
    InterruptedError,
    ResultsError,
    TracewattError,
    WorkloadError,
)

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_RUN = 3
EXIT_VALIDATION = 4
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143  # 128 + SIGTERM, as a shell reports a process SIGTERM ended

PROG = "tracewatt"


class UsageError(Exception):
    """A command-line mistake (exit code 2)."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, as a batch scheduler sends at a job's time limit (and `kill`): stops what runs
    the way Ctrl-C does, so what finished is kept."""


@contextlib.contextmanager
def sigterm_stops() -> Iterator[None]:
    """Within it, SIGTERM raises :class:`Terminated` in the main thread (elsewhere signals
    cannot be handled, and the default stays)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: FrameType | None) -> None:
        raise Terminated

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def exit_code(e: BaseException) -> int:
    """The documented exit code for an exception."""
    if isinstance(e, Terminated):
        return EXIT_TERMINATED
    if isinstance(e, KeyboardInterrupt | InterruptedError):
        return EXIT_INTERRUPTED
    if isinstance(e, ConfigError | ResultsError | UsageError):
        return EXIT_USAGE
    if isinstance(e, WorkloadError | DeadlockError | TracewattError):
        return EXIT_RUN
    return EXIT_INTERNAL


def _error(msg: str) -> None:
    print(f"{PROG}: error: {msg}", file=sys.stderr, flush=True)


def _warn(msg: str) -> None:
    print(f"{PROG}: {msg}", file=sys.stderr, flush=True)


def writable_dir(path: str | os.PathLike[str], what: str) -> Path:
    """``-o DIR`` as an absolute path (which errors name), created if missing and checked
    writable (by writing a file there) before anything runs; ``what`` is what goes there.
    Raises :class:`UsageError`."""
    out = Path(path).absolute()
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: exists and is not a directory; give a directory for -o")
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as e:
        raise UsageError(f"{out}: cannot write {what} there: {e.strerror or e}") from e
    return out
