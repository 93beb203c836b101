"""The tables of docs/tracerp.md, drawn from a `tracerp` sweep's dataset.

    python scripts/tracerp_tables.py docs/data/tracerp-8192.parquet

Prints Markdown: Fig. 2 (link power saved and slowdown per benchmark and machine), Fig. 3 (link
energy saved and slowdown against T_s at T_w = 17 us), Fig. 4 (link power saved against T_s at
T_w = 0), Fig. 5 (slowdown against T_w at T_s = 0), per machine, and the runs' measured time.
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


def link_power_w(df: pd.DataFrame) -> pd.Series:
    return df["avg_power_switch_ports_w"] + df["avg_power_nic_ports_w"]


def with_baseline(df: pd.DataFrame) -> pd.DataFrame:
    """The On/Off rows, each with its link power saving and slowdown against always-on."""
    ok = df[df["status"] == "ok"].copy()
    ok["link_w"] = link_power_w(ok)
    base = (
        ok[ok["variant"] == "always_on"]
        .drop_duplicates(["machine.preset", "jobs[0]"])
        .set_index(["machine.preset", "jobs[0]"])[["link_w", "makespan_s"]]
    )
    on = ok[ok["variant"] == "on_off"].merge(
        base.add_suffix("_base"), left_on=["machine.preset", "jobs[0]"], right_index=True
    )
    on["link_power_saving_pct"] = 100 * (1 - on["link_w"] / on["link_w_base"])
    on["slowdown_pct"] = 100 * (on["makespan_s"] / on["makespan_s_base"] - 1)
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
    for b in BENCHMARKS:
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
            f"{s.median():.0f}",
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
    t = timing(df)
    if t:
        parts += ["Measured time of the runs (each distinct run once)", t]
    sys.stdout.write("\n\n".join(parts) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
