"""The `tracewatt` command: run, machine, presets, options, outputs and exit codes."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from conftest import (
    EXAMPLES,
    PINGPONG_TOML,
    CliResult,
    alive,
    descendants,
    run_process,
    start_process,
    write_toml,
)
from tracewatt import Results, _format, cli, simulate
from tracewatt.cli.progress import ProgressLine

Run = Callable[..., CliResult]


def test_run_and_compare_warn_of_a_timeline_bin_the_run_outgrew(
    run_cli: Run, pingpong_toml: Path
) -> None:
    """1 ps bins over a one-round ping-pong of some 15 us would be more than 2^20 bins: the run
    keeps fewer, wider ones and says so (the width itself is checked in the Rust limits test)."""
    short = ["--set", "jobs[0].workload.iterations=1", "--set", "jobs[0].workload.interval_us=10"]
    for cmd in ("run", "compare"):
        r = run_cli(cmd, pingpong_toml, *short, "--set", "power.timeline_bin_us=1e-6")
        assert r.code == 0, r.err
        assert re.search(
            r"^tracewatt: warning: power.timeline_bin_us = 0.000001 us would need more than "
            r"1048576 bins for this run; the timeline's bins are 0.0000\d+ us wide$",
            r.err,
            re.M,
        ), r.err
        r = run_cli(cmd, pingpong_toml, *short, "--set", "power.timeline_bin_us=1")
        assert r.code == 0 and "warning" not in r.err, r.err


def test_run_prints_summary_table(run_cli: Run, pingpong_toml: Path) -> None:
    r = run_cli("run", pingpong_toml)
    assert r.code == 0, r.err
    for label in ("makespan", "messages", "message latency", "p50", "p99", "packets", "hops"):
        assert label in r.out
    assert "pp" in r.out  # the job's line
    assert "\x1b[" not in r.out + r.err  # no colour codes


def test_run_summary_names_the_policies_and_link_power(run_cli: Run, pingpong_toml: Path) -> None:
    """The defaults of docs/config.md: EEE with a 600 us timeout on 10GBASE-T (sleep 2.88 us) and
    the 17 us measured wake, paired control; spin waits; DIMMs always on; no coalescing."""
    r = run_cli("run", pingpong_toml)
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    for expected in (
        "link power            EEE: idle timeout 600 us, sleep 2.88 us, wake 17 us, 10gbase-t,"
        " paired",
        "MPI waits             spin",
        "DIMMs                 always_on",
        "NIC coalescing        off",
    ):
        assert expected in lines
    assert any(
        x.startswith("link LPI share        ") and x.endswith(" % of link time") for x in lines
    )
    assert any(x.startswith("link wakes            ") and "delay added" in x for x in lines)
    # 10^6 polling iterations of 10 ns (the documented defaults) before the low-power wait.
    r = run_cli("run", pingpong_toml, "--set", 'mpi.wait.policy="mwait"')
    assert "MPI waits             mwait after spinning 10 ms" in r.out.splitlines()
    r = run_cli("run", pingpong_toml, "--set", 'power.links.policy="always_on"')
    assert "link power            always on" in r.out.splitlines()


_SI = {"": 1.0, "m": 1e-3, "u": 1e-6, "k": 1e3, "M": 1e6, "G": 1e9}


def test_energies_print_under_si_prefixes() -> None:
    """1.519e+05 J is 151.9 kJ, as 0.002634 s is 2.634 ms."""
    assert _format.joules(151_900.0) == "151.9 kJ"
    assert _format.joules(2.41613e11) == "241.6 GJ"
    assert _format.joules(5_523_000.0) == "5.523 MJ"
    assert _format.joules(21.09) == "21.09 J"
    assert _format.joules(0.01234) == "12.34 mJ"
    assert _format.joules(-1500.0) == "-1.5 kJ"
    assert _format.joules(0.0) == "0 J"
    assert _format.joules(None) == "-"
    assert _format.seconds(0.002634) == "2.634 ms"
    assert _format.seconds(90.5) == "90.5 s"


def test_run_summary_energy_table_matches_summary_json(
    run_cli: Run, pingpong_toml: Path, tmp_path: Path
) -> None:
    r = run_cli("run", pingpong_toml, "-o", tmp_path / "res")
    assert r.code == 0, r.err
    summary = json.loads((tmp_path / "res" / "summary.json").read_text())
    rows = {x.split()[0]: x.split()[1:] for x in r.out.splitlines() if x.endswith(" W")}
    kinds = set(summary["energy_j"])
    assert kinds <= set(rows)
    for kind in kinds:
        energy, power = summary["energy_j"][kind], summary["avg_power_w"][kind]
        value, unit = rows[kind][:2]
        # Four significant digits under an SI prefix, as times are.
        assert len(value.replace(".", "").lstrip("0")) <= 4, value
        assert float(value) * _SI[unit.removesuffix("J")] == pytest.approx(energy, rel=5e-4)
        assert 1.0 <= float(value) < 1000.0
        assert rows[kind][2:] == [f"{power:,.1f}", "W"]
    # Times in the makespan's format: 20 rounds of 100 us plus the round trips, in ms.
    assert re.search(r"^makespan +2\.0\d+ ms$", r.out, re.M)
    assert re.search(r"^wall time +[\d.]+ [mu]?s$", r.out, re.M)
    assert re.search(r"^events per second +[\d,]+$", r.out, re.M)


def test_compare_table_names_the_policies_and_formats_times(
    run_cli: Run, pingpong_toml: Path, tmp_path: Path
) -> None:
    r = run_cli("compare", pingpong_toml, "-o", tmp_path / "cmp")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert re.fullmatch(r"setting +baseline +policy", lines[0])
    assert re.fullmatch(
        r"link power +always on +EEE: idle timeout 600 us, sleep 2\.88 us, wake 17 us,"
        r" 10gbase-t, paired",
        lines[2],
    )
    summary = json.loads((tmp_path / "cmp" / "summary.json").read_text())
    makespan = next(x for x in lines if x.startswith("makespan "))
    base_s, policy_s = summary["baseline"]["makespan_s"], summary["makespan_s"]
    assert makespan.split()[1:5] == [
        *_format.seconds(base_s).split(),
        *_format.seconds(policy_s).split(),
    ]
    timing = json.loads((tmp_path / "cmp" / "timing.json").read_text())
    assert timing["events"] == summary["events"]
    assert not (tmp_path / "cmp" / "baseline" / "timing.json").exists()


def test_importing_the_cli_loads_neither_pandas_nor_pyarrow() -> None:
    """`tracewatt --version` and `--help` must start fast (scripts/bench_startup.py): building
    the parser imports no table library."""
    code = (
        "import sys, tracewatt.cli\n"
        "tracewatt.cli.build_parser()\n"
        "print(sorted(m for m in ('pandas', 'pyarrow') if m in sys.modules))\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert p.stdout == "[]\n", p.stderr


def test_run_json_equals_summary_file(run_cli: Run, pingpong_toml: Path, tmp_path: Path) -> None:
    out = tmp_path / "res"
    r = run_cli("run", pingpong_toml, "--json", "-o", out)
    assert r.code == 0, r.err
    parsed = json.loads(r.out)  # nothing else on stdout
    assert parsed == json.loads((out / "summary.json").read_text())
    assert r.out == (out / "summary.json").read_text()
    assert parsed["messages"]["count"] == 40
    res = Results.read(out)
    assert res.summary == parsed
    assert len(res.links) == 4


def test_run_quiet_prints_nothing(run_cli: Run, pingpong_toml: Path) -> None:
    r = run_cli("run", pingpong_toml, "--quiet")
    assert r.code == 0
    assert r.out == ""
    assert r.err == ""


def test_run_without_output_dir_writes_nothing(
    run_cli: Run, pingpong_toml: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    before = set(tmp_path.iterdir())
    assert run_cli("run", pingpong_toml, "-q").code == 0
    assert set(tmp_path.iterdir()) == before


def test_run_set_and_seed(run_cli: Run, pingpong_toml: Path) -> None:
    r = run_cli(
        "run",
        pingpong_toml,
        "--json",
        "--seed",
        "4",
        "--set",
        "machine.links.bandwidth_gbps=40",
        "--set",
        "jobs[0].workload.iterations=3",
        "--set",
        'jobs[0].name="renamed"',
        "--set",
        "machine.switching=store_and_forward",  # a bare word is taken as a string
    )
    assert r.code == 0, r.err
    s = json.loads(r.out)
    assert s["seed"] == 4
    assert s["config"]["machine"]["links"]["bandwidth_gbps"] == 40.0
    assert s["config"]["machine"]["switching"] == "store_and_forward"
    assert s["jobs"][0]["name"] == "renamed"
    assert s["messages"]["count"] == 6


def test_a_bad_set_is_reported_against_the_option(run_cli: Run, pingpong_toml: Path) -> None:
    """A typo or a refused value in --set names the option and its text, not the file; an
    error of the file itself still names the file."""
    r = run_cli("run", pingpong_toml, "--set", "power.links.idle_timeot_us=5")
    assert r.code == 2
    assert r.err.startswith(
        "tracewatt: error: --set 'power.links.idle_timeot_us=5': power.links.idle_timeot_us: "
        "unknown field `idle_timeot_us`"
    ), r.err
    r = run_cli("run", pingpong_toml, "--set", "jobs.0.workload.bytes=-3")
    assert r.code == 2
    assert r.err.startswith(
        "tracewatt: error: --set 'jobs.0.workload.bytes=-3': jobs[0].workload.bytes: "
    ), r.err
    broken = pingpong_toml.parent / "broken.toml"
    broken.write_text(pingpong_toml.read_text() + "\n[output]\ncolour = 1\n")
    r = run_cli("run", broken, "--set", "seed=2")
    assert r.code == 2
    assert r.err.startswith(f"tracewatt: error: {broken}: output.colour: unknown field"), r.err


def test_a_results_folder_that_does_not_exist_is_named_so(run_cli: Run, tmp_path: Path) -> None:
    for command in (["analyze", "idle"], ["report"]):
        r = run_cli(*command, tmp_path / "nosuchdir")
        assert (r.code, r.out) == (2, "")
        assert r.err == f"tracewatt: error: {tmp_path / 'nosuchdir'}: no such directory\n"


def test_latency_percentiles_are_exact_or_marked(
    run_cli: Run, pingpong_toml: Path, tmp_path: Path
) -> None:
    """The ping-pong's messages all take the same time (mean = max): exact percentiles are the
    maximum; the summary's binned ones are marked ~ (the lower edge of the max's bucket)."""
    r = run_cli("run", pingpong_toml)
    m = re.search(
        r"^message latency +mean (\S+ \S+)  p50 (\S+ \S+)  p99 (\S+ \S+)  max (\S+ \S+)$",
        r.out,
        re.M,
    )
    assert m is not None, r.out
    mean, p50, p99, top = m.groups()
    assert mean == top
    assert p50.startswith("~") and p99.startswith("~")
    r = run_cli("run", pingpong_toml, "--set", "output.messages=true")
    m = re.search(
        r"^message latency +mean (\S+ \S+)  p50 (\S+ \S+)  p99 (\S+ \S+)  max (\S+ \S+)$",
        r.out,
        re.M,
    )
    assert m is not None, r.out
    assert m.group(2) == m.group(3) == m.group(4) == m.group(1)


def test_set_without_equals_is_usage_error(run_cli: Run, pingpong_toml: Path) -> None:
    r = run_cli("run", pingpong_toml, "--set", "seed")
    assert r.code == 2
    assert r.err.startswith("tracewatt: error: ")
    assert "PATH=VALUE" in r.err


def test_machine(run_cli: Run) -> None:
    cfg = EXAMPLES / "fattree-stencil4d.toml"
    r = run_cli("machine", cfg)
    assert r.code == 0, r.err
    for label in ("nodes", "switches", "links", "diameter", "link class"):
        assert label in r.out
    assert "288" in r.out
    j = run_cli("machine", cfg, "--json")
    info = json.loads(j.out)
    assert info["nodes"] == 288
    assert info["preset"] == "tracerp-fattree-288"
    assert {"switches", "links", "diameter_hops", "link_classes"} <= set(info)


def test_machine_on_a_100k_node_torus_is_fast(run_cli: Run, tmp_path: Path) -> None:
    # The diameter used to be an all-pairs search: more than 90 s here. By the torus's symmetry
    # one search gives it: half of each ring, 25 + 25 + 20 switch hops, plus the 2 node links.
    cfg = tmp_path / "torus.toml"
    cfg.write_text(
        '[machine]\ntopology = { kind = "torus", dims = [50, 50, 40] }\n'
        "links = { bandwidth_gbps = 10.0 }\n"
        '[[jobs]]\nranks = 2\nworkload = { kind = "pingpong" }\n'
    )
    t0 = time.monotonic()
    r = run_cli("machine", cfg, "--json")
    assert r.code == 0, r.err
    assert time.monotonic() - t0 < 10
    info = json.loads(r.out)
    assert (info["nodes"], info["diameter_hops"]) == (100_000, 72)


def test_presets_name_and_describe_each_machine(run_cli: Run) -> None:
    """Each preset's line is its name, then a description that gives its node count (TraceRP
    Table 1, Miwa et al. 2014, the 33 x 8 x 4 benchmark dragonfly)."""
    r = run_cli("presets")
    assert r.code == 0
    lines = dict(line.split(None, 1) for line in r.out.splitlines())
    nodes = {
        "miwa2014-16node": "16 nodes",
        "tracerp-fattree-288": "288 nodes",
        "tracerp-torus-4x8x8": "256 nodes",
        "tracerp-dragonfly-342": "342 nodes",
        "bench-dragonfly-1056": "1,056 nodes",
        "codes-dragonfly-1056": "1,056 nodes",
    }
    assert sorted(lines) == sorted(nodes)
    for name, count in nodes.items():
        assert count in lines[name], lines[name]
    listed = json.loads(run_cli("presets", "--json").out)
    assert [p["name"] for p in listed] == list(lines)
    assert {p["name"]: p["description"] for p in listed} == lines


def test_usage_errors_exit_2(run_cli: Run, tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as e:
        run_cli("frobnicate")
    assert e.value.code == 2
    with pytest.raises(SystemExit) as e:
        run_cli("run")
    assert e.value.code == 2
    r = run_cli("run", tmp_path / "nope.toml")
    assert r.code == 2
    assert r.err == f"tracewatt: error: {tmp_path / 'nope.toml'}: no such file\n"


def test_help_and_version(run_cli: Run) -> None:
    with pytest.raises(SystemExit) as e:
        run_cli("--help")
    assert e.value.code == 0
    with pytest.raises(SystemExit) as e:
        run_cli("--version")
    assert e.value.code == 0


def test_console_script_and_module(pingpong_toml: Path) -> None:
    exe = shutil.which("tracewatt")
    assert exe is not None, "the `tracewatt` console script is not installed"
    p = subprocess.run(
        [exe, "run", str(pingpong_toml), "--json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["messages"]["count"] == 40
    # Not a TTY: no progress bar on stderr.
    assert p.stderr == ""
    r = run_process(["presets"])
    assert r.code == 0 and "tracerp-torus-4x8x8" in r.out


def test_workload_error_exits_3(run_cli: Run, tmp_path: Path) -> None:
    cfg = tmp_path / "one.toml"
    cfg.write_text(
        """
[machine]
topology = { kind = "single_switch", nodes = 2 }
links = { bandwidth_gbps = 10.0 }

[[jobs]]
ranks = 1
workload = { kind = "pingpong" }
"""
    )
    r = run_cli("run", cfg)
    assert r.code == 3
    assert r.err.startswith(f"tracewatt: error: {cfg}")
    assert "jobs[0].workload" in r.err
    assert "ranks" in r.err


def _json_from(r: CliResult) -> Any:
    return json.loads(r.out)


def _run_on_a_terminal(*args: str | os.PathLike[str]) -> tuple[int, str, bytes]:
    """``python -m tracewatt ARGS`` with stderr on a pseudo-terminal: (code, stdout, stderr)."""
    master, slave = pty.openpty()
    try:
        p = subprocess.run(
            [sys.executable, "-m", "tracewatt", *map(str, args)],
            stdout=subprocess.PIPE,
            stderr=slave,
            text=True,
            timeout=120,
            check=False,
        )
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        return p.returncode, p.stdout, b"".join(chunks)
    finally:
        os.close(master)


def test_progress_on_a_terminal(tmp_path: Path) -> None:
    """With stderr on a terminal the progress line shows simulated time against the estimate
    (rank 0's compute: 3,000,000 rounds x 100 us = 300 s), the share done and an ETA; stdout is
    unchanged, and --quiet and --json turn it off."""
    cfg = write_toml(
        tmp_path / "long.toml", PINGPONG_TOML.replace("iterations = 20", "iterations = 3000000")
    )
    code, out, err = _run_on_a_terminal("run", cfg)
    assert code == 0
    assert "makespan" in out
    lines = [x.strip() for x in err.decode().split("\r") if x.strip()]
    assert lines, "no progress line was drawn"
    line = lines[0]
    assert re.fullmatch(
        r"\[#* *\] +\d+ % sim \S+ \S+ of ~300 s \| [\d,]+ events \([\d,]+ events/s\)"
        r" \| \S+ \S+, ETA \S+ \S+",
        line,
    ), line
    assert b"\x1b[" not in err  # no colour or cursor escapes, only carriage returns
    for flag in ("--quiet", "--json"):
        code, out, err = _run_on_a_terminal("run", cfg, flag)
        assert code == 0 and err == b""
        assert (out == "") == (flag == "--quiet")


def test_progress_text() -> None:
    """Share, bar and ETA from the estimate; past it (or without one) only what is known."""
    bar = ProgressLine(io.StringIO(), estimate_s=10.0)
    # 2.5 s of 10 s simulated in 1 s of wall time: 25 %, 7.5 s left at 2.5 s per wall second.
    assert bar.sim_text(2.5, 1000, 1.0) == (
        "[#####               ]  25 % sim 2.5 s of ~10 s | 1,000 events (1,000 events/s)"
        " | 1 s, ETA 3 s"
    )
    assert bar.sim_text(12.0, 4000, 2.0) == "sim 12 s | 4,000 events (2,000 events/s) | 2 s"
    no_estimate = ProgressLine(io.StringIO())
    assert no_estimate.sim_text(0.5, 10, 0.5).startswith("sim 500 ms | 10 events")


def test_interrupt_exits_130(tmp_path: Path) -> None:
    cfg = tmp_path / "long.toml"
    cfg.write_text(LONG_RUN)
    p = _start(["run", str(cfg)], 3.0)
    _, out, err = _interrupt(p)
    assert p.returncode == 130, err
    assert out == ""
    assert err.startswith("tracewatt: error: ")
    assert "interrupted" in err


# --------------------------------------------------------------------------- output directory

# About a minute of simulation on one core.
LONG_RUN = """
[machine]
preset = "bench-dragonfly-1056"

[[jobs]]
ranks = 1056
workload = { kind = "uniform_random", messages = 2000, bytes = 4096 }
"""


@pytest.mark.parametrize("command", ["run", "compare"])
def test_unwritable_output_dir_fails_before_simulating(
    command: str, run_cli: Run, tmp_path: Path
) -> None:
    # A file where the directory should go: refused at once with the full path, before the
    # simulation (a config that would run for minutes shows that nothing ran).
    cfg = tmp_path / "long.toml"
    cfg.write_text(LONG_RUN)
    blocker = tmp_path / "file"
    blocker.write_text("")
    t0 = time.monotonic()
    r = run_cli(command, cfg, "-o", blocker / "out")
    assert r.code == 2, r.err
    assert time.monotonic() - t0 < 5
    assert r.out == ""
    assert r.err.startswith(f"tracewatt: error: {blocker / 'out'}: cannot write the results")


def test_relative_output_dir_is_named_in_full(
    run_cli: Run, pingpong_toml: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "res").mkdir()
    (tmp_path / "res" / "old.txt").write_text("x")
    r = run_cli("run", pingpong_toml, "-o", "res")
    assert r.code == 2
    assert r.err == (
        f"tracewatt: error: {tmp_path / 'res'}: the output directory is not empty; "
        "use --force to replace its contents\n"
    )
    assert (tmp_path / "res" / "old.txt").read_text() == "x"  # untouched


def test_compare_force_clears_stale_results(
    run_cli: Run, pingpong_toml: Path, tmp_path: Path
) -> None:
    out = tmp_path / "res"
    (out / "baseline" / "old").mkdir(parents=True)
    (out / "notes.txt").write_text("stale")
    assert run_cli("compare", pingpong_toml, "-o", out, "-q").code == 2
    r = run_cli("compare", pingpong_toml, "-o", out, "-q", "--force")
    assert r.code == 0, r.err
    assert not (out / "notes.txt").exists()
    assert not (out / "baseline" / "old").exists()
    assert (out / "summary.json").is_file() and (out / "baseline" / "summary.json").is_file()
    # An existing empty directory is fine without --force.
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run_cli("run", pingpong_toml, "-o", empty, "-q").code == 0
    assert (empty / "summary.json").is_file()


@pytest.mark.parametrize("command", ["run", "compare"])
def test_force_keeps_the_previous_results_when_the_run_fails(
    command: str, run_cli: Run, pingpong_toml: Path, tmp_path: Path
) -> None:
    """`--force` empties DIR only once there are results to replace it with: a configuration
    the parser refuses, one the workload's construction refuses (both exit 2) and a run that
    cannot complete (exit 3) leave the previous results as they were."""
    out = tmp_path / "res"
    assert run_cli(command, pingpong_toml, "-o", out, "-q").code == 0
    before = {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    # Two ranks that each wait for the other's message first.
    stuck = tmp_path / "stuck.txt"
    stuck.write_text("0 init\n0 recv 1 100\n1 init\n1 recv 0 100\n0 finalize\n1 finalize\n")
    stuck_toml = write_toml(
        tmp_path / "stuck.toml",
        PINGPONG_TOML.split("[jobs.workload]")[0] + f"[jobs.trace]\npath = '{stuck}'\n",
    )
    failures = [
        (pingpong_toml, ["--set", "machine.links.bandwidth_gbps=0"], 2, "bandwidth_gbps: must"),
        (pingpong_toml, ["--set", "jobs[0].workload={kind='a2a', algo='ring'}"], 2, "`ring`"),
        (stuck_toml, [], 3, "expected recv: a send matching this receive"),
    ]
    for cfg, overrides, code, message in failures:
        r = run_cli(command, cfg, "-o", out, "-q", "--force", *overrides)
        assert r.code == code and message in r.err, r.err
        assert {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()} == before


# --------------------------------------------------------------------------- Ctrl-C


def _start(args: list[str], after_s: float) -> subprocess.Popen[str]:
    """``python -m tracewatt ARGS``, still running ``after_s`` seconds later."""
    p = start_process(args)
    time.sleep(after_s)
    assert p.poll() is None, "the run finished before it could be interrupted"
    return p


def _interrupt(p: subprocess.Popen[str]) -> tuple[float, str, str]:
    """Sends SIGINT to ``p`` alone (as ``kill -INT`` does); returns the seconds it took to exit,
    its stdout and its stderr."""
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    return time.monotonic() - t0, out, err


def test_interrupted_compare_stops_both_runs(tmp_path: Path) -> None:
    cfg = tmp_path / "long.toml"
    cfg.write_text(LONG_RUN)
    out = tmp_path / "res"
    p = _start(["compare", str(cfg), "-o", str(out)], 3.0)
    took, stdout, err = _interrupt(p)
    assert p.returncode == 130, err
    assert took < 3.0, f"compare took {took:.1f} s to stop"
    assert stdout == ""
    assert err == "tracewatt: error: interrupted\n"
    assert list(out.iterdir()) == []  # created by the check, nothing written


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_interrupted_sweep_terminates_its_workers(tmp_path: Path) -> None:
    spec = tmp_path / "long.toml"
    spec.write_text(
        """
name = "long"
[base]
machine.preset = "bench-dragonfly-1056"
[[base.jobs]]
name = "ur"
ranks = 1056
workload = { kind = "uniform_random", messages = 2000, bytes = 4096 }
[axes]
seed = [1, 2]
"""
    )
    out = tmp_path / "res"
    p = _start(["sweep", str(spec), "-o", str(out), "-j", "2"], 4.0)
    workers = [
        k for k in descendants(p.pid) if "spawn_main" in Path(f"/proc/{k}/cmdline").read_text()
    ]
    assert len(workers) == 2
    took, stdout, err = _interrupt(p)
    assert p.returncode == 130, err
    assert took < 3.0, f"the sweep took {took:.1f} s to stop"
    assert stdout == ""
    assert err.endswith("tracewatt: error: interrupted\n"), err
    assert not [w for w in workers if alive(w)]
    # The dataset of what finished: nothing.
    assert len(pd.read_parquet(out / "sweep.parquet")) == 0


def test_report_format_only_with_figures(
    run_cli: Run, pingpong: dict[str, Any], tmp_path: Path
) -> None:
    d = simulate(pingpong).write(tmp_path / "r")
    r = run_cli("report", d, "--format", "svg")
    assert (r.code, r.out) == (2, "")
    assert r.err == (
        "tracewatt: error: --format svg: only with --figures DIR (the HTML embeds PNG)\n"
    )
    assert not (d / "report.html").exists()
    r = run_cli("report", d, "--figures", tmp_path / "figs", "--format", "svg", "-q")
    assert r.code == 0, r.err
    assert sorted(p.suffix for p in (tmp_path / "figs").iterdir()) == [".svg"] * 4


def test_every_command_and_option_is_in_docs_cli_md() -> None:
    """docs/cli.md is the reference: every subcommand and every option of the parser appears in
    it (an option by one of its spellings, as written on a command line)."""
    import argparse

    doc = (Path(__file__).resolve().parent.parent / "docs" / "cli.md").read_text()

    def walk(
        p: argparse.ArgumentParser, path: tuple[str, ...]
    ) -> list[tuple[tuple[str, ...], list[str]]]:
        out: list[tuple[tuple[str, ...], list[str]]] = [(path, [])]
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sub in a.choices.items():
                    out += walk(sub, (*path, name))
            elif a.option_strings and "--help" not in a.option_strings:
                out.append((path, list(a.option_strings)))
        return out

    missing = []
    for path, options in walk(cli.build_parser(), ()):
        if not options:
            if path and f"tracewatt {' '.join(path)}" not in doc:
                missing.append(" ".join(path))
        elif not any(re.search(rf"[`\[ ]{re.escape(o)}\b", doc) for o in options):
            missing.append(f"{' '.join(path)} {options[0]}")
    assert missing == [], missing


def test_analyze_idle_says_how_each_row_was_counted(run_cli: Run, tmp_path: Path) -> None:
    """The tutorial's FT run on paired 10GBASE-T links, keeping the pairs' own idle intervals at
    10 and 600 us: rows at those timeouts count a paired link once (exact, per link); at 100 us,
    between the kept thresholds, each direction alone (interp., per dir.), and the caveat names
    that timeout and no other."""
    out = tmp_path / "ft"
    r = run_cli(
        "run",
        EXAMPLES / "tutorial" / "ft.toml",
        "-q",
        "-o",
        out,
        "--set",
        "output.pair_idle=true",
        "--set",
        "output.idle_thresholds_us=[10.0, 600.0]",
    )
    assert r.code == 0, r.err
    r = run_cli("analyze", "idle", out, "--timeouts", "10,100,600", "--wakes", "17")
    assert r.code == 0, r.err
    counted = {
        line.split()[0]: " ".join(line.split()[7:10]).replace(" confirm", "")
        for line in r.out.splitlines()[2:5]
    }
    assert counted == {
        "10": "exact, per link",
        "100": "interp., per dir.",
        "600": "exact, per link",
    }
    (caveat,) = [x for x in r.out.splitlines() if x.startswith("caveat:")]
    assert "at idle timeout(s) 100 us their rows count each direction alone" in caveat
