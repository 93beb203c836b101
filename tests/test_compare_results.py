"""scripts/compare_results.py: the byte-for-byte check of two result directories."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pyarrow as pa
import pyarrow.parquet as pq

from conftest import load_script


def _script() -> ModuleType:
    return load_script("compare_results")


def _results(d: Path, energy_j: list[float], wall_s: float) -> Path:
    d.mkdir()
    pq.write_table(pa.table({"link": [0, 1], "energy_j": energy_j}), d / "links.parquet")
    (d / "summary.json").write_text(json.dumps({"makespan_s": 1.5}))
    (d / "timing.json").write_text(json.dumps({"wall_s": wall_s}))
    return d


def test_identical_results_pass_whatever_their_timing(tmp_path: Path) -> None:
    m = _script()
    a = _results(tmp_path / "a", [1.0, 2.0], wall_s=3.0)
    b = _results(tmp_path / "b", [1.0, 2.0], wall_s=7.0)
    assert m.compare(a, b) == []
    assert m.main([str(a), str(b)]) == 0


def test_a_changed_column_and_a_missing_file_are_named(tmp_path: Path) -> None:
    m = _script()
    a = _results(tmp_path / "a", [1.0, 2.0], wall_s=3.0)
    b = _results(tmp_path / "b", [1.0, 2.5], wall_s=3.0)
    (b / "summary.json").unlink()
    assert m.compare(a, b) == [
        f"summary.json: only in {a}",
        "links.parquet: columns energy_j",
    ]
    assert m.main([str(a), str(b)]) == 1
    assert m.main([str(a)]) == 2
