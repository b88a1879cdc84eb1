"""jsonschema's `iri` formats, checked by rfc3987-syntax, without its import-time cost.

`jsonschema` imports `rfc3987_syntax` when it is imported itself, and that module builds a
Lark parser of RFC 3987's grammar at import: 0.6 to 1.4 s on this 2-core machine, paid by
every process that imports the core (each `manage.py` command, each gunicorn and task
worker, each test worker) although almost no schema uses `format: iri`. `install()`, run
before the first `import jsonschema` (from `agents.core`), puts a stand-in module in its
place whose `is_valid_syntax` imports the real one on first use and then defers to it: the
same checks, paid for only by a process that meets an `iri`.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types
from collections.abc import Callable

NAME = "rfc3987_syntax"
_lock = threading.Lock()
_real: Callable[[str, str], bool] | None = None


def _is_valid_syntax(rule: str, value: str) -> bool:
    global _real
    if _real is None:
        with _lock:
            if _real is None:
                stand_in = sys.modules.pop(NAME, None)
                try:
                    _real = importlib.import_module(NAME).is_valid_syntax
                except BaseException:
                    if stand_in is not None:
                        sys.modules[NAME] = stand_in
                    raise
    return _real(rule, value)


def install() -> None:
    """Stand in for rfc3987_syntax until it is used (a no-op once jsonschema or the real
    module is imported, or when the package is not installed: jsonschema then skips `iri`)."""
    if NAME in sys.modules or "jsonschema" in sys.modules:
        return
    if importlib.util.find_spec(NAME) is None:
        return
    stand_in = types.ModuleType(NAME, __doc__)
    stand_in.is_valid_syntax = _is_valid_syntax  # type: ignore[attr-defined]
    sys.modules[NAME] = stand_in


install()
