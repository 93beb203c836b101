#!/usr/bin/env python3
"""The accuracy tables of docs/fast-mode.md: the flow model against the packet model, drawn from
the `fast-mode` sweep (python/tracewatt/studies/fast-mode.toml) kept in docs/data/fast-mode.parquet.
Usage:

    tracewatt sweep fast-mode -o fm                   # both models, every run
    python3 scripts/fast_mode_table.py --from fm      # keep its dataset, write the tables
    python3 scripts/fast_mode_table.py                # the tables from the kept dataset
    python3 scripts/fast_mode_table.py --check        # exit 1 if the page is not the dataset's

After a change to the flow model alone, the packet model's runs stand: a sweep of a copy of the
spec whose `machine.network` axis is ``["flow"]`` replaces the dataset's flow runs only:

    python3 scripts/fast_mode_table.py --flow-from fm-flow

The main job's comparison (TraceRP's Fig. 2 at 8,192 ranks, the `default` study) comes from
its two sweeps, kept in docs/data/fig2-8192.parquet:

    tracewatt study -o study-flow                              # the main job, on flows
    tracewatt sweep default --network packet -o study-packet   # the same 30 runs on packets
    python3 scripts/fast_mode_table.py --fig2-from study-flow study-packet

The main job again with shorter trains (`--set machine.flow_train_segments=N`, N below the
main job's), so that its large messages are flows that share bandwidth, kept in
docs/data/fig2-8192-flows.parquet, beside both:

    tracewatt study --set machine.flow_train_segments=16 -o study-flows
    python3 scripts/fast_mode_table.py --flows-from study-flows

The study's `spread` group (the always-on and T_s = 600 us runs with every switch a picosecond
faster and slower) gives the `spread` table: how far each model's own result moves when ties
at ports resolve otherwise. Each table goes between the markers
``<!-- fast-mode:NAME:start -->`` and ``<!-- fast-mode:NAME:end -->`` of docs/fast-mode.md. A
flow row's error is its value against the packet row of the same machine, benchmark, variant
and timeout: (flow - packet) / packet, in %; the slowdown's difference is in percentage points
(each model's slowdown is against its own always-on run).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "fast-mode.md"
DATA = ROOT / "docs" / "data" / "fast-mode.parquet"
FIG2_DATA = ROOT / "docs" / "data" / "fig2-8192.parquet"
FLOWS_DATA = ROOT / "docs" / "data" / "fig2-8192-flows.parquet"
#: The main job's sweep spec.
STUDY = ROOT / "python" / "tracewatt" / "studies" / "default.toml"
MACHINES = {
    "tracerp-fattree-288": "fat-tree",
    "tracerp-torus-4x8x8": "torus",
    "tracerp-dragonfly-342": "dragonfly",
}
BENCHMARKS = ["near_neighbor", "permutation", "stencil4d", "qbox", "a2a"]
#: The main job's benchmarks whose messages (1 MiB, 10 MiB) are more than 16 segments: the
#: longest train changes their runs alone.
LARGE = ["near_neighbor", "permutation", "stencil4d"]
#: The flow model's defaults of `machine.flow_train_segments` and `machine.flow_segment_packets`
#: (a resolved configuration leaves them out).
TRAIN_SEGMENTS = 32
SEGMENT_PACKETS = 4
#: A flow sweep's trains: its longest train and the packets of a segment.
Trains = tuple[int, int]
TS = "power.links.idle_timeout_us"
NET = "machine.network"
SWITCH = "machine.switch_latency_ns"
#: The study's group of runs compared cell by cell, and the one that moves every switch latency
#: by a picosecond either way (its `SWITCH` axis; the first group's runs keep the preset's).
ACCURACY, SPREAD = "accuracy", "spread"
#: The sweep's columns the dataset keeps.
KEEP = [
    "group",
    SWITCH,
    "variant",
    "machine.preset",
    "jobs[0]",
    NET,
    TS,
    "status",
    "makespan_s",
    "energy_j",
    "energy_switch_ports_j",
    "energy_nic_ports_j",
    "link_wakes",
    "slowdown_pct",
    "run_cpu_s",
]
#: The accuracy targets wherever T_s >= 10 us: makespan and link energy within these % of the
#: packet model's, EEE's slowdown within this many percentage points.
TARGET_MAKESPAN_PCT = 5.0
TARGET_LINK_PCT = 3.0
TARGET_SLOWDOWN_PP = 1.0


class TableError(Exception):
    """Input the script cannot use; the message names the file and what was expected."""


def kept(sweep: pd.DataFrame, source: str, flow_only: bool = False) -> pd.DataFrame:
    """The dataset's rows and columns, checked: every run finished, both models in every cell
    (or, `flow_only`, the flow model's alone)."""
    missing = [c for c in KEEP if c not in sweep.columns]
    if missing:
        raise TableError(f"{source}: not a fast-mode sweep dataset: no {', '.join(missing)}")
    df = sweep[KEEP].copy()
    bad = df[df["status"] != "ok"]
    if len(bad):
        r = bad.iloc[0]
        raise TableError(
            f"{source}: {len(bad)} run(s) did not finish, e.g. {r['machine.preset']} "
            f"{r['jobs[0]']} {r[NET]} {r['variant']} T_s={r[TS]}: rerun the sweep to complete it"
        )
    nets = set(df[NET])
    if flow_only and nets != {"flow"}:
        raise TableError(f"{source}: expected runs of the flow model only, found {sorted(nets)}")
    if not flow_only and nets != {"packet", "flow"}:
        raise TableError(f"{source}: expected runs of both network models, found {sorted(nets)}")
    groups = set(df["group"])
    if groups != {ACCURACY, SPREAD}:
        raise TableError(
            f"{source}: expected the groups {ACCURACY!r} and {SPREAD!r}, found {sorted(groups)}"
        )
    df["link_j"] = df["energy_switch_ports_j"] + df["energy_nic_ports_j"]
    return df.drop(columns=["status"]).reset_index(drop=True)


def with_flow_runs(data: pd.DataFrame, sweep: pd.DataFrame, source: str) -> pd.DataFrame:
    """The dataset `data` with its flow runs replaced by those of a flow-only sweep, checked:
    each of its cells has a run on both models."""
    merged = pd.concat(
        [data[data[NET] == "packet"], kept(sweep, source, flow_only=True)], ignore_index=True
    )
    paired(merged)
    return merged


def paired(df: pd.DataFrame) -> pd.DataFrame:
    """A row per machine, benchmark, variant and timeout with the packet and flow values side by
    side (``_packet``, ``_flow``). The always-on runs are one per cell (their timeout pinned)."""
    keys = ["machine.preset", "jobs[0]", "variant", TS]
    df = df[df["group"] == ACCURACY].drop(columns=["group", SWITCH])
    on = df["variant"] == "always_on"
    df.loc[on, TS] = math.nan
    df = df.drop_duplicates(subset=[*keys, NET])
    p = df[df[NET] == "packet"].drop(columns=[NET]).set_index(keys)
    f = df[df[NET] == "flow"].drop(columns=[NET]).set_index(keys)
    both = p.join(f.add_suffix("_flow"), how="inner")
    both.columns = [c if c.endswith("_flow") else f"{c}_packet" for c in both.columns]
    if len(both) != len(p) or len(both) != len(f):
        raise TableError("the dataset lacks a flow or a packet run of some cell")
    return both.reset_index()


def err_pct(flow: Any, packet: Any) -> Any:
    """(flow - packet) / packet in %, of numbers or of columns."""
    return 100.0 * (flow - packet) / packet


def fmt_pct(x: float) -> str:
    return f"{x:+.2f} %"


def fmt_time(s: float) -> str:
    return f"{s * 1e3:.3f} ms"


def ordered(df: pd.DataFrame) -> pd.DataFrame:
    m = df["machine.preset"].map(list(MACHINES).index)
    b = df["jobs[0]"].map(BENCHMARKS.index)
    return df.assign(_m=m, _b=b).sort_values(["_m", "_b", TS]).drop(columns=["_m", "_b"])


def always_on_table(pairs: pd.DataFrame) -> str:
    rows = [
        "| machine | benchmark | makespan, packet | makespan, flow | error | link energy error "
        "| whole-machine energy error | CPU time, packet / flow |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    on = ordered(pairs[pairs["variant"] == "always_on"])
    for _, r in on.iterrows():
        rows.append(
            f"| {MACHINES[r['machine.preset']]} | {r['jobs[0]']} "
            f"| {fmt_time(r['makespan_s_packet'])} | {fmt_time(r['makespan_s_flow'])} "
            f"| {fmt_pct(err_pct(r['makespan_s_flow'], r['makespan_s_packet']))} "
            f"| {fmt_pct(err_pct(r['link_j_flow'], r['link_j_packet']))} "
            f"| {fmt_pct(err_pct(r['energy_j_flow'], r['energy_j_packet']))} "
            f"| {r['run_cpu_s_packet'] / r['run_cpu_s_flow']:.1f}x |"
        )
    return "\n".join(rows)


def eee_table(pairs: pd.DataFrame) -> str:
    rows = [
        "| machine | benchmark | T_s | makespan error | link energy error | slowdown, packet "
        "| slowdown, flow | difference | wakes, packet | wakes, flow |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    eee = ordered(pairs[pairs["variant"] != "always_on"])
    for _, r in eee.iterrows():
        rows.append(
            f"| {MACHINES[r['machine.preset']]} | {r['jobs[0]']} | {r[TS]:g} us "
            f"| {fmt_pct(err_pct(r['makespan_s_flow'], r['makespan_s_packet']))} "
            f"| {fmt_pct(err_pct(r['link_j_flow'], r['link_j_packet']))} "
            f"| {r['slowdown_pct_packet']:.2f} % | {r['slowdown_pct_flow']:.2f} % "
            f"| {r['slowdown_pct_flow'] - r['slowdown_pct_packet']:+.2f} pp "
            f"| {int(r['link_wakes_packet']):,} | {int(r['link_wakes_flow']):,} |"
        )
    return "\n".join(rows)


def summary_table(pairs: pd.DataFrame) -> str:
    """Per timeout (always-on first): the largest errors over the 15 cells, and how many cells
    meet each target."""
    rows = [
        "| runs | cells | largest makespan error | within 5 % | largest link energy error "
        "| within 3 % | largest slowdown difference | within 1 pp |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    groups: list[tuple[str, pd.DataFrame]] = [("always on", pairs[pairs["variant"] == "always_on"])]
    eee = pairs[pairs["variant"] != "always_on"]
    groups += [(f"EEE, T_s = {ts:g} us", eee[eee[TS] == ts]) for ts in sorted(set(eee[TS]))]
    for name, g in groups:
        mk = err_pct(g["makespan_s_flow"], g["makespan_s_packet"]).abs()
        lk = err_pct(g["link_j_flow"], g["link_j_packet"]).abs()
        sd = (g["slowdown_pct_flow"] - g["slowdown_pct_packet"]).abs()
        cells = [name, str(len(g)), f"{mk.max():.2f} %", str((mk <= TARGET_MAKESPAN_PCT).sum())]
        cells += [f"{lk.max():.2f} %", str((lk <= TARGET_LINK_PCT).sum())]
        # Always-on runs have no slowdown of their own.
        cells += (
            ["-", "-"]
            if name == "always on"
            else [f"{sd.max():.2f} pp", str((sd <= TARGET_SLOWDOWN_PP).sum())]
        )
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def value_range(values: pd.Series, spec: str, unit: str) -> str:
    """`lowest to highest unit`, or the one value where they are equal as printed."""
    lo, hi = format(values.min(), spec), format(values.max(), spec)
    return f"{lo} {unit}" if lo == hi else f"{lo} to {hi} {unit}"


def spread_table(df: pd.DataFrame) -> str:
    """Per machine and benchmark, on each model: the always-on makespan and the slowdown at
    T_s = 600 us over the switch latency of the preset and one picosecond less and more (the
    slowdown of each against the always-on run of the same latency), lowest to highest; the
    spread is (max - min) / the preset's makespan."""
    # The spread group's runs keep the study's base timeout (600 us): no `TS` of their own.
    df = df[(df["variant"] == "always_on") | (df[TS] == 600.0) | (df["group"] == SPREAD)]
    base = df[df["group"] == ACCURACY]
    spread = df[df["group"] == SPREAD]
    if set(spread[SWITCH]) != {99.999, 100.001} or base[SWITCH].notna().any():
        raise TableError(
            "the spread group must move the presets' 100 ns switch latency to 99.999 and "
            "100.001 ns, and only it"
        )
    keys = ["machine.preset", "jobs[0]", NET, "variant"]
    # The always-on run is in the accuracy group once per timeout, the same run each time.
    base = base.drop_duplicates(subset=keys)
    runs = pd.concat([base, spread])
    rows = [
        "| machine | benchmark | always on, packet | spread | always on, flow | spread "
        "| slowdown at 600 us, packet | slowdown at 600 us, flow |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    by = {k: g for k, g in runs.groupby(keys)}
    nominal = {k: g for k, g in base.groupby(keys)}
    present = set(zip(runs["machine.preset"], runs["jobs[0]"], strict=True))
    for machine, label in MACHINES.items():
        for bench in (b for b in BENCHMARKS if (machine, b) in present):
            cells = [label, bench]
            slow = []
            for net in ("packet", "flow"):
                on = by[(machine, bench, net, "always_on")]["makespan_s"]
                if len(on) != 3:
                    raise TableError(f"{machine} {bench} {net}: expected 3 always-on runs")
                mid = nominal[(machine, bench, net, "always_on")]["makespan_s"].iloc[0]
                cells += [
                    value_range(on * 1e3, ".3f", "ms"),
                    f"{100 * (on.max() - on.min()) / mid:.2f} %",
                ]
                sd = by[(machine, bench, net, "eee")]["slowdown_pct"]
                slow.append(value_range(sd, ".2f", "%"))
            rows.append("| " + " | ".join(cells + slow) + " |")
    return "\n".join(rows)


#: The main job's sweep columns its comparison keeps (the model is in `network`: the study sets
#: it in its base, not on an axis).
FIG2_KEEP = [
    "variant",
    "machine.preset",
    "jobs[0]",
    "network",
    "status",
    "makespan_s",
    "energy_switch_ports_j",
    "energy_nic_ports_j",
    "link_saving_pct",
    "slowdown_pct",
    "run_cpu_s",
]


def trains_of(machine: dict[str, Any]) -> Trains:
    """The trains a `[machine]` table sends: its longest train and its segment's packets."""
    return (
        int(machine.get("flow_train_segments", TRAIN_SEGMENTS)),
        int(machine.get("flow_segment_packets", SEGMENT_PACKETS)),
    )


def described(trains: Trains) -> str:
    return f"machine.flow_train_segments = {trains[0]}, machine.flow_segment_packets = {trains[1]}"


def main_job_trains() -> Trains:
    """The main job's trains, from its spec's base."""
    try:
        with STUDY.open("rb") as f:
            machine = tomllib.load(f)["base"]["machine"]
    except (OSError, ValueError, KeyError) as e:
        raise TableError(f"{STUDY}: not the main job's spec: {e}") from None
    return trains_of(machine)


def fig2_kept(
    flow: pd.DataFrame, packet: pd.DataFrame, sources: tuple[str, str], trains: Trains
) -> pd.DataFrame:
    """The main job's runs on both models, checked: every run finished, each sweep on its model,
    the flow sweep with the main job's `trains`, the same cells in both."""
    main = main_job_trains()
    if trains != main:
        raise TableError(
            f"{sources[0]}: expected the main job's trains ({described(main)}), "
            f"found {described(trains)}"
        )
    frames = []
    for df, source, net in ((flow, sources[0], "flow"), (packet, sources[1], "packet")):
        missing = [c for c in FIG2_KEEP if c not in df.columns]
        if missing:
            raise TableError(f"{source}: not a `default` study dataset: no {', '.join(missing)}")
        if set(df["network"]) != {net} or (df["status"] != "ok").any():
            raise TableError(f"{source}: expected every run finished on the {net} model")
        frames.append(df[FIG2_KEEP])
    keys = ["machine.preset", "jobs[0]", "variant"]
    if sorted(map(tuple, frames[0][keys].values)) != sorted(map(tuple, frames[1][keys].values)):
        raise TableError(f"{sources[0]} and {sources[1]} do not hold the same runs")
    return pd.concat(frames).drop(columns=["status"]).reset_index(drop=True)


def fig2_table(df: pd.DataFrame) -> str:
    """Per machine and benchmark: always-on run time, On/Off's link saving and slowdown, on each
    model, and what the two runs cost on each."""
    rows = [
        "| machine | benchmark | run time always on, packet / flow | error "
        "| link saving, packet / flow | slowdown, packet / flow | CPU time, packet / flow |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    keys = ["machine.preset", "jobs[0]"]
    by = {k: g.set_index(["network", "variant"]) for k, g in df.groupby(keys)}
    for machine, label in MACHINES.items():
        for bench in BENCHMARKS:
            g = by[(machine, bench)]
            on_p, on_f = (g.loc[(n, "always_on"), "makespan_s"] for n in ("packet", "flow"))
            eee_p, eee_f = g.loc[("packet", "eee")], g.loc[("flow", "eee")]
            cpu_p, cpu_f = (g.loc[n, "run_cpu_s"].sum() for n in ("packet", "flow"))
            rows.append(
                f"| {label} | {bench} | {on_p:.3f} / {on_f:.3f} s "
                f"| {fmt_pct(err_pct(on_f, on_p))} "
                f"| {eee_p['link_saving_pct']:.1f} / {eee_f['link_saving_pct']:.1f} % "
                f"| {eee_p['slowdown_pct']:.2f} / {eee_f['slowdown_pct']:.2f} % "
                f"| {cpu_p:,.0f} / {cpu_f:,.1f} s |"
            )
    return "\n".join(rows)


def flows_kept(
    flows: pd.DataFrame, trains: Trains, fig2: pd.DataFrame, source: str
) -> pd.DataFrame:
    """The main job's runs with shorter trains (`trains`, the main job's segments), so that its
    large messages are flows, checked: every run finished on flows, the main job's cells, and the
    benchmarks whose messages stay within 16 segments exactly the main job's runs."""
    missing = [c for c in FIG2_KEEP if c not in flows.columns]
    if missing:
        raise TableError(f"{source}: not a `default` study dataset: no {', '.join(missing)}")
    if set(flows["network"]) != {"flow"} or (flows["status"] != "ok").any():
        raise TableError(f"{source}: expected every run finished on the flow model")
    main = main_job_trains()
    if trains[0] >= main[0] or trains[1] != main[1]:
        raise TableError(
            f"{source}: expected machine.flow_train_segments below the main job's {main[0]} and "
            f"its machine.flow_segment_packets = {main[1]}, found {described(trains)}"
        )
    segments = trains[0]
    keys = ["machine.preset", "jobs[0]", "variant"]
    trains = fig2[fig2["network"] == "flow"].set_index(keys)
    got = flows[FIG2_KEEP].drop(columns=["status"]).set_index(keys)
    if sorted(got.index) != sorted(trains.index):
        raise TableError(f"{source}: expected the main job's runs, {len(trains)} of them")
    same = ["makespan_s", "energy_switch_ports_j", "energy_nic_ports_j"]
    small = [k for k in got.index if k[1] not in LARGE]
    moved = [k for k in small if not got.loc[k, same].equals(trains.loc[k, same])]
    if moved:
        raise TableError(
            f"{source}: {' '.join(moved[0])} differs from the main job's run: expected "
            "shorter trains to change only messages of more than 16 segments"
        )
    return got.reset_index().assign(flow_train_segments=segments)


def flows_table(fig2: pd.DataFrame, flows: pd.DataFrame) -> str:
    """Per machine and large-message benchmark: the main job's comparison of packets and its
    trains, with the runs whose large messages are flows beside them."""
    rows = [
        "| machine | benchmark | run time always on, packet / trains / flows "
        "| error, trains / flows | link saving, packet / trains / flows "
        "| slowdown, packet / trains / flows | CPU time, packet / trains / flows |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    both = pd.concat(
        [
            fig2.replace({"network": {"flow": "trains"}}),
            flows.drop(columns=["flow_train_segments"]).assign(network="flows"),
        ]
    )
    by = {
        k: g.set_index(["network", "variant"])
        for k, g in both.groupby(["machine.preset", "jobs[0]"])
    }
    nets = ("packet", "trains", "flows")
    for machine, label in MACHINES.items():
        for bench in LARGE:
            g = by[(machine, bench)]
            on = [g.loc[(n, "always_on"), "makespan_s"] for n in nets]
            eee = [g.loc[(n, "eee")] for n in nets]
            cpu = [g.loc[n, "run_cpu_s"].sum() for n in nets]
            saving = " / ".join(f"{e['link_saving_pct']:.1f}" for e in eee)
            slowdown = " / ".join(f"{e['slowdown_pct']:.2f}" for e in eee)
            rows.append(
                f"| {label} | {bench} | {on[0]:.3f} / {on[1]:.3f} / {on[2]:.3f} s "
                f"| {err_pct(on[1], on[0]):+.2f} / {err_pct(on[2], on[0]):+.2f} % "
                f"| {saving} % | {slowdown} % "
                f"| {cpu[0]:,.0f} / {cpu[1]:,.1f} / {cpu[2]:,.1f} s |"
            )
    return "\n".join(rows)


TABLES: dict[str, Callable[[pd.DataFrame], str]] = {
    "summary": summary_table,
    "always-on": always_on_table,
    "eee": eee_table,
}


def span(text: str, name: str) -> tuple[int, int]:
    start, end = f"<!-- fast-mode:{name}:start -->", f"<!-- fast-mode:{name}:end -->"
    a, b = text.find(start), text.find(end)
    if a < 0 or b < a:
        raise TableError(f"{PAGE}: no {start} ... {end} markers")
    return a + len(start), b


def page_tables(text: str) -> dict[str, str]:
    out = {}
    for name in [*TABLES, "spread", "fig2-8192", "fig2-flows"]:
        a, b = span(text, name)
        out[name] = text[a:b].strip()
    return out


def rendered(df: pd.DataFrame, fig2: pd.DataFrame, flows: pd.DataFrame) -> dict[str, str]:
    """Every table of the page: the study's from `df`, the main job's from `fig2` and, with
    its large messages as flows, `flows`."""
    pairs = paired(df)
    return {
        **{name: draw(pairs) for name, draw in TABLES.items()},
        "spread": spread_table(df),
        "fig2-8192": fig2_table(fig2),
        "fig2-flows": flows_table(fig2, flows),
    }


def with_tables(text: str, tables: dict[str, str]) -> str:
    for name, table in tables.items():
        a, b = span(text, name)
        text = text[:a] + "\n" + table + "\n" + text[b:]
    return text


def sweep_trains(sweep_dir: Path) -> Trains:
    """The trains every run of a sweep sends (its base's, as `--set` puts them there), from its
    sweep.json."""
    path = sweep_dir / "sweep.json"
    try:
        machine = json.loads(path.read_text(encoding="utf-8"))["base"]["config"]["machine"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise TableError(f"{path}: not a sweep's description: {e}") from None
    return trains_of(machine)


def load(path: Path) -> pd.DataFrame:
    try:
        return pd.read_parquet(path)
    except (OSError, ValueError) as e:
        raise TableError(f"{path}: not a readable Parquet dataset: {e}") from None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    given = ap.add_mutually_exclusive_group()
    given.add_argument("--from", dest="source", type=Path, help="a `fast-mode` sweep's directory")
    given.add_argument(
        "--flow-from",
        type=Path,
        help="a flow-only `fast-mode` sweep's directory: its runs replace the dataset's flow runs",
    )
    ap.add_argument(
        "--fig2-from",
        nargs=2,
        type=Path,
        metavar=("FLOW", "PACKET"),
        help="the main job's sweep directories on flows and on packets",
    )
    ap.add_argument(
        "--flows-from",
        type=Path,
        metavar="DIR",
        help="the main job's sweep directory with shorter trains, its large messages flows "
        "(--set machine.flow_train_segments=N)",
    )
    ap.add_argument("--check", action="store_true", help="exit 1 if the page is not the dataset's")
    a = ap.parse_args(argv)
    try:
        DATA.parent.mkdir(parents=True, exist_ok=True)
        if a.source is not None:
            sweep = a.source / "sweep.parquet"
            kept(load(sweep), str(sweep)).to_parquet(DATA, index=False)
        if a.flow_from is not None:
            sweep = a.flow_from / "sweep.parquet"
            with_flow_runs(load(DATA), load(sweep), str(sweep)).to_parquet(DATA, index=False)
        if a.fig2_from is not None:
            flow, packet = (d / "sweep.parquet" for d in a.fig2_from)
            fig2 = fig2_kept(
                load(flow), load(packet), (str(flow), str(packet)), sweep_trains(a.fig2_from[0])
            )
            fig2.to_parquet(FIG2_DATA, index=False)
        if a.flows_from is not None:
            sweep = a.flows_from / "sweep.parquet"
            flows = flows_kept(load(sweep), sweep_trains(a.flows_from), load(FIG2_DATA), str(sweep))
            flows.to_parquet(FLOWS_DATA, index=False)
        tables = rendered(load(DATA), load(FIG2_DATA), load(FLOWS_DATA))
        text = PAGE.read_text(encoding="utf-8")
        if a.check:
            if page_tables(text) != tables:
                print(
                    f"{PAGE}: its tables are not those of {DATA}, {FIG2_DATA} and {FLOWS_DATA}",
                    file=sys.stderr,
                )
                return 1
            return 0
        PAGE.write_text(with_tables(text, tables), encoding="utf-8")
    except TableError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
