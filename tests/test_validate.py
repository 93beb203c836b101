"""The validation checks of research.md (the same functions `tracewatt validate` runs)."""

from __future__ import annotations

import pytest

from tracewatt import validate


@pytest.mark.parametrize("check_id", ["1", "2", "3", "4"])
def test_validation_check_passes(check_id: str) -> None:
    c = validate.CHECKS[check_id]()
    assert c.id == check_id
    assert c.passed, f"{c.name}: target {c.target}; simulated {c.simulated}\n" + "\n".join(
        c.details
    )
    assert c.details, "a check reports what it compared"


@pytest.mark.slow
def test_sensitivity_shapes_match_the_paper() -> None:
    c = validate.check_sensitivity()
    assert c.passed, c.simulated


def test_validate_cli_prints_target_and_simulated_and_fails_with_status_4_on_failure(
    tmp_path: object,
) -> None:
    from tracewatt import cli

    assert cli.main(["validate", "--check", "3", "--quiet"]) == 0
    assert cli.main(["validate", "--check", "9"]) == 2
