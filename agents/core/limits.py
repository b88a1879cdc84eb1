"""How much one import may hold: objects and instruction text, checked before any work.

The limits are parameters (the Django settings IMPORT_MAX_OBJECTS and
IMPORT_MAX_INSTRUCTIONS_BYTES pass them in); the defaults here are those settings' defaults.
An import over a limit gets one SC502 error that names the limit and the setting.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from agents.core.defaults import DEFAULTS
from agents.core.diagnostics import Diagnostic, Message, Severity
from agents.core.spec import AppSpec, ScenarioSpec

DEFAULT_MAX_OBJECTS: int = DEFAULTS["IMPORT_MAX_OBJECTS"]
DEFAULT_MAX_INSTRUCTIONS_BYTES: int = DEFAULTS["IMPORT_MAX_INSTRUCTIONS_BYTES"]
DEFAULT_MAX_YAML_BYTES: int = DEFAULTS["IMPORT_MAX_YAML_BYTES"]


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


def evalset_case_count(doc: Any) -> int:
    """How many eval cases an ADK evalset (parsed JSON) holds (0 when it holds no list)."""
    if not isinstance(doc, dict):
        return 0
    cases = doc.get("eval_cases", doc.get("evalCases"))
    return len(cases) if isinstance(cases, list) else 0


def evalset_problems(doc: Any, *, max_objects: int = DEFAULT_MAX_OBJECTS) -> tuple[Diagnostic, ...]:
    """An evalset import's limit: each eval case becomes a scenario, an object as a native
    import's, so one evalset holds at most ``IMPORT_MAX_OBJECTS`` cases."""
    count = evalset_case_count(doc)
    if count <= max_objects:
        return ()
    return (
        Diagnostic(
            "SC502",
            Severity.ERROR,
            Message(
                "the evalset holds %(count)s eval cases (one scenario each); one import "
                "takes at most %(limit)s (setting IMPORT_MAX_OBJECTS): split the evalset",
                count=format(count, ","),
                limit=format(max_objects, ","),
            ),
            field="eval_cases",
        ),
    )


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


MAX_JSON_DEPTH = 100  # the native import's limit (SC502), on every JSON value a scenario holds


def json_too_deep(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether `value` (JSON data) nests lists and objects more than `limit` levels deep.
    Iterative: a value too deep for recursion is measured too."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            node = list(node.values())
        elif not isinstance(node, list | tuple):
            continue
        if depth + 1 > limit:
            return True
        stack.extend((child, depth + 1) for child in node)
    return False


def too_deep_message(limit: int = MAX_JSON_DEPTH) -> Message:
    return Message("the JSON is nested more than %(limit)s levels deep", limit=limit)


def scenario_too_deep(scenario: ScenarioSpec, limit: int = MAX_JSON_DEPTH) -> str | None:
    """The first value of `scenario` nested more than `limit` levels deep, by its path
    (``session.values``, ``steps[2].args``…), or None."""
    if json_too_deep(scenario.session.values, limit):
        return "session.values"
    for number, step in enumerate(scenario.steps):
        for name, value in (
            ("args", step.args),
            ("variables", step.variables),
            ("expectation.value", step.expectation.value if step.expectation else None),
        ):
            if json_too_deep(value, limit):
                return f"steps[{number}].{name}"
    return None


def scenario_too_deep_error(scenario: ScenarioSpec, path: str) -> Diagnostic:
    """SC502 for a scenario saved before the limit, naming the value too deep."""
    return Diagnostic(
        "SC502",
        Severity.ERROR,
        Message(
            "The scenario %(name)s cannot be run or exported: its %(path)s is nested "
            "more than %(limit)s levels deep. Edit its steps to flatten the JSON.",
            name=scenario.name,
            path=path,
            limit=MAX_JSON_DEPTH,
        ),
        field="steps_script" if path.startswith("steps") else "session_values",
        subject=scenario.name,
    )


def loads_json(text: str | bytes, **kwargs: Any) -> Any:
    """``json.loads``, with JSON nested too deeply for the parser (a RecursionError) or more
    than `MAX_JSON_DEPTH` levels refused as a ``json.JSONDecodeError`` (its message names the
    limit), so every caller's handling of bad JSON names it too."""
    try:
        value = json.loads(text, **kwargs)
    except RecursionError:
        value, deep = None, True
    else:
        deep = json_too_deep(value)
    if deep:
        doc = text if isinstance(text, str) else text.decode("utf-8", "replace")
        raise json.JSONDecodeError(too_deep_message(), doc, 0)
    return value
