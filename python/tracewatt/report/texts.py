"""The plain-text summaries a run and a comparison print (``tracewatt run`` / ``compare``),
which the HTML report shows too."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from tracewatt import _format, _tracewatt


def summary_text(
    summary: dict[str, Any],
    timing: dict[str, float] | None = None,
    latencies_s: Sequence[float] | None = None,
) -> str:
    """The human-readable summary printed by ``tracewatt run``: the run, the power policies it
    applied, link power states, energy by component and, given ``timing``, its speed. Given
    every message's latency (``messages.parquet`` ``latency_s``), p50 and p99 are exact;
    otherwise they are the summary's histogram values, printed with ``~``."""
    msgs = summary.get("messages", {})
    p50, p99 = _percentiles(msgs, latencies_s)
    net = summary.get("network", {})
    lines = [
        f"makespan              {_format.seconds(summary.get('makespan_s'))}",
        f"seed                  {summary.get('seed')}",
    ]
    jobs = summary.get("jobs", [])
    if jobs:
        lines.append("")
        rows = [
            [
                str(j.get("name")),
                str(j.get("ranks")),
                str(j.get("nodes")),
                _format.seconds(j.get("start_s")),
                _format.seconds(j.get("completion_s")),
                _format.seconds(j.get("runtime_s")),
            ]
            for j in jobs
        ]
        lines.append(
            _format.table(
                ["job", "ranks", "nodes", "start", "completion", "runtime"],
                rows,
                [False, True, True, True, True, True],
            ).rstrip("\n")
        )
        lines.append("")
    lines += [
        f"messages              {_format.count(msgs.get('count'))}"
        f"  ({_format.nbytes(msgs.get('bytes'))})",
        f"message latency       mean {_format.seconds(msgs.get('latency_mean_s'))}"
        f"  p50 {p50}  p99 {p99}"
        f"  max {_format.seconds(msgs.get('latency_max_s'))}",
        *_network_lines(net, summary.get("config", {}).get("machine", {})),
        f"mean switch hops      {float(net.get('mean_switch_hops', 0.0)):.2f}",
        f"events                {_format.count(summary.get('events'))}",
    ]
    applied = policies(summary.get("config", {}))
    if applied:
        lines.append("")
        lines += [f"{what:<22}{how}" for what, how in applied]
    lines += _link_power_lines(summary.get("links"))
    lines += _energy_lines(summary)
    if timing is not None:
        lines.append(f"wall time             {_format.seconds(timing['wall_s'])}")
        lines.append(f"events per second     {_format.count(round(timing['events_per_s']))}")
    return "\n".join(lines) + "\n"


def network_model(machine: Mapping[str, Any]) -> str:
    """How a page names the network model of a run's `[machine]` table; for the flow model with
    the trains it sends (the longest, and its segment), which decide how close large messages
    come to the packet model (docs/fast-mode.md). Named on every page so that a flow result is
    never taken for a packet one."""
    if machine.get("network", "packet") != "flow":
        return "packet (every packet through every switch)"
    # A resolved configuration leaves the defaults out.
    segments = int(machine.get("flow_train_segments", _tracewatt.FLOW_TRAIN_SEGMENTS))
    packets = int(machine.get("flow_segment_packets", _tracewatt.FLOW_SEGMENT_PACKETS))
    trains = f"up to {segments} segments of {packets} packets as trains, " if segments else ""
    units = int(machine.get("flow_short_unit_packets", _tracewatt.FLOW_SHORT_UNIT_PACKETS))
    short = {0: " whole", 1: " packet by packet"}.get(units, f" in units of {units} packets")
    return (
        f"flow (messages of up to half a buffer switch by switch{short}, "
        f"{trains}larger ones as flows sharing link bandwidth max-min fairly; docs/fast-mode.md)"
    )


def _network_lines(net: dict[str, Any], machine: Mapping[str, Any]) -> list[str]:
    """What the network moved: packets, or, from the flow-level model, messages and segments,
    with the model named (`machine`: the run's `[machine]` table)."""
    if net.get("model") == "flow":
        return [
            f"network model         {network_model(machine)}",
            f"flows                 {_format.count(net.get('packets'))}",
        ]
    return [f"packets               {_format.count(net.get('packets'))}"]


def _percentiles(msgs: dict[str, Any], latencies_s: Sequence[float] | None) -> tuple[str, str]:
    """p50 and p99 of the message latencies as printed: exact (the nearest-rank quantile, the
    summary's own definition) from every message's latency, else the summary's, which are the
    lower edges of their histogram buckets (up to 1/64 below), marked ``~``."""
    count = int(msgs.get("count") or 0)
    if latencies_s is not None and count and len(latencies_s) == count:
        ordered = sorted(latencies_s)

        def at(q: float) -> str:
            # The rank as the summary computes it, in the same floating point.
            return _format.seconds(ordered[min(count, max(1, math.ceil(q * count))) - 1])

        return at(0.5), at(0.99)
    mark = "~" if count else ""
    return (
        f"{mark}{_format.seconds(msgs.get('latency_p50_s'))}",
        f"{mark}{_format.seconds(msgs.get('latency_p99_s'))}",
    )


def _link_policy_text(table: dict[str, Any], control: str) -> str:
    """One link power table (resolved) in words: ``EEE: idle timeout 600 us, ...``."""
    if table.get("policy") == "always_on":
        return "always on"
    us = 1e-6
    return (
        f"EEE: idle timeout {_format.seconds(table['idle_timeout_us'] * us)},"
        f" sleep {_format.seconds(table['sleep_time_us'] * us)},"
        f" wake {_format.seconds(table['wake_time_us'] * us)},"
        f" {table.get('phy') or 'no PHY preset'}, {table.get('control', control)}"
    )


def policies(config: dict[str, Any]) -> list[tuple[str, str]]:
    """The power policies a run applied, from its resolved configuration, as (what, how)."""
    power, wait = config.get("power"), config.get("mpi", {}).get("wait")
    if not isinstance(power, dict) or not isinstance(wait, dict):
        return []
    control, base = str(power.get("control", "paired")), power["links"]
    out = [("link power", _link_policy_text(base, control))]
    overrides = [(f"{k} links", power.get(k)) for k in ("node", "local", "global")]
    overrides += [(f"tree[{i}] links", t) for i, t in enumerate(power.get("tree") or [])]
    overrides += [(f"torus[{i}] links", t) for i, t in enumerate(power.get("torus") or [])]
    overrides += [
        (f"node_links[{i}]", o.get("link")) for i, o in enumerate(power.get("node_links") or [])
    ]
    # An override's unset fields are the base table's.
    out += [
        (f"  {name}", _link_policy_text({**base, **table}, control))
        for name, table in overrides
        if isinstance(table, dict)
    ]
    policy = str(wait["policy"])
    if policy != "spin":
        threshold_us = wait.get("spin_threshold_us")
        threshold_s = (
            threshold_us * 1e-6
            if threshold_us is not None
            else wait["spin_threshold_iterations"] * wait["spin_iteration_ns"] * 1e-9
        )
        policy += f" after spinning {_format.seconds(threshold_s)}"
    if policy.startswith("block"):
        policy += ", C-state by the menu governor" if wait["governor"] == "menu" else ", in C3"
    out.append(("MPI waits", policy))
    out.append(("DIMMs", str(power["dimms"]["policy"])))
    out.append(("NIC coalescing", "on" if power["nic"].get("coalescing") else "off"))
    return out


def _link_power_lines(links: Any) -> list[str]:
    if not isinstance(links, dict):
        return []
    return [
        f"link LPI share        {float(links['lpi_fraction']) * 100:.2f} % of link time",
        f"link wakes            {_format.count(links['wakes'])}"
        f"  (delay added {_format.seconds(links['wake_delay_s'])})",
    ]


def _energy_lines(summary: dict[str, Any]) -> list[str]:
    """Energy and average power per component kind, total last."""
    energy, power = summary.get("energy_j"), summary.get("avg_power_w")
    if not isinstance(energy, dict) or not isinstance(power, dict) or "total" not in energy:
        return []
    kinds = [k for k in energy if k != "total"] + ["total"]
    rows = [[k, _format.joules(energy[k]), f"{power.get(k, 0.0):,.1f} W"] for k in kinds]
    table = _format.table(["component", "energy", "avg power"], rows, [False, True, True])
    return ["", table.rstrip("\n"), ""]


def _quantity(name: str, value: float) -> str:
    """A compare row's value in its unit, named by the row's suffix (``_s``, ``_j``, ``_w``)."""
    if name.endswith("_s"):
        return _format.seconds(value)
    if name.endswith("_j"):
        return _format.joules(value)
    return f"{value:,.1f} W"


def compare_text(c: Any, timing: dict[str, float] | None = None) -> str:
    """What ``tracewatt compare`` prints: the policies compared, then the quantities of both runs
    with the change, the savings and the slowdown."""
    base = dict(policies(c.baseline.config))
    rows = [[what, base.get(what, "-"), how] for what, how in policies(c.policy.config)]
    out = _format.table(["setting", "baseline", "policy"], rows, [False, False, False])
    # Row names carry their unit (`energy_total_j`), which the values now show.
    rows = []
    for name, b, p, d in c.table():
        label = name.rsplit("_", 1)[0].replace("_", " ")
        rows.append([label, _quantity(name, b), _quantity(name, p), f"{d:+.3f} %"])
    out += "\n" + _format.table(
        ["quantity", "baseline", "policy", "change"], rows, [False, True, True, True]
    )
    covers = ", ".join(k.replace("_", " ") for k in c.components)
    out += (
        f"\nenergy saved          {c.saving_pct:.3f} % of everything priced ({covers})\n"
        f"                      link ports alone: {c.link_saving_pct:.3f} %\n"
        f"slowdown              {c.slowdown_pct:.3f} %\n"
    )
    if timing is not None:
        out += (
            f"wall time             {_format.seconds(timing['wall_s'])} (policy run,"
            f" {_format.count(round(timing['events_per_s']))} events per second)\n"
        )
    return out


def policies_text(table: Any, has_oracle: bool) -> str:
    """What ``tracewatt compare --policies`` prints: a row per link policy (``always_on``
    first) with its link and whole-machine energy, what each saves against always-on, the
    slowdown, the link wakes and the share of the oracle's link saving; then what the share
    means, or that it needs the oracle."""
    rows = []
    for r in table.to_dict("records"):
        share = r["oracle_share_pct"]
        rows.append(
            [
                str(r["policy"]),
                _format.joules(r["link_energy_j"]),
                _format.joules(r["link_saving_j"]),
                f"{r['link_saving_pct']:.3f} %",
                _format.joules(r["energy_j"]),
                _format.joules(r["saving_j"]),
                f"{r['saving_pct']:.3f} %",
                f"{r['slowdown_pct']:+.3f} %",
                _format.count(r["wakes"]),
                "-" if math.isnan(share) else f"{share:.1f} %",
            ]
        )
    # Energies and shares of always-on's: link ports (switch and NIC), then the whole machine.
    out = _format.table(
        [
            "policy",
            "link energy",
            "link saved",
            "of links",
            "energy",
            "saved",
            "of total",
            "slowdown",
            "wakes",
            "of oracle",
        ],
        rows,
        [False] + [True] * 9,
    )
    if has_oracle:
        out += (
            "\nof oracle: the policy's link saving as a share of the oracle's, which sleeps in "
            "every idle gap\nlonger than its break-even time and never delays traffic: the most "
            "any policy with these PHY\nstates can save.\n"
        )
    else:
        out += (
            "\nof oracle: add oracle to --policies for each policy's share of the most link "
            "energy any policy\ncan save without delaying traffic.\n"
        )
    return out
