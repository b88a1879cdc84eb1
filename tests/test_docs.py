"""The README documents every diagnostic code the product can emit."""

from __future__ import annotations

from pathlib import Path

from agents import services
from agents.core import all_codes

README = Path(__file__).resolve().parent.parent / "README.md"


def test_every_code_is_in_the_readme_table():
    text = README.read_text(encoding="utf-8")
    codes = {**services.CODES, **all_codes()}
    missing = [code for code in codes if f"`{code}`" not in text]
    assert not missing, f"README lacks {missing}"
