"""The heavy and optional libraries tracewatt uses, each imported on its first use.

``import tracewatt`` and the command line's start (``tracewatt --help``) must not pay for pandas,
pyarrow or matplotlib (most of a second together), nor fail where the optional Dask or rich is
not installed. Modules take these libraries from here: each name is a stand-in module that
imports the library when one of its attributes is first read, and from then on is that
library's namespace. Type checkers see the libraries themselves.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any


class _LazyModule(ModuleType):
    """Stands for the module ``name`` until an attribute is read, which imports it."""

    def __getattr__(self, attr: str) -> Any:
        module = importlib.import_module(self.__name__)
        # Later reads find the module's attributes directly, not through this method.
        self.__dict__.update(vars(module))
        return getattr(module, attr)


if TYPE_CHECKING:
    import dask_jobqueue
    import distributed
    import matplotlib
    import matplotlib.backends.backend_agg as matplotlib_agg
    import matplotlib.colors as matplotlib_colors
    import matplotlib.figure as matplotlib_figure
    import matplotlib.ticker as matplotlib_ticker
    import numpy
    import pandas
    import pyarrow
    import pyarrow.parquet as pyarrow_parquet
    import rich.console as rich_console
    import rich.progress as rich_progress
else:
    dask_jobqueue = _LazyModule("dask_jobqueue")
    distributed = _LazyModule("distributed")
    matplotlib = _LazyModule("matplotlib")
    matplotlib_agg = _LazyModule("matplotlib.backends.backend_agg")
    matplotlib_colors = _LazyModule("matplotlib.colors")
    matplotlib_figure = _LazyModule("matplotlib.figure")
    matplotlib_ticker = _LazyModule("matplotlib.ticker")
    numpy = _LazyModule("numpy")
    pandas = _LazyModule("pandas")
    pyarrow = _LazyModule("pyarrow")
    pyarrow_parquet = _LazyModule("pyarrow.parquet")
    rich_console = _LazyModule("rich.console")
    rich_progress = _LazyModule("rich.progress")

__all__ = [
    "dask_jobqueue",
    "distributed",
    "matplotlib",
    "matplotlib_agg",
    "matplotlib_colors",
    "matplotlib_figure",
    "matplotlib_ticker",
    "numpy",
    "pandas",
    "pyarrow",
    "pyarrow_parquet",
    "rich_console",
    "rich_progress",
]
