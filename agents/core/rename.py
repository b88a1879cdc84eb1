"""Rewriting references after a rename: from the parser's token spans, never by string search.

A rename touches only the name inside a reference token (`{{old.path}}`, `{old}`,
`{@TOOL: old}`, `{@AGENT: Old Name}`, a path in a `{% if %}` condition); every
character outside those names is kept as it was.
"""

from __future__ import annotations

import ast
import re
from enum import StrEnum

from agents.core.parse import Token, TokenKind, parse

__all__ = ["RenameKind", "rename_references", "rename_state_in_code", "rename_state_key"]


class RenameKind(StrEnum):
    VARIABLE = "variable"
    TOOL = "tool"
    AGENT = "agent"


_TOKEN_OF = {
    RenameKind.VARIABLE: None,
    RenameKind.TOOL: TokenKind.TOOL,
    RenameKind.AGENT: TokenKind.AGENT,
}
_KEYWORD = re.compile(r"\{\s*@(?:TOOL|AGENT):\s*")
_LEADING_SPACE = re.compile(r"\s*")
_PYTHON_LINE_BREAK = re.compile(r"(?<=\n)|(?<=\r)(?!\n)")


def _variable_span(token: Token) -> tuple[int, int] | None:
    """Where the variable name heads a static or dynamic reference, within `token.raw`."""
    opening = 2 if token.kind is TokenKind.STATIC else 1
    start = _LEADING_SPACE.match(token.raw, opening).end()
    end = start + len(token.path[0])
    return (start, end) if token.raw[start:end] == token.path[0] else None


def _reference_span(token: Token) -> tuple[int, int] | None:
    """Where the name of `{@TOOL: name}` / `{@AGENT: Name}` stands within `token.raw`."""
    match = _KEYWORD.match(token.raw)
    if match is None:
        return None
    start = match.end()
    end = start + len(token.name)
    return (start, end) if token.raw[start:end] == token.name else None


# A variable that heads a path in a condition: not inside a string literal, not after a dot.
def _condition_pattern(old: str) -> re.Pattern[str]:
    return re.compile(
        r"(\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*')|(?<![\w.])" + re.escape(old) + r"(?![\w])"
    )


def _rename_in_condition(raw: str, old: str, new: str) -> str:
    return _condition_pattern(old).sub(lambda m: m.group(1) or new, raw)


def _condition_names(token: Token, variable: str) -> bool:
    """Whether the token is an `{% if %}`/`{% elif %}` whose condition reads `variable`."""
    if token.kind not in (TokenKind.IF, TokenKind.ELIF) or token.condition is None:
        return False
    return any(path[:1] == (variable,) for path in token.condition.references)


def rename_references(text: str, kind: RenameKind, old: str, new: str) -> str:
    """`text` with every reference to the `kind` named `old` naming `new` instead."""
    out: list[str] = []
    position = 0
    for token in parse(text).tokens:
        replacement: str | None = None
        if kind is RenameKind.VARIABLE:
            if token.kind in (TokenKind.STATIC, TokenKind.DYNAMIC) and token.path[:1] == (old,):
                span = _variable_span(token)
                if span is not None:
                    replacement = token.raw[: span[0]] + new + token.raw[span[1] :]
            elif _condition_names(token, old):
                replacement = _rename_in_condition(token.raw, old, new)
        elif token.kind is _TOKEN_OF[kind] and token.name == old:
            span = _reference_span(token)
            if span is not None:
                replacement = token.raw[: span[0]] + new + token.raw[span[1] :]
        if replacement is not None and replacement != token.raw:
            out.append(text[position : token.start])
            out.append(replacement)
            position = token.end
    out.append(text[position:])
    return "".join(out)


def rename_state_key(value: object, old: str, new: str) -> object:
    """`$context.variables.old` in a JSON value (tool headers, OpenAPI) names `new`."""
    if isinstance(value, str):
        return re.sub(
            r"\$context\.variables\." + re.escape(old) + r"(?!\w)",
            lambda _: f"$context.variables.{new}",
            value,
        )
    if isinstance(value, list):
        return [rename_state_key(v, old, new) for v in value]
    if isinstance(value, dict):
        return {k: rename_state_key(v, old, new) for k, v in value.items()}
    return value


# `context.state` / `context.variables` (any receiver: context, tool_context, ctx…), the
# methods that take a variable name first, and the CX helpers that do.
_STATE_ATTRIBUTES = frozenset({"state", "variables"})
_KEY_METHODS = frozenset({"get", "pop", "setdefault", "__getitem__", "__setitem__"})
_NAME_FUNCTIONS = frozenset({"get_variable", "set_variable", "remove_variable"})


def _state_aliases(tree: ast.AST) -> set[str]:
    """Local names bound to a state mapping (`state = context.state`)."""
    aliases: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _is_state(node.value, set()):
            aliases |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return aliases


def _is_state(node: ast.AST, aliases: set[str]) -> bool:
    if isinstance(node, ast.Attribute) and node.attr in _STATE_ATTRIBUTES:
        return True
    return isinstance(node, ast.Name) and node.id in aliases


def _name_literals(tree: ast.AST, old: str) -> list[ast.Constant]:
    """The string literals that name the variable `old` in a state access."""
    aliases = _state_aliases(tree)
    found: list[ast.Constant] = []

    def take(node: ast.AST | None) -> None:
        if isinstance(node, ast.Constant) and node.value == old:
            found.append(node)

    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and _is_state(node.value, aliases):
            take(node.slice)
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            names_first = (
                isinstance(func, ast.Attribute)
                and (
                    (func.attr in _KEY_METHODS and _is_state(func.value, aliases))
                    or func.attr in _NAME_FUNCTIONS
                )
            ) or (isinstance(func, ast.Name) and func.id in _NAME_FUNCTIONS)
            if names_first:
                take(node.args[0])
            if (
                isinstance(func, ast.Attribute)
                and func.attr == "update"
                and _is_state(func.value, aliases)
                and isinstance(node.args[0], ast.Dict)
            ):
                for key in node.args[0].keys:
                    take(key)
        elif (
            isinstance(node, ast.Compare)
            and len(node.ops) == 1
            and isinstance(node.ops[0], ast.In | ast.NotIn)
            and _is_state(node.comparators[0], aliases)
        ):
            take(node.left)
    return found


def rename_state_in_code(code: str, old: str, new: str) -> str:
    """Python code with every state access naming `old` naming `new` instead:
    `context.state["old"]` (read, write, `del`), `.get/.pop/.setdefault("old")`,
    `"old" in context.state`, `.update({"old": v})`, `get_variable/set_variable/
    remove_variable("old")`, also through a local alias of the mapping. Only those
    string literals change (written the same way, quotes kept); code that does not parse,
    or a literal written with escapes or a prefix, is left as it is."""
    if old not in code:
        return code
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return code
    # The parser's line breaks only (\n, \r\n, \r): str.splitlines also breaks at a form
    # feed, U+2028 and others, which would shift every position after one.
    lines = _PYTHON_LINE_BREAK.split(code)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    edits: list[tuple[int, int]] = []
    for node in _name_literals(tree, old):
        if node.lineno != node.end_lineno or node.end_col_offset is None:
            continue
        line = lines[node.lineno - 1].encode("utf-8")
        start = starts[node.lineno - 1] + len(line[: node.col_offset].decode("utf-8"))
        end = starts[node.lineno - 1] + len(line[: node.end_col_offset].decode("utf-8"))
        literal = code[start:end]
        if len(literal) >= 2 and literal[0] in "\"'" and literal[1:-1] == old:
            edits.append((start + 1, end - 1))
    out: list[str] = []
    position = 0
    for start, end in sorted(set(edits)):
        out.append(code[position:start])
        out.append(new)
        position = end
    out.append(code[position:])
    return "".join(out)
