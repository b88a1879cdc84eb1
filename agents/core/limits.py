"""How much one import may hold: objects and instruction text, checked before any work.

The limits are parameters (the Django settings IMPORT_MAX_OBJECTS and
IMPORT_MAX_INSTRUCTIONS_BYTES pass them in); the defaults here are those settings' defaults.
An import over a limit gets one SC502 error that names the limit and the setting.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agents.core.diagnostics import Diagnostic, Message, Severity
from agents.core.spec import AppSpec, ScenarioSpec

DEFAULT_MAX_OBJECTS = 1000
DEFAULT_MAX_INSTRUCTIONS_BYTES = 2 * 1024 * 1024
DEFAULT_MAX_YAML_BYTES = 512 * 1024


def _too_many(count: int, limit: int) -> Diagnostic:
    return Diagnostic(
        "SC502",
        Severity.ERROR,
        Message(
            "the app holds %(count)s objects (variables, schemas, tools, "
            "agents, callbacks, scenarios); one import takes at most "
            "%(limit)s (setting IMPORT_MAX_OBJECTS)",
            count=format(count, ","),
            limit=format(limit, ","),
        ),
        field="(file)",
    )


def _too_much_text(size: int, limit: int) -> Diagnostic:
    return Diagnostic(
        "SC502",
        Severity.ERROR,
        Message(
            "the agents' instructions total %(size)s bytes; one import "
            "takes at most %(limit)s (setting "
            "IMPORT_MAX_INSTRUCTIONS_BYTES)",
            size=format(size, ","),
            limit=format(limit, ","),
        ),
        field="(file)",
    )


def _length(value: Any) -> int:
    return len(value) if isinstance(value, list | dict) else 0


def native_document_problems(
    doc: Any,
    *,
    max_objects: int = DEFAULT_MAX_OBJECTS,
    max_instructions_bytes: int = DEFAULT_MAX_INSTRUCTIONS_BYTES,
) -> tuple[Diagnostic, ...]:
    """The limits, counted on a native document as read (before it is checked in depth)."""
    app = doc.get("app") if isinstance(doc, dict) else None
    if not isinstance(app, dict):
        return ()
    count = sum(_length(app.get(key)) for key in ("variables", "schemas", "tools", "agents"))
    text = 0
    for agent in app.get("agents") or ():
        if isinstance(agent, dict):
            count += _length(agent.get("callbacks")) + _length(agent.get("scenarios"))
            if isinstance(agent.get("instructions"), str):
                text += len(agent["instructions"].encode("utf-8"))
    problems = []
    if count > max_objects:
        problems.append(_too_many(count, max_objects))
    if text > max_instructions_bytes:
        problems.append(_too_much_text(text, max_instructions_bytes))
    return tuple(problems)


def app_spec_problems(
    spec: AppSpec,
    scenarios: Iterable[ScenarioSpec] = (),
    *,
    max_objects: int = DEFAULT_MAX_OBJECTS,
    max_instructions_bytes: int = DEFAULT_MAX_INSTRUCTIONS_BYTES,
) -> tuple[Diagnostic, ...]:
    """The same limits on an app read from any format (a CX ZIP included)."""
    count = (
        len(spec.variables)
        + len(spec.schemas)
        + len(spec.tools)
        + len(spec.agents)
        + sum(len(a.callbacks) for a in spec.agents)
        + len(tuple(scenarios))
    )
    text = sum(len(a.instructions.encode("utf-8")) for a in spec.agents)
    problems = []
    if count > max_objects:
        problems.append(_too_many(count, max_objects))
    if text > max_instructions_bytes:
        problems.append(_too_much_text(text, max_instructions_bytes))
    return tuple(problems)


def yaml_too_large(size: int, limit: int = DEFAULT_MAX_YAML_BYTES) -> Diagnostic | None:
    if size <= limit:
        return None
    return Diagnostic(
        "SC502",
        Severity.ERROR,
        Message(
            "the YAML file is %(size)s KB; YAML imports take at most "
            "%(limit)s KB (setting IMPORT_MAX_YAML_BYTES) — export as "
            "JSON for larger apps",
            size=format(size // 1024, ","),
            limit=format(limit // 1024, ","),
        ),
        field="(file)",
    )
