"""JSON Schema to CX Agent Studio's `Schema` (`to_cx_schema`); the way back is
`agents.core.cx.schema_from_cx`, variables to and from CX variable declarations
`agents.core.cx.variables`. ``CODES`` are the codes of all three.

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
from typing import Any

from agents.core import codes
from agents.core.diagnostics import Diagnostic, Message, Severity
from agents.core.schemas import finite_double, is_json_number, json_pointer, schema_diagnostic
from agents.core.types import is_missing, resolve_local_ref

__all__ = ["CODES", "CX_TYPES", "to_cx_schema"]


CX_TYPES: dict[str, str] = {
    "string": "STRING",
    "integer": "INTEGER",
    "number": "NUMBER",
    "boolean": "BOOLEAN",
    "object": "OBJECT",
    "array": "ARRAY",
}


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
