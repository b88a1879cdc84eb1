"""The part of a native document that has the format's shape, when another part does not.

An import lists every problem of a file in one go: the shape errors (SC505) and the
problems the rule set finds in the rest (a default of the wrong type, a syntax error, a
tool no agent can have…). `salvage` takes the document apart as little as it can until
the JSON Schema accepts what is left: a misshapen optional field is dropped (a scenario
whose ``session`` is not an object keeps its steps), and an object whose own shape is
wrong (a variable without a type, a tool of an unknown kind) is left out with what it
holds. `Lost` remembers what was left out, so a reference to it (an agent's tool, a
variable's schema, a sub-agent) is not reported as missing: the shape error already
says what is wrong with it.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agents.core.diagnostics import Diagnostic, Message, Severity
from agents.core.formats.schema import native_validator
from agents.core.spec import CallbackKind

# Keys an object of the format cannot do without: a problem in one leaves out the object.
_REQUIRED = frozenset({"name", "type", "kind", "code", "json_schema"})
_COLLECTIONS = ("schemas", "variables", "tools", "agents")
MAX_ROUNDS = 6
_APP_NAME_STAND_IN = "app"
_STAND_IN_ORDER = 10**9  # a callback's stand-in: an order no other callback has


@dataclass
class Lost:
    """What `salvage` left out: names by collection, and collections left out whole."""

    names: dict[str, set[str]] = field(default_factory=lambda: {c: set() for c in _COLLECTIONS})
    whole: set[str] = field(default_factory=set)
    root_unknown: bool = False  # an agent (or its is_root) was left out
    stand_ins: set[str] = field(default_factory=set)  # fields of callbacks left out

    def stood_in(self, where: str) -> bool:
        return any(where == s or where.startswith(f"{s}.") for s in self.stand_ins)

    def gone(self, collection: str, name: object) -> bool:
        return collection in self.whole or name in self.names[collection]


def salvage(doc: Mapping[str, Any], errors: Iterable[Any]) -> tuple[dict[str, Any], Lost] | None:
    """A copy of `doc` that the native schema accepts, made by leaving out the parts that
    `errors` (its validation errors) are about, and what was left out; None when the
    problem is the document or the app itself (nothing of it can be read)."""
    if not isinstance(doc.get("app"), dict):
        return None
    kept = copy.deepcopy(dict(doc))
    _pin_callback_orders(kept["app"])
    lost = Lost()
    pending = list(errors)
    for round_ in range(MAX_ROUNDS):
        if not pending:
            return kept, lost
        removals: set[tuple[Any, ...]] = set()
        for error in pending:
            planned = _plan(kept, list(error.absolute_path), error, strict=round_ > 0)
            if planned is None:
                return None
            removals.update(planned)
        for path in sorted(removals, key=_path_key, reverse=True):
            _remove(kept, path, lost)
        pending = list(native_validator().iter_errors(kept))
    return None


def _path_key(path: tuple[Any, ...]) -> tuple[tuple[bool, Any], ...]:
    return tuple((isinstance(p, int), p) for p in path)


def _pin_callback_orders(app: dict[str, Any]) -> None:
    """A callback's order defaults to its place in the list: written down first, so that
    leaving out a callback before it does not move it (and clash with another)."""
    agents = app.get("agents")
    for agent in agents if isinstance(agents, list) else ():
        callbacks = agent.get("callbacks") if isinstance(agent, dict) else None
        for i, callback in enumerate(callbacks if isinstance(callbacks, list) else ()):
            if isinstance(callback, dict):
                callback.setdefault("order", i)


def _node(doc: Any, path: Iterable[Any]) -> Any:
    for part in path:
        doc = doc[part]
    return doc


def _plan(doc: Any, path: list[Any], error: Any, *, strict: bool) -> set[tuple[Any, ...]] | None:
    """The paths to leave out for one error (None: the app itself is unreadable)."""
    instance = _node(doc, path)
    if error.validator == "additionalProperties" and isinstance(instance, dict) and not strict:
        declared = error.schema.get("properties", {})
        extra = {(*path, key) for key in instance if key not in declared}
        if extra:
            return extra
    target = path
    while True:
        if len(target) <= 1:  # the document or the app as a whole
            return None
        last = target[-1]
        if isinstance(last, int):
            return {tuple(target)}
        if len(target) == 2:  # a field of the app (its name is replaced, not left out)
            return {tuple(target)}
        if not strict and last not in _REQUIRED:
            return {tuple(target)}
        target = target[:-1]


def _remove(doc: dict[str, Any], path: tuple[Any, ...], lost: Lost) -> None:
    parent = _node(doc, path[:-1])
    last = path[-1]
    if path == ("app", "name"):
        parent["name"] = _APP_NAME_STAND_IN  # checked with a name it may have
        return
    if isinstance(parent, list) and isinstance(last, int):
        if last >= len(parent):
            return
        if len(path) == 5 and path[1] == "agents" and path[3] == "callbacks":
            # In place: the callbacks after it keep their place (the fields name it).
            parent[last] = {"kind": CallbackKind.BEFORE_AGENT.value, "code": "pass"}
            parent[last]["order"] = _STAND_IN_ORDER + last
            agent = _node(doc, path[:3]).get("name")
            lost.stand_ins.add(f"agents.{agent}.callbacks[{last}]")
            return
        removed = parent.pop(last)
    elif isinstance(parent, dict) and last in parent:
        removed = parent.pop(last)
    else:
        return
    if len(path) == 2 and last in _COLLECTIONS:
        lost.whole.add(last)
        lost.root_unknown = lost.root_unknown or last == "agents"
    elif len(path) == 3 and path[1] in _COLLECTIONS:
        name = removed.get("name") if isinstance(removed, dict) else None
        if isinstance(name, str) and name.strip():
            lost.names[path[1]].add(name)
        else:  # nameless: a reference to it cannot be told from a wrong one
            lost.whole.add(path[1])
        lost.root_unknown = lost.root_unknown or path[1] == "agents"
    elif len(path) == 4 and path[1] == "agents" and last == "is_root":
        lost.root_unknown = True


def _params(message: object) -> Iterable[tuple[str, object]]:
    if isinstance(message, Message):
        for key, value in message.params.items():
            yield key, value
            yield from _params(value)


_REFERENCE_PARAMS = {"tool": "tools", "child": "agents", "schema": "schemas", "agent": "agents"}


def consequence(d: Diagnostic, lost: Lost, variable_schemas: Mapping[str, str | None]) -> bool:
    """Whether `d`, found in the salvaged document, only says that something left out is
    missing (its own shape error says what is wrong with it)."""
    if d.field and lost.stood_in(d.field):
        return True
    if d.code == "SC508" and d.severity is Severity.WARNING:
        return lost.root_unknown  # "no agent is the root": the root may be the one left out
    if d.code == "SC507":
        for key, value in _params(d.message):
            collection = _REFERENCE_PARAMS.get(key)
            if collection and isinstance(value, str) and lost.gone(collection, value):
                return True
    _, values, variable = (d.field or "").partition(".session.values.")
    if values and variable:  # a scenario's value of a variable (or of its schema) left out
        if lost.gone("variables", variable):
            return True
        schema = variable_schemas.get(variable)
        return schema is not None and lost.gone("schemas", schema)
    return False
