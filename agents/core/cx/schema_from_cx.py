"""CX Agent Studio's `Schema` (its JSON form) read back as a draft 2020-12 JSON Schema
(`from_cx_schema`). The fields CX's `Schema` has are listed in `agents.core.cx.schema_to_cx`."""

from __future__ import annotations

import math
import re
from typing import Any

from agents.core.cx.schema_to_cx import _INT64_MAX, CX_TYPES
from agents.core.diagnostics import Diagnostic, Message, Severity
from agents.core.schemas import finite_double, is_json_number, json_pointer, schema_diagnostic

__all__ = ["from_cx_schema"]


_JSON_TYPES = {cx: json_type for json_type, cx in CX_TYPES.items()}
_CX_TYPE_NUMBERS = {1: "STRING", 2: "INTEGER", 3: "NUMBER", 4: "BOOLEAN", 5: "OBJECT", 6: "ARRAY"}


_CX_FIELDS: dict[str, str] = {
    # JSON name and proto field name -> JSON name
    "type": "type",
    "type_": "type",
    "properties": "properties",
    "required": "required",
    "description": "description",
    "items": "items",
    "nullable": "nullable",
    "uniqueItems": "uniqueItems",
    "unique_items": "uniqueItems",
    "prefixItems": "prefixItems",
    "prefix_items": "prefixItems",
    "additionalProperties": "additionalProperties",
    "additional_properties": "additionalProperties",
    "anyOf": "anyOf",
    "any_of": "anyOf",
    "enum": "enum",
    "default": "default",
    "ref": "ref",
    "defs": "defs",
    "title": "title",
    "minItems": "minItems",
    "min_items": "minItems",
    "maxItems": "maxItems",
    "max_items": "maxItems",
    "minimum": "minimum",
    "maximum": "maximum",
}
_JSON_KEY_ORDER = (
    "type",
    "title",
    "description",
    "enum",
    "default",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "prefixItems",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minimum",
    "maximum",
    "anyOf",
    "$ref",
    "$defs",
)
_CX_REF = re.compile(r"#/(?:\$?defs)/([^/]+)")


def from_cx_schema(cx: dict[str, Any]) -> tuple[dict[str, Any], tuple[Diagnostic, ...]]:
    """Convert the JSON form of CX's ``Schema`` message to a draft 2020-12 JSON Schema.

    Accepts camelCase and proto field names, enum names or numbers for
    ``type``, and the protobuf defaults (``""``, ``0``, ``false``, ``[]``) as
    "not set". ``nullable`` becomes ``"type": [T, "null"]``; ``ref``
    ``#/defs/X`` becomes ``$ref`` ``#/$defs/X``; enum texts are read back as
    numbers or booleans for those types.
    """
    if not isinstance(cx, dict):
        return {}, (
            schema_diagnostic(
                "SC220", Severity.ERROR, Message("a CX schema must be a JSON object"), "#"
            ),
        )
    diagnostics: list[Diagnostic] = []
    return _from_cx(cx, (), diagnostics), tuple(diagnostics)


def _from_cx(cx: Any, path: tuple[str | int, ...], diagnostics: list[Diagnostic]) -> dict[str, Any]:
    def report(code: str, key: str, words: str) -> None:
        where = json_pointer((*path, key))
        diagnostics.append(
            schema_diagnostic(
                code,
                Severity.WARNING,
                Message("%(where)s: %(words)s", where=where, words=words),
                where,
            )
        )

    if not isinstance(cx, dict):
        where = json_pointer(path)
        diagnostics.append(
            schema_diagnostic(
                "SC247",
                Severity.WARNING,
                Message("%(where)s: a schema must be an object", where=where),
                where,
            )
        )
        return {}
    fields: dict[str, tuple[str, Any]] = {}
    for key, value in cx.items():
        name = _CX_FIELDS.get(key)
        if name is None:
            report(
                "SC246",
                key,
                Message("%(key)s is not a field of CX's Schema; ignored", key=repr(key)),
            )
        else:
            fields[name] = (key, value)
    out: dict[str, Any] = {}
    kind = None
    if "type" in fields:
        key, value = fields["type"]
        if isinstance(value, int) and not isinstance(value, bool):
            value = _CX_TYPE_NUMBERS.get(value, "TYPE_UNSPECIFIED" if value == 0 else value)
        if isinstance(value, str) and value in _JSON_TYPES:
            kind = value
            out["type"] = _JSON_TYPES[value]
        elif value != "TYPE_UNSPECIFIED":
            report("SC247", key, Message("%(value)s is not a CX type; ignored", value=repr(value)))
    nullable = fields.get("nullable", (None, False))
    if nullable[1] is True and "type" in out:
        out["type"] = [out["type"], "null"]
    elif nullable[1] not in (True, False):
        report("SC247", nullable[0], Message("nullable must be true or false; ignored"))
    for name, (key, value) in fields.items():
        here = (*path, key)
        if name in {"title", "description"}:
            if isinstance(value, str):
                if value:
                    out[name] = value
            else:
                report("SC247", key, Message("must be text; ignored"))
        elif name in {"properties", "defs"}:
            if isinstance(value, dict):
                converted = {
                    sub: _from_cx(s, (*here, sub), diagnostics) for sub, s in value.items()
                }
                if converted:
                    out["$defs" if name == "defs" else name] = converted
            else:
                report("SC247", key, Message("must be an object; ignored"))
        elif name in {"items", "additionalProperties"}:
            out[name] = _from_cx(value, here, diagnostics)
        elif name in {"prefixItems", "anyOf"}:
            if isinstance(value, list):
                if value:
                    out[name] = [_from_cx(s, (*here, i), diagnostics) for i, s in enumerate(value)]
            else:
                report("SC247", key, Message("must be a list; ignored"))
        elif name == "required":
            if isinstance(value, list) and all(isinstance(item, str) for item in value):
                if value:
                    out["required"] = list(value)
            else:
                report("SC247", key, Message("must be a list of names; ignored"))
        elif name == "enum":
            if isinstance(value, list) and all(isinstance(item, str) for item in value):
                if value:
                    out["enum"] = [_enum_value(item, kind) for item in value]
            else:
                report("SC247", key, Message("must be a list of texts; ignored"))
        elif name == "default":
            out["default"] = value
        elif name in {"minimum", "maximum"}:
            number = _cx_number(value)
            if number is None:
                report("SC247", key, Message("must be a number; ignored"))
            else:
                out[name] = number
        elif name in {"minItems", "maxItems"}:
            count = _cx_count(value)
            if count is None:
                report("SC247", key, Message("must be a whole number; ignored"))
            elif count > 0:
                out[name] = count
        elif name == "uniqueItems":
            if value is True:
                out["uniqueItems"] = True
            elif value is not False:
                report("SC247", key, Message("must be true or false; ignored"))
        elif name == "ref":
            if not isinstance(value, str):
                report("SC247", key, Message("must be text; ignored"))
            elif value:
                match = _CX_REF.fullmatch(value)
                if match:
                    out["$ref"] = f"#/$defs/{match.group(1)}"
                elif not value.startswith("#") and "/" not in value:
                    out["$ref"] = f"#/$defs/{value.replace('~', '~0')}"
                else:
                    report(
                        "SC247",
                        key,
                        Message(
                            "%(value)s is not a reference to #/defs/<name>; ignored",
                            value=repr(value),
                        ),
                    )
    return {key: out[key] for key in _JSON_KEY_ORDER if key in out}


def _enum_value(text: str, kind: str | None) -> Any:
    if kind == "BOOLEAN" and text in {"true", "false"}:
        return text == "true"
    if kind in {"INTEGER", "NUMBER"}:
        number = _cx_number(text)
        if number is not None:
            return number
    return text


def _cx_number(value: Any) -> int | float | None:
    if is_json_number(value):
        return value if finite_double(value) else None
    if isinstance(value, str):
        text = value.strip()
        try:
            if re.fullmatch(r"[+-]?\d+", text):
                return int(text)
            number = float(text)
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def _cx_count(value: Any) -> int | None:
    if isinstance(value, str) and re.fullmatch(r"\d+", value.strip()):
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _INT64_MAX:
        return value
    return None
