"""Sweeps: many configurations, run in parallel, resumable, gathered into one dataset.

A sweep spec (TOML; docs/cli.md, "tracewatt sweep") is a ``base`` configuration, ``[axes]`` over
dotted configuration fields combined by ``mode`` (grid, zip or seeded random samples), optional
``[[groups]]`` (sub-sweeps with their own axes), and ``[[variants]]`` that every cell runs once
each, one of which may be the ``baseline`` the others are compared with (:mod:`.spec`).

Each run goes to ``DIR/runs/<hash>/`` (the hash of its resolved configuration and the tracewatt
version), with ``done.json`` written last: a directory without it is run again. ``DIR/sweep.json``
describes the sweep and ``DIR/sweep.parquet`` holds a row per run. ``tracewatt.sweep(spec, DIR)``
(this module is callable) runs a sweep and returns that dataset as a DataFrame.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from tracewatt._dependencies import pandas as pd
from tracewatt.sweep.cluster import jobqueue_cluster
from tracewatt.sweep.dataset import read_dataset
from tracewatt.sweep.runner import Progress, ProgressCallback, check_out_dir, other_sweep, run
from tracewatt.sweep.spec import (
    DEFAULT_VARIANT,
    MAX_RUNS,
    MODES,
    Axis,
    Group,
    Range,
    Run,
    SweepSpec,
    Variant,
    list_shipped,
    shipped_spec_path,
)

__all__ = [
    "DEFAULT_VARIANT",
    "MAX_RUNS",
    "MODES",
    "Axis",
    "Group",
    "Progress",
    "ProgressCallback",
    "Range",
    "Run",
    "SweepSpec",
    "Variant",
    "check_out_dir",
    "jobqueue_cluster",
    "list_shipped",
    "other_sweep",
    "read_dataset",
    "run",
    "shipped_spec_path",
]


class _CallableModule(types.ModuleType):
    # `tracewatt.sweep(spec, out_dir)` is the agreed Python API, and `tracewatt.sweep` is also
    # this module: calling the module runs a sweep.
    def __call__(self, *args: Any, **kwargs: Any) -> pd.DataFrame:
        return run(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
