"""JSON Schema to and from CX Agent Studio's `Schema`, and variables to and from CX
variable declarations.

Schemas are JSON Schema draft 2020-12. CX Agent Studio stores a variable's
schema as its ``google.cloud.ces.v1.Schema`` message, "a select subset of an
OpenAPI 3.0 schema object", whose JSON form (camelCase, as
``google.protobuf.json_format`` reads it) has exactly these fields:
``type`` (STRING, INTEGER, NUMBER, BOOLEAN, OBJECT, ARRAY), ``properties``,
``required``, ``description``, ``items``, ``nullable``, ``uniqueItems``,
``prefixItems``, ``additionalProperties`` (a Schema, not a boolean),
``anyOf``, ``enum`` (strings only, even for numbers: ``["101", "201"]``),
``default`` (any JSON), ``ref`` (``"#/defs/Name"``), ``defs`` (only at the
root), ``title``, ``minItems``, ``maxItems``, ``minimum``, ``maximum``.
Everything else in a JSON Schema is reported when converting, never silently
dropped. ``minItems``/``maxItems`` are written as JSON numbers (the protobuf
JSON parser accepts them; it would print int64 as strings).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from agents.core import codes
from agents.core.diagnostics import Diagnostic, Message, Severity
from agents.core.schemas import finite_double, is_json_number, json_pointer, schema_diagnostic
from agents.core.spec import VariableSpec, VariableType
from agents.core.types import is_missing, resolve_local_ref

__all__ = [
    "CODES",
    "CX_TYPES",
    "CxVariable",
    "from_cx_schema",
    "to_cx_schema",
    "variable_cx_schema",
    "variable_from_cx_schema",
]

CX_TYPES: dict[str, str] = {
    "string": "STRING",
    "integer": "INTEGER",
    "number": "NUMBER",
    "boolean": "BOOLEAN",
    "object": "OBJECT",
    "array": "ARRAY",
}
_JSON_TYPES = {cx: json_type for json_type, cx in CX_TYPES.items()}
_CX_TYPE_NUMBERS = {1: "STRING", 2: "INTEGER", 3: "NUMBER", 4: "BOOLEAN", 5: "OBJECT", 6: "ARRAY"}
_INT64_MAX = 2**63 - 1  # protobuf int64


_NO_CX_EQUIVALENT = frozenset(
    {
        "format",
        "pattern",
        "minLength",
        "maxLength",
        "multipleOf",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "allOf",
        "not",
        "if",
        "then",
        "else",
        "patternProperties",
        "dependentRequired",
        "dependentSchemas",
        "propertyNames",
        "minProperties",
        "maxProperties",
        "contains",
        "minContains",
        "maxContains",
        "unevaluatedItems",
        "unevaluatedProperties",
        "$dynamicRef",
        "$recursiveRef",
    }
)
_ANNOTATIONS = frozenset(
    {
        "$schema",
        "$id",
        "$anchor",
        "$dynamicAnchor",
        "$recursiveAnchor",
        "$vocabulary",
        "$comment",
        "examples",
        "readOnly",
        "writeOnly",
        "deprecated",
        "contentEncoding",
        "contentMediaType",
        "contentSchema",
    }
)

CODES: dict[str, str] = codes.section("cx_schemas")

# ---------------------------------------------------------------------------
# JSON Schema -> CX Schema

_CX_KEY_ORDER = (
    "type",
    "nullable",
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
    "ref",
    "defs",
)
_DEFS_REF = re.compile(r"#/\$defs/([^/]+)")


def to_cx_schema(schema: dict[str, Any]) -> tuple[dict[str, Any], tuple[Diagnostic, ...]]:
    """Convert a JSON Schema to the JSON form of CX's ``Schema`` message.

    Every keyword without a CX equivalent is reported with the JSON pointer of
    the keyword (``field``), never silently dropped. The result always parses
    with ``google.cloud.ces_v1.types.Schema.from_json``.
    """
    if not isinstance(schema, dict):
        return {}, (
            schema_diagnostic(
                "SC220", Severity.ERROR, Message("a schema must be a JSON object"), "#"
            ),
        )
    converter = _ToCx(schema)
    converted = converter.convert(schema, (), root=True)
    return converted or {}, tuple(converter.diagnostics)


class _ToCx:
    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.diagnostics: list[Diagnostic] = []

    def report(
        self, code: str, severity: Severity, path: tuple[str | int, ...], words: str
    ) -> None:
        where = json_pointer(path)
        self.diagnostics.append(
            schema_diagnostic(
                code, severity, Message("%(where)s: %(words)s", where=where, words=words), where
            )
        )

    def convert(
        self, node: Any, path: tuple[str | int, ...], *, root: bool = False
    ) -> dict[str, Any] | None:
        if node is True:
            self.report("SC239", Severity.WARNING, path, Message("true (any value) has no CX type"))
            return {}
        if node is False:
            self.report(
                "SC235", Severity.WARNING, path, Message("false (no value allowed) has no CX form")
            )
            return None
        if not isinstance(node, dict):
            self.report(
                "SC244", Severity.WARNING, path, Message("a schema must be an object; left out")
            )
            return None
        out: dict[str, Any] = {}
        self.convert_type(node, path, out)
        for keyword, value in node.items():
            self.convert_keyword(keyword, value, node, path, out, root=root)
        if "enum" in node or "const" in node:
            self.convert_enum(node, path, out)
        if "type" not in out and not any(k in out for k in ("ref", "anyOf")):
            self.infer_type(node, path, out)
        return {key: out[key] for key in _CX_KEY_ORDER if key in out}

    def convert_type(
        self, node: dict[str, Any], path: tuple[str | int, ...], out: dict[str, Any]
    ) -> None:
        if "type" not in node:
            return
        declared = node["type"]
        kinds = declared if isinstance(declared, list) else [declared]
        if not kinds or not all(
            isinstance(k, str) and (k in CX_TYPES or k == "null") for k in kinds
        ):
            self.report(
                "SC244",
                Severity.WARNING,
                (*path, "type"),
                Message("%(declared)s is not a type", declared=repr(declared)),
            )
            return
        real = [CX_TYPES[kind] for kind in kinds if kind != "null"]
        if "null" in kinds:
            out["nullable"] = True
        if len(real) == 1:
            out["type"] = real[0]
        elif not real:
            self.report(
                "SC237",
                Severity.WARNING,
                (*path, "type"),
                Message('CX has no null type; exported as "nullable": true without a type'),
            )
        elif "anyOf" in node or "oneOf" in node:
            self.report(
                "SC237",
                Severity.WARNING,
                (*path, "type"),
                Message("several types next to anyOf/oneOf; only %(real)s is kept", real=real[0]),
            )
            out["type"] = real[0]
        else:
            self.report(
                "SC237",
                Severity.INFO,
                (*path, "type"),
                Message("several types exported as anyOf of %(real)s", real=", ".join(real)),
            )
            out["anyOf"] = [{"type": kind} for kind in real]

    def convert_keyword(
        self,
        keyword: str,
        value: Any,
        node: dict[str, Any],
        path: tuple[str | int, ...],
        out: dict[str, Any],
        *,
        root: bool,
    ) -> None:
        here = (*path, keyword)
        if keyword in {"type", "enum", "const"}:
            return
        if keyword in {"title", "description"}:
            if isinstance(value, str):
                out[keyword] = value
            else:
                self.report("SC244", Severity.WARNING, here, Message("must be text; left out"))
        elif keyword == "properties":
            if not isinstance(value, dict):
                self.report("SC244", Severity.WARNING, here, Message("must be an object; left out"))
                return
            properties = {}
            for name, sub in value.items():
                converted = self.convert(sub, (*here, name))
                if converted is not None:
                    properties[name] = converted
            out["properties"] = properties
        elif keyword == "required":
            if isinstance(value, list) and all(isinstance(name, str) for name in value):
                out["required"] = list(value)
            else:
                self.report(
                    "SC244", Severity.WARNING, here, Message("must be a list of names; left out")
                )
        elif keyword in {"items", "additionalProperties"}:
            if value is True:
                return  # the same as leaving it out
            converted = self.convert(value, here)
            if converted is not None:
                out[keyword] = converted
        elif keyword == "prefixItems":
            if not isinstance(value, list):
                self.report("SC244", Severity.WARNING, here, Message("must be a list; left out"))
                return
            out["prefixItems"] = [
                self.convert(sub, (*here, index)) or {} for index, sub in enumerate(value)
            ]
        elif keyword in {"anyOf", "oneOf"}:
            if keyword == "oneOf":
                if "anyOf" in node or "anyOf" in out:
                    self.report(
                        "SC232",
                        Severity.WARNING,
                        here,
                        Message("oneOf next to anyOf has no CX form"),
                    )
                    return
                self.report(
                    "SC243",
                    Severity.WARNING,
                    here,
                    Message(
                        "CX has no oneOf; exported as anyOf, which also accepts a "
                        "value matching several alternatives"
                    ),
                )
            if not isinstance(value, list):
                self.report("SC244", Severity.WARNING, here, Message("must be a list; left out"))
                return
            options = [self.convert(sub, (*here, index)) for index, sub in enumerate(value)]
            out["anyOf"] = [option for option in options if option is not None]
        elif keyword == "default":
            if _is_json(value):
                out["default"] = value
            else:
                self.report("SC244", Severity.WARNING, here, Message("is not JSON data; left out"))
        elif keyword in {"minimum", "maximum"}:
            if finite_double(value):
                out[keyword] = value
            else:
                self.report("SC244", Severity.WARNING, here, Message("must be a number; left out"))
        elif keyword in {"exclusiveMinimum", "exclusiveMaximum"}:
            self.convert_exclusive(keyword, value, node, path, out)
        elif keyword in {"minItems", "maxItems"}:
            if not (
                isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _INT64_MAX
            ):
                self.report(
                    "SC244", Severity.WARNING, here, Message("must be a whole number; left out")
                )
            elif value > 0:
                out[keyword] = value
            elif keyword == "maxItems":
                self.report(
                    "SC232",
                    Severity.WARNING,
                    here,
                    Message("maxItems 0 cannot be exported: CX reads 0 as no limit"),
                )
        elif keyword == "uniqueItems":
            if value is True:
                out["uniqueItems"] = True
            elif value is not False:
                self.report(
                    "SC244", Severity.WARNING, here, Message("must be true or false; left out")
                )
        elif keyword == "$ref":
            self.convert_ref(value, path, out)
        elif keyword == "$defs":
            if not root:
                self.report(
                    "SC241",
                    Severity.WARNING,
                    here,
                    Message("CX allows defs only at the root of a schema; move them there"),
                )
            elif isinstance(value, dict):
                defs = {}
                for name, sub in value.items():
                    converted = self.convert(sub, (*here, name))
                    if converted is not None:
                        defs[name] = converted
                out["defs"] = defs
            else:
                self.report("SC244", Severity.WARNING, here, Message("must be an object; left out"))
        elif keyword in _NO_CX_EQUIVALENT:
            self.report(
                "SC232",
                Severity.WARNING,
                here,
                Message("%(keyword)s has no CX equivalent; not exported", keyword=keyword),
            )
        elif keyword in _ANNOTATIONS:
            self.report(
                "SC233",
                Severity.INFO,
                here,
                Message("%(keyword)s has no CX equivalent; not exported", keyword=keyword),
            )
        else:
            self.report(
                "SC234",
                Severity.INFO,
                here,
                Message(
                    "%(keyword)s is not a JSON Schema keyword; not exported", keyword=repr(keyword)
                ),
            )

    def convert_exclusive(
        self,
        keyword: str,
        value: Any,
        node: dict[str, Any],
        path: tuple[str | int, ...],
        out: dict[str, Any],
    ) -> None:
        here = (*path, keyword)
        lower = keyword == "exclusiveMinimum"
        inclusive = "minimum" if lower else "maximum"
        if node.get("type") == "integer" and finite_double(value) and inclusive not in node:
            bound = math.floor(value) + 1 if lower else math.ceil(value) - 1
            out[inclusive] = bound
            self.report(
                "SC242",
                Severity.INFO,
                here,
                Message(
                    "exported as %(inclusive)s %(bound)s (the same for whole numbers)",
                    inclusive=inclusive,
                    bound=bound,
                ),
            )
            return
        self.report(
            "SC232",
            Severity.WARNING,
            here,
            Message("%(keyword)s has no CX equivalent; not exported", keyword=keyword),
        )

    def convert_ref(self, ref: Any, path: tuple[str | int, ...], out: dict[str, Any]) -> None:
        here = (*path, "$ref")
        match = _DEFS_REF.fullmatch(ref) if isinstance(ref, str) else None
        defs = self.root.get("$defs")
        if match and isinstance(defs, dict) and not is_missing(resolve_local_ref(self.root, ref)):
            out["ref"] = f"#/defs/{match.group(1)}"
            return
        self.report(
            "SC240",
            Severity.WARNING,
            here,
            Message(
                "%(ref)s cannot be exported: CX references only #/defs/<name> at the root",
                ref=repr(ref),
            ),
        )

    def convert_enum(
        self, node: dict[str, Any], path: tuple[str | int, ...], out: dict[str, Any]
    ) -> None:
        keyword = "const" if "const" in node else "enum"
        here = (*path, keyword)
        values = [node["const"]] if keyword == "const" else node["enum"]
        if keyword == "const" and "enum" in node:
            self.report(
                "SC236",
                Severity.WARNING,
                (*path, "enum"),
                Message("enum next to const; only const is exported"),
            )
        if not isinstance(values, list):
            self.report("SC244", Severity.WARNING, here, Message("must be a list; left out"))
            return
        if any(value is None for value in values):
            out["nullable"] = True
            self.report(
                "SC236",
                Severity.WARNING,
                here,
                Message("null cannot be listed in a CX enum; exported as nullable"),
            )
            values = [value for value in values if value is not None]
        kind = out.get("type")
        if kind is None and "type" not in node:
            kind = _implied_enum_type(values)
            if kind is None:
                self.report(
                    "SC236",
                    Severity.WARNING,
                    here,
                    Message(
                        "values of different kinds (or objects, lists) cannot be a CX "
                        "enum; left out"
                    ),
                )
                return
            out["type"] = kind
            self.report(
                "SC238",
                Severity.INFO,
                path,
                Message(
                    "no type; exported as %(kind)s (from %(keyword)s)", kind=kind, keyword=keyword
                ),
            )
        texts: list[str] = []
        for value in values:
            text = _enum_text(value, kind)
            if text is None:
                self.report(
                    "SC236",
                    Severity.WARNING,
                    here,
                    Message(
                        "%(dumps)s cannot be a CX enum value for type %(kind)s; not exported",
                        dumps=json.dumps(value),
                        kind=kind,
                    ),
                )
            else:
                texts.append(text)
        out["enum"] = texts

    def infer_type(
        self, node: dict[str, Any], path: tuple[str | int, ...], out: dict[str, Any]
    ) -> None:
        implied = None
        if any(k in node for k in ("properties", "required", "additionalProperties")):
            implied = "OBJECT"
        elif any(
            k in node for k in ("items", "prefixItems", "minItems", "maxItems", "uniqueItems")
        ):
            implied = "ARRAY"
        elif any(k in node for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")):
            implied = "NUMBER"
        elif any(k in node for k in ("minLength", "maxLength", "pattern", "format")):
            implied = "STRING"
        if implied:
            out["type"] = implied
            self.report(
                "SC238",
                Severity.INFO,
                path,
                Message("no type; exported as %(implied)s", implied=implied),
            )
        elif not any(k in node for k in ("type", "$ref", "anyOf", "oneOf", "enum", "const")):
            self.report(
                "SC239",
                Severity.WARNING,
                path,
                Message("no type: any value is allowed, but CX requires a type"),
            )


def _implied_enum_type(values: list[Any]) -> str | None:
    if not values:
        return None
    if all(isinstance(v, str) for v in values):
        return "STRING"
    if all(isinstance(v, bool) for v in values):
        return "BOOLEAN"
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return "INTEGER"
    if all(is_json_number(v) for v in values):
        return "NUMBER"
    return None


def _enum_text(value: Any, kind: str | None) -> str | None:
    if kind == "STRING":
        return value if isinstance(value, str) else None
    if kind == "BOOLEAN":
        return ("true" if value else "false") if isinstance(value, bool) else None
    if kind == "INTEGER":
        if is_json_number(value) and finite_double(value) and float(value).is_integer():
            return str(int(value))
        return None
    if kind == "NUMBER":
        if not finite_double(value):
            return None
        return repr(value) if isinstance(value, float) else str(value)
    return None


def _is_json(value: Any) -> bool:
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if not all(isinstance(key, str) for key in node):
                return False
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, float):
            if not math.isfinite(node):
                return False
        elif not (node is None or isinstance(node, (str, int))):
            return False
    return True


# ---------------------------------------------------------------------------
# CX Schema -> JSON Schema

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


# ---------------------------------------------------------------------------
# Variables <-> CX variable declarations

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
