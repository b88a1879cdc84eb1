"""Lint of static paths into typed values (``{{customer.tier}}``): each part against the
variable's type or JSON Schema, and what CX Agent Studio cannot resolve.
"""

from __future__ import annotations

from typing import Any

from agents.core import safe_regex
from agents.core.diagnostics import Message
from agents.core.linting.index import (
    INFO,
    SCALAR_SCHEMA_TYPES,
    SCHEMA_TYPE_WORDS,
    TYPE_WORDS,
    UNDECIDABLE_KEYWORDS,
    E,
    Found,
    Index,
    W,
    either,
    near_match,
)
from agents.core.spec import VariableSpec, VariableType
from agents.core.types import is_missing, resolve_local_ref


def path_problem(
    index: Index, variable: VariableSpec, path: tuple[str, ...], shown: str
) -> Found | None:
    name = variable.name
    rest = path[1:]
    vtype = variable.type
    if vtype in (VariableType.TEXT, VariableType.NUMBER, VariableType.BOOLEAN):
        return (
            "SC323",
            E,
            Message(
                "%(shown)s: `%(name)s` is %(type_words)s, not an object, so "
                "it has no part `%(rest)s`. Write `{{%(name)s}}`.",
                shown=shown,
                name=name,
                type_words=TYPE_WORDS[vtype],
                rest=rest[0],
            ),
        )
    if vtype is VariableType.LIST:
        if not rest[0].isdigit():
            return (
                "SC323",
                E,
                Message(
                    "%(shown)s: `%(name)s` is a list, which has no part "
                    "`%(rest)s`. Write `{{%(name)s}}`.",
                    shown=shown,
                    name=name,
                    rest=rest[0],
                ),
            )
        item_path = (f"{name}.{rest[0]}",)
        rest = rest[1:]
        if not rest:
            return None
        if variable.item_type is not VariableType.OBJECT:
            words = TYPE_WORDS[variable.item_type] if variable.item_type else Message("values")
            return (
                "SC323",
                E,
                Message(
                    "%(shown)s: the items of `%(name)s` are %(words)s, not "
                    "objects, so they have no part `%(rest)s`.",
                    shown=shown,
                    name=name,
                    words=words,
                    rest=rest[0],
                ),
            )
        walked = item_path[0]
    else:
        walked = name
    schema = index.schemas.get(variable.schema or "")
    if schema is None:
        return None  # SC320 says the schema is missing
    return _walk_schema(schema, rest, walked, shown)


def schema_types(node: dict[str, Any]) -> set[str]:
    declared = node.get("type")
    if isinstance(declared, str):
        return {declared}
    if isinstance(declared, list):
        return {t for t in declared if isinstance(t, str)}
    return set()


def follow_refs(root: dict[str, Any], node: Any) -> Any:
    for _ in range(32):
        if not isinstance(node, dict) or not isinstance(node.get("$ref"), str):
            return node
        if len(node) > 1 and any(
            k not in ("$ref", "description", "title", "$comment") for k in node
        ):
            return None  # $ref next to other keywords: too subtle to judge statically
        target = resolve_local_ref(root, node["$ref"])
        if is_missing(target):
            return None
        node = target
    return None


def _walk_schema(
    root: dict[str, Any], segments: tuple[str, ...], walked: str, shown: str
) -> Found | None:
    node: Any = root
    for segment in segments:
        node = follow_refs(root, node)
        if not isinstance(node, dict):
            return None  # `true`, an unresolvable $ref: nothing to say
        types = schema_types(node)
        properties = node.get("properties")
        if isinstance(properties, dict) and segment in properties:
            node = properties[segment]
            walked = f"{walked}.{segment}"
            continue
        is_array = "array" in types or "items" in node or "prefixItems" in node
        if segment.isdigit() and is_array:
            prefix = node.get("prefixItems")
            position = int(segment)
            if isinstance(prefix, list) and position < len(prefix):
                node = prefix[position]
            elif isinstance(node.get("items"), dict):
                node = node["items"]
            else:
                return None
            walked = f"{walked}.{segment}"
            continue
        if types and types <= SCALAR_SCHEMA_TYPES:
            words = either(sorted({SCHEMA_TYPE_WORDS[t] for t in types}))
            return (
                "SC323",
                E,
                Message(
                    "%(shown)s: `%(walked)s` is %(words)s in the schema, not an "
                    "object, so it has no part `%(segment)s`.",
                    shown=shown,
                    walked=walked,
                    words=words,
                    segment=segment,
                ),
            )
        if is_array and "object" not in types:
            return (
                "SC323",
                E,
                Message(
                    "%(shown)s: `%(walked)s` is a list, which has no part `%(segment)s`.",
                    shown=shown,
                    walked=walked,
                    segment=segment,
                ),
            )
        if any(keyword in node for keyword in UNDECIDABLE_KEYWORDS):
            return None
        patterns = node.get("patternProperties")
        if isinstance(patterns, dict):
            try:
                matched = next(
                    (sub for pattern, sub in patterns.items() if _search(pattern, segment)), None
                )
            except safe_regex.PatternTimeout:
                return None  # undecided in the time limit: no claim either way
            if matched is not None:
                node = matched
                walked = f"{walked}.{segment}"
                continue
        additional = node.get("additionalProperties", True)
        known = list(properties) if isinstance(properties, dict) else []
        if additional is False:
            close = near_match(segment, known)
            if close:
                hint = Message(" Did you mean `%(match)s`?", match=f"{walked}.{close}")
            elif known:
                hint = Message(" It has %(names)s.", names=", ".join(f"`{k}`" for k in known[:8]))
            else:
                hint = ""
            return (
                "SC321",
                W,
                Message(
                    "%(shown)s: the schema of `%(walked)s` has no property "
                    "`%(segment)s`, so the prompt keeps the reference as "
                    "written.%(hint)s",
                    shown=shown,
                    walked=walked,
                    segment=segment,
                    hint=hint,
                ),
            )
        if isinstance(additional, dict) and additional:
            node = additional
            walked = f"{walked}.{segment}"
            continue
        close = near_match(segment, known)
        hint = Message(" Did you mean `%(match)s`?", match=f"{walked}.{close}") if close else ""
        return (
            "SC322",
            INFO,
            Message(
                "%(shown)s: the schema of `%(walked)s` does not declare "
                "`%(segment)s` (it allows other properties, so this works "
                "only if a value has it).%(hint)s",
                shown=shown,
                walked=walked,
                segment=segment,
                hint=hint,
            ),
        )
    return None


def _search(pattern: Any, text: str) -> bool:
    """A user's pattern, matched with the time limit (agents/core/safe_regex.py): a pattern
    that backtracks for seconds must not hold a preview keystroke. Raises PatternTimeout
    when it ran out of time (or cannot be used)."""
    return isinstance(pattern, str) and safe_regex.search(pattern, text)
