"""Libraries only tests use, from the `test` extra (`make test` installs it; `make run` does not).

A test that needs one asks for it here and is skipped, saying how to install it, where the
library is absent (a runtime-only install: `pip install -e .`).
"""

from __future__ import annotations

import pytest

HOW = "it is in the test extra: pip install -e '.[test]' (make test installs it)"


def need(module: str, distribution: str):
    """`module` imported, or this test (or module, at import time) skipped with the reason."""
    return pytest.importorskip(module, reason=f"{distribution} is not installed; {HOW}")


def ces_v1():
    """google.cloud.ces_v1.types (CX Agent Studio's official messages)."""
    return need("google.cloud.ces_v1.types", "google-cloud-ces")


def ces_v1beta():
    """google.cloud.ces_v1beta.types (golden evaluations, the field lists)."""
    return need("google.cloud.ces_v1beta.types", "google-cloud-ces")
