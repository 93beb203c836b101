"""The Dask executor of sweeps: a scheduler given by address, a local Dask cluster, or worker
jobs on a batch system (dask-jobqueue on SLURM or PBS; docs/cluster.md).

Worker jobs are watched while the sweep runs: a job the batch system refuses stops the sweep
with the submit command's message; the jobs' states (``squeue`` / ``qstat``) go to the progress
display; a job that ends (its time limit, ``scancel``) is replaced by a new one while runs are
left, and the scheduler gives the runs its workers held to the others; with no worker connected
for ``worker_timeout`` seconds the sweep stops.
"""

from __future__ import annotations

import functools
import json
import math
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracewatt._dependencies import dask_jobqueue, distributed
from tracewatt.errors import ClusterError, ConfigError
from tracewatt.sweep.options import JOB_OPTIONS, check_job_options
from tracewatt.sweep.spec import Run
from tracewatt.sweep.worker import OnResult, OnRunning, execute

#: Seconds between two looks at the worker jobs.
POLL_S = 2.0

#: The batch systems of ``--cluster``.
KINDS = ("slurm", "pbs")


@functools.cache
def _cluster_class(kind: str) -> type:
    """dask-jobqueue's cluster of ``kind`` whose jobs keep the submit command's refusal
    (``refused``) instead of raising it in a task nobody awaits, and that lists the workers
    that have connected (``connected``)."""
    from distributed.deploy.spec import ProcessInterface

    base_cluster = {"slurm": dask_jobqueue.SLURMCluster, "pbs": dask_jobqueue.PBSCluster}[kind]

    class Job(base_cluster.job_cls):  # type: ignore[name-defined,misc]
        refused = ""

        async def start(self) -> None:
            try:
                await super().start()
            except RuntimeError as e:
                # dask-jobqueue's message of a failed command ends with its stderr.
                self.refused = str(e).rpartition("stderr:\n")[2].strip() or str(e)
                # Taken as started, with no job to cancel: the sweep's watch stops the sweep.
                await ProcessInterface.start(self)

        async def close(self) -> None:
            if not self.refused:
                await super().close()  # cancels the job
            # dask-jobqueue leaves the status as it was, which closing the cluster checks.
            await ProcessInterface.close(self)

    class Cluster(base_cluster):  # type: ignore[valid-type,misc]
        job_cls = Job

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            #: The name of every worker that has connected (appended to in the event loop).
            self.connected: list[str] = []
            super().__init__(*args, **kwargs)

        def _update_worker_status(self, op: str, msg: Any) -> None:
            if op == "add":
                self.connected += [str(w.get("name")) for w in msg.get("workers", {}).values()]
            super()._update_worker_status(op, msg)

    # Its workers are named after it (SLURMCluster-0-1).
    Cluster.__name__ = Cluster.__qualname__ = base_cluster.__name__
    return Cluster


def jobqueue_cluster(kind: str, options: Mapping[str, Any]) -> Any:
    """A dask-jobqueue cluster (``kind`` "slurm" or "pbs") whose jobs each run ``cores``
    single-threaded worker processes; ``options`` as :data:`JOB_OPTIONS` (``jobs`` and
    ``worker_timeout`` are the sweep's, not the cluster's)."""
    given = check_job_options(options, "cluster_options")
    for k in ("cores", "memory"):
        if k not in given:
            raise ConfigError(
                f"--cluster {kind}: {k} (per job) is missing; give --{k}, or {k} in the spec's "
                "[cluster] table"
            )
    kwargs: dict[str, Any] = {}
    for k, v in given.items():
        arg = JOB_OPTIONS[k][1]
        if arg is not None:
            kwargs[arg] = v
    return _cluster_class(kind)(processes=given["cores"], **kwargs)


#: The states of a live job (pending or running) by batch system, and those that are pending.
_LIVE = {
    "slurm": {"PENDING", "RUNNING", "CONFIGURING", "SUSPENDED", "REQUEUED", "RESIZING"},
    "pbs": {"Q", "H", "W", "T", "R", "S", "B"},
}
_PENDING = {"slurm": {"PENDING", "CONFIGURING", "REQUEUED"}, "pbs": {"Q", "H", "W", "T"}}


def job_states(kind: str, ids: list[str]) -> dict[str, tuple[str, str]] | None:
    """Job id -> (state, reason) of ``ids`` as the batch system reports them (those that ended
    too, while it remembers them); None where it could not be asked (the jobs are then taken
    as they were)."""
    if kind == "slurm":
        cmd = ["squeue", "-h", "-t", "all", "-o", "%i|%T|%r", "-j", ",".join(ids)]
    else:
        cmd = ["qstat", "-x", "-f", "-F", "json", *ids]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if kind == "slurm":
        if p.returncode != 0:
            # Jobs that ended long ago are forgotten, and asking for them only is an error.
            return {} if "Invalid job id" in p.stderr else None
        rows = [line.split("|", 2) for line in p.stdout.splitlines() if line.count("|") == 2]
        states = {i: (s, r) for i, s, r in rows}
    else:
        try:
            jobs = json.loads(p.stdout).get("Jobs", {})
        except ValueError:
            return None
        states = {i: (j.get("job_state", ""), j.get("comment", "")) for i, j in jobs.items()}
    return states


def describe_jobs(kind: str, states: Mapping[str, tuple[str, str]]) -> str:
    """``2 worker jobs pending: Resources``, ``3 worker jobs: 1 running, 2 pending:
    Priority``: the live jobs' states for the progress display (pending with their reasons)."""
    if not states:
        return ""
    counts = Counter(
        "pending" if s in _PENDING[kind] else "running" if s in ("RUNNING", "R") else s.lower()
        for s, _ in states.values()
    )
    reasons = sorted({r for s, r in states.values() if s in _PENDING[kind] and r})
    parts = [f"{n} {state}" for state, n in sorted(counts.items(), key=lambda c: c[0] != "running")]
    n = len(states)
    text = f"{n} worker job{'s' if n > 1 else ''}"
    text += f" {parts[0].split(' ', 1)[1]}" if len(parts) == 1 else f": {', '.join(parts)}"
    return text + (f": {', '.join(reasons)}" if "pending" in counts and reasons else "")


@dataclass
class JobWatch:
    """Looks at the worker jobs of ``cluster`` (called every :data:`POLL_S` while runs are
    left); raises :class:`ClusterError` to stop the sweep."""

    cluster: Any
    client: Any
    kind: str
    jobs: int
    worker_timeout: float | None
    on_jobs: Callable[[str], None]
    logs: Path
    text: str = ""
    since: float = field(default_factory=time.monotonic)
    #: The jobs (by name) some worker of which has connected.
    connected: set[str] = field(default_factory=set)

    def __call__(self) -> None:
        submit = {"slurm": "sbatch", "pbs": "qsub"}[self.kind]
        jobs = dict(self.cluster.workers)
        refused = [j.refused for j in jobs.values() if getattr(j, "refused", "")]
        if refused:
            raise ClusterError(
                f"--cluster {self.kind}: {submit} refused the worker job: {refused[0]}"
            )
        # A job's workers are named after it: `name` alone, or `name-0`, `name-1`, ...
        seen = set(self.cluster.connected[:])
        self.connected |= {
            str(n) for n in jobs if str(n) in seen or any(s.startswith(f"{n}-") for s in seen)
        }
        ids = {name: j.job_id for name, j in jobs.items() if getattr(j, "job_id", None)}
        states = job_states(self.kind, list(ids.values())) if ids else {}
        if states is not None:
            live = {i: sr for i, sr in states.items() if sr[0] in _LIVE[self.kind]}
            ended = [name for name, i in ids.items() if i not in live]
            for name in ended:
                if str(name) not in self.connected:
                    # Its workers could not start (or it was cancelled while it pended): a new
                    # job would fare the same.
                    state = states.get(ids[name], ("ended", ""))[0]
                    raise ClusterError(
                        f"--cluster {self.kind}: worker job {ids[name]} ended ({state}) before "
                        f"any of its workers connected; its output is in {self.logs}"
                    )
            # A job that ended while runs are left is replaced (the scheduler has given the
            # runs of its workers to the others); scale() also restarts a job dask-jobqueue
            # dropped itself once its workers were gone.
            self.cluster.loop.add_callback(self._replace, ended)
            text = describe_jobs(self.kind, live)
            if text != self.text:
                self.text = text
                self.on_jobs(text)
        if self.client.scheduler_info().get("workers"):
            self.since = time.monotonic()
        elif self.worker_timeout is not None:
            waited = time.monotonic() - self.since
            if waited > self.worker_timeout:
                raise ClusterError(
                    f"--cluster {self.kind}: no worker connected for {waited:.0f} s "
                    f"(--worker-timeout {self.worker_timeout:g})"
                    + (f": {self.text}" if self.text else "")
                    + "; the finished runs are kept, and the same command resumes the sweep"
                )

    def _replace(self, ended: list[Any]) -> None:
        # In the cluster's event loop, which owns these tables.
        for name in ended:
            self.cluster.workers.pop(name, None)
            self.cluster.worker_spec.pop(name, None)
        self.cluster.scale(jobs=self.jobs)


def run_dask(
    todo: Mapping[str, Run],
    out: Path,
    client: Any,
    on_result: OnResult,
    on_running: OnRunning,
    watch: Callable[[], None] | None = None,
) -> None:
    """Runs ``todo`` on a Dask cluster, calling ``watch`` every :data:`POLL_S` while runs are
    left. The scheduler itself resubmits the run of a worker that died
    (``distributed.scheduler.allowed-failures`` times, then it fails with KilledWorker)."""
    futures = {
        client.submit(execute, r.config, str(out / r.dir), pure=False): h for h, r in todo.items()
    }
    left = len(futures)
    ac = distributed.as_completed(futures)
    watched, threads = -math.inf, 0
    try:
        while not ac.is_empty():
            if time.monotonic() - watched >= POLL_S:
                if watch is not None:
                    watch()
                watched = time.monotonic()
                # Workers come and go (jobs start, end): counted at each look, not each run.
                threads = sum(client.nthreads().values())
                on_running(min(left, threads))
            batch = ac.next_batch(block=False)
            if not batch:
                time.sleep(0.05)
            for f in batch:
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


@dataclass
class Cluster:
    """The Dask client of a sweep, the cluster it started (closed with it), and what watches
    that cluster's worker jobs."""

    client: Any
    cluster: Any = None
    watch: Callable[[], None] | None = None

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


def connect(
    scheduler: str | None,
    cluster: str | None,
    options: Mapping[str, Any],
    log_dir: Path,
    on_jobs: Callable[[str], None],
) -> Cluster:
    """The Dask client of ``scheduler`` or a new ``cluster`` (local:N, slurm, pbs: its worker
    jobs with ``options``, their logs in ``log_dir`` unless the options give another)."""
    if scheduler is not None:
        return Cluster(distributed.Client(scheduler))
    assert cluster is not None
    if cluster.startswith("local:"):
        n = cluster.removeprefix("local:")
        if not n.isdigit() or int(n) < 1:
            raise ConfigError(f"--cluster {cluster}: expected local:N with N >= 1 workers")
        c = distributed.LocalCluster(
            n_workers=int(n), threads_per_worker=1, processes=True, dashboard_address=None
        )
        return Cluster(distributed.Client(c), c)
    if cluster not in KINDS:
        raise ConfigError(f"--cluster {cluster}: expected local:N, slurm or pbs")
    given = check_job_options(options, "cluster_options")
    jobs = given.get("jobs", 1)
    # Absolute: a job's script runs in the directory it was submitted from, on another node.
    logs = Path(given.pop("log_dir", log_dir)).absolute()
    logs.mkdir(parents=True, exist_ok=True)
    c = jobqueue_cluster(cluster, {"log_dir": str(logs), **given})
    try:
        client = distributed.Client(c)
    except BaseException:
        c.close()
        raise
    c.scale(jobs=jobs)
    watch = JobWatch(c, client, cluster, jobs, given.get("worker_timeout"), on_jobs, logs)
    return Cluster(client, c, watch)
