"""The simulation's small pure helpers: value comparison, the session clock, copies of
JSON-like values, a callback's answer as model parts, and the run's constants.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agents.core.code_analysis import function_parameters
from agents.core.diagnostics import Message
from agents.core.parse import TokenKind, parse
from agents.core.render import render_value
from agents.core.spec import AppSpec, CallbackKind, CallbackSpec, ToolKind


def joined(messages: Any) -> str:
    """Messages joined with "; ", each kept a `Message` (rendered in the reader's language)."""
    items = list(messages)
    if not items:
        return ""
    out = items[0]
    for item in items[1:]:
        out = Message("%(first)s; %(rest)s", first=out, rest=item)
    return out


def same_value(a: Any, b: Any) -> bool:
    """Whether writing `b` over `a` changes nothing (see the module docstring)."""
    if a is b:  # a value is the same as itself (NaN too: two NaNs are the same value)
        return True
    kind = type(a)
    if kind is dict and type(b) is dict:  # the JSON types first: no ABC check per node
        if a.keys() != b.keys():
            return False
        for key in a:  # noqa: SIM110 - a loop: no generator frame per node
            if not same_value(a[key], b[key]):
                return False
        return True
    if kind is type(b) and kind in _EXACT:
        return a == b
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            return True
        return a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(same_value(a[key], b[key]) for key in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except Exception:
        return False


_NOW_RE = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})(?:[T ]([01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:\.\d{1,6})?)?)?"
    r"(?:Z|[+-](?:[01]\d|2[0-3]):?[0-5]\d)?"
)


def valid_now(text: str) -> bool:
    """Whether `text` is a session clock: an ISO 8601 date-time (a date alone is midnight;
    an offset or ``Z`` optional), as the sandbox's ``datetime.fromisoformat`` reads it."""
    found = _NOW_RE.fullmatch(text)
    if found is None:
        return False
    year, month, day = (int(found.group(i)) for i in (1, 2, 3))
    days = [31, 29 if year % 4 == 0 and (year % 100 or year % 400 == 0) else 28, 31, 30, 31]
    days += [30, 31, 31, 30, 31, 30, 31]
    return 1 <= month <= 12 and 1 <= day <= days[month - 1]


def state_update_text(name: str, value: Any, *, plain: bool = False) -> str:
    """`plain`: `value` is known to hold no float (``CodeResult.plain``)."""
    return f"<state_update>{name}: {render_value(value, float_free=plain)}</state_update>"


def ordered_callbacks(
    callbacks: tuple[CallbackSpec, ...], kind: CallbackKind
) -> list[CallbackSpec]:
    return sorted((c for c in callbacks if c.kind == kind), key=lambda c: c.order)


TOOL_CALLBACKS = frozenset({CallbackKind.BEFORE_TOOL, CallbackKind.AFTER_TOOL})
AUTHORED = frozenset({"agent", "tool_call", "tool_response"})
# At most this many history contents are handed to a model callback (the newest).
MAX_CONTENTS = 200
# ADK's loop calls the model again after every answer with a function call; past the
# script, at most this many calls per turn (then SC419). ADK's own cap is 500 per run.
MAX_UNSCRIPTED_CALLS = 20


def stops_on_none(value: Any) -> bool:
    return value is not None


def static_names_of(instructions: str) -> tuple[str, ...]:
    """The variables whose value the compiled instructions hold: ``{{x}}`` and the
    variables of ``{% if %}`` conditions (root names, in order of appearance)."""
    names: list[str] = []
    for token in parse(instructions).tokens:
        if token.kind is TokenKind.STATIC and token.path:
            names.append(token.path[0])
        elif token.condition is not None:
            names.extend(path[0] for path in token.condition.references if path)
    return tuple(dict.fromkeys(names))


def no_parameter_arguments(app: AppSpec, tool_name: str) -> dict[str, Any] | None:
    """``{}`` for a tool the model calls with nothing to choose (a Python tool whose
    function takes no parameter but the context, like Bella Notte's ``confirm_pending()``),
    else None: a golden's call without ``args`` of such a tool runs offline with ``{}``."""
    tool = app.tool(tool_name)
    if tool is None or tool.kind is not ToolKind.PYTHON or not tool.python_code.strip():
        return None
    return {} if function_parameters(tool.python_code, tool.name) == () else None


def response_parts(value: Any) -> tuple[dict[str, Any], ...] | None:
    """The parts of a model answer a callback returned (an ``LlmResponse``, ``Content`` or
    ``Part`` as JSON); None when the value is not an answer (Bella Notte's callbacks return
    ``{"decision": "OK"}``: the model is called)."""
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("content"), dict):
        value = value["content"]
    if isinstance(value.get("parts"), list):
        parts = value["parts"]
    elif "text" in value or "function_call" in value:
        parts = [value]
    else:
        return None
    out: list[dict[str, Any]] = []
    for part in parts:
        if not isinstance(part, dict):
            continue
        call = part.get("function_call")
        if isinstance(call, dict) and isinstance(call.get("name"), str):
            args = call.get("args")
            out.append(
                {
                    "function_call": {
                        "name": call["name"],
                        "args": args if isinstance(args, dict) else {},
                    }
                }
            )
        elif isinstance(part.get("text"), str):
            out.append({"text": part["text"]})
    return tuple(out)


_SCALARS = frozenset({str, int, float, bool, type(None)})
# Compared with == when both sides are exactly this type (as the general rules do).
_EXACT = frozenset({str, int, bool, type(None)})


def copy_tree(value: Any) -> Any:
    """A private copy of a JSON-like value (dicts, lists, tuples of scalars), as
    ``copy.deepcopy`` makes it but without its memo: the requests handed to each callback
    carry the whole history, and ``deepcopy``'s bookkeeping made `simulate` quadratic in
    cost per node (docs/benchmarks/). Anything else falls back to ``deepcopy``."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict:
        return {key: copy_tree(item) for key, item in value.items()}
    if kind is list:
        return [copy_tree(item) for item in value]
    if kind is tuple:
        return tuple(copy_tree(item) for item in value)
    return copy.deepcopy(value)


@dataclass(slots=True)
class Writer:
    """Who writes: `source` for events, `label` for messages."""

    source: str
    label: str
    subject: str
