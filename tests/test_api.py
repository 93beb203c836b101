"""The Python API: simulate from a path, a dict and a Config; Results tables and summary;
Config helpers; pickling; the machine description and presets."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest

import tracewatt
from conftest import PINGPONG_TOML
from tracewatt import Config, Results

EXPECTED_COLUMNS: dict[str, dict[str, str]] = {
    "links": {
        "link_id": "i",
        "src": "s",
        "dst": "s",
        "kind": "s",
        "bandwidth_bps": "i",
        "bytes": "i",
        "packets": "i",
        "busy_s": "f",
        "idle_count": "i",
        "idle_s": "f",
    },
    "idle_hist": {"link_id": "i", "bin_lo_s": "f", "bin_hi_s": "f", "count": "i", "total_s": "f"},
    "idle_thresholds": {"link_id": "i", "threshold_s": "f", "count": "i", "total_s": "f"},
    "ranks": {
        "job": "s",
        "rank": "i",
        "node": "i",
        "finish_s": "f",
        "compute_s": "f",
        "wait_s": "f",
        "sends": "i",
        "bytes_sent": "i",
    },
    "jobs": {
        "job": "s",
        "ranks": "i",
        "nodes": "i",
        "start_s": "f",
        "completion_s": "f",
        "runtime_s": "f",
    },
}


def _check_dtype(series: pd.Series[Any], kind: str) -> bool:
    if kind == "i":
        return bool(series.dtype == "int64")
    if kind == "f":
        return bool(series.dtype == "float64")
    return pd.api.types.is_string_dtype(series.dtype)


def test_simulate_from_path_dict_and_config_agree(
    pingpong: dict[str, Any], pingpong_toml: Path
) -> None:
    from_path = tracewatt.simulate(pingpong_toml)
    from_str_path = tracewatt.simulate(str(pingpong_toml))
    from_dict = tracewatt.simulate(pingpong)
    from_config = tracewatt.simulate(Config.from_toml(PINGPONG_TOML, "x.toml"))
    for r in (from_str_path, from_dict, from_config):
        assert r.summary["makespan_s"] == from_path.summary["makespan_s"]
        assert r.summary["messages"] == from_path.summary["messages"]
        pd.testing.assert_frame_equal(r.links, from_path.links)
        pd.testing.assert_frame_equal(r.ranks, from_path.ranks)


def test_tables_columns_and_dtypes(pingpong: dict[str, Any]) -> None:
    res = tracewatt.simulate(pingpong)
    for name, cols in EXPECTED_COLUMNS.items():
        df = getattr(res, name)
        assert isinstance(df, pd.DataFrame)
        # The core may add columns (e.g. power); these must be there, in this order.
        assert [c for c in df.columns if c in cols] == list(cols), name
        for col, kind in cols.items():
            assert _check_dtype(df[col], kind), f"{name}.{col}: {df[col].dtype}"
    # single switch, 2 nodes: 2 links, 4 directions
    assert len(res.links) == 4
    assert set(res.links["kind"]) == {"node"}
    assert len(res.ranks) == 2
    assert list(res.jobs["job"]) == ["pp"]
    # Every byte sent crossed two link directions (node -> switch -> node).
    assert res.links["bytes"].sum() >= 2 * res.ranks["bytes_sent"].sum()
    assert (res.links["busy_s"] <= res.summary["makespan_s"] + 1e-12).all()


# The columns of the tables a run without messages leaves empty, and their kinds in
# crates/tracewatt-sim/src/results.rs (Column::U64 "i", F64 "f", Str "s").
EMPTY_COLUMNS: dict[str, dict[str, str]] = {
    "idle_hist": EXPECTED_COLUMNS["idle_hist"],
    "timeline": {"t_start_s": "f", "t_end_s": "f", "total_w": "f"},
    "messages": {
        "job": "s",
        "src_rank": "i",
        "dst_rank": "i",
        "bytes": "i",
        "start_s": "f",
        "end_s": "f",
        "latency_s": "f",
    },
    "message_wake_hops": {"message": "i", "threshold_s": "f", "hops": "i"},
}
# How the result files store each kind (Parquet physical type).
PARQUET_TYPES = {"i": "INT64", "f": "DOUBLE", "s": "BYTE_ARRAY"}


def test_empty_tables_keep_their_column_types(tmp_path: Path) -> None:
    # Two ranks that send nothing: no idle interval, no timeline bin, no message.
    res = tracewatt.simulate(
        {
            "machine": {
                "topology": {"kind": "single_switch", "nodes": 2},
                "links": {"bandwidth_gbps": 1.0, "latency_ns": 0},
            },
            "jobs": [{"ranks": 2, "workload": {"kind": "uniform_random", "messages": 0}}],
            "output": {"messages": True},
        }
    )
    d = res.write(tmp_path / "r")
    back = Results.read(d)
    for name, cols in EMPTY_COLUMNS.items():
        for r in (res, back):
            df = r.tables[name]
            assert len(df) == 0, name
            assert [c for c in df.columns if c in cols] == list(cols), name
            for col, kind in cols.items():
                assert _check_dtype(df[col], kind), f"{name}.{col}: {df[col].dtype}"
        schema = pq.ParquetFile(d / f"{name}.parquet").schema
        stored = {schema.column(i).name: schema.column(i) for i in range(len(schema))}
        for col, kind in cols.items():
            assert stored[col].physical_type == PARQUET_TYPES[kind], f"{name}.{col}"
            assert (str(stored[col].logical_type) == "String") == (kind == "s"), f"{name}.{col}"


def test_summary_keys(pingpong: dict[str, Any]) -> None:
    s = tracewatt.simulate(pingpong).summary
    for key in ("makespan_s", "seed", "config", "jobs", "messages", "network", "machine"):
        assert key in s
    assert s["seed"] == 1
    assert s["makespan_s"] > 20 * 100e-6 * 0.9  # 20 rounds 100 us apart
    assert s["jobs"][0]["name"] == "pp"
    assert s["jobs"][0]["completion_s"] == pytest.approx(s["makespan_s"])
    m = s["messages"]
    for key in ("count", "bytes", "latency_mean_s", "latency_p50_s", "latency_p99_s"):
        assert key in m
    assert m["count"] == 40  # 20 pings + 20 pongs
    assert m["bytes"] == 40 * 64
    assert 0 < m["latency_p50_s"] <= m["latency_p99_s"]
    # The config in the summary is the resolved one: defaults filled in.
    assert s["config"]["mpi"]["eager_limit_bytes"] == 65536
    assert s["config"]["machine"]["packet_bytes"] == 4096


def test_resolved_fills_defaults(pingpong: dict[str, Any]) -> None:
    cfg = Config.from_dict(pingpong)
    r = cfg.resolved()
    assert r["seed"] == 1
    assert r["machine"]["ranks_per_node"] == 1
    assert r["machine"]["buffer_bytes"] == 65536
    assert r["machine"]["routing"]["algorithm"] == "default"
    assert r["mpi"]["send_overhead_ns"] == 1000.0
    assert r["jobs"][0]["allocation"] == "contiguous"
    assert r["jobs"][0]["workload"] == {
        "kind": "pingpong",
        "bytes": 64,
        "iterations": 20,
        "interval_us": 100.0,
    }
    assert len(r["output"]["idle_thresholds_us"]) > 0
    assert cfg.to_dict() == pingpong  # as written, no defaults


def test_preset_resolves_to_its_machine() -> None:
    cfg = Config.from_dict(
        {
            "machine": {"preset": "tracerp-torus-4x8x8", "links": {"bandwidth_gbps": 40.0}},
            "jobs": [{"ranks": 64, "workload": {"kind": "near_neighbor"}}],
        }
    )
    m = cfg.resolved()["machine"]
    assert m["preset"] == "tracerp-torus-4x8x8"
    assert m["topology"] == {"kind": "torus", "dims": [4, 8, 8], "nodes_per_switch": 1}
    assert m["links"]["bandwidth_gbps"] == 40.0
    assert m["links"]["latency_ns"] == 10.0  # the preset's, merged field by field
    assert m["ranks_per_node"] == 32


def test_with_overrides(pingpong: dict[str, Any]) -> None:
    cfg = Config.from_dict(pingpong)
    new = cfg.with_overrides(**{"machine.links.bandwidth_gbps": 40.0, "seed": 3})
    assert new is not cfg and new != cfg
    assert cfg.to_dict() == pingpong  # unchanged
    r = new.resolved()
    assert r["seed"] == 3
    assert r["machine"]["links"]["bandwidth_gbps"] == 40.0
    # dict form, list indices both ways, new tables created
    new2 = cfg.with_overrides(
        {
            "jobs[0].workload.iterations": 5,
            "jobs.0.name": "renamed",
            "mpi.eager_limit_bytes": 1024,
        }
    )
    r2 = new2.resolved()
    assert r2["jobs"][0]["workload"]["iterations"] == 5
    assert r2["jobs"][0]["name"] == "renamed"
    assert r2["mpi"]["eager_limit_bytes"] == 1024
    # Overrides chain; the equal configs compare equal.
    assert cfg.with_overrides(seed=3) == cfg.with_overrides({"seed": 3})
    # Simulation sees the override: a faster link gives a shorter message latency.
    slow = tracewatt.simulate(cfg.with_overrides({"jobs[0].workload.bytes": 100_000}))
    fast = tracewatt.simulate(
        cfg.with_overrides(
            {"jobs[0].workload.bytes": 100_000, "machine.links.bandwidth_gbps": 100.0}
        )
    )
    assert fast.summary["messages"]["latency_mean_s"] < slow.summary["messages"]["latency_mean_s"]


def test_with_overrides_bad_paths(pingpong: dict[str, Any]) -> None:
    cfg = Config.from_dict(pingpong)
    with pytest.raises(tracewatt.ConfigError, match=r"jobs\[5\]"):
        cfg.with_overrides({"jobs[5].ranks": 2})
    with pytest.raises(tracewatt.ConfigError, match="is a list"):
        cfg.with_overrides({"jobs.name": "x"})
    with pytest.raises(tracewatt.ConfigError, match="not a table"):
        cfg.with_overrides({"seed.x": 1})


def test_config_load_toml_and_json(tmp_path: Path, pingpong: dict[str, Any]) -> None:
    import json

    (tmp_path / "a.json").write_text(json.dumps(pingpong))
    (tmp_path / "a.toml").write_text(PINGPONG_TOML)
    cj = Config.load(tmp_path / "a.json")
    ct = Config.load(tmp_path / "a.toml")
    assert cj.format == "json" and ct.format == "toml"
    assert cj.source == str(tmp_path / "a.json")
    assert cj.resolved() == ct.resolved()
    with pytest.raises(tracewatt.ConfigError, match="cannot read"):
        Config.load(tmp_path / "missing.toml")


def test_config_pickle_and_equality(pingpong: dict[str, Any]) -> None:
    cfg = Config.from_dict(pingpong, source="mine").with_overrides(seed=9)
    back = pickle.loads(pickle.dumps(cfg))
    assert back == cfg
    assert hash(back) == hash(cfg)
    assert back.resolved() == cfg.resolved()
    assert Config.from_dict(pingpong) != Config.from_dict(pingpong, source="other")


def test_results_pickle_and_write_read(pingpong: dict[str, Any], tmp_path: Path) -> None:
    res = tracewatt.simulate(pingpong)
    back = pickle.loads(pickle.dumps(res))
    assert isinstance(back, Results)
    assert back == res
    for name in EXPECTED_COLUMNS:
        pd.testing.assert_frame_equal(getattr(back, name), getattr(res, name))
    out = res.write(tmp_path / "r")
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["summary.json", *(f"{n}.parquet" for n in res.tables)]
    )
    assert set(EXPECTED_COLUMNS) <= set(res.tables)
    read = Results.read(out)
    assert read == res
    for name in EXPECTED_COLUMNS:
        pd.testing.assert_frame_equal(getattr(read, name), getattr(res, name))
    # Writing again over the same directory works and gives the same bytes.
    first = {p.name: p.read_bytes() for p in out.iterdir()}
    read.write(out)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == first
    with pytest.raises(FileNotFoundError):
        Results.read(tmp_path)


def test_progress_callback(pingpong: dict[str, Any]) -> None:
    seen: list[dict[str, Any]] = []
    tracewatt.simulate(pingpong, progress=seen.append)
    assert seen, "the progress callback was never called"
    last = seen[-1]
    assert set(last) >= {"sim_time_s", "events", "ranks_done", "ranks_total"}
    assert last["ranks_total"] == 2
    assert last["ranks_done"] == 2


def test_progress_callback_exception_propagates(pingpong: dict[str, Any]) -> None:
    class Stop(Exception):
        pass

    def boom(_: dict[str, Any]) -> None:
        raise Stop("from the callback")

    with pytest.raises(Stop):
        tracewatt.simulate(pingpong, progress=boom)


def test_machine_info_presets() -> None:
    expected = {
        "tracerp-fattree-288": 288,
        "tracerp-torus-4x8x8": 256,
        "tracerp-dragonfly-342": 342,
        "miwa2014-16node": 16,
        "bench-dragonfly-1056": 1056,
        "codes-dragonfly-1056": 1056,
    }
    assert sorted(tracewatt.presets()) == sorted(expected)
    for preset, nodes in expected.items():
        info = tracewatt.machine(
            {"machine": {"preset": preset}, "jobs": [{"ranks": 1, "workload": {"kind": "a2a"}}]}
        )
        assert info["nodes"] == nodes, preset
        assert info["preset"] == preset
        assert info["switches"] > 0 and info["links"] > 0 and info["diameter_hops"] >= 1
        kinds = {c["kind"] for c in info["link_classes"]}
        assert "node" in kinds
        assert sum(c["links"] for c in info["link_classes"]) == info["links"]


def test_torus_link_overrides_by_dimension() -> None:
    info = tracewatt.machine(Path(__file__).parent.parent / "examples" / "custom-torus.toml")
    assert info["nodes"] == 64 and info["switches"] == 32
    bw = {c["kind"]: c["bandwidth_gbps"] for c in info["link_classes"]}
    assert bw["node"] == 50.0
    assert sorted(v for k, v in bw.items() if k != "node") == [10.0, 25.0, 40.0]


def test_version() -> None:
    assert tracewatt.__version__
    assert isinstance(tracewatt.__version__, str)


def test_bad_argument_type() -> None:
    with pytest.raises(TypeError):
        tracewatt.simulate(42)  # type: ignore[arg-type]


def test_write_over_another_run_leaves_only_this_runs_tables(
    pingpong: dict[str, Any], tmp_path: Path
) -> None:
    cfg = Config.from_dict(pingpong)
    more = tracewatt.simulate(
        cfg.with_overrides({"output.messages": True, "output.pair_idle": True})
    )
    out = more.write(tmp_path / "out")
    extra = {"messages", "message_wake_hops", "pair_idle_thresholds"}
    assert extra <= {p.stem for p in out.glob("*.parquet")}
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    res = tracewatt.simulate(cfg)
    res.write(out)
    alone = res.write(tmp_path / "alone")
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["notes.txt", *(p.name for p in alone.iterdir())]
    )
    assert (out / "notes.txt").read_text(encoding="utf-8") == "mine"
    back = Results.read(out)
    assert not extra & set(back.tables)
    assert back == res


def test_compare_takes_what_simulate_takes(pingpong: dict[str, Any], pingpong_toml: Path) -> None:
    from tracewatt.compare import compare

    by_path = compare(pingpong_toml).summary()
    assert compare(str(pingpong_toml)).summary() == by_path
    assert compare(Config.load(pingpong_toml)).summary() == by_path
    assert compare(pingpong).summary() == compare(Config.from_dict(pingpong)).summary()
    with pytest.raises(TypeError, match=r"^expected a Config, a dict or a file path, not int$"):
        compare(5)  # type: ignore[arg-type]


def test_wrong_types_are_refused_where_they_are_given(pingpong: dict[str, Any]) -> None:
    from tracewatt.compare import compare

    cfg = Config.from_dict(pingpong)
    cases: list[tuple[Any, str]] = [
        (
            lambda: Config.from_dict([1]),
            "Config.from_dict: expected a dict of the configuration's tables, not list",
        ),
        (
            lambda: Config.from_dict("abc"),
            "Config.from_dict: expected a dict of the configuration's tables, not str",
        ),
        (lambda: Config.from_toml(5), "Config text: expected a str, not int"),
        (lambda: Config.from_json(b"{}"), "Config text: expected a str, not bytes"),
        (lambda: Config("seed = 1", "toml", 5), "Config source: expected a str, not int"),
        (
            lambda: cfg.with_overrides({5: 3}),
            'with_overrides: field paths are str (e.g. "machine.links.bandwidth_gbps"), got 5 '
            "(int)",
        ),
        (
            lambda: cfg.with_overrides([("seed", 3)]),
            "with_overrides: expected a dict of field paths and values, not list",
        ),
        (
            lambda: tracewatt.simulate(cfg, progress=5),
            "progress: expected a callable (or None), not int",
        ),
        (lambda: compare(cfg, progress="x"), "progress: expected a callable (or None), not str"),
        (
            lambda: tracewatt.simulate(cfg).plot.power_timeline(baseline=5),
            "baseline: expected Results or None, got int",
        ),
    ]
    for make, message in cases:
        with pytest.raises(TypeError) as e:
            make()
        assert str(e.value) == message
