"""Reading a native document: its shape against the JSON Schema, then the rule set."""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from agents.core import rules
from agents.core.diagnostics import Diagnostic, Message, Severity
from agents.core.formats.salvage import consequence, salvage
from agents.core.formats.schema import FORMAT_NAME, FORMAT_VERSION, NAME_PATTERN, native_validator
from agents.core.script import parse_script
from agents.core.spec import (
    AgentSpec,
    AppSpec,
    CallbackKind,
    CallbackSpec,
    ExpectationSpec,
    ExpectKind,
    ScenarioSpec,
    SchemaSpec,
    SessionSpec,
    StepKind,
    StepSpec,
    ToolKind,
    ToolMock,
    ToolSpec,
    VariableSpec,
    VariableType,
)
from agents.core.types import describe_validation_error, quoted

MAX_STRUCTURE_DIAGNOSTICS = 20

E, W, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO

# The checks of a whole app live in the rule set (agents.core.rules); kept here by name.
check_app_spec = rules.check_app


_COLLECTIONS = frozenset({"schemas", "variables", "tools", "agents", "scenarios"})


def _native_field(doc: Any, path: Sequence[Any]) -> str:
    """``variables.customer.default`` for the path ``app/variables/3/default``."""
    parts: list[str] = []
    node = doc
    for i, part in enumerate(path):
        if i == 0 and part == "app":
            node = node.get("app") if isinstance(node, dict) else None
            continue
        if isinstance(part, int):
            item = node[part] if isinstance(node, list) and part < len(node) else None
            name = item.get("name") if isinstance(item, dict) else None
            if parts and parts[-1] in _COLLECTIONS and isinstance(name, str) and name:
                parts.append(name)
            elif parts:
                parts[-1] = f"{parts[-1]}[{part}]"
            else:
                parts.append(f"[{part}]")
            node = item
        else:
            parts.append(str(part))
            node = node.get(part) if isinstance(node, dict) else None
    return ".".join(parts) or ("app" if list(path) == ["app"] else "(document)")


def _structure_problem(error: Any) -> str:
    """What is wrong with a part of the document, in words, with the fix where one can be
    told: a name that is not one says what a name is and offers one (not the pattern it
    fails); a misspelt property or choice names the one it is closest to."""
    if error.validator == "pattern" and error.validator_value == NAME_PATTERN:
        given = error.instance if isinstance(error.instance, str) else str(error.instance)
        fixed = rules.suggested_name(given)
        if not fixed:
            return Message(
                "%(given)s is not a valid name: use only unaccented letters a-z, digits and "
                "underscores, not starting with a digit",
                given=quoted(given),
            )
        return Message(
            "%(given)s is not a valid name: use only unaccented letters a-z, digits and "
            "underscores, not starting with a digit (for example %(fixed)s)",
            given=quoted(given),
            fixed=quoted(fixed),
        )
    problem = describe_validation_error(error)
    if error.validator == "type" and error.validator_value == "boolean":
        given = error.instance
        shown = quoted(given) if isinstance(given, str) else json.dumps(given)[:60]
        return Message("%(given)s is not true or false (written without quotes)", given=shown)
    if error.validator == "enum" and isinstance(error.instance, str):
        options = [o for o in error.validator_value if isinstance(o, str)]
        return _closest(problem, error.instance, options)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        declared = list(error.schema.get("properties", {}))
        extra = [k for k in error.instance if k not in declared]
        closest = _closest(problem, extra[0], declared) if len(extra) == 1 else problem
        if closest is not problem:
            return closest
        return Message(
            "%(problem)s (allowed: %(declared)s)",
            problem=problem,
            declared=", ".join(quoted(name) for name in declared),
        )
    return problem


def _closest(problem: str, given: str, options: Sequence[str]) -> str:
    match = difflib.get_close_matches(given, options, n=1, cutoff=0.6)
    if not match:
        return problem
    return Message("%(problem)s; did you mean %(match)s?", problem=problem, match=quoted(match[0]))


def from_native(
    doc: Any,
) -> tuple[AppSpec | None, tuple[ScenarioSpec, ...], tuple[Diagnostic, ...]]:
    """The app and scenarios of a native document, and every problem found.

    When the document does not have the native format's shape the app is
    ``None``, with the shape errors and the problems ``check_app_spec`` finds in
    the rest (`salvage`); otherwise the app is returned together with the
    diagnostics of ``check_app_spec`` (errors mean it cannot be imported).
    """
    if not isinstance(doc, dict) or doc.get("format") != FORMAT_NAME:
        message = Message(
            'this is not a Statecraft app: it needs "format": "%(format_name)s"',
            format_name=FORMAT_NAME,
        )
        return None, (), (Diagnostic("SC504", E, message, field="format"),)
    version = doc.get("version")
    if version != FORMAT_VERSION:
        message = Message(
            "format version %(version)s cannot be read; this Statecraft "
            "reads version %(format_version)s",
            version=repr(version),
            format_version=FORMAT_VERSION,
        )
        return None, (), (Diagnostic("SC504", E, message, field="version"),)
    errors = sorted(
        native_validator().iter_errors(doc),
        key=lambda e: tuple((isinstance(p, int), p) for p in e.absolute_path),
    )
    if errors:
        return None, (), (*_structure_diagnostics(doc, errors), *_rest_of(doc, errors))
    app, scenarios, diagnostics = _read_app(doc["app"])
    return app, scenarios, (*diagnostics, *check_app_spec(app, scenarios))


def _structure_diagnostics(doc: Any, errors: Sequence[Any]) -> list[Diagnostic]:
    found = []
    for error in errors[:MAX_STRUCTURE_DIAGNOSTICS]:
        where = _native_field(doc, list(error.absolute_path))
        message = Message(
            "%(where)s: %(describe_validation_error)s",
            where=where,
            describe_validation_error=_structure_problem(error),
        )
        found.append(Diagnostic("SC505", E, message, field=where))
    if len(errors) > MAX_STRUCTURE_DIAGNOSTICS:
        more = len(errors) - MAX_STRUCTURE_DIAGNOSTICS
        found.append(
            Diagnostic(
                "SC505", INFO, Message("%(more)s more problems", more=more), field="(document)"
            )
        )
    return found


def _rest_of(doc: Any, errors: Sequence[Any]) -> list[Diagnostic]:
    """The rule set's problems in the parts of a misshapen document that have the format's
    shape (`salvage`), but none that only say a part left out is missing; a note when
    nothing of the app can be read past its shape errors."""
    salvaged = salvage(doc, errors)
    if salvaged is None:
        message = Message(
            "the rest of the file is checked once the app itself has the format's shape"
        )
        return [Diagnostic("SC505", INFO, message, field="(document)")]
    kept, lost = salvaged
    app, scenarios, diagnostics = _read_app(kept["app"])
    schemas = {v.name: v.schema for v in app.variables}
    return [
        d
        for d in (*diagnostics, *check_app_spec(app, scenarios))
        if not consequence(d, lost, schemas)
    ]


def _read_app(
    app_doc: dict[str, Any],
) -> tuple[AppSpec, tuple[ScenarioSpec, ...], list[Diagnostic]]:
    """The app and scenarios of a document's ``app`` the native schema accepts, and the
    notes reading them gives (a field that does not apply, a script's problems)."""
    diagnostics: list[Diagnostic] = []
    app = AppSpec(
        name=app_doc["name"],
        description=app_doc.get("description", ""),
        schemas=tuple(
            SchemaSpec(s["name"], s["json_schema"], s.get("description", ""))
            for s in app_doc.get("schemas", [])
        ),
        variables=tuple(_variable_in(v, diagnostics) for v in app_doc.get("variables", [])),
        tools=tuple(_tool_in(t) for t in app_doc.get("tools", [])),
        agents=tuple(_agent_in(a) for a in app_doc.get("agents", [])),
        cx=app_doc.get("cx", {}),
    )
    scenarios = tuple(
        _scenario_in(s, agent["name"], diagnostics)
        for agent in app_doc.get("agents", [])
        for s in agent.get("scenarios", [])
    )
    return app, scenarios, diagnostics


def _variable_in(v: dict[str, Any], diagnostics: list[Diagnostic]) -> VariableSpec:
    kind = VariableType(v["type"])
    item_type = VariableType(v["item_type"]) if "item_type" in v else None
    if item_type is not None and kind is not VariableType.LIST:
        field = f"variables.{v['name']}.item_type"
        message = Message("%(field)s: only a list has an item type; ignored", field=field)
        diagnostics.append(Diagnostic("SC511", W, message, field=field, subject=v["name"]))
        item_type = None
    needs_schema = VariableType.OBJECT in (kind, item_type)
    schema = v.get("schema")
    if schema and not needs_schema:
        field = f"variables.{v['name']}.schema"
        message = Message(
            "%(field)s: only a custom object (or a list of them) has a schema; ignored", field=field
        )
        diagnostics.append(Diagnostic("SC511", W, message, field=field, subject=v["name"]))
        schema = None
    return VariableSpec(
        name=v["name"],
        type=kind,
        default=v.get("default"),
        description=v.get("description", ""),
        item_type=item_type,
        schema=schema,
        cx=v.get("cx", {}),
    )


def _tool_in(t: dict[str, Any]) -> ToolSpec:
    mock = t.get("mock")
    return ToolSpec(
        name=t["name"],
        kind=ToolKind(t["kind"]),
        description=t.get("description", ""),
        python_code=t.get("python_code", ""),
        openapi=t.get("openapi"),
        mcp_url=t.get("mcp_url", ""),
        mcp_headers=tuple(t.get("mcp_headers", {}).items()),
        mock=None
        if mock is None
        else ToolMock(state=mock.get("state", {}), response=mock.get("response")),
        cx=t.get("cx", {}),
    )


def _agent_in(a: dict[str, Any]) -> AgentSpec:
    return AgentSpec(
        name=a["name"],
        instructions=a.get("instructions", ""),
        description=a.get("description", ""),
        tools=tuple(a.get("tools", [])),
        children=tuple(a.get("children", [])),
        callbacks=tuple(
            CallbackSpec(
                kind=CallbackKind(c["kind"]),
                code=c["code"],
                order=c.get("order", i),
                cx=c.get("cx", {}),
            )
            for i, c in enumerate(a.get("callbacks", []))
        ),
        is_root=a.get("is_root", False),
        cx=a.get("cx", {}),
    )


def _scenario_in(s: dict[str, Any], agent: str, diagnostics: list[Diagnostic]) -> ScenarioSpec:
    defaults = SessionSpec()
    session = s.get("session", {})
    if "script" in s:
        parsed = parse_script(s["script"])
        field = f"agents.{agent}.scenarios.{s['name']}.script"
        diagnostics.extend(
            replace(
                d,
                field=field,
                message=Message("%(field)s: %(message)s", field=field, message=d.message),
                subject=agent,
            )
            for d in parsed.diagnostics
        )
        steps = parsed.steps
    else:
        steps = tuple(
            StepSpec(
                kind=StepKind(step["kind"]),
                text=step.get("text", ""),
                tool=step.get("tool", ""),
                args=step.get("args", {}),
                callback=CallbackKind(step["callback"]) if "callback" in step else None,
                variables=step.get("variables", {}),
                event=step.get("event", ""),
                expectation=_expectation_in(step["expectation"]) if "expectation" in step else None,
            )
            for step in s.get("steps", [])
        )
    return ScenarioSpec(
        name=s["name"],
        agent=agent,
        session=SessionSpec(
            values=session.get("values", {}),
            channel=session.get("channel", defaults.channel),
            modality=session.get("modality", defaults.modality),
            session_id=session.get("session_id", defaults.session_id),
            project_id=session.get("project_id", defaults.project_id),
            project_number=session.get("project_number", defaults.project_number),
            location=session.get("location", defaults.location),
            now=session.get("now", defaults.now),
        ),
        steps=steps,
        token_budget=s.get("token_budget", rules.SCENARIO_DEFAULTS["token_budget"]),
        use_mocks=s.get("use_mocks", rules.SCENARIO_DEFAULTS["use_mocks"]),
        cx=s.get("cx", {}),
    )


def _expectation_in(data: Mapping[str, Any]) -> ExpectationSpec:
    return ExpectationSpec(
        kind=ExpectKind(data["kind"]),
        tool=data.get("tool", ""),
        agent=data.get("agent", ""),
        value=data.get("value"),
        note=data.get("note", ""),
    )
