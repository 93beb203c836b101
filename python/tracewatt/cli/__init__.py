"""The ``tracewatt`` command line. See ``docs/cli.md``.

Exit codes: 0 success; 1 unexpected internal error; 2 usage, configuration or topology error;
3 workload, trace or deadlock error (the run could not complete); 130 interrupted.

:mod:`tracewatt.cli.args` declares the arguments; each command is a module of this package
(``run``, ``sweep``, ``analyze_idle``, ...), and :mod:`tracewatt.cli.common` holds what they
share.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn

from tracewatt.cli.args import build_parser
from tracewatt.cli.common import (
    EXIT_INTERNAL,
    EXIT_OK,
    Terminated,
    UsageError,
    _error,
    exit_code,
)
from tracewatt.errors import TracewattError

__all__ = ["build_parser", "entry", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        for opt in ("workers", "jobs", "cores"):
            value = getattr(args, opt, None)
            if value is not None and value < 1:
                parser.error(f"--{opt} must be at least 1")
        code: int = args.func(args)
        return code
    except KeyboardInterrupt as e:
        _error("terminated" if isinstance(e, Terminated) else "interrupted")
        return exit_code(e)
    except (TracewattError, UsageError) as e:
        _error(str(e))
        return exit_code(e)
    except BrokenPipeError:
        # stdout closed early (e.g. `| head`): not an error of ours.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except OSError as e:
        _error(f"{e.filename + ': ' if e.filename else ''}{e.strerror or e}")
        return EXIT_INTERNAL
    except Exception as e:
        _error(f"internal error: {type(e).__name__}: {e} (please report this)")
        if os.environ.get("TRACEWATT_DEBUG"):
            traceback.print_exc()
        return EXIT_INTERNAL
    except BaseException as e:
        # A Rust panic surfaces as pyo3's PanicException, a BaseException.
        if type(e).__name__ == "PanicException":
            _error(f"internal error: {e} (please report this)")
            if os.environ.get("TRACEWATT_DEBUG"):
                traceback.print_exc()
            return EXIT_INTERNAL
        raise


def entry() -> NoReturn:
    sys.exit(main())
