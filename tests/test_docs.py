"""The docs (reference/diagnostics.md) document every diagnostic code the product can emit, from the one registry."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agents import services
from agents.core import Diagnostic, Severity, all_codes, codes
from agents.core.diagnostics import UnregisteredCode

README = Path(__file__).resolve().parent.parent / "docs" / "reference" / "diagnostics.md"
ROW = re.compile(r"^\| `(SC\d{3})` \| (.*) \|$", re.MULTILINE)


def readme_rows(text: str) -> dict[str, str]:
    return dict(ROW.findall(text))


def test_every_code_is_in_the_readme_table():
    text = README.read_text(encoding="utf-8")
    documented = readme_rows(text)
    registered = {**services.CODES, **all_codes()}
    missing = sorted(set(registered) - set(documented))
    assert not missing, (
        f"docs/reference/diagnostics.md lacks {missing} (python -m agents.core.codes prints the table)"
    )


def test_the_readme_table_is_the_registry_row_for_row():
    documented = readme_rows(README.read_text(encoding="utf-8"))
    assert documented == codes.REGISTRY


def test_the_check_fails_when_the_readme_lacks_a_code():
    # The proof the issue asks for: remove one row (SC401, a simulation code the old
    # collector missed) and the check reports it.
    text = README.read_text(encoding="utf-8")
    without = "".join(
        line for line in text.splitlines(keepends=True) if not line.startswith("| `SC401` |")
    )
    missing = sorted(set(codes.REGISTRY) - set(readme_rows(without)))
    assert missing == ["SC401"]


def test_the_simulation_codes_are_registered():
    assert {f"SC{n}" for n in range(401, 419)} <= set(all_codes())


def test_a_diagnostic_with_an_unregistered_code_is_refused():
    with pytest.raises(UnregisteredCode, match="SC999"):
        Diagnostic("SC999", Severity.ERROR, "undocumented")
