"""Form text in and out: what a designer types for a value, and how a value is shown.

Conventions (``parse_form_value`` / ``format_form_value``):

- Empty input means "no default" (value ``None``), for every type.
- Text is taken exactly as typed, outer whitespace included: a prompt designer
  who puts spaces around a default means them, and this is the only rule that
  round-trips every string (form fields must use ``strip=False``). The one
  string a form cannot hold is the empty string, which reads as "no default".
- Numbers, Yes/No, lists and objects ignore outer whitespace.
- Numbers: ``3``, ``-2.5``, ``.5``, ``-1.5e3``; digits without a point or an
  exponent stay ``int``. NaN, infinity, ``1_000`` and ``1,000`` are refused.
  With ``decimal_comma`` (a reader whose language writes ``1,5``: French, German)
  a Number also reads ``1,5`` as 1.5 and is shown as ``1,5``; the point is still
  read. ``grouping`` holds the thousands separators that reader types (French
  ``1 234,5`` with a space, U+00A0 or U+202F; German ``1.234,5``): groups of three
  digits only, and a lone point group (``1.234``) still reads as a decimal point.
  A number that does not read is refused with an example in the reader's form.
  Lists keep the comma as their separator in every language (CX Agent
  Studio's "comma-separated list"), so their numbers are written with a point;
  for a decimal-comma reader a comma between two digits in a list of numbers
  (``1,5``) is refused as ambiguous, naming both fixes (``1.5`` or ``1, 5``).
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
from dataclasses import dataclass
from typing import Any

from agents.core.diagnostics import Message
from agents.core.spec import VariableType
from agents.core.types import is_number, json_kind, quoted, value_schema_problems

__all__ = [
    "ParsedValue",
    "explain_json_error",
    "format_form_value",
    "json_error_message",
    "parse_form_value",
    "parse_json",
]

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
_DECIMAL_COMMA_RE = re.compile(r"[+-]?\d*,\d+(?:[eE][+-]?\d+)?")
_AMBIGUOUS_COMMA_RE = re.compile(r"(?<![\d.])\d+,\d+(?![\d.])")
_YES = frozenset({"yes", "true", "y", "1"})
_NO = frozenset({"no", "false", "n", "0"})


def parse_form_value(
    raw: str,
    type: VariableType,
    *,
    item_type: VariableType | None = None,
    schema: dict[str, Any] | None = None,
    decimal_comma: bool = False,
    grouping: str = "",
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
        value, errors = _parse_list(raw.strip(), item_type, decimal_comma=decimal_comma)
    else:
        value, error = _parse_scalar(raw, type, decimal_comma=decimal_comma, grouping=grouping)
        errors = [error] if error else []
    if errors:
        return ParsedValue(None, tuple(errors))
    if schema is not None:
        problems = value_schema_problems(value, schema, root_name=None)
        errors = [message for message, _error in problems]
        if errors:
            return ParsedValue(value, tuple(errors))
    return ParsedValue(value)


def _parse_scalar(
    raw: str, type: VariableType, *, decimal_comma: bool = False, grouping: str = ""
) -> tuple[Any, str | None]:
    if type is VariableType.TEXT:
        return raw, None
    text = raw.strip()
    if type is VariableType.NUMBER:
        typed = text
        if decimal_comma:
            text = _ungrouped(text, grouping)
            if _DECIMAL_COMMA_RE.fullmatch(text):
                text = text.replace(",", ".")
        number, error = _parse_number(text)
        if error is not None and not _NUMBER_RE.fullmatch(text):
            return None, _not_a_number(typed, decimal_comma=decimal_comma, grouping=grouping)
        return number, error
    if type is VariableType.BOOLEAN:
        lowered = text.lower()
        if lowered in _YES:
            return True, None
        if lowered in _NO:
            return False, None
        return None, Message("%(quoted)s is not yes or no", quoted=quoted(text))
    if type is VariableType.OBJECT:
        value, error = _parse_json(text)
        if error:
            return None, error
        if not isinstance(value, dict):
            return None, Message(
                "expected a JSON object ({...}), got %(json_kind)s", json_kind=json_kind(value)
            )
        return value, None
    return None, Message("unknown type %(type)s", type=repr(type))


def _ungrouped(text: str, grouping: str) -> str:
    """`text` without the thousands separators of `grouping` (``1 234,5`` → ``1234,5``) when
    they group three digits each; a lone point group (``1.234``) is left to read as a decimal."""
    if not grouping:
        return text
    match = re.fullmatch(
        rf"([+-]?\d{{1,3}})((?:[{re.escape(grouping)}]\d{{3}})+)(,\d+)?(?:[eE][+-]?\d+)?", text
    )
    if match is None:
        return text
    groups = match.group(2)
    separators = {char for char in groups if not char.isdigit()}
    if len(separators) > 1 or (
        separators == {"."} and groups.count(".") == 1 and not match.group(3)
    ):
        return text
    return match.group(1) + re.sub(r"\D", "", groups) + text[match.end(2) :]


def _not_a_number(text: str, *, decimal_comma: bool, grouping: str) -> Message:
    """The refusal of `text` with two numbers written as this reader writes them."""
    if decimal_comma:
        separator = "." if "." in grouping else " "
        example, other = (f"1{separator}234,5", "-2,5") if grouping else ("1234,5", "-2,5")
    else:
        example, other = "1234.5", "-2.5"
    return Message(
        "%(quoted)s is not a number: write it like %(example)s or %(other)s",
        quoted=quoted(text),
        example=example,
        other=other,
    )


def _parse_number(text: str) -> tuple[int | float | None, str | None]:
    if not _NUMBER_RE.fullmatch(text):
        return None, Message("%(quoted)s is not a number", quoted=quoted(text))
    try:
        if _INTEGER_RE.fullmatch(text):
            return int(text), None
        number = float(text)
    except ValueError:  # more digits than int() accepts
        return None, Message("%(quoted)s is too long a number", quoted=quoted(text))
    if not math.isfinite(number):
        return None, Message("%(quoted)s is too large a number", quoted=quoted(text))
    return number, None


def _parse_list(
    text: str, item_type: VariableType | None, *, decimal_comma: bool = False
) -> tuple[Any, list[str]]:
    if item_type is VariableType.LIST:
        return None, ["a list of lists is not supported"]
    if item_type is VariableType.OBJECT:
        return _parse_object_list(text)
    if text == "[]":
        return [], []
    if decimal_comma and item_type is VariableType.NUMBER:
        # `1,5` from a reader who writes decimals with a comma: one number or two items?
        ambiguous = [
            Message(
                "%(quoted)s in a list of numbers: write %(decimal)s for one decimal number, "
                "or %(items)s for two items",
                quoted=quoted(match.group(0)),
                decimal=match.group(0).replace(",", "."),
                items=match.group(0).replace(",", ", "),
            )
            for match in _AMBIGUOUS_COMMA_RE.finditer(text)
        ]
        if ambiguous:
            return None, ambiguous
    items, error = _split_csv(text)
    if error:
        return None, [error]
    values: list[Any] = []
    errors: list[str] = []
    for index, (item, was_quoted) in enumerate(items, start=1):
        if item == "" and not was_quoted:
            errors.append(
                Message('item %(index)s is empty (write "" for an empty text)', index=index)
            )
            continue
        value, problem = _parse_scalar(item, item_type or VariableType.TEXT)
        if problem and item_type is VariableType.NUMBER and not _NUMBER_RE.fullmatch(item):
            problem = _not_a_number(item, decimal_comma=False, grouping="")
        if problem:
            errors.append(Message("item %(index)s: %(problem)s", index=index, problem=problem))
        values.append(value)
    if errors and text.startswith("["):
        errors.append(Message("write the items separated by commas, without brackets"))
    return (None, errors) if errors else (values, [])


def _parse_object_list(text: str) -> tuple[Any, list[str]]:
    hint = Message("a list of objects is written as a JSON array: [{...}, {...}]")
    if not text.startswith("["):
        return None, [hint]
    value, error = _parse_json(text)
    if error:
        return None, [error]
    if not isinstance(value, list):
        return None, [hint]
    errors = [
        Message(
            "item %(index)s: expected a JSON object ({...}), got %(json_kind)s",
            index=index,
            json_kind=json_kind(item),
        )
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
                    return [], Message(
                        "item %(number)s: the opening quote is never closed", number=number
                    )
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
                return [], Message(
                    "item %(number)s: unexpected text after the closing quote", number=number
                )
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
#
# json.JSONDecodeError.msg is English and a small fixed set (CPython's Lib/json/decoder.py
# and Modules/_json.c); each is read here as a `Message` that says what to do.

_JSON_MESSAGES = (
    (
        "Expecting property name enclosed in double quotes",
        Message('put property names in double quotes, like {"name": 1}'),
    ),
    (
        "Expecting ':' delimiter",
        Message("expected ':' after the property name: write \"name\": value"),
    ),
    (
        "Expecting value",
        Message('expected a value: a number, "text", true, false, null, [...] or {...}'),
    ),
    ("Extra data", Message("unexpected text after the end of the JSON value: remove it")),
    ("Unterminated string", Message("this string is never closed (missing '\"')")),
    (
        "Invalid control character",
        Message("a line break or tab inside a string must be written \\n or \\t"),
    ),
    ("Invalid \\uXXXX escape", Message("invalid \\u escape (it takes four hex digits)")),
    ("Invalid \\escape", Message("invalid escape after '\\' (use \\\\ for a backslash)")),
)
_DECIMAL_COMMA_BEFORE = re.compile(r"(?<![\w.])(-?\d+),$")
_DIGITS_AFTER = re.compile(r"\d+")
_NOT_A_JSON_NUMBER = re.compile(r"(\S+) is not a JSON number$")


class _JsonValueError(ValueError):
    pass


def parse_json(text: str) -> tuple[Any, str | None]:
    """JSON text read strictly (no NaN, no key twice): the value, or the problem in words
    (`line 1, column 5: expected a value`)."""
    return _parse_json(text)


def json_error_message(error: json.JSONDecodeError) -> Message:
    """Where JSON typed by a person breaks and how to fix it, in words the catalog
    translates (`line 1, column 15: a decimal is written with a point in JSON: 100.0`):
    what every parser of such text reports instead of Python's English."""
    return Message(
        "line %(lineno)s, column %(colno)s: %(explain_json_error)s",
        lineno=error.lineno,
        colno=error.colno,
        explain_json_error=explain_json_error(error),
    )


def _parse_json(text: str) -> tuple[Any, str | None]:
    def refuse_constant(name: str) -> Any:
        raise _JsonValueError(Message("%(name)s is not allowed in JSON", name=name))

    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, value in pairs:
            if key in result:
                raise _JsonValueError(
                    Message("the property %(quoted)s appears twice", quoted=quoted(key))
                )
            result[key] = value
        return result

    try:
        return json.loads(
            text, parse_constant=refuse_constant, object_pairs_hook=no_duplicates
        ), None
    except json.JSONDecodeError as error:
        return None, json_error_message(error)
    except _JsonValueError as error:
        return None, error.args[0]
    except RecursionError:
        return None, Message("the JSON is nested too deeply")


def explain_json_error(error: json.JSONDecodeError) -> Message:
    """`error` (Python's English `msg`) as a `Message` with a short fix."""
    text, position, msg = error.doc or "", error.pos, error.msg
    if isinstance(msg, Message):  # already ours: the depth limit (limits.loads_json)
        return msg
    at_end = position >= len(text.rstrip())
    before = text[:position].rstrip()
    current = text[position : position + 1]
    constant = _NOT_A_JSON_NUMBER.match(msg)
    if constant:
        return Message(
            "%(name)s is not a JSON number: write a number or null", name=constant.group(1)
        )
    if msg.startswith("Illegal trailing comma"):
        closer = "}" if msg.endswith("object") else "]"
        return Message("remove the comma before %(closer)s", closer=closer)
    if msg.startswith("Expecting ',' delimiter"):
        closer = "}" if _innermost_container(text, position) == "{" else "]"
        if at_end:
            return Message("expected ',' or '%(closer)s' (the text ends too early)", closer=closer)
        return Message("expected ',' or '%(closer)s'", closer=closer)
    if at_end and msg.startswith(("Expecting value", "Expecting property name")):
        return Message("the text ends too early")
    if msg.startswith(("Expecting value", "Expecting property name")):
        if current == "'":
            return Message("strings and property names take double quotes, not single quotes")
        if before.endswith(",") and current in ("]", "}"):
            return Message("remove the comma before %(closer)s", closer=current)
        whole = _DECIMAL_COMMA_BEFORE.search(before)
        fraction = _DIGITS_AFTER.match(text, position)
        if whole and fraction and msg.startswith("Expecting property name"):
            return Message(
                "a decimal is written with a point in JSON: %(number)s",
                number=f"{whole.group(1)}.{fraction.group(0)}",
            )
    for prefix, words in _JSON_MESSAGES:
        if msg.startswith(prefix):
            return words
    return Message("this is not valid JSON here")


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


def format_form_value(
    value: Any,
    type: VariableType,
    item_type: VariableType | None = None,
    *,
    decimal_comma: bool = False,
) -> str:
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
    if type is VariableType.NUMBER and is_number(value):
        text = repr(value) if isinstance(value, float) else str(value)
        return text.replace(".", ",") if decimal_comma else text
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
