"""Cluster job-log analysis for DIMM hotplug (research.md section 5).

From a job log in the Standard Workload Format (SWF: ``;`` header comments, then 18
whitespace-separated numbers per job, negative for unknown), how much DIMM standby energy the
bandwidth-preserving policy (only the first DIMM of each channel on while the memory in use fits
in them) and the ideal policy (only as many DIMMs as the memory in use needs) would have saved
against every DIMM always on, over the log's whole node-time, idle nodes included.

A log names neither a job's nodes nor its memory over time, so the analysis works on node-time:
a job of ``n`` nodes running ``t`` seconds adds ``n x t`` node-seconds at its per-node memory (its
used memory, field 7, or its requested memory, field 10, when used is unknown; KB per processor,
taken as KiB), and the machine's remaining node-time is idle at ``idle_node_gib``. The paper's
policy turns the 2nd DIMMs on and off within a job at memory thresholds; from a log only a job's
peak memory is known, so it decides for the whole job. ``docs/cli.md`` gives every definition.

The log is read line by line (plain or gzip); per job only its start, end, node count, node-time
and memory are kept: for the sweep that finds overcommitted node-time (a log whose jobs use more
nodes at once than the machine has), and for the simulator's DIMM rule
(``tracewatt_power::dimm::DimmLayout::on``), applied to all the jobs at once.
"""

from __future__ import annotations

import dataclasses
import gzip
import math
import os
import re
import zlib
from array import array
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from tracewatt import _tracewatt
from tracewatt._dependencies import numpy as np
from tracewatt._dependencies import pandas as pd
from tracewatt.analysis.joblog_settings import (
    JOBLOG_OPTIONS,
    MAX_MEMORY_KIB,
    MAX_PROCESSORS,
    MAX_SECONDS,
    SETTING_RANGES,
    JoblogError,
    JoblogSettings,
    check_setting,
    resolve_settings,
)

__all__ = [
    "JOBLOG_OPTIONS",
    "MAX_MEMORY_KIB",
    "MAX_PROCESSORS",
    "MAX_SECONDS",
    "POLICIES",
    "SETTING_RANGES",
    "SKIP_REASONS",
    "JoblogError",
    "JoblogResult",
    "JoblogSettings",
    "analyze",
    "analyze_joblog",
    "resolve_settings",
]

POLICIES = ("always_on", "bandwidth_preserving", "ideal")

#: Why a job line is left out of the analysis (each counted in ``jobs_skipped``).
SKIP_REASONS = ("run_time", "processors", "start_time", "memory")

SWF_FIELDS = 18
KIB_PER_GIB = 1024 * 1024


# The SWF fields read (1-based, as the format numbers them): name, largest value, its text.
_FIELDS: dict[int, tuple[str, float, str]] = {
    2: ("submit time", MAX_SECONDS, f"{MAX_SECONDS:,} s"),
    3: ("wait time", MAX_SECONDS, f"{MAX_SECONDS:,} s"),
    4: ("run time", MAX_SECONDS, f"{MAX_SECONDS:,} s"),
    5: ("allocated processors", MAX_PROCESSORS, f"{MAX_PROCESSORS:,}"),
    7: ("used memory", MAX_MEMORY_KIB, "2^40 KB (1 PiB) per processor"),
    8: ("requested processors", MAX_PROCESSORS, f"{MAX_PROCESSORS:,}"),
    10: ("requested memory", MAX_MEMORY_KIB, "2^40 KB (1 PiB) per processor"),
}

_HEADER = re.compile(r";\s*(MaxNodes|MaxProcs)\s*:\s*(\S*)")


# --------------------------------------------------------------------------- the node's DIMMs


@dataclass(frozen=True)
class _DimmsOn:
    """Per memory in use on a node: whether the first DIMMs hold it, the DIMMs on under
    bandwidth_preserving and ideal, and whether it is more than the node's DIMMs hold."""

    fits_first: np.ndarray
    bandwidth_preserving: np.ndarray
    ideal: np.ndarray
    over: np.ndarray


def _dimms_on(s: JoblogSettings, gib: np.ndarray) -> _DimmsOn:
    """The simulator's DIMM rule for each memory in ``gib`` (GiB), in one call."""
    raw = _tracewatt.dimms_on(
        s.channels, s.dimms_per_channel, s.dimm_gib, np.ascontiguousarray(gib, float).tobytes()
    )
    return _DimmsOn(
        fits_first=np.frombuffer(raw["fits_first"], dtype=np.bool_),
        bandwidth_preserving=np.frombuffer(raw["bandwidth_preserving"], dtype=np.uint32),
        ideal=np.frombuffer(raw["ideal"], dtype=np.uint32),
        over=np.frombuffer(raw["over"], dtype=np.bool_),
    )


def _in_order(values: np.ndarray) -> float:
    """The sum of ``values`` added one after the other in the log's order, as the busy
    node-time is (numpy's own sum groups them otherwise and may differ in the last digit)."""
    return float(np.cumsum(values)[-1]) if len(values) else 0.0


# --------------------------------------------------------------------------- reading the log


@dataclass(frozen=True)
class _Machine:
    nodes: int
    nodes_source: str
    cores_per_node: int
    cores_source: str


def _header_int(path: str, header: Mapping[str, tuple[str, int]], key: str) -> int | None:
    if key not in header:
        return None
    raw, line = header[key]
    # isascii: isdigit alone takes e.g. a latin-1 superscript two, which int() refuses.
    if not (raw.isascii() and raw.isdigit()) or not 1 <= int(raw) <= MAX_PROCESSORS:
        raise JoblogError(
            f"{path}:{line}: header {key}: expected an integer from 1 to {MAX_PROCESSORS:,}, "
            f"got {raw!r}"
        )
    return int(raw)


def _machine(path: str, s: JoblogSettings, header: Mapping[str, tuple[str, int]]) -> _Machine:
    """Cores per node and node count: the settings', else the header's."""
    max_nodes = _header_int(path, header, "MaxNodes")
    max_procs = _header_int(path, header, "MaxProcs")
    if s.cores_per_node is not None:
        cores, cores_source = s.cores_per_node, "given"
    elif max_nodes is not None and max_procs is not None:
        if max_procs % max_nodes:
            raise JoblogError(
                f"{path}: header MaxProcs {max_procs} is not a multiple of MaxNodes {max_nodes}: "
                "give the cores per node (--cores-per-node)"
            )
        cores, cores_source = max_procs // max_nodes, "header MaxProcs / MaxNodes"
    else:
        raise JoblogError(
            f"{path}: the cores per node (--cores-per-node) are required: the header does not "
            "give both MaxNodes and MaxProcs to derive them from"
        )
    if s.nodes is not None:
        return _Machine(s.nodes, "given", cores, cores_source)
    if max_nodes is not None:
        return _Machine(max_nodes, "header MaxNodes", cores, cores_source)
    if max_procs is not None:
        return _Machine(
            -(-max_procs // cores), "header MaxProcs / cores per node", cores, cores_source
        )
    raise JoblogError(
        f"{path}: the machine's node count is unknown: the header gives neither MaxNodes nor "
        "MaxProcs; give it (--nodes)"
    )


def _bad_line(path: str, lineno: int, fields: list[str]) -> JoblogError:
    if len(fields) != SWF_FIELDS:
        return JoblogError(
            f"{path}:{lineno}: expected {SWF_FIELDS} whitespace-separated fields (SWF), "
            f"got {len(fields)}"
        )
    for number, (name, limit, limit_text) in _FIELDS.items():
        text = fields[number - 1]
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            return JoblogError(
                f"{path}:{lineno}: field {number} ({name}): expected a number, got {text!r}"
            )
        if value > limit:
            return JoblogError(
                f"{path}:{lineno}: field {number} ({name}): expected at most {limit_text} "
                f"(negative: unknown), got {text!r}"
            )
    raise AssertionError("unreachable: a good line reported as bad")  # pragma: no cover


@dataclass
class _Totals:
    """What one pass over the log accumulates."""

    machine: _Machine | None = None
    jobs: int = 0
    with_memory: int = 0
    from_request: int = 0
    assumed: int = 0
    busy_node_s: float = 0.0
    skipped_node_s: float = 0.0


@dataclass
class _Jobs:
    """Each analysed job's start and end (for the span and the overcommitment sweep), nodes,
    node-time and memory per node."""

    starts: array[float] = dataclasses.field(default_factory=lambda: array("d"))
    ends: array[float] = dataclasses.field(default_factory=lambda: array("d"))
    counts: array[int] = dataclasses.field(default_factory=lambda: array("q"))
    node_s: array[float] = dataclasses.field(default_factory=lambda: array("d"))
    mem_kib: array[float] = dataclasses.field(default_factory=lambda: array("d"))


def _scan(
    path: str, lines: Iterable[str], s: JoblogSettings
) -> tuple[_Totals, dict[str, int], _Jobs]:
    """One pass over the log: the counts and each analysed job."""
    t = _Totals()
    skipped = dict.fromkeys(SKIP_REASONS, 0)
    jobs = _Jobs()
    starts, ends, counts = jobs.starts, jobs.ends, jobs.counts
    node_ss, mems = jobs.node_s, jobs.mem_kib
    header: dict[str, tuple[str, int]] = {}
    assume_kib = None if s.assume_gib is None else s.assume_gib * KIB_PER_GIB
    cores = 0
    # Locals, as floats: this loop runs once per job of logs of millions.
    ninf, max_s = -math.inf, float(MAX_SECONDS)
    max_procs, max_kib = float(MAX_PROCESSORS), float(MAX_MEMORY_KIB)
    for lineno, line in enumerate(lines, 1):
        fields = line.split()
        if not fields:
            continue
        if fields[0][0] == ";":
            # The machine is fixed at the first job: a header key after it changes nothing.
            m = _HEADER.match(line.lstrip())
            if m:
                header[m.group(1)] = (m.group(2), lineno)
            continue
        if t.machine is None:
            t.machine = _machine(path, s, header)
            cores = t.machine.cores_per_node
        if len(fields) != SWF_FIELDS:
            raise _bad_line(path, lineno, fields)
        try:
            submit = float(fields[1])
            wait = float(fields[2])
            run = float(fields[3])
            procs = float(fields[4])
            used = float(fields[6])
            req_procs = float(fields[7])
            req_mem = float(fields[9])
        except ValueError:
            raise _bad_line(path, lineno, fields) from None
        # NaN fails every comparison; negative values (unknown) have no bound but -inf.
        if not (
            ninf < submit <= max_s
            and ninf < wait <= max_s
            and ninf < run <= max_s
            and ninf < procs <= max_procs
            and ninf < req_procs <= max_procs
            and ninf < used <= max_kib
            and ninf < req_mem <= max_kib
        ):
            raise _bad_line(path, lineno, fields)
        t.jobs += 1
        if used >= 0.0 or req_mem >= 0.0:
            t.with_memory += 1
        if run <= 0.0:
            skipped["run_time"] += 1
            continue
        if procs == -1.0:
            procs = req_procs
        if procs <= 0.0:
            skipped["processors"] += 1
            continue
        n = math.ceil(procs / cores)
        node_s = n * run
        if submit < 0.0 or wait < 0.0:
            skipped["start_time"] += 1
            t.skipped_node_s += node_s
            continue
        if used >= 0.0:
            mem_kib = used * procs / n
        elif req_mem >= 0.0:
            mem_kib = req_mem * procs / n
            t.from_request += 1
        elif assume_kib is not None:
            mem_kib = assume_kib
            t.assumed += 1
        else:
            skipped["memory"] += 1
            t.skipped_node_s += node_s
            continue
        t.busy_node_s += node_s
        start = submit + wait
        starts.append(start)
        ends.append(start + run)
        counts.append(n)
        node_ss.append(node_s)
        mems.append(mem_kib)
    return t, skipped, jobs


def _overcommitted_node_s(
    nodes: int, starts: array[float], ends: array[float], counts: array[int]
) -> float:
    """Node-time during which the jobs running at once need more than ``nodes`` nodes:
    the integral of max(0, busy nodes - nodes) over time."""
    t = np.concatenate([np.frombuffer(starts), np.frombuffer(ends)])
    # Events at equal times need no order among them: what is busy between them lasts 0 s.
    order = np.argsort(t, kind="stable")
    t = t[order]
    c = np.frombuffer(counts, dtype=np.int64)
    excess = np.concatenate([c, -c])[order]
    del order
    # In place: a million jobs' events take 16 MB per array.
    np.cumsum(excess, out=excess)
    np.subtract(excess, nodes, out=excess)
    np.maximum(excess, 0, out=excess)
    return float(np.dot(excess[:-1], np.diff(t)))


def _open_text(path: Path) -> TextIO:
    """The log as text, gunzipped if it is gzip (by its magic number, not its name)."""
    with path.open("rb") as f:
        magic = f.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rt", encoding="latin-1")
    # latin-1 decodes any byte: header comments in other encodings must not stop the analysis.
    return path.open(encoding="latin-1")


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class JoblogResult:
    """The analysis of one log (see ``docs/cli.md`` for every quantity)."""

    log: str
    settings: JoblogSettings
    nodes: int
    nodes_source: str
    cores_per_node: int
    cores_source: str
    span_s: float
    jobs: int
    jobs_analysed: int
    jobs_skipped: dict[str, int]
    jobs_memory_from_request: int
    jobs_memory_assumed: int
    jobs_memory_over_node: int
    busy_node_s: float
    idle_node_s: float
    overcommitted_node_s: float
    skipped_node_s: float
    share_fits_first_dimms: float
    busy_share_fits_first_dimms: float
    energy_j: dict[str, float]

    def saving_j(self, policy: str) -> float:
        return self.energy_j["always_on"] - self.energy_j[policy]

    @property
    def saving_ratio(self) -> float | None:
        """bandwidth_preserving's saving / ideal's (None when ideal saves nothing)."""
        ideal = self.saving_j("ideal")
        return self.saving_j("bandwidth_preserving") / ideal if ideal > 0 else None

    def to_dict(self) -> dict[str, Any]:
        """The JSON summary (``analyze joblog --json``)."""
        out: dict[str, Any] = {
            "log": self.log,
            "settings": dataclasses.asdict(self.settings),
            "nodes": self.nodes,
            "nodes_source": self.nodes_source,
            "cores_per_node": self.cores_per_node,
            "cores_per_node_source": self.cores_source,
            "span_s": self.span_s,
            "jobs": self.jobs,
            "jobs_analysed": self.jobs_analysed,
            "jobs_skipped": dict(self.jobs_skipped),
            "jobs_memory_from_request": self.jobs_memory_from_request,
            "jobs_memory_assumed": self.jobs_memory_assumed,
            "jobs_memory_over_node": self.jobs_memory_over_node,
            "busy_node_s": self.busy_node_s,
            "idle_node_s": self.idle_node_s,
            "overcommitted_node_s": self.overcommitted_node_s,
            "skipped_node_s": self.skipped_node_s,
            "share_fits_first_dimms": self.share_fits_first_dimms,
            "busy_share_fits_first_dimms": self.busy_share_fits_first_dimms,
            "saving_ratio": self.saving_ratio,
        }
        for p in POLICIES:
            out[p] = {
                "energy_j": self.energy_j[p],
                "saving_j": self.saving_j(p),
                "saving_pct": 100.0 * self.saving_j(p) / self.energy_j["always_on"],
            }
        return out

    def frame(self) -> pd.DataFrame:
        """One row per policy: ``policy``, ``energy_j``, ``saving_j``, ``saving_pct``; the
        rest of :meth:`to_dict` in ``attrs``."""
        d = self.to_dict()
        df = pd.DataFrame([{"policy": p, **d[p]} for p in POLICIES])
        df.attrs.update({k: v for k, v in d.items() if k not in POLICIES})
        return df


def analyze(path: str | os.PathLike[str], settings: JoblogSettings) -> JoblogResult:
    """Analyses the SWF log at ``path`` (plain text or gzip) with ``settings``."""
    # Settings built directly, not by resolve_settings, are checked here.
    for option in JOBLOG_OPTIONS:
        value = getattr(settings, option)
        if value is not None:
            check_setting(option, value, f"settings.{option}")
    p = Path(path)
    name = str(path)
    if not p.is_file():
        raise JoblogError(f"{name}: no such file" if not p.exists() else f"{name}: not a file")
    try:
        with _open_text(p) as f:
            totals, skipped, jobs = _scan(name, f, settings)
    except (OSError, EOFError, zlib.error) as e:
        # A truncated or corrupt gzip stream, or a read error part way.
        raise JoblogError(f"{name}: cannot read the log: {e}") from None
    if totals.machine is None:
        raise JoblogError(f"{name}: no job lines (only header comments or nothing)")
    if totals.with_memory == 0 and skipped["memory"] > 0:
        raise JoblogError(
            f"{name}: no job has used memory (SWF field 7) or requested memory (field 10): "
            "the log has no memory data; give a memory per node to assume for every job "
            "(--assume-gib)"
        )
    if not jobs.starts:
        reasons = ", ".join(f"{k} {v:,}" for k, v in skipped.items() if v)
        raise JoblogError(f"{name}: none of its {totals.jobs:,} jobs can be analysed ({reasons})")
    m = totals.machine
    span_s = max(jobs.ends) - min(jobs.starts)
    over_s = _overcommitted_node_s(m.nodes, jobs.starts, jobs.ends, jobs.counts)
    idle_s = max(0.0, m.nodes * span_s - totals.busy_node_s + over_s)
    node_s = totals.busy_node_s + idle_s
    job_s = np.frombuffer(jobs.node_s)
    on = _dimms_on(settings, np.frombuffer(jobs.mem_kib) / KIB_PER_GIB)
    fits_node_s = _in_order(job_s[on.fits_first])
    idle = _dimms_on(settings, np.array([settings.idle_node_gib]))
    total_dimms = settings.channels * settings.dimms_per_channel
    dimm_s = {
        "always_on": total_dimms * node_s,
        "bandwidth_preserving": _in_order(on.bandwidth_preserving * job_s)
        + int(idle.bandwidth_preserving[0]) * idle_s,
        "ideal": _in_order(on.ideal * job_s) + int(idle.ideal[0]) * idle_s,
    }
    return JoblogResult(
        log=name,
        settings=settings,
        nodes=m.nodes,
        nodes_source=m.nodes_source,
        cores_per_node=m.cores_per_node,
        cores_source=m.cores_source,
        span_s=span_s,
        jobs=totals.jobs,
        jobs_analysed=len(jobs.starts),
        jobs_skipped=skipped,
        jobs_memory_from_request=totals.from_request,
        jobs_memory_assumed=totals.assumed,
        jobs_memory_over_node=int(on.over.sum()),
        busy_node_s=totals.busy_node_s,
        idle_node_s=idle_s,
        overcommitted_node_s=over_s,
        skipped_node_s=totals.skipped_node_s,
        share_fits_first_dimms=(fits_node_s + (idle_s if idle.fits_first[0] else 0.0)) / node_s,
        busy_share_fits_first_dimms=fits_node_s / totals.busy_node_s,
        energy_j={k: v * settings.dimm_standby_w for k, v in dimm_s.items()},
    )


def analyze_joblog(
    path: str | os.PathLike[str],
    *,
    config: str | os.PathLike[str] | None = None,
    channels: int | None = None,
    dimms_per_channel: int | None = None,
    dimm_gib: float | None = None,
    dimm_standby_w: float | None = None,
    idle_node_gib: float | None = None,
    cores_per_node: int | None = None,
    nodes: int | None = None,
    assume_gib: float | None = None,
) -> pd.DataFrame:
    """DIMM standby energy of ``always_on``, ``bandwidth_preserving`` and ``ideal`` over an SWF
    job log: one row per policy (``policy``, ``energy_j``, ``saving_j``, ``saving_pct``), with
    ``share_fits_first_dimms``, ``saving_ratio``, the job counts and node-times in ``attrs``.

    Settings not given come from the ``[joblog]`` table of the TOML file ``config``, else their
    defaults (the paper's node: 8 channels x 2 DIMMs of 8 GiB, 0.9 W each, idle nodes 2 GiB).
    Raises :class:`JoblogError` for an unusable log or setting.

    ::

        df = tracewatt.analyze_joblog("HPC2N-2002-2.2-cln.swf.gz", cores_per_node=2, nodes=120)
        df.attrs["share_fits_first_dimms"], df.attrs["saving_ratio"]
    """
    given = {
        "channels": channels,
        "dimms_per_channel": dimms_per_channel,
        "dimm_gib": dimm_gib,
        "dimm_standby_w": dimm_standby_w,
        "idle_node_gib": idle_node_gib,
        "cores_per_node": cores_per_node,
        "nodes": nodes,
        "assume_gib": assume_gib,
    }
    return analyze(path, resolve_settings(config, given)).frame()
