"""``tracewatt analyze joblog``: DIMM standby energy of the hotplug policies over a job log."""

from __future__ import annotations

import argparse
import json
import sys

from tracewatt import _format
from tracewatt.analysis import joblog
from tracewatt.analysis.joblog import POLICIES, JoblogResult
from tracewatt.cli.common import EXIT_OK, UsageError


def cmd_analyze_joblog(args: argparse.Namespace) -> int:
    given = {name: getattr(args, name) for name in joblog.JOBLOG_OPTIONS}
    try:
        settings = joblog.resolve_settings(
            args.config, given, label=lambda name: "--" + name.replace("_", "-")
        )
        result = joblog.analyze(args.log, settings)
    except joblog.JoblogError as e:
        raise UsageError(str(e)) from None
    if args.json:
        sys.stdout.write(json.dumps(result.to_dict(), indent=2, sort_keys=True) + "\n")
    else:
        sys.stdout.write(format_text(result))
    return EXIT_OK


def format_text(r: JoblogResult) -> str:
    """The table ``tracewatt analyze joblog`` prints."""
    s = r.settings
    skipped = ", ".join(f"{k} {v:,}" for k, v in r.jobs_skipped.items())
    lines = [
        f"log                   {r.log}",
        f"machine               {r.nodes:,} nodes ({r.nodes_source}); "
        f"cores per node {r.cores_per_node:,} ({r.cores_source})",
        f"node memory           {s.channels} channels x {s.dimms_per_channel} DIMMs x "
        f"{s.dimm_gib:g} GiB; first DIMMs {s.channels * s.dimm_gib:g} GiB; "
        f"{s.dimm_standby_w:g} W per DIMM; idle nodes {s.idle_node_gib:g} GiB",
        f"span                  {r.span_s:,.0f} s ({r.span_s / 86400:,.1f} days)",
        f"jobs                  {r.jobs:,}: {r.jobs_analysed:,} analysed; skipped: {skipped}",
        f"job memory            {r.jobs_memory_from_request:,} from requested memory, "
        f"{r.jobs_memory_assumed:,} assumed, {r.jobs_memory_over_node:,} over a node's DIMMs",
        f"node-time             busy {r.busy_node_s:.6g} node-s, idle {r.idle_node_s:.6g}, "
        f"overcommitted {r.overcommitted_node_s:.6g}, skipped jobs' {r.skipped_node_s:.6g}",
        f"fits first DIMMs      {100 * r.share_fits_first_dimms:.2f} % of node-time "
        f"({100 * r.busy_share_fits_first_dimms:.2f} % of busy node-time)",
        "",
    ]
    always = r.energy_j["always_on"]
    rows = [
        [
            p,
            _format.joules(r.energy_j[p]),
            _format.joules(r.saving_j(p)),
            f"{100 * r.saving_j(p) / always:.2f} %",
        ]
        for p in POLICIES
    ]
    table = _format.table(
        ["policy", "energy", "energy saved", "saving"], rows, [False] + [True] * 3
    )
    ratio = "-" if r.saving_ratio is None else f"{100 * r.saving_ratio:.2f} %"
    lines += [
        table.rstrip("\n"),
        "",
        f"saving ratio          {ratio} (bandwidth_preserving's saving / ideal's)",
    ]
    return "\n".join(lines) + "\n"
