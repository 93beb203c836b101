"""``tracewatt validate``: the checks of docs/references.md, each printing its target beside the
simulated value. The test suite runs the same functions. Each check is a module of this package,
with the data of its figure.

1. EEE ping-pong latency (Miwa et al., Fig. 7).
2. Reviriego's switch power model against simulated switch power (TraceRP), on every topology.
3. Idle switch power with and without EEE (Miwa et al., Fig. 4-5) against Reviriego's model.
4. The analytic penalty bound: the paper's arithmetic, and a bound on a simulated slowdown.
5. Sensitivity to idle_timeout and wake_time on NPB-like class C skeletons (Miwa et al.,
   Fig. 28-33).
6. ``nic-coalescing``: NIC interrupt coalescing with paced and shaped streams (Kodama et al.,
   Table 1) and the node power it costs.
7. ``mpi-wait``: two-phase MPI wait policies on NPB-like class C skeletons, 8 ranks on one node
   (Hori et al., Fig. 6-7); with ``--slow``, also the real NPB class B traces.
8. ``whole-system``: EEE's saving on the whole 16-node machine, nodes included (Miwa et al.,
   Fig. 24-25).
9. ``dimm-hotplug``: the bandwidth-preserving DIMM policy against always-on and ideal
   (Ishihara et al.).
10. ``policies``: the link policies on a real NPB trace against the oracle, their bound.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tracewatt.validation.common import NETWORK, Check
from tracewatt.validation.dimm_hotplug import check_dimm_hotplug
from tracewatt.validation.idle_switch import check_idle_switch
from tracewatt.validation.mpi_wait import check_mpi_wait
from tracewatt.validation.nic_coalescing import check_nic_coalescing
from tracewatt.validation.penalty import check_penalty_bound
from tracewatt.validation.pingpong import check_pingpong
from tracewatt.validation.policies import check_policies
from tracewatt.validation.reviriego import check_reviriego
from tracewatt.validation.sensitivity import check_sensitivity
from tracewatt.validation.whole_system import check_whole_system

__all__ = ["CHECKS", "NOT_FOR_FLOWS", "SLOW_CHECKS", "Check", "run_checks"]


CHECKS: dict[str, Callable[[], Check]] = {
    "1": check_pingpong,
    "2": check_reviriego,
    "3": check_idle_switch,
    "4": check_penalty_bound,
    "5": check_sensitivity,
    "nic-coalescing": check_nic_coalescing,
    "mpi-wait": check_mpi_wait,
    "whole-system": check_whole_system,
    "dimm-hotplug": check_dimm_hotplug,
    "policies": check_policies,
}


#: Checks with a slower part that reads the data beside the repository (``validate --slow``).
SLOW_CHECKS: dict[str, Callable[[Path], Check]] = {
    "5": check_sensitivity,
    "mpi-wait": check_mpi_wait,
}


#: Checks that do not apply to the flow-level network: their names, and why.
NOT_FOR_FLOWS: dict[str, tuple[str, str]] = {
    "nic-coalescing": (
        "NIC interrupt coalescing (Kodama et al. Table 1)",
        "interrupt coalescing needs the arrival of every frame, and a flow has no frames "
        '([power.nic] coalescing is refused with network = "flow")',
    ),
}


def run_checks(
    select: list[str] | None = None, data: Path | None = None, network: str = "packet"
) -> list[Check]:
    """Runs the selected checks (all by default), in order; given `data` (``--slow``), the
    checks of SLOW_CHECKS run their slower parts too. Their simulations use the network model
    `network`; on flows, a check of NOT_FOR_FLOWS is not run, and says why."""
    token = NETWORK.set(network)
    try:
        return [_run(k, data, network) for k in CHECKS if select is None or k in select]
    finally:
        NETWORK.reset(token)


def _run(k: str, data: Path | None, network: str) -> Check:
    if network == "flow" and k in NOT_FOR_FLOWS:
        name, why = NOT_FOR_FLOWS[k]
        text = f'not applicable to network = "flow": {why}'
        return Check(k, name, "-", text, None, [text])
    return SLOW_CHECKS[k](data) if data is not None and k in SLOW_CHECKS else CHECKS[k]()
