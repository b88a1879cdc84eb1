"""Statecraft variables to and from the ``schema`` of a CX variable declaration
(``App.VariableDeclaration``): type, item type, custom-object schema and default."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from agents.core.cx.schema_from_cx import from_cx_schema
from agents.core.cx.schema_to_cx import _CX_KEY_ORDER, to_cx_schema
from agents.core.diagnostics import Diagnostic, Message, Severity
from agents.core.schemas import schema_diagnostic
from agents.core.spec import VariableSpec, VariableType

__all__ = ["CxVariable", "variable_cx_schema", "variable_from_cx_schema"]


_PLAIN_CX_TYPES = {
    VariableType.TEXT: "STRING",
    VariableType.NUMBER: "NUMBER",
    VariableType.BOOLEAN: "BOOLEAN",
}


def variable_cx_schema(
    variable: VariableSpec, schemas: Mapping[str, dict[str, Any]]
) -> tuple[dict[str, Any], tuple[Diagnostic, ...]]:
    """The ``schema`` of a CX ``App.VariableDeclaration`` for `variable`.

    The variable's default goes in the schema's ``default`` (the declaration
    has no other place for it). A list of custom objects carries the item
    schema under ``items`` and its ``defs`` at the root, where CX wants them.
    Diagnostics about a custom schema have ``subject`` = the schema name.
    """
    diagnostics: list[Diagnostic] = []
    name = variable.name
    if variable.type is VariableType.LIST:
        out: dict[str, Any] = {"type": "ARRAY"}
        item_type = variable.item_type
        if item_type is None or item_type is VariableType.LIST:
            words = (
                Message("has no item type") if item_type is None else Message("cannot hold lists")
            )
            severity = Severity.WARNING if item_type is None else Severity.ERROR
            diagnostics.append(
                Diagnostic(
                    "SC249",
                    severity,
                    Message("%(name)s: a list %(words)s", name=name, words=words),
                    subject=name,
                    field=f"variables.{name}.item_type",
                )
            )
        elif item_type is VariableType.OBJECT:
            items, found = _object_cx_schema(variable, schemas)
            diagnostics.extend(found)
            defs = items.pop("defs", None)
            out["items"] = items
            if defs:
                out["defs"] = defs
        else:
            out["items"] = {"type": _PLAIN_CX_TYPES[item_type]}
    elif variable.type is VariableType.OBJECT:
        out, found = _object_cx_schema(variable, schemas)
        diagnostics.extend(found)
    else:
        out = {"type": _PLAIN_CX_TYPES[variable.type]}
    if variable.default is not None:
        out["default"] = variable.default
    ordered = {key: out[key] for key in _CX_KEY_ORDER if key in out}
    return ordered, tuple(diagnostics)


def _object_cx_schema(
    variable: VariableSpec, schemas: Mapping[str, dict[str, Any]]
) -> tuple[dict[str, Any], list[Diagnostic]]:
    schema = schemas.get(variable.schema or "")
    if not isinstance(schema, dict):
        missing = (
            Message("the schema %(schema)s does not exist", schema=repr(variable.schema))
            if variable.schema
            else Message("no schema")
        )
        message = Message(
            "%(name)s: a custom object needs a schema (%(missing)s)",
            name=variable.name,
            missing=missing,
        )
        return {"type": "OBJECT"}, [
            Diagnostic(
                "SC248",
                Severity.ERROR,
                message,
                field=f"variables.{variable.name}.schema",
                subject=variable.name,
            )
        ]
    converted, diagnostics = to_cx_schema(schema)
    converted = dict(converted)
    if "type" not in converted and "ref" not in converted and "anyOf" not in converted:
        converted = {"type": "OBJECT", **converted}
    return converted, [replace(d, subject=d.subject or variable.schema) for d in diagnostics]


@dataclass(frozen=True, slots=True)
class CxVariable:
    """What a CX variable declaration's schema means for a Statecraft variable.

    `schema` is the JSON Schema of the custom object (for an object, or a
    list of objects), else None.
    """

    type: VariableType
    item_type: VariableType | None = None
    schema: dict[str, Any] | None = None
    default: Any = None


def variable_from_cx_schema(cx: dict[str, Any]) -> tuple[CxVariable, tuple[Diagnostic, ...]]:
    """Read a CX variable declaration's ``schema`` back as a variable's type,
    item type, custom-object schema and default (for import)."""
    if not isinstance(cx, dict):
        message = Message("a CX schema must be a JSON object")
        return CxVariable(VariableType.TEXT), (
            schema_diagnostic("SC220", Severity.ERROR, message, "#"),
        )
    default = cx.get("default")
    body = {key: value for key, value in cx.items() if key != "default"}
    schema, found = from_cx_schema(body)
    diagnostics = list(found)
    kind = _json_type(schema)
    if kind == "array":
        items = schema.get("items")
        item_kind = _json_type(items) if isinstance(items, dict) else None
        if item_kind == "object":
            item_schema = dict(items) if isinstance(items, dict) else {}
            if "$defs" in schema:
                item_schema["$defs"] = schema["$defs"]
            return CxVariable(VariableType.LIST, VariableType.OBJECT, item_schema, default), tuple(
                diagnostics
            )
        item_type = _plain_type(item_kind)
        if item_type is None:
            message = Message("#/items: the list items have no usable type; read as text")
            if item_kind == "array":
                message = Message(
                    "#/items: a list of lists has no Statecraft type (a list "
                    "holds text, numbers, yes/no or objects); read as a list of "
                    'text: wrap each inner list in an object ({"values": [...]}) '
                    "to keep it typed"
                )
            diagnostics.append(schema_diagnostic("SC249", Severity.WARNING, message, "#/items"))
            item_type = VariableType.TEXT
        _report_lost_constraints(items if isinstance(items, dict) else {}, "#/items", diagnostics)
        _report_lost_constraints(schema, "#", diagnostics, allowed={"items"})
        return CxVariable(VariableType.LIST, item_type, None, default), tuple(diagnostics)
    if kind == "object" or "$ref" in schema or "properties" in schema:
        return CxVariable(VariableType.OBJECT, None, schema, default), tuple(diagnostics)
    plain = _plain_type(kind)
    if plain is None:
        diagnostics.append(
            schema_diagnostic(
                "SC247", Severity.WARNING, Message("#/type: no usable type; read as text"), "#/type"
            )
        )
        plain = VariableType.TEXT
    _report_lost_constraints(schema, "#", diagnostics)
    return CxVariable(plain, None, None, default), tuple(diagnostics)


def _json_type(schema: Any) -> str | None:
    if not isinstance(schema, dict):
        return None
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    return kind if isinstance(kind, str) else None


def _plain_type(kind: str | None) -> VariableType | None:
    return {
        "string": VariableType.TEXT,
        "number": VariableType.NUMBER,
        "integer": VariableType.NUMBER,
        "boolean": VariableType.BOOLEAN,
    }.get(kind or "")


def _report_lost_constraints(
    schema: dict[str, Any],
    where: str,
    diagnostics: list[Diagnostic],
    allowed: frozenset[str] | set[str] = frozenset(),
) -> None:
    kept = {"type", "title", "description", *allowed}
    lost = [key for key in schema if key not in kept]
    if lost:
        message = Message(
            "%(where)s: a plain variable keeps only its type; %(lost)s %(value)s not kept",
            where=where,
            lost=", ".join(lost),
            value="is" if len(lost) == 1 else "are",
        )
        diagnostics.append(schema_diagnostic("SC245", Severity.WARNING, message, where))
