"""Example values generated from a JSON Schema (the schema editor's "Example" button).

Bounded for hostile schemas: at most `MAX_EXAMPLE_ITEMS` items per array,
`MAX_EXAMPLE_TEXT` characters per text and `MAX_EXAMPLE_NODES` values in all.
"""

from __future__ import annotations

import threading
from decimal import Decimal
from typing import Any

from agents.core.types import MISSING, is_number, resolve_local_ref, search

__all__ = ["MAX_EXAMPLE_ITEMS", "MAX_EXAMPLE_NODES", "MAX_EXAMPLE_TEXT", "example_value"]


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
    "json-pointer": "/abc",
    "relative-json-pointer": "0/abc",
    "regex": "^abc$",
}

# No English word: a text's example is its property's name, else `abc`.
_PATTERN_CANDIDATES = (
    "abc",
    "Abc",
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


def _example(schema: Any, root: Any, depth: int, name: str = "") -> Any:
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
        if target is not MISSING:
            return _example(target, root, depth + 1, name)
    for keyword in ("anyOf", "oneOf"):
        options = schema.get(keyword)
        if isinstance(options, list) and options:
            return _example(options[0], root, depth + 1, name)
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and all_of:
        parts = [_example(part, root, depth + 1, name) for part in all_of]
        if _guess_type(schema):
            parts.append(
                _example({k: v for k, v in schema.items() if k != "allOf"}, root, depth + 1, name)
            )
        if all(isinstance(part, dict) for part in parts):
            return {key: value for part in parts for key, value in part.items()}
        return parts[0]
    kind = _guess_type(schema)
    if kind == "object":
        return _example_object(schema, root, depth)
    if kind == "array":
        return _example_array(schema, root, depth, name)
    if kind == "string":
        return _example_string(schema, name)
    if kind in {"number", "integer"}:
        return _example_number(schema, integer=kind == "integer")
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return name or "abc"


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
        result[name] = _example(subschema, root, depth + 1, name)
    extra = schema.get("additionalProperties")
    for name in required:
        if name not in result:
            result[name] = (
                _example(extra, root, depth + 1, name) if isinstance(extra, dict) else name
            )
    return result


def _example_array(schema: dict[str, Any], root: Any, depth: int, name: str = "") -> list[Any]:
    items: list[Any] = []
    prefix = schema.get("prefixItems")
    if isinstance(prefix, list):
        items.extend(_example(part, root, depth + 1, name) for part in prefix)
    item_schema = schema.get("items", {})
    minimum = schema.get("minItems", 0) if isinstance(schema.get("minItems"), int) else 0
    maximum = schema.get("maxItems") if isinstance(schema.get("maxItems"), int) else None
    wanted = min(MAX_EXAMPLE_ITEMS, max(minimum, len(items) + (0 if item_schema is False else 1)))
    if maximum is not None:
        wanted = min(wanted, maximum)
    while len(items) < wanted and item_schema is not False:
        item = _example(item_schema, root, depth + 1, name)
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


def _example_string(schema: dict[str, Any], name: str = "") -> str:
    """The property's own name (`city`), no English word; `abc` for a text with no name."""
    plain = name or "abc"
    fmt = schema.get("format")
    text = _FORMAT_EXAMPLES.get(fmt, plain) if isinstance(fmt, str) else plain
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        text = next((c for c in (text, *_PATTERN_CANDIDATES) if search(pattern, c)), text)
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
        return Decimal(repr(value)) if is_number(value) else None

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
