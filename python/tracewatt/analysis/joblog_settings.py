"""The settings of ``analyze joblog`` (:mod:`tracewatt.analysis.joblog`): the node's memory
layout and the analysis's assumptions, their ranges (``docs/cli.md``), and how they resolve from
the defaults, a ``[joblog]`` settings file and the command line."""

from __future__ import annotations

import dataclasses
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracewatt import _tracewatt
from tracewatt.config import read_text
from tracewatt.errors import ConfigError, TracewattError

# Limits (docs/cli.md) far beyond any machine or log, and low enough that no product or sum
# over a log overflows: to an infinite float, or past the int64 node counts of the sweep.
MAX_PROCESSORS = 10**9
MAX_SECONDS = 10**12
MAX_MEMORY_KIB = 2**40


class JoblogError(TracewattError):
    """A job log, a settings file or a setting that cannot be used; the message names the file
    and line, the field or the option, and what was expected."""


@dataclass(frozen=True)
class JoblogSettings:
    """The machine's memory layout and the analysis's assumptions (defaults and their sources:
    ``docs/config.md``). ``cores_per_node`` and ``nodes`` default to what the log's header
    gives; ``assume_gib`` (memory per node of jobs whose log line has none) to no assumption."""

    channels: int = 8
    dimms_per_channel: int = 2
    dimm_gib: float = 8.0
    dimm_standby_w: float = 0.9
    idle_node_gib: float = 2.0
    cores_per_node: int | None = None
    nodes: int | None = None
    assume_gib: float | None = None


#: The settings, as ``analyze joblog`` options and ``[joblog]`` fields.
JOBLOG_OPTIONS = tuple(f.name for f in dataclasses.fields(JoblogSettings))
_INT_OPTIONS = ("channels", "dimms_per_channel", "cores_per_node", "nodes")
_MEMORY = (0.0, 2.0**20, "a number from 0 to 2^20 (1 PiB)")
# The node's layout has the simulator's limits ([power.dimms]).
_LAYOUT_LIMITS = _tracewatt.DIMM_LIMITS
#: Each setting's range (inclusive) and how errors state it (docs/cli.md).
SETTING_RANGES: dict[str, tuple[float, float, str]] = {
    **{
        name: (*_LAYOUT_LIMITS[name], "an integer from {} to {}".format(*_LAYOUT_LIMITS[name]))
        for name in ("channels", "dimms_per_channel")
    },
    "dimm_gib": (*_LAYOUT_LIMITS["dimm_gib"], f"a number from {_tracewatt.DIMM_GIB_RANGE}"),
    "dimm_standby_w": (0.001, 1000.0, "a number from 0.001 to 1000"),
    "idle_node_gib": _MEMORY,
    "cores_per_node": (1, MAX_PROCESSORS, f"an integer from 1 to {MAX_PROCESSORS:,}"),
    "nodes": (1, MAX_PROCESSORS, f"an integer from 1 to {MAX_PROCESSORS:,}"),
    "assume_gib": _MEMORY,
}


def check_setting(name: str, value: object, where: str) -> int | float:
    """``value`` if it is valid for setting ``name``, else an error naming ``where``."""
    lo, hi, expected = SETTING_RANGES[name]
    kinds = int if name in _INT_OPTIONS else int | float
    # NaN fails the range test.
    if isinstance(value, kinds) and not isinstance(value, bool) and lo <= value <= hi:
        return value if name in _INT_OPTIONS else float(value)
    raise JoblogError(f"{where}: expected {expected}, got {value!r}")


def _read_settings_file(path: str | os.PathLike[str]) -> dict[str, int | float]:
    p = Path(path)
    try:
        doc = tomllib.loads(read_text(p, "settings file"))
    except ConfigError as e:
        raise JoblogError(str(e)) from None
    except tomllib.TOMLDecodeError as e:
        raise JoblogError(f"{p}: {e}") from None
    for key in doc:
        if key != "joblog":
            raise JoblogError(f"{p}: {key}: unknown key; expected only a [joblog] table")
    table = doc.get("joblog")
    if not isinstance(table, dict):
        raise JoblogError(f"{p}: expected a [joblog] table")
    out: dict[str, int | float] = {}
    for key, value in table.items():
        if key not in JOBLOG_OPTIONS:
            raise JoblogError(
                f"{p}: joblog.{key}: unknown field; expected one of {', '.join(JOBLOG_OPTIONS)}"
            )
        out[key] = check_setting(key, value, f"{p}: joblog.{key}")
    return out


def resolve_settings(
    config: str | os.PathLike[str] | None = None,
    given: Mapping[str, object] | None = None,
    label: Callable[[str], str] = str,
) -> JoblogSettings:
    """The settings: the defaults, then the ``[joblog]`` table of the TOML file ``config``,
    then the values in ``given`` that are not None. ``label(name)`` is how an error names a
    setting from ``given`` (e.g. ``--dimm-gib`` on the command line)."""
    values: dict[str, Any] = _read_settings_file(config) if config is not None else {}
    for name, value in (given or {}).items():
        if value is not None:
            values[name] = check_setting(name, value, label(name))
    return dataclasses.replace(JoblogSettings(), **values)
