"""The documentation stands on its own: every link and repository path it names exists in the
repository, it describes the product rather than how it came to be, and README's validation table
is what ``tracewatt validate`` gives (through docs/data/validation.json)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from conftest import ROOT, load_script
from tracewatt import validation

DOCS = sorted(
    [
        ROOT / "README.md",
        *(ROOT / "docs").glob("*.md"),
        *(ROOT / "crates").glob("*/README.md"),
        ROOT / "tracer" / "README.md",
        ROOT / "tests" / "data" / "README.md",
    ]
)

#: Lines that speak of the project's history instead of the product, each with an example.
HISTORY = {
    r"\bsession \d": "session 6's build",
    r"\bissue #?\d": "issue 2, issue #19",
    r"(?<![\w&/#`])#\d+\b": "#18 as an issue reference",
    r"\bused to\b": "used to sleep",
    r"\bthe issue's\b": "the issue's bar",
    r"\bNot fixed\b": "Not fixed this session",
    r"\bwhat changed\b": "Why it failed, and what changed",
    r"\bthe build before\b": "against the build before them",
    r"(?-i:\(Was\b)": "(Was `block_w`, ...)",
    r"\bthe lead\b": "written by the lead",
    r"research\.md": "research.md section 2",
    r"\.\./shared\b": "beside the repository, `../shared/data`",
}
HISTORY_RE = re.compile("|".join(f"(?:{p})" for p in HISTORY), re.IGNORECASE)

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
#: A code span: within one paragraph, so it may continue on the next line.
CODE_SPAN = re.compile(r"`((?:[^`\n]|\n(?![ \t]*\n))+)`")
#: A repository path in a code span: relative, at least one directory, no placeholders (a
#: leading ``./`` is the working directory's).
REPO_PATH = re.compile(r"(?!\.\.?/)[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+/?")
#: Just before a path in another repository: ``owner/repo @commit, `path` `` (tests/data's
#: origins) or ``owner/repo `path` ``, ``owner/repo's `path` ``.
ORIGIN = re.compile(r"(?:@[0-9a-f]{7,40},|\b[\w.-]+/[\w.-]+(?:'s)?) $")
#: What building the tracer writes (docs/cli.md, record), not in a fresh clone.
BUILD_OUTPUT = "tracer/build"
ANCHOR_TAG = re.compile(r"""<a id=["']([^"']+)["']""")


def prose(path: Path) -> str:
    """The file's text with fenced code blocks blanked (lines kept, so numbers still hold)."""
    out = []
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        fence = line.lstrip().startswith("```")
        out.append("" if fenced or fence else line)
        fenced ^= fence
    return "\n".join(out)


def code_spans(text: str) -> list[tuple[int, str, str]]:
    """Each code span: its line number, its text, and the text before it on its line."""
    return [
        (
            text.count("\n", 0, m.start()) + 1,
            m.group(1),
            text[text.rfind("\n", 0, m.start()) + 1 : m.start()],
        )
        for m in CODE_SPAN.finditer(text)
    ]


def prose_lines(path: Path) -> list[tuple[int, str]]:
    """The lines outside code blocks and code spans, numbered from 1."""
    text = CODE_SPAN.sub(lambda m: "\n" * m.group(0).count("\n"), prose(path))
    return list(enumerate(text.splitlines(), 1))


def slug(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    for line in prose(path).splitlines():
        if line.startswith("#"):
            found.add(slug(line.lstrip("#")))
        found.update(ANCHOR_TAG.findall(line))
    return found


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_the_scanned_documents_exist() -> None:
    assert ROOT / "docs" / "references.md" in DOCS
    assert all(d.is_file() for d in DOCS)


@pytest.mark.parametrize("doc", DOCS, ids=rel)
def test_every_relative_link_resolves(doc: Path) -> None:
    bad = []
    for n, line in prose_lines(doc):
        for target in LINK.findall(line):
            if re.match(r"[a-z]+:", target):  # https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            dest = (doc.parent / file_part).resolve() if file_part else doc
            if not dest.exists():
                bad.append(f"{rel(doc)}:{n}: {target}: no such file")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                bad.append(f"{rel(doc)}:{n}: {target}: no such anchor in {dest.name}")
    assert not bad, "\n".join(bad)


def named_paths(doc: Path, text: str) -> list[tuple[int, str]]:
    """The repository paths a text names in code spans, with their lines: relative to the
    document's folder or to the repository, by the first component that exists there."""
    out = []
    for n, span, before in code_spans(text):
        span = re.sub(r":\d+$", "", span.strip())
        if ORIGIN.search(before) or not REPO_PATH.fullmatch(span) or span.startswith(BUILD_OUTPUT):
            continue
        first = span.split("/")[0]
        if (doc.parent / first).exists() or (ROOT / first).exists():
            out.append((n, span))
    return out


@pytest.mark.parametrize("doc", DOCS, ids=rel)
def test_every_named_repository_path_exists(doc: Path) -> None:
    bad = [
        f"{rel(doc)}:{n}: `{p}`"
        for n, p in named_paths(doc, prose(doc))
        if not ((doc.parent / p).exists() or (ROOT / p).exists())
    ]
    assert not bad, "no such file or folder:\n" + "\n".join(bad)


def test_the_path_finder_sees_repository_paths_only() -> None:
    readme = ROOT / "README.md"
    text = "`docs/config.md`, `tests/data/`, `study-results/report.html`, `jobs[0]`, `a / b`"
    assert named_paths(readme, text) == [(1, "docs/config.md"), (1, "tests/data/")]
    text = "x\nsstsimulator/sst-dumpi @a4c8bf5, `tests/traces/` | `LICENSES/sst-dumpi.txt`"
    assert named_paths(ROOT / "tests" / "data" / "README.md", text) == [
        (2, "LICENSES/sst-dumpi.txt")
    ]


@pytest.mark.parametrize("doc", DOCS, ids=rel)
def test_no_line_speaks_of_development_history(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    bad = [
        f"{rel(doc)}:{n}: {m.group(0)!r} in {line.strip()[:120]!r}"
        for n, line in enumerate(text.splitlines(), 1)
        if (m := HISTORY_RE.search(line))
    ]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("example", list(HISTORY.values()))
def test_each_history_pattern_catches_its_example(example: str) -> None:
    assert HISTORY_RE.search(example), example


def test_history_patterns_leave_product_text_alone() -> None:
    for line in [
        "the idle timer restarts; [references](references.md#section-2) section 2",
        "a rank used 2 GB; `#[ignore]`; colour &#8212; x#1",
        "it was generated by a script (was it?)",
    ]:
        assert not HISTORY_RE.search(line), line


# --------------------------------------------------------------------- validation table


def table_script() -> ModuleType:
    return load_script("validation_table")


def committed_checks(network: str = "packet") -> list[dict[str, Any]]:
    name = {"packet": "validation.json", "flow": "validation-flow.json"}[network]
    checks: list[dict[str, Any]] = json.loads(
        (ROOT / "docs" / "data" / name).read_text(encoding="utf-8")
    )
    return checks


def test_readme_validation_table_is_the_committed_validate_output() -> None:
    script = table_script()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert script.readme_table(readme) == script.render(committed_checks())
    assert script.main(["--check"]) == 0


def test_fast_mode_validation_table_is_the_committed_flow_validate_output() -> None:
    script = table_script()
    page = ROOT / "docs" / "fast-mode.md"
    text = page.read_text(encoding="utf-8")
    assert script.readme_table(text, page) == script.render(committed_checks("flow"))
    assert script.main(["--check", "--network", "flow"]) == 0


def test_validation_table_rows_by_hand() -> None:
    script = table_script()
    rows = script.render(
        [
            {"id": "4", "name": "Bound", "target": "a | b", "simulated": "x", "passed": True},
            {"id": "mpi-wait", "name": "Wait", "target": "t", "simulated": "s", "passed": False},
        ]
    ).splitlines()
    assert rows[2:] == [
        "| 4. Bound | a \\| b | x | passes |",
        "| `mpi-wait`: Wait | t | s | **fails** |",
    ]


#: Checks quick enough for the default run (about 3 CPU-seconds together; check 5 takes about a
#: minute and mpi-wait about 10 s): the slow test runs every check.
QUICK_CHECKS = ["1", "2", "3", "4", "nic-coalescing", "whole-system", "dimm-hotplug", "policies"]


def test_quick_checks_give_the_committed_validate_output() -> None:
    committed = {c["id"]: c for c in committed_checks()}
    assert sorted(committed) == sorted(validation.CHECKS)
    for check in validation.run_checks(QUICK_CHECKS):
        assert check.to_dict() == committed[check.id]


def test_quick_checks_on_flows_give_the_committed_flow_validate_output() -> None:
    committed = {c["id"]: c for c in committed_checks("flow")}
    assert sorted(committed) == sorted(validation.CHECKS)
    # Interrupt coalescing needs frames: on flows it is not applicable, never a pass.
    assert committed["nic-coalescing"]["passed"] is None
    for check in validation.run_checks(QUICK_CHECKS, network="flow"):
        assert check.to_dict() == committed[check.id]


@pytest.mark.slow
def test_every_check_gives_the_committed_validate_output() -> None:
    assert [c.to_dict() for c in validation.run_checks()] == committed_checks()
    flows = [c.to_dict() for c in validation.run_checks(network="flow")]
    assert flows == committed_checks("flow")


# --------------------------------------------------------------------- policies table


def policies_script() -> ModuleType:
    return load_script("policies_table")


def test_policies_page_table_is_the_committed_dataset() -> None:
    script = policies_script()
    rows = script.load_rows(ROOT / "docs" / "data" / "policies.json")
    page = (ROOT / "docs" / "policies.md").read_text(encoding="utf-8")
    assert script.page_table(page) == script.render(rows)
    assert script.main(["--check"]) == 0


def test_policies_table_rows_by_hand() -> None:
    script = policies_script()

    def row(policy: str, saving: float, share: float | None, slowdown: float) -> dict[str, Any]:
        return {
            "suite": "S",
            "workload": "w",
            "component": "links",
            "policy": policy,
            "component_saving_pct": saving,
            "saving_pct": 0.0,
            "slowdown_pct": slowdown,
            "share_of_bound_pct": share,
            "wakes": 0,
        }

    rows = [
        row("timeout", 4.0, 50.0, 0.25),
        row("adaptive", -8.0, None, 12.5),
        row("perfbound", 2.0, 25.0, 0.0),
        row("predictive", 6.0, 75.0, 1.0),
        row("oracle", 8.0, 100.0, 0.0),
        {**row("ideal", 75.0, 100.0, 0.0), "component": "dimms", "suite": "D"},
    ]
    lines = script.render(rows).splitlines()
    assert lines[2] == (
        "| S | w | 8.0 % | 50.0 % / +0.25 % | - / +12.50 % | 25.0 % / +0.00 % | 75.0 % / +1.00 % |"
    )
    assert lines[-1] == "| D | `ideal` | 75.0 % | 100.0 % | +0.00 % |"
