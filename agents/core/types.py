"""Typed variable values: their JSON Schema, and validation against type and schema.

Form text in and out lives in `form_text.py`, examples generated from a schema in
`examples.py`. Nothing here raises on bad input: validation problems come back as
``Diagnostic`` values.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote, unquote

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match
from referencing import Registry
from referencing.exceptions import NoSuchResource

from agents.core import codes, safe_regex
from agents.core.diagnostics import Diagnostic, Message, Severity
from agents.core.safe_regex import TimedDraft202012Validator
from agents.core.spec import VariableSpec, VariableType

__all__ = [
    "CODES",
    "describe_validation_error",
    "json_schema_for",
    "path_in_words",
    "resolve_local_ref",
    "validate_value",
]

CODES: dict[str, str] = codes.section("types")

MAX_VALUE_DIAGNOSTICS = 20

_TYPE_SCHEMAS: dict[VariableType, dict[str, Any]] = {
    VariableType.TEXT: {"type": "string"},
    VariableType.NUMBER: {"type": "number"},
    VariableType.BOOLEAN: {"type": "boolean"},
}


# ---------------------------------------------------------------------------
# JSON Schema of a variable


TYPE_LABELS: dict[VariableType, str] = {
    # CX Agent Studio's names (its "Variables" page); `Message` so a page shows them translated.
    VariableType.TEXT: Message("Text"),
    VariableType.NUMBER: Message("Number"),
    VariableType.BOOLEAN: Message("Yes/No"),
    VariableType.OBJECT: Message("Custom object"),
    VariableType.LIST: Message("List"),
}


# "List of X" as one whole phrase per item type (a translation inflects the item: "Liste
# de nombres", "Zahlenliste"); a custom object's list names its schema (user data).
LIST_LABELS: dict[VariableType, str] = {
    VariableType.TEXT: Message("List of Text"),
    VariableType.NUMBER: Message("List of Number"),
    VariableType.BOOLEAN: Message("List of Yes/No"),
    VariableType.OBJECT: Message("List of Custom object"),
    VariableType.LIST: Message("List of List"),
}


def type_label(
    type: VariableType, item_type: VariableType | None = None, schema: str | None = None
) -> str:
    """How a designer reads a type: `Number`, `Customer`, `List of Text`, `List of Customer`."""
    if type is VariableType.LIST:
        if item_type is VariableType.OBJECT and schema:
            return Message("List of %(item)s", item=schema)
        return LIST_LABELS[item_type] if item_type else Message("List of %(item)s", item="?")
    if type is VariableType.OBJECT and schema:
        return schema
    return TYPE_LABELS[type]


def json_schema_for(
    variable: VariableSpec, schemas: Mapping[str, dict[str, Any]]
) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) a value of `variable` must satisfy.

    A custom object uses its named schema (``{"type": "object"}`` is added when
    the schema says no type; an unknown schema name gives a plain object schema,
    which ``validate_value`` reports). A list's item schema is embedded under
    ``items``; an embedded custom schema gets a ``$id`` so that its own
    ``#/$defs/...`` references still resolve inside it.
    """
    if variable.type is VariableType.LIST:
        array: dict[str, Any] = {"type": "array"}
        item_type = variable.item_type
        if item_type is not None and item_type is not VariableType.LIST:
            array["items"] = _item_schema(item_type, variable.schema, schemas)
        return array
    if variable.type is VariableType.OBJECT:
        return _object_schema(variable.schema, schemas)
    return dict(_TYPE_SCHEMAS[variable.type])


def _object_schema(name: str | None, schemas: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    schema = schemas.get(name) if name else None
    if not isinstance(schema, dict):
        return {"type": "object"}
    if "type" not in schema:
        return {**schema, "type": "object"}
    return schema


def _item_schema(
    item_type: VariableType, schema_name: str | None, schemas: Mapping[str, dict[str, Any]]
) -> dict[str, Any]:
    if item_type is not VariableType.OBJECT:
        return dict(_TYPE_SCHEMAS[item_type])
    item = _object_schema(schema_name, schemas)
    if "$id" not in item and _has_ref(item):
        item = {"$id": f"urn:statecraft:schema:{quote(schema_name or 'item', safe='')}", **item}
    return item


def _has_ref(schema: Any) -> bool:
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if "$ref" in node or "$dynamicRef" in node:
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


# ---------------------------------------------------------------------------
# Validation


def validate_value(
    value: Any,
    variable: VariableSpec,
    schemas: Mapping[str, dict[str, Any]],
    *,
    field: str | None = None,
    plain: bool = False,
) -> tuple[Diagnostic, ...]:
    """Check a typed value against its variable's type and schema.

    `None` means "no value" and is always fine. Validation uses draft 2020-12
    with format checking on; remote ``$ref`` are never fetched. Each problem
    names where it is in words (``customer.age: -3 is less than the minimum
    of 0``). `field` defaults to ``variables.<name>.default``. `plain`: the caller
    knows `value` is JSON data of the exact types (a sandbox answer parsed without a
    float, ``CodeResult.plain``), so it is not walked to find out.
    """
    if value is None:
        return ()
    name = variable.name
    where = field if field is not None else f"variables.{name}.default"

    def diagnostic(code: str, message: str, severity: Severity = Severity.ERROR) -> Diagnostic:
        return Diagnostic(code, severity, message, field=where, subject=name)

    if variable.type is VariableType.LIST and variable.item_type is VariableType.LIST:
        return (diagnostic("SC208", Message("%(name)s: a list cannot hold lists", name=name)),)
    needs_schema = variable.type is VariableType.OBJECT or (
        variable.type is VariableType.LIST and variable.item_type is VariableType.OBJECT
    )
    found: list[Diagnostic] = []
    if needs_schema and not isinstance(schemas.get(variable.schema or ""), dict):
        if variable.schema:
            message = Message(
                "%(name)s: the schema %(quoted)s does not exist",
                name=name,
                quoted=quoted(variable.schema),
            )
        else:
            message = Message("%(name)s: a custom object needs a schema", name=name)
        found.append(diagnostic("SC206", message))
    not_json = None if plain else _not_json_reason(value)
    if not_json:
        return (
            *found,
            diagnostic(
                "SC209",
                Message(
                    "%(path_in_words)s: %(not_json)s",
                    path_in_words=path_in_words(name, not_json[0]),
                    not_json=not_json[1],
                ),
            ),
        )
    problems = value_schema_problems(value, json_schema_for(variable, schemas), root_name=name)
    for message, error in problems[:MAX_VALUE_DIAGNOSTICS]:
        found.append(diagnostic(_code_for(error), message))
    if len(problems) > MAX_VALUE_DIAGNOSTICS:
        more = len(problems) - MAX_VALUE_DIAGNOSTICS
        found.append(
            diagnostic(
                "SC211",
                Message("%(name)s: %(more)s more problems", name=name, more=more),
                Severity.INFO,
            )
        )
    return tuple(found)


def _refuse_retrieval(uri: str) -> Any:
    raise NoSuchResource(ref=uri)


def _validator(schema: dict[str, Any]) -> Draft202012Validator:
    # pattern / patternProperties matched with a time limit (agents/core/safe_regex.py).
    return TimedDraft202012Validator(
        schema,
        registry=Registry(retrieve=_refuse_retrieval),  # type: ignore[call-arg]
        format_checker=Draft202012Validator.FORMAT_CHECKER,
    )


def value_schema_problems(
    value: Any, schema: dict[str, Any], *, root_name: str | None
) -> list[tuple[str, ValidationError | None]]:
    """(message, error) for each way `value` fails `schema`, in a stable order."""
    if _plainly_valid(value, schema):
        return []
    try:
        errors = sorted(_validator(schema).iter_errors(value), key=_error_sort_key)
    except Exception as error:  # an unresolvable $ref or a broken schema, found while validating
        where = root_name or "value"
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        message = Message(
            "%(where)s: the schema cannot be used to validate (%(reason)s)",
            where=where,
            reason=reason,
        )
        return [(message, None)]
    problems: list[tuple[str, ValidationError | None]] = []
    for error in errors:
        words = describe_validation_error(error)
        if root_name or error.absolute_path:
            words = Message(
                "%(path_in_words)s: %(words)s",
                path_in_words=path_in_words(root_name, error.absolute_path),
                words=words,
            )
        problems.append((words, error))
    return problems


# jsonschema's draft 2020-12 type checks (jsonschema/_types.py) for the plain types
# schemas (_TYPE_SCHEMAS): a bool is not a number.
_PLAIN_TYPES: dict[str, Any] = {
    "string": lambda v: isinstance(v, str),
    "number": lambda v: isinstance(v, numbers.Number) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
}


def _plainly_valid(value: Any, schema: dict[str, Any]) -> bool:
    """True when `value` surely satisfies `schema`, seen without building a validator:
    only for the schemas of the plain types (``{"type": "string"}``...), a bare list and a
    list of a plain type (what every text, number, boolean or list write of a simulation
    is checked against, once per write, the whole list each time). False: ask jsonschema
    (which also gives the messages)."""
    if len(schema) == 1 and type(schema.get("type")) is str:
        check = _PLAIN_TYPES.get(schema["type"])
        if check is not None:
            return check(value)
        return schema["type"] == "array" and isinstance(value, list)
    if len(schema) == 2 and schema.get("type") == "array" and type(schema.get("items")) is dict:
        items = schema["items"]
        kind = items.get("type")
        check = _PLAIN_TYPES.get(kind) if len(items) == 1 and type(kind) is str else None
        return check is not None and isinstance(value, list) and all(map(check, value))
    return False


def _error_sort_key(error: ValidationError) -> tuple[Any, ...]:
    path = tuple((isinstance(p, int), p) for p in error.absolute_path)  # ints never meet strs
    return path, str(error.validator), tuple(str(p) for p in error.absolute_schema_path)


def _code_for(error: ValidationError | None) -> str:
    if error is None:
        return "SC207"
    return {
        "type": "SC201",
        "format": "SC203",
        "required": "SC204",
        "dependentRequired": "SC204",
        "additionalProperties": "SC205",
        "unevaluatedProperties": "SC205",
        "anyOf": "SC210",
        "oneOf": "SC210",
        "not": "SC210",
    }.get(str(error.validator), "SC202")


def path_in_words(root: str | None, path: Iterable[Any]) -> str:
    """``customer.address.zip``; list items are counted from 1: ``orders item 2.total``."""
    words: str = root or ""
    for part in path:
        if isinstance(part, int):  # the word "item" is the reader's language's (a `Message`)
            words = (
                Message("%(path)s item %(number)s", path=words, number=part + 1)
                if words
                else Message("item %(number)s", number=part + 1)
            )
        elif isinstance(words, Message):
            words = Message("%(path)s.%(key)s", path=words, key=part)
        else:
            words = f"{words}.{part}" if words else str(part)
    return words or Message("value")


# What a value of a JSON Schema type or format is called in a message (each a `Message`,
# so the reader's language has its own word).
_KIND_WORDS: dict[str, str] = {
    "string": Message("text"),
    "number": Message("a number"),
    "integer": Message("a whole number"),
    "boolean": Message("yes or no"),
    "object": Message("an object"),
    "array": Message("a list"),
    "null": "null",
}

_FORMAT_WORDS = {
    "date": Message("date (YYYY-MM-DD)"),
    "date-time": Message("date and time (YYYY-MM-DDThh:mm:ssZ)"),
    "time": Message("time (hh:mm:ssZ)"),
    "email": Message("email address"),
    "idn-email": Message("email address"),
    "uri": Message("absolute URI (https://...)"),
    "iri": Message("absolute IRI"),
    "uri-reference": Message("URI reference"),
    "iri-reference": Message("IRI reference"),
    "uuid": Message("UUID"),
    "ipv4": Message("IPv4 address"),
    "ipv6": Message("IPv6 address"),
    "hostname": Message("host name"),
    "idn-hostname": Message("host name"),
    "duration": Message("ISO 8601 duration (P1D)"),
    "regex": Message("regular expression"),
}


def describe_validation_error(error: ValidationError) -> str:
    """What went wrong, in words, without the path (callers add it)."""
    try:
        return _describe(error)
    except Exception:  # a malformed schema value (e.g. enum not a list): use jsonschema's words
        return error.message


def _either(words: list[str]) -> str:
    """`a`, `a or b`, `a or b or c`: each word kept a `Message`."""
    out = words[0]
    for word in words[1:]:
        out = Message("%(first)s or %(second)s", first=out, second=word)
    return out


def _items(least: bool, count: int, limit: Any) -> Message:
    """`has N item(s), at least/most M …` (one template each: the catalog has no plurals)."""
    if least:
        if count == 1:
            return Message("has %(count)s item, at least %(limit)s required", count=1, limit=limit)
        return Message("has %(count)s items, at least %(limit)s required", count=count, limit=limit)
    if count == 1:
        return Message("has %(count)s item, at most %(limit)s allowed", count=1, limit=limit)
    return Message("has %(count)s items, at most %(limit)s allowed", count=count, limit=limit)


def _properties(least: bool, count: int, limit: Any) -> Message:
    if least:
        if count == 1:
            return Message(
                "has %(count)s property, at least %(limit)s required", count=1, limit=limit
            )
        return Message(
            "has %(count)s properties, at least %(limit)s required", count=count, limit=limit
        )
    if count == 1:
        return Message("has %(count)s property, at most %(limit)s allowed", count=1, limit=limit)
    return Message("has %(count)s properties, at most %(limit)s allowed", count=count, limit=limit)


def _describe(error: ValidationError) -> str:
    keyword = str(error.validator)
    expected = error.validator_value
    instance = error.instance
    shown = _show(instance)
    if keyword == "type":
        kinds = expected if isinstance(expected, list) else [expected]
        wanted = _either([_KIND_WORDS.get(str(kind), str(kind)) for kind in kinds])
        return Message("%(shown)s is not %(wanted)s", shown=shown, wanted=wanted)
    if keyword == "minimum":
        return Message(
            "%(shown)s is less than the minimum of %(limit)s", shown=shown, limit=_show(expected)
        )
    if keyword == "maximum":
        return Message(
            "%(shown)s is more than the maximum of %(limit)s", shown=shown, limit=_show(expected)
        )
    if keyword == "exclusiveMinimum":
        return Message("%(shown)s must be more than %(limit)s", shown=shown, limit=_show(expected))
    if keyword == "exclusiveMaximum":
        return Message("%(shown)s must be less than %(limit)s", shown=shown, limit=_show(expected))
    if keyword == "multipleOf":
        return Message(
            "%(shown)s is not a multiple of %(limit)s", shown=shown, limit=_show(expected)
        )
    if keyword == "minLength":
        if expected == 1:
            return Message("%(shown)s is shorter than %(count)s character", shown=shown, count=1)
        return Message(
            "%(shown)s is shorter than %(count)s characters", shown=shown, count=expected
        )
    if keyword == "maxLength":
        if expected == 1:
            return Message("%(shown)s is longer than %(count)s character", shown=shown, count=1)
        return Message("%(shown)s is longer than %(count)s characters", shown=shown, count=expected)
    if keyword == "pattern":
        return Message(
            "%(shown)s does not match the pattern %(pattern)s",
            shown=shown,
            pattern=quoted(str(expected)),
        )
    if keyword == "format":
        return Message(
            "%(shown)s is not a valid %(format)s",
            shown=shown,
            format=_FORMAT_WORDS.get(str(expected), str(expected)),
        )
    if keyword == "enum":
        options = ", ".join(_show(option) for option in expected[:10])
        options += ", ..." if len(expected) > 10 else ""
        return Message("%(shown)s is not one of %(options)s", shown=shown, options=options)
    if keyword == "const":
        return Message("must be %(value)s", value=_show(expected))
    if keyword == "required":
        missing = [name for name in expected if isinstance(instance, dict) and name not in instance]
        names = ", ".join(quoted(name) for name in missing) or _show(expected)
        return Message("the required property %(names)s is missing", names=names)
    if keyword == "dependentRequired" and isinstance(expected, dict) and isinstance(instance, dict):
        for name, needed in expected.items():
            missing = [n for n in needed if name in instance and n not in instance]
            if missing:
                return Message(
                    "the property %(names)s is required when %(name)s is present",
                    names=", ".join(quoted(n) for n in missing),
                    name=quoted(name),
                )
    if keyword == "contains":
        return Message("no item matches the schema of the items it must contain")
    if keyword == "minContains":
        return Message(
            "too few items match the schema of the items it must contain (at least %(count)s)",
            count=expected,
        )
    if keyword == "maxContains":
        return Message(
            "too many items match the schema of the items it may contain (at most %(count)s)",
            count=expected,
        )
    if keyword in {"additionalProperties", "unevaluatedProperties"}:
        extra = _unexpected_properties(error)
        if extra:
            names = ", ".join(quoted(key) for key in extra)
            return Message("the property %(names)s is not allowed", names=names)
    if keyword in {"minItems", "maxItems"}:
        return _items(keyword == "minItems", _size(instance), expected)
    if keyword == "uniqueItems":
        return Message("has the same item more than once")
    if keyword in {"minProperties", "maxProperties"}:
        return _properties(keyword == "minProperties", _size(instance), expected)
    if keyword in {"anyOf", "oneOf"}:
        if keyword == "oneOf" and not error.context:
            return Message(
                "%(shown)s matches more than one of the allowed alternatives", shown=shown
            )
        closest = best_match(error.context) if error.context else None
        if closest is None:
            return Message("%(shown)s matches none of the allowed alternatives", shown=shown)
        if closest.relative_path:
            return Message(
                "%(shown)s matches none of the allowed alternatives (closest: %(where)s: "
                "%(closest)s)",
                shown=shown,
                where=path_in_words(None, closest.relative_path),
                closest=_describe(closest),
            )
        return Message(
            "%(shown)s matches none of the allowed alternatives (closest: %(closest)s)",
            shown=shown,
            closest=_describe(closest),
        )
    if keyword == "not":
        return Message("%(shown)s is a value the schema excludes", shown=shown)
    if keyword == "False schema" or expected is False:
        return Message("no value is allowed here")
    return error.message


def _unexpected_properties(error: ValidationError) -> list[str]:
    instance, schema = error.instance, error.schema
    if not isinstance(instance, dict) or not isinstance(schema, dict):
        return []
    declared = schema.get("properties", {}) if isinstance(schema.get("properties"), dict) else {}
    patterns = schema.get("patternProperties", {})
    extra = []
    for key in instance:
        if key in declared:
            continue
        if isinstance(patterns, dict) and any(search(p, key) for p in patterns):
            continue
        extra.append(key)
    return extra


def search(pattern: str, text: str) -> bool:
    try:
        return safe_regex.search(pattern, text)
    except safe_regex.PatternTimeout:
        return False


def _plain_json(value: Any) -> bool:
    """Whether `value` is JSON data made of the exact JSON types (what the sandbox's answers
    and the designer's forms hold): dicts with text keys, lists, text, numbers (finite
    floats), booleans, None. No path is built, so it costs a fraction of the full walk;
    anything else (a subclass, a tuple, NaN…) goes to the walk that says where and why."""
    stack = [value]
    pop, push = stack.pop, stack.extend
    while stack:
        node = pop()
        kind = type(node)
        if kind is str or kind is int or kind is bool or node is None:
            continue
        if kind is dict:
            if node and {*map(type, node)} != _TEXT_KEYS:
                return False
            push(node.values())
        elif kind is list:
            push(node)
        elif kind is not float or not math.isfinite(node):
            return False
    return True


_TEXT_KEYS = {str}


def _not_json_reason(value: Any) -> tuple[list[Any], str] | None:
    """Where and why `value` is not JSON data, or None when it is."""
    if _plain_json(value):
        return None
    stack: list[tuple[Any, list[Any]]] = [(value, [])]
    while stack:
        node, path = stack.pop()
        if node is None or isinstance(node, (str, bool, int)):
            continue
        if isinstance(node, float):
            if not math.isfinite(node):
                return path, Message("%(value)s is not a number JSON can hold", value=str(node))
            continue
        if isinstance(node, dict):
            for key, item in node.items():
                if not isinstance(key, str):
                    return path, Message("the key %(key)s is not text", key=repr(key))
                stack.append((item, [*path, key]))
            continue
        if isinstance(node, list):
            stack.extend((item, [*path, index]) for index, item in enumerate(node))
            continue
        return path, Message("a %(type)s is not JSON data", type=type(node).__name__)
    return None


# ---------------------------------------------------------------------------
# Small helpers shared with schemas.py and examples.py


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


def resolve_local_ref(root: Any, ref: str) -> Any:
    """The part of `root` a local ``$ref`` (``#``, ``#/a/b``, ``#anchor``) points to,
    or ``MISSING`` (see ``is_missing``)."""
    if not ref.startswith("#"):
        return MISSING
    fragment = unquote(ref[1:])
    if fragment == "":
        return root
    if not fragment.startswith("/"):
        return _find_anchor(root, fragment)
    node = root
    for token in fragment[1:].split("/"):
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return MISSING
    return node


def is_missing(value: Any) -> bool:
    return value is MISSING


def _find_anchor(root: Any, anchor: str) -> Any:
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("$anchor") == anchor or node.get("$dynamicAnchor") == anchor:
                return node
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return MISSING


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def quoted(text: str, limit: int = 60) -> str:
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return f"'{text}'"


def _show(value: Any, limit: int = 60) -> str:
    if isinstance(value, str):
        return quoted(value, limit)
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _size(value: Any) -> int:
    return len(value) if isinstance(value, (list, dict, str)) else 0


def json_kind(value: Any) -> str:
    """What kind of JSON value `value` is, in words (a `Message`; `null` as it is)."""
    if isinstance(value, list):
        return Message("a list")
    if isinstance(value, str):
        return Message("text")
    if isinstance(value, bool):
        return Message("true or false")
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return Message("a number")
    return Message("an object")
