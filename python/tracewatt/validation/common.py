"""What the validation checks share: the paper's EEE settings and switch figures, a check's
outcome and the data of its figure, and the configurations several checks run."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tracewatt.config import Config
from tracewatt.results import Results
from tracewatt.simulation import simulate

TIMEOUT_US = 600.0
WAKE_US = 17.0
SLEEP_US = 2.88
#: The paper's 10GBASE-T switches, by `power.switch.model`: backplane, port active and port
#: LPI power, W (Miwa et al. Fig. 4-5: the LPI figure is active minus the 1.36 / 1.37 W saved;
#: docs/references.md section 1).
SWITCH_FIGURES_W: dict[str, tuple[float, float, float]] = {
    "powerconnect-8132": (96.0, 3.44, 2.08),
    "m7100": (83.0, 3.59, 2.22),
}
#: PowerConnect 8132, TraceRP's figures.
BACKPLANE_W, PORT_ACTIVE_W, PORT_LPI_W = SWITCH_FIGURES_W["powerconnect-8132"]


@dataclass
class Series:
    """One series of a check's figure, a value (or None) per x of its panel: simulated, or
    ``target`` (the paper's or the check's expected values)."""

    label: str
    y: list[float | None]
    target: bool = False


@dataclass
class Panel:
    """One panel of a check's figure. ``x`` holds numbers (a line per series) or labels (a bar
    per series); units are in the labels."""

    title: str
    x_label: str
    y_label: str
    x: list[float] | list[str]
    series: list[Series]
    x_log: bool = False


@dataclass
class Check:
    id: str
    name: str
    target: str
    simulated: str
    #: None: the check does not apply to what was asked (e.g. NIC coalescing on flows) and was
    #: not run; it is neither a pass nor a failure.
    passed: bool | None
    details: list[str] = field(default_factory=list)
    #: What the report draws: the simulated values beside their targets.
    panels: list[Panel] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The check as ``validate --json`` prints it (``record`` adds the figure's data)."""
        d = self.record()
        del d["panels"]
        return d

    def record(self) -> dict[str, Any]:
        """Everything, as ``validate -o DIR`` writes it to ``validate.json``."""
        return asdict(self)


def verdict(passed: bool | None) -> str:
    """How a check's outcome is printed: PASS, FAIL, or N/A for a check that was not run."""
    return {True: "PASS", False: "FAIL", None: "N/A"}[passed]


#: The network model the checks simulate with (``validate --network``; ``[machine] network``).
NETWORK: ContextVar[str] = ContextVar("network", default="packet")


def on_network(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` on the network model of :data:`NETWORK` (the configuration's default, packets,
    left as it is)."""
    network = NETWORK.get()
    if network == "packet":
        return doc
    return {**doc, "machine": {**doc.get("machine", {}), "network": network}}


def _simulate(doc: dict[str, Any]) -> Results:
    return simulate(Config.from_dict(doc, "<validate>"))


def run_doc(doc: dict[str, Any]) -> Results:
    return _simulate(on_network(doc))


def run_all(docs: list[dict[str, Any]]) -> list[Results]:
    # The model is read here: the pool's threads do not see the caller's context.
    docs = [on_network(d) for d in docs]
    # Simulations release the GIL: two threads keep both cores busy.
    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(_simulate, docs))


def npb_doc(kind: str, cls: str, power: dict[str, Any]) -> dict[str, Any]:
    """The paper's NPB setup: 4 nodes x 4 ranks on one switch of the 10GBASE-T cluster. Ranks
    fill the nodes in order (the `linear` mapping; the paper does not say how mpich2 placed
    them)."""
    return {
        "machine": {
            "preset": "miwa2014-16node",
            "ranks_per_node": 4,
            "topology": {"kind": "single_switch", "nodes": 4},
        },
        "jobs": [{"ranks": 16, "workload": {"kind": kind, "class": cls}}],
        "power": power,
    }


#: The real NPB 3.4 class B DUMPI traces (``--slow``), ``npb-<name>.B-4ranks`` in the data
#: folder (../shared/data/dumpi; its README says how they were recorded).
CLASS_B_TRACES = ["ft", "sp", "cg", "bt", "mg"]


def class_b_trace(data: Path, name: str) -> Path:
    return data / "dumpi" / f"npb-{name}.B-4ranks"


def pingpong_doc(
    topology: dict[str, Any],
    nodes: list[int],
    interval_us: float,
    rounds: int,
    control: str,
    eee_nodes: list[int],
) -> dict[str, Any]:
    power: dict[str, Any] = {
        "control": control,
        "links": {
            "idle_timeout_us": TIMEOUT_US,
            "wake_time_us": WAKE_US,
            "sleep_time_us": SLEEP_US,
        },
    }
    off = [n for n in nodes if n not in eee_nodes]
    if off:
        power["node_links"] = [{"nodes": off, "link": {"policy": "always_on"}}]
    return {
        "machine": {"preset": "miwa2014-16node", "topology": topology},
        "jobs": [
            {
                "ranks": 2,
                "allocation": "list",
                "node_list": nodes,
                "workload": {
                    "kind": "pingpong",
                    "bytes": 64,
                    "iterations": rounds,
                    "interval_us": interval_us,
                },
            }
        ],
        "power": power,
    }
