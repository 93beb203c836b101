"""The tracewatt exception hierarchy (defined by the Rust extension, re-exported here).

::

    TracewattError                 every error tracewatt raises on purpose
    ├── ConfigError                malformed or impossible configuration (names file and field)
    │   ├── TopologyError          the topology cannot be built or routed as configured
    │   └── MemoryLimitError       the run would need more memory than is available
    ├── WorkloadError              a workload, generator or trace is invalid
    │   └── TraceError             a trace cannot be read (names file, rank, byte offset or line)
    ├── DeadlockError              the workload cannot finish (names the waiting ranks)
    ├── RunInterrupted             the run was interrupted (Ctrl-C)
    ├── ResultsError               a results folder's file cannot be read (names it and what
    │                              was expected)
    └── JoblogError                a job log or its settings cannot be used
                                   (tracewatt.analysis.joblog)
"""

from tracewatt._tracewatt import (
    ConfigError,
    DeadlockError,
    MemoryLimitError,
    RunInterrupted,
    TopologyError,
    TraceError,
    TracewattError,
    WorkloadError,
)


class ResultsError(TracewattError):
    """A file of a results folder (``summary.json``, a table, ``sweep.json``,
    ``validate.json``, ...) is not what tracewatt wrote: not JSON, not Parquet, or without a
    field its readers need. The message names the file and what was expected."""


__all__ = [
    "ConfigError",
    "DeadlockError",
    "MemoryLimitError",
    "ResultsError",
    "RunInterrupted",
    "TopologyError",
    "TraceError",
    "TracewattError",
    "WorkloadError",
]
