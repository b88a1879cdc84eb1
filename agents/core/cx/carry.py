"""What a CX import keeps, and how export writes it back: nothing Statecraft does not edit is lost.

Import stores, on each object it makes, the object's original CX JSON (``cx`` of the app,
variable, tool, agent, callback, scenario) and, on the app, every file of the export it did
not read (toolsets, guardrails, evaluation datasets, data-store / widget / client-function
tools, notes...) verbatim under ``cx["files"]``.

Export builds each object's JSON from what Statecraft edits and lays it over the original
(``overlay``): a field Statecraft edits comes from Statecraft (and disappears when
Statecraft has no value for it); every other field, at any depth, is the original's. So an
app imported and exported unchanged comes back with the same fields and values, and an
edited one changes only where it was edited.

YAML exports (``app.yaml``, ``agents/<A>/<A>.yaml``...) are read like JSON ones. CX's
YAML may spell keys in snake_case (``root_agent``, ``display_name``): ``camel_keys``
gives the camelCase of the JSON form for the fields Statecraft reads.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["EMPTY", "camel_keys", "is_empty", "kept_summary", "overlay"]

EMPTY: tuple[Any, ...] = (None, "", [], {})
_SNAKE = re.compile(r"_([a-z0-9])")
# Fields whose keys are the user's data (names of variables, properties, headers, labels),
# never CX field names: `camel_keys` leaves what is inside them alone.
_VALUES = frozenset(
    {
        "schema",
        "default",
        "customHeaders",
        "variables",
        "args",
        "metadata",
        "labels",
        "parameters",
        "properties",
        "response",
        "headers",
    }
)


def is_empty(value: Any) -> bool:
    """proto3 JSON leaves out a field at its default: missing, null, "", [] and {} are one."""
    return value is None or (isinstance(value, (str, list, dict)) and not value)


def overlay(
    original: Mapping[str, Any] | None,
    generated: Mapping[str, Any],
    edited: Iterable[str] = (),
) -> dict[str, Any]:
    """`generated` laid over `original`, recursively for objects on both sides.

    `edited` names Statecraft's fields (dotted for nested ones: ``pythonFunction.description``):
    taken from `generated`, and dropped when it has no value for them. Every other field
    keeps the original's value unless `generated` has one.
    """
    edited = frozenset(edited)
    out: dict[str, Any] = {}
    for key, value in (original or {}).items():
        if key in edited and key not in generated:
            continue
        out[key] = copy.deepcopy(value)
    for key, value in generated.items():
        before = out.get(key)
        if isinstance(before, dict) and isinstance(value, dict) and key not in edited:
            inner = {e[len(key) + 1 :] for e in edited if e.startswith(f"{key}.")}
            out[key] = overlay(before, value, inner)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _camel(key: str) -> str:
    """``display_name`` → ``displayName``; ``_comment`` keys (not CX fields) stay as written."""
    if "_" not in key or key.startswith("_"):
        return key
    return _SNAKE.sub(lambda m: m.group(1).upper(), key)


def camel_keys(data: Any, depth: int = 2) -> Any:
    """camelCase keys of a CX object and of the objects in it, `depth` levels down.

    Only message fields are renamed: values (variable defaults, schemas, headers) are left
    alone by keeping `depth` small and never descending into ``schema`` or ``default``.
    """
    if depth <= 0:
        return data
    if isinstance(data, dict):
        out = {}
        for key, value in data.items():
            name = _camel(key) if isinstance(key, str) else key
            if name in _VALUES:
                out[name] = value
            else:
                out[name] = camel_keys(value, depth - 1)
        return out
    if isinstance(data, list):
        return [camel_keys(item, depth) for item in data]
    return data


def kept_summary(original: Mapping[str, Any], tools: Iterable[str]) -> list[tuple[str, str]]:
    """What an agent's original CX JSON holds that Statecraft keeps without editing, as
    (what, name) pairs for the designer: tools of other kinds, toolsets, guardrails,
    transfer rules, disabled callbacks, model settings. `tools` are the names (and ids) of
    the tools Statecraft shows for the agent."""
    shown = set(tools)
    found: list[tuple[str, str]] = []
    for reference in original.get("tools") or []:
        name = str(reference).rsplit("/", 1)[-1]
        if reference not in shown and name not in shown:
            found.append(("tool", name))
    for entry in original.get("toolsets") or []:
        if isinstance(entry, dict) and entry.get("toolset"):
            found.append(("toolset", str(entry["toolset"]).rsplit("/", 1)[-1]))
    for reference in original.get("guardrails") or []:
        found.append(("guardrail", str(reference).rsplit("/", 1)[-1]))
    for rule in original.get("transferRules") or []:
        child = rule.get("childAgent") if isinstance(rule, dict) else None
        found.append(("transfer rule", str(child or "?").rsplit("/", 1)[-1]))
    for key, value in original.items():
        if key.endswith("Callbacks") and isinstance(value, list):
            for entry in value:
                if isinstance(entry, dict) and entry.get("disabled"):
                    kind = key[: -len("Callbacks")]
                    found.append(("disabled callback", _SNAKE_OF.sub(r"_\1", kind).lower()))
    model = original.get("modelSettings")
    if isinstance(model, dict) and model.get("model"):
        found.append(("model", str(model["model"])))
    return found


_SNAKE_OF = re.compile(r"(?<=[a-z])([A-Z])")
