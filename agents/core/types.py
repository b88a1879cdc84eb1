"""Typed variable values: their JSON Schema, form text in and out, validation, examples.

Pure Python (standard library and jsonschema only). Nothing here raises on bad
input: parse problems come back as ``ParsedValue.errors`` (messages for a form),
validation problems as ``Diagnostic`` values.

Form text conventions (``parse_form_value`` / ``format_form_value``):

- Empty input means "no default" (value ``None``), for every type.
- Text is taken exactly as typed, outer whitespace included: a prompt designer
  who puts spaces around a default means them, and this is the only rule that
  round-trips every string (form fields must use ``strip=False``). The one
  string a form cannot hold is the empty string, which reads as "no default".
- Numbers, Yes/No, lists and objects ignore outer whitespace.
- Numbers: ``3``, ``-2.5``, ``.5``, ``-1.5e3``; digits without a point or an
  exponent stay ``int``. NaN, infinity, ``1_000`` and ``1,000`` are refused.
- Yes/No: yes/no, true/false, y/n, 1/0 in any case; written back as yes/no.
- Lists: comma-separated values (CSV quoting: ``"a, b"`` is one item, ``""``
  inside quotes is a quote); whitespace around an item is trimmed unless the
  item is quoted; a line break separates items like a comma; an empty unquoted
  item is an error (write ``""`` for an empty text); ``[]`` is the empty list.
  The items of a list of objects are written as a JSON array instead, since
  CSV cannot hold objects.
- Objects: JSON text that must be a JSON object.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any
from urllib.parse import quote, unquote

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match
from referencing import Registry
from referencing.exceptions import NoSuchResource

from agents.core import safe_regex
from agents.core.diagnostics import Diagnostic, Severity
from agents.core.safe_regex import TimedDraft202012Validator
from agents.core.spec import VariableSpec, VariableType

__all__ = [
    "CODES",
    "ParsedValue",
    "describe_validation_error",
    "example_value",
    "format_form_value",
    "json_schema_for",
    "parse_form_value",
    "path_in_words",
    "resolve_local_ref",
    "validate_value",
]

CODES: dict[str, str] = {
    "SC201": "A value is not of the type its variable or schema requires.",
    "SC202": "A value breaks a schema constraint (minimum, length, pattern, enum, ...).",
    "SC203": "A text value does not have the format its schema asks for (date, email, ...).",
    "SC204": "An object value lacks a property its schema requires.",
    "SC205": "An object value has a property its schema does not allow.",
    "SC206": "A custom-object variable names no schema, or a schema the app does not have.",
    "SC207": "The schema cannot be used to validate (invalid, or a $ref that does not resolve).",
    "SC208": "A list variable has an item type that is not allowed (a list of lists).",
    "SC209": "A value is not JSON data (NaN, infinity, a set, a non-text key, ...).",
    "SC210": "A value matches none of the alternatives its schema allows (anyOf/oneOf/not).",
    "SC211": "More problems were found than are listed.",
}

MAX_VALUE_DIAGNOSTICS = 20

_TYPE_SCHEMAS: dict[VariableType, dict[str, Any]] = {
    VariableType.TEXT: {"type": "string"},
    VariableType.NUMBER: {"type": "number"},
    VariableType.BOOLEAN: {"type": "boolean"},
}


# ---------------------------------------------------------------------------
# JSON Schema of a variable


TYPE_LABELS: dict[VariableType, str] = {
    VariableType.TEXT: "Text",
    VariableType.NUMBER: "Number",
    VariableType.BOOLEAN: "Yes/No",
    VariableType.OBJECT: "Custom object",
    VariableType.LIST: "List",
}


def type_label(
    type: VariableType, item_type: VariableType | None = None, schema: str | None = None
) -> str:
    """How a designer reads a type: `Number`, `Customer`, `List of Text`, `List of Customer`."""
    if type is VariableType.LIST:
        if item_type is VariableType.OBJECT and schema:
            return f"List of {schema}"
        return f"List of {TYPE_LABELS[item_type] if item_type else '?'}"
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
# Form text -> typed value


@dataclass(frozen=True, slots=True)
class ParsedValue:
    """The typed value read from a form field; `value` is None when there are errors
    or when the field was empty ("no default")."""

    value: Any = None
    errors: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.errors


_NUMBER_RE = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_INTEGER_RE = re.compile(r"[+-]?\d+")
_YES = frozenset({"yes", "true", "y", "1"})
_NO = frozenset({"no", "false", "n", "0"})


def parse_form_value(
    raw: str,
    type: VariableType,
    *,
    item_type: VariableType | None = None,
    schema: dict[str, Any] | None = None,
) -> ParsedValue:
    """Read the text of a form field as a value of `type` (see the module docstring).

    When `schema` (the JSON Schema of the whole value, e.g. from
    ``json_schema_for``) is given, a value that parses is also validated against
    it, and what fails is added to the errors, so a form can show every problem
    at once.
    """
    if not isinstance(raw, str):
        return ParsedValue(None, ("expected text from the form",))
    if raw == "" or (type is not VariableType.TEXT and not raw.strip()):
        return ParsedValue(None)
    if type is VariableType.LIST:
        value, errors = _parse_list(raw.strip(), item_type)
    else:
        value, error = _parse_scalar(raw, type)
        errors = [error] if error else []
    if errors:
        return ParsedValue(None, tuple(errors))
    if schema is not None:
        errors = [message for message, _error in _schema_problems(value, schema, root_name=None)]
        if errors:
            return ParsedValue(value, tuple(errors))
    return ParsedValue(value)


def _parse_scalar(raw: str, type: VariableType) -> tuple[Any, str | None]:
    if type is VariableType.TEXT:
        return raw, None
    text = raw.strip()
    if type is VariableType.NUMBER:
        return _parse_number(text)
    if type is VariableType.BOOLEAN:
        lowered = text.lower()
        if lowered in _YES:
            return True, None
        if lowered in _NO:
            return False, None
        return None, f"{_quoted(text)} is not yes or no"
    if type is VariableType.OBJECT:
        value, error = _parse_json(text)
        if error:
            return None, error
        if not isinstance(value, dict):
            return None, f"expected a JSON object ({{...}}), got {_json_kind(value)}"
        return value, None
    return None, f"unknown type {type!r}"


def _parse_number(text: str) -> tuple[int | float | None, str | None]:
    if not _NUMBER_RE.fullmatch(text):
        return None, f"{_quoted(text)} is not a number"
    try:
        if _INTEGER_RE.fullmatch(text):
            return int(text), None
        number = float(text)
    except ValueError:  # more digits than int() accepts
        return None, f"{_quoted(text)} is too long a number"
    if not math.isfinite(number):
        return None, f"{_quoted(text)} is too large a number"
    return number, None


def _parse_list(text: str, item_type: VariableType | None) -> tuple[Any, list[str]]:
    if item_type is VariableType.LIST:
        return None, ["a list of lists is not supported"]
    if item_type is VariableType.OBJECT:
        return _parse_object_list(text)
    if text == "[]":
        return [], []
    items, error = _split_csv(text)
    if error:
        return None, [error]
    values: list[Any] = []
    errors: list[str] = []
    for index, (item, quoted) in enumerate(items, start=1):
        if item == "" and not quoted:
            errors.append(f'item {index} is empty (write "" for an empty text)')
            continue
        value, problem = _parse_scalar(item, item_type or VariableType.TEXT)
        if problem:
            errors.append(f"item {index}: {problem}")
        values.append(value)
    if errors and text.startswith("["):
        errors.append("write the items separated by commas, without brackets")
    return (None, errors) if errors else (values, [])


def _parse_object_list(text: str) -> tuple[Any, list[str]]:
    hint = "a list of objects is written as a JSON array: [{...}, {...}]"
    if not text.startswith("["):
        return None, [hint]
    value, error = _parse_json(text)
    if error:
        return None, [error]
    if not isinstance(value, list):
        return None, [hint]
    errors = [
        f"item {index}: expected a JSON object ({{...}}), got {_json_kind(item)}"
        for index, item in enumerate(value, start=1)
        if not isinstance(item, dict)
    ]
    return (None, errors) if errors else (value, [])


def _split_csv(text: str) -> tuple[list[tuple[str, bool]], str | None]:
    """Split one CSV record into (item, was_quoted) pairs.

    The ``csv`` module cannot tell a quoted item from an unquoted one, and the
    rule "trim whitespace unless quoted" needs exactly that, so the record is
    scanned here with the same quoting rules (RFC 4180: ``""`` inside quotes
    is one quote). ``format_form_value`` writes what this reads.
    """
    items: list[tuple[str, bool]] = []
    position, length = 0, len(text)
    while True:
        number = len(items) + 1
        while position < length and text[position] in " \t":
            position += 1
        if position < length and text[position] == '"':
            chunks: list[str] = []
            position += 1
            while True:
                close = text.find('"', position)
                if close < 0:
                    return [], f"item {number}: the opening quote is never closed"
                chunks.append(text[position:close])
                if text.startswith('"', close + 1):
                    chunks.append('"')
                    position = close + 2
                    continue
                position = close + 1
                break
            while position < length and text[position] in " \t":
                position += 1
            if position < length and text[position] not in ",\r\n":
                return [], f"item {number}: unexpected text after the closing quote"
            items.append(("".join(chunks), True))
        else:
            end = position
            while end < length and text[end] not in ",\r\n":
                end += 1
            items.append((text[position:end].strip(), False))
            position = end
        if position >= length:
            return items, None
        if text.startswith("\r\n", position):
            position += 2
        else:
            position += 1


# JSON decoding, with errors a designer can read --------------------------------

_JSON_MESSAGES = (
    (
        "Expecting property name enclosed in double quotes",
        "expected a property name in double quotes",
    ),
    ("Expecting ':' delimiter", "expected ':' after the property name"),
    ("Expecting value", "expected a value"),
    ("Illegal trailing comma", "a comma before a closing bracket is not allowed in JSON"),
    ("Extra data", "unexpected text after the end of the JSON value"),
    ("Unterminated string", "this string is never closed (missing '\"')"),
    ("Invalid control character", "a line break or tab inside a string must be written \\n or \\t"),
    ("Invalid \\uXXXX escape", "invalid \\u escape (it takes four hex digits)"),
    ("Invalid \\escape", "invalid escape after '\\' (use \\\\ for a backslash)"),
)


class _JsonValueError(ValueError):
    pass


def _parse_json(text: str) -> tuple[Any, str | None]:
    def refuse_constant(name: str) -> Any:
        raise _JsonValueError(f"{name} is not allowed in JSON")

    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, value in pairs:
            if key in result:
                raise _JsonValueError(f"the property {_quoted(key)} appears twice")
            result[key] = value
        return result

    try:
        return json.loads(
            text, parse_constant=refuse_constant, object_pairs_hook=no_duplicates
        ), None
    except json.JSONDecodeError as error:
        return None, f"line {error.lineno}, column {error.colno}: {_explain_json_error(error)}"
    except _JsonValueError as error:
        return None, str(error)
    except RecursionError:
        return None, "the JSON is nested too deeply"


def _explain_json_error(error: json.JSONDecodeError) -> str:
    text, position = error.doc, error.pos
    at_end = position >= len(text.rstrip())
    before = text[:position].rstrip()
    current = text[position : position + 1]
    if error.msg.startswith("Expecting ',' delimiter"):
        closer = "}" if _innermost_container(text, position) == "{" else "]"
        return f"expected ',' or '{closer}'" + (" (the text ends too early)" if at_end else "")
    if at_end and error.msg.startswith(("Expecting value", "Expecting property name")):
        return "the text ends too early"
    if error.msg.startswith(("Expecting value", "Expecting property name")):
        if current == "'":
            return "strings and property names take double quotes, not single quotes"
        if before.endswith(",") and current in "]}":
            return "a comma before a closing bracket is not allowed in JSON"
    for prefix, words in _JSON_MESSAGES:
        if error.msg.startswith(prefix):
            return words
    return error.msg


def _innermost_container(text: str, position: int) -> str | None:
    """The bracket ('{' or '[') that is open at `position`, skipping strings."""
    stack: list[str] = []
    in_string = escaped = False
    for char in text[:position]:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            stack.append(char)
        elif char in "}]" and stack:
            stack.pop()
    return stack[-1] if stack else None


# ---------------------------------------------------------------------------
# Typed value -> form text


def format_form_value(value: Any, type: VariableType, item_type: VariableType | None = None) -> str:
    """The text that shows `value` in a form; ``parse_form_value`` reads it back as `value`.

    A value that does not fit `type` is shown as JSON rather than refused.
    """
    if value is None:
        return ""
    if type is VariableType.LIST and isinstance(value, list):
        if item_type is VariableType.OBJECT:
            return _pretty_json(value)
        if not value:
            return "[]"
        return ", ".join(
            _csv_item(format_form_value(item, item_type or VariableType.TEXT)) for item in value
        )
    if type is VariableType.TEXT and isinstance(value, str):
        return value
    if type is VariableType.BOOLEAN and isinstance(value, bool):
        return "yes" if value else "no"
    if type is VariableType.NUMBER and _is_number(value):
        return repr(value) if isinstance(value, float) else str(value)
    return _pretty_json(value)


def _csv_item(text: str) -> str:
    needs_quotes = text == "" or text != text.strip() or any(c in text for c in ',"\r\n')
    if needs_quotes or text == "[]":
        return '"' + text.replace('"', '""') + '"'
    return text


def _pretty_json(value: Any) -> str:
    try:
        return json.dumps(value, indent=2, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


# ---------------------------------------------------------------------------
# Validation


def validate_value(
    value: Any,
    variable: VariableSpec,
    schemas: Mapping[str, dict[str, Any]],
    *,
    field: str | None = None,
) -> tuple[Diagnostic, ...]:
    """Check a typed value against its variable's type and schema.

    `None` means "no value" and is always fine. Validation uses draft 2020-12
    with format checking on; remote ``$ref`` are never fetched. Each problem
    names where it is in words (``customer.age: -3 is less than the minimum
    of 0``). `field` defaults to ``variables.<name>.default``.
    """
    if value is None:
        return ()
    name = variable.name
    where = field if field is not None else f"variables.{name}.default"

    def diagnostic(code: str, message: str, severity: Severity = Severity.ERROR) -> Diagnostic:
        return Diagnostic(code, severity, message, field=where, subject=name)

    if variable.type is VariableType.LIST and variable.item_type is VariableType.LIST:
        return (diagnostic("SC208", f"{name}: a list cannot hold lists"),)
    needs_schema = variable.type is VariableType.OBJECT or (
        variable.type is VariableType.LIST and variable.item_type is VariableType.OBJECT
    )
    found: list[Diagnostic] = []
    if needs_schema and not isinstance(schemas.get(variable.schema or ""), dict):
        if variable.schema:
            message = f"{name}: the schema {_quoted(variable.schema)} does not exist"
        else:
            message = f"{name}: a custom object needs a schema"
        found.append(diagnostic("SC206", message))
    not_json = _not_json_reason(value)
    if not_json:
        return (*found, diagnostic("SC209", f"{path_in_words(name, not_json[0])}: {not_json[1]}"))
    problems = _schema_problems(value, json_schema_for(variable, schemas), root_name=name)
    for message, error in problems[:MAX_VALUE_DIAGNOSTICS]:
        found.append(diagnostic(_code_for(error), message))
    if len(problems) > MAX_VALUE_DIAGNOSTICS:
        more = len(problems) - MAX_VALUE_DIAGNOSTICS
        found.append(diagnostic("SC211", f"{name}: {more} more problems", Severity.INFO))
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


def _schema_problems(
    value: Any, schema: dict[str, Any], *, root_name: str | None
) -> list[tuple[str, ValidationError | None]]:
    """(message, error) for each way `value` fails `schema`, in a stable order."""
    try:
        errors = sorted(_validator(schema).iter_errors(value), key=_error_sort_key)
    except Exception as error:  # an unresolvable $ref or a broken schema, found while validating
        where = root_name or "value"
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        return [(f"{where}: the schema cannot be used to validate ({reason})", None)]
    problems: list[tuple[str, ValidationError | None]] = []
    for error in errors:
        words = describe_validation_error(error)
        if root_name or error.absolute_path:
            words = f"{path_in_words(root_name, error.absolute_path)}: {words}"
        problems.append((words, error))
    return problems


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
    words = root or ""
    for part in path:
        if isinstance(part, int):
            words = f"{words} item {part + 1}" if words else f"item {part + 1}"
        else:
            words = f"{words}.{part}" if words else str(part)
    return words or "value"


_KIND_WORDS = {
    "string": "text",
    "number": "a number",
    "integer": "a whole number",
    "boolean": "yes or no",
    "object": "an object",
    "array": "a list",
    "null": "null",
}

_FORMAT_WORDS = {
    "date": "date (YYYY-MM-DD)",
    "date-time": "date and time (YYYY-MM-DDThh:mm:ssZ)",
    "time": "time (hh:mm:ssZ)",
    "email": "email address",
    "idn-email": "email address",
    "uri": "absolute URI (https://...)",
    "iri": "absolute IRI",
    "uri-reference": "URI reference",
    "iri-reference": "IRI reference",
    "uuid": "UUID",
    "ipv4": "IPv4 address",
    "ipv6": "IPv6 address",
    "hostname": "host name",
    "idn-hostname": "host name",
    "duration": "ISO 8601 duration (P1D)",
    "regex": "regular expression",
}


def describe_validation_error(error: ValidationError) -> str:
    """What went wrong, in words, without the path (callers add it)."""
    try:
        return _describe(error)
    except Exception:  # a malformed schema value (e.g. enum not a list): use jsonschema's words
        return error.message


def _describe(error: ValidationError) -> str:
    keyword = str(error.validator)
    expected = error.validator_value
    instance = error.instance
    shown = _show(instance)
    if keyword == "type":
        kinds = expected if isinstance(expected, list) else [expected]
        wanted = " or ".join(_KIND_WORDS.get(str(kind), str(kind)) for kind in kinds)
        return f"{shown} is not {wanted}"
    if keyword in {"minimum", "maximum"}:
        comparison = "less" if keyword == "minimum" else "more"
        return f"{shown} is {comparison} than the {keyword} of {_show(expected)}"
    if keyword == "exclusiveMinimum":
        return f"{shown} must be more than {_show(expected)}"
    if keyword == "exclusiveMaximum":
        return f"{shown} must be less than {_show(expected)}"
    if keyword == "multipleOf":
        return f"{shown} is not a multiple of {_show(expected)}"
    if keyword == "minLength":
        return f"{shown} is shorter than {_count(expected, 'character')}"
    if keyword == "maxLength":
        return f"{shown} is longer than {_count(expected, 'character')}"
    if keyword == "pattern":
        return f"{shown} does not match the pattern {_quoted(str(expected))}"
    if keyword == "format":
        return f"{shown} is not a valid {_FORMAT_WORDS.get(str(expected), str(expected))}"
    if keyword == "enum":
        options = ", ".join(_show(option) for option in expected[:10])
        return f"{shown} is not one of {options}" + (", ..." if len(expected) > 10 else "")
    if keyword == "const":
        return f"must be {_show(expected)}"
    if keyword == "required":
        missing = [name for name in expected if isinstance(instance, dict) and name not in instance]
        names = ", ".join(_quoted(name) for name in missing) or _show(expected)
        return f"the required property {names} is missing"
    if keyword == "dependentRequired":
        return error.message
    if keyword in {"additionalProperties", "unevaluatedProperties"}:
        extra = _unexpected_properties(error)
        if extra:
            return f"the property {', '.join(_quoted(key) for key in extra)} is not allowed"
    if keyword == "minItems":
        return f"has {_count(_size(instance), 'item')}, at least {expected} required"
    if keyword == "maxItems":
        return f"has {_count(_size(instance), 'item')}, at most {expected} allowed"
    if keyword == "uniqueItems":
        return "has the same item more than once"
    if keyword == "minProperties":
        return (
            f"has {_count(_size(instance), 'property', 'properties')}, at least {expected} required"
        )
    if keyword == "maxProperties":
        return (
            f"has {_count(_size(instance), 'property', 'properties')}, at most {expected} allowed"
        )
    if keyword in {"anyOf", "oneOf"}:
        if keyword == "oneOf" and not error.context:
            return f"{shown} matches more than one of the allowed alternatives"
        closest = best_match(error.context) if error.context else None
        if closest is None:
            return f"{shown} matches none of the allowed alternatives"
        where = path_in_words(None, closest.relative_path) if closest.relative_path else ""
        detail = f"{where}: " if where else ""
        return (
            f"{shown} matches none of the allowed alternatives "
            f"(closest: {detail}{_describe(closest)})"
        )
    if keyword == "not":
        return f"{shown} is a value the schema excludes"
    if keyword == "False schema" or expected is False:
        return "no value is allowed here"
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
        if isinstance(patterns, dict) and any(_search(p, key) for p in patterns):
            continue
        extra.append(key)
    return extra


def _search(pattern: str, text: str) -> bool:
    try:
        return safe_regex.search(pattern, text)
    except safe_regex.PatternTimeout:
        return False


def _not_json_reason(value: Any) -> tuple[list[Any], str] | None:
    """Where and why `value` is not JSON data, or None when it is."""
    stack: list[tuple[Any, list[Any]]] = [(value, [])]
    while stack:
        node, path = stack.pop()
        if node is None or isinstance(node, (str, bool, int)):
            continue
        if isinstance(node, float):
            if not math.isfinite(node):
                return path, f"{node} is not a number JSON can hold"
            continue
        if isinstance(node, dict):
            for key, item in node.items():
                if not isinstance(key, str):
                    return path, f"the key {key!r} is not text"
                stack.append((item, [*path, key]))
            continue
        if isinstance(node, list):
            stack.extend((item, [*path, index]) for index, item in enumerate(node))
            continue
        return path, f"a {type(node).__name__} is not JSON data"
    return None


# ---------------------------------------------------------------------------
# Example values


_FORMAT_EXAMPLES: dict[str, str] = {
    "date": "2025-01-31",
    "date-time": "2025-01-31T09:30:00Z",
    "time": "09:30:00Z",
    "duration": "P1D",
    "email": "ada@example.com",
    "idn-email": "ada@example.com",
    "hostname": "example.com",
    "idn-hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "uri": "https://example.com/",
    "uri-reference": "https://example.com/",
    "iri": "https://example.com/",
    "iri-reference": "https://example.com/",
    "uri-template": "https://example.com/{id}",
    "uuid": "123e4567-e89b-12d3-a456-426614174000",
    "json-pointer": "/example",
    "relative-json-pointer": "0/example",
    "regex": "^example$",
}

_PATTERN_CANDIDATES = (
    "example",
    "Example",
    "EXAMPLE",
    "abc",
    "ABC",
    "A1",
    "a1",
    "12345",
    "1",
    "a",
    "",
)
_MAX_EXAMPLE_DEPTH = 12
# A hostile schema (minItems: 10**9, minLength: 10**9, deep nesting) gets a small example:
# at most this many items per array, characters per text and values in all.
MAX_EXAMPLE_ITEMS = 20
MAX_EXAMPLE_TEXT = 1000
MAX_EXAMPLE_NODES = 2000


class _ExampleTooLarge(Exception):
    pass


_example_nodes = threading.local()


def example_value(schema: Any) -> Any:
    """A plausible value for `schema`, for the UI's "example value" button.

    Uses ``default``, then ``examples``, ``const`` and ``enum``; otherwise
    builds one: every declared property of an object, one item in an array
    (or ``minItems``), text that honours ``format``/``minLength``/``maxLength``
    (and ``pattern`` when a simple candidate matches), numbers within
    ``minimum``/``maximum``. Local ``$ref`` are followed; recursion stops after
    a few levels. A schema too malformed to follow gives ``None`` (never raises:
    the schema itself is checked and reported by ``check_schema``).
    """
    _example_nodes.left = MAX_EXAMPLE_NODES
    try:
        return _example(schema, schema, 0)
    except (
        TypeError,
        ValueError,
        KeyError,
        AttributeError,
        IndexError,
        RecursionError,
        _ExampleTooLarge,
    ):
        return None


def _example(schema: Any, root: Any, depth: int) -> Any:
    if not isinstance(schema, dict) or depth > _MAX_EXAMPLE_DEPTH:
        return None
    _example_nodes.left = getattr(_example_nodes, "left", MAX_EXAMPLE_NODES) - 1
    if _example_nodes.left < 0:
        raise _ExampleTooLarge
    for keyword in ("default", "const"):
        if keyword in schema:
            return schema[keyword]
    examples = schema.get("examples")
    if isinstance(examples, list) and examples:
        return examples[0]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = resolve_local_ref(root, ref)
        if target is not _MISSING:
            return _example(target, root, depth + 1)
    for keyword in ("anyOf", "oneOf"):
        options = schema.get(keyword)
        if isinstance(options, list) and options:
            return _example(options[0], root, depth + 1)
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and all_of:
        parts = [_example(part, root, depth + 1) for part in all_of]
        if _guess_type(schema):
            parts.append(
                _example({k: v for k, v in schema.items() if k != "allOf"}, root, depth + 1)
            )
        if all(isinstance(part, dict) for part in parts):
            return {key: value for part in parts for key, value in part.items()}
        return parts[0]
    kind = _guess_type(schema)
    if kind == "object":
        return _example_object(schema, root, depth)
    if kind == "array":
        return _example_array(schema, root, depth)
    if kind == "string":
        return _example_string(schema)
    if kind in {"number", "integer"}:
        return _example_number(schema, integer=kind == "integer")
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return "example"


def _guess_type(schema: dict[str, Any]) -> str | None:
    declared = schema.get("type")
    if isinstance(declared, str):
        return declared
    if isinstance(declared, list):
        real = [kind for kind in declared if isinstance(kind, str) and kind != "null"]
        return real[0] if real else "null"
    if any(
        k in schema for k in ("properties", "required", "additionalProperties", "patternProperties")
    ):
        return "object"
    if any(k in schema for k in ("items", "prefixItems", "minItems", "maxItems", "contains")):
        return "array"
    if any(k in schema for k in ("minLength", "maxLength", "pattern", "format")):
        return "string"
    if any(
        k in schema
        for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
    ):
        return "number"
    return None


def _example_object(schema: dict[str, Any], root: Any, depth: int) -> dict[str, Any]:
    result: dict[str, Any] = {}
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    listed = schema.get("required")
    listed = listed if isinstance(listed, list) else []
    required = [name for name in listed if isinstance(name, str)]
    deep = depth >= _MAX_EXAMPLE_DEPTH // 2  # past this, only what is required
    for name, subschema in properties.items():
        if deep and name not in required:
            continue
        result[name] = _example(subschema, root, depth + 1)
    extra = schema.get("additionalProperties")
    for name in required:
        if name not in result:
            result[name] = (
                _example(extra, root, depth + 1) if isinstance(extra, dict) else "example"
            )
    return result


def _example_array(schema: dict[str, Any], root: Any, depth: int) -> list[Any]:
    items: list[Any] = []
    prefix = schema.get("prefixItems")
    if isinstance(prefix, list):
        items.extend(_example(part, root, depth + 1) for part in prefix)
    item_schema = schema.get("items", {})
    minimum = schema.get("minItems", 0) if isinstance(schema.get("minItems"), int) else 0
    maximum = schema.get("maxItems") if isinstance(schema.get("maxItems"), int) else None
    wanted = min(MAX_EXAMPLE_ITEMS, max(minimum, len(items) + (0 if item_schema is False else 1)))
    if maximum is not None:
        wanted = min(wanted, maximum)
    while len(items) < wanted and item_schema is not False:
        item = _example(item_schema, root, depth + 1)
        if schema.get("uniqueItems") and item in items:
            item = _distinct(item, len(items))
        items.append(item)
    return items[:wanted] if maximum is not None else items


def _distinct(item: Any, index: int) -> Any:
    if isinstance(item, str):
        return f"{item}{index + 1}"
    if isinstance(item, bool):
        return not item
    if isinstance(item, (int, float)):
        return item + index
    return item


def _example_string(schema: dict[str, Any]) -> str:
    fmt = schema.get("format")
    text = _FORMAT_EXAMPLES.get(fmt, "example") if isinstance(fmt, str) else "example"
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        text = next((c for c in (text, *_PATTERN_CANDIDATES) if _search(pattern, c)), text)
    min_length = schema.get("minLength")
    max_length = schema.get("maxLength")
    if isinstance(min_length, int) and len(text) < min_length:
        text += "x" * (min(min_length, MAX_EXAMPLE_TEXT) - len(text))
    if isinstance(max_length, int) and len(text) > max_length:
        text = text[:max_length]
    return text


def _example_number(schema: dict[str, Any], *, integer: bool) -> int | float:
    def bound(keyword: str) -> Decimal | None:
        value = schema.get(keyword)
        return Decimal(repr(value)) if _is_number(value) else None

    low, high = bound("minimum"), bound("maximum")
    low_open, high_open = bound("exclusiveMinimum"), bound("exclusiveMaximum")
    step = bound("multipleOf")
    if step is not None and step <= 0:
        step = None
    if integer:  # the whole numbers that are multiples of p/q are the multiples of p
        step = Decimal(step.as_integer_ratio()[0]) if step is not None else Decimal(1)

    def fits(number: Decimal) -> bool:
        return (
            (low is None or number >= low)
            and (high is None or number <= high)
            and (low_open is None or number > low_open)
            and (high_open is None or number < high_open)
            and (step is None or number % step == 0)
        )

    bounds = [b for b in (low, high, low_open, high_open) if b is not None]
    candidates = [Decimal(0)]
    for value in bounds:
        candidates += [value, value + 1, value - 1]
    for first in bounds:
        candidates += [(first + other) / 2 for other in bounds]
    if step is not None:
        candidates = (
            [
                (c / step).to_integral_value(rounding=rounding) * step
                for c in candidates
                for rounding in ("ROUND_CEILING", "ROUND_FLOOR")
            ]
            + [c + step for c in candidates]
            + [c - step for c in candidates]
        )
    chosen = next((c for c in candidates if fits(c)), candidates[0])
    if integer or chosen == chosen.to_integral_value():
        return int(chosen)
    return float(chosen)


# ---------------------------------------------------------------------------
# Small helpers shared with schemas.py


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


_MISSING: Any = _Missing()


def resolve_local_ref(root: Any, ref: str) -> Any:
    """The part of `root` a local ``$ref`` (``#``, ``#/a/b``, ``#anchor``) points to,
    or ``MISSING`` (see ``is_missing``)."""
    if not ref.startswith("#"):
        return _MISSING
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
            return _MISSING
    return node


def is_missing(value: Any) -> bool:
    return value is _MISSING


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
    return _MISSING


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _quoted(text: str, limit: int = 60) -> str:
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return f"'{text}'"


def _show(value: Any, limit: int = 60) -> str:
    if isinstance(value, str):
        return _quoted(value, limit)
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _count(number: Any, singular: str, plural: str | None = None) -> str:
    return f"{number} {singular if number == 1 else plural or singular + 's'}"


def _size(value: Any) -> int:
    return len(value) if isinstance(value, (list, dict, str)) else 0


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "text"
    if isinstance(value, bool):
        return "true or false"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return "a number"
    return "an object"
