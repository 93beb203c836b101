"""The tracewatt exception hierarchy (defined by the Rust extension, re-exported here).

::

    TracewattError                 every error tracewatt raises on purpose
    ├── ConfigError                malformed or impossible configuration (names file and field)
    │   ├── TopologyError          the topology cannot be built or routed as configured
    │   └── MemoryLimitError       the run would need more memory than is available
    ├── WorkloadError              a workload, generator or trace is invalid
    │   └── TraceError             a trace cannot be read (names file, rank, byte offset or line)
    ├── DeadlockError              the workload cannot finish (names the waiting ranks)
    └── InterruptedError           the run was interrupted (Ctrl-C)

Note that ``tracewatt.errors.InterruptedError`` is not the built-in ``InterruptedError``.
"""

from tracewatt._tracewatt import (
    ConfigError,
    DeadlockError,
    InterruptedError,
    MemoryLimitError,
    TopologyError,
    TraceError,
    TracewattError,
    WorkloadError,
)

__all__ = [
    "ConfigError",
    "DeadlockError",
    "InterruptedError",
    "MemoryLimitError",
    "TopologyError",
    "TraceError",
    "TracewattError",
    "WorkloadError",
]
