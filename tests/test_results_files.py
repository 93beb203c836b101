"""A results folder whose files are not what tracewatt wrote (a table that is not Parquet, a
summary that is not a run's) gives an error naming the file and what was expected: a
ResultsError from Python, exit status 2 from `report` and `analyze idle`, never an internal
error."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import tracewatt
from conftest import PINGPONG, CliResult
from tracewatt import Results, ResultsError

Run = Callable[..., CliResult]

SUMMARY = "expected a run's summary as tracewatt run -o or compare -o writes it"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tracewatt.simulate(PINGPONG).write(tmp_path_factory.mktemp("run") / "r")


@pytest.fixture
def broken(run_dir: Path, tmp_path: Path) -> Path:
    """A copy of a run's folder, to break."""
    return Path(shutil.copytree(run_dir, tmp_path / "r"))


def _fails_with(run_cli: Run, d: Path, message: str) -> None:
    """``message`` from Results.read, and as the error of `report` and `analyze idle`."""
    with pytest.raises(ResultsError) as e:
        Results.read(d)
    assert str(e.value) == message
    for args in (["report", d, "-q"], ["analyze", "idle", d, "-q"]):
        r = run_cli(*args)
        assert (r.code, r.err, r.out) == (2, f"tracewatt: error: {message}\n", ""), args
    assert not (d / "report.html").exists()


def test_a_table_that_is_not_parquet(run_cli: Run, broken: Path) -> None:
    (broken / "timeline.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(ResultsError, match=r"timeline\.parquet: not a Parquet table"):
        Results.read(broken)
    for args in (["report", broken, "-q"], ["analyze", "idle", broken, "-q"]):
        r = run_cli(*args)
        assert r.code == 2
        assert r.err.startswith(
            f"tracewatt: error: {broken / 'timeline.parquet'}: not a Parquet table ("
        )
        assert "internal error" not in r.err


def test_a_truncated_table(run_cli: Run, broken: Path) -> None:
    links = broken / "links.parquet"
    links.write_bytes(links.read_bytes()[:100])
    r = run_cli("report", broken, "-q")
    assert r.code == 2
    assert r.err.startswith(f"tracewatt: error: {links}: not a Parquet table (")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"a":', "not JSON (Expecting value: line 1 column 6 (char 5)); " + SUMMARY),
        ("[1,2]", SUMMARY + "; the file is an array, not an object"),
        ("{}", SUMMARY + "; `makespan_s` is missing"),
    ],
)
def test_a_summary_that_is_not_a_runs(run_cli: Run, broken: Path, text: str, problem: str) -> None:
    path = broken / "summary.json"
    path.write_text(text, encoding="utf-8")
    _fails_with(run_cli, broken, f"{path}: {problem}")


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda s: s.pop("energy_j"), "`energy_j` is missing"),
        (lambda s: s["energy_j"].update(total="1 J"), "`energy_j.total` is a string, not a number"),
        (lambda s: s.update(config=[]), "`config` is an array, not an object"),
        (lambda s: s.update(makespan_s=True), "`makespan_s` is true or false, not a number"),
        (lambda s: s.update(jobs=[1]), "`jobs[0]` is a number, not an object"),
        # A compare output's summary also has the savings.
        (lambda s: s.update(baseline={}), "`baseline.makespan_s` is missing"),
    ],
)
def test_a_summary_without_what_its_readers_need(
    run_cli: Run, broken: Path, edit: Callable[[dict[str, Any]], object], problem: str
) -> None:
    path = broken / "summary.json"
    summary = json.loads(path.read_text(encoding="utf-8"))
    edit(summary)
    path.write_text(json.dumps(summary), encoding="utf-8")
    _fails_with(run_cli, broken, f"{path}: {SUMMARY}; {problem}")


def test_analyze_idle_without_the_links_table(run_cli: Run, broken: Path) -> None:
    (broken / "links.parquet").unlink()
    r = run_cli("analyze", "idle", broken, "-q")
    assert (r.code, r.out) == (2, "")
    assert r.err == (
        f"tracewatt: error: {broken / 'links.parquet'}: missing; analyze idle needs the run's "
        "links, idle_hist, idle_thresholds, ranks tables (write the results again with "
        "tracewatt run -o)\n"
    )


def test_a_compare_output_with_a_broken_baseline(
    run_cli: Run, pingpong_toml: Path, tmp_path: Path
) -> None:
    out = tmp_path / "cmp"
    assert run_cli("compare", pingpong_toml, "-q", "-o", out).code == 0
    base = out / "baseline" / "summary.json"
    base.write_text("x", encoding="utf-8")
    r = run_cli("report", out, "-q")
    assert (r.code, r.out) == (2, "")
    assert r.err == (
        f"tracewatt: error: {base}: not JSON (Expecting value: line 1 column 1 (char 0)); "
        f"{SUMMARY}\n"
    )
    assert not (out / "report.html").exists()
