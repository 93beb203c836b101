"""`tracewatt sweep --cluster slurm` against a real SLURM: a single-node cluster on this machine
(scripts/slurm-local.sh), started for this module and stopped after. Where SLURM cannot be
installed or started (not root, no apt-get) every test here is skipped, saying why."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import tracewatt
from conftest import ROOT, run_process, start_process
from tracewatt import sweep

SCRIPT = ROOT / "scripts" / "slurm-local.sh"

# 12 runs of a few milliseconds (2 workloads x 6 idle timeouts); ITERATIONS sets their length.
SPEC = """
name = "s"
[base]
seed = 1
machine = {{ preset = "miwa2014-16node", ranks_per_node = 1 }}
[[base.jobs]]
name = "w"
ranks = 16
workload = {{ kind = "permutation", iterations = {iterations}, bytes = 4096 }}
[axes]
"jobs[0].workload.kind" = ["permutation", "near_neighbor"]
"power.links.idle_timeout_us" = {timeouts}
"""
TIMEOUTS = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0]


def spec(tmp_path: Path, iterations: int = 400, timeouts: list[float] = TIMEOUTS) -> Path:
    p = tmp_path / f"spec-{iterations}-{len(timeouts)}.toml"
    p.write_text(SPEC.format(iterations=iterations, timeouts=timeouts), encoding="utf-8")
    return p


@pytest.fixture(scope="module")
def slurm() -> Iterator[None]:
    """A running single-node SLURM (partition ``debug``), its commands found through
    ``SLURM_CONF``."""
    p = subprocess.run(
        ["bash", str(SCRIPT), "start"], capture_output=True, text=True, timeout=600, check=False
    )
    if p.returncode == 3:
        pytest.skip(p.stderr.strip())
    assert p.returncode == 0, p.stderr
    conf = p.stdout.strip().rpartition("SLURM_CONF=")[2]
    previous = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = conf
    try:
        yield
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop"], timeout=60, check=False)
        if previous is None:
            del os.environ["SLURM_CONF"]
        else:
            os.environ["SLURM_CONF"] = previous


def worker_options() -> list[str]:
    """Worker jobs of one core: their Python imports the tracewatt these tests run (this
    checkout's, or the installed one)."""
    package_parent = Path(tracewatt.__file__).resolve().parent.parent
    return [
        "--cluster",
        "slurm",
        "--queue",
        "debug",
        "--cores",
        "1",
        "--memory",
        "1GB",
        "--walltime",
        "00:10:00",
        "--python",
        sys.executable,
        "--prologue",
        f"export PYTHONPATH={package_parent}",
    ]


def slurm_cmd(*args: str) -> str:
    return subprocess.run(args, capture_output=True, text=True, timeout=30, check=True).stdout


def jobs(name: str = "dask-worker", states: str = "PENDING,RUNNING") -> list[str]:
    """The ids of the jobs named ``name`` in one of ``states`` (``all``: also those that ended
    within the last five minutes, slurm.conf's MinJobAge)."""
    out = slurm_cmd("squeue", "-h", "-t", states, "-o", "%i %j")
    return [i for i, n in (line.split() for line in out.splitlines()) if n == name]


def wait_for(what: str, check: object, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"no {what} within {timeout} s"
        time.sleep(0.1)


def done(out: Path) -> int:
    return len(list(out.glob("runs/*/done.json")))


def test_a_sweep_runs_on_slurm_workers(slurm: None, tmp_path: Path) -> None:
    out = tmp_path / "out"
    t0 = time.monotonic()
    r = run_process(["sweep", spec(tmp_path), "-o", out, "--jobs", "2", *worker_options()])
    took = time.monotonic() - t0
    assert r.code == 0, r.err
    assert "2 worker jobs running" in r.err
    _, df = sweep.read_dataset(out)
    assert len(df) == 12 and (df["status"] == "ok").all(), df["error"].tolist()
    # The same numbers as on local processes.
    local = tracewatt.sweep(spec(tmp_path), tmp_path / "local", workers=2)
    columns = ["dir", "makespan_s", "energy_j", "link_wakes"]
    assert df[columns].equals(local[columns])
    # The worker jobs' logs are in DIR/logs, a pair per job.
    logs = sorted(p.name for p in (out / "logs").iterdir())
    assert len(logs) == 4 and all(n.startswith("dask-worker-") for n in logs), logs
    assert took < 60, f"the sweep took {took:.0f} s"


def test_a_cancelled_worker_job_loses_nothing(slurm: None, tmp_path: Path) -> None:
    """``scancel`` of one of two worker jobs while runs are in flight: its runs go to the other
    worker and to the job that replaces it, and the sweep ends with all 12 rows."""
    out = tmp_path / "out"
    before = set(jobs(states="all"))
    # Runs of about half a second: the new job starts before the last runs end.
    args = ["sweep", spec(tmp_path, iterations=8000), "-o", out, "--jobs", "2", *worker_options()]
    p = subprocess.Popen(
        [sys.executable, "-m", "tracewatt", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for("finished run", lambda: done(out) >= 2 or p.poll() is not None)
        assert p.poll() is None, p.communicate()[1]
        running = jobs()
        assert len(running) == 2
        slurm_cmd("scancel", running[0])
        _, err = p.communicate(timeout=120)
    finally:
        p.kill()
    assert p.returncode == 0, err
    # The job's end was seen, and one new job was submitted in its place.
    assert "1 worker job running" in err, err
    assert len(set(jobs(states="all")) - before) == 3
    _, df = sweep.read_dataset(out)
    assert len(df) == 12 and (df["status"] == "ok").all(), df["error"].tolist()
    assert done(out) == 12


def test_a_refused_job_stops_the_sweep_with_sbatchs_message(slurm: None, tmp_path: Path) -> None:
    out = tmp_path / "out"
    # Six of the twelve runs finished before (a spec with three of the six idle timeouts is the
    # same sweep, with fewer runs).
    tracewatt.sweep(spec(tmp_path, timeouts=TIMEOUTS[:3]), out, workers=2)
    options = worker_options()
    options[options.index("--memory") + 1] = "64TB"  # far beyond the node's memory
    t0 = time.monotonic()
    r = run_process(["sweep", spec(tmp_path), "-o", out, *options])
    took = time.monotonic() - t0
    assert r.code == 1
    assert r.err.splitlines()[-2:] == [
        "tracewatt: error: --cluster slurm: sbatch refused the worker job: sbatch: error: "
        "Memory specification can not be satisfied",
        "sbatch: error: Batch job submission failed: Requested node configuration is not available",
    ], r.err
    assert took < 60, f"the sweep took {took:.0f} s to stop"
    assert len(sweep.read_dataset(out)[1]) == 6
    assert not jobs()


def test_a_job_whose_workers_cannot_start_stops_the_sweep(slurm: None, tmp_path: Path) -> None:
    """A worker job that ends before its workers connect (here a Python that is none) is not
    submitted again and again: the sweep stops, naming the job and where its output is."""
    out = tmp_path / "out"
    options = worker_options()
    options[options.index("--python") + 1] = "/bin/false"
    t0 = time.monotonic()
    r = run_process(["sweep", spec(tmp_path), "-o", out, *options])
    took = time.monotonic() - t0
    assert r.code == 1
    last = r.err.splitlines()[-1]
    assert re.fullmatch(
        rf"tracewatt: error: --cluster slurm: worker job \d+ ended \((FAILED|COMPLETED)\) before "
        rf"any of its workers connected; its output is in {re.escape(str(out / 'logs'))}",
        last,
    ), r.err
    assert took < 60, f"the sweep took {took:.0f} s to stop"
    assert not jobs()


def test_a_pending_job_shows_its_reason_and_times_out(slurm: None, tmp_path: Path) -> None:
    """The node is taken by another job: the worker job pends (reason Resources) and the sweep
    says so, and stops after --worker-timeout keeping the runs that finished before. The job it
    submitted carries the extra directive and the prologue."""
    out = tmp_path / "out"
    tracewatt.sweep(spec(tmp_path, timeouts=TIMEOUTS[:3]), out, workers=2)
    blocker = slurm_cmd(
        "sbatch", "--parsable", "--exclusive", "-J", "blocker", "-o", "/dev/null", "--wrap",
        "sleep 300",
    ).strip()  # fmt: skip
    try:
        wait_for("running blocker", lambda: "RUNNING" in slurm_cmd("squeue", "-h", "-o", "%T"))
        args = [
            "sweep", spec(tmp_path), "-o", out, *worker_options(),
            "--directive=--comment=tracewatt-directive", "--prologue", "echo prologue-ran",
            "--worker-timeout", "8",
        ]  # fmt: skip
        p = subprocess.Popen(
            [sys.executable, "-m", "tracewatt", *map(str, args)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            wait_for("worker job", lambda: jobs() or p.poll() is not None)
            job = jobs()[0]
            script = slurm_cmd("scontrol", "write", "batch_script", job, "-")
            shown = slurm_cmd("scontrol", "show", "job", "-dd", job)
            t0 = time.monotonic()
            _, err = p.communicate(timeout=120)
            took = time.monotonic() - t0
        finally:
            p.kill()
    finally:
        slurm_cmd("scancel", blocker)
    lines = script.splitlines()
    assert "#SBATCH --comment=tracewatt-directive" in lines, script
    assert "echo prologue-ran" in lines, script
    assert lines.index("echo prologue-ran") < len(lines) - 1  # before the worker command
    assert "Comment=tracewatt-directive" in shown, shown
    assert f"StdOut={out}/logs/dask-worker-%J.out" in shown, shown  # %J: the job id
    assert p.returncode == 1, err
    assert "tracewatt: sweep `s`: 1 worker job pending: Resources" in err, err
    assert err.splitlines()[-1] == (
        "tracewatt: error: --cluster slurm: no worker connected for 8 s (--worker-timeout 8): "
        "1 worker job pending: Resources; the finished runs are kept, and the same command "
        "resumes the sweep"
    ), err
    assert took < 15, f"the sweep took {took:.0f} s to stop"
    assert len(sweep.read_dataset(out)[1]) == 6
    assert not jobs()


def test_a_terminated_sweep_cancels_its_jobs_and_resumes(slurm: None, tmp_path: Path) -> None:
    """SIGTERM (the time limit of a batch job the sweep itself runs in) cancels the worker jobs
    and keeps the finished runs; the same command runs the rest."""
    out = tmp_path / "out"
    args = ["sweep", spec(tmp_path, iterations=8000), "-o", out, "--jobs", "2", *worker_options()]
    p = start_process(args)
    try:
        wait_for("finished run", lambda: done(out) >= 2 or p.poll() is not None)
        assert p.poll() is None, p.communicate()[1]
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 143 and err.endswith("tracewatt: error: terminated\n"), err
    assert not jobs()
    kept = len(sweep.read_dataset(out)[1])
    assert 2 <= kept < 12
    r = run_process(args)
    assert r.code == 0, r.err
    assert f"12 runs, {kept} already done; {12 - kept} to run" in r.err
    assert len(sweep.read_dataset(out)[1]) == 12
