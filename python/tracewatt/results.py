"""Results of a run: a JSON summary and column tables as pandas DataFrames.

On disk (``Results.write``) a run is a directory with ``summary.json`` and one Parquet file per
table. Files are written deterministically (same results, same bytes) and each one atomically
(temporary name, then rename); ``summary.json`` is written last, so a directory without it is
incomplete. Column names carry their units (``_s`` seconds, ``_bps`` bits per second, ``bytes``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracewatt._dependencies import pandas as pd
from tracewatt._dependencies import pyarrow as pa
from tracewatt._dependencies import pyarrow_parquet as pq
from tracewatt.errors import ResultsError

if TYPE_CHECKING:
    from tracewatt.report.plots import Plotter

__all__ = ["TABLES", "Results", "expect_shape", "read_json", "read_parquet", "summary_json"]

#: The tables of a run, in the order they are written.
TABLES: tuple[str, ...] = (
    "links",
    "idle_hist",
    "idle_thresholds",
    "ranks",
    "jobs",
    "switches",
    "timeline",
    "energy",
    "nics",
    "cores",
    "dimms",
    "messages",
    "message_wake_hops",
    "pair_idle_thresholds",
)

# Fixed Parquet writer settings: no timestamps are written by pyarrow, and with these fixed the
# bytes depend only on the data (and the pyarrow version, recorded in the file's `created_by`).
_PARQUET_OPTIONS: dict[str, Any] = {
    "compression": "zstd",
    "compression_level": 3,
    "write_statistics": True,
    "use_dictionary": True,
    "version": "2.6",
    "data_page_version": "1.0",
}


def summary_json(summary: Mapping[str, Any]) -> str:
    """The canonical text of ``summary.json`` (also what ``tracewatt run --json`` prints)."""
    return json.dumps(summary, indent=2, sort_keys=True) + "\n"


# ----------------------------------------------------------------------------- reading files

#: What a JSON value must be (:func:`expect_shape`): a type or a tuple of types; ``[shape]``,
#: an array of that shape; or a dict of keys and their shapes, where a key ending in ``?`` is
#: optional and ``*`` gives the shape of every other key.
Shape = Any

NUMBER = (int, float)

_JSON_KINDS: tuple[tuple[type, str], ...] = (
    (bool, "true or false"),
    (dict, "an object"),
    (list, "an array"),
    (str, "a string"),
    (int, "a number"),
    (float, "a number"),
    (type(None), "null"),
)

# The keys every reader of a run's summary uses (the report, analyze idle, compare).
_RUN_SUMMARY: Shape = {
    "makespan_s": NUMBER,
    "energy_j": {"total": NUMBER, "*": NUMBER},
    "avg_power_w": {"*": NUMBER},
    "config": {},
    "jobs": [{}],
}
# A compare output's summary (``tracewatt compare -o``): the policy's, with its baseline's.
_COMPARE_SUMMARY: Shape = {
    **_RUN_SUMMARY,
    "baseline": {
        "makespan_s": NUMBER,
        "energy_j": {"total": NUMBER, "*": NUMBER},
        "avg_power_w": {"*": NUMBER},
    },
    "saving_pct": NUMBER,
    "slowdown_pct": NUMBER,
}
_SUMMARY_WHAT = "a run's summary as tracewatt run -o or compare -o writes it"


def _json_kind(value: Any) -> str:
    return next((name for t, name in _JSON_KINDS if isinstance(value, t)), type(value).__name__)


def _kinds_text(kinds: tuple[type, ...]) -> str:
    names = [name for t, name in _JSON_KINDS if t in kinds]
    return " or ".join(dict.fromkeys(names))


def _shape_problem(value: Any, shape: Shape, where: str) -> str | None:
    """Why ``value`` (at ``where``, "" for the whole document) is not of ``shape``, or None."""
    named = f"`{where}`" if where else "the file"
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            return f"{named} is {_json_kind(value)}, not an object"
        for key, sub in shape.items():
            name = key.removesuffix("?")
            if key == "*" or (name not in value and key.endswith("?")):
                continue
            inner = f"{where}.{name}" if where else name
            if name not in value:
                return f"`{inner}` is missing"
            problem = _shape_problem(value[name], sub, inner)
            if problem is not None:
                return problem
        if "*" in shape:
            for k, v in value.items():
                if k not in shape and f"{k}?" not in shape:
                    problem = _shape_problem(v, shape["*"], f"{where}.{k}" if where else k)
                    if problem is not None:
                        return problem
        return None
    if isinstance(shape, list):
        if not isinstance(value, list):
            return f"{named} is {_json_kind(value)}, not an array"
        for i, v in enumerate(value):
            problem = _shape_problem(v, shape[0], f"{where}[{i}]")
            if problem is not None:
                return problem
        return None
    kinds = shape if isinstance(shape, tuple) else (shape,)
    # JSON's true and false are Python ints: only where a boolean is expected are they one.
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        return f"{named} is {_json_kind(value)}, not {_kinds_text(kinds)}"
    return None


def expect_shape(path: Path, value: Any, shape: Shape, what: str) -> None:
    """Raises :class:`ResultsError` naming ``path`` where ``value`` (its JSON) is not of
    ``shape``; ``what`` is what the file should hold."""
    problem = _shape_problem(value, shape, "")
    if problem is not None:
        raise ResultsError(f"{path}: expected {what}; {problem}")


def read_json(path: Path, what: str, shape: Shape | None = None) -> Any:
    """The JSON document in ``path``, of ``shape`` where one is given; raises
    :class:`ResultsError` naming the file and ``what`` it should hold."""
    try:
        value = json.loads(path.read_bytes())
    except OSError as e:
        raise ResultsError(f"{path}: cannot read it: {e.strerror or e}") from e
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ResultsError(f"{path}: not JSON ({e}); expected {what}") from e
    if shape is not None:
        expect_shape(path, value, shape, what)
    return value


def read_summary(path: Path) -> dict[str, Any]:
    """A run's (or a compare's) ``summary.json``; raises :class:`ResultsError` naming the file
    where it is not one."""
    summary = read_json(path, _SUMMARY_WHAT)
    is_compare = isinstance(summary, dict) and "baseline" in summary
    expect_shape(path, summary, _COMPARE_SUMMARY if is_compare else _RUN_SUMMARY, _SUMMARY_WHAT)
    return dict(summary)


def read_parquet(path: Path) -> pa.Table:
    """The Parquet table in ``path``; raises :class:`ResultsError` naming it where it is none."""
    try:
        return pq.read_table(path)
    except pa.ArrowInvalid as e:
        raise ResultsError(f"{path}: not a Parquet table ({e})") from e
    except (pa.ArrowException, OSError) as e:
        raise ResultsError(f"{path}: cannot read the Parquet table ({e})") from e


def _to_pandas(table: pa.Table) -> pd.DataFrame:
    df: pd.DataFrame = table.to_pandas()
    for name, typ in zip(table.column_names, table.schema.types, strict=True):
        if pa.types.is_string(typ) or pa.types.is_large_string(typ):
            # Strings as the default string dtype of the installed pandas, whichever way they came.
            df[name] = pd.Series(table.column(name).to_pylist(), dtype=str, index=df.index)
        elif pa.types.is_integer(typ) and table.column(name).null_count > 0:
            # Integers that may be missing (the node of a switch's component) stay integers.
            df[name] = pd.Series(table.column(name).to_pylist(), dtype="Int64", index=df.index)
    return df


#: Raw numeric columns from the extension: (kind, native-endian 8-byte values).
RawColumn = tuple[str, bytes]


def _arrow_array(values: Sequence[Any] | RawColumn, arrow: pa.DataType) -> pa.Array:
    if isinstance(values, tuple):
        kind, buf = values
        raw_type = {"u64": pa.uint64(), "f64": pa.float64()}[kind]
        arr = pa.Array.from_buffers(raw_type, len(buf) // 8, [None, pa.py_buffer(buf)])
        # A count beyond int64 raises.
        return arr.cast(arrow)
    return pa.array(list(values), type=arrow)


def _table_from_raw(raw: Mapping[str, Any]) -> pa.Table:
    """A table from the extension: ``{"schema": [(column, Arrow type name)], "columns":
    {column: values or RawColumn}}``; the types are the Rust table's, rows or none."""
    schema = pa.schema([(name, pa.type_for_alias(arrow)) for name, arrow in raw["schema"]])
    columns = raw["columns"]
    arrays = [_arrow_array(columns[f.name], f.type) for f in schema]
    return pa.Table.from_arrays(arrays, schema=schema)


def _frame_to_arrow(df: pd.DataFrame) -> pa.Table:
    table = pa.Table.from_pandas(df, preserve_index=False)
    # No pandas metadata: the files stay plain Parquet and their bytes independent of pandas.
    return table.replace_schema_metadata(None)


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _atomic_write_parquet(path: Path, table: pa.Table) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        pq.write_table(table, tmp, **_PARQUET_OPTIONS)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


class Results:
    """What one simulation produced.

    ``summary`` is the JSON summary as a dict (``makespan_s``, ``seed``, ``jobs``, ``messages``,
    ``network``, ``machine``, ``config`` with every default filled in, ...). The tables are
    DataFrames: :attr:`links`, :attr:`idle_hist`, :attr:`idle_thresholds`, :attr:`ranks`,
    :attr:`jobs` (and any further table the core adds, in :attr:`tables`).
    """

    __slots__ = ("summary", "tables")

    summary: dict[str, Any]
    tables: dict[str, pd.DataFrame]

    def __init__(self, summary: dict[str, Any], tables: Mapping[str, pd.DataFrame]) -> None:
        self.summary = summary
        self.tables = dict(tables)

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> Results:
        """From the extension's ``simulate`` output: ``{"summary": str, "tables": {...}}``."""
        summary = json.loads(raw["summary"])
        tables = {name: _to_pandas(_table_from_raw(table)) for name, table in raw["tables"].items()}
        return cls(summary, tables)

    # ---------------------------------------------------------------- tables

    def _table(self, name: str) -> pd.DataFrame:
        try:
            return self.tables[name]
        except KeyError:
            raise KeyError(f"these results have no `{name}` table") from None

    @property
    def links(self) -> pd.DataFrame:
        """Per link direction: ``link_id, src, dst, kind, bandwidth_bps, bytes, packets, busy_s,
        idle_count, idle_s`` and the power state columns (``lpi_s``, ``wakes``, ``energy_j``,
        ...; see docs/cli.md)."""
        return self._table("links")

    @property
    def idle_hist(self) -> pd.DataFrame:
        """Idle-interval histogram, long form, non-empty bins: ``link_id, bin_lo_s, bin_hi_s,
        count, total_s``."""
        return self._table("idle_hist")

    @property
    def idle_thresholds(self) -> pd.DataFrame:
        """Exact idle intervals longer than each threshold: ``link_id, threshold_s, count,
        total_s``."""
        return self._table("idle_thresholds")

    @property
    def ranks(self) -> pd.DataFrame:
        """Per rank: ``job, rank, node, finish_s, compute_s, wait_s, sends, bytes_sent``."""
        return self._table("ranks")

    @property
    def jobs(self) -> pd.DataFrame:
        """Per job: ``job, ranks, nodes, start_s, completion_s, runtime_s``."""
        return self._table("jobs")

    @property
    def switches(self) -> pd.DataFrame:
        """Per switch: ``switch_id, ports`` and its energy (``backplane_j, ports_j``,
        ``avg_power_w``)."""
        return self._table("switches")

    @property
    def energy(self) -> pd.DataFrame:
        """The energy account: one row per component instance (``component`` = ``link_port``,
        ``switch_backplane``, ``nic``), its ``id``, ``node`` or ``switch`` (missing where it has
        none), ``energy_j``, ``avg_power_w`` and the time in each state (``*_s``, NaN where the
        kind has no such state)."""
        return self._table("energy")

    @property
    def nics(self) -> pd.DataFrame:
        """Per node, with ``[power.nic] coalescing``: frames, interrupts, bytes, the delay
        coalescing added to deliveries and the NIC's energy above idle (docs/cli.md)."""
        return self._table("nics")

    @property
    def cores(self) -> pd.DataFrame:
        """Per rank's core: ``job, rank, node``, the time computing, in MPI, spinning, blocked,
        in mwait, entering or leaving low power and idle, its low-power waits, the delay its
        wake-ups added and its energy (docs/cli.md)."""
        return self._table("cores")

    @property
    def dimms(self) -> pd.DataFrame:
        """Per node: ``node, dimms``, DIMM-seconds on and off, ``transitions``, the time with
        fewer channels than the node has, channel-seconds lost and the DIMMs' energy."""
        return self._table("dimms")

    @property
    def messages(self) -> pd.DataFrame:
        """With ``[output] messages = true``: one row per message, ``job, src_rank, dst_rank,
        bytes, start_s, end_s, latency_s`` (docs/cli.md)."""
        return self._table("messages")

    @property
    def timeline(self) -> pd.DataFrame:
        """Power over time, one row per interval (``t_start_s, t_end_s`` and ``*_w`` columns)."""
        return self._table("timeline")

    @property
    def makespan_s(self) -> float:
        return float(self.summary["makespan_s"])

    @property
    def config(self) -> dict[str, Any]:
        """The resolved configuration of the run (every default filled in)."""
        cfg: dict[str, Any] = self.summary["config"]
        return cfg

    @property
    def plot(self) -> Plotter:
        """The run's figures as matplotlib figures: ``energy_breakdown()``,
        ``power_timeline()``, ``idle_cdf()``, ``lpi_heatmap()`` (see
        :mod:`tracewatt.report.plots`)."""
        # Imported on use, as pandas imports its plotting: the figures build on the results and
        # import this module only for its types.
        from tracewatt.report.plots import Plotter

        return Plotter(self)

    # ---------------------------------------------------------------- files

    def write(self, directory: str | os.PathLike[str]) -> Path:
        """Writes ``summary.json`` and ``<table>.parquet`` files into ``directory`` (created if
        needed); returns its path. Same results give byte-identical files. A table file of
        :data:`TABLES` these results do not have is removed (another run's, which :meth:`read`
        would take for theirs); other files are left alone."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        (d / "summary.json").unlink(missing_ok=True)
        for name in TABLES:
            if name not in self.tables:
                (d / f"{name}.parquet").unlink(missing_ok=True)
        for name in self._ordered_names():
            _atomic_write_parquet(d / f"{name}.parquet", _frame_to_arrow(self.tables[name]))
        _atomic_write_bytes(d / "summary.json", summary_json(self.summary).encode("utf-8"))
        return d

    @classmethod
    def read(cls, directory: str | os.PathLike[str]) -> Results:
        """Reads a directory written by :meth:`write` (or ``tracewatt run -o``). Raises
        :class:`FileNotFoundError` where it has no ``summary.json``, and
        :class:`~tracewatt.errors.ResultsError` naming the file where one is not what tracewatt
        writes."""
        d = Path(directory)
        summary_path = d / "summary.json"
        if not summary_path.is_file():
            raise FileNotFoundError(
                f"{d}: no summary.json (not a results directory, or incomplete)"
            )
        summary = read_summary(summary_path)
        tables: dict[str, pd.DataFrame] = {}
        names = [n for n in TABLES if (d / f"{n}.parquet").is_file()]
        extra = [p.stem for p in d.glob("*.parquet") if not p.name.startswith(".")]
        names += sorted(s for s in extra if s not in TABLES)
        for name in names:
            tables[name] = _to_pandas(read_parquet(d / f"{name}.parquet"))
        return cls(summary, tables)

    def _ordered_names(self) -> list[str]:
        known = [n for n in TABLES if n in self.tables]
        return known + sorted(n for n in self.tables if n not in TABLES)

    # ---------------------------------------------------------------- protocol

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Results):
            return NotImplemented
        if self.summary != other.summary or set(self.tables) != set(other.tables):
            return False
        return all(self.tables[k].equals(other.tables[k]) for k in self.tables)

    __hash__ = None  # type: ignore[assignment]

    def __getstate__(self) -> dict[str, Any]:
        return {"summary": self.summary, "tables": self.tables}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.summary = state["summary"]
        self.tables = state["tables"]

    def __repr__(self) -> str:
        jobs = len(self.summary.get("jobs", []))
        sizes = ", ".join(f"{k}={len(v)}" for k, v in self.tables.items())
        return f"<Results makespan_s={self.summary.get('makespan_s')} jobs={jobs} {sizes}>"
