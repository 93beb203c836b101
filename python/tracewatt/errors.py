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
    ├── ClusterError               a sweep's batch system refused its worker jobs, or none
    │                              connected in time (docs/cluster.md)
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


class ClusterError(TracewattError):
    """A sweep's worker jobs cannot run: the batch system refused them (the message holds the
    submit command's), or no worker connected within the sweep's ``worker_timeout``. The
    sweep's finished runs are kept."""


__all__ = [
    "ClusterError",
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
