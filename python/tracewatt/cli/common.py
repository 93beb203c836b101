"""What the command modules of the CLI share: exit codes, how messages are printed, and the
checks of configurations, output directories and options that several commands take."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

from tracewatt.config import Config, parse_value
from tracewatt.errors import (
    ClusterError,
    ConfigError,
    DeadlockError,
    ResultsError,
    RunInterrupted,
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
    if isinstance(e, KeyboardInterrupt | RunInterrupted):
        return EXIT_INTERRUPTED
    if isinstance(e, ConfigError | ResultsError | UsageError):
        return EXIT_USAGE
    if isinstance(e, ClusterError):
        return EXIT_INTERNAL
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


def results_folder(text: str) -> Path:
    """A results folder argument: it must exist and be a directory; whether it holds results
    is the command's to say. Raises :class:`UsageError`."""
    path = Path(text)
    if not path.exists():
        raise UsageError(f"{text}: no such directory")
    if not path.is_dir():
        raise UsageError(f"{text}: is a file, not a results folder (a directory)")
    return path


def parse_set(item: str) -> tuple[str, Any]:
    """One ``--set PATH=VALUE``: the field's path and its value, a TOML literal."""
    key, sep, value = item.partition("=")
    key = key.strip()
    if not sep or not key:
        raise UsageError(f"--set {item!r}: expected PATH=VALUE, e.g. seed=3")
    return key, parse_value(value.strip())


def load_config(args: argparse.Namespace) -> Config:
    path = Path(args.config)
    if not path.exists():
        raise UsageError(f"{args.config}: no such file")
    if path.is_dir():
        raise UsageError(f"{args.config}: is a directory, not a configuration file")
    cfg = Config.load(path)
    overrides: dict[str, Any] = {}
    given: dict[str, str] = {}  # field path -> the option that set it, as typed
    for item in getattr(args, "set", None) or []:
        key, value = parse_set(item)
        overrides[key] = value
        given[key] = f"--set {item!r}"
    if getattr(args, "seed", None) is not None:
        overrides["seed"] = args.seed
        given["seed"] = f"--seed {args.seed}"
    if getattr(args, "network", None) is not None:
        overrides["machine.network"] = args.network
        given["machine.network"] = f"--network {args.network}"
    if not overrides:
        return cfg
    try:
        out = cfg.with_overrides(overrides)
        out.validate()
    except ConfigError as e:
        raise _option_error(e, cfg, given) from None
    return out


def _option_error(e: ConfigError, cfg: Config, given: dict[str, str]) -> Exception:
    """A configuration error that an option caused, named by that option: the field the error
    is about is one the option set (a typo in its path, a bad value), or the file is valid
    without the options."""
    message = str(e).removeprefix(f"{cfg.source}: ")
    field = message.split(": ", 1)[0]
    for key, option in given.items():
        path = re.sub(r"\.(\d+)(?=\.|$)", r"[\1]", key)  # jobs.0 is jobs[0]
        if field == path or field.startswith((f"{path}.", f"{path}[")):
            return UsageError(f"{option}: {message}")
    try:
        cfg.validate()
    except ConfigError:
        return e  # the file is wrong by itself
    return UsageError(f"{', '.join(given.values())}: {message}")


def output_dir(args: argparse.Namespace) -> Path | None:
    """Checks ``-o DIR`` before anything is simulated, so a long run's results are not lost to a
    typo: DIR is created if missing and must be writable; an existing non-empty DIR is refused
    unless ``--force``. Returns DIR as an absolute path, which errors name. A forced DIR is
    emptied only by :func:`empty_output`, once the results are there to replace it: a run
    that fails (a bad configuration, a deadlock, Ctrl-C) leaves the previous results as they
    were."""
    if args.output is None:
        return None
    out = Path(args.output).absolute()
    if out.is_dir() and any(out.iterdir()) and not args.force:
        raise UsageError(
            f"{out}: the output directory is not empty; use --force to replace its contents"
        )
    return writable_dir(out, "the results")


def empty_output(out: Path) -> None:
    """Empties an ``-o DIR`` that ``--force`` let through (no stale results, e.g. a
    ``baseline/``, stay beside the new ones)."""
    for child in out.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


def output_file(path: str) -> Path:
    """Checks where an output file goes before anything is simulated: not a directory, in a
    directory that exists and can be written. Returns it as an absolute path."""
    out = Path(path).absolute()
    if out.is_dir():
        raise UsageError(f"{out}: is a directory; give a file for -o")
    if not out.parent.is_dir():
        raise UsageError(f"{out}: cannot write it: {out.parent} is not a directory")
    if not os.access(out.parent, os.W_OK) or (out.exists() and not os.access(out, os.W_OK)):
        raise UsageError(f"{out}: cannot write it: permission denied")
    return out


def run_timing(summary: dict[str, Any], wall_s: float) -> dict[str, float]:
    """What ``timing.json`` holds: the run's wall time, its events and their rate."""
    events = int(summary["events"])
    return {
        "wall_s": wall_s,
        "events": events,
        "events_per_s": events / wall_s if wall_s > 0 else 0.0,
    }


def write_timing(directory: Path, timing: dict[str, float]) -> None:
    # Wall time differs from run to run, so it lives apart from the deterministic files.
    (directory / "timing.json").write_text(json.dumps(timing, indent=2, sort_keys=True) + "\n")


def warn_summary(summary: dict[str, Any]) -> None:
    """What a run's summary warns about (its traces, the run itself), on stderr."""
    for w in [*summary.get("trace_warnings", []), *summary.get("warnings", [])]:
        _warn(f"warning: {w}")


def times(option: str, text: str) -> list[float]:
    """The times (us) of a comma-separated option: at least one, each finite and >= 0."""
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError as e:
        raise UsageError(f"{option} {text!r}: expected a comma-separated list of times, us") from e
    if not values:
        raise UsageError(f"{option} {text!r}: expected at least one time, us")
    bad = [v for v in values if not (math.isfinite(v) and v >= 0)]
    if bad:
        raise UsageError(
            f"{option} {text!r}: times must be finite numbers >= 0, got "
            + ", ".join(f"{v:g}" for v in bad)
        )
    return values
