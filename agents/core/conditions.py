"""Conditions of ``{% if %}`` / ``{% elif %}`` tags: a small hand-written parser and evaluator.

Grammar (lowest precedence first)::

    or_expr     := and_expr ("or" and_expr)*
    and_expr    := not_expr ("and" not_expr)*
    not_expr    := "not" not_expr | comparison
    comparison  := operand (op operand)*          # chained like Python: a < b < c
    op          := "==" | "!=" | "<" | "<=" | ">" | ">=" | "in" | "not" "in"
    operand     := literal | path | "channel" | "modality" | "(" or_expr ")" | list
    list        := "[" [or_expr ("," or_expr)* [","]] "]"       # for `tier in ["gold", "vip"]`
    literal     := string | number | true | false | null      (also True, False, None)
    path        := name ("." segment)*                          # a.b.0 indexes a list

Semantics are Python's, made total: a variable or path that does not exist is
``None``; a comparison between values that cannot be compared (``"a" < 1``,
``1 in None``) is ``False`` instead of an error; ``channel`` and ``modality``
are the preview's choices and shadow variables of the same name. Nothing is
ever passed to ``eval``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agents.core.diagnostics import Message

MAX_DEPTH = 64

_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<number>-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<op>==|!=|<=|>=|<|>|\(|\)|\[|\]|,)
  | (?P<path>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*)
    """,
    re.VERBOSE | re.ASCII | re.DOTALL,
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'"}
_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_LITERALS: dict[str, Any] = {
    "true": True,
    "false": False,
    "null": None,
    "True": True,
    "False": False,
    "None": None,
}
_KEYWORDS = frozenset({"and", "or", "not", "in"})
_BUILTINS = frozenset({"channel", "modality"})
_COMPARISONS = frozenset({"==", "!=", "<", "<=", ">", ">=", "in", "not in"})

# AST nodes are tuples, the first item names the node:
#   ("lit", value) ("var", path) ("builtin", name) ("not", node)
#   ("and", nodes) ("or", nodes) ("list", nodes) ("cmp", first, ((op, node), ...))
Node = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class ConditionError:
    """Why a condition could not be parsed; `offset` is where, within the condition source."""

    message: str
    offset: int = 0


@dataclass(frozen=True, slots=True)
class Condition:
    source: str
    node: Node

    @property
    def references(self) -> tuple[tuple[str, ...], ...]:
        """Variable paths the condition reads, in order of first appearance (no builtins)."""
        found: list[tuple[str, ...]] = []
        _collect(self.node, found)
        return tuple(dict.fromkeys(found))

    def evaluate(
        self, values: Mapping[str, Any] | None, channel: str = "web", modality: str = "text"
    ) -> bool:
        """Truthiness of the condition for these values. Never raises."""
        try:
            return bool(_evaluate(self.node, values or {}, channel, modality))
        except Exception:
            return False


def _collect(node: Node, found: list[tuple[str, ...]]) -> None:
    tag = node[0]
    if tag == "var":
        found.append(node[1])
    elif tag == "not":
        _collect(node[1], found)
    elif tag in ("and", "or", "list"):
        for child in node[1]:
            _collect(child, found)
    elif tag == "cmp":
        _collect(node[1], found)
        for _, child in node[2]:
            _collect(child, found)


def resolve_path(values: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    """The value at `path` (dict keys; digits index lists), or None when it does not exist."""
    value = values.get(path[0])
    for segment in path[1:]:
        if isinstance(value, dict):
            value = value.get(segment)
        elif isinstance(value, list | tuple) and segment.isdigit():
            index = int(segment)
            value = value[index] if index < len(value) else None
        else:
            return None
    return value


def _compare(op: str, left: Any, right: Any) -> bool:
    try:
        if op == "==":
            return bool(left == right)
        if op == "!=":
            return bool(left != right)
        if op == "<":
            return bool(left < right)
        if op == "<=":
            return bool(left <= right)
        if op == ">":
            return bool(left > right)
        if op == ">=":
            return bool(left >= right)
        if op == "in":
            return bool(left in right)
        if op == "not in":
            return bool(left not in right)
    except Exception:
        return False
    return False


def _evaluate(node: Node, values: Mapping[str, Any], channel: str, modality: str) -> Any:
    tag = node[0]
    if tag == "lit":
        return node[1]
    if tag == "var":
        return resolve_path(values, node[1])
    if tag == "builtin":
        return channel if node[1] == "channel" else modality
    if tag == "not":
        return not _evaluate(node[1], values, channel, modality)
    if tag == "list":
        return [_evaluate(child, values, channel, modality) for child in node[1]]
    if tag == "and":
        result: Any = True
        for child in node[1]:
            result = _evaluate(child, values, channel, modality)
            if not result:
                return result
        return result
    if tag == "or":
        result = False
        for child in node[1]:
            result = _evaluate(child, values, channel, modality)
            if result:
                return result
        return result
    # "cmp": chained like Python, each operand evaluated once.
    left = _evaluate(node[1], values, channel, modality)
    for op, child in node[2]:
        right = _evaluate(child, values, channel, modality)
        if not _compare(op, left, right):
            return False
        left = right
    return True


class _Failure(Exception):
    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset


class _Parser:
    def __init__(self, source: str) -> None:
        self.source = source
        self.tokens: list[tuple[str, Any, int]] = []  # (kind, value, offset)
        position = 0
        while position < len(source):
            match = _TOKEN.match(source, position)
            if match is None:
                raise _Failure(f"unexpected {source[position]!r}", position)
            kind = match.lastgroup or ""
            text = match.group()
            if kind == "number":
                self.tokens.append(("lit", float(text) if _is_float(text) else int(text), position))
            elif kind == "string":
                body = _ESCAPE.sub(lambda m: _ESCAPES.get(m.group(1), m.group()), text[1:-1])
                self.tokens.append(("lit", body, position))
            elif kind == "op":
                self.tokens.append(("op", text, position))
            elif kind == "path":
                if text in _LITERALS:
                    self.tokens.append(("lit", _LITERALS[text], position))
                elif text in _KEYWORDS:
                    self.tokens.append(("op", text, position))
                elif text in _BUILTINS:
                    self.tokens.append(("builtin", text, position))
                else:
                    self.tokens.append(("var", tuple(text.split(".")), position))
            position = match.end()
        self.index = 0
        self.depth = 0

    def peek(self) -> tuple[str, Any, int] | None:
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def at_op(self, *ops: str) -> bool:
        token = self.peek()
        return token is not None and token[0] == "op" and token[1] in ops

    def fail(self, message: str) -> _Failure:
        token = self.peek()
        return _Failure(message, token[2] if token else len(self.source))

    def parse(self) -> Node:
        if not self.tokens:
            raise _Failure(Message("the condition is empty"), 0)
        node = self.or_expr()
        if self.peek() is not None:
            token = self.peek()
            assert token is not None
            raise self.fail(
                Message("unexpected %(token)s", token=repr(self.source[token[2] :].split()[0]))
            )
        return node

    def or_expr(self) -> Node:
        nodes = [self.and_expr()]
        while self.at_op("or"):
            self.index += 1
            nodes.append(self.and_expr())
        return nodes[0] if len(nodes) == 1 else ("or", tuple(nodes))

    def and_expr(self) -> Node:
        nodes = [self.not_expr()]
        while self.at_op("and"):
            self.index += 1
            nodes.append(self.not_expr())
        return nodes[0] if len(nodes) == 1 else ("and", tuple(nodes))

    def not_expr(self) -> Node:
        if self.at_op("not"):
            self.index += 1
            self.enter()
            node = ("not", self.not_expr())
            self.depth -= 1
            return node
        return self.comparison()

    def comparison(self) -> Node:
        first = self.operand()
        rest: list[tuple[str, Node]] = []
        while True:
            if self.at_op("not"):
                following = (
                    self.tokens[self.index + 1] if self.index + 1 < len(self.tokens) else None
                )
                if following is None or following[:2] != ("op", "in"):
                    raise self.fail(Message("'not' here must be followed by 'in'"))
                self.index += 2
                op = "not in"
            elif self.at_op(*_COMPARISONS):
                token = self.peek()
                assert token is not None
                self.index += 1
                op = token[1]
            else:
                break
            rest.append((op, self.operand()))
        return first if not rest else ("cmp", first, tuple(rest))

    def operand(self) -> Node:
        token = self.peek()
        if token is None:
            raise self.fail(Message("the condition ends too early: a value is missing"))
        kind, value, _ = token
        if kind in ("lit", "var", "builtin"):
            self.index += 1
            return (kind, value)
        if kind == "op" and value == "(":
            self.index += 1
            self.enter()
            node = self.or_expr()
            self.depth -= 1
            if not self.at_op(")"):
                raise self.fail(Message("a ')' is missing"))
            self.index += 1
            return node
        if kind == "op" and value == "[":
            self.index += 1
            self.enter()
            items: list[Node] = []
            while not self.at_op("]"):
                items.append(self.or_expr())
                if self.at_op(","):
                    self.index += 1
                elif not self.at_op("]"):
                    raise self.fail(Message("a ']' or ',' is missing"))
            self.index += 1
            self.depth -= 1
            return ("list", tuple(items))
        raise self.fail(Message("expected a value, found %(value)s", value=repr(value)))

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.fail(Message("the condition is nested too deeply"))


def _is_float(text: str) -> bool:
    return "." in text or "e" in text or "E" in text


def parse_condition(src: str) -> Condition | ConditionError:
    """Parse a condition; problems come back as a `ConditionError`, never raised."""
    try:
        return Condition(source=src, node=_Parser(src).parse())
    except _Failure as failure:
        return ConditionError(message=failure.message, offset=failure.offset)
    except (RecursionError, ValueError, OverflowError) as error:
        return ConditionError(
            message=Message("the condition cannot be read (%(error)s)", error=str(error)), offset=0
        )
