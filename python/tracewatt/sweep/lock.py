"""One sweep at a time in a sweep's directory: ``DIR/.lock``, locked while a sweep uses ``DIR``
and holding its process id, so that a second sweep is refused naming the first."""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
from collections.abc import Iterator
from pathlib import Path

from tracewatt.errors import ConfigError

LOCK_FILE = ".lock"


@contextlib.contextmanager
def locked(out: Path) -> Iterator[None]:
    """Holds ``out/.lock`` for this process, or raises :class:`ConfigError` naming the process
    that holds it. The lock is the kernel's (``flock``): it ends with the process holding it,
    however that process ends, so a lock file left by a killed sweep is taken over."""
    path = out / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "unknown"
            raise ConfigError(
                f"{out}: another sweep is using this directory (process {holder}, {path}); wait "
                "for it to end, or give another directory"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} on {socket.gethostname()}\n".encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)
