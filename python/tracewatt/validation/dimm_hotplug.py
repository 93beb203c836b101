"""Check ``dimm-hotplug``: the bandwidth-preserving DIMM policy against always-on and ideal
(Ishihara et al.)."""

from __future__ import annotations

from typing import Any

from tracewatt.results import Results
from tracewatt.validation.common import (
    Check,
    Panel,
    Series,
    run_all,
    run_doc,
)

#: Ishihara et al.'s test node (docs/references.md section 5): 4 channels x 2 DIMMs of 4 GB,
#: 0.9 W each.
DIMM_CHANNELS, DIMM_GIB, DIMM_W = 4, 4.0, 0.9


def _dimm_doc(
    policy: str, memory: list[tuple[float, float]], transition_s: float
) -> dict[str, Any]:
    """One rank of the NPB-like EP skeleton (compute only) on node 0 of two."""
    return {
        "machine": {
            "topology": {"kind": "single_switch", "nodes": 2},
            "links": {"bandwidth_gbps": 10.0, "latency_ns": 500.0},
        },
        "jobs": [
            {
                "ranks": 1,
                "allocation": "list",
                "node_list": [0],
                "memory": [{"at_s": a, "gib": g} for a, g in memory],
                "workload": {"kind": "ep", "class": "S"},
            }
        ],
        "power": {"dimms": {"policy": policy, "transition_s": transition_s}},
    }


def check_dimm_hotplug() -> Check:
    """A job fitting the first DIMMs halves the DIMM standby energy with no channel lost; one
    that outgrows them mid-run saves only the share before; each transition adds its time;
    ideal saves more but loses channels."""
    fits = [(0.0, 6.0)]
    transition = 1e-3
    base_fit = run_doc(_dimm_doc("always_on", fits, 0.0))
    t = base_fit.makespan_s
    grows = [(0.0, 6.0), (t / 2, 13.0)]
    docs = {
        ("always_on", "fits"): _dimm_doc("always_on", fits, 0.0),
        ("bandwidth_preserving", "fits"): _dimm_doc("bandwidth_preserving", fits, 0.0),
        ("ideal", "fits"): _dimm_doc("ideal", fits, 0.0),
        ("always_on", "grows"): _dimm_doc("always_on", grows, transition),
        ("bandwidth_preserving", "grows"): _dimm_doc("bandwidth_preserving", grows, transition),
    }
    res = dict(zip(docs, run_all(list(docs.values())), strict=True))

    def node0(r: Results, col: str) -> float:
        return float(r.dimms[r.dimms["node"] == 0][col].iloc[0])

    e_on = node0(res[("always_on", "fits")], "energy_j")
    e_bp = node0(res[("bandwidth_preserving", "fits")], "energy_j")
    e_id = node0(res[("ideal", "fits")], "energy_j")
    want_on = 2 * DIMM_CHANNELS * DIMM_W * t
    half = abs(e_bp / e_on - 0.5) < 1e-9 and abs(e_on - want_on) / want_on < 1e-9
    no_loss = node0(res[("bandwidth_preserving", "fits")], "channels_lost_s") == 0.0
    ideal_more = e_id < e_bp and node0(res[("ideal", "fits")], "channels_lost_s") > 0.0
    g_on, g_bp = res[("always_on", "grows")], res[("bandwidth_preserving", "grows")]
    added = g_bp.makespan_s - g_on.makespan_s
    n_tr = node0(g_bp, "transitions")
    # The first DIMMs alone until t / 2 (13 GiB leaves 3 GiB free of 16, under the 4 GiB
    # threshold), all 8 after: saving half the standby power for the first half of the run.
    tg = g_bp.makespan_s
    want_bp = DIMM_W * (DIMM_CHANNELS * t / 2 + 2 * DIMM_CHANNELS * (tg - t / 2))
    grows_ok = abs(node0(g_bp, "energy_j") - want_bp) / want_bp < 1e-9
    time_ok = n_tr == 1 and abs(added - n_tr * transition) < 1e-12
    ok = half and no_loss and ideal_more and grows_ok and time_ok
    details = [
        f"fits (6 GiB): always-on {e_on:.4f} J, bandwidth-preserving {e_bp:.4f} J "
        f"({100 * e_bp / e_on:.1f} %), ideal {e_id:.4f} J, channels lost "
        f"{node0(res[('ideal', 'fits')], 'channels_lost_s'):.4f} channel-s",
        f"grows to 13 GiB at {t / 2:.4f} s: bandwidth-preserving {node0(g_bp, 'energy_j'):.4f} J "
        f"(by hand {want_bp:.4f} J), {n_tr:.0f} transition, run {added * 1e3:+.3f} ms "
        f"(transition {transition * 1e3:.1f} ms)",
        "paper: standby power cut ~50 % for problems fitting the first DIMMs, slowdown ~1 % "
        "(up to ~4 % for starFFT)",
    ]
    return Check(
        "dimm-hotplug",
        "Memory hotplug (Ishihara et al.): 4 channels x 2 DIMMs of 4 GiB at 0.9 W, one job",
        "fitting the first DIMMs: exactly half the standby energy, no channel lost; growing "
        "past the online threshold: the saving before it only; time added = transitions x "
        "transition_s; ideal saves more but loses channels",
        f"half: {half}; no channel lost: {no_loss}; growing: {grows_ok}; time added "
        f"{added * 1e3:.3f} ms for {n_tr:.0f} transition(s); ideal: {ideal_more}",
        ok,
        details,
        panels=_dimm_panels(e_on, e_bp, e_id, want_on, node0(g_bp, "energy_j"), want_bp),
    )


def _dimm_panels(
    on_j: float, bp_j: float, ideal_j: float, want_on_j: float, grows_j: float, want_grows_j: float
) -> list[Panel]:
    """Node 0's DIMM energy per policy and memory profile, beside the energy by hand."""
    return [
        Panel(
            "DIMM energy of node 0",
            "",
            "energy (J)",
            [
                "fits: always_on",
                "fits: bandwidth_preserving",
                "fits: ideal",
                "grows: bw-preserving",
            ],
            [
                Series("simulated", [on_j, bp_j, ideal_j, grows_j]),
                Series("by hand", [want_on_j, want_on_j / 2, None, want_grows_j], target=True),
            ],
        )
    ]
