"""The options of a sweep's worker jobs on a batch system (``--cluster slurm|pbs``): the same
keys in a spec's ``[cluster]`` table, in ``cluster_options`` and (as ``--key``) on the command
line (docs/cluster.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracewatt.errors import ConfigError

#: Each option with its type and the dask-jobqueue argument it sets (None: the sweep's own).
JOB_OPTIONS: dict[str, tuple[type, str | None]] = {
    "queue": (str, "queue"),
    "account": (str, "account"),
    "walltime": (str, "walltime"),
    "cores": (int, "cores"),
    "memory": (str, "memory"),
    "jobs": (int, None),
    "python": (str, "python"),
    "interface": (str, "interface"),
    "directives": (list, "job_extra_directives"),
    "prologue": (list, "job_script_prologue"),
    "log_dir": (str, "log_directory"),
    "worker_timeout": (float, None),
}

#: Arguments of dask-jobqueue that tracewatt sets itself.
_SET_BY_TRACEWATT = ("processes", "nthreads")


def check_job_options(options: Mapping[str, Any], where: str) -> dict[str, Any]:
    """``options`` checked against :data:`JOB_OPTIONS` (``where`` names them in errors: a
    spec's ``[cluster]`` table, ``cluster_options``), those set to None left out. Raises
    :class:`ConfigError`."""
    out: dict[str, Any] = {}
    for k, v in options.items():
        if k in _SET_BY_TRACEWATT:
            raise ConfigError(
                f"{where}: {k}: set by tracewatt, not an option: each job runs one "
                "single-threaded worker process per core (cores)"
            )
        if k not in JOB_OPTIONS:
            raise ConfigError(
                f"{where}: {k}: unknown option of worker jobs; expected one of "
                f"{', '.join(JOB_OPTIONS)}"
            )
        if v is None:
            continue
        typ = JOB_OPTIONS[k][0]
        if typ is float and isinstance(v, int) and not isinstance(v, bool):
            v = float(v)
        ok = isinstance(v, typ) and not isinstance(v, bool)
        if typ is list:
            ok = ok and all(isinstance(x, str) for x in v)
        if not ok:
            what = "a list of strings" if typ is list else f"a {typ.__name__}"
            raise ConfigError(f"{where}: {k}: expected {what}, got {v!r}")
        if k in ("cores", "jobs", "worker_timeout") and not v > 0:
            raise ConfigError(f"{where}: {k}: expected a positive number, got {v!r}")
        out[k] = v
    return out
