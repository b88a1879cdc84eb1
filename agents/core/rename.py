"""Rewriting references after a rename: from the parser's token spans, never by string search.

A rename touches only the name inside a reference token (`{{old.path}}`, `{old}`,
`{@TOOL: old}`, `{@AGENT: Old Name}`, a path in a `{% if %}` condition); every
character outside those names is kept as it was.
"""

from __future__ import annotations

import re
from enum import StrEnum

from agents.core.parse import Token, TokenKind, parse

__all__ = ["RenameKind", "rename_references", "rename_state_key"]


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
