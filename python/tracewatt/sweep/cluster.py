"""The Dask executor of sweeps: a scheduler given by address, a local Dask cluster, or batch jobs
(dask-jobqueue on Slurm or PBS)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracewatt._dependencies import dask_jobqueue, distributed
from tracewatt.errors import ConfigError
from tracewatt.sweep.spec import Run
from tracewatt.sweep.worker import OnResult, OnRunning, execute


def run_dask(
    todo: Mapping[str, Run], out: Path, client: Any, on_result: OnResult, on_running: OnRunning
) -> None:
    """Runs ``todo`` on a Dask cluster. The scheduler itself resubmits the run of a worker that
    died (``distributed.scheduler.allowed-failures`` times, then it fails with KilledWorker)."""
    futures = {
        client.submit(execute, r.config, str(out / r.dir), pure=False): h for h, r in todo.items()
    }
    threads = max(1, sum(client.nthreads().values()))
    left = len(futures)
    on_running(min(left, threads))
    try:
        for f in distributed.as_completed(futures):
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
    cls = {"slurm": dask_jobqueue.SLURMCluster, "pbs": dask_jobqueue.PBSCluster}[kind]
    given = {k: v for k, v in options.items() if v is not None}
    for k in ("cores", "memory"):
        if k not in given:
            raise ConfigError(f"--cluster {kind}: --{k} is required (per job)")
    return cls(processes=given["cores"], **given)


@dataclass
class Cluster:
    """The Dask client of a sweep, and the cluster it started (closed with it)."""

    client: Any
    cluster: Any = None

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


def connect(
    scheduler: str | None, cluster: str | None, options: Mapping[str, Any], jobs: int
) -> Cluster:
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
    if cluster not in ("slurm", "pbs"):
        raise ConfigError(f"--cluster {cluster}: expected local:N, slurm or pbs")
    c = jobqueue_cluster(cluster, options)
    c.scale(jobs=jobs)
    return Cluster(distributed.Client(c), c)
