"""Schema patterns matched with a time limit: a hostile ``pattern`` cannot hold a worker.

JSON Schema's ``pattern`` and ``patternProperties`` (and ``additionalProperties``, which
consults them) are matched with the ``regex`` package and its ``timeout=``, wherever
values are validated (web requests, import, preview, sandbox results): a match that takes
longer than ``PATTERN_TIMEOUT_S`` stops with :class:`PatternTimeout`, whose message names
the pattern and the fix.  ``check_schema`` refuses nested quantifiers (SC228) before a
schema is ever saved; this is the second line.  Pure Python plus ``regex`` and jsonschema.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import regex
from jsonschema import Draft202012Validator, ValidationError, validators

PATTERN_TIMEOUT_S = 0.1
MAX_PATTERN_CHARS = 1000


class PatternTimeout(ValueError):
    """A pattern took too long to match (or is too long to try)."""


@lru_cache(maxsize=256)
def _compiled(pattern: str) -> Any:
    if len(pattern) > MAX_PATTERN_CHARS:
        raise PatternTimeout(
            f"the pattern is longer than {MAX_PATTERN_CHARS} characters; shorten it"
        )
    try:
        return regex.compile(pattern, flags=regex.V0)
    except (regex.error, ValueError, TypeError, OverflowError) as error:
        raise PatternTimeout(f"the pattern {pattern!r} cannot be used ({error})") from error


# (pattern, text) pairs that already ran out of time: one request validates a value several
# times (import, lint, preview), and the answer does not change.
_TIMED_OUT: dict[tuple[str, str], str] = {}
_TIMED_OUT_MAX = 256


def search(pattern: str, text: str, timeout: float = PATTERN_TIMEOUT_S) -> bool:
    """``re.search(pattern, text) is not None``, stopped after *timeout* seconds."""
    known = _TIMED_OUT.get((pattern, text))
    if known is not None:
        raise PatternTimeout(known)
    try:
        return _compiled(pattern).search(text, timeout=timeout) is not None
    except TimeoutError as error:
        message = (
            f"the pattern {pattern!r} took longer than {timeout} s on a {len(text)}-character "
            "text; simplify it (no repeated group that itself repeats, e.g. (a+)+ is a+)"
        )
        if len(_TIMED_OUT) >= _TIMED_OUT_MAX:
            _TIMED_OUT.clear()
        _TIMED_OUT[(pattern, text)] = message
        raise PatternTimeout(message) from error


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Any:
    if validator.is_type(instance, "string") and not search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, pattern_properties: Any, instance: Any, schema: Any) -> Any:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in pattern_properties.items():
        for key, value in instance.items():
            if search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, additional: Any, instance: Any, schema: Any) -> Any:
    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    extras = [
        key
        for key in instance
        if key not in properties and not any(search(p, key) for p in patterns)
    ]
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        if "patternProperties" in schema:
            verb = "does" if len(extras) == 1 else "do"
            joined = ", ".join(repr(each) for each in sorted(extras))
            patterns_text = ", ".join(repr(each) for each in sorted(patterns))
            error = f"{joined} {verb} not match any of the regexes: {patterns_text}"
        else:
            joined = ", ".join(repr(extra) for extra in extras)
            was = "was" if len(extras) == 1 else "were"
            error = f"Additional properties are not allowed ({joined} {was} unexpected)"
        yield ValidationError(error)


TimedDraft202012Validator = validators.extend(
    Draft202012Validator,
    {
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
    },
)
