"""CX's context for tool and callback code run on ADK: ``context`` (the current call's),
its state and events, the session keys the adapter keeps, and Statecraft's same-value
rule (a write of the same value changes nothing). Part of the runtime adapter
(``runtime.py``).
"""

from __future__ import annotations

import contextvars
import math
from collections.abc import Mapping
from typing import Any

from . import cx_objects as cx
from .render import render_value

CONTEXT_PARAMS = ("context", "tool_context", "callback_context")
# Session keys the adapter keeps (never shown to the model).
SESSION_KEY = "_statecraft_session"  # the session's values that differ from the defaults
CHANNEL_KEY = "_statecraft_channel"
MODALITY_KEY = "_statecraft_modality"

_CURRENT: contextvars.ContextVar[CxContext | None] = contextvars.ContextVar(
    "statecraft_cx_context", default=None
)


# The types whose == is the same-value rule (the simulation's values._EXACT).
_EXACT = frozenset({str, int, bool, type(None)})


def same_value(a: Any, b: Any) -> bool:
    """Whether writing `b` over `a` changes nothing (Statecraft's rule)."""
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


def state_update_text(name: str, value: Any) -> str:
    return f"<state_update>{name}: {render_value(value)}</state_update>"


# --------------------------------------------------------------------------- CX's context


class CxState:
    """``context.state`` / ``context.variables`` over ADK's state: CX's dict-like view
    (``del``, ``pop`` and ``remove_variable`` leave the variable without a value: None)."""

    def __init__(self, state: Any) -> None:
        self._state = state

    def __getitem__(self, name: str) -> Any:
        return self._state[name]

    def __setitem__(self, name: str, value: Any) -> None:
        self._state[name] = value

    def __delitem__(self, name: str) -> None:
        if name not in self._state:
            raise KeyError(name)
        self._state[name] = None

    def __contains__(self, name: object) -> bool:
        return name in self._state

    def __iter__(self):
        return iter(list(self._state.to_dict()))

    def __len__(self) -> int:
        return len(self._state.to_dict())

    def __repr__(self) -> str:
        return f"State({self._state.to_dict()!r})"

    def get(self, name: str, default: Any = None) -> Any:
        return self._state.get(name, default)

    def keys(self) -> list[str]:
        return list(self._state.to_dict().keys())

    def values(self) -> list[Any]:
        return list(self._state.to_dict().values())

    def items(self) -> list[tuple[str, Any]]:
        return list(self._state.to_dict().items())

    def to_dict(self) -> dict[str, Any]:
        return self._state.to_dict()

    def update(self, other: Any = (), **kwargs: Any) -> None:
        for name, value in dict(other, **kwargs).items():
            self._state[name] = value

    def setdefault(self, name: str, default: Any = None) -> Any:
        if name not in self._state:
            self._state[name] = default
        return self._state[name]

    def pop(self, name: str, *default: Any) -> Any:
        if name not in self._state:
            if default:
                return default[0]
            raise KeyError(name)
        value = self._state[name]
        self._state[name] = None
        return value


def _plain(value: Any) -> Any:
    """A genai/ADK pydantic object as JSON (snake_case keys), anything else as is."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json", exclude_none=True)
    return value


def _relayed(author: str, part: Any) -> str | None:
    """Another agent's message, call or response as the current agent reads it (ADK's
    ``[agent] said: …``; Statecraft's simulation words it the same way); None for a part
    with nothing to say (an inline payload)."""
    if part.text:
        return f"[{author}] said: {part.text}"
    call = part.function_call
    if call is not None:
        return (
            f"[{author}] called tool `{call.name}` with parameters: {render_value(call.args or {})}"
        )
    response = part.function_response
    if response is not None:
        value = response.response if isinstance(response.response, dict) else {"result": None}
        return f"[{author}] `{response.name}` tool returned result: {render_value(value)}"
    return None


def _cx_events(session: Any) -> list[cx.Event]:
    out = []
    for number, event in enumerate(getattr(session, "events", None) or ()):
        content = getattr(event, "content", None)
        if content is None or not content.parts or getattr(event, "partial", False):
            continue
        author = event.author
        role = "user" if author == "user" else "model"
        out.append(
            cx.Event(
                id=event.id or f"e-{number}",
                author=author,
                invocation_id=event.invocation_id,
                content=cx.content_from(_plain(content), role),
            )
        )
    return out


class CxContext:
    """The global ``context`` (also passed as ``callback_context`` / ``tool_context``):
    CX's context over ADK's ``ToolContext``/``CallbackContext`` (anything else is ADK's)."""

    def __init__(self, adk_context: Any) -> None:
        self._adk = adk_context
        self.state = CxState(adk_context.state)
        self.variables = self.state
        self.agent_name = getattr(adk_context, "agent_name", "")
        self.invocation_id = getattr(adk_context, "invocation_id", "")
        session = getattr(adk_context, "session", None)
        self.session_id = getattr(session, "id", "")
        self.app_id = getattr(session, "app_name", "")
        self.events = _cx_events(session)
        user = getattr(adk_context, "user_content", None)
        self.user_content = cx.content_from(_plain(user), "user") if user is not None else None
        self.function_call_id = getattr(adk_context, "function_call_id", None)
        self.language_code = ""
        self.streaming_stage = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._adk, name)

    def get_last_user_input(self) -> list[cx.Part]:
        return cx.last_parts(self.events, True)

    def get_last_agent_output(self) -> list[cx.Part]:
        return cx.last_parts(self.events, False)

    def parts(self) -> list[cx.Part]:
        return [part for event in self.events for part in event.parts()]

    def get_variable(self, name: str, default: Any = None) -> Any:
        return self.state.get(name, default)

    def set_variable(self, name: str, value: Any) -> None:
        self.state[name] = value

    def remove_variable(self, name: str) -> None:
        self.state[name] = None

    def __repr__(self) -> str:
        return "<context>"


class _ContextProxy:
    """The module-level ``context`` of tool and callback code: the context of the call that
    is running now."""

    def _current(self) -> CxContext:
        current = _CURRENT.get()
        if current is None:
            raise RuntimeError("`context` is only available while a tool or callback runs")
        return current

    def __getattr__(self, name: str) -> Any:
        return getattr(self._current(), name)

    def __repr__(self) -> str:
        return "<context>"


CONTEXT = _ContextProxy()
# The files executed for the call that is running (each call runs the code afresh).
