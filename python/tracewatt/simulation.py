"""Running one simulation, and describing a configuration's machine: the core of the API,
re-exported by :mod:`tracewatt`."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from typing import Any

from tracewatt import _tracewatt
from tracewatt.config import Config
from tracewatt.results import Results

__all__ = [
    "ConfigLike",
    "ProgressCallback",
    "as_config",
    "check_progress",
    "machine",
    "presets",
    "simulate",
]

#: Anything :func:`simulate` accepts as a configuration: a :class:`Config`, a dict shaped like
#: the TOML document, or the path of a ``.toml`` / ``.json`` file.
ConfigLike = Config | Mapping[str, Any] | str | os.PathLike[str]

#: Called about five times a second with ``{"sim_time_s", "events", "ranks_done",
#: "ranks_total"}``; returning ``False`` stops the run with :class:`RunInterrupted`, and an
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


def check_progress(progress: object) -> None:
    """Raises :class:`TypeError` unless ``progress`` is None or callable: at once, not at the
    first report a second into the run."""
    if progress is not None and not callable(progress):
        raise TypeError(f"progress: expected a callable (or None), not {type(progress).__name__}")


def simulate(config: ConfigLike, *, progress: ProgressCallback | None = None) -> Results:
    """Runs one simulation (in Rust, with the GIL released) and returns its :class:`Results`.

    ``config`` is a :class:`Config`, a dict, or a path (``str`` / ``os.PathLike``) to a TOML or
    JSON file. Ctrl-C interrupts the run with :class:`tracewatt.RunInterrupted`.
    """
    check_progress(progress)
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


def presets() -> dict[str, str]:
    """The built-in machine presets (``machine.preset = "<name>"``): name -> one-line
    description, in the order ``tracewatt presets`` lists them."""
    return dict(_tracewatt.presets())
