"""Where two model requests first differ: a field path and the two values around it.

``first_difference(old, new)`` walks two JSON values (parts of ``ModelRequest.as_json``)
in order — an object's keys as the newer side has them, then those only the older has; a
list's items by index — to the first place they differ, and gives its path
(``contents[3].parts[0].text``) and the two sides there: a value that is not text whole
(cut at ``VALUE_CHARS``), a text around its first differing character (``WINDOW_CHARS``
on each side, ``…`` where it is cut), ``None`` for a side that has nothing there.

A ``<state_update>name: value</state_update>`` block of a text (how the runtime shows the
model a variable) whose value is JSON is read as the state: the path goes on into it
(``contents[3].parts[0].text > state.sm.pending.guest_name``), so a drift in a large state
object names the key that changed, not the first 100 characters they share.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = ["Difference", "first_difference", "prefix_length"]

WINDOW_CHARS = 40
VALUE_CHARS = 120
_OPEN, _CLOSE = "<state_update>", "</state_update>"


@dataclass(frozen=True, slots=True)
class Difference:
    path: str
    before: str | None  # None: the older side has nothing there
    after: str | None


def _shown(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1] + "…"


def _around(text: str, at: int) -> str:
    start, end = max(0, at - WINDOW_CHARS), at + WINDOW_CHARS
    return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")


def _state_block(text: str, at: int) -> tuple[int, int] | None:
    """The (start, end) of the ``<state_update>`` block of `text` that holds `at`."""
    start = text.rfind(_OPEN, 0, at + 1)
    if start < 0:
        return None
    end = text.find(_CLOSE, start)
    if end < 0 or end < at:
        return None
    return start, end


def _state_value(block: str) -> tuple[str, Any] | None:
    name, sep, value = block[len(_OPEN) :].partition(": ")
    if not sep or not name.strip():
        return None
    try:
        return name.strip(), json.loads(value)
    except ValueError:
        return None


def prefix_length(a: str, b: str) -> int:
    """How many characters `a` and `b` share from their start."""
    for index, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return index
    return min(len(a), len(b))


def _text_difference(old: str, new: str, path: str) -> Difference:
    at = prefix_length(old, new)
    old_block, new_block = _state_block(old, at), _state_block(new, at)
    if old_block and new_block and old_block[0] == new_block[0]:
        before = _state_value(old[old_block[0] : old_block[1]])
        after = _state_value(new[new_block[0] : new_block[1]])
        if before and after and before[0] == after[0] and before[1] != after[1]:
            inner = first_difference(before[1], after[1], f"{path} > state.{before[0]}")
            if inner is not None:
                return inner
    return Difference(path, _around(old, at), _around(new, at))


def first_difference(old: Any, new: Any, path: str = "") -> Difference | None:
    """The first place `old` and `new` differ (None when they are equal)."""
    if old == new and type(old) is type(new):
        return None
    if isinstance(old, dict) and isinstance(new, dict):
        keys = list(new) + [k for k in old if k not in new]
        for key in keys:
            sub = f"{path}.{key}" if path else str(key)
            if key not in old:
                return Difference(sub, None, _shown(new[key]))
            if key not in new:
                return Difference(sub, _shown(old[key]), None)
            found = first_difference(old[key], new[key], sub)
            if found is not None:
                return found
        return None
    if isinstance(old, list) and isinstance(new, list):
        for index in range(max(len(old), len(new))):
            sub = f"{path}[{index}]"
            if index >= len(old):
                return Difference(sub, None, _shown(new[index]))
            if index >= len(new):
                return Difference(sub, _shown(old[index]), None)
            found = first_difference(old[index], new[index], sub)
            if found is not None:
                return found
        return None
    if isinstance(old, str) and isinstance(new, str):
        return _text_difference(old, new, path)
    return Difference(path, _shown(old), _shown(new))
