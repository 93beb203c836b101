"""Studies: a grid of machines x workloads, each cell one simulation, run in parallel.

A study definition is a TOML file (the default one is ``tracewatt/studies/default.toml``)::

    name = "default"
    seed = 1

    [base]                      # merged into every run's configuration (dotted keys allowed)
    machine.ranks_per_node = 1

    [[topologies]]
    name = "fattree"            # directory name and table label
    preset = "tracerp-fattree-288"
    # set = { "machine.links.bandwidth_gbps" = 40.0 }   # optional dotted overrides

    [[workloads]]
    name = "near_neighbor"
    ranks = 256
    workload = { kind = "near_neighbor", ... }          # the job's [jobs.workload] table
    # set = { ... }                                      # optional dotted overrides

Every (topology, workload) cell becomes one configuration: ``base``, then
``machine.preset``, one job ``{name, ranks, workload}``, then the topology's and the workload's
``set`` overrides. Each run's results go to ``DIR/<topology>/<workload>/`` and one row per cell
to ``DIR/study.csv``. The row's columns are the :data:`COLUMNS` metrics; adding a column (e.g.
energy under EEE vs always-on) means adding a :class:`Metric` and, if it needs another run of the
same cell, a :class:`Variant`.
"""

from __future__ import annotations

import copy
import multiprocessing
import os
import signal
import time
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd

from tracewatt import _format
from tracewatt.compare import Comparison
from tracewatt.config import Config, set_path
from tracewatt.errors import ConfigError, TracewattError
from tracewatt.results import Results

__all__ = [
    "COLUMNS",
    "Cell",
    "CellResult",
    "Metric",
    "StudySpec",
    "Variant",
    "default_study_path",
    "format_table",
    "run_study",
]


# --------------------------------------------------------------------------- definition


@dataclass(frozen=True)
class Variant:
    """One run of a cell. A study has one variant (``base``) today; an EEE vs always-on study
    adds a second one with its overrides, and metrics that read both."""

    name: str
    overrides: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Cell:
    topology: str
    workload: str
    ranks: int
    configs: Mapping[str, Config]  # variant name -> configuration


@dataclass(frozen=True)
class StudySpec:
    name: str
    cells: tuple[Cell, ...]
    variants: tuple[Variant, ...]
    source: str

    @classmethod
    def load(cls, path: str | os.PathLike[str] | None = None) -> StudySpec:
        p = Path(path) if path is not None else default_study_path()
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as e:
            raise ConfigError(f"{p}: cannot read the study: {e.strerror or e}") from e
        return cls.from_toml(text, str(p) if path is not None else "studies/default.toml")

    @classmethod
    def from_toml(cls, text: str, source: str) -> StudySpec:
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"{source}: {e}") from e
        return cls.from_dict(doc, source)

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any], source: str) -> StudySpec:
        allowed = {"name", "description", "seed", "base", "topologies", "workloads", "variants"}
        for k in doc:
            if k not in allowed:
                raise ConfigError(
                    f"{source}: {k}: unknown field; expected one of {', '.join(sorted(allowed))}"
                )
        topologies = _entries(doc, "topologies", source, {"name", "preset", "set"})
        workloads = _entries(doc, "workloads", source, {"name", "ranks", "workload", "set"})
        variants_raw = _entries(doc, "variants", source, {"name", "set"}, required=False)
        variants = tuple(Variant(v["name"], dict(v.get("set", {}))) for v in variants_raw) or (
            Variant("base"),
        )
        base = dict(doc.get("base", {}))
        seed = doc.get("seed", 1)
        cells: list[Cell] = []
        for t in topologies:
            for w in workloads:
                d: dict[str, Any] = copy.deepcopy(base)
                _apply(d, {"seed": seed}, source, t["name"], w["name"])
                if "preset" in t:
                    _apply(d, {"machine.preset": t["preset"]}, source, t["name"], w["name"])
                job = {"name": w["name"], "ranks": w["ranks"], "workload": w["workload"]}
                d["jobs"] = [copy.deepcopy(job)]
                _apply(d, t.get("set", {}), source, t["name"], w["name"])
                _apply(d, w.get("set", {}), source, t["name"], w["name"])
                configs: dict[str, Config] = {}
                for v in variants:
                    dv = copy.deepcopy(d)
                    _apply(dv, v.overrides, source, t["name"], w["name"])
                    label = f"{source}[{t['name']}/{w['name']}{_suffix(v, variants)}]"
                    configs[v.name] = Config.from_dict(dv, source=label)
                cells.append(Cell(t["name"], w["name"], int(w["ranks"]), configs))
        return cls(str(doc.get("name", "study")), tuple(cells), variants, source)


def _suffix(v: Variant, variants: Sequence[Variant]) -> str:
    return "" if len(variants) == 1 else f"/{v.name}"


def _entries(
    doc: Mapping[str, Any], key: str, source: str, allowed: set[str], *, required: bool = True
) -> list[dict[str, Any]]:
    items = doc.get(key, [])
    if not isinstance(items, list) or (required and not items):
        raise ConfigError(f"{source}: {key}: expected one or more [[{key}]] tables")
    for i, item in enumerate(items):
        if not isinstance(item, dict) or "name" not in item:
            raise ConfigError(f"{source}: {key}[{i}]: expected a table with a `name`")
        for k in item:
            if k not in allowed:
                raise ConfigError(
                    f"{source}: {key}[{i}].{k}: unknown field; expected one of "
                    f"{', '.join(sorted(allowed))}"
                )
    names = [item["name"] for item in items]
    if len(set(names)) != len(names):
        raise ConfigError(f"{source}: {key}: names must be unique")
    return items


def _flatten(d: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for k, v in d.items():
        path = f"{prefix}.{k}" if prefix else k
        if isinstance(v, Mapping) and v:
            yield from _flatten(v, path)
        else:
            yield path, v


def _apply(d: dict[str, Any], overrides: Mapping[str, Any], source: str, t: str, w: str) -> None:
    # Keys may be dotted strings or nested tables (TOML dotted keys nest); both flatten alike.
    for path, value in _flatten(overrides):
        set_path(d, path, copy.deepcopy(value), source=f"{source}[{t}/{w}]")


def default_study_path() -> Path:
    return Path(str(resources.files("tracewatt") / "studies" / "default.toml"))


# --------------------------------------------------------------------------- metrics


@dataclass(frozen=True)
class Metric:
    """A study column: ``compute(results by variant) -> value``; ``fmt`` renders it."""

    name: str
    compute: Callable[[Mapping[str, Results]], Any]
    fmt: Callable[[Any], str] = str


def _base(r: Mapping[str, Results]) -> Results:
    return next(iter(r.values()))


def _busy_pct(r: Results, how: str) -> float:
    mk = r.makespan_s
    links = r.links
    if mk <= 0 or links.empty:
        return 0.0
    frac = links["busy_s"] / mk * 100.0
    return float(frac.mean() if how == "mean" else frac.max())


def _comparison(r: Mapping[str, Results]) -> Comparison | None:
    """EEE against always-on, when the study has both variants."""
    if "eee" in r and "always_on" in r:
        return Comparison(policy=r["eee"], baseline=r["always_on"])
    return None


def _link_saving_pct(r: Mapping[str, Results]) -> float:
    c = _comparison(r)
    return c.link_saving_pct if c else float("nan")


def _machine_saving_pct(r: Mapping[str, Results]) -> float:
    """Energy saved over everything priced: links, switches, NIC ports, cores, nodes, DIMMs."""
    c = _comparison(r)
    return c.saving_pct if c else float("nan")


def _slowdown_pct(r: Mapping[str, Results]) -> float:
    c = _comparison(r)
    return c.slowdown_pct if c else float("nan")


def _f(digits: int) -> Callable[[Any], str]:
    return lambda v: f"{v:.{digits}f}"


COLUMNS: list[Metric] = [
    Metric("makespan_s", lambda r: _base(r).makespan_s, lambda v: f"{v:.6g}"),
    Metric("messages", lambda r: int(_base(r).summary["messages"]["count"]), _format.count),
    Metric("message_bytes", lambda r: int(_base(r).summary["messages"]["bytes"]), _format.nbytes),
    Metric(
        "latency_mean_s",
        lambda r: float(_base(r).summary["messages"]["latency_mean_s"]),
        _format.seconds,
    ),
    Metric(
        "mean_hops",
        lambda r: float(_base(r).summary["network"]["mean_switch_hops"]),
        _f(2),
    ),
    Metric("link_busy_mean_pct", lambda r: _busy_pct(_base(r), "mean"), _f(2)),
    Metric("link_busy_max_pct", lambda r: _busy_pct(_base(r), "max"), _f(1)),
    Metric("lpi_fraction", lambda r: float(_base(r).summary["links"]["lpi_fraction"]), _f(3)),
    Metric("link_saving_pct", _link_saving_pct, _f(1)),
    Metric("machine_saving_pct", _machine_saving_pct, _f(2)),
    Metric("slowdown_pct", _slowdown_pct, _f(2)),
]

#: Columns shown in the printed table (study.csv has every column).
TABLE_COLUMNS: tuple[str, ...] = (
    "makespan_s",
    "messages",
    "mean_hops",
    "link_busy_mean_pct",
    "link_saving_pct",
    "machine_saving_pct",
    "slowdown_pct",
)


# --------------------------------------------------------------------------- running


@dataclass(frozen=True)
class CellResult:
    topology: str
    workload: str
    ranks: int
    row: dict[str, Any] | None  # metric name -> value
    error: tuple[str, str] | None  # (exception class name, message)
    wall_s: float


def _run_cell(cell: Cell, out_dir: str | None, multi: bool) -> CellResult:
    """Runs every variant of one cell (in a worker process)."""
    t0 = time.perf_counter()
    try:
        results: dict[str, Results] = {}
        from tracewatt import simulate

        for vname, cfg in cell.configs.items():
            res = simulate(cfg)
            results[vname] = res
            if out_dir is not None:
                d = Path(out_dir) / cell.topology / cell.workload
                res.write(d / vname if multi else d)
        row = {m.name: m.compute(results) for m in COLUMNS}
    except TracewattError as e:
        return CellResult(
            cell.topology,
            cell.workload,
            cell.ranks,
            None,
            (type(e).__name__, str(e)),
            time.perf_counter() - t0,
        )
    return CellResult(cell.topology, cell.workload, cell.ranks, row, None, time.perf_counter() - t0)


def _ignore_sigint() -> None:
    # Workers leave Ctrl-C to the parent, which terminates them: no worker tracebacks, and a
    # SIGINT sent to the parent alone stops them too.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run_indexed(args: tuple[int, Cell, str | None, bool]) -> tuple[int, CellResult]:
    i, cell, out_dir, multi = args
    return i, _run_cell(cell, out_dir, multi)


def run_study(
    spec: StudySpec,
    out_dir: str | os.PathLike[str] | None,
    *,
    workers: int | None = None,
    on_done: Callable[[CellResult, int, int], None] | None = None,
) -> list[CellResult]:
    """Runs every cell on a process pool of ``workers`` (default ``os.cpu_count()``) processes;
    returns results in study order and writes ``study.csv`` when ``out_dir`` is given. If
    interrupted (Ctrl-C) the workers are terminated at once and ``study.csv`` is not written."""
    n = workers or os.cpu_count() or 1
    n = max(1, min(n, len(spec.cells)))
    out = str(out_dir) if out_dir is not None else None
    if out is not None:
        Path(out).mkdir(parents=True, exist_ok=True)
    multi = len(spec.variants) > 1
    done: dict[int, CellResult] = {}
    ctx = multiprocessing.get_context("spawn")
    # Leaving the `with` block (normally or by an exception) terminates the workers.
    with ctx.Pool(n, initializer=_ignore_sigint) as pool:
        jobs = [(i, c, out, multi) for i, c in enumerate(spec.cells)]
        for i, result in pool.imap_unordered(_run_indexed, jobs):
            done[i] = result
            if on_done is not None:
                on_done(result, len(done), len(spec.cells))
    ordered = [done[i] for i in range(len(spec.cells))]
    if out is not None:
        write_csv(ordered, Path(out) / "study.csv")
    return ordered


def to_frame(cells: Sequence[CellResult]) -> pd.DataFrame:
    rows = []
    for c in cells:
        row: dict[str, Any] = {"topology": c.topology, "workload": c.workload, "ranks": c.ranks}
        for m in COLUMNS:
            row[m.name] = c.row[m.name] if c.row is not None else None
        row["error"] = "" if c.error is None else f"{c.error[0]}: {c.error[1]}"
        rows.append(row)
    return pd.DataFrame(rows)


def write_csv(cells: Sequence[CellResult], path: Path) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        to_frame(cells).to_csv(tmp, index=False, lineterminator="\n")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def format_table(cells: Sequence[CellResult]) -> str:
    metrics = {m.name: m for m in COLUMNS}
    headers = ["topology", "workload", "ranks", *TABLE_COLUMNS]
    right = [False, False, True, *([True] * len(TABLE_COLUMNS))]
    rows: list[list[str]] = []
    for c in cells:
        cells_txt = [c.topology, c.workload, str(c.ranks)]
        if c.row is None:
            cells_txt += ["FAILED", *([""] * (len(TABLE_COLUMNS) - 1))]
        else:
            cells_txt += [metrics[k].fmt(c.row[k]) for k in TABLE_COLUMNS]
        rows.append(cells_txt)
    return _format.table(headers, rows, right)
