"""The tables of docs/tracerp.md, drawn from a `tracerp` (or `-departures`, `-credits`) dataset.

    python scripts/tracerp_tables.py docs/data/tracerp-8192.parquet

Prints Markdown: Fig. 2 (link power saved and slowdown per benchmark and machine), Fig. 3 (link
energy saved and slowdown against T_s at T_w = 17 us), Fig. 4 (link power saved against T_s at
T_w = 0), Fig. 5 (slowdown against T_w at T_s = 0), per machine; for `tracerp-departures`, qbox
against its compute per phase and the dragonfly's a2a per routing; and the runs' measured time.
Only the groups and cells the dataset holds are shown (a partial sweep leaves the rest out).
As TraceRP's figures: power is the link ports' (switch and NIC) average power, energy their
energy (the sweep's `link_saving_pct`), each against the always-on run of the same machine and
benchmark; the two differ by the slowdown.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import pandas as pd

MACHINES = {
    "tracerp-fattree-288": "fat-tree",
    "tracerp-torus-4x8x8": "torus",
    "tracerp-dragonfly-342": "dragonfly",
}
BENCHMARKS = ["near_neighbor", "permutation", "qbox", "stencil4d", "a2a"]
TS = "power.links.idle_timeout_us"
TW = "power.links.wake_time_us"


def with_baseline(df: pd.DataFrame) -> pd.DataFrame:
    """The On/Off rows, each with its link power saving against the always-on run of its cell.

    The sweep already pairs each run with its cell's baseline (`link_saving_pct`: link energy,
    `slowdown_pct`); link power is energy over run time, so its ratio follows from the two."""
    on = df[(df["status"] == "ok") & (df["variant"] == "on_off")].copy()
    energy_ratio = 1 - on["link_saving_pct"] / 100
    on["link_power_saving_pct"] = 100 * (1 - energy_ratio / (1 + on["slowdown_pct"] / 100))
    return on


def cell(x: float) -> str:
    return "" if x is None or math.isnan(x) else f"{x:.1f}"


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def fig2(on: pd.DataFrame) -> str | None:
    g = on[on["group"] == "fig2"]
    if g.empty:
        return None
    machines = [m for m in MACHINES if m in set(g["machine.preset"])]
    rows = []
    for b in [b for b in BENCHMARKS if b in set(g["jobs[0]"])]:
        r = [b]
        for m in machines:
            x = g[(g["machine.preset"] == m) & (g["jobs[0]"] == b)]
            r.append(
                ""
                if x.empty
                else f"{cell(x['link_power_saving_pct'].iloc[0])} / {x['slowdown_pct'].iloc[0]:.2f}"
            )
        rows.append(r)
    return table(["benchmark", *(MACHINES[m] for m in machines)], rows)


def sweep_table(on: pd.DataFrame, group: str, axis: str, metric: str) -> list[str]:
    """One table per machine: benchmarks x the group's values of `axis`."""
    g = on[on["group"] == group]
    out = []
    for m in MACHINES:
        gm = g[g["machine.preset"] == m]
        if gm.empty:
            continue
        values = sorted(gm[axis].unique())
        rows = []
        for b in BENCHMARKS:
            x = gm[gm["jobs[0]"] == b].set_index(axis)[metric]
            if not x.empty:
                rows.append([b, *(cell(x.get(v, math.nan)) for v in values)])
        head = [f"{MACHINES[m]}", *(f"{v:g} us" for v in values)]
        out.append(table(head, rows))
    return out


def saved_and_slowdown(x: pd.Series) -> str:
    return f"{cell(x['link_power_saving_pct'])} / {x['slowdown_pct']:.2f}"


def always_on_ms(x: pd.Series) -> str:
    return f"{1e3 * x['makespan_s'] / (1 + x['slowdown_pct'] / 100):.1f}"


def qbox_compute(on: pd.DataFrame) -> list[str]:
    """`tracerp-departures`: qbox per machine against the compute in each of its phases."""
    g = on[on["group"] == "qbox_compute"]
    if g.empty:
        return []
    compute = "jobs[0].workload.compute_us"
    values = sorted(g[compute].unique())
    head = ["machine", *(f"{v / 1000:g} ms" for v in values)]
    tables = []
    for show in (saved_and_slowdown, always_on_ms):
        rows = []
        for m in MACHINES:
            x = g[g["machine.preset"] == m].set_index(compute)
            if not x.empty:
                rows.append([MACHINES[m], *(show(x.loc[v]) for v in values)])
        tables.append(table(head, rows))
    return tables


def a2a_routing(on: pd.DataFrame) -> str | None:
    """`tracerp-departures`: the dragonfly's a2a under each routing algorithm."""
    g = on[on["group"] == "a2a_routing"]
    if g.empty:
        return None
    rows = [
        [
            str(x["machine.routing.algorithm"]),
            always_on_ms(x),
            saved_and_slowdown(x),
            f"{x['lpi_share']:.2f}",
            f"{x['link_wakes']}",
        ]
        for _, x in g.sort_values("machine.routing.algorithm").iterrows()
    ]
    head = [
        "routing",
        "always-on run time, ms",
        "link power saved / slowdown, %",
        "LPI share",
        "wakes",
    ]
    return table(head, rows)


def timing(df: pd.DataFrame) -> str:
    ok = df[df["status"] == "ok"]
    if "run_cpu_s" not in ok:
        return ""
    per = ok.drop_duplicates("dir").groupby(["machine.preset", "jobs[0]"])["run_cpu_s"]
    rows = [
        [
            MACHINES.get(str(m), str(m)),
            str(b),
            f"{s.count()}",
            f"{s.median():.2g}" if s.median() < 10 else f"{s.median():.0f}",
            f"{s.sum() / 3600:.2f}",
        ]
        for (m, b), s in per
    ]
    total = ok.drop_duplicates("dir")
    rows.append(
        [
            "all",
            "",
            f"{len(total)}",
            "",
            f"{total['run_cpu_s'].sum() / 3600:.2f} (wall {total['run_wall_s'].sum() / 3600:.2f})",
        ]
    )
    return table(["machine", "benchmark", "runs", "median CPU s", "CPU hours"], rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dataset", type=Path, help="a tracerp sweep's sweep.parquet")
    a = p.parse_args(argv)
    df = pd.read_parquet(a.dataset)
    on = with_baseline(df)
    parts = []
    f2 = fig2(on)
    if f2:
        parts += ["Fig. 2: link power saved / slowdown, %", f2]
    for group, axis, metric, title in [
        ("fig3", TS, "link_saving_pct", "Fig. 3: link energy saved, %, against T_s (T_w 17 us)"),
        ("fig3", TS, "slowdown_pct", "Fig. 3: slowdown, %, against T_s (T_w 17 us)"),
        ("fig4", TS, "link_power_saving_pct", "Fig. 4: link power saved, %, against T_s (T_w 0)"),
        ("fig5", TW, "slowdown_pct", "Fig. 5: slowdown, %, against T_w (T_s 0)"),
    ]:
        tables = sweep_table(on, group, axis, metric)
        if tables:
            parts += [title, *tables]
    qbox = qbox_compute(on)
    if qbox:
        parts += [
            "qbox with compute: link power saved / slowdown, %, and always-on run time, ms",
            *qbox,
        ]
    a2a = a2a_routing(on)
    if a2a:
        parts += ["The dragonfly's a2a (one iteration) by routing", a2a]
    t = timing(df)
    if t:
        parts += ["Measured time of the runs (each distinct run once)", t]
    sys.stdout.write("\n\n".join(parts) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
