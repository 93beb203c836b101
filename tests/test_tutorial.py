"""The tutorial, docs/tutorial.md, as a test: its commands run in order, each prints what the
tutorial pastes under it, and every figure its prose quotes is one the commands printed or ran
with. The doc is the test's input, so the two cannot drift apart.

- **Commands** are the ``$ `` lines of its ``console`` blocks, run from a directory where
  ``examples`` and ``tests`` are the repository's (the tutorial runs from the clone's root);
  ``tracewatt ...`` runs the command line in-process, ``cat FILE`` prints a file.
- **Pasted output**: the lines under a command, up to the next command or the block's end, are
  its standard output. ``...`` lines mark what the tutorial leaves out; each run of lines
  between them appears in the real output as consecutive lines, in the same order, exactly as
  printed. The tolerance on a number is the rounding the command prints with (the simulation is
  deterministic, so the figures are the same on every machine).
- **Quoted figures**: every number in the prose (outside code, headings, link targets and
  references to its steps)
  occurs among the numbers of the doc's code (pasted outputs, commands, hand computations, the
  configuration excerpts), the tutorial's configuration files and the resolved configuration
  and results of its first run (``summary.json``: the power model's defaults).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conftest import ROOT, CliResult

TUTORIAL = ROOT / "docs" / "tutorial.md"
FENCE = re.compile(r"^ *```(\w*)\n(.*?)^ *```\n", re.M | re.S)
NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?")


@dataclass
class Step:
    command: str
    expected: list[str] = field(default_factory=list)


def _steps(doc: str) -> list[Step]:
    steps: list[Step] = []
    for m in FENCE.finditer(doc):
        if m[1] != "console":
            continue
        for line in m[2].splitlines():
            if line.startswith("$ "):
                steps.append(Step(line[2:]))
            else:
                assert steps, f"{TUTORIAL}: a console block starts with output, not a command"
                steps[-1].expected.append(line.rstrip())
    return steps


def _chunks(expected: list[str]) -> list[list[str]]:
    chunks: list[list[str]] = [[]]
    for line in expected:
        if line == "...":
            chunks.append([])
        else:
            chunks[-1].append(line)
    return [c for c in chunks if c]


def _find_in_order(chunks: list[list[str]], actual: list[str]) -> str | None:
    """None if every chunk is a run of consecutive lines of ``actual``, in order; else the
    first chunk that is not."""
    at = 0
    for chunk in chunks:
        n = len(chunk)
        found = next(
            (i for i in range(at, len(actual) - n + 1) if actual[i : i + n] == chunk), None
        )
        if found is None:
            return "\n".join(chunk)
        at = found + n
    return None


def _numbers(text: str) -> set[float]:
    return {float(x.replace(",", "")) for x in NUMBER.findall(text)}


def test_the_tutorial_commands_print_what_it_pastes(
    run_cli: Callable[..., CliResult], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = TUTORIAL.read_text(encoding="utf-8")
    steps = _steps(doc)
    assert [s.command.split()[:2] for s in steps][:3] == [
        ["tracewatt", "trace"],
        ["tracewatt", "machine"],
        ["tracewatt", "run"],
    ]
    for name in ("examples", "tests"):
        (tmp_path / name).symlink_to(ROOT / name)
    monkeypatch.chdir(tmp_path)
    for step in steps:
        args = shlex.split(step.command)
        if args[0] == "cat":
            out = Path(args[1]).read_text(encoding="utf-8")
        else:
            assert args[0] == "tracewatt", step.command
            r = run_cli(*args[1:])
            assert r.code == 0, f"{step.command}\n{r.err}"
            out = r.out
        actual = [line.rstrip() for line in out.splitlines()]
        missing = _find_in_order(_chunks(step.expected), actual)
        assert missing is None, (
            f"`{step.command}` does not print, as docs/tutorial.md pastes it:\n{missing}\n\n"
            f"It prints:\n{out}"
        )

    # The figures quoted in the prose.
    code = "\n".join(m[2] for m in FENCE.finditer(doc))
    prose = FENCE.sub("", doc)
    inline = "\n".join(re.findall(r"`([^`\n]+)`", prose))
    prose = re.sub(r"`[^`\n]+`", "", prose)
    prose = re.sub(r"\]\([^)]*\)", "]", prose)
    prose = "\n".join(line for line in prose.splitlines() if not line.startswith("#"))
    prose = re.sub(r"\bsteps? \d", "", prose)
    configs = "\n".join(
        p.read_text(encoding="utf-8") for p in sorted((ROOT / "examples" / "tutorial").glob("*"))
    )
    run = json.loads((tmp_path / "ft-run" / "summary.json").read_text(encoding="utf-8"))
    known = _numbers(code) | _numbers(inline) | _numbers(configs) | _numbers(json.dumps(run))
    unknown = sorted(_numbers(prose) - known)
    assert not unknown, f"docs/tutorial.md quotes figures no command printed: {unknown}"
