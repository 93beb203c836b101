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

from tracewatt.validation.common import Check
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

__all__ = ["CHECKS", "SLOW_CHECKS", "Check", "run_checks"]


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


def run_checks(select: list[str] | None = None, data: Path | None = None) -> list[Check]:
    """Runs the selected checks (all by default), in order; given `data` (``--slow``), the
    checks of SLOW_CHECKS run their slower parts too."""
    return [
        SLOW_CHECKS[k](data) if data is not None and k in SLOW_CHECKS else CHECKS[k]()
        for k in CHECKS
        if select is None or k in select
    ]
