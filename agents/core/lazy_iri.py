"""Defer ``rfc3987_syntax`` (jsonschema's ``iri`` / ``iri-reference`` format checks) until a
value is actually checked against one of those formats.

``jsonschema._format`` imports ``rfc3987_syntax`` when it is installed (the
``format-nongpl`` extra), and that import builds 39 Earley parsers with Lark: ~1.5 to 2 s,
about 10x a fixed 3-million-multiplication loop, on every process start (``manage.py``,
workers, gunicorn) although almost no schema uses those formats (README, Benchmarks).
:func:`defer` puts a stand-in module in ``sys.modules`` before jsonschema is imported; the
first call (``is_valid_syntax``, the one name jsonschema takes, or any other attribute)
imports the real module and goes to it from then on, so the checks are the same.

Standard library only; imported first by :mod:`agents.core` (every jsonschema import is under it).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types
from typing import Any

NAME = "rfc3987_syntax"
_lock = threading.Lock()


def _real() -> types.ModuleType:
    with _lock:
        module = sys.modules.get(NAME)
        if module is None or getattr(module, "_statecraft_stand_in", False):
            sys.modules.pop(NAME, None)
            module = importlib.import_module(NAME)
        return module


def _is_valid_syntax(term: str, value: str) -> bool:
    return _real().is_valid_syntax(term, value)


def _getattr(name: str) -> Any:
    if name.startswith("__"):  # the import system asks for __path__, __spec__...: not a use
        raise AttributeError(name)
    return getattr(_real(), name)


def defer() -> None:
    """Install the stand-in (once; nothing when the real module is loaded or absent)."""
    if NAME in sys.modules or importlib.util.find_spec(NAME) is None:
        return
    stand_in = types.ModuleType(NAME, "stand-in: imports rfc3987_syntax at first use")
    stand_in._statecraft_stand_in = True  # type: ignore[attr-defined]
    stand_in.is_valid_syntax = _is_valid_syntax  # type: ignore[attr-defined]
    stand_in.__getattr__ = _getattr  # type: ignore[attr-defined]
    sys.modules[NAME] = stand_in


defer()
