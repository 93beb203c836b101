"""tracewatt: packet-level simulation of HPC interconnects with low-power links, and their energy.

::

    import tracewatt
    res = tracewatt.simulate("examples/pingpong.toml")
    print(res.summary["makespan_s"])
    res.links.head()

See ``docs/config.md`` for the configuration schema and ``docs/cli.md`` for the command line.
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from tracewatt import _tracewatt
from tracewatt.config import Config
from tracewatt.errors import (
    ConfigError,
    DeadlockError,
    InterruptedError,
    MemoryLimitError,
    ResultsError,
    TopologyError,
    TraceError,
    TracewattError,
    WorkloadError,
)

if TYPE_CHECKING:
    from tracewatt.joblog import JoblogError, analyze_joblog
    from tracewatt.results import Results
    from tracewatt.tuning import tune

__version__: str = _tracewatt.__version__

# Loaded on first use: they import pandas and pyarrow, which would cost every command line
# (even `tracewatt --version`) most of a second.
_LAZY = {
    "Results": "tracewatt.results",
    "JoblogError": "tracewatt.joblog",
    "analyze_joblog": "tracewatt.joblog",
    "tune": "tracewatt.tuning",
}


def __getattr__(name: str) -> Any:
    if name == "sweep":
        # A callable module: ``tracewatt.sweep(spec, out_dir)`` runs a sweep.
        return importlib.import_module("tracewatt.sweep")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tracewatt' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "Config",
    "ConfigError",
    "ConfigLike",
    "DeadlockError",
    "InterruptedError",
    "JoblogError",
    "MemoryLimitError",
    "ProgressCallback",
    "Results",
    "ResultsError",
    "TopologyError",
    "TraceError",
    "TracewattError",
    "WorkloadError",
    "__version__",
    "analyze_joblog",
    "as_config",
    "machine",
    "presets",
    "simulate",
    "sweep",
    "tune",
]

#: Anything :func:`simulate` accepts as a configuration: a :class:`Config`, a dict shaped like
#: the TOML document, or the path of a ``.toml`` / ``.json`` file.
ConfigLike = Config | Mapping[str, Any] | str | os.PathLike[str]

#: Called about five times a second with ``{"sim_time_s", "events", "ranks_done",
#: "ranks_total"}``; returning ``False`` stops the run with :class:`InterruptedError`, and an
#: exception raised by it stops the run and propagates.
ProgressCallback = Callable[[dict[str, Any]], object]


def as_config(config: ConfigLike) -> Config:
    """Turns any accepted configuration form into a :class:`Config`."""
    if isinstance(config, Config):
        return config
    if isinstance(config, Mapping):
        return Config.from_dict(config)
    if isinstance(config, str | os.PathLike):
        return Config.load(config)
    raise TypeError(f"expected a Config, a dict or a file path, not {type(config).__name__}")


def _check_progress(progress: object) -> None:
    """Raises :class:`TypeError` unless ``progress`` is None or callable: at once, not at the
    first report a second into the run."""
    if progress is not None and not callable(progress):
        raise TypeError(f"progress: expected a callable (or None), not {type(progress).__name__}")


def simulate(config: ConfigLike, *, progress: ProgressCallback | None = None) -> Results:
    """Runs one simulation (in Rust, with the GIL released) and returns its :class:`Results`.

    ``config`` is a :class:`Config`, a dict, or a path (``str`` / ``os.PathLike``) to a TOML or
    JSON file. Ctrl-C interrupts the run with :class:`tracewatt.InterruptedError`.
    """
    from tracewatt.results import Results

    _check_progress(progress)
    c = as_config(config)
    raw = _tracewatt.simulate(c.text, c.format, c.source, progress)
    return Results.from_raw(raw)


def machine(config: ConfigLike) -> dict[str, Any]:
    """Describes the configured machine: ``nodes``, ``switches``, ``links``, ``diameter_hops``,
    ``virtual_channels``, ``ranks_per_node``, ``link_classes`` (kind, links, bandwidth_gbps,
    latency_ns) and ``preset``."""
    c = as_config(config)
    out: dict[str, Any] = json.loads(_tracewatt.machine_info(c.text, c.format, c.source))
    return out


def presets() -> list[str]:
    """Names of the built-in machine presets (``machine.preset = "<name>"``)."""
    return list(_tracewatt.presets())
