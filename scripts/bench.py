#!/usr/bin/env python3
"""Whole-run benchmarks of tracewatt: wall time, peak memory, events/s and packet-hops/s.

Each scenario runs in a fresh process so its peak resident memory is its own, twice: as
configured (every link runs the EEE state machine, 600 us / 17 us timeout policy) and with every
link always on, so the cost of the power model's work shows as `power model overhead %`. Usage:

    python3 scripts/bench.py            # every scenario
    python3 scripts/bench.py dragonfly  # scenarios whose name contains "dragonfly"
    python3 scripts/bench.py readers    # trace reader throughput only (records/s, MB/s)
    python3 scripts/bench.py a2a --no-baseline  # as configured only (half the time)
    python3 scripts/bench.py c: --network both  # each run in the packet and the flow model

`--network packet` (the default), `flow` or `both` picks the network model (docs/fast-mode.md);
with `both` the table adds the flow model's wall time and its speed-up over the packet model.
Scenarios too long for the packet model (d) run in the flow model only.

Prints a Markdown table (the README's performance section is copied from it) and writes
bench-results.json. It measures the tracewatt that `import tracewatt` finds, and prints which:
rebuild with `pip install .` (or put an in-place build first with PYTHONPATH=python) after a
change, or the table describes the previous build.
"""

from __future__ import annotations

import importlib.util
import json
import platform
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

SCENARIOS: dict[str, str] = {
    "a: dragonfly-1056 uniform random (20 x 2 KiB per node, adaptive)": """
seed = 1
[machine]
preset = "bench-dragonfly-1056"
[[jobs]]
ranks = 1056
[jobs.workload]
kind = "uniform_random"
messages = 20
bytes = 2048
interval_us = 1.0
""",
}

for preset in ("tracerp-fattree-288", "tracerp-torus-4x8x8", "tracerp-dragonfly-342"):
    SCENARIOS[f"b: {preset} stencil4d 8192 ranks x 10 it"] = f"""
seed = 1
[machine]
preset = "{preset}"
[[jobs]]
ranks = 8192
[jobs.workload]
kind = "stencil4d"
iterations = 10
"""
    SCENARIOS[f"b: {preset} a2a 8192 ranks x 1 KiB"] = f"""
seed = 1
[machine]
preset = "{preset}"
[[jobs]]
ranks = 8192
[jobs.workload]
kind = "a2a"
bytes = 1024
iterations = 1
"""

# TraceRP's own message sizes (python/tracewatt/studies/tracerp.toml), one iteration each; the
# all-to-all also by full lanes (the main job's): the same bytes between nodes in 31 times fewer
# messages.
TRACERP_SIZES = {
    "permutation": ("permutation", "bytes = 10485760"),
    "stencil4d": ("stencil4d", "bytes = 10485760"),
    "near_neighbor": ("near_neighbor", "bytes = 1048576"),
    "a2a": ("a2a", "bytes = 1024"),
    "a2a full_lane": ("a2a", 'bytes = 1024\nalgo = "full_lane"'),
}
for preset in ("tracerp-fattree-288", "tracerp-torus-4x8x8", "tracerp-dragonfly-342"):
    for name, (kind, size) in TRACERP_SIZES.items():
        SCENARIOS[f"c: {preset} {name} 8192 ranks, TraceRP's sizes, 1 it"] = f"""
seed = 1
[machine]
preset = "{preset}"
[[jobs]]
ranks = 8192
[jobs.workload]
kind = "{kind}"
iterations = 1
compute_us = 0.0
{size}
"""

# 8,320 nodes (65 groups x 32 routers x 4 nodes, TraceRP's 10 Gb/s links), a 64-KiB 4-D stencil
# on 8 ranks per node: two iterations are about 130 ms of simulated time, too long for the packet
# model (about 70 s per simulated ms).
SCENARIOS["d: dragonfly-8320 stencil4d 66,560 ranks x 64 KiB, ~130 ms"] = """
seed = 1
[machine]
ranks_per_node = 8
[machine.links]
bandwidth_gbps = 10.0
latency_ns = 10.0
[machine.topology]
kind = "dragonfly"
groups = 65
routers_per_group = 32
nodes_per_router = 4
global_links_per_router = 2
[[jobs]]
ranks = 66560
[jobs.workload]
kind = "stencil4d"
iterations = 2
bytes = 65536
compute_us = 200.0
"""
FLOW_ONLY = {"d: dragonfly-8320 stencil4d 66,560 ranks x 64 KiB, ~130 ms"}

# The SimGrid comparison of docs/references.md section 7: a 1,024-host two-level fat-tree
# (radix 64, 32 hosts per leaf, 10 Gb/s links), an all-to-all of 100 kB per pair.
SCENARIOS["e: fat-tree-1024 a2a 100 kB per pair (SimGrid's case)"] = """
seed = 1
[machine]
ranks_per_node = 1
[machine.links]
bandwidth_gbps = 10.0
latency_ns = 10.0
[machine.topology]
kind = "fat_tree"
levels = 2
radix = 64
nodes_per_leaf = 32
[[jobs]]
ranks = 1024
[jobs.workload]
kind = "a2a"
iterations = 1
bytes = 100000
compute_us = 0.0
"""

# The child first runs a tiny simulation, so that the time measured is the scenario's and not the
# import of the libraries its results are built with (pandas, pyarrow: about 0.3 s, once per
# process), which would otherwise decide the flow model's sub-second runs.
CHILD = """
import json, sys, time, resource
import tracewatt
warm = tracewatt.Config.from_toml(sys.argv[2], "warm-up")
tracewatt.simulate(warm.with_overrides({"machine.network": sys.argv[1]})).summary
cfg = tracewatt.Config.from_toml(sys.stdin.read(), "bench")
cfg = cfg.with_overrides({"machine.network": sys.argv[1]})
t0 = time.perf_counter()
r = tracewatt.simulate(cfg)
wall = time.perf_counter() - t0
s = r.summary
print(json.dumps({
    "wall_s": wall,
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "events": s["events"],
    "packet_hops": s["network"]["packet_hops"],
    "mean_switch_hops": s["network"]["mean_switch_hops"],
    "makespan_s": s["makespan_s"],
}))
"""

WARM_UP = """
[machine]
preset = "tracerp-fattree-288"
[[jobs]]
ranks = 2
[jobs.workload]
kind = "pingpong"
bytes = 64
iterations = 1
"""

ALWAYS_ON = """
[power.links]
policy = "always_on"
"""


def thp_mode() -> str:
    """The kernel's transparent-huge-page mode: large runs are up to a quarter slower without."""
    try:
        text = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        return "unknown"
    chosen = [w.strip("[]") for w in text.split() if w.startswith("[")]
    return chosen[0] if chosen else "unknown"


def package_origin() -> str:
    """Where the runs import tracewatt from, flagged when it is an installed copy, which may be
    an older build than this checkout."""
    spec = importlib.util.find_spec("tracewatt")
    origin = spec.origin if spec and spec.origin else "not found"
    if not Path(origin).resolve().is_relative_to(ROOT):
        origin += " (an installed copy: `pip install .` rebuilds it from this checkout)"
    return origin


def run_child(text: str, network: str) -> dict[str, float] | str:
    """One run in a fresh interpreter: its measurements, or its error output."""
    out = subprocess.run(
        [sys.executable, "-c", CHILD, network, WARM_UP],
        input=text,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        return out.stderr
    result: dict[str, float] = json.loads(out.stdout)
    return result


ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
# One trace per format and size class from the repository's test data.
READER_TRACES = [
    "dumpi/npb-cg.S-4ranks",
    "dumpi/sst-macro-testbgp",
    "otf2/sst-macro-10ranks",
    "otf2/tracer-stencil4d-32ranks",
    "simgrid-ti/ti-32ranks",
]


def readers() -> int:
    """Reader throughput: every rank of each trace read 50 times (warm cache), release build of
    the trace crate's `trace_info` example. Records are calls (an OTF2 call is 2-3 events)."""
    paths = [str(DATA / t) for t in READER_TRACES]
    cmd = ["cargo", "run", "-q", "--release", "-p", "tracewatt-trace", "--example", "trace_info"]
    out = subprocess.run(
        [*cmd, "--", "--bench", *paths], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        print(out.stderr, file=sys.stderr)
        return 1
    print("| trace | records/s | MB/s |\n|---|---|---|")
    for line in out.stdout.splitlines():
        m = re.match(r"(.*): ([0-9.]+) M records/s, ([0-9.]+) MB/s", line)
        if m:
            print(f"| {Path(m.group(1)).relative_to(DATA)} | {m.group(2)} M | {m.group(3)} |")
    return 0


def measure(text: str, network: str, baseline: bool) -> dict[str, float] | str:
    """One scenario in one network model: its run as configured and, with ``baseline``, with
    every link always on; or the error output of the run that failed."""
    r = run_child(text, network)
    base = run_child(text + ALWAYS_ON, network) if baseline else None
    if isinstance(r, str) or isinstance(base, str):
        return r if isinstance(r, str) else str(base)
    if base is not None:
        r["always_on_wall_s"] = base["wall_s"]
        r["power_overhead_pct"] = 100.0 * (r["wall_s"] / base["wall_s"] - 1.0)
    r["events_per_s"] = r["events"] / r["wall_s"]
    r["packet_hops_per_s"] = r["packet_hops"] / r["wall_s"]
    return r


def main() -> int:
    args = sys.argv[1:]
    baseline = "--no-baseline" not in args
    args = [a for a in args if a != "--no-baseline"]
    network = "packet"
    if "--network" in args:
        i = args.index("--network")
        if i + 1 >= len(args) or args[i + 1] not in ("packet", "flow", "both"):
            print("error: --network takes packet, flow or both", file=sys.stderr)
            return 2
        network = args.pop(i + 1)
        args.pop(i)
    pick = args[0] if args else ""
    if pick == "readers":
        return readers()
    rows: list[dict[str, float]] = []
    names: list[str] = []
    networks: list[str] = []
    for name, text in SCENARIOS.items():
        if pick not in name:
            continue
        t0 = time.perf_counter()
        first = "flow" if network == "flow" or name in FLOW_ONLY else "packet"
        r = measure(text, first, baseline)
        flow = measure(text, "flow", False) if network == "both" and first == "packet" else None
        for got in (r, flow):
            if isinstance(got, str):
                print(f"{name}: FAILED\n{got}", file=sys.stderr)
                return 1
        assert not isinstance(r, str) and not isinstance(flow, str)
        if flow is not None:
            r["flow_wall_s"] = flow["wall_s"]
            r["flow_peak_rss_mb"] = flow["peak_rss_mb"]
            r["flow_makespan_s"] = flow["makespan_s"]
            r["flow_speedup"] = r["wall_s"] / flow["wall_s"]
        r["process_s"] = time.perf_counter() - t0
        names.append(name)
        networks.append(first)
        rows.append(r)
        print(f"done: {name} in {r['process_s']:.2f} s", file=sys.stderr)
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    print(
        f"Machine: {cpu}, {resource.getpagesize()} B pages, transparent huge pages "
        f"{thp_mode()}, Python {platform.python_version()}"
    )
    command = " ".join(["python3 scripts/bench.py", *sys.argv[1:]])
    print(f"Command: {command} (one core per run)")
    print(f"Package measured: {package_origin()}\n")
    head = (
        "| scenario | network | wall s | peak MB | makespan ms | events/s | packet-hops/s "
        "| mean hops | always-on wall s | power model overhead % |"
    )
    rule = "|---|---|---|---|---|---|---|---|---|---|"
    if network == "both":
        head += " flow wall s | flow peak MB | flow makespan ms | flow speed-up |"
        rule += "---|---|---|---|"
    print(head)
    print(rule)
    for name, net, r in zip(names, networks, rows, strict=True):
        base_cols = (
            f"{r['always_on_wall_s']:.2f} | {r['power_overhead_pct']:+.1f}"
            if "always_on_wall_s" in r
            else "- | -"
        )
        line = (
            f"| {name} | {net} | {r['wall_s']:.2f} | {r['peak_rss_mb']:.0f} | "
            f"{r['makespan_s'] * 1e3:.3f} | {r['events_per_s'] / 1e6:.2f} M | "
            f"{r['packet_hops_per_s'] / 1e6:.2f} M | {r['mean_switch_hops']:.2f} | {base_cols} |"
        )
        if network == "both":
            line += (
                f" {r['flow_wall_s']:.2f} | {r['flow_peak_rss_mb']:.0f} | "
                f"{r['flow_makespan_s'] * 1e3:.3f} | {r['flow_speedup']:.1f}x |"
                if "flow_wall_s" in r
                else " - | - | - | - |"
            )
        print(line)
    results = [
        {"name": n, "network": net, **r} for n, net, r in zip(names, networks, rows, strict=True)
    ]
    Path("bench-results.json").write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
