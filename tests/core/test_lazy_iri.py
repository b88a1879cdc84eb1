"""The `iri` formats are checked, but their parser is built only by a process that needs it
(agents/core/lazy_iri.py: rfc3987-syntax builds it at import, 0.6 to 1.4 s a process)."""

from __future__ import annotations

import subprocess
import sys

from jsonschema import Draft202012Validator

import agents.core  # noqa: F401 - installs the stand-in before jsonschema is imported


def test_importing_the_core_builds_no_iri_parser():
    probe = "import sys, agents.core, jsonschema; print('lark' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "False"


def test_an_iri_format_is_still_checked():
    validator = Draft202012Validator(
        {"type": "string", "format": "iri"}, format_checker=Draft202012Validator.FORMAT_CHECKER
    )
    assert [e.validator for e in validator.iter_errors("http://exa mple.com/")] == ["format"]


def test_a_valid_iri_passes():
    validator = Draft202012Validator(
        {"type": "string", "format": "iri"}, format_checker=Draft202012Validator.FORMAT_CHECKER
    )
    assert list(validator.iter_errors("https://example.com/café")) == []
