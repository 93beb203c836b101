"""Running a sweep, resumed where it stopped: each run goes to ``DIR/runs/<hash>/`` (the hash of
its resolved configuration and the tracewatt version), with ``done.json`` written last, so a
directory without it is run again."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracewatt._dependencies import pandas as pd
from tracewatt._tracewatt import __version__
from tracewatt.errors import ConfigError, ResultsError
from tracewatt.results import read_json, read_parquet
from tracewatt.sweep.cluster import connect, run_dask
from tracewatt.sweep.dataset import dataset, write_dataset
from tracewatt.sweep.local import run_pool
from tracewatt.sweep.lock import locked
from tracewatt.sweep.options import check_job_options
from tracewatt.sweep.spec import Run, SweepSpec
from tracewatt.sweep.worker import write_json


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
    #: The states of the sweep's worker jobs on a batch system, e.g. ``2 worker jobs pending:
    #: Resources`` (a callback comes as they change, with ``last`` unchanged).
    jobs: str = ""


ProgressCallback = Callable[[Progress], None]


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
    meta_path, data_path = out / "sweep.json", out / "sweep.parquet"
    if not meta_path.is_file() or not data_path.is_file():
        return None
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
    jobs: int | None = None,
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
    (dask-jobqueue: ``jobs`` worker jobs, with ``cluster_options`` over the spec's
    ``[cluster]`` table, keys of ``tracewatt.sweep.options.JOB_OPTIONS``; docs/cluster.md).
    Nothing is started when every run is finished. On Ctrl-C the workers are stopped, the
    dataset of the finished runs is written, and ``KeyboardInterrupt`` propagates. One sweep at
    a time uses ``out_dir``: another one there raises :class:`ConfigError` naming its process.
    """
    s = spec if isinstance(spec, SweepSpec) else SweepSpec.load(spec)
    out = Path(out_dir)
    runs = s.runs()
    why = other_sweep(out, runs)
    if why is not None and not replace:
        raise ConfigError(f"{why}; give another directory, or replace that sweep (--force)")
    # The worker jobs' options: the call's over the spec's [cluster] table.
    options = {**s.cluster, **(cluster_options or {})}
    if jobs is not None:
        options["jobs"] = jobs
    check_job_options(options, "cluster_options")
    out.mkdir(parents=True, exist_ok=True)
    with locked(out):
        if why is not None:
            # The other sweep's dataset goes first: never beside this sweep's sweep.json.
            (out / "sweep.parquet").unlink()
        return _run_locked(s, runs, out, workers, scheduler, cluster, options, progress)


def _run_locked(
    s: SweepSpec,
    runs: list[Run],
    out: Path,
    workers: int | None,
    scheduler: str | None,
    cluster: str | None,
    options: Mapping[str, Any],
    progress: ProgressCallback | None,
) -> pd.DataFrame:
    write_json(out / "sweep.json", s.description_json())
    # Runs of the same configuration (cells whose values cannot change the run, e.g. an
    # always-on baseline across idle timeouts) share one simulation, named by its first run.
    unique: dict[str, Run] = {}
    for r in runs:
        unique.setdefault(r.hash, r)
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
                write_json(out / unique[h].dir / "error.json", outcome)
        if progress:
            progress(state)

    def on_running(n: int) -> None:
        state.running = n

    def on_jobs(text: str) -> None:
        state.jobs = text
        if progress:
            progress(state)

    if progress:
        progress(state)
    for h, r in unique.items():
        if r.error:
            on_result(h, {"status": "failed", "error": r.error})
    try:
        if todo and (scheduler is not None or cluster is not None):
            c = connect(scheduler, cluster, options, out / "logs", on_jobs)
            try:
                run_dask(todo, out, c.client, on_result, on_running, c.watch)
            finally:
                c.close()
        elif todo:
            n = max(1, min(workers or os.cpu_count() or 1, len(todo)))
            run_pool(todo, out, n, on_result, on_running)
    finally:
        # Also when interrupted: the dataset of what finished.
        df = dataset(s, runs, out)
        write_dataset(df, out)
    return df
