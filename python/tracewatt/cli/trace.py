"""The trace commands of the ``tracewatt`` command line: ``trace info``, ``trace convert`` and
``record``. See ``docs/cli.md``. :func:`register` adds them to the main parser's subcommands.

Exit codes as in :mod:`tracewatt.cli`: 0 ok, 2 usage (or the tracer cannot be built), 3 trace
error (the trace cannot be read, or the recorded command failed).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

import tracewatt
from tracewatt import _format, _tracewatt
from tracewatt.cli.common import EXIT_OK, EXIT_RUN, UsageError, _error, _warn, writable_dir
from tracewatt.errors import TraceError

__all__ = ["info_text", "register", "tracer_cache_dir", "tracer_library", "tracer_sources"]

#: Environment variable naming the tracer's output directory (tracer/README.md).
TRACE_DIR_ENV = "TRACEWATT_TRACE_DIR"
#: Environment variable that may name a prebuilt tracer library (overrides the build).
TRACER_LIB_ENV = "TRACEWATT_TRACER_LIB"
_LIB_NAME = "libtwtrace.so"
#: A native trace's index (docs/native-trace-format.md); its rank files are `rank-<N>.twr`.
_NATIVE_INDEX = "trace.twi"


# --------------------------------------------------------------------------- helpers


def _read_args(args: argparse.Namespace) -> dict[str, Any]:
    # The `[jobs.trace]` fields' rules (docs/config.md): finite, compute_scale >= 0, rate > 0.
    if not (math.isfinite(args.compute_scale) and args.compute_scale >= 0.0):
        raise UsageError(
            f"--compute-scale: expected a finite number >= 0, got {args.compute_scale}"
        )
    if not (math.isfinite(args.flops_per_s) and args.flops_per_s > 0.0):
        raise UsageError(f"--flops-per-s: expected a finite number > 0, got {args.flops_per_s}")
    return {
        "compute_scale": args.compute_scale,
        "flops_per_s": args.flops_per_s,
        "strict": args.strict,
    }


def _trace_info(path: str | os.PathLike[str], **opts: Any) -> dict[str, Any]:
    if not Path(path).exists():
        raise UsageError(f"{path}: no such file or directory")
    out: dict[str, Any] = json.loads(_tracewatt.trace_info(str(path), **opts))
    return out


def info_text(info: dict[str, Any]) -> str:
    """The human-readable ``trace info`` report."""
    duration = info.get("duration_s")

    def size(key: str) -> str:
        return f"{_format.nbytes(info.get(key))}  ({_format.count(info.get(key))} B)"

    lines = [
        f"trace                    {info.get('path')}",
        f"format                   {info.get('format')}",
        f"ranks                    {info.get('ranks')}",
        f"communicators            {info.get('communicators')} besides world",
        f"point-to-point bytes     {size('p2p_bytes')}",
        # What the collective calls were given (alltoall: one pair's share), not what they move.
        f"collective count x size  {size('collective_bytes')}",
        f"bytes on the wire        {size('wire_bytes')}",
        f"duration                 {_format.seconds(duration) if duration is not None else '-'}",
        "",
    ]
    calls: dict[str, int] = info.get("calls", {})
    rows = [
        [name, _format.count(n)]
        for name, n in sorted(calls.items(), key=lambda kv: (-kv[1], kv[0]))
    ]
    rows.append(["total", _format.count(sum(calls.values()))])
    lines.append(_format.table(["call", "count (all ranks)"], rows, [False, True]).rstrip("\n"))
    rank_times: list[dict[str, Any]] = info.get("rank_times", [])
    if rank_times:
        lines.append("")
        rows = [
            [
                str(t.get("rank")),
                _format.seconds(t.get("compute_wall_s")),
                _format.seconds(t.get("compute_cpu_s")),
                _format.seconds(t.get("mpi_s")),
            ]
            for t in rank_times
        ]
        lines.append(
            _format.table(
                ["rank", "compute (wall)", "compute (CPU)", "inside MPI"],
                rows,
                [True, True, True, True],
            ).rstrip("\n")
        )
    rank_flops: list[float] = info.get("rank_flops", [])
    if rank_flops:
        lines.append("")
        rows = [[str(r), _format.count(f)] for r, f in enumerate(rank_flops)]
        rows.append(["total", _format.count(sum(rank_flops))])
        lines.append(_format.table(["rank", "flops"], rows, [True, True]).rstrip("\n"))
    for w in info.get("warnings", []):
        lines.append(f"warning: {w}")
    unsupported = info.get("unsupported", [])
    if unsupported:
        lines.append("")
        lines.append("unsupported calls (skipped in simulation; --strict makes them errors):")
        for u in unsupported:
            lines.append(f"  {u.get('name')}: {_format.count(u.get('count'))}")
    return "\n".join(lines) + "\n"


def _print_info(info: dict[str, Any], as_json: bool) -> None:
    if as_json:
        sys.stdout.write(json.dumps(info, indent=2, sort_keys=True) + "\n")
    else:
        sys.stdout.write(info_text(info))


def _warn_unsupported(info: dict[str, Any]) -> None:
    for u in info.get("unsupported", []):
        _warn(f"warning: unsupported call `{u.get('name')}` x{u.get('count')} (skipped)")


# --------------------------------------------------------------------------- trace info / convert


def cmd_trace_info(args: argparse.Namespace) -> int:
    info = _trace_info(args.path, **_read_args(args))
    _print_info(info, args.json)
    return EXIT_OK


def _check_convert_paths(path: Path, out: Path) -> None:
    """Refuses an output that is the input, holds it or lies inside it: the writer would
    truncate the files it reads, or mix its files with the input's."""
    src, dst = path.resolve(), out.resolve()
    if dst == src or dst in src.parents or src in dst.parents:
        raise UsageError(
            f"-o {out}: the output overlaps the input trace {path}; give a directory outside it"
        )


def _replace_trace(tmp: Path, out: Path) -> None:
    """Puts the converted trace in ``tmp`` in place as ``out``. Into an existing ``out``, its
    old trace's index goes first and the new one comes last, so ``out`` never looks like a
    trace while it mixes the two."""
    if not out.exists():
        tmp.rename(out)
        return
    (out / _NATIVE_INDEX).unlink(missing_ok=True)
    for f in out.glob("rank-*.twr"):
        f.unlink()
    for f in tmp.glob("rank-*.twr"):
        f.rename(out / f.name)
    (tmp / _NATIVE_INDEX).rename(out / _NATIVE_INDEX)
    tmp.rmdir()


def cmd_trace_convert(args: argparse.Namespace) -> int:
    opts = _read_args(args)
    path = Path(args.path)
    if not path.exists():
        raise UsageError(f"{args.path}: no such file or directory")
    out = Path(args.output)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{args.output}: exists and is not a directory")
    _check_convert_paths(path, out)
    # Converted beside OUT and moved in only once complete: a failure leaves OUT as it was.
    dst = out.resolve()
    blocked = next((a for a in dst.parents if a.exists() and not a.is_dir()), None)
    if blocked is not None:
        raise UsageError(f"{out}: cannot write the converted trace there: {blocked} is a file")
    try:
        dst.parent.mkdir(parents=True, exist_ok=True)
        # mkdir, not mkdtemp: OUT gets the permissions the umask gives, not mkdtemp's 0700.
        tmp = dst.parent / f".{dst.name}.{uuid.uuid4().hex[:12]}.tmp"
        tmp.mkdir()
    except OSError as e:
        raise UsageError(f"{out}: cannot write the converted trace there: {e.strerror or e}") from e
    try:
        text = _tracewatt.trace_convert(str(path), str(tmp), **opts)
        _replace_trace(tmp, dst)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    info: dict[str, Any] = json.loads(text)
    # The info was read from the temporary directory: name the trace where it now is.
    info["path"] = str(args.output)
    if args.json:
        _print_info(info, True)
    elif not args.quiet:
        _warn_unsupported(info)
        sys.stdout.write(
            f"converted {args.path} ({info.get('ranks')} ranks, "
            f"{_format.count(sum(info.get('calls', {}).values()))} calls) to {out}/\n"
        )
    return EXIT_OK


# --------------------------------------------------------------------------- record


#: The tracer's sources, shipped inside the package (in a checkout, links to ``tracer/``).
_TRACER_FILES = ("build.sh", "twtrace.c", "funcs.h")


def tracer_sources() -> Path:
    """The C tracer's sources inside the installed package, ``tracewatt/_tracer/``. Raises
    :class:`UsageError` when the installation lacks them."""
    d = Path(tracewatt.__file__).resolve().parent / "_tracer"
    missing = [name for name in _TRACER_FILES if not (d / name).is_file()]
    if missing:
        raise UsageError(
            f"the tracer's sources are missing from this installation ({d}: no "
            f"{', '.join(missing)}): reinstall tracewatt, or pass --tracer-lib "
            f"PATH/{_LIB_NAME} (or set {TRACER_LIB_ENV})"
        )
    return d


def tracer_cache_dir(src: Path, mpicc: str) -> Path:
    """Where the tracer of the sources in ``src`` is built with the compiler wrapper ``mpicc``:
    ``$XDG_CACHE_HOME/tracewatt`` (else ``~/.cache/tracewatt``), in a folder named by a hash of
    the sources and of the wrapper's path, so that other tracewatt versions, and programs of
    another MPI (a PMPI library works only with the MPI it was built against), never share a
    build."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    # The XDG spec: a relative path is invalid, and ignored.
    cache = Path(base) if Path(base).is_absolute() else Path.home() / ".cache"
    digest = hashlib.sha256(str(Path(mpicc).resolve()).encode() + b"\0")
    for name in _TRACER_FILES:
        digest.update(name.encode() + b"\0" + (src / name).read_bytes() + b"\0")
    return cache / "tracewatt" / f"tracer-{digest.hexdigest()[:16]}"


def tracer_library(explicit: str | None = None, *, quiet: bool = False) -> Path:
    """The tracer library to preload: ``explicit`` (``--tracer-lib``), else
    ``$TRACEWATT_TRACER_LIB``, else the one built from :func:`tracer_sources` in
    :func:`tracer_cache_dir`, built there on first use. Raises :class:`UsageError` when it
    cannot be had."""
    given = explicit or os.environ.get(TRACER_LIB_ENV)
    if given:
        lib = Path(given).resolve()
        if not lib.is_file():
            raise UsageError(f"tracer library {given}: no such file")
        return lib
    return _built_tracer(tracer_sources(), quiet)


def _built_tracer(src: Path, quiet: bool) -> Path:
    """The tracer of the sources in ``src``: already in the cache, else built there now."""
    mpicc = shutil.which("mpicc")
    if mpicc is None:
        raise UsageError(
            "the tracer is built with mpicc on first use, and mpicc is not on PATH: install an "
            "MPI with its compiler wrappers (Debian/Ubuntu: apt-get install openmpi-bin "
            "libopenmpi-dev), or pass --tracer-lib"
        )
    cache = tracer_cache_dir(src, mpicc)
    lib = cache / _LIB_NAME
    if lib.is_file():
        return lib
    try:
        writable_dir(cache, "the tracer")
    except UsageError as e:
        raise UsageError(f"cannot build the tracer: {e}; pass --tracer-lib") from None
    if not quiet:
        _warn(f"building the tracer: sh {src / 'build.sh'} {cache}")
    # Built beside and moved in whole: a record starting meanwhile never preloads half a file.
    tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=cache))
    try:
        p = subprocess.run(
            ["sh", str(src / "build.sh"), str(tmp)], capture_output=True, text=True, check=False
        )
        if p.returncode != 0 or not (tmp / _LIB_NAME).is_file():
            detail = (p.stderr or p.stdout).strip()
            raise UsageError(f"building the tracer failed ({src / 'build.sh'}):\n{detail}")
        os.replace(tmp / _LIB_NAME, lib)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return lib


def _is_open_mpi_launcher(cmd: str) -> bool:
    if Path(cmd).name not in ("mpirun", "mpiexec", "orterun", "prterun"):
        return False
    exe = shutil.which(cmd)
    if exe is None:
        return False
    try:
        p = subprocess.run(
            [exe, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "open mpi" in (p.stdout + p.stderr).lower() or "open-mpi" in (p.stdout + p.stderr)


def _launch_command(command: list[str]) -> list[str]:
    """The command with Open MPI's ``-x`` exports added, so the ranks (also on other nodes) get
    ``LD_PRELOAD`` and the output directory; other launchers forward the environment."""
    if _is_open_mpi_launcher(command[0]):
        return [command[0], "-x", "LD_PRELOAD", "-x", TRACE_DIR_ENV, *command[1:]]
    return command


def cmd_record(args: argparse.Namespace) -> int:
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise UsageError("record: give the command to trace, e.g. -- mpirun -np 4 ./app")
    if shutil.which(command[0]) is None and not Path(command[0]).is_file():
        raise UsageError(f"record: {command[0]}: command not found")
    out = Path(args.output).absolute()
    old = [*out.glob("rank-*.twr"), *out.glob(_NATIVE_INDEX)] if out.is_dir() else []
    if old and not args.force:
        raise UsageError(f"{out} already holds a trace; remove it or pass --force to replace it")
    writable_dir(out, "the trace")
    lib = tracer_library(args.tracer_lib, quiet=args.quiet)
    for f in old:
        f.unlink()
    env = dict(os.environ)
    env["LD_PRELOAD"] = f"{lib}:{env['LD_PRELOAD']}" if env.get("LD_PRELOAD") else str(lib)
    env[TRACE_DIR_ENV] = str(out)
    launch = _launch_command(command)
    if not args.quiet:
        _warn(f"recording into {out}/: {' '.join(launch)}")
    rc = subprocess.run(launch, env=env, check=False).returncode
    if rc != 0:
        _error(f"record: the command exited with status {rc}")
        if not (out / _NATIVE_INDEX).is_file():
            return EXIT_RUN
    if not (out / _NATIVE_INDEX).is_file():
        raise TraceError(
            f"{out}: the command wrote no trace (no trace.twi): did it run an MPI program "
            "launched by this mpirun, and does it call MPI_Init?"
        )
    info = _trace_info(out)
    if args.json:
        _print_info(info, True)
    elif not args.quiet:
        _print_info(info, False)
    return EXIT_OK if rc == 0 else EXIT_RUN


# --------------------------------------------------------------------------- parser


def _add_read_options(sp: argparse.ArgumentParser) -> None:
    sp.add_argument(
        "--compute-scale",
        type=float,
        default=1.0,
        metavar="X",
        help="factor applied to every compute gap between calls (default 1.0)",
    )
    sp.add_argument(
        "--flops-per-s",
        type=float,
        default=1e9,
        metavar="X",
        help="flop rate for SimGrid `compute <flops>` (default 1e9)",
    )
    sp.add_argument(
        "--strict", action="store_true", help="unsupported calls are errors instead of warnings"
    )


def register(subparsers: Any) -> None:
    """Adds ``trace info``, ``trace convert`` and ``record`` to the main parser's subcommands
    (the object ``add_subparsers`` returned)."""
    t = subparsers.add_parser(
        "trace",
        help="inspect and convert MPI traces",
        description="Inspect and convert MPI traces (SST-DUMPI, OTF2, SimGrid "
        "time-independent, tracewatt native).",
    )
    tsub = t.add_subparsers(dest="trace_command", metavar="SUBCOMMAND")
    tsub.required = True

    i = tsub.add_parser(
        "info",
        help="format, ranks, calls, bytes and duration of a trace",
        description="Read a whole trace and report its format, ranks, MPI calls by name summed "
        "over ranks, bytes and duration.",
    )
    i.add_argument("path", metavar="PATH", help="trace file or directory")
    i.add_argument("--json", action="store_true", help="print the report as JSON")
    _add_read_options(i)
    i.set_defaults(func=cmd_trace_info)

    c = tsub.add_parser(
        "convert",
        help="convert a trace to tracewatt's native format",
        description="Convert any readable trace to tracewatt's native format.",
    )
    c.add_argument("path", metavar="PATH", help="trace file or directory")
    c.add_argument(
        "-o", "--output", required=True, metavar="OUT", help="output directory (created)"
    )
    c.add_argument("--json", action="store_true", help="print the converted trace's info as JSON")
    c.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
    _add_read_options(c)
    c.set_defaults(func=cmd_trace_convert)

    r = subparsers.add_parser(
        "record",
        help="run an MPI program under the tracer and record a native trace",
        description="Run COMMAND (e.g. `mpirun -np 4 ./app`) with the tracewatt PMPI tracer "
        f"preloaded (LD_PRELOAD, {TRACE_DIR_ENV}) and report the recorded trace. The tracer is "
        "built from the sources shipped with tracewatt on first use (requires mpicc).",
    )
    r.add_argument(
        "-o", "--output", required=True, metavar="DIR", help="directory for the trace (created)"
    )
    r.add_argument(
        "--tracer-lib",
        metavar="PATH",
        help=f"a prebuilt {_LIB_NAME} (default: ${TRACER_LIB_ENV}, else the one built on "
        "first use in $XDG_CACHE_HOME/tracewatt/, default ~/.cache/tracewatt/)",
    )
    r.add_argument("--force", action="store_true", help="replace a trace already in DIR")
    r.add_argument("--json", action="store_true", help="print the trace's info as JSON")
    r.add_argument("-q", "--quiet", action="store_true", help="no messages, no report")
    r.add_argument(
        "command",
        nargs=argparse.REMAINDER,
        metavar="COMMAND",
        help="the command to run, after `--`",
    )
    r.set_defaults(func=cmd_record)
