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
from typing import TYPE_CHECKING, Any

from tracewatt import _tracewatt
from tracewatt.config import Config
from tracewatt.errors import (
    ClusterError,
    ConfigError,
    DeadlockError,
    MemoryLimitError,
    ResultsError,
    RunInterrupted,
    TopologyError,
    TraceError,
    TracewattError,
    WorkloadError,
)
from tracewatt.results import Results
from tracewatt.simulation import (
    ConfigLike,
    ProgressCallback,
    as_config,
    machine,
    presets,
    simulate,
)

if TYPE_CHECKING:
    from tracewatt.analysis.joblog import JoblogError, analyze_joblog
    from tracewatt.analysis.tuning import tune

__version__: str = _tracewatt.__version__

# Loaded on first use: the analyses and the sweeps are more modules than `tracewatt --version`
# or a plain simulation needs.
_LAZY = {
    "JoblogError": "tracewatt.analysis.joblog",
    "analyze_joblog": "tracewatt.analysis.joblog",
    "tune": "tracewatt.analysis.tuning",
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
    "ClusterError",
    "Config",
    "ConfigError",
    "ConfigLike",
    "DeadlockError",
    "JoblogError",
    "MemoryLimitError",
    "ProgressCallback",
    "Results",
    "ResultsError",
    "RunInterrupted",
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
