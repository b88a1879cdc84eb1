"""The core is pure Python: importing any of its modules loads no Django module (STYLE.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "agents" / "core"

CHECK = """
import importlib, pkgutil, sys
import agents.core
names = [m.name for m in pkgutil.walk_packages(agents.core.__path__, "agents.core.")]
for name in names:
    importlib.import_module(name)
loaded = sorted(m for m in sys.modules if m == "django" or m.startswith("django."))
assert not loaded, loaded
print(len(names))
"""


def test_no_core_module_imports_django():
    completed = subprocess.run(
        [sys.executable, "-c", CHECK],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    # every module, and every sub-package (its __init__), below agents/core — less the
    # files the ADK export ships into a package (agents/core/adk/shipped/: not a Statecraft
    # module; it imports google-adk and its package's own siblings)
    shipped = CORE / "adk" / "shipped"
    on_disk = len(
        [p for p in CORE.rglob("*.py") if p != CORE / "__init__.py" and shipped not in p.parents]
    )
    assert int(completed.stdout.strip()) == on_disk  # every module was imported
