"""Sweeps: many configurations, run in parallel, resumable, gathered into one dataset.

A sweep spec (TOML; docs/cli.md, "tracewatt sweep") is a ``base`` configuration, ``[axes]`` over
dotted configuration fields combined by ``mode`` (grid, zip or seeded random samples), optional
``[[groups]]`` (sub-sweeps with their own axes), and ``[[variants]]`` that every cell runs once
each, one of which may be the ``baseline`` the others are compared with.

Each run goes to ``DIR/runs/<hash>/`` (the hash of its resolved configuration and the tracewatt
version), with ``done.json`` written last: a directory without it is run again. ``DIR/sweep.json``
describes the sweep and ``DIR/sweep.parquet`` holds a row per run. ``tracewatt.sweep(spec, DIR)``
(this module is callable) runs a sweep and returns that dataset as a DataFrame.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
import multiprocessing
import os
import random
import signal
import sys
import time
import tomllib
import types
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracewatt.config import Config, read_text, set_path
from tracewatt.errors import ConfigError, ResultsError

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "MODES",
    "Axis",
    "Group",
    "Progress",
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

MODES = ("grid", "zip", "random")
#: The variant of a spec without ``[[variants]]``.
DEFAULT_VARIANT = "run"
#: A worker process that dies this many times while running one run fails that run.
MAX_ATTEMPTS = 3
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
    }
)
_GROUP_KEYS = frozenset({"name", "axes", "mode", "samples"})
_VARIANT_KEYS = frozenset({"name", "set"})
_RANGE_KEYS = frozenset({"min", "max", "log", "integer"})


# --------------------------------------------------------------------------- spec


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
    axis (a table ``label = value``): the dataset's column then holds the label."""

    path: str
    values: tuple[Any, ...] | Range
    labels: tuple[str, ...] | None = None

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
    #: configuration, or the configuration as given where it could not be resolved.
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
        return cls(
            name, description, source, seed, base, axes, mode, samples, variants, baseline, groups
        )

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
        from tracewatt import __version__

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
                text = json.dumps(resolved, sort_keys=True, separators=(",", ":"))
                digest = _run_hash(text, __version__)
                out.append(Run(group, v.name, values, cfg, digest, error, text))
        return out

    def description_json(self) -> dict[str, Any]:
        """What ``sweep.json`` holds."""
        from tracewatt import __version__

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
        }


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
    for path, values in raw.items():
        at = f"{source}: {where}.{path}"
        if isinstance(values, list):
            if not values:
                raise ConfigError(f"{at}: expected at least one value")
            axes.append(Axis(path, tuple(values)))
        elif isinstance(values, dict) and ("min" in values or "max" in values):
            # A table with min or max is a range (so `step` or a typo is named, not taken as
            # a labelled axis whose labels happen to be min and max).
            _known_keys(values, _RANGE_KEYS, source, f"{where}.{path}.")
            axes.append(Axis(path, _range(values, mode, at)))
        elif isinstance(values, dict) and values:
            axes.append(Axis(path, tuple(values.values()), tuple(values)))
        else:
            raise ConfigError(
                f"{at}: expected a list of values, a table of label = value, or (mode = "
                f'"random") {{min = .., max = ..}}; got {values!r}'
            )
    if mode == "random" and not axes:
        raise ConfigError(f'{source}: {where}: mode = "random" needs at least one axis')
    if mode == "zip" and len({len(a.points()) for a in axes}) > 1:
        lengths = ", ".join(f"{a.path} has {len(a.points())}" for a in axes)
        raise ConfigError(f'{source}: {where}: mode = "zip" needs axes of equal length; {lengths}')
    return tuple(axes)


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


# --------------------------------------------------------------------------- shipped specs


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


# --------------------------------------------------------------------------- one run


def _execute(config: Config, run_dir: str) -> dict[str, Any]:
    """Runs one configuration into ``run_dir`` (in a worker): the results, then ``done.json``.
    A run that fails writes ``error.json`` instead; the error is returned, not raised."""
    from tracewatt import simulate

    d = Path(run_dir)
    d.mkdir(parents=True, exist_ok=True)
    (d / "error.json").unlink(missing_ok=True)
    start, start_cpu = time.monotonic(), time.thread_time()
    try:
        simulate(config).write(d)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # a Rust panic is a BaseException: it fails this run only
        error = f"{type(e).__name__}: {e}"
        _write_json(d / "error.json", {"status": "failed", "error": error})
        return {"status": "failed", "error": error}
    # The engine is single-threaded and runs in this thread; the worker process's own threads
    # (heartbeats, communication) would inflate a process CPU time.
    took = {"wall_s": time.monotonic() - start, "cpu_s": time.thread_time() - start_cpu}
    _write_json(d / "done.json", {"status": "ok", "error": "", **took})
    return {"status": "ok", "error": ""}


def _write_json(path: Path, d: Mapping[str, Any]) -> None:
    from tracewatt.results import _atomic_write_bytes

    _atomic_write_bytes(path, (json.dumps(d, indent=2) + "\n").encode("utf-8"))


# --------------------------------------------------------------------------- progress


@dataclass
class Progress:
    """What a progress display gets: counts of this invocation's runs (``skipped`` finished
    before it started), and the run just finished with its outcome."""

    total: int
    skipped: int = 0
    done: int = 0
    running: int = 0
    failed: int = 0
    last: Run | None = None
    last_error: str = ""


ProgressCallback = Callable[[Progress], None]


# --------------------------------------------------------------------------- executors


def _ignore_sigint() -> None:
    # Workers leave Ctrl-C to the parent, which terminates them: no worker tracebacks, and a
    # SIGINT sent to the parent alone stops them too.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


OnResult = Callable[[str, dict[str, Any]], None]
OnRunning = Callable[[int], None]


def _run_pool(
    todo: Mapping[str, Run], out: Path, workers: int, on_result: OnResult, on_running: OnRunning
) -> None:
    """Runs ``todo`` (hash -> run) on a pool of worker processes, at most ``workers`` at once.
    A worker that dies breaks the pool: a new one takes over and the runs that were in flight
    start again (a run fails once its worker has died :data:`MAX_ATTEMPTS` times)."""
    pending = deque(todo)
    attempts = dict.fromkeys(todo, 0)
    ctx = multiprocessing.get_context("spawn")
    while pending:
        pool = ProcessPoolExecutor(workers, mp_context=ctx, initializer=_ignore_sigint)
        inflight: dict[Future[dict[str, Any]], str] = {}
        try:
            broken = False
            while (pending and not broken) or inflight:
                while pending and not broken and len(inflight) < workers:
                    h = pending.popleft()
                    inflight[pool.submit(_execute, todo[h].config, str(out / todo[h].dir))] = h
                on_running(len(inflight))
                finished, _ = wait(inflight, return_when=FIRST_COMPLETED)
                for f in finished:
                    h = inflight.pop(f)
                    on_running(len(inflight))
                    try:
                        outcome = f.result()
                    except BrokenProcessPool:
                        broken = True
                        attempts[h] += 1
                        if attempts[h] < MAX_ATTEMPTS:
                            pending.appendleft(h)
                            continue
                        outcome = _died(attempts[h])
                    on_result(h, outcome)
        except BaseException:
            _terminate_workers()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)


def _died(n: int) -> dict[str, Any]:
    return {"status": "failed", "error": f"the worker process running it died {n} time(s)"}


def _terminate_workers() -> None:
    # The pool cannot stop a running task: its worker processes are ended directly.
    children = multiprocessing.active_children()
    for p in children:
        p.terminate()
    for p in children:
        p.join(timeout=5)


def _run_dask(
    todo: Mapping[str, Run], out: Path, client: Any, on_result: OnResult, on_running: OnRunning
) -> None:
    """Runs ``todo`` on a Dask cluster. The scheduler itself resubmits the run of a worker that
    died (``distributed.scheduler.allowed-failures`` times, then it fails with KilledWorker)."""
    from distributed import as_completed

    futures = {
        client.submit(_execute, r.config, str(out / r.dir), pure=False): h for h, r in todo.items()
    }
    threads = max(1, sum(client.nthreads().values()))
    left = len(futures)
    on_running(min(left, threads))
    try:
        for f in as_completed(futures):
            h = futures[f]
            if f.status == "finished":
                on_result(h, f.result())
            else:
                e = f.exception() if f.status == "error" else None
                error = f"{type(e).__name__}: {e}" if e else f"the run was {f.status}"
                on_result(h, {"status": "failed", "error": error})
            left -= 1
            on_running(min(left, threads))
            f.release()
    except BaseException:
        client.cancel(list(futures))
        raise


def jobqueue_cluster(kind: str, options: Mapping[str, Any]) -> Any:
    """A dask-jobqueue cluster (``kind`` "slurm" or "pbs") whose jobs each run ``cores``
    single-threaded worker processes. ``options``: queue, account, walltime, cores, memory."""
    import dask_jobqueue

    cls = {"slurm": dask_jobqueue.SLURMCluster, "pbs": dask_jobqueue.PBSCluster}[kind]
    given = {k: v for k, v in options.items() if v is not None}
    for k in ("cores", "memory"):
        if k not in given:
            raise ConfigError(f"--cluster {kind}: --{k} is required (per job)")
    return cls(processes=given["cores"], **given)


@dataclass
class _Cluster:
    """The Dask client of a sweep, and the cluster it started (closed with it)."""

    client: Any
    cluster: Any = None

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


def _connect(
    scheduler: str | None, cluster: str | None, options: Mapping[str, Any], jobs: int
) -> _Cluster:
    from distributed import Client, LocalCluster

    if scheduler is not None:
        return _Cluster(Client(scheduler))
    assert cluster is not None
    if cluster.startswith("local:"):
        n = cluster.removeprefix("local:")
        if not n.isdigit() or int(n) < 1:
            raise ConfigError(f"--cluster {cluster}: expected local:N with N >= 1 workers")
        c = LocalCluster(
            n_workers=int(n), threads_per_worker=1, processes=True, dashboard_address=None
        )
        return _Cluster(Client(c), c)
    if cluster not in ("slurm", "pbs"):
        raise ConfigError(f"--cluster {cluster}: expected local:N, slurm or pbs")
    c = jobqueue_cluster(cluster, options)
    c.scale(jobs=jobs)
    return _Cluster(Client(c), c)


# --------------------------------------------------------------------------- the sweep


def check_out_dir(out_dir: str | os.PathLike[str], option: str = "-o") -> Path:
    """Checks a sweep's directory (given as ``option``) before anything runs: new, empty, or a
    sweep's (which is resumed). Returns it as an absolute path, which errors name; raises
    :class:`ConfigError`."""
    out = Path(out_dir).absolute()
    if out.exists() and not out.is_dir():
        raise ConfigError(f"{out}: exists and is not a directory; give a directory for {option}")
    if out.is_dir() and any(out.iterdir()) and not (out / "sweep.json").is_file():
        raise ConfigError(
            f"{out}: not empty and not a sweep's directory (no sweep.json); give a new or empty "
            f"directory for {option}, or a sweep's to resume it"
        )
    return out


def other_sweep(out: Path, runs: Sequence[Run]) -> str | None:
    """Why ``out`` holds another sweep than the one of ``runs``, or None where it holds none or
    this one. The sweep there is this one when every run its dataset (``sweep.parquet``) lists
    is a run of ``runs``: hashed as the version that wrote it (``sweep.json``) or this one
    names them, so a sweep resumed by a newer tracewatt is still itself, and a spec that only
    adds runs (an axis value more) still holds every row of the dataset it replaces."""
    from tracewatt import __version__

    meta_path, data_path = out / "sweep.json", out / "sweep.parquet"
    if not meta_path.is_file() or not data_path.is_file():
        return None
    from tracewatt.results import read_json, read_parquet

    try:
        # Only what tells the sweeps apart: any sweep.json object, sweep.parquet's `dir`.
        meta = read_json(meta_path, "a sweep's description (name, axes, variants, ...)", {})
        table = read_parquet(data_path)
    except ResultsError as e:
        return f"{out}: cannot read the sweep there ({e})"
    if "dir" not in table.column_names:
        return f"{out}: cannot read the sweep there ({data_path}: no column dir)"
    listed = table.column("dir").to_pylist()
    versions = {str(meta.get("tracewatt_version")), __version__}
    mine = {f"runs/{r.hash_under(v)}" for r in runs for v in versions}
    foreign = [d for d in listed if d and d not in mine]
    if not foreign:
        return None
    return (
        f"{out}: holds another sweep (`{meta.get('name')}`: {len(foreign)} of the {len(listed)} "
        "runs of its sweep.parquet are not runs of this spec)"
    )


def run(
    spec: SweepSpec | str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    workers: int | None = None,
    scheduler: str | None = None,
    cluster: str | None = None,
    cluster_options: Mapping[str, Any] | None = None,
    jobs: int = 1,
    progress: ProgressCallback | None = None,
    replace: bool = False,
) -> pd.DataFrame:
    """Runs every run of ``spec`` not already finished in ``out_dir`` and writes
    ``sweep.json`` and ``sweep.parquet``; returns the dataset. An ``out_dir`` that holds
    another sweep (:func:`other_sweep`) raises :class:`ConfigError` before anything runs,
    unless ``replace``: its ``sweep.json`` and ``sweep.parquet`` are then this sweep's, and its
    runs stay in ``runs/``.

    Runs go to a local pool of ``workers`` processes (default: one per core), or to Dask:
    ``scheduler`` (an address such as ``tcp://host:8786``), or ``cluster`` ``"local:N"`` (a
    ``distributed.LocalCluster`` of N worker processes), ``"slurm"`` or ``"pbs"``
    (dask-jobqueue with ``cluster_options`` queue/account/walltime/cores/memory, ``jobs``
    jobs). Nothing is started when every run is finished. On Ctrl-C the workers are stopped,
    the dataset of the finished runs is written, and ``KeyboardInterrupt`` propagates.
    """
    s = spec if isinstance(spec, SweepSpec) else SweepSpec.load(spec)
    out = Path(out_dir)
    runs = s.runs()
    why = other_sweep(out, runs)
    if why is not None and not replace:
        raise ConfigError(f"{why}; give another directory, or replace that sweep (--force)")
    if why is not None:
        # The other sweep's dataset goes first: never beside this sweep's sweep.json.
        (out / "sweep.parquet").unlink()
    out.mkdir(parents=True, exist_ok=True)
    _write_json(out / "sweep.json", s.description_json())
    unique = {r.hash: r for r in runs}
    todo = {
        h: r for h, r in unique.items() if not r.error and not (out / r.dir / "done.json").is_file()
    }
    state = Progress(
        total=len(unique), skipped=sum(1 for r in unique.values() if not r.error) - len(todo)
    )

    def on_result(h: str, outcome: dict[str, Any]) -> None:
        state.done += 1
        state.last, state.last_error = unique[h], str(outcome["error"])
        if outcome["status"] != "ok":
            state.failed += 1
            if unique[h].error == "" and not (out / unique[h].dir / "error.json").is_file():
                # The run died with its worker: nothing of it is on disk yet.
                _write_json(out / unique[h].dir / "error.json", outcome)
        if progress:
            progress(state)

    def on_running(n: int) -> None:
        state.running = n

    if progress:
        progress(state)
    for h, r in unique.items():
        if r.error:
            on_result(h, {"status": "failed", "error": r.error})
    try:
        if todo and (scheduler is not None or cluster is not None):
            c = _connect(scheduler, cluster, cluster_options or {}, jobs)
            try:
                _run_dask(todo, out, c.client, on_result, on_running)
            finally:
                c.close()
        elif todo:
            n = max(1, min(workers or os.cpu_count() or 1, len(todo)))
            _run_pool(todo, out, n, on_result, on_running)
    finally:
        # Also when interrupted: the dataset of what finished.
        df = dataset(s, runs, out)
        write_dataset(df, out)
    return df


def _outcome(r: Run, out: Path) -> dict[str, Any] | None:
    """A run's outcome: finished (``done.json``), failed (its error), or None (not run)."""
    if r.error:
        return {"status": "failed", "error": r.error}
    from tracewatt.results import read_json

    for name in ("done.json", "error.json"):
        if (out / r.dir / name).is_file():
            what = "a sweep run's outcome as the sweep writes it"
            return dict(read_json(out / r.dir / name, what, {"status": str}))
    return None


def dataset(spec: SweepSpec, runs: Sequence[Run], out: Path) -> pd.DataFrame:
    """A row per finished run, in spec order, with the columns of docs/cli.md."""
    import pandas as pd

    from tracewatt.results import read_summary

    listed: list[tuple[Run, dict[str, Any]]] = []
    summaries: dict[tuple[str, str, str], dict[str, Any]] = {}
    for r in runs:
        outcome = _outcome(r, out)
        if outcome is None:
            continue
        ok = outcome["status"] == "ok"
        row: dict[str, Any] = {"group": r.group, "variant": r.variant}
        row.update({a: r.values.get(a) for a in spec.axis_names})
        row.update(status=outcome["status"], error=outcome.get("error", ""))
        row["dir"] = "" if r.error else r.dir
        if ok:
            summary = read_summary(out / r.dir / "summary.json")
            row.update(_metrics(summary))
            row.update(
                run_wall_s=outcome.get("wall_s", math.nan), run_cpu_s=outcome.get("cpu_s", math.nan)
            )
            summaries[(r.group, _cell_key(r), r.variant)] = summary
        listed.append((r, row))
    if spec.baseline is not None:
        for r, row in listed:
            row.update(_against(summaries, r, spec.baseline))
    rows = [row for _, row in listed]
    columns = ["group", "variant", *spec.axis_names, "status", "error", "dir"]
    for row in rows:
        columns += [k for k in row if k not in columns]
    return pd.DataFrame(rows, columns=columns)


def _cell_key(r: Run) -> str:
    return json.dumps(r.values, sort_keys=True, default=str)


def _against(
    summaries: Mapping[tuple[str, str, str], dict[str, Any]], r: Run, baseline: str
) -> dict[str, float]:
    """Saving and slowdown of ``r`` against the baseline variant of its cell; NaN for the
    baseline itself and where either run failed."""
    from tracewatt.compare import Comparison
    from tracewatt.results import Results

    s = summaries.get((r.group, _cell_key(r), r.variant))
    b = summaries.get((r.group, _cell_key(r), baseline))
    if s is None or b is None or r.variant == baseline:
        return dict.fromkeys(("saving_pct", "link_saving_pct", "slowdown_pct"), math.nan)
    c = Comparison(policy=Results(s, {}), baseline=Results(b, {}))
    return {
        "saving_pct": c.saving_pct,
        "link_saving_pct": c.link_saving_pct,
        "slowdown_pct": c.slowdown_pct,
    }


def _metrics(summary: Mapping[str, Any]) -> dict[str, Any]:
    """A run's summary metrics as dataset columns."""
    energy, power = summary["energy_j"], summary["avg_power_w"]
    row: dict[str, Any] = {"makespan_s": float(summary["makespan_s"])}
    row["energy_j"] = float(energy["total"])
    row.update({f"energy_{k}_j": float(v) for k, v in energy.items() if k != "total"})
    row["avg_power_w"] = float(power["total"])
    row.update({f"avg_power_{k}_w": float(v) for k, v in power.items() if k != "total"})
    row["link_wakes"] = int(summary["links"]["wakes"])
    row["lpi_share"] = float(summary["links"]["lpi_fraction"])
    row["messages"] = int(summary["messages"]["count"])
    row["mean_switch_hops"] = float(summary["network"]["mean_switch_hops"])
    return row


def write_dataset(df: pd.DataFrame, out: Path) -> None:
    from tracewatt.results import _atomic_write_parquet, _frame_to_arrow

    _atomic_write_parquet(out / "sweep.parquet", _frame_to_arrow(df))


def read_dataset(directory: str | os.PathLike[str]) -> tuple[dict[str, Any], pd.DataFrame]:
    """``sweep.json`` and ``sweep.parquet`` of a sweep's directory. Raises
    :class:`~tracewatt.errors.ResultsError` naming the file that is not what a sweep writes."""
    from tracewatt.results import read_json, read_parquet

    d = Path(directory)
    meta = read_json(d / "sweep.json", "a sweep's description (name, axes, variants, ...)", _META)
    return meta, read_parquet(d / "sweep.parquet").to_pandas()


# What readers of sweep.json use (SweepSpec.description_json writes more).
_META = {
    "name": str,
    "axes": [str],
    "variants": [str],
    "baseline?": (str, type(None)),
    "mode?": str,
    "groups?": [{"name": str}],
}


class _CallableModule(types.ModuleType):
    # `tracewatt.sweep(spec, out_dir)` is the agreed Python API, and `tracewatt.sweep` is also
    # this module: calling the module runs a sweep.
    def __call__(self, *args: Any, **kwargs: Any) -> pd.DataFrame:
        return run(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
