"""The native format's JSON Schema (draft 2020-12), built from the rule set.

Every limit in it (name lengths, a scenario's session fields, the token budget) is the
rule set's own constant (`agents.core.rules`, "Limits"), so the schema, the models,
the forms and the API refuse the same documents; `docs/native-format.schema.json` is
this schema as published.
"""

from __future__ import annotations

import functools
from typing import Any

from jsonschema import Draft202012Validator

from agents.core import rules
from agents.core.spec import CallbackKind, ExpectKind, StepKind, ToolKind, VariableType

FORMAT_NAME = "statecraft.app"
FORMAT_VERSION = 1

NAME_PATTERN = rules.NAME_PATTERN_JSON  # the export format's JSON Schema (ECMA-262)
NAME_MAX_LENGTH = rules.NAME_MAX_LENGTH


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
        "toolName": {
            "description": (
                "A tool's name: letters, digits and underscores, not starting with a digit "
                "(a CX toolset's operation is named `<toolset>_<operationId>`, kept whole)."
            ),
            "type": "string",
            "pattern": NAME_PATTERN,
            "maxLength": rules.TOOL_NAME_MAX_LENGTH,
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
                "name": _text(rules.APP_NAME_MAX_LENGTH, min_length=1),
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
                "name": {"$ref": "#/$defs/toolName"},
                "kind": {"enum": [k.value for k in ToolKind]},
                "description": _text(),
                "python_code": _text(),
                "openapi": {"type": ["object", "null"]},
                "mcp_url": _text(rules.URL_MAX_LENGTH),
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
                "name": _text(rules.DISPLAY_NAME_MAX_LENGTH, min_length=1),
                "description": _text(),
                "is_root": {"type": "boolean"},
                "instructions": _text(),
                "tools": {"type": "array", "items": {"$ref": "#/$defs/toolName"}},
                "children": {
                    "type": "array",
                    "items": _text(rules.DISPLAY_NAME_MAX_LENGTH, min_length=1),
                },
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
                "name": _text(rules.SCENARIO_NAME_MAX_LENGTH, min_length=1),
                "session": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "values": {"type": "object"},
                        "channel": {"enum": list(rules.CHANNELS)},
                        "modality": {"enum": list(rules.MODALITIES)},
                        "session_id": _text(rules.SESSION_ID_MAX_LENGTH),
                        "project_id": _text(rules.PROJECT_ID_MAX_LENGTH),
                        "project_number": _text(rules.PROJECT_NUMBER_MAX_LENGTH),
                        "location": _text(rules.LOCATION_MAX_LENGTH),
                        "now": {
                            **_text(rules.NOW_MAX_LENGTH),
                            "description": "The session clock code reads (ISO date-time, "
                            "like 2026-06-01T12:00:00); absent or empty: the real clock.",
                        },
                    },
                },
                "token_budget": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": rules.TOKEN_BUDGET_MAX,
                },
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
                "tool": {"$ref": "#/$defs/toolName"},
                "args": {"type": "object"},
                "callback": {"enum": [k.value for k in CallbackKind]},
                "variables": {
                    "description": "A user input's session variables (CX userInput.variables).",
                    "type": "object",
                },
                "event": {
                    "description": "A user input's event (CX userInput.event).",
                    **_text(rules.STEP_EVENT_MAX_LENGTH),
                },
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
                "tool": {"$ref": "#/$defs/toolName"},
                "agent": _text(rules.DISPLAY_NAME_MAX_LENGTH, min_length=1),
                "value": {},
                "note": _text(rules.EXPECTATION_NOTE_MAX_LENGTH),
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


@functools.cache
def native_validator() -> Draft202012Validator:
    return Draft202012Validator(NATIVE_SCHEMA)
