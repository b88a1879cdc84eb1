"""Render a typed variable value as prompt text (static substitution and state updates).

Rules (SPEC §2): text as is; numbers as JSON numbers (``3`` for ``3`` and
``3.0``, ``2.5``); booleans ``true``/``false``; ``None`` as ``null``; objects and
lists as JSON with ``", "`` and ``": "`` separators, keys in stored order, not
ASCII-escaped.

Choices the spec leaves open:

- NaN and infinities, which JSON cannot represent, render as ``NaN``,
  ``Infinity`` and ``-Infinity`` — what JavaScript's ``String(x)`` and Python's
  ``json.dumps`` (with its default ``allow_nan``) print, so a designer sees the
  odd value instead of an empty string or a crash. The same applies inside
  objects and lists.
- An integral float renders without ``.0`` at any depth (``{"n": 3}`` for
  ``{"n": 3.0}``) below ``1e16`` in magnitude; beyond, it keeps Python's
  shortest exponent form (``1e+16``, valid JSON), so a huge number never
  becomes hundreds of digits. ``-0.0`` renders as ``0``, as in JSON.stringify.
- Anything JSON cannot encode (a set, a date, a non-string key that is not a
  number) falls back to ``str()``: rendering never raises.
"""

from __future__ import annotations

import json
import math
from typing import Any

_INTEGRAL_FLOAT_LIMIT = 1e16


_NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def _render_float(value: float) -> str:
    # repr is the shortest round-tripping form; it ends in ".0" exactly for
    # integral floats below 1e16 and uses an exponent (valid JSON) beyond.
    text = float.__repr__(value)
    if text.endswith(".0"):
        return "0" if text == "-0.0" else text[:-2]
    return _NON_FINITE.get(text, text)


def _normalize(value: Any) -> Any:
    """A copy of a JSON-like structure with integral floats turned into ints."""
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer() and abs(value) < _INTEGRAL_FLOAT_LIMIT:
            return int(value)
        return float(value)
    if isinstance(value, dict):
        return {key: _normalize(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_normalize(item) for item in value]
    return value


_LEAVES = frozenset({str, int, bool, type(None)})


def _has_float(value: Any) -> bool:
    """Whether a float is anywhere in `value` (dicts' values, lists, tuples): one loop over
    an explicit stack, exact types first (a subclass is checked as before)."""
    stack = [value]
    pop, push = stack.pop, stack.extend
    # A container seen once is not walked again: a value that contains itself (a list
    # appended to itself) ends the walk instead of looping for ever.
    seen: set[int] = set()
    while stack:
        node = pop()
        kind = type(node)
        if kind in _LEAVES:
            continue
        if kind is float or isinstance(node, float):
            return True
        if not isinstance(node, dict | list | tuple):
            continue
        key = id(node)
        if key in seen:
            continue
        seen.add(key)
        push(node.values() if isinstance(node, dict) else node)
    return False


def render_value(value: Any, *, float_free: bool = False) -> str:
    """The text a value becomes in a prompt or a ``<state_update>`` event. Never raises.
    `float_free`: the caller knows no float is anywhere in `value` (a sandbox answer
    parsed without one), so it is not walked to find one."""
    value_type = type(value)
    if value_type is str:
        return value
    if value is None:
        return "null"
    if value_type is bool:
        return "true" if value else "false"
    if value_type is int:
        return int.__repr__(value)
    if value_type is float:
        return _render_float(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return _render_float(float(value))
    if isinstance(value, dict | list | tuple):
        try:
            if not float_free and _has_float(value):
                value = _normalize(value)
            return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)
        except (TypeError, ValueError, RecursionError):
            pass
    try:
        return str(value)
    except Exception:
        return object.__repr__(value)
