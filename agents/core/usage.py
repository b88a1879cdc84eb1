"""Who uses a variable: one analysis over an `AppSpec`, for the designer's badge and lint.

A *use* is any place that reads or writes a declared variable:

- ``static`` / ``dynamic`` / ``condition``: a ``{{x}}`` (or ``{{x.path}}``), ``{x}`` or a
  ``{% if %}``/``{% elif %}`` condition in an agent's instructions;
- ``read`` / ``write``: tool or callback code reading or writing ``context.state``
  (``code_analysis``; a removal is a write), or a tool's mock setting it;
- ``context``: ``$context.variables.<name>`` in an OpenAPI document or an MCP header;
  ``$context.variables`` alone hands every variable to the tool, so it is a use of each.

Names are matched whole (``$context.variables.user_id`` is a use of ``user_id``, never of
``user``). Uses of names the app does not declare are left out (lint reports those).
"""

from __future__ import annotations

from collections.abc import Iterator
from enum import StrEnum
from typing import Any, NamedTuple

from agents.core.code_analysis import CodeAnalysis, analyze_code, context_refs
from agents.core.parse import TokenKind, scanned
from agents.core.spec import AppSpec, CallbackKind, ToolKind

__all__ = ["Use", "UseKind", "unused_variables", "variable_uses"]


class UseKind(StrEnum):
    STATIC = "static"
    DYNAMIC = "dynamic"
    CONDITION = "condition"
    READ = "read"
    WRITE = "write"
    CONTEXT = "context"


class Use(NamedTuple):
    """One use of a variable. `field` is where it is (``agents.<name>.instructions``,
    ``agents.<name>.callbacks.<i>.code``, ``tools.<name>.python_code``,
    ``tools.<name>.mock.state``, ``tools.<name>.openapi.<path>``,
    ``tools.<name>.mcp_headers.<Header>``); `owner` the agent or tool; `callback` the kind
    of the callback whose code it is; `detail` the MCP header or the OpenAPI path (after
    ``openapi.``); `start` the offset in the instructions, `line` the line in the code.
    A tuple, as an app has as many uses as references (thousands in a long text)."""

    kind: UseKind
    field: str
    owner: str
    owner_is_tool: bool = False
    callback: CallbackKind | None = None
    detail: str = ""
    start: int | None = None
    line: int | None = None


def variable_uses(app: AppSpec) -> dict[str, list[Use]]:
    """Every declared variable (in declaration order) with its uses, in the order of the
    agents (instructions, then callbacks) and then the tools."""
    uses: dict[str, list[Use]] = {}
    for variable in app.variables:
        uses.setdefault(variable.name, [])
    for use_name, use in _uses(app):
        if use_name is None:  # `$context.variables`: every variable
            for found in uses.values():
                found.append(use)
        elif use_name in uses:
            uses[use_name].append(use)
    return uses


def unused_variables(app: AppSpec) -> tuple[str, ...]:
    """The declared variables nothing uses (lint's SC311, the designer's "unused")."""
    return tuple(name for name, found in variable_uses(app).items() if not found)


def _uses(app: AppSpec) -> Iterator[tuple[str | None, Use]]:
    for agent in app.agents:
        yield from _instruction_uses(agent.name, agent.instructions)
        for position, callback in enumerate(agent.callbacks):
            analysis = analyze_code(callback.code, filename="<callback>")
            where = f"agents.{agent.name}.callbacks.{position}.code"
            for name, use in _code_uses(analysis, where, agent.name, tool=False):
                yield name, _with_callback(use, callback.kind)
    for tool in app.tools:
        if tool.kind is ToolKind.PYTHON:
            analysis = analyze_code(tool.python_code, filename=f"<tool {tool.name}>")
            yield from _code_uses(analysis, f"tools.{tool.name}.python_code", tool.name, tool=True)
        if tool.mock is not None and isinstance(tool.mock.state, dict):
            where = f"tools.{tool.name}.mock.state"
            for key in tool.mock.state:
                yield str(key), Use(UseKind.WRITE, where, tool.name, owner_is_tool=True)
        if tool.kind is ToolKind.OPENAPI and isinstance(tool.openapi, dict):
            prefix = f"tools.{tool.name}.openapi"
            for where, text in _strings(tool.openapi, prefix):
                detail = where.removeprefix(prefix + ".")
                yield from _context_uses(text, where, tool.name, detail)
        if tool.kind is ToolKind.MCP:
            for header, value in tool.mcp_headers:
                where = f"tools.{tool.name}.mcp_headers.{header}"
                yield from _context_uses(value, where, tool.name, header)


def _with_callback(use: Use, kind: CallbackKind) -> Use:
    return use._replace(callback=kind)


def _instruction_uses(agent: str, text: Any) -> Iterator[tuple[str, Use]]:
    """The instructions' references, read with the parser's ``Scan`` (as lint reads them:
    each distinct brace group is classified once, and a stray ``{% elif %}`` is text)."""
    scan = scanned(text if isinstance(text, str) else str(text))
    where = f"agents.{agent}.instructions"
    parts, lexemes = scan.parts, scan.lexemes
    ends: list[int] | None = None
    for index in range(1, len(parts), 2):
        lexeme = lexemes[parts[index]]
        kind = lexeme.kind
        if kind is TokenKind.TEXT:
            continue
        if kind in (TokenKind.IF, TokenKind.ELIF):
            kind = scan.kind(index)
        if kind not in _INSTRUCTION_KINDS:
            continue
        if ends is None:
            ends = scan.ends
        start = ends[index - 1]
        if kind is TokenKind.STATIC:
            if lexeme.path:
                yield lexeme.path[0], Use(UseKind.STATIC, where, agent, False, None, "", start)
        elif kind is TokenKind.DYNAMIC:
            yield lexeme.name, Use(UseKind.DYNAMIC, where, agent, False, None, "", start)
        elif lexeme.condition is not None:
            for path in lexeme.condition.references:
                if path:
                    yield path[0], Use(UseKind.CONDITION, where, agent, False, None, "", start)


_INSTRUCTION_KINDS = frozenset({TokenKind.STATIC, TokenKind.DYNAMIC, TokenKind.IF, TokenKind.ELIF})


def _code_uses(
    analysis: CodeAnalysis, where: str, owner: str, *, tool: bool
) -> Iterator[tuple[str, Use]]:
    for read in analysis.reads:
        if read.name is not None:
            yield read.name, Use(UseKind.READ, where, owner, owner_is_tool=tool, line=read.line)
    for write in analysis.writes:
        if write.name is not None:
            yield write.name, Use(UseKind.WRITE, where, owner, owner_is_tool=tool, line=write.line)


def _context_uses(
    text: Any, where: str, tool: str, detail: str
) -> Iterator[tuple[str | None, Use]]:
    for ref in context_refs(text):
        use = Use(UseKind.CONTEXT, where, tool, owner_is_tool=True, detail=detail)
        if ref.all_variables:
            yield None, use
        elif ref.variable is not None:
            yield ref.variable, use


def _strings(document: Any, prefix: str) -> Iterator[tuple[str, str]]:
    """Every string of a JSON document that mentions ``$context``, with its field path
    (iteratively: documents can be deep)."""
    stack: list[tuple[Any, str]] = [(document, prefix)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, dict):
            for key, value in reversed(list(node.items())):
                stack.append((value, f"{where}.{key}"))
        elif isinstance(node, list):
            for position in range(len(node) - 1, -1, -1):
                stack.append((node[position], f"{where}.{position}"))
        elif isinstance(node, str) and "$context" in node:
            yield where, node
