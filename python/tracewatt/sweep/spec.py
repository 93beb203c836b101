"""Sweep specs: a ``base`` configuration, ``[axes]`` over dotted configuration fields combined by
``mode`` (grid, zip or seeded random samples), optional ``[[groups]]`` (sub-sweeps with their own
axes), and ``[[variants]]`` that every cell runs once each, one of which may be the ``baseline``
the others are compared with (docs/cli.md, "tracewatt sweep"); and the specs shipped in
``tracewatt/studies/``.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
import os
import random
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from tracewatt._tracewatt import __version__
from tracewatt.config import Config, link_tables, read_text, set_path
from tracewatt.errors import ConfigError
from tracewatt.sweep.options import check_job_options

MODES = ("grid", "zip", "random")
#: The variant of a spec without ``[[variants]]``.
DEFAULT_VARIANT = "run"


#: The most runs a spec may make (cells x variants, over every group; docs/cli.md): each run's
#: configuration is resolved before the first starts, so a typo in ``samples`` or a grid of too
#: many axes would otherwise hold the sweep for hours before anything runs.
MAX_RUNS = 100_000

_SPEC_KEYS = frozenset(
    {
        "name",
        "description",
        "seed",
        "base",
        "baseline",
        "axes",
        "mode",
        "samples",
        "variants",
        "groups",
        "cluster",
    }
)
_GROUP_KEYS = frozenset({"name", "axes", "mode", "samples"})
_VARIANT_KEYS = frozenset({"name", "set"})
_RANGE_KEYS = frozenset({"min", "max", "log", "integer", "label"})
#: The keys of an axis given in full: ``{label = "...", values = [...] or {label = value}}``.
_AXIS_KEYS = frozenset({"label", "values"})


@dataclass(frozen=True)
class Range:
    """Values of an axis in ``mode = "random"``: uniform in [min, max], or log-uniform."""

    min: float
    max: float
    log: bool = False
    integer: bool = False

    def sample(self, rng: random.Random) -> float | int:
        u = rng.random()
        if self.log:
            v = math.exp(math.log(self.min) + u * (math.log(self.max) - math.log(self.min)))
        else:
            v = self.min + u * (self.max - self.min)
        return round(v) if self.integer else v


@dataclass(frozen=True)
class Axis:
    """A dotted configuration field and its values. ``labels`` name the values of a labelled
    axis (a table ``label = value``): the dataset's column then holds the label. ``label``
    names the axis itself in reports (default:
    :func:`~tracewatt.sweep.labels.default_label` of the path)."""

    path: str
    values: tuple[Any, ...] | Range
    labels: tuple[str, ...] | None = None
    label: str | None = None

    def points(self) -> list[tuple[Any, Any]]:
        """(column value, configuration value) of each listed value."""
        assert not isinstance(self.values, Range)
        if self.labels is not None:
            return list(zip(self.labels, self.values, strict=True))
        return [(_column_value(v), v) for v in self.values]

    def sample(self, rng: random.Random) -> tuple[Any, Any]:
        if isinstance(self.values, Range):
            v = self.values.sample(rng)
            return v, v
        return rng.choice(self.points())


@dataclass(frozen=True)
class Variant:
    name: str
    overrides: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Group:
    """A sub-sweep: its axes are crossed with the spec's top-level axes."""

    name: str
    axes: tuple[Axis, ...]
    mode: str = "grid"
    samples: int = 0


@dataclass(frozen=True)
class Run:
    """One simulation of the sweep. ``error`` is set when its configuration could not be
    resolved (a bad value on an axis): it is recorded as failed and not simulated."""

    group: str
    variant: str
    values: Mapping[str, Any]  # axis -> column value
    config: Config
    hash: str
    error: str = ""
    #: The canonical JSON the hash is taken of (with the tracewatt version): the resolved
    #: configuration less what cannot change the run (:func:`_effective`), or the
    #: configuration as given where it could not be resolved.
    key: str = ""

    def hash_under(self, version: str) -> str:
        """The run's hash as tracewatt ``version`` names its directory."""
        return _run_hash(self.key, version)

    @property
    def label(self) -> str:
        """``group, variant, axis=value, ...``: how messages name the run."""
        return _label(self.group, self.variant, self.values)

    @property
    def dir(self) -> str:
        return f"runs/{self.hash}"


@dataclass(frozen=True)
class SweepSpec:
    name: str
    description: str
    source: str
    seed: int
    base: Mapping[str, Any]
    axes: tuple[Axis, ...]
    mode: str
    samples: int
    variants: tuple[Variant, ...]
    baseline: str | None
    groups: tuple[Group, ...]
    #: The options of worker jobs on a batch system (``[cluster]``; sweep.options): where a
    #: sweep runs, not what it computes, so they are not part of any run's hash.
    cluster: Mapping[str, Any] = field(default_factory=dict)

    # ---------------------------------------------------------------- loading

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> SweepSpec:
        p = Path(path)
        return cls.from_toml(read_text(p, "sweep spec"), str(p), p.parent)

    @classmethod
    def from_toml(cls, text: str, source: str, directory: Path | None = None) -> SweepSpec:
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"{source}: {e}") from e
        return cls.from_dict(doc, source, directory)

    @classmethod
    def from_dict(
        cls, doc: Mapping[str, Any], source: str, directory: Path | None = None
    ) -> SweepSpec:
        """``directory`` is where a ``base`` path is relative to (default: the current one)."""
        _known_keys(doc, _SPEC_KEYS, source, "")
        name = _typed(doc, "name", str, source, "", "sweep")
        description = _typed(doc, "description", str, source, "", "")
        seed = _typed(doc, "seed", int, source, "", 1)
        if "base" not in doc:
            raise ConfigError(
                f"{source}: base: missing; expected the configuration every run starts from (a "
                "file relative to the spec, or a [base] table)"
            )
        base = _base(doc["base"], source, directory or Path.cwd())
        mode, samples = _mode(doc, source, "")
        axes = _axes(doc.get("axes", {}), mode, source, "axes")
        variants = _variants(doc.get("variants", []), source)
        baseline = _typed(doc, "baseline", str, source, "", "") or None
        if baseline is not None and baseline not in [v.name for v in variants]:
            raise ConfigError(
                f"{source}: baseline: {baseline!r} is not a variant; expected one of "
                f"{', '.join(v.name for v in variants)}"
            )
        groups = _groups(doc.get("groups", []), source)
        top = {a.path for a in axes}
        for i, g in enumerate(groups):
            both = [a.path for a in g.axes if a.path in top]
            if both:
                raise ConfigError(
                    f"{source}: groups[{i}].axes.{both[0]}: also a top-level axis (the top-level "
                    "axes are crossed with each group's); give it in one place"
                )
        cells = _count(axes, mode, samples) * sum(
            _count(g.axes, g.mode, g.samples) for g in groups or (Group("", ()),)
        )
        if cells * len(variants) > MAX_RUNS:
            raise ConfigError(
                f"{source}: the spec makes {cells:,} cells x {len(variants)} variant(s) = "
                f"{cells * len(variants):,} runs, more than the {MAX_RUNS:,} a sweep may have"
            )
        table = doc.get("cluster", {})
        if not isinstance(table, dict):
            raise ConfigError(f"{source}: cluster: expected a [cluster] table of job options")
        cluster = check_job_options(table, f"{source}: [cluster]")
        return cls(
            name,
            description,
            source,
            seed,
            base,
            axes,
            mode,
            samples,
            variants,
            baseline,
            groups,
            cluster,
        )

    def with_base_field(self, path: str, value: Any) -> SweepSpec:
        """The spec with the base configuration's field ``path`` set to ``value`` (what a
        command-line option such as ``--network`` sets for every run; an axis or a variant
        over the same field still varies it)."""
        base = copy.deepcopy(dict(self.base))
        set_path(base, path, value, source=self.source)
        return replace(self, base=base)

    # ---------------------------------------------------------------- runs

    @property
    def axis_names(self) -> list[str]:
        """Every axis, top-level first, then each group's new ones, in spec order."""
        names = [a.path for a in self.axes]
        for g in self.groups:
            names += [a.path for a in g.axes if a.path not in names]
        return names

    def cells(self) -> Iterator[tuple[str, list[tuple[str, Any, Any]]]]:
        """(group, [(axis, column value, configuration value), ...]) of every cell."""
        top = _combine(self.axes, self.mode, self.samples, random.Random(f"{self.seed}:"))
        for g in self.groups or (Group("", ()),):
            rng = random.Random(f"{self.seed}:{g.name}")
            for a, b in itertools.product(top, _combine(g.axes, g.mode, g.samples, rng)):
                yield g.name, [*a, *b]

    def runs(self) -> list[Run]:
        """Every run, resolved. An unknown field (on an axis, a variant or the base) is an error
        of the spec and raises :class:`ConfigError`; a value the configuration refuses makes
        that run a failed one."""
        out = []
        for group, cell in self.cells():
            d = copy.deepcopy(dict(self.base))
            for path, _, value in cell:
                set_path(d, path, copy.deepcopy(value), source=self.source)
            values = {path: column for path, column, _ in cell}
            for v in self.variants:
                dv = copy.deepcopy(d)
                for path, value in v.overrides.items():
                    set_path(dv, path, copy.deepcopy(value), source=f"{self.source}: {v.name}")
                where = _label(group, v.name, values)
                cfg = Config.from_dict(dv, source=f"{self.source}[{where}]")
                try:
                    resolved: Any = cfg.resolved()
                    error = ""
                except ConfigError as e:
                    if "unknown field" in str(e):
                        raise
                    resolved, error = dv, f"{type(e).__name__}: {e}"
                text = json.dumps(
                    resolved if error else _effective(resolved),
                    sort_keys=True,
                    separators=(",", ":"),
                )
                digest = _run_hash(text, __version__)
                out.append(Run(group, v.name, values, cfg, digest, error, text))
        return out

    def description_json(self) -> dict[str, Any]:
        """What ``sweep.json`` holds."""
        return {
            "name": self.name,
            "description": self.description,
            "mode": self.mode,
            "axes": self.axis_names,
            "groups": [
                {"name": g.name, "axes": [a.path for a in g.axes], "mode": g.mode}
                for g in self.groups
            ],
            "variants": [v.name for v in self.variants],
            "baseline": self.baseline,
            "tracewatt_version": __version__,
            "labels": {a.path: a.label for a in self._all_axes() if a.label is not None},
            "variant_sets": {v.name: dict(v.overrides) for v in self.variants},
            "base": self._base_description(),
        }

    def _all_axes(self) -> list[Axis]:
        return [*self.axes, *(a for g in self.groups for a in g.axes)]

    def _base_description(self) -> dict[str, Any] | None:
        """The base configuration, resolved, and its machine (``tracewatt machine --json``),
        for the report's header. Where the base alone does not resolve (an axis supplies what
        it lacks, e.g. the job), the first cell's values complete it, and ``cell`` names them;
        None where that fails too."""
        # Imported here: the machine description needs the simulator, which nothing else of a
        # spec does.
        from tracewatt.simulation import machine

        _, first = next(self.cells())
        for cell in ([], first):
            d = copy.deepcopy(dict(self.base))
            for path, _, value in cell:
                set_path(d, path, copy.deepcopy(value), source=self.source)
            try:
                cfg = Config.from_dict(d, source=self.source)
                return {
                    "config": cfg.resolved(),
                    "machine": machine(cfg),
                    "cell": {path: column for path, column, _ in cell},
                }
            except ConfigError:
                continue
        return None


#: The fields of a link power table that only a link that sleeps uses: its timing, its
#: control, its depth and the parameters of the policies that sleep.
_SLEEP_FIELDS = (
    "idle_timeout_us",
    "sleep_time_us",
    "wake_time_us",
    "refresh_period_us",
    "refresh_time_us",
    "control",
    "depth",
    "fast_wake_sleep_time_us",
    "fast_wake_time_us",
    "fast_wake_saving",
    "slowdown_bound",
    "adaptive_delay_share",
    "adaptive_window",
    "predictive_ngram",
    "predictive_confidence",
)


#: The fields of `[machine]` that only the flow network model uses.
_FLOW_FIELDS = ("flow_train_segments", "flow_segment_packets", "flow_short_unit_packets")


def _effective(resolved: dict[str, Any]) -> dict[str, Any]:
    """A resolved configuration less what cannot change its run: on the packet network model,
    the flow model's own fields; where no link ever sleeps (every link power table always on),
    the links' sleep timing and control. A sweep's always-on baseline then runs once, not once
    per idle timeout of its axis, and its packet runs once whatever the flow model's settings."""
    machine = resolved.get("machine")
    if (
        isinstance(machine, dict)
        and machine.get("network", "packet") == "packet"
        and any(k in machine for k in _FLOW_FIELDS)
    ):
        resolved = copy.deepcopy(resolved)
        for k in _FLOW_FIELDS:
            resolved["machine"].pop(k, None)
    power = resolved.get("power")
    if not isinstance(power, dict) or not isinstance(power.get("links"), dict):
        return resolved
    base = power["links"]
    tables = link_tables(power)
    # An override's unset policy is the base table's.
    if any((t.get("policy") or base.get("policy")) != "always_on" for t in tables):
        return resolved
    out = copy.deepcopy(resolved)
    out_power = out["power"]
    out_power.pop("control", None)
    if isinstance(out_power.get("nic"), dict):
        out_power["nic"].pop("wake_time_us", None)
    for table in link_tables(out_power):
        for k in _SLEEP_FIELDS:
            table.pop(k, None)
    return out


def _run_hash(key: str, version: str) -> str:
    return hashlib.sha256(f"{key}\n{version}".encode()).hexdigest()[:16]


def _known_keys(d: Mapping[str, Any], allowed: frozenset[str], source: str, where: str) -> None:
    for k in d:
        if k not in allowed:
            raise ConfigError(
                f"{source}: {where}{k}: unknown field; expected one of {', '.join(sorted(allowed))}"
            )


def _typed(d: Mapping[str, Any], key: str, typ: type, source: str, where: str, default: Any) -> Any:
    v = d.get(key, default)
    if not isinstance(v, typ) or (isinstance(v, bool) and typ is not bool):
        raise ConfigError(f"{source}: {where}{key}: expected a {typ.__name__}, got {v!r}")
    return v


def _base(base: Any, source: str, directory: Path) -> dict[str, Any]:
    if isinstance(base, str):
        return Config.load(directory / base).to_dict()
    if not isinstance(base, dict):
        raise ConfigError(
            f"{source}: base: expected a configuration file (a path relative to the spec) or a "
            f"table, got {base!r}"
        )
    return dict(base)


def _mode(d: Mapping[str, Any], source: str, where: str) -> tuple[str, int]:
    mode = d.get("mode", "grid")
    if mode not in MODES:
        raise ConfigError(
            f"{source}: {where}mode: expected one of {', '.join(MODES)}, got {mode!r}"
        )
    samples = _typed(d, "samples", int, source, where, 0)
    if mode == "random" and samples < 1:
        raise ConfigError(f'{source}: {where}samples: mode = "random" needs samples >= 1')
    if mode != "random" and "samples" in d:
        raise ConfigError(f'{source}: {where}samples: only with mode = "random"')
    return mode, samples


def _axes(raw: Any, mode: str, source: str, where: str) -> tuple[Axis, ...]:
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: {where}: expected a table of dotted field = values")
    axes = []
    for path, given in raw.items():
        at = f"{source}: {where}.{path}"
        values, label = _axis_label(given, source, f"{where}.{path}")
        axes.append(replace(_axis(path, values, mode, source, where, at), label=label))
    if mode == "random" and not axes:
        raise ConfigError(f'{source}: {where}: mode = "random" needs at least one axis')
    if mode == "zip" and len({len(a.points()) for a in axes}) > 1:
        lengths = ", ".join(f"{a.path} has {len(a.points())}" for a in axes)
        raise ConfigError(f'{source}: {where}: mode = "zip" needs axes of equal length; {lengths}')
    return tuple(axes)


def _axis_label(given: Any, source: str, where: str) -> tuple[Any, str | None]:
    """An axis' values and label: ``{label = "...", values = ...}`` given in full, a range's
    ``label``, or the values alone (no label)."""
    if not isinstance(given, dict):
        return given, None
    if "values" in given:
        _known_keys(given, _AXIS_KEYS, source, f"{where}.")
        given = dict(given)
        label = given.pop("label", None)
        values = given["values"]
    elif "min" in given or "max" in given:
        values = dict(given)
        label = values.pop("label", None)
    else:
        return given, None
    if label is not None and (not isinstance(label, str) or not label.strip()):
        raise ConfigError(f"{source}: {where}.label: expected a non-empty string, got {label!r}")
    return values, label


def _axis(path: str, values: Any, mode: str, source: str, where: str, at: str) -> Axis:
    """One axis from its values: a list, a range table or a table of label = value."""
    if isinstance(values, list):
        if not values:
            raise ConfigError(f"{at}: expected at least one value")
        return Axis(path, tuple(values))
    if isinstance(values, dict) and ("min" in values or "max" in values):
        # A table with min or max is a range (so `step` or a typo is named, not taken as a
        # labelled axis whose labels happen to be min and max).
        _known_keys(values, _RANGE_KEYS, source, f"{where}.{path}.")
        return Axis(path, _range(values, mode, at))
    if isinstance(values, dict) and values:
        return Axis(path, tuple(values.values()), tuple(values))
    raise ConfigError(
        f"{at}: expected a list of values, a table of label = value, a table {{label, values}}"
        f' or (mode = "random") {{min = .., max = ..}}; got {values!r}'
    )


def _range(d: Mapping[str, Any], mode: str, at: str) -> Range:
    if mode != "random":
        raise ConfigError(f'{at}: a range {{min, max}} needs mode = "random"; list the values')
    lo, hi = d.get("min"), d.get("max")
    if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in (lo, hi)):
        raise ConfigError(f"{at}: a range needs numbers min and max, got min={lo!r} max={hi!r}")
    assert isinstance(lo, int | float) and isinstance(hi, int | float)
    log, integer = d.get("log", False), d.get("integer", False)
    if not isinstance(log, bool) or not isinstance(integer, bool):
        raise ConfigError(f"{at}: log and integer must be true or false")
    if hi < lo or (log and lo <= 0):
        raise ConfigError(
            f"{at}: expected min <= max{' and min > 0 (log = true)' if log else ''}, got "
            f"min={lo} max={hi}"
        )
    return Range(float(lo), float(hi), log, integer)


def _variants(raw: Any, source: str) -> tuple[Variant, ...]:
    if not isinstance(raw, list):
        raise ConfigError(f"{source}: variants: expected [[variants]] tables")
    out = []
    for i, v in enumerate(raw):
        if not isinstance(v, dict) or not isinstance(v.get("name"), str) or not v["name"]:
            raise ConfigError(
                f"{source}: variants[{i}]: expected a table with a non-empty string `name`"
            )
        _known_keys(v, _VARIANT_KEYS, source, f"variants[{i}].")
        overrides = v.get("set", {})
        if not isinstance(overrides, dict):
            raise ConfigError(f"{source}: variants[{i}].set: expected a table of field = value")
        out.append(Variant(v["name"], dict(_flatten(overrides))))
    names = [v.name for v in out]
    if len(set(names)) != len(names):
        raise ConfigError(f"{source}: variants: names must be unique, got {', '.join(names)}")
    return tuple(out) or (Variant(DEFAULT_VARIANT),)


def _groups(raw: Any, source: str) -> tuple[Group, ...]:
    if not isinstance(raw, list):
        raise ConfigError(f"{source}: groups: expected [[groups]] tables")
    out = []
    for i, g in enumerate(raw):
        where = f"groups[{i}]"
        if not isinstance(g, dict) or not isinstance(g.get("name"), str) or not g["name"]:
            raise ConfigError(f"{source}: {where}: expected a table with a non-empty `name`")
        _known_keys(g, _GROUP_KEYS, source, f"{where}.")
        mode, samples = _mode(g, source, f"{where}.")
        out.append(
            Group(g["name"], _axes(g.get("axes", {}), mode, source, f"{where}.axes"), mode, samples)
        )
    names = [g.name for g in out]
    if len(set(names)) != len(names):
        raise ConfigError(f"{source}: groups: names must be unique, got {', '.join(names)}")
    return tuple(out)


def _flatten(d: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    # A variant's `set` may use dotted keys in quotes or nested tables (TOML dotted keys nest).
    for k, v in d.items():
        path = f"{prefix}.{k}" if prefix else k
        if isinstance(v, Mapping) and v:
            yield from _flatten(v, path)
        else:
            yield path, v


def _count(axes: Sequence[Axis], mode: str, samples: int) -> int:
    """How many cells :func:`_combine` makes of ``axes``, without making them."""
    if mode == "random":
        return samples
    if mode == "zip":
        return len(axes[0].points()) if axes else 1
    return math.prod(len(a.points()) for a in axes)


def _combine(
    axes: Sequence[Axis], mode: str, samples: int, rng: random.Random
) -> list[list[tuple[str, Any, Any]]]:
    """The cells of one set of axes: [(axis, column value, configuration value), ...] each."""
    if mode == "random":
        return [[(a.path, *a.sample(rng)) for a in axes] for _ in range(samples)]
    points = [[(a.path, *p) for p in a.points()] for a in axes]
    if mode == "zip":
        return [list(cell) for cell in zip(*points, strict=True)] if axes else [[]]
    return [list(cell) for cell in itertools.product(*points)]


def _column_value(v: Any) -> Any:
    """A dataset cell: scalars as they are, tables and arrays as their JSON text."""
    return json.dumps(v, sort_keys=True) if isinstance(v, dict | list) else v


def _label(group: str, variant: str, values: Mapping[str, Any]) -> str:
    short = [f"{k}={f'{v:g}' if isinstance(v, float) else v}" for k, v in values.items()]
    return ", ".join([*([group] if group else []), variant, *short])


def _studies() -> Path:
    return Path(str(resources.files("tracewatt") / "studies"))


def list_shipped() -> list[tuple[str, str]]:
    """(name, description) of the sweep specs shipped with tracewatt."""
    out = []
    for p in sorted(_studies().glob("*.toml")):
        doc = tomllib.loads(p.read_text(encoding="utf-8"))
        out.append((p.stem, str(doc.get("description", ""))))
    return out


def shipped_spec_path(name: str) -> Path:
    p = _studies() / f"{name}.toml"
    if not p.is_file():
        names = ", ".join(n for n, _ in list_shipped())
        raise ConfigError(f"{name}: no such file, nor a shipped sweep spec ({names})")
    return p
