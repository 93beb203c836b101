"""Link policies side by side (``tracewatt compare --policies``), their screening
(``analyze idle --policy``), and the oracle as the bound."""

from __future__ import annotations

import io
import math
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from conftest import CliResult, write_toml
from tracewatt import Config
from tracewatt.compare import POLICY_COLUMNS, compare_policies, link_policy_config

Run = Callable[..., CliResult]

# The paper's measured switch: 3.44 W a port active (docs/config.md, [power.switch]); the NIC
# ports take the switch port's figures.
PORT_ACTIVE_W = 3.44
WAKE_S = 17e-6

# examples/pingpong.toml's schedule: 20 rounds 1,000 us apart, above the 600 us timeout.
PINGPONG_1MS = """\
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
interval_us = 1000.0
"""


@pytest.fixture
def pingpong_1ms(tmp_path: Path) -> Path:
    return write_toml(tmp_path / "pp.toml", PINGPONG_1MS)


def test_the_policies_table_prices_each_policy_against_always_on(
    run_cli: Run, pingpong_1ms: Path, tmp_path: Path
) -> None:
    r = run_cli("compare", pingpong_1ms, "--policies", "timeout", "-o", tmp_path / "out")
    assert r.code == 0, r.err
    df = pd.read_parquet(tmp_path / "out" / "policies.parquet")
    assert list(df.columns) == list(POLICY_COLUMNS)
    assert list(df["policy"]) == ["always_on", "timeout"]
    base, timeout = df.iloc[0], df.iloc[1]
    # Two links, four ports (a switch and a NIC port each), always active.
    assert base["link_energy_j"] == pytest.approx(4 * PORT_ACTIVE_W * base["makespan_s"])
    assert (base["link_saving_j"], base["saving_pct"], base["wakes"]) == (0.0, 0.0, 0)
    # Rounds 2 to 20 find both (paired) links asleep: each wakes once a round, and the ping
    # waits 17 us for each wake.
    assert timeout["wakes"] == 19 * 2
    assert timeout["wake_delay_s"] == pytest.approx(38 * WAKE_S)
    assert timeout["link_saving_j"] == pytest.approx(
        base["link_energy_j"] - timeout["link_energy_j"]
    )
    assert timeout["link_saving_pct"] == pytest.approx(
        100 * timeout["link_saving_j"] / base["link_energy_j"]
    )
    assert timeout["saving_j"] == pytest.approx(base["energy_j"] - timeout["energy_j"])
    assert timeout["slowdown_pct"] == pytest.approx(
        100 * (timeout["makespan_s"] / base["makespan_s"] - 1)
    )
    # No oracle ran: no share, and the table says how to get one.
    assert df["oracle_share_pct"].isna().all()
    assert "add oracle to --policies" in r.out
    lines = r.out.splitlines()
    assert lines[0].split() == [
        "policy",
        "link",
        "energy",
        "link",
        "saved",
        "of",
        "links",
        "energy",
        "saved",
        "of",
        "total",
        "slowdown",
        "wakes",
        "of",
        "oracle",
    ]
    row = lines[3].split()
    assert row[0] == "timeout" and row[-2] == "38" and row[-1] == "-"


def test_each_distinct_configuration_runs_once(pingpong_1ms: Path) -> None:
    # always_on is the baseline itself, and a name given twice is one policy.
    c = compare_policies(Config.load(pingpong_1ms), ["always_on", "timeout", "timeout"])
    assert list(c.runs) == ["always_on", "timeout"]
    assert list(c.table["policy"]) == ["always_on", "timeout"]


def test_a_policy_applies_to_every_link_class_and_nothing_else(tmp_path: Path) -> None:
    # A fat-tree with an always-on override per level and MPI waits in mwait: the variant
    # puts every link table under the policy and keeps the baseline's waits (spin).
    cfg = Config.from_toml(
        """
[machine.topology]
kind = "fat_tree"
levels = 2
radix = 4
[machine.links]
bandwidth_gbps = 10.0
[power.node]
policy = "always_on"
[[power.tree]]
policy = "always_on"
idle_timeout_us = 50.0
[mpi.wait]
policy = "mwait"
[[jobs]]
name = "a"
ranks = 4
[jobs.workload]
kind = "pingpong"
iterations = 2
""",
        "ft.toml",
    )
    power = link_policy_config(cfg, "timeout").resolved()["power"]
    assert power["links"]["policy"] == "timeout"
    assert power["node"]["policy"] == "timeout"
    assert power["tree"][0] == {**power["tree"][0], "policy": "timeout", "idle_timeout_us": 50.0}
    assert link_policy_config(cfg, "timeout").resolved()["mpi"]["wait"]["policy"] == "spin"


def test_an_unknown_policy_is_a_usage_error_naming_the_option_and_the_policies(
    run_cli: Run, pingpong_1ms: Path
) -> None:
    r = run_cli("compare", pingpong_1ms, "--policies", "timeout,bogus")
    assert r.code == 2
    assert "--policies 'bogus'" in r.err
    assert "`always_on`" in r.err and "`timeout`" in r.err
    r = run_cli("compare", pingpong_1ms, "--policies", " , ")
    assert r.code == 2 and "--policies" in r.err


def test_the_json_table_is_the_parquet_one(
    run_cli: Run, pingpong_1ms: Path, tmp_path: Path
) -> None:
    r = run_cli("compare", pingpong_1ms, "--policies", "timeout", "--json", "-o", tmp_path / "o")
    assert r.code == 0, r.err
    printed = pd.read_json(io.StringIO(r.out), orient="records")
    written = pd.read_parquet(tmp_path / "o" / "policies.parquet")
    assert list(printed["policy"]) == list(written["policy"])
    assert printed["link_energy_j"].tolist() == pytest.approx(written["link_energy_j"].tolist())
    assert math.isnan(written["oracle_share_pct"].iloc[1])
