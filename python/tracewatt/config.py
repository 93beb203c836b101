"""Run configurations.

A :class:`Config` is plain data: the configuration text, its format (``"toml"`` or ``"json"``)
and a source name used in error messages (a file path, or ``"<dict>"``). Parsing, preset
merging, defaults and validation all happen in the Rust core, so Python and the CLI see exactly
the same rules and the same error messages. See ``docs/config.md`` for the schema.
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tracewatt import _tracewatt
from tracewatt._tracewatt import ConfigError

__all__ = ["Config", "Format", "parse_value", "read_text", "set_path"]

Format = Literal["toml", "json"]

_SEGMENT = re.compile(r"^(?P<key>[^.\[\]]+)(?P<idx>(\[\d+\])*)$")


@dataclass(frozen=True)
class Config:
    """A run configuration: its text, format and source name.

    Instances are immutable, picklable and compare equal when text, format and source are
    equal. Build them with :meth:`load`, :meth:`from_toml`, :meth:`from_json` or
    :meth:`from_dict`; derive variants with :meth:`with_overrides`.
    """

    text: str
    format: Format = "toml"
    source: str = "<string>"

    def __post_init__(self) -> None:
        # Checked here, not where the text is first parsed, far from the mistake.
        for name in ("text", "source"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise TypeError(f"Config {name}: expected a str, not {type(value).__name__}")
        if self.format not in ("toml", "json"):
            raise ValueError(f"unknown configuration format {self.format!r}; expected toml or json")

    # ---------------------------------------------------------------- constructors

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Config:
        """Reads a configuration file: ``.json`` is JSON, anything else TOML."""
        p = Path(path)
        text = read_text(p, "configuration")
        fmt: Format = "json" if p.suffix.lower() == ".json" else "toml"
        return cls(text, fmt, str(path))

    @classmethod
    def from_toml(cls, text: str, source: str = "<string>") -> Config:
        return cls(text, "toml", source)

    @classmethod
    def from_json(cls, text: str, source: str = "<string>") -> Config:
        return cls(text, "json", source)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], source: str = "<dict>") -> Config:
        """A configuration from nested dicts/lists of plain values (the TOML document's shape)."""
        if not isinstance(d, Mapping):
            raise TypeError(
                f"Config.from_dict: expected a dict of the configuration's tables, not "
                f"{type(d).__name__}"
            )
        _check_plain(d, [], source)
        return cls(json.dumps(d), "json", source)

    # ---------------------------------------------------------------- views

    def to_dict(self) -> dict[str, Any]:
        """The configuration as written (no defaults filled in), as nested dicts."""
        try:
            d = json.loads(self.text) if self.format == "json" else tomllib.loads(self.text)
        except (ValueError, tomllib.TOMLDecodeError):
            # The Rust parser gives the better message (with line and column).
            _tracewatt.resolve_config(self.text, self.format, self.source)
            raise
        if not isinstance(d, dict):
            raise ConfigError(f"{self.source}: the configuration must be a table/object")
        return d

    def resolved(self) -> dict[str, Any]:
        """Parses and validates; returns the configuration with every default filled in."""
        out: dict[str, Any] = json.loads(
            _tracewatt.resolve_config(self.text, self.format, self.source)
        )
        return out

    def validate(self) -> None:
        """Raises :class:`ConfigError` (or a subclass) if the configuration is invalid."""
        _tracewatt.resolve_config(self.text, self.format, self.source)

    # ---------------------------------------------------------------- variants

    def with_overrides(
        self, overrides: Mapping[str, Any] | None = None, /, **kwargs: Any
    ) -> Config:
        """A new configuration with fields replaced, named by dotted paths.

        ``cfg.with_overrides({"machine.links.bandwidth_gbps": 40.0, "seed": 3})`` or
        ``cfg.with_overrides(**{"jobs[0].workload.iterations": 5})``. List elements are
        addressed as ``jobs[0]`` or ``jobs.0``; missing tables are created. With a machine
        preset, a partial table (e.g. ``machine.links``) still merges field by field over the
        preset. The source name is kept, so errors still name the original file.
        """
        if overrides is not None and not isinstance(overrides, Mapping):
            raise TypeError(
                f"with_overrides: expected a dict of field paths and values, not "
                f"{type(overrides).__name__}"
            )
        items: dict[str, Any] = dict(overrides or {})
        items.update(kwargs)
        for path in items:
            if not isinstance(path, str):
                raise TypeError(
                    f'with_overrides: field paths are str (e.g. "machine.links.bandwidth_gbps"), '
                    f"got {path!r} ({type(path).__name__})"
                )
        d = copy.deepcopy(self.to_dict())
        for path, value in items.items():
            set_path(d, path, value, source=self.source)
        return Config.from_dict(d, source=self.source)


def read_text(path: Path, what: str) -> str:
    """The text of a configuration-like file (``what``: "configuration", "sweep spec", ...),
    which TOML and JSON require to be UTF-8. Raises :class:`ConfigError` naming the file, and
    for bytes that are not UTF-8 their offset and line."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ConfigError(f"{path}: cannot read the {what}: {e.strerror or e}") from e
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise ConfigError(
            f"{path}: byte offset {e.start} (line {line}): not UTF-8 (byte 0x{data[e.start]:02x}"
            f"); save the {what} as UTF-8"
        ) from None


def _split_path(path: str) -> list[str | int]:
    if not path or path.strip() != path:
        raise ConfigError(f"invalid field path {path!r}")
    parts: list[str | int] = []
    for seg in path.split("."):
        m = _SEGMENT.match(seg)
        if m is None:
            raise ConfigError(f"invalid field path {path!r} (at {seg!r})")
        key = m.group("key")
        parts.append(int(key) if key.isdigit() else key)
        parts.extend(int(i) for i in re.findall(r"\[(\d+)\]", m.group("idx")))
    return parts


def set_path(d: dict[str, Any], path: str, value: Any, *, source: str = "<dict>") -> None:
    """Sets ``value`` at dotted ``path`` in nested dicts/lists, creating missing tables."""
    parts = _split_path(path)
    node: Any = d
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        where = _render(parts[:i]) or "the top level"
        if isinstance(node, list):
            if not isinstance(part, int):
                raise ConfigError(f"{source}: {path}: {where} is a list; use an index like [0]")
            if part >= len(node):
                raise ConfigError(
                    f"{source}: {path}: {where} has {len(node)} element(s), no index {part}"
                )
            if last:
                node[part] = value
            else:
                node = node[part]
        elif isinstance(node, dict):
            key = str(part)
            if last:
                node[key] = value
            else:
                if key not in node:
                    node[key] = {}
                node = node[key]
        else:
            raise ConfigError(f"{source}: {path}: {where} is a value, not a table or list")


def _check_plain(value: Any, path: list[str | int], source: str) -> None:
    """Raises :class:`ConfigError` naming the first value JSON cannot carry: a NaN or infinite
    float, or anything but a dict, list, str, int, float or bool (e.g. a set)."""
    where = _render(path) or "the configuration"
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                raise ConfigError(f"{source}: {where}: keys must be strings, got {k!r}")
            _check_plain(v, [*path, k], source)
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            _check_plain(v, [*path, i], source)
    elif isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{source}: {where}: must be a finite number, got {value}")
    elif value is not None and not isinstance(value, str | int | float):
        raise ConfigError(
            f"{source}: {where}: expected a table, array, string, number or boolean, "
            f"got {type(value).__name__}"
        )


def _render(parts: list[str | int]) -> str:
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += ("." if out else "") + p
    return out


def parse_value(text: str) -> Any:
    """Parses a ``--set`` value as a TOML literal (``40``, ``4.5``, ``true``, ``"x"``, ``[1, 2]``,
    ``{a = 1}``); anything that is not a TOML literal is taken as a bare string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def link_tables(power: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every link power table of a ``[power]`` table: the base ``links``, then its overrides
    (``node``, ``local``, ``global``, each ``tree`` and ``torus`` entry, each ``node_links``
    entry's ``link``), those it has."""
    tables = [power.get("links"), *(power.get(k) for k in ("node", "local", "global"))]
    tables += list(power.get("tree") or []) + list(power.get("torus") or [])
    tables += [o.get("link") for o in power.get("node_links") or [] if isinstance(o, dict)]
    return [t for t in tables if isinstance(t, dict)]
