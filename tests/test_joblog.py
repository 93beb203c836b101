"""Cluster job-log analysis (SWF) for DIMM hotplug: numbers worked out by hand, errors, and the
archive's logs when the optional data is there (README, "Optional data")."""

from __future__ import annotations

import gzip
import json
import math
import re
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import tracewatt
from conftest import OPTIONAL_DATA, ROOT, CliResult
from tracewatt.analysis import joblog

Run = Callable[..., CliResult]

SWF_DIR = OPTIONAL_DATA / "swf"

# Machine: 4 nodes of 4 cores (header); node memory 2 channels x 2 DIMMs x 4 GiB, so the first
# DIMMs hold 8 GiB and all four 16 GiB; 0.5 W per DIMM; idle nodes use 2 GiB.
SMALL = {
    "channels": 2,
    "dimms_per_channel": 2,
    "dimm_gib": 4.0,
    "dimm_standby_w": 0.5,
    "idle_node_gib": 2.0,
}

# Fields: job submit wait run alloc cpu used_kb reqprocs reqtime reqmem_kb status user group
# exe queue partition preceding think (1 GiB = 1,048,576 KB).
HAND_SWF = """\
; Version: 2.2
;MaxNodes: 4
; MaxProcs:   16
;
1  0  0 100  8 -1 2097152  8 -1      -1 1 1 1 1 1 1 -1 -1
; MaxNodes: 99   (a comment after the first job: not a header any more)

2  0 50 100  4 -1      -1  4 -1 3145728 1 1 1 1 1 1 -1 -1
3 10 90 100 -1 -1 2097152  5 -1      -1 1 1 1 1 1 1 -1 -1
4 20  0   0  4 -1 1048576  4 -1      -1 1 1 1 1 1 1 -1 -1
5 20  0  10 -1 -1 1048576 -1 -1      -1 1 1 1 1 1 1 -1 -1
6 20  0  10  4 -1      -1  4 -1      -1 1 1 1 1 1 1 -1 -1
7 30 -1  10  4 -1 1048576  4 -1      -1 1 1 1 1 1 1 -1 -1
"""
# Job 1: 0-100 s, 8 processors = 2 nodes, used 2 GiB x 8 / 2 = 8 GiB per node: just fits the
#        first DIMMs. bandwidth_preserving 2 DIMMs, ideal 8/4 = 2.
# Job 2: 50-150 s, 1 node, used unknown -> requested 3 GiB x 4 = 12 GiB: does not fit.
#        bandwidth_preserving 4, ideal ceil(12/4) = 3. (memory from the request)
# Job 3: 100-200 s, allocated unknown -> requested 5 processors = ceil(5/4) = 2 nodes,
#        2 GiB x 5 / 2 = 5 GiB per node: fits. bandwidth_preserving 2, ideal ceil(5/4) = 2.
# Job 4: run time 0 -> skipped (run_time). Job 5: no processors -> skipped (processors).
# Job 6: no memory at all -> skipped (memory), 1 node x 10 s. Job 7: wait unknown -> skipped
#        (start_time), 1 node x 10 s.
# Span 0-200 s on 4 nodes: 800 node-s. Busy: 2 x 100 + 1 x 100 + 2 x 100 = 500 node-s, at most
# 3 nodes at once (50-150 s), so nothing overcommitted; idle 300 node-s at 2 GiB: fits,
# bandwidth_preserving 2 DIMMs, ideal 1.
# Fits the first DIMMs: jobs 1 and 3 (400) + idle (300) = 700 of 800 node-s = 0.875;
# of busy node-time 400 / 500 = 0.8.
# DIMM-seconds: always_on 4 x 800 = 3200; bandwidth_preserving 2x200 + 4x100 + 2x200 + 2x300 =
# 1800; ideal 2x200 + 3x100 + 2x200 + 1x300 = 1400. At 0.5 W: 1600, 900 and 700 J; savings 700
# and 900 J; ratio 7/9.
HAND_ENERGY_J = {"always_on": 1600.0, "bandwidth_preserving": 900.0, "ideal": 700.0}


def _write(tmp_path: Path, text: str, name: str = "log.swf") -> Path:
    p = tmp_path / name
    if name.endswith(".gz"):
        with gzip.open(p, "wt", encoding="ascii") as f:
            f.write(text)
    else:
        p.write_text(text, encoding="ascii")
    return p


def _analyze(path: Path, **settings: float) -> joblog.JoblogResult:
    return joblog.analyze(path, joblog.resolve_settings(None, settings))


def test_hand_built_log_gives_the_hand_computed_shares_and_energies(tmp_path: Path) -> None:
    r = _analyze(_write(tmp_path, HAND_SWF), **SMALL)
    assert (r.nodes, r.nodes_source) == (4, "header MaxNodes")
    assert (r.cores_per_node, r.cores_source) == (4, "header MaxProcs / MaxNodes")
    assert r.span_s == 200.0
    assert (r.busy_node_s, r.idle_node_s, r.overcommitted_node_s) == (500.0, 300.0, 0.0)
    assert r.share_fits_first_dimms == pytest.approx(0.875)
    assert r.busy_share_fits_first_dimms == pytest.approx(0.8)
    assert r.energy_j == pytest.approx(HAND_ENERGY_J)
    assert r.saving_j("bandwidth_preserving") == pytest.approx(700.0)
    assert r.saving_j("ideal") == pytest.approx(900.0)
    assert r.saving_ratio == pytest.approx(7 / 9)
    assert r.jobs == 7
    assert r.jobs_analysed == 3
    assert r.jobs_skipped == {"run_time": 1, "processors": 1, "start_time": 1, "memory": 1}
    assert r.jobs_memory_from_request == 1
    assert r.jobs_memory_assumed == 0
    assert r.jobs_memory_over_node == 0
    assert r.skipped_node_s == 20.0


def test_assumed_memory_brings_in_the_jobs_without_any(tmp_path: Path) -> None:
    path = _write(tmp_path, HAND_SWF)
    # Job 6 (20-30 s, 1 node) at an assumed 10 GiB: over the first DIMMs' 8 GiB, so
    # bandwidth_preserving 4 DIMMs and ideal ceil(10/4) = 3. Busy 510, idle 290 node-s (3 nodes
    # busy at most during 20-30 s). Fits: 400 + 290 = 690 of 800.
    # bandwidth_preserving 1800 - 2x10 (idle) + 4x10 = 1820 DIMM-s -> 910 J;
    # ideal 1400 - 1x10 + 3x10 = 1420 -> 710 J; savings 690 and 890 J.
    r = _analyze(path, assume_gib=10.0, **SMALL)
    assert (r.busy_node_s, r.idle_node_s) == (510.0, 290.0)
    assert r.share_fits_first_dimms == pytest.approx(690 / 800)
    assert r.energy_j == pytest.approx(
        {"always_on": 1600.0, "bandwidth_preserving": 910.0, "ideal": 710.0}
    )
    assert r.saving_ratio == pytest.approx(690 / 890)
    assert r.jobs_memory_assumed == 1
    assert r.jobs_skipped["memory"] == 0
    assert r.skipped_node_s == 10.0
    # At 20 GiB job 6 needs more than the node's 16 GiB: every DIMM on under both policies,
    # counted. ideal 1400 - 10 + 4x10 = 1430 DIMM-s -> 715 J.
    r = _analyze(path, assume_gib=20.0, **SMALL)
    assert r.energy_j["ideal"] == pytest.approx(715.0)
    assert r.energy_j["bandwidth_preserving"] == pytest.approx(910.0)
    assert r.jobs_memory_over_node == 1
    # Exactly the node's 16 GiB is not over it.
    assert _analyze(path, assume_gib=16.0, **SMALL).jobs_memory_over_node == 0


def test_used_memory_zero_is_known_and_still_needs_one_dimm(tmp_path: Path) -> None:
    # One node, 100 s, used memory 0 KB (known: the requested 3 GiB is not used): fits, so
    # bandwidth_preserving 2 DIMMs; ideal at least 1. No idle time. At 0.5 W: always_on
    # 4 x 100 x 0.5 = 200 J, bandwidth_preserving 100 J, ideal 50 J.
    line = "1 0 0 100 4 -1 0 4 -1 3145728 1 1 1 1 1 1 -1 -1\n"
    r = _analyze(_write(tmp_path, "; MaxNodes: 1\n; MaxProcs: 4\n" + line), **SMALL)
    assert r.energy_j == pytest.approx(
        {"always_on": 200.0, "bandwidth_preserving": 100.0, "ideal": 50.0}
    )
    assert r.jobs_memory_from_request == 0


def test_gzip_and_plain_give_the_same_results(tmp_path: Path) -> None:
    plain = _analyze(_write(tmp_path, HAND_SWF), **SMALL).to_dict()
    packed = _analyze(_write(tmp_path, HAND_SWF, "log.swf.gz"), **SMALL).to_dict()
    assert packed.pop("log").endswith("log.swf.gz")
    plain.pop("log")
    assert packed == plain


# Two jobs of 3 nodes on a 4-node machine (1 core per node), 1 GiB per node, default node
# (8 channels x 2 DIMMs x 8 GiB, 0.9 W, idle 2 GiB: everything fits).
OVERLAP_SWF = """\
; MaxNodes: {nodes}
; MaxProcs: {nodes}
1 0 0 100 3 -1 1048576 3 -1 -1 1 1 1 1 1 1 -1 -1
2 0 {wait} 100 3 -1 1048576 3 -1 -1 1 1 1 1 1 1 -1 -1
"""


@pytest.mark.parametrize(
    ("nodes", "wait", "span_s", "over_s", "idle_s"),
    [
        # 0-100 and 50-150 s: 6 nodes busy during 50-100 s, 2 more than the 4 there are:
        # 100 node-s overcommitted; idle 1 node x 50 s at each end = 100 node-s
        # (= 4 x 150 - 600 + 100).
        (4, 50, 150.0, 100.0, 100.0),
        # 0-100 and 100-200 s on 3 nodes: the second starts as the first ends, no overlap.
        (3, 100, 200.0, 0.0, 0.0),
    ],
)
def test_overcommitted_node_time_is_reported_and_idle_never_negative(
    tmp_path: Path, nodes: int, wait: int, span_s: float, over_s: float, idle_s: float
) -> None:
    path = _write(tmp_path, OVERLAP_SWF.format(nodes=nodes, wait=wait))
    r = _analyze(path)
    assert r.span_s == span_s
    assert r.busy_node_s == 600.0
    assert r.overcommitted_node_s == pytest.approx(over_s)
    assert r.idle_node_s == pytest.approx(idle_s)
    # All three policies price the same node-time, busy + idle (16, 8 and 1 DIMMs on).
    node_s = 600.0 + idle_s
    assert r.energy_j == pytest.approx(
        {
            "always_on": 16 * node_s * 0.9,
            "bandwidth_preserving": 8 * node_s * 0.9,
            "ideal": 1 * node_s * 0.9,
        }
    )
    assert r.share_fits_first_dimms == 1.0


JOB = "1 0 0 100 8 -1 1048576 8 -1 -1 1 1 1 1 1 1 -1 -1\n"


def test_machine_from_header_or_settings(tmp_path: Path) -> None:
    bare = _write(tmp_path, JOB, "bare.swf")
    with pytest.raises(joblog.JoblogError, match=r"bare\.swf: the cores per node .*--cores-per"):
        _analyze(bare)
    with pytest.raises(joblog.JoblogError, match=r"bare\.swf: .*node count.*--nodes"):
        _analyze(bare, cores_per_node=4)
    r = _analyze(bare, cores_per_node=4, nodes=3)
    assert (r.nodes, r.nodes_source, r.cores_source) == (3, "given", "given")
    # 8 processors at 4 per node: 2 nodes x 100 s of 3 x 100.
    assert (r.busy_node_s, r.idle_node_s) == (200.0, 100.0)
    procs_only = _write(tmp_path, "; MaxProcs: 18\n" + JOB, "procs.swf")
    r = _analyze(procs_only, cores_per_node=4)
    assert (r.nodes, r.nodes_source) == (5, "header MaxProcs / cores per node")  # ceil(18/4)
    odd = _write(tmp_path, "; MaxNodes: 4\n; MaxProcs: 18\n" + JOB, "odd.swf")
    with pytest.raises(joblog.JoblogError, match=r"MaxProcs 18 is not a multiple of MaxNodes 4"):
        _analyze(odd)
    bad = _write(tmp_path, "; MaxNodes: many\n" + JOB, "bad.swf")
    with pytest.raises(joblog.JoblogError, match=r"bad\.swf:1: header MaxNodes: .*'many'"):
        _analyze(bad, cores_per_node=4)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("1 0 0 100 8 -1 1048576 8 -1 -1 1 1 1 1 1 1 -1", "expected 18 .*fields.*got 17"),
        ("1 0 0 1h 8 -1 1048576 8 -1 -1 1 1 1 1 1 1 -1 -1", r"field 4 \(run time\).*'1h'"),
        ("1 0 0 100 8 -1 nan 8 -1 -1 1 1 1 1 1 1 -1 -1", r"field 7 \(used memory\).*'nan'"),
    ],
)
def test_a_malformed_line_is_an_error_naming_file_and_line(
    tmp_path: Path, line: str, message: str
) -> None:
    path = _write(tmp_path, "; MaxNodes: 4\n; MaxProcs: 16\n" + JOB + line + "\n")
    with pytest.raises(joblog.JoblogError, match=rf"log\.swf:4: {message}"):
        _analyze(path)


def test_a_log_without_memory_names_the_missing_fields(tmp_path: Path) -> None:
    text = "; MaxNodes: 4\n; MaxProcs: 16\n" + JOB.replace("1048576", "-1") * 3
    path = _write(tmp_path, text)
    with pytest.raises(joblog.JoblogError) as e:
        _analyze(path)
    msg = str(e.value)
    assert "log.swf" in msg
    assert "used memory (SWF field 7)" in msg
    assert "requested memory (field 10)" in msg
    assert "--assume-gib" in msg
    # Three jobs of 2 nodes x 100 s at the same time; assumed 1 GiB per node.
    assert _analyze(path, assume_gib=1.0).busy_node_s == 600.0


def test_empty_and_all_skipped_logs_are_errors(tmp_path: Path) -> None:
    with pytest.raises(joblog.JoblogError, match="no job lines"):
        _analyze(_write(tmp_path, "; MaxNodes: 4\n"))
    path = _write(tmp_path, "; MaxNodes: 4\n; MaxProcs: 16\n" + JOB.replace(" 100 ", " 0 "))
    with pytest.raises(joblog.JoblogError, match=r"none of its 1 jobs can be analysed.*run_time 1"):
        _analyze(path)
    with pytest.raises(joblog.JoblogError, match="no such file"):
        _analyze(tmp_path / "missing.swf")


def test_a_truncated_gzip_log_is_an_error(tmp_path: Path) -> None:
    whole = _write(tmp_path, HAND_SWF * 50, "whole.swf.gz").read_bytes()
    cut = tmp_path / "cut.swf.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(joblog.JoblogError, match=r"cut\.swf\.gz: cannot read the log"):
        _analyze(cut, **SMALL)


def test_settings_file_then_options(tmp_path: Path) -> None:
    cfg = tmp_path / "node.toml"
    cfg.write_text(
        "[joblog]\nchannels = 2\ndimms_per_channel = 2\ndimm_gib = 4\ndimm_standby_w = 1.0\n"
    )
    s = joblog.resolve_settings(cfg, {"dimm_standby_w": 0.5, "nodes": None})
    assert s == joblog.JoblogSettings(**SMALL)
    cfg.write_text("[joblog]\nchannels = 0\n")
    with pytest.raises(
        joblog.JoblogError,
        match=r"node\.toml: joblog\.channels: expected an integer from 1 to 256",
    ):
        joblog.resolve_settings(cfg)
    cfg.write_text("[joblog]\nchanels = 2\n")
    with pytest.raises(joblog.JoblogError, match=r"node\.toml: joblog\.chanels: unknown field"):
        joblog.resolve_settings(cfg)
    with pytest.raises(joblog.JoblogError, match=r"dimm_gib: expected a number from 2\^-20"):
        joblog.resolve_settings(None, {"dimm_gib": 0.0})


def test_python_api_returns_a_frame_per_policy(tmp_path: Path) -> None:
    df = tracewatt.analyze_joblog(_write(tmp_path, HAND_SWF), **SMALL)
    assert isinstance(df, pd.DataFrame)
    assert list(df["policy"]) == ["always_on", "bandwidth_preserving", "ideal"]
    assert list(df["energy_j"]) == pytest.approx([1600.0, 900.0, 700.0])
    assert list(df["saving_j"]) == pytest.approx([0.0, 700.0, 900.0])
    assert list(df["saving_pct"]) == pytest.approx([0.0, 43.75, 56.25])
    assert df.attrs["share_fits_first_dimms"] == pytest.approx(0.875)
    assert df.attrs["saving_ratio"] == pytest.approx(7 / 9)
    assert df.attrs["jobs_skipped"]["memory"] == 1


def _small_options() -> list[str]:
    return [f"--{k.replace('_', '-')}={v:g}" for k, v in SMALL.items()]


def test_cli_json_and_table(run_cli: Run, tmp_path: Path) -> None:
    path = _write(tmp_path, HAND_SWF)
    r = run_cli("analyze", "joblog", path, *_small_options(), "--json")
    assert r.code == 0, r.err
    d = json.loads(r.out)
    assert d["share_fits_first_dimms"] == pytest.approx(0.875)
    for policy, energy in HAND_ENERGY_J.items():
        assert d[policy]["energy_j"] == pytest.approx(energy)
        assert d[policy]["saving_j"] == pytest.approx(1600.0 - energy)
    assert d["saving_ratio"] == pytest.approx(7 / 9)
    assert d["jobs_memory_from_request"] == 1
    r = run_cli("analyze", "joblog", path, *_small_options())
    assert r.code == 0, r.err
    assert "87.50 % of node-time (80.00 % of busy node-time)" in r.out
    assert "77.78 %" in r.out
    assert "skipped: run_time 1, processors 1, start_time 1, memory 1" in r.out


def test_cli_errors_exit_2_naming_the_place(run_cli: Run, tmp_path: Path) -> None:
    path = _write(tmp_path, HAND_SWF.replace("3 10 90 100", "3 10 90"))
    r = run_cli("analyze", "joblog", path, *_small_options())
    assert r.code == 2
    assert f"{path}:9: expected 18 whitespace-separated fields" in r.err
    r = run_cli("analyze", "joblog", _write(tmp_path, HAND_SWF), "--dimm-gib=-1")
    assert r.code == 2
    assert "--dimm-gib: expected a number from 2^-20 (1 KiB) to 2^20 (1 PiB), got -1.0" in r.err
    cfg = tmp_path / "node.toml"
    cfg.write_text("[joblog]\nchannels = 2.5\n")
    r = run_cli("analyze", "joblog", path, "--config", cfg)
    assert r.code == 2
    assert "node.toml: joblog.channels: expected an integer from 1 to 256, got 2.5" in r.err


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "3 10 90 100 99999999999999999999 -1 1048576 8 -1 -1 1 1 1 1 1 1 -1 -1",
            "field 5 (allocated processors): expected at most 1,000,000,000 (negative: unknown), "
            "got '99999999999999999999'",
        ),
        (
            "3 10 90 100 1e300 -1 1048576 8 -1 -1 1 1 1 1 1 1 -1 -1",
            "field 5 (allocated processors): expected at most 1,000,000,000 (negative: unknown), "
            "got '1e300'",
        ),
        (
            "3 10 90 100 -1 -1 1048576 2e9 -1 -1 1 1 1 1 1 1 -1 -1",
            "field 8 (requested processors): expected at most 1,000,000,000 (negative: unknown), "
            "got '2e9'",
        ),
        (
            "3 10 90 1e13 8 -1 1048576 8 -1 -1 1 1 1 1 1 1 -1 -1",
            "field 4 (run time): expected at most 1,000,000,000,000 s (negative: unknown), "
            "got '1e13'",
        ),
        # Two finite times whose sum is infinite.
        (
            "3 1e308 1e308 100 8 -1 1048576 8 -1 -1 1 1 1 1 1 1 -1 -1",
            "field 2 (submit time): expected at most 1,000,000,000,000 s (negative: unknown), "
            "got '1e308'",
        ),
        (
            "3 10 90 100 8 -1 1e308 8 -1 -1 1 1 1 1 1 1 -1 -1",
            "field 7 (used memory): expected at most 2^40 KB (1 PiB) per processor (negative: "
            "unknown), got '1e308'",
        ),
    ],
)
def test_log_values_beyond_the_limits_name_the_line_and_the_limit(
    run_cli: Run, tmp_path: Path, line: str, message: str
) -> None:
    path = _write(tmp_path, HAND_SWF + line + "\n")
    lineno = len(HAND_SWF.splitlines()) + 1
    r = run_cli("analyze", "joblog", path, *_small_options())
    assert (r.code, r.out) == (2, "")
    assert r.err == f"tracewatt: error: {path}:{lineno}: {message}\n"


def test_huge_negative_times_are_unknown_not_an_overflow(tmp_path: Path) -> None:
    # Their sum is -inf; each is a negative (unknown) time: the job is skipped.
    line = "3 -1e308 -1e308 100 8 -1 1048576 8 -1 -1 1 1 1 1 1 1 -1 -1\n"
    r = joblog.analyze(_write(tmp_path, HAND_SWF + line), joblog.JoblogSettings(**SMALL))
    assert r.jobs_skipped["start_time"] == 2


def test_a_header_beyond_the_limit(run_cli: Run, tmp_path: Path) -> None:
    for raw in ("99999999999999999999", "\u00b2"):
        path = tmp_path / "h.swf"
        path.write_bytes(HAND_SWF.replace(";MaxNodes: 4", f";MaxNodes: {raw}").encode("latin-1"))
        r = run_cli("analyze", "joblog", path)
        assert (r.code, r.out) == (2, "")
        assert r.err == (
            f"tracewatt: error: {path}:2: header MaxNodes: expected an integer from 1 to "
            f"1,000,000,000, got {raw!r}\n"
        )


@pytest.mark.parametrize(
    ("option", "value", "expected"),
    [
        ("--nodes", "99999999999999999999", "an integer from 1 to 1,000,000,000"),
        ("--cores-per-node", "1000000001", "an integer from 1 to 1,000,000,000"),
        ("--channels", "257", "an integer from 1 to 256"),
        ("--dimms-per-channel", "0", "an integer from 1 to 256"),
        ("--idle-node-gib", "1e+308", "a number from 0 to 2^20 (1 PiB)"),
        ("--assume-gib", "1e+308", "a number from 0 to 2^20 (1 PiB)"),
        ("--dimm-gib", "1e-320", "a number from 2^-20 (1 KiB) to 2^20 (1 PiB)"),
        ("--dimm-standby-w", "1e+308", "a number from 0.001 to 1000"),
    ],
)
def test_settings_beyond_their_range_name_it(
    run_cli: Run, tmp_path: Path, option: str, value: str, expected: str
) -> None:
    r = run_cli("analyze", "joblog", _write(tmp_path, HAND_SWF), f"{option}={value}")
    assert (r.code, r.out) == (2, "")
    assert r.err == f"tracewatt: error: {option}: expected {expected}, got {value}\n"


def test_a_settings_file_value_beyond_its_range(run_cli: Run, tmp_path: Path) -> None:
    cfg = tmp_path / "node.toml"
    cfg.write_text("[joblog]\ndimm_gib = 1e-320\n")
    r = run_cli("analyze", "joblog", _write(tmp_path, HAND_SWF), "--config", cfg)
    assert (r.code, r.out) == (2, "")
    assert r.err == (
        f"tracewatt: error: {cfg}: joblog.dimm_gib: expected a number from 2^-20 (1 KiB) to "
        "2^20 (1 PiB), got 1e-320\n"
    )
    # Settings built directly are checked as well.
    with pytest.raises(joblog.JoblogError, match=r"^settings\.nodes: expected an integer from 1"):
        joblog.analyze(_write(tmp_path, HAND_SWF), joblog.JoblogSettings(nodes=10**20))


# ----------------------------------------------------------------- the README's example


def _readme_joblog_command() -> list[str]:
    """The README's ``tracewatt analyze joblog`` line, its arguments split as a shell would."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    (line,) = [x for x in lines if x.startswith("tracewatt analyze joblog ")]
    return shlex.split(line, comments=True)[1:]


def _cm5_shares(path: Path) -> tuple[int, float, float]:
    """Jobs, share of busy node-time and of all node-time fitting the first DIMMs of the README's
    CM-5 layout, another way: 1,024 nodes of one processor (the header); a job fits when its
    memory per processor (used, else requested; KB taken as KiB) is at most the 16 MiB of the
    first DIMMs (2 channels x 8 MiB); idle nodes (0.5 MiB) always fit. Idle node-time: the free
    nodes integrated between the jobs' start and end events."""
    busy = fits = 0.0
    events: list[tuple[float, int]] = []
    with gzip.open(path, "rt", encoding="ascii") as f:
        jobs = [[float(x) for x in line.split()] for line in f if not line.startswith(";")]
    for job in jobs:
        start, run, procs = job[1] + job[2], job[3], job[4]
        kib = job[6] if job[6] >= 0 else job[9]
        assert run > 0 and procs > 0 and kib >= 0, job  # every job of the excerpt is analysed
        busy += procs * run
        fits += procs * run if kib <= 16 * 1024 else 0.0
        events += [(start, int(procs)), (start + run, -int(procs))]
    events.sort()
    idle, running, t = 0.0, 0, events[0][0]
    for when, change in events:
        idle += max(0, 1024 - running) * (when - t)
        running, t = running + change, when
    return len(jobs), fits / busy, (fits + idle) / (busy + idle)


def test_the_readme_joblog_example_runs_as_written(
    run_cli: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = _readme_joblog_command()
    monkeypatch.chdir(ROOT)
    r = run_cli(*args)
    assert r.code == 0, r.err
    jobs, busy_share, share = _cm5_shares(ROOT / args[2])
    assert jobs == 1000
    m = re.search(r"^fits first DIMMs +([0-9.]+) % of node-time \(([0-9.]+) % of busy", r.out, re.M)
    assert m is not None, r.out
    # Printed to 2 decimals.
    assert float(m[1]) == round(100 * share, 2)
    assert float(m[2]) == round(100 * busy_share, 2)


@pytest.mark.parametrize(
    ("field", "good", "bad"),
    [("channels", 256, 257), ("dimms_per_channel", 256, 257), ("dimm_gib", 2.0**20, 2.0**21)],
)
def test_the_node_layout_has_the_simulators_limits(
    tmp_path: Path, field: str, good: float, bad: float
) -> None:
    # The same value is in range, or out of it, for [power.dimms] and for the analysis alike.
    def simulator(value: float) -> tracewatt.Config:
        return tracewatt.Config.from_dict(
            {
                "machine": {
                    "topology": {"kind": "single_switch", "nodes": 2},
                    "links": {"bandwidth_gbps": 1.0, "latency_ns": 0},
                },
                "jobs": [{"ranks": 2, "workload": {"kind": "pingpong"}}],
                "power": {"dimms": {field: value}},
            }
        )

    assert simulator(good).resolved()["power"]["dimms"][field] == good
    assert joblog.resolve_settings(None, {field: good}) == joblog.JoblogSettings(**{field: good})
    with pytest.raises(tracewatt.ConfigError, match=rf"power\.dimms\.{field}"):
        simulator(bad).validate()
    with pytest.raises(joblog.JoblogError, match=rf"^{field}: expected .*, got {bad!r}$"):
        joblog.resolve_settings(None, {field: bad})


# ----------------------------------------------------------------- the archive's logs (optional)


def needs_swf(f: Any) -> Any:
    """An optional test (run with ``-m optional``) that skips, saying why, without the logs."""
    return pytest.mark.optional(
        pytest.mark.skipif(
            not SWF_DIR.is_dir(),
            reason=f"needs the archive's SWF logs in {SWF_DIR} (optional data)",
        )(f)
    )


# Job counts of the archive's logs (the optional data's README).
REAL_LOGS = {
    "HPC2N-2002-2.2-cln": 202_871,
    "LANL-CM5-1994-4.1-cln": 122_060,
    "Sandia-Ross-2001-1.1-cln": 57_882,
}


def _reference(path: Path, cores: int, s: joblog.JoblogSettings) -> dict[str, float]:
    """The jobs' node-time, fitting node-time and DIMM-seconds computed another way: the whole
    log loaded at once by pandas, vectorised."""
    df = pd.read_csv(path, sep=r"\s+", comment=";", header=None)
    submit, wait, run, alloc, used, reqp, reqm = (
        df[i].to_numpy(float) for i in (1, 2, 3, 4, 6, 7, 9)
    )
    procs = np.where(alloc == -1, reqp, alloc)
    mem_per_proc = np.where(used >= 0, used, reqm)
    keep = (run > 0) & (procs > 0) & (submit >= 0) & (wait >= 0) & (mem_per_proc >= 0)
    nodes = np.ceil(procs[keep] / cores)
    mem_gib = mem_per_proc[keep] * procs[keep] / nodes / 2**20
    node_s = nodes * run[keep]
    fits = mem_gib <= s.channels * s.dimm_gib
    total = s.channels * s.dimms_per_channel
    bp = np.where(fits, s.channels, total)
    ideal = np.minimum(np.maximum(np.ceil(mem_gib / s.dimm_gib), 1), total)
    return {
        "jobs": float(len(df)),
        "analysed": float(keep.sum()),
        "busy_node_s": float(node_s.sum()),
        "fits_node_s": float(node_s[fits].sum()),
        "bp_dimm_s": float((bp * node_s).sum()),
        "ideal_dimm_s": float((ideal * node_s).sum()),
    }


@needs_swf
@pytest.mark.parametrize("name", sorted(REAL_LOGS))
@pytest.mark.parametrize("dimm_gib", [8.0, 1 / 64])
def test_archive_logs_with_memory_match_an_independent_computation(
    name: str, dimm_gib: float
) -> None:
    # 8 GiB DIMMs (the paper's node): every job of these 1990s machines fits the first DIMMs;
    # 16 MiB DIMMs (2 channels: 32 MiB first, 64 MiB per node): many do not.
    path = SWF_DIR / f"{name}.swf.gz"
    s = joblog.resolve_settings(None, {"dimm_gib": dimm_gib, "channels": 2})
    r = joblog.analyze(path, s)
    assert r.jobs == REAL_LOGS[name]
    ref = _reference(path, r.cores_per_node, s)
    assert r.jobs_analysed == ref["analysed"]
    assert r.busy_node_s == pytest.approx(ref["busy_node_s"], rel=1e-12)
    assert r.busy_share_fits_first_dimms == pytest.approx(
        ref["fits_node_s"] / ref["busy_node_s"], rel=1e-12
    )
    w = s.dimm_standby_w
    idle_s = r.idle_node_s
    idle_bp = s.channels if s.idle_node_gib <= s.channels * dimm_gib else 4
    idle_ideal = min(4, max(1, math.ceil(s.idle_node_gib / dimm_gib)))
    assert r.energy_j["bandwidth_preserving"] == pytest.approx(
        (ref["bp_dimm_s"] + idle_bp * idle_s) * w, rel=1e-12
    )
    assert r.energy_j["ideal"] == pytest.approx((ref["ideal_dimm_s"] + idle_ideal * idle_s) * w)
    assert r.energy_j["ideal"] <= r.energy_j["bandwidth_preserving"] <= r.energy_j["always_on"]
    assert r.idle_node_s >= 0.0
    if dimm_gib == 8.0:
        assert r.share_fits_first_dimms == 1.0


@needs_swf
def test_archive_log_without_memory_is_the_clear_error() -> None:
    path = SWF_DIR / "KTH-SP2-1996-2.1-cln.swf.gz"
    with pytest.raises(joblog.JoblogError, match=r"field 7.*field 10.*--assume-gib"):
        joblog.analyze(path, joblog.resolve_settings())
    r = joblog.analyze(path, joblog.resolve_settings(None, {"assume_gib": 1.0}))
    assert r.jobs == 28_476
    assert r.jobs_memory_assumed == r.jobs_analysed
