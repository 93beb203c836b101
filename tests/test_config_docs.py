"""docs/config.md against the simulator: every default the reference gives as a value (in a
table, per wait policy, or in a sentence) is the value the simulator resolves for a
configuration that leaves the field unset (for `analyze joblog`'s settings, the analysis's
own defaults). Defaults given as a rule ("the PHY's", `radix / 2`)
are not checked here; fields the resolution leaves out are listed with why."""

from __future__ import annotations

import dataclasses
import re
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tracewatt import Config, _tracewatt
from tracewatt.analysis.joblog import JoblogSettings

ROOT = Path(__file__).resolve().parent.parent
CONFIG_MD = ROOT / "docs" / "config.md"
FT_TRACE = ROOT / "tests" / "data" / "dumpi" / "npb-ft.S-4ranks"


@dataclass(frozen=True)
class Row:
    """One field row of a table of docs/config.md."""

    line: int
    section: str  # dotted path of the table the field is in ("" at the top level)
    kind: str | None  # the `kind = "..."` block the row is under, if any
    field: str
    default: str  # the default column's text


HEADING = re.compile(r"^#+ .*`(\[\[?[a-z_.]+\]\]?)`")
PARAGRAPH_TABLE = re.compile(r"^`(\[[a-z_.]+\])`:")
LINK_TABLE = "A **link power table** (`[power.links]`"
KIND = re.compile(r'^\*\*`kind = ((?:"[a-z_0-9]+"(?: \| )?)+)`\*\*')
# Sections after which no table documents the run configuration.
END = ("## Presets", "## Overriding fields")
# `analyze joblog`'s own settings file, not a run configuration.
JOBLOG = "## Job-log analysis settings"


def rows() -> Iterator[Row]:
    section: str | None = None
    kinds: list[str | None] = [None]
    header: list[str] | None = None
    for n, line in enumerate(CONFIG_MD.read_text().splitlines(), start=1):
        if line.startswith(END):
            section = None
        elif line.startswith(JOBLOG):
            section, kinds = "joblog", [None]
        elif line == "## Top level":
            section, kinds = "", [None]
        elif m := HEADING.match(line) or PARAGRAPH_TABLE.match(line):
            section, kinds = m.group(1).strip("[]"), [None]
        elif line.startswith(LINK_TABLE):
            section, kinds = "power.links", [None]
        elif m := KIND.match(line):
            kinds = re.findall(r'"([a-z_0-9]+)"', m.group(1))
        if not line.startswith("|"):
            header = None
            continue
        # `\|` inside a cell is a literal bar (between the values of a type).
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip("|"))]
        if header is None:
            header = cells
            continue
        if section is None or header[0] != "field" or set(line) <= set("|- "):
            continue
        default = cells[header.index("default")]
        for field in re.findall(r"`([a-z_0-9]+)`", cells[0]):
            for kind in kinds:
                yield Row(n, section, kind, field, default)


LITERAL = re.compile(r"^`([^`]+)`(?: \([^()]*\))?(?::.*)?$")


def literal(row: Row) -> Any:
    """The default as a TOML value, or None when the reference gives no single literal (a rule
    such as "the PHY's", or "none")."""
    m = LITERAL.match(row.default)
    if m is None:
        return None
    try:
        return tomllib.loads(f"v = {m.group(1)}")["v"]
    except tomllib.TOMLDecodeError:
        return None  # a rule written as code, e.g. `radix / 2`


# The smallest configuration each `kind` of topology and workload resolves with.
TOPOLOGY: dict[str, dict[str, Any]] = {
    "single_switch": {},
    "fat_tree": {"radix": 4},
    "torus": {"dims": [2, 2]},
    "dragonfly": {
        "groups": 3,
        "routers_per_group": 2,
        "nodes_per_router": 1,
        "global_links_per_router": 1,
    },
}
WORKLOAD_RANKS = {"pingpong": 2, "paced_stream": 2, "shaped_stream": 2, "near_neighbor": 8}
WORKLOAD_REQUIRED: dict[str, dict[str, Any]] = {
    "paced_stream": {"rate_mbps": 100.0},
    "shaped_stream": {"rate_mbps": 100.0},
}


def config(row: Row) -> dict[str, Any]:
    """A configuration that leaves `row`'s field unset and has its section in force."""
    topology: dict[str, Any] = {"kind": "single_switch"}
    job: dict[str, Any] = {"ranks": 4, "workload": {"kind": "pingpong"}}
    if row.section == "machine.topology" and row.kind is not None:
        topology = {"kind": row.kind, **TOPOLOGY[row.kind]}
    if row.section == "jobs.workload" and row.kind is not None:
        job = {
            "ranks": WORKLOAD_RANKS.get(row.kind, 4),
            "workload": {"kind": row.kind, **WORKLOAD_REQUIRED.get(row.kind, {})},
        }
    if row.section.startswith("jobs.trace"):
        job = {"trace": {"path": str(FT_TRACE)}}
        if row.section == "jobs.trace.window":
            job["trace"]["window"] = {"from": "MPI_Alltoall", "to": "MPI_Alltoall"}
    cfg: dict[str, Any] = {
        "machine": {"topology": topology, "links": {"bandwidth_gbps": 10.0}},
        "jobs": [job],
    }
    if row.section == "power.nic" and row.field != "coalescing":
        # The coalescing fields resolve only where coalescing is on.
        cfg["power"] = {"nic": {"coalescing": True}}
    if row.section == "power.links" and row.field in LINK_IN_FORCE:
        cfg["power"] = {"links": LINK_IN_FORCE[row.field]}
    return cfg


def resolved(cfg: dict[str, Any]) -> dict[str, Any]:
    return Config.from_dict(cfg).resolved()


# The link power table under which a policy's field resolves (docs/config.md: the resolved
# configuration shows a policy's parameters where it uses them, a depth where there is a choice).
FAST_WAKE_PHY = "40gbase-kr4"
LINK_IN_FORCE: dict[str, dict[str, str]] = {
    "slowdown_bound": {"policy": "perfbound"},
    "adaptive_delay_share": {"policy": "adaptive"},
    "adaptive_window": {"policy": "adaptive"},
    "predictive_ngram": {"policy": "predictive"},
    "predictive_confidence": {"policy": "predictive"},
    "depth": {"phy": FAST_WAKE_PHY},
    "fast_wake_saving": {"phy": FAST_WAKE_PHY, "policy": "oracle"},
}

MISSING = object()
# Fields a resolved configuration leaves out when unset, and why.
LEFT_OUT = {
    ("jobs", "name"): "made from the job's index (job0, job1, ...) as results are built",
    ("jobs", "memory"): "an empty memory profile is no profile",
    ("machine", "network"): "written out only when not the default, so that a packet run's "
    "results and sweep hash are those of the same configuration without it",
    ("machine", "flow_train_segments"): "written out only when not the default, as `network` "
    "(its default is checked against the engine's below)",
    ("machine", "flow_segment_packets"): "written out only when not the default, as `network` "
    "(its default is checked against the engine's below)",
    ("machine", "flow_short_unit_packets"): "written out only when not the default, as "
    "`network` (its default is checked against the engine's below)",
}
# Fields the reference lists for some kinds of a shared table only.
ONLY_FOR = {
    ("jobs.workload", "root"): {"bcast", "reduce"},
    ("jobs.workload", "bucket_period_us"): {"shaped_stream"},
}


def lookup(cfg: dict[str, Any], row: Row) -> Any:
    node: Any = cfg
    for part in [p for p in row.section.split(".") if p] + [row.field]:
        if isinstance(node, list):
            node = node[0]
        if not isinstance(node, dict) or part not in node:
            return MISSING
        node = node[part]
    return node


def test_the_reference_lists_the_fields_of_every_section() -> None:
    found = {(r.section, r.kind) for r in rows()}
    # One table per section, and one per kind of topology and workload.
    for section in ("", "machine", "machine.routing", "machine.links", "mpi", "mpi.wait"):
        assert (section, None) in found
    for section in ("jobs", "jobs.trace", "jobs.trace.window", "power", "power.links"):
        assert (section, None) in found
    for section in ("power.switch", "power.nic", "power.cores", "power.dimms", "output"):
        assert (section, None) in found
    for kind in TOPOLOGY:
        assert ("machine.topology", kind) in found
    for kind in ("pingpong", "a2a", "paced_stream", "shaped_stream", "ft", "is", "allgather"):
        assert ("jobs.workload", kind) in found


def checked(r: Row) -> bool:
    only = ONLY_FOR.get((r.section, r.field))
    return (
        r.section != "joblog"
        and literal(r) is not None
        and (r.section, r.field) not in LEFT_OUT
        and (only is None or r.kind in only)
    )


def name(r: Row) -> str:
    return f"{r.section}.{r.field}" + (f"[{r.kind}]" if r.kind else "")


@pytest.mark.parametrize("row", [r for r in rows() if checked(r)], ids=name)
def test_a_literal_default_is_what_the_simulator_resolves(row: Row) -> None:
    got = lookup(resolved(config(row)), row)
    assert got is not MISSING, f"docs/config.md:{row.line}: {row.section}.{row.field} not resolved"
    want = literal(row)
    assert got == want, f"docs/config.md:{row.line}: {row.section}.{row.field}: {got!r} != {want!r}"


def test_the_flow_models_defaults_are_the_engines() -> None:
    # Left out of a resolved configuration, these defaults come from the engine itself.
    engine = {
        "flow_train_segments": _tracewatt.FLOW_TRAIN_SEGMENTS,
        "flow_segment_packets": _tracewatt.FLOW_SEGMENT_PACKETS,
        "flow_short_unit_packets": _tracewatt.FLOW_SHORT_UNIT_PACKETS,
    }
    documented = {
        r.field: literal(r) for r in rows() if r.section == "machine" and r.field in engine
    }
    assert documented == engine


PER_POLICY = re.compile(r"`([a-z]+)`: `([^`]+)`")


@pytest.mark.parametrize(
    "row", [r for r in rows() if r.section == "mpi.wait" and PER_POLICY.match(r.default)], ids=name
)
def test_a_default_per_wait_policy_is_what_the_simulator_resolves(row: Row) -> None:
    defaults = PER_POLICY.findall(row.default)
    assert {p for p, _ in defaults} == {"spin", "block", "mwait", "oracle"}, row
    for policy, value in defaults:
        cfg = config(row)
        cfg["mpi"] = {"wait": {"policy": policy}}
        got = lookup(resolved(cfg), row)
        assert got == float(value), f"docs/config.md:{row.line}: {policy}: {got!r} != {value}"


def test_the_node_base_power_default_is_what_the_simulator_resolves() -> None:
    # Given in a sentence, not a table: "`[power.nodes]`: `base_w` (float >= 0, default `90.0`)".
    m = re.search(r"`\[power\.nodes\]`: `base_w` \([^)]*default `([^`]+)`\)", CONFIG_MD.read_text())
    assert m is not None
    row = Row(0, "power.nodes", None, "base_w", m.group(1))
    assert lookup(resolved(config(row)), row) == float(m.group(1))


@pytest.mark.parametrize(
    "row", [r for r in rows() if r.section == "joblog" and literal(r) is not None], ids=name
)
def test_a_joblog_default_is_what_the_analysis_uses(row: Row) -> None:
    defaults = {f.name: f.default for f in dataclasses.fields(JoblogSettings)}
    assert row.field in defaults, f"docs/config.md:{row.line}: no setting {row.field}"
    assert defaults[row.field] == literal(row), f"docs/config.md:{row.line}: {row.field}"
