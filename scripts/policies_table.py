#!/usr/bin/env python3
"""Runs the link policies side by side for docs/policies.md, keeps their figures in
docs/data/policies.json and writes the page's table from them; tests/test_docs.py holds the
page to the dataset. Usage:

    PYTHONPATH=python python3 scripts/policies_table.py    # runs everything (~33 min, 2 cores)
    python3 scripts/policies_table.py --from FILE          # the table from a dataset
    python3 scripts/policies_table.py --check              # exit 1 if the page is not the JSON's

The runs: the five TraceR benchmarks of the TraceRP study (python/tracewatt/studies/tracerp.toml:
its workloads and link timing) at 1,024 ranks, 4 per node, on each of its three machines, the
real NPB class S traces of tests/data on one 10 Gb/s switch, each under always_on, timeout,
adaptive, perfbound, predictive and oracle (`tracewatt compare --policies`, default
parameters); and the DIMM policies against their bound
(`ideal`) on one node's memory. The table goes between ``<!-- policies-table:start -->`` and
``<!-- policies-table:end -->`` of docs/policies.md.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "policies.md"
JSON_PATH = ROOT / "docs" / "data" / "policies.json"
START = "<!-- policies-table:start -->"
END = "<!-- policies-table:end -->"
#: The policies of the table, beside always-on; the oracle last, as the bound.
POLICIES = ["timeout", "adaptive", "perfbound", "predictive", "oracle"]
#: The TraceRP benchmarks at this many ranks, this many a node (the study's 8,192 at 32 a node
#: take hours).
RANKS = 1024
RANKS_PER_NODE = 4
#: The TraceRP machines (presets) and their names in the table.
MACHINES = {
    "tracerp-fattree-288": "fat-tree",
    "tracerp-torus-4x8x8": "torus",
    "tracerp-dragonfly-342": "dragonfly",
}
TRACES = ["cg", "ft"]
#: The figures of a row the dataset keeps: the component whose policy it is (``links``, or
#: ``dimms``), the energy of that component saved against always-on, of the whole machine, the
#: slowdown, the share of the bound's saving of that component (the oracle's; ``ideal`` for
#: DIMMs), and the link wakes.
FIELDS = (
    "suite",
    "workload",
    "component",
    "policy",
    "component_saving_pct",
    "saving_pct",
    "slowdown_pct",
    "share_of_bound_pct",
    "wakes",
)


class TableError(Exception):
    """Input the script cannot use; the message names the file and what was expected."""


def _tracerp_configs(preset: str) -> dict[str, Any]:
    """The study's benchmarks on machine ``preset``, by name."""
    from tracewatt import Config

    spec = tomllib.loads(
        resources.files("tracewatt.studies").joinpath("tracerp.toml").read_text("utf-8")
    )
    power = spec["base"]["power"]
    return {
        name: Config.from_dict(
            {
                "seed": 1,
                "machine": {"preset": preset, "ranks_per_node": RANKS_PER_NODE},
                "jobs": [dict(job, ranks=RANKS)],
                "power": power,
            },
            f"tracerp {name} on {preset}",
        )
        for name, job in spec["axes"]["jobs[0]"].items()
    }


def _rows(suite: str, workload: str, table: Any) -> list[dict[str, Any]]:
    return [
        {
            "suite": suite,
            "workload": workload,
            "component": "links",
            "policy": r["policy"],
            "component_saving_pct": r["link_saving_pct"],
            "saving_pct": r["saving_pct"],
            "slowdown_pct": r["slowdown_pct"],
            "share_of_bound_pct": r["oracle_share_pct"],
            "wakes": r["wakes"],
        }
        for r in table.to_dict("records")
        if r["policy"] != "always_on"
    ]


def run_all() -> list[dict[str, Any]]:
    """Every row of the dataset (minutes)."""
    from tracewatt.compare import compare_policies
    from tracewatt.validation.policies import TRACE, trace_config

    rows: list[dict[str, Any]] = []
    for preset, machine in MACHINES.items():
        for name, cfg in _tracerp_configs(preset).items():
            print(f"tracerp {machine} {name} ...", file=sys.stderr, flush=True)
            suite = f"TraceRP {RANKS} ranks ({RANKS_PER_NODE}/node), {machine}"
            rows += _rows(suite, name, compare_policies(cfg, POLICIES).table)
    for kind in TRACES:
        print(f"npb {kind} ...", file=sys.stderr, flush=True)
        trace = TRACE.parent / f"npb-{kind}.S-4ranks"
        table = compare_policies(trace_config(trace), POLICIES).table
        rows += _rows("NPB class S traces, 4 ranks", kind.upper(), table)
    return rows + dimm_rows()


#: One node's job using 8 GiB of 4 channels x 2 DIMMs of 4 GiB (the default machine).
DIMM_MEMORY_GIB = 8.0


def dimm_rows() -> list[dict[str, Any]]:
    """The DIMM policies against always-on and their bound, ``ideal``, on the CG trace with
    8 GiB in use per node."""
    from tracewatt.compare import compare, link_policy_config, pct_saved
    from tracewatt.validation.policies import trace_config

    base = link_policy_config(trace_config(), "always_on").with_overrides(
        {"jobs[0].memory_gib": DIMM_MEMORY_GIB}
    )
    runs = {
        p: compare(base.with_overrides({"power.dimms.policy": p}))
        for p in ("bandwidth_preserving", "ideal")
    }

    def dimm_saving(p: str) -> float:
        c = runs[p]
        return pct_saved(
            c.policy.summary["energy_j"]["dimms"], c.baseline.summary["energy_j"]["dimms"]
        )

    bound = dimm_saving("ideal")
    return [
        {
            "suite": "DIMMs, CG trace, 8 GiB per node",
            "workload": "CG",
            "component": "dimms",
            "policy": p,
            "component_saving_pct": dimm_saving(p),
            "saving_pct": c.saving_pct,
            "slowdown_pct": c.slowdown_pct,
            "share_of_bound_pct": 100.0 * dimm_saving(p) / bound if bound else math.nan,
            "wakes": 0,
        }
        for p, c in runs.items()
    ]


def _pct(v: float, signed: bool = False) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v:+.2f} %" if signed else f"{v:.1f} %"


def render(rows: list[dict[str, Any]]) -> str:
    """The page's tables: per benchmark, the oracle's link saving, then each policy's share of
    it and its slowdown; then the DIMM policies against ``ideal``."""
    links = [r for r in rows if r["component"] == "links"]
    dimms = [r for r in rows if r["component"] == "dimms"]
    names = [p for p in POLICIES if p != "oracle"]
    out = [
        "| suite | workload | oracle: link saving | "
        + " | ".join(f"{p}: share of oracle / slowdown" for p in names)
        + " |",
        "|---|---|---|" + "---|" * len(names),
    ]
    keys = list(dict.fromkeys((r["suite"], r["workload"]) for r in links))
    for suite, workload in keys:
        of = {r["policy"]: r for r in links if (r["suite"], r["workload"]) == (suite, workload)}
        cells = [
            f"{_pct(of[p]['share_of_bound_pct'])} / {_pct(of[p]['slowdown_pct'], True)}"
            for p in names
        ]
        out.append(
            f"| {suite} | {workload} | {_pct(of['oracle']['component_saving_pct'])} | "
            + " | ".join(cells)
            + " |"
        )
    if dimms:
        out += [
            "",
            "| suite | DIMM policy | DIMM standby energy saved | share of `ideal` | slowdown |",
            "|---|---|---|---|---|",
        ]
        out += [
            f"| {r['suite']} | `{r['policy']}` | {_pct(r['component_saving_pct'])} | "
            f"{_pct(r['share_of_bound_pct'])} | {_pct(r['slowdown_pct'], True)} |"
            for r in dimms
        ]
    return "\n".join(out) + "\n"


def _plain(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows as JSON holds them: plain numbers, ``null`` for no value (a share without a bound
    that saves anything)."""
    return [
        {
            k: None
            if isinstance(v, float) and math.isnan(v)
            else int(v)
            if k == "wakes"
            else float(v)
            if isinstance(v, int | float)
            else v
            for k, v in r.items()
        }
        for r in rows
    ]


def page_table(page: str) -> str:
    """The table between the markers of ``page``."""
    if START not in page or END not in page:
        raise TableError(f"{PAGE}: no {START} ... {END} markers")
    return page.split(START, 1)[1].split(END, 1)[0].strip("\n") + "\n"


def load_rows(path: Path) -> list[dict[str, Any]]:
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise TableError(f"{path}: not a policies dataset: {e}") from None
    if not isinstance(rows, list) or not rows:
        raise TableError(f"{path}: expected a non-empty JSON list of rows")
    for i, r in enumerate(rows):
        missing = [f for f in FIELDS if not isinstance(r, dict) or f not in r]
        if missing:
            raise TableError(f"{path}: row {i} lacks {', '.join(missing)}")
    return rows


def write_page(rows: list[dict[str, Any]]) -> None:
    page = PAGE.read_text(encoding="utf-8")
    page_table(page)  # the markers are there
    head, rest = page.split(START, 1)
    tail = rest.split(END, 1)[1]
    PAGE.write_text(f"{head}{START}\n{render(rows)}{END}{tail}", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--from", dest="source", metavar="FILE", help="a dataset instead of running")
    ap.add_argument("--check", action="store_true", help="exit 1 if the page is not the JSON's")
    args = ap.parse_args(argv)
    try:
        if args.check:
            rows = load_rows(JSON_PATH)
            if page_table(PAGE.read_text(encoding="utf-8")) != render(rows):
                print(f"{PAGE}: the table is not {JSON_PATH}'s; run --from", file=sys.stderr)
                return 1
            return 0
        rows = load_rows(Path(args.source)) if args.source is not None else run_all()
        JSON_PATH.write_text(json.dumps(_plain(rows), indent=2) + "\n", encoding="utf-8")
        write_page(rows)
    except TableError as e:
        print(f"policies_table: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
