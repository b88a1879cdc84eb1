"""The native format: one JSON or YAML document per app, described by a published JSON Schema.

    {"format": "statecraft.app", "version": 1, "app": {...}}

``to_native`` writes an app (and its scenarios) as that document, ``from_native``
reads it back, validating it against ``NATIVE_SCHEMA`` (draft 2020-12, also in
``docs/native-format.schema.json``) and then checking what a JSON Schema cannot
say: unique names, references between objects, defaults against their types,
Python syntax. ``check_app_spec`` is that second half on its own, for any
``AppSpec`` (the CX importer and the Django import service use it too).

Export then import gives back the same app: ``to_native(from_native(d)) == d``
for every document ``to_native`` writes. Object keys keep their order (a
schema's properties stay where the designer put them).

Fields of diagnostics name the object and the field, by name where there is one:
``variables.customer.default``, ``schemas.Customer.json_schema#/properties/age``,
``agents.Root.callbacks[0].code``, ``agents.Root.scenarios.Happy path.session.values``.

YAML is read with PyYAML's safe loader only (imported when YAML is used; the
rest of the core stays standard library + jsonschema), without aliases (a
"billion laughs" file is refused) and with dates kept as text.
"""

from __future__ import annotations

import copy
import functools
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from jsonschema import Draft202012Validator

from agents.core import codes, limits, rules
from agents.core.diagnostics import Diagnostic, Message, Severity
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

__all__ = [
    "CODES",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "NATIVE_SCHEMA",
    "check_app_spec",
    "dumps_native",
    "from_native",
    "loads_native",
    "to_native",
]

FORMAT_NAME = "statecraft.app"
FORMAT_VERSION = 1
MAX_NATIVE_BYTES = 5 * 1024 * 1024
MAX_NATIVE_DEPTH = 100
MAX_STRUCTURE_DIAGNOSTICS = 20

CODES: dict[str, str] = codes.section("formats")

NAME_PATTERN = rules.NAME_PATTERN_JSON  # the export format's JSON Schema (ECMA-262)
NAME_MAX_LENGTH = rules.NAME_MAX_LENGTH

E, W, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO


def _text(max_length: int | None = None, *, min_length: int = 0) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    if min_length:
        schema["minLength"] = min_length
    if max_length is not None:
        schema["maxLength"] = max_length
    return schema


def _if_then(prop: str, value: str, required: list[str]) -> dict[str, Any]:
    return {
        "if": {"properties": {prop: {"const": value}}, "required": [prop]},
        "then": {"required": required},
    }


NATIVE_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://statecraft.dev/schemas/native-format-1.schema.json",
    "title": "Statecraft app (native format, version 1)",
    "description": (
        "One app of Statecraft: its schemas, variables, tools and agents (with their "
        "callbacks and scenarios). Export then import gives back the same app."
    ),
    "type": "object",
    "required": ["format", "version", "app"],
    "additionalProperties": False,
    "properties": {
        "format": {"const": FORMAT_NAME},
        "version": {"const": FORMAT_VERSION},
        "app": {"$ref": "#/$defs/app"},
    },
    "$defs": {
        "name": {
            "description": "Letters, digits and underscores, not starting with a digit.",
            "type": "string",
            "pattern": NAME_PATTERN,
            "maxLength": NAME_MAX_LENGTH,
        },
        "json": {"description": "Any JSON value."},
        "cx": {
            "description": (
                "What a CX Agent Studio import kept of this object verbatim (the CX "
                "fields Statecraft does not edit), written back on CX export. Omitted "
                "for objects made in Statecraft."
            ),
            "type": "object",
        },
        "app": {
            "type": "object",
            "required": ["name"],
            "additionalProperties": False,
            "properties": {
                "name": _text(200, min_length=1),
                "description": _text(),
                "schemas": {"type": "array", "items": {"$ref": "#/$defs/schema"}},
                "variables": {"type": "array", "items": {"$ref": "#/$defs/variable"}},
                "tools": {"type": "array", "items": {"$ref": "#/$defs/tool"}},
                "agents": {"type": "array", "items": {"$ref": "#/$defs/agent"}},
                "cx": {"$ref": "#/$defs/cx"},
            },
        },
        "schema": {
            "description": "A custom-object schema (JSON Schema draft 2020-12), keys in order.",
            "type": "object",
            "required": ["name", "json_schema"],
            "additionalProperties": False,
            "properties": {
                "name": {"$ref": "#/$defs/name"},
                "description": _text(),
                "json_schema": {"type": "object"},
            },
        },
        "variable": {
            "description": (
                "A variable; a list names its item_type, a custom object (or a list of "
                "them) names its schema. A missing or null default means no default."
            ),
            "type": "object",
            "required": ["name", "type"],
            "additionalProperties": False,
            "properties": {
                "name": {"$ref": "#/$defs/name"},
                "type": {"enum": [t.value for t in VariableType]},
                "item_type": {"enum": [t.value for t in VariableType if t != VariableType.LIST]},
                "schema": {"$ref": "#/$defs/name"},
                "default": {"$ref": "#/$defs/json"},
                "description": _text(),
                "cx": {"$ref": "#/$defs/cx"},
            },
            "allOf": [
                _if_then("type", VariableType.LIST.value, ["item_type"]),
                _if_then("type", VariableType.OBJECT.value, ["schema"]),
                _if_then("item_type", VariableType.OBJECT.value, ["schema"]),
            ],
        },
        "tool": {
            "description": (
                "A tool: python (python_code), openapi (an OpenAPI 3 document with one "
                "operation), mcp (mcp_url and mcp_headers) or platform (a tool CX provides, "
                "such as end_session; no code); mock is what it does in "
                "simulation without running code (null: no mock)."
            ),
            "type": "object",
            "required": ["name", "kind"],
            "additionalProperties": False,
            "properties": {
                "name": {"$ref": "#/$defs/name"},
                "kind": {"enum": [k.value for k in ToolKind]},
                "description": _text(),
                "python_code": _text(),
                "openapi": {"type": ["object", "null"]},
                "mcp_url": _text(200),
                "mcp_headers": {"type": "object", "additionalProperties": {"type": "string"}},
                "mock": {
                    "type": ["object", "null"],
                    "additionalProperties": False,
                    "properties": {
                        "state": {"type": "object"},
                        "response": {"$ref": "#/$defs/json"},
                    },
                },
                "cx": {"$ref": "#/$defs/cx"},
            },
        },
        "callback": {
            "type": "object",
            "required": ["kind", "code"],
            "additionalProperties": False,
            "properties": {
                "kind": {"enum": [k.value for k in CallbackKind]},
                "order": {"type": "integer", "minimum": 0},
                "code": _text(),
                "cx": {"$ref": "#/$defs/cx"},
            },
        },
        "agent": {
            "description": (
                "An agent, named by its display name; tools name tools of the app, "
                "children name other agents by display name."
            ),
            "type": "object",
            "required": ["name"],
            "additionalProperties": False,
            "properties": {
                "name": _text(200, min_length=1),
                "description": _text(),
                "is_root": {"type": "boolean"},
                "instructions": _text(),
                "tools": {"type": "array", "items": {"$ref": "#/$defs/name"}},
                "children": {"type": "array", "items": _text(200, min_length=1)},
                "callbacks": {"type": "array", "items": {"$ref": "#/$defs/callback"}},
                "scenarios": {"type": "array", "items": {"$ref": "#/$defs/scenario"}},
                "cx": {"$ref": "#/$defs/cx"},
            },
        },
        "scenario": {
            "description": "A scripted session with the agent: either steps or a step script.",
            "type": "object",
            "required": ["name"],
            "additionalProperties": False,
            "properties": {
                "name": _text(200, min_length=1),
                "session": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "values": {"type": "object"},
                        "channel": {"enum": list(rules.CHANNELS)},
                        "modality": {"enum": list(rules.MODALITIES)},
                        "session_id": _text(100),
                        "project_id": _text(100),
                        "project_number": _text(30),
                        "location": _text(50),
                        "now": {
                            **_text(40),
                            "description": "The session clock code reads (ISO date-time, "
                            "like 2026-06-01T12:00:00); absent or empty: the real clock.",
                        },
                    },
                },
                "token_budget": {"type": "integer", "minimum": 1},
                "use_mocks": {"type": "boolean"},
                "steps": {"type": "array", "items": {"$ref": "#/$defs/step"}},
                "script": {
                    "description": "The steps as the designer types them (user:, tool:, ...).",
                    "type": "string",
                },
                "cx": {"$ref": "#/$defs/cx"},
            },
            "not": {"required": ["steps", "script"]},
        },
        "step": {
            "type": "object",
            "required": ["kind"],
            "additionalProperties": False,
            "properties": {
                "kind": {"enum": [k.value for k in StepKind]},
                "text": _text(),
                "tool": {"$ref": "#/$defs/name"},
                "args": {"type": "object"},
                "callback": {"enum": [k.value for k in CallbackKind]},
                "variables": {
                    "description": "A user input's session variables (CX userInput.variables).",
                    "type": "object",
                },
                "event": {"description": "A user input's event (CX userInput.event).", **_text()},
                "expectation": {"$ref": "#/$defs/expectation"},
            },
            "allOf": [
                _if_then("kind", StepKind.TOOL.value, ["tool"]),
                _if_then("kind", StepKind.CALLBACK.value, ["callback"]),
                _if_then("kind", StepKind.EXPECT.value, ["expectation"]),
            ],
        },
        "expectation": {
            "description": (
                "A golden expectation (CX GoldenExpectation): the state at the end of the "
                "turn, a tool call (value: its arguments; null leaves them to the model), a "
                "tool response, no tool calls, a transfer, the agent's reply, or a mock of "
                "the next call of a tool."
            ),
            "type": "object",
            "required": ["kind"],
            "additionalProperties": False,
            "properties": {
                "kind": {"enum": [k.value for k in ExpectKind]},
                "tool": {"$ref": "#/$defs/name"},
                "agent": _text(200, min_length=1),
                "value": {},
                "note": _text(500),
            },
            "allOf": [
                _if_then("kind", ExpectKind.STATE.value, ["value"]),
                _if_then("kind", ExpectKind.CALL.value, ["tool"]),
                _if_then("kind", ExpectKind.RESPONSE.value, ["tool"]),
                _if_then("kind", ExpectKind.MOCK.value, ["tool"]),
                _if_then("kind", ExpectKind.TRANSFER.value, ["agent"]),
            ],
        },
    },
}


# ---------------------------------------------------------------- writing


def _json(value: Any) -> Any:
    """A copy, so the document never shares a dict with the (read-only) spec."""
    return copy.deepcopy(value)


def to_native(app: AppSpec, scenarios: Iterable[ScenarioSpec] = ()) -> dict[str, Any]:
    """The native document of `app`; each scenario goes under the agent it talks to."""
    by_agent: dict[str, list[ScenarioSpec]] = {}
    for scenario in scenarios:
        by_agent.setdefault(scenario.agent, []).append(scenario)
    return {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "app": {
            "name": app.name,
            "description": app.description,
            "schemas": [
                {"name": s.name, "description": s.description, "json_schema": _json(s.schema)}
                for s in app.schemas
            ],
            "variables": [_variable_out(v) for v in app.variables],
            "tools": [_tool_out(t) for t in app.tools],
            "agents": [_agent_out(a, by_agent.get(a.name, ())) for a in app.agents],
            **_cx_out(app.cx),
        },
    }


def _cx_out(carry: Mapping[str, Any]) -> dict[str, Any]:
    """`{"cx": ...}` when a CX import kept something of the object, else nothing."""
    return {"cx": _json(carry)} if carry else {}


def _variable_out(variable: VariableSpec) -> dict[str, Any]:
    out: dict[str, Any] = {"name": variable.name, "type": variable.type.value}
    if variable.type is VariableType.LIST and variable.item_type is not None:
        out["item_type"] = variable.item_type.value
    if variable.schema:
        out["schema"] = variable.schema
    if variable.default is not None:
        out["default"] = _json(variable.default)
    out["description"] = variable.description
    out.update(_cx_out(variable.cx))
    return out


def _tool_out(tool: ToolSpec) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": tool.name,
        "kind": tool.kind.value,
        "description": tool.description,
    }
    if tool.kind is ToolKind.PYTHON or tool.python_code:
        out["python_code"] = tool.python_code
    if tool.openapi is not None:
        out["openapi"] = _json(tool.openapi)
    if tool.mcp_url:
        out["mcp_url"] = tool.mcp_url
    if tool.mcp_headers:
        out["mcp_headers"] = dict(tool.mcp_headers)
    out["mock"] = (
        None
        if tool.mock is None
        else {"state": _json(tool.mock.state), "response": _json(tool.mock.response)}
    )
    out.update(_cx_out(tool.cx))
    return out


def _agent_out(agent: AgentSpec, scenarios: Iterable[ScenarioSpec]) -> dict[str, Any]:
    return {
        "name": agent.name,
        "description": agent.description,
        "is_root": agent.is_root,
        "instructions": agent.instructions,
        "tools": list(agent.tools),
        "children": list(agent.children),
        "callbacks": [
            {"kind": c.kind.value, "order": c.order, "code": c.code, **_cx_out(c.cx)}
            for c in agent.callbacks
        ],
        "scenarios": [_scenario_out(s) for s in scenarios],
        **_cx_out(agent.cx),
    }


def _scenario_out(scenario: ScenarioSpec) -> dict[str, Any]:
    session = scenario.session
    return {
        "name": scenario.name,
        "session": {
            "values": _json(session.values),
            "channel": session.channel,
            "modality": session.modality,
            "session_id": session.session_id,
            "project_id": session.project_id,
            "project_number": session.project_number,
            "location": session.location,
            **({"now": session.now} if session.now else {}),
        },
        "token_budget": scenario.token_budget,
        "use_mocks": scenario.use_mocks,
        "steps": [_step_out(step) for step in scenario.steps],
        **_cx_out(scenario.cx),
    }


def _expectation_out(expectation: ExpectationSpec) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": expectation.kind.value}
    if expectation.tool:
        out["tool"] = expectation.tool
    if expectation.agent:
        out["agent"] = expectation.agent
    if expectation.kind not in (ExpectKind.NO_CALLS, ExpectKind.TRANSFER):
        out["value"] = _json(expectation.value)
    if expectation.note:
        out["note"] = expectation.note
    return out


def _expectation_in(data: Mapping[str, Any]) -> ExpectationSpec:
    return ExpectationSpec(
        kind=ExpectKind(data["kind"]),
        tool=data.get("tool", ""),
        agent=data.get("agent", ""),
        value=data.get("value"),
        note=data.get("note", ""),
    )


def _step_out(step: StepSpec) -> dict[str, Any]:
    if step.kind is StepKind.EXPECT and step.expectation is not None:
        return {"kind": step.kind.value, "expectation": _expectation_out(step.expectation)}
    if step.kind is StepKind.USER and (step.variables or step.event):
        out: dict[str, Any] = {"kind": step.kind.value, "text": step.text}
        if step.variables:
            out["variables"] = _json(step.variables)
        if step.event:
            out["event"] = step.event
        return out
    if step.kind is StepKind.TOOL:
        return {"kind": step.kind.value, "tool": step.tool, "args": _json(step.args)}
    if step.kind is StepKind.CALLBACK:
        return {"kind": step.kind.value, "callback": step.callback.value if step.callback else ""}
    return {"kind": step.kind.value, "text": step.text}


# ---------------------------------------------------------------- text (JSON / YAML)


def dumps_native(doc: Mapping[str, Any], fmt: str = "json") -> str:
    """The document as JSON (indented, UTF-8) or YAML (block style, multi-line text as `|`)."""
    if fmt == "json":
        return json.dumps(doc, ensure_ascii=False, indent=2) + "\n"
    if fmt == "yaml":
        import yaml  # only the YAML path needs PyYAML

        return yaml.dump(
            doc,
            Dumper=_yaml_dumper(),
            sort_keys=False,
            allow_unicode=True,
            default_flow_style=False,
            width=100,
        )
    raise ValueError(f"unknown format {fmt!r}: use 'json' or 'yaml'")


@functools.cache
def _yaml_dumper() -> type:
    import yaml

    class Dumper(yaml.SafeDumper):
        def ignore_aliases(self, data: Any) -> bool:  # never write &anchors / *aliases
            return True

    def text(dumper: yaml.SafeDumper, value: str) -> Any:
        style = "|" if "\n" in value else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(str, text)
    return Dumper


@functools.cache
def _yaml_loader() -> type:
    import yaml

    # libyaml's C parser when PyYAML has it (about 10x faster); aliases are then found
    # after composing (`_refuse_aliases`), as the C composer cannot be hooked.
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):  # type: ignore[valid-type,misc]
        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                raise yaml.composer.ComposerError(
                    None,
                    None,
                    "an alias (*name) repeats another part of the file; write values out",
                    event.start_mark,
                )
            return super().compose_node(parent, index)

    # A date stays the text it was written as (JSON has no dates).
    Loader.add_constructor("tag:yaml.org,2002:timestamp", Loader.construct_yaml_str)
    return Loader


def load_yaml(text: str) -> Any:
    """Safe YAML (no aliases, dates as text); raises ValueError with the line on a problem."""
    import yaml

    loader = _yaml_loader()(text)  # a (C)SafeLoader subclass
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _refuse_aliases(node)
        return loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise ValueError(f"{where}{exc.problem or exc.context}") from exc
    except (yaml.YAMLError, RecursionError) as exc:
        raise ValueError(str(exc) or type(exc).__name__) from exc
    finally:
        loader.dispose()


def _refuse_aliases(root: Any) -> None:
    """An alias makes a node appear twice in the composed graph: refuse it, with its line."""
    import yaml

    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            raise yaml.composer.ComposerError(
                None,
                None,
                "an alias (*name) repeats another part of the file; write values out",
                node.start_mark,
            )
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                stack.extend((key, value))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def loads_native(
    text: str | bytes, *, max_yaml_bytes: int = limits.DEFAULT_MAX_YAML_BYTES
) -> tuple[Any, tuple[Diagnostic, ...]]:
    """The document in `text`, JSON or YAML (told apart by a leading ``{``).

    YAML over `max_yaml_bytes` is refused (parsing YAML is far slower than JSON).
    Returns ``(None, errors)`` when the text cannot be read; never raises.
    """
    if isinstance(text, bytes):
        if len(text) > MAX_NATIVE_BYTES:
            return None, (_too_large(len(text)),)
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            message = Message("the file is not UTF-8 text (byte %(start)s)", start=exc.start + 1)
            return None, (Diagnostic("SC501", E, message, field="(file)"),)
    text = text.removeprefix("\ufeff")
    if len(text.encode("utf-8")) > MAX_NATIVE_BYTES:
        return None, (_too_large(len(text.encode("utf-8"))),)
    stripped = text.lstrip()
    if not stripped:
        return None, (Diagnostic("SC501", E, Message("the file is empty"), field="(file)"),)
    try:
        if stripped.startswith("{"):
            try:
                doc = json.loads(text, parse_constant=_reject_constant)
            except json.JSONDecodeError as exc:
                where = f"line {exc.lineno}, column {exc.colno}"
                message = Message("not valid JSON (%(where)s: %(msg)s)", where=where, msg=exc.msg)
                return None, (Diagnostic("SC501", E, message, line=exc.lineno, field="(file)"),)
        else:
            too_large = limits.yaml_too_large(len(text.encode("utf-8")), max_yaml_bytes)
            if too_large is not None:
                return None, (too_large,)
            doc = load_yaml(text)
    except RecursionError:
        return None, (_too_deep(),)
    except ValueError as exc:
        message = Message("not valid JSON or YAML (%(exc)s)", exc=exc)
        return None, (Diagnostic("SC501", E, message, field="(file)"),)
    problem = not_json_data(doc)
    if problem:
        return None, (problem,)
    return doc, ()


def _too_large(size: int) -> Diagnostic:
    message = Message(
        "the file is %(size)s KB; at most %(max_native_bytes)s MB",
        size=size // 1024,
        max_native_bytes=MAX_NATIVE_BYTES // 1024 // 1024,
    )
    return Diagnostic("SC502", E, message, field="(file)")


def _too_deep() -> Diagnostic:
    message = Message(
        "the file is nested more than %(max_native_depth)s levels deep",
        max_native_depth=MAX_NATIVE_DEPTH,
    )
    return Diagnostic("SC502", E, message, field="(file)")


def not_json_data(value: Any, where: str = "") -> Diagnostic | None:
    """An error if `value` is not plain JSON data (or deeper than MAX_NATIVE_DEPTH)."""
    stack: list[tuple[Any, str, int]] = [(value, where, 0)]
    while stack:
        node, path, depth = stack.pop()
        if depth > MAX_NATIVE_DEPTH:
            return _too_deep()
        if isinstance(node, dict):
            for key, child in node.items():
                if not isinstance(key, str):
                    message = Message(
                        "%(value)s: the key %(key)s is not text",
                        value=path or "the document",
                        key=repr(key),
                    )
                    return Diagnostic("SC503", E, message, field=path or "(file)")
                stack.append((child, f"{path}.{key}" if path else key, depth + 1))
        elif isinstance(node, list):
            stack.extend((child, f"{path}[{i}]", depth + 1) for i, child in enumerate(node))
        elif isinstance(node, float) and not math.isfinite(node):
            return Diagnostic(
                "SC503",
                E,
                Message("%(path)s: %(node)s is not a JSON number", path=path, node=node),
                field=path,
            )
        elif node is not None and not isinstance(node, str | int | float | bool):
            kind = type(node).__name__
            return Diagnostic(
                "SC503",
                E,
                Message("%(path)s: a %(kind)s value is not JSON data", path=path, kind=kind),
                field=path,
            )
    return None


# ---------------------------------------------------------------- reading


@functools.cache
def _native_validator() -> Draft202012Validator:
    return Draft202012Validator(NATIVE_SCHEMA)


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
    return ".".join(parts) or "(document)"


def _structure_problem(error: Any) -> str:
    """What is wrong with a part of the document, in words; a name that is not one says
    what a name is and offers one (not the pattern it fails)."""
    if error.validator == "pattern" and error.validator_value == NAME_PATTERN:
        given = error.instance if isinstance(error.instance, str) else str(error.instance)
        fixed = re.sub(r"[^A-Za-z0-9_]", "_", given) or "_"
        if fixed[0].isdigit():
            fixed = "_" + fixed
        return (
            f"{quoted(given)} is not a valid name: use only letters, digits and underscores, "
            f"not starting with a digit (for example {quoted(fixed)})"
        )
    return describe_validation_error(error)


def from_native(
    doc: Any,
) -> tuple[AppSpec | None, tuple[ScenarioSpec, ...], tuple[Diagnostic, ...]]:
    """The app and scenarios of a native document, and every problem found.

    When the document does not have the native format's shape the app is
    ``None`` (with the errors); otherwise the app is returned together with
    the diagnostics of ``check_app_spec`` (errors mean it cannot be imported).
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
        _native_validator().iter_errors(doc),
        key=lambda e: tuple((isinstance(p, int), p) for p in e.absolute_path),
    )
    if errors:
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
        return None, (), tuple(found)
    app_doc = doc["app"]
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
    diagnostics.extend(check_app_spec(app, scenarios))
    return app, scenarios, tuple(diagnostics)


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
        token_budget=s.get("token_budget", 8000),
        use_mocks=s.get("use_mocks", False),
        cx=s.get("cx", {}),
    )


# The checks of a whole app live in the rule set (agents.core.rules); kept here by name.
check_app_spec = rules.check_app
