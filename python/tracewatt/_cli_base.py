"""What every command module of the CLI shares: exit codes and how messages are printed.

Kept apart from ``cli`` so that command modules (``cli_trace``) import it, and ``cli`` imports
them, without an import cycle.
"""

from __future__ import annotations

import sys

from tracewatt.errors import (
    ConfigError,
    DeadlockError,
    InterruptedError,
    TracewattError,
    WorkloadError,
)

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_RUN = 3
EXIT_VALIDATION = 4
EXIT_INTERRUPTED = 130

PROG = "tracewatt"


class UsageError(Exception):
    """A command-line mistake (exit code 2)."""


def exit_code(e: BaseException) -> int:
    """The documented exit code for an exception."""
    if isinstance(e, KeyboardInterrupt | InterruptedError):
        return EXIT_INTERRUPTED
    if isinstance(e, ConfigError | UsageError):
        return EXIT_USAGE
    if isinstance(e, WorkloadError | DeadlockError | TracewattError):
        return EXIT_RUN
    return EXIT_INTERNAL


def _error(msg: str) -> None:
    print(f"{PROG}: error: {msg}", file=sys.stderr, flush=True)


def _warn(msg: str) -> None:
    print(f"{PROG}: {msg}", file=sys.stderr, flush=True)
