"""Custom-object schemas: the checks a JSON Schema must pass before the app uses it
(metaschema, local references only, size and depth, patterns that cannot run away).

Conversion to and from CX Agent Studio's `Schema` lives in `agents.core.cx.schema_to_cx` and
`agents.core.cx.schema_from_cx`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match

from agents.core import codes
from agents.core.diagnostics import Diagnostic, Message, Severity
from agents.core.types import describe_validation_error, is_missing, resolve_local_ref

__all__ = [
    "CODES",
    "MAX_SCHEMA_BYTES",
    "MAX_SCHEMA_DEPTH",
    "MAX_SCHEMA_NODES",
    "check_schema",
]

CODES: dict[str, str] = codes.section("schemas")

MAX_SCHEMA_DEPTH = 32
MAX_SCHEMA_NODES = 5_000
MAX_SCHEMA_BYTES = 256 * 1024
MAX_METASCHEMA_DIAGNOSTICS = 20
DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"

_SCHEMA_KEYWORDS = frozenset(
    {
        "items",
        "additionalProperties",
        "unevaluatedItems",
        "unevaluatedProperties",
        "contains",
        "propertyNames",
        "not",
        "if",
        "then",
        "else",
        "contentSchema",
    }
)
_SCHEMA_MAP_KEYWORDS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)
_SCHEMA_LIST_KEYWORDS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})


def schema_diagnostic(code: str, severity: Severity, message: str, field: str | None) -> Diagnostic:
    return Diagnostic(code, severity, message, field=field)


def json_pointer(parts: tuple[str | int, ...]) -> str:
    """A JSON pointer as a URI fragment: ``#/properties/age/minimum``."""
    escaped = (str(p).replace("~", "~0").replace("/", "~1") for p in parts)
    return "#" + "".join("/" + part for part in escaped)


def is_json_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def finite_double(value: Any) -> bool:
    if not is_json_number(value):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _subschemas(schema: Any) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    """Every subschema of `schema` (itself first) with its path; data keywords
    (``enum``, ``const``, ``default``, ``examples``) are not entered."""
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), schema)]
    while stack:
        path, node = stack.pop()
        yield path, node
        if not isinstance(node, dict):
            continue
        children: list[tuple[tuple[str | int, ...], Any]] = []
        for keyword, value in node.items():
            if keyword in _SCHEMA_KEYWORDS:
                children.append(((*path, keyword), value))
            elif keyword in _SCHEMA_MAP_KEYWORDS and isinstance(value, dict):
                children.extend(((*path, keyword, key), sub) for key, sub in value.items())
            elif keyword in _SCHEMA_LIST_KEYWORDS and isinstance(value, list):
                children.extend(((*path, keyword, i), sub) for i, sub in enumerate(value))
        stack.extend(reversed(children))


# ---------------------------------------------------------------------------
# check_schema


def check_schema(schema: object) -> tuple[Diagnostic, ...]:
    """Everything that stops `schema` from being saved as a custom-object schema.

    Errors: not a JSON object; not JSON data; deeper than 32 levels, larger
    than 256 KB serialized or 5,000 values; against the draft 2020-12
    metaschema; a ``$ref`` that is not a local ``#...`` pointer (remote
    schemas are never fetched) or that points to nothing; a ``pattern`` or
    ``patternProperties`` key that does not compile. Warnings: a pattern that
    may backtrack catastrophically, another ``$schema`` dialect, no
    ``"type": "object"`` at the top.

    Patterns are compiled with Python's ``re``. JSON Schema means ECMA-262
    regular expressions; the two agree on the usual syntax (classes,
    quantifiers, anchors, groups, ``\\d``/``\\w``/``\\s``), and validation
    runs with ``re`` too, so a pattern that ``re`` refuses could never be
    checked and is refused here. (ECMA-only syntax such as ``(?<name>...)``
    or ``\\p{L}`` is therefore rejected.)
    """
    if not isinstance(schema, dict):
        kind = "true/false" if isinstance(schema, bool) else type(schema).__name__
        return (
            schema_diagnostic(
                "SC220",
                Severity.ERROR,
                Message("a schema must be a JSON object, not %(kind)s", kind=kind),
                "#",
            ),
        )
    shape_problem = _check_shape(schema)
    if shape_problem:
        return (shape_problem,)
    size = len(json.dumps(schema, ensure_ascii=False, separators=(",", ":")).encode())
    if size > MAX_SCHEMA_BYTES:
        message = Message(
            "the schema is %(size)s KB; at most %(max_schema_bytes)s KB",
            size=size // 1024,
            max_schema_bytes=MAX_SCHEMA_BYTES // 1024,
        )
        return (schema_diagnostic("SC226", Severity.ERROR, message, "#"),)
    found = list(_metaschema_problems(schema))
    found.extend(_reference_and_pattern_problems(schema))
    declared = schema.get("type")
    if declared != "object" and declared != ["object"]:
        message = Message('a custom object schema should have "type": "object" at the top')
        found.append(schema_diagnostic("SC230", Severity.WARNING, message, "#/type"))
    return tuple(found)


def _check_shape(schema: dict[str, Any]) -> Diagnostic | None:
    """Depth, node count and JSON-ness, walked without recursion."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(schema, ())]
    nodes = 0
    while stack:
        node, path = stack.pop()
        nodes += 1
        if nodes > MAX_SCHEMA_NODES:
            message = Message(
                "the schema has more than %(max_schema_nodes)s values",
                max_schema_nodes=format(MAX_SCHEMA_NODES, ","),
            )
            return schema_diagnostic("SC226", Severity.ERROR, message, "#")
        if len(path) + 1 > MAX_SCHEMA_DEPTH:
            message = Message(
                "the schema is nested more than %(max_schema_depth)s levels deep",
                max_schema_depth=MAX_SCHEMA_DEPTH,
            )
            return schema_diagnostic("SC225", Severity.ERROR, message, json_pointer(path))
        if isinstance(node, dict):
            for key, value in node.items():
                if not isinstance(key, str):
                    message = Message("the key %(key)s is not text", key=repr(key))
                    return schema_diagnostic("SC221", Severity.ERROR, message, json_pointer(path))
                stack.append((value, (*path, key)))
        elif isinstance(node, list):
            stack.extend((value, (*path, index)) for index, value in enumerate(node))
        elif isinstance(node, float) and not math.isfinite(node):
            message = Message(
                "%(json_pointer)s: %(node)s is not a number JSON can hold",
                json_pointer=json_pointer(path),
                node=node,
            )
            return schema_diagnostic("SC221", Severity.ERROR, message, json_pointer(path))
        elif not (node is None or isinstance(node, (str, int, float))):
            message = Message(
                "%(json_pointer)s: a %(name)s is not JSON data",
                json_pointer=json_pointer(path),
                name=type(node).__name__,
            )
            return schema_diagnostic("SC221", Severity.ERROR, message, json_pointer(path))
    return None


def _metaschema_problems(schema: dict[str, Any]) -> Iterator[Diagnostic]:
    metaschema = Draft202012Validator(
        Draft202012Validator.META_SCHEMA, format_checker=Draft202012Validator.FORMAT_CHECKER
    )
    count = 0
    for error in sorted(metaschema.iter_errors(schema), key=lambda e: [str(p) for p in e.path]):
        if error.validator == "format" and error.validator_value == "regex":
            continue  # reported with a better message by _reference_and_pattern_problems
        count += 1
        if count > MAX_METASCHEMA_DIAGNOSTICS:
            return
        where = json_pointer(tuple(error.absolute_path))
        yield schema_diagnostic(
            "SC222",
            Severity.ERROR,
            Message(
                "%(where)s: %(metaschema_words)s",
                where=where,
                metaschema_words=_metaschema_words(error),
            ),
            where,
        )


def _metaschema_words(error: ValidationError) -> str:
    if error.validator in {"anyOf", "oneOf"} and error.context:
        closest = best_match(error.context)
        return describe_validation_error(closest)
    return describe_validation_error(error)


# An innermost group, then a quantifier that repeats it without bound.
_REPEATED_GROUP = re.compile(r"\((?:\?:)?((?:[^()\\]|\\.)*)\)(?:[+*]|\{\d+,\d*\})")
_CLASS_OR_ESCAPE = re.compile(r"\\.|\[\^?\]?(?:[^\]\\]|\\.)*\]")
_ATOM = re.compile(r"(\\.|\[\^?\]?(?:[^\]\\]|\\.)*\]|[^\\\[])([?*+]|\{\d*(?:,\d*)?\})?[?+]?")


def _may_backtrack(pattern: str) -> bool:
    """A heuristic for catastrophic backtracking: a group repeated without bound
    whose body is one repeated atom plus optional atoms, like ``(a+)+`` or
    ``(\\w+\\s?)*``; the body can then match the same text in many ways."""
    pattern = _CLASS_OR_ESCAPE.sub(lambda m: m.group() if m.group()[0] == "\\" else "X", pattern)
    for group in _REPEATED_GROUP.finditer(pattern):
        body = group.group(1)
        if "|" in body:
            if _alternatives_overlap(body.split("|")):
                return True
            continue
        atoms = [(m.group(1), m.group(2) or "") for m in _ATOM.finditer(body)]
        if not atoms:
            continue
        first = atoms[0][1]
        repeats = first in {"+", "*"} or re.fullmatch(r"\{\d*,\}", first) is not None
        optional_rest = all(
            quantifier in {"?", "*"} or quantifier.startswith(("{0,", "{,"))
            for _, quantifier in atoms[1:]
        )
        if repeats and optional_rest:
            return True
    return False


_WORD_CHARACTER = re.compile(r"\w")


def _alternatives_overlap(alternatives: list[str]) -> bool:
    """Whether two alternatives of a repeated group can match the same text, so that
    ``(a|a)*``, ``(a|ab)*``, ``(.|x)*`` or ``(\\w|\\d)+`` match a long text in exponentially
    many ways: equal alternatives, one a prefix of another, ``.`` beside anything, or a
    word class beside a digit class or a word character."""
    for i, first in enumerate(alternatives):
        for second in alternatives[i + 1 :]:
            if first.startswith(second) or second.startswith(first):
                return True
            pair = {first, second}
            if "." in pair:
                return True
            if "\\w" in pair:
                other = (pair - {"\\w"}).pop()
                if other == "\\d" or (len(other) == 1 and _WORD_CHARACTER.fullmatch(other)):
                    return True
    return False


def _reference_and_pattern_problems(schema: dict[str, Any]) -> Iterator[Diagnostic]:
    for path, node in _subschemas(schema):
        if not isinstance(node, dict):
            continue
        for keyword in ("$ref", "$dynamicRef"):
            ref = node.get(keyword)
            if not isinstance(ref, str):
                continue
            where = json_pointer((*path, keyword))
            if not ref.startswith("#"):
                message = Message(
                    "%(where)s: %(ref)s points outside this schema; only local "
                    "references (#/$defs/...) are allowed, remote schemas are "
                    "never fetched",
                    where=where,
                    ref=repr(ref),
                )
                yield schema_diagnostic("SC223", Severity.ERROR, message, where)
            elif is_missing(resolve_local_ref(schema, ref)):
                message = Message(
                    "%(where)s: %(ref)s points to nothing in this schema",
                    where=where,
                    ref=repr(ref),
                )
                yield schema_diagnostic("SC224", Severity.ERROR, message, where)
        pattern = node.get("pattern")
        if isinstance(pattern, str):
            yield from _pattern_problems(pattern, json_pointer((*path, "pattern")))
        pattern_properties = node.get("patternProperties")
        if isinstance(pattern_properties, dict):
            for key in pattern_properties:
                yield from _pattern_problems(key, json_pointer((*path, "patternProperties", key)))
        dialect = node.get("$schema")
        if isinstance(dialect, str) and dialect.rstrip("#") != DRAFT_2020_12:
            where = json_pointer((*path, "$schema"))
            message = Message(
                "%(where)s: schemas are read as draft 2020-12; %(dialect)s is ignored",
                where=where,
                dialect=repr(dialect),
            )
            yield schema_diagnostic("SC229", Severity.WARNING, message, where)


def _pattern_problems(pattern: str, where: str) -> Iterator[Diagnostic]:
    try:
        re.compile(pattern)
    except re.error as error:
        message = Message(
            "%(where)s: %(pattern)s is not a valid regular expression (%(error)s)",
            where=where,
            pattern=repr(pattern),
            error=error,
        )
        yield schema_diagnostic("SC227", Severity.ERROR, message, where)
        return
    if _may_backtrack(pattern):
        message = Message(
            "%(where)s: %(pattern)s repeats a group that itself repeats "
            "or whose alternatives overlap, which can take very long on "
            "some texts, so it is refused; simplify it (e.g. (a+)+ is a+, "
            "(a|ab)* is (ab?)*)",
            where=where,
            pattern=repr(pattern),
        )
        yield schema_diagnostic("SC228", Severity.ERROR, message, where)
