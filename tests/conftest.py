"""Shared helpers: small real configurations and a CLI runner. No mocks: every test runs the
real extension module."""

from __future__ import annotations

import copy
import importlib.util
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tracewatt import cli

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
#: The optional data the tests marked ``optional`` read (the NPB class B traces; README,
#: "Optional data"): the folder in ``TRACEWATT_OPTIONAL_DATA``, else ``shared/data`` beside the
#: clone, where the Rust optional tests look.
OPTIONAL_DATA = Path(os.environ.get("TRACEWATT_OPTIONAL_DATA", ROOT.parent / "shared" / "data"))

PINGPONG: dict[str, Any] = {
    "seed": 1,
    "machine": {
        "topology": {"kind": "single_switch", "nodes": 2},
        "links": {"bandwidth_gbps": 10.0},
    },
    "jobs": [
        {
            "name": "pp",
            "ranks": 2,
            "workload": {"kind": "pingpong", "bytes": 64, "iterations": 20, "interval_us": 100.0},
        }
    ],
}

# A random workload on a small fat-tree: seeds matter.
RANDOM_FATTREE: dict[str, Any] = {
    "seed": 5,
    "machine": {
        "topology": {"kind": "fat_tree", "levels": 2, "radix": 8},
        "links": {"bandwidth_gbps": 10.0},
    },
    "jobs": [
        {
            "name": "ur",
            "ranks": 32,
            "workload": {"kind": "uniform_random", "messages": 10, "bytes": 4096},
        }
    ],
}


def load_script(name: str) -> ModuleType:
    """The project's ``scripts/NAME.py``, imported as a module (the scripts are not a package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def pingpong() -> dict[str, Any]:
    return copy.deepcopy(PINGPONG)


@pytest.fixture
def random_fattree() -> dict[str, Any]:
    return copy.deepcopy(RANDOM_FATTREE)


@pytest.fixture
def shared() -> Path:
    """The optional data (``OPTIONAL_DATA``); a test that needs it skips where it is missing."""
    if not (OPTIONAL_DATA / "dumpi").is_dir():
        pytest.skip(
            f"{OPTIONAL_DATA / 'dumpi'} missing: optional data, set TRACEWATT_OPTIONAL_DATA "
            "(README, Optional data)"
        )
    return OPTIONAL_DATA


def write_toml(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


PINGPONG_TOML = """\
seed = 1

[machine]
ranks_per_node = 1

[machine.topology]
kind = "single_switch"
nodes = 2

[machine.links]
bandwidth_gbps = 10.0

[[jobs]]
name = "pp"
ranks = 2

[jobs.workload]
kind = "pingpong"
bytes = 64
iterations = 20
interval_us = 100.0
"""


@pytest.fixture
def pingpong_toml(tmp_path: Path) -> Path:
    return write_toml(tmp_path / "pingpong.toml", PINGPONG_TOML)


@dataclass
class CliResult:
    code: int
    out: str
    err: str


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., CliResult]:
    """Runs ``tracewatt ARGS`` in-process (the same ``main`` the console script calls)."""

    def run(*args: str | os.PathLike[str]) -> CliResult:
        capsys.readouterr()
        code = cli.main([str(a) for a in args])
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


def run_process(args: Sequence[str | os.PathLike[str]], **kw: Any) -> CliResult:
    """Runs ``python -m tracewatt ARGS`` in a child process."""
    p = subprocess.run(
        [sys.executable, "-m", "tracewatt", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        **kw,
    )
    return CliResult(p.returncode, p.stdout, p.stderr)


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_process(args: Sequence[str | os.PathLike[str]]) -> subprocess.Popen[str]:
    """Starts ``python -m tracewatt ARGS`` in a child process that a SIGINT interrupts: a shell
    starts a background job (a test run launched with ``&``) with SIGINT ignored, and the child
    would inherit that."""
    return subprocess.Popen(
        [sys.executable, "-m", "tracewatt", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
    )


def _parents() -> dict[int, int]:
    """Each process id with its parent's (Linux ``/proc``)."""
    parent: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # the process ended meanwhile
            continue
        parent[int(stat.parent.name)] = int(fields[1])
    return parent


def descendants(pid: int) -> set[int]:
    """The processes below ``pid``: a sweep's workers, a Dask cluster's nannies and theirs."""
    parent = _parents()
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {p for p, pp in parent.items() if pp in frontier} - found
        found |= frontier
    return found


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, ended but not yet reaped, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
