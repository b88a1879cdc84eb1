"""Lint of an agent's instructions: every brace group judged once, references to variables,
tools and agents, and the agent's tools, sub-agents and callback code.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from agents.core.diagnostics import Diagnostic, Message
from agents.core.linting.index import (
    CX_INSTRUCTION_BUILTINS,
    INFO,
    E,
    Found,
    Index,
    W,
    callback_writers,
    join_labels,
)
from agents.core.linting.paths import follow_refs, path_problem, schema_types
from agents.core.linting.tools import lint_code
from agents.core.parse import Lexeme, TokenKind, positions, scanned
from agents.core.spec import AgentSpec, VariableSpec, VariableType


def lint_agent_text(index: Index, agent: AgentSpec, text: str) -> list[Diagnostic]:
    """Diagnostics of one agent (who uses which variable is `agents.core.usage`'s).

    The instructions are scanned once with the parser's ``Scan`` (what ``parse``
    and ``compile_instructions`` share) rather than ``parse``: references repeat,
    so each distinct brace group is judged once, and positions are computed only
    for the groups that have a problem. Building a token per reference would cost
    several times the whole lint on a long text.
    """
    name = agent.name
    where = f"agents.{name}.instructions"
    scan = scanned(text if isinstance(text, str) else str(text))
    found: list[Diagnostic] = [
        dataclasses.replace(d, field=d.field or where, subject=d.subject or name)
        for d in scan.diagnostics()
    ]
    agent_tools = frozenset(agent.tools)
    mentioned: set[str] = set()
    problems_of: dict[str, tuple[Found, ...]] = {}
    lexemes = scan.lexemes  # may be the parser's cache of every group ever seen
    for raw in set(scan.parts[1::2]):
        problems = _lexeme_problems(index, agent, agent_tools, lexemes[raw], mentioned)
        if problems:
            problems_of[raw] = problems
    if problems_of:
        parts, ends, demoted = scan.parts, scan.ends, scan.kinds
        hits: list[tuple[int, int, tuple[Found, ...]]] = []
        for position, raw in enumerate(parts[1::2]):
            problems = problems_of.get(raw)
            if problems is not None:
                index_in_parts = 2 * position + 1
                if demoted.get(index_in_parts) is TokenKind.TEXT:
                    continue  # a stray `{% elif %}`: parse reported it, it is not a condition
                hits.append((ends[index_in_parts - 1], ends[index_in_parts], problems))
        if hits:
            lines = positions(text, [start for start, _, _ in hits])
            for start, end, problems in hits:
                line, column = lines[start]
                for code, severity, message, *reference in problems:
                    found.append(
                        Diagnostic(
                            code,
                            severity,
                            message,
                            line,
                            column,
                            start,
                            end,
                            where,
                            name,
                            reference=reference[0] if reference else None,
                        )
                    )
            found.sort(key=lambda d: d.start if d.start is not None else 0)

    for tool_name in agent.tools:
        if tool_name not in index.tools:
            found.append(
                Diagnostic(
                    "SC308",
                    E,
                    Message(
                        "%(name)s may call `%(tool_name)s`, but the app has no such "
                        "tool.%(suggestion)s",
                        name=name,
                        tool_name=tool_name,
                        suggestion=index.suggest("tool", tool_name),
                    ),
                    field=f"agents.{name}.tools",
                    subject=name,
                )
            )
        elif tool_name not in mentioned:
            found.append(
                Diagnostic(
                    "SC312",
                    INFO,
                    Message(
                        "%(name)s may call the tool %(tool_name)s, but its "
                        "instructions never mention it: say when to use it with "
                        "`{@TOOL: %(tool_name)s}`.",
                        name=name,
                        tool_name=tool_name,
                    ),
                    field=f"agents.{name}.tools",
                    subject=name,
                    reference=tool_name,
                )
            )
    for child in agent.children:
        if child not in index.agents:
            found.append(
                Diagnostic(
                    "SC309",
                    E,
                    Message(
                        "%(name)s lists `%(child)s` as a sub-agent, but the app has "
                        "no agent by that name.%(suggestion)s",
                        name=name,
                        child=child,
                        suggestion=index.suggest("agent", child),
                    ),
                    field=f"agents.{name}.children",
                    subject=name,
                )
            )
    for writer in callback_writers(agent):
        found.extend(lint_code(index, writer))
    return found


def _lexeme_problems(
    index: Index,
    agent: AgentSpec,
    agent_tools: frozenset[str],
    lexeme: Lexeme,
    mentioned: set[str],
) -> tuple[Found, ...]:
    """(code, severity, message) for one distinct brace group, wherever it is."""
    kind = lexeme.kind
    if kind is TokenKind.STATIC:
        return _static_problems(index, lexeme.path, in_condition=False)
    if kind is TokenKind.IF or kind is TokenKind.ELIF:
        if lexeme.condition is None:
            return ()  # parse reported it
        found: list[Found] = []
        for path in lexeme.condition.references:
            found.extend(_static_problems(index, path, in_condition=True))
        return tuple(found)
    if kind is TokenKind.TOOL:
        mentioned.add(lexeme.name)
    elif kind is not TokenKind.AGENT and kind is not TokenKind.DYNAMIC:
        return ()
    problem = _reference_problem(index, agent, agent_tools, kind, lexeme.name)
    return (problem,) if problem is not None else ()


def _reference_problem(
    index: Index, agent: AgentSpec, agent_tools: frozenset[str], kind: TokenKind, name: str
) -> Found | None:
    if kind is TokenKind.DYNAMIC:
        if name in index.variables or name in CX_INSTRUCTION_BUILTINS:
            return None
        return (
            "SC302",
            E,
            Message(
                "`{%(name)s}`: no variable `%(name)s` is declared. At run "
                "time an undeclared `{%(name)s}` silently becomes empty "
                "text.%(suggestion)s",
                name=name,
                suggestion=index.suggest("variable", name),
            ),
            name,
        )
    if kind is TokenKind.TOOL:
        if name not in index.tools:
            return (
                "SC304",
                E,
                Message(
                    "`{@TOOL: %(name)s}`: the app has no tool `%(name)s`.%(suggestion)s",
                    name=name,
                    suggestion=index.suggest("tool", name),
                ),
            )
        if name not in agent_tools:
            return (
                "SC305",
                E,
                Message(
                    "`{@TOOL: %(name)s}`: %(agent)s may not call %(name)s; add "
                    "it to the agent's tools.",
                    name=name,
                    agent=agent.name,
                ),
            )
        return None
    if kind is TokenKind.AGENT and name not in index.agents:
        return (
            "SC306",
            E,
            Message(
                "`{@AGENT: %(name)s}`: the app has no agent named `%(name)s` "
                "(display names must match exactly).%(suggestion)s",
                name=name,
                suggestion=index.suggest("agent", name),
            ),
        )
    return None


def _static_problems(
    index: Index, path: tuple[str, ...], *, in_condition: bool
) -> tuple[Found, ...]:
    first = path[0]
    dotted = ".".join(path)
    shown = (
        Message("The condition reads `%(dotted)s`", dotted=dotted)
        if in_condition
        else f"`{{{{{dotted}}}}}`"
    )
    variable = index.variables.get(first)
    builtin = variable is None and first in CX_INSTRUCTION_BUILTINS and len(path) == 1
    if builtin and not in_condition:  # CX fills it in; a condition is decided before CX
        return ()
    if variable is None:
        hint = index.suggest("variable", first)
        if in_condition:
            return (
                (
                    "SC303",
                    E,
                    Message(
                        "%(shown)s, but no variable `%(first)s` is declared (it "
                        "counts as empty, null).%(hint)s",
                        shown=shown,
                        first=first,
                        hint=hint,
                    ),
                    first,
                ),
            )
        return (
            (
                "SC301",
                E,
                Message(
                    "%(shown)s: no variable `%(first)s` is declared, so the "
                    "prompt keeps `{{%(dotted)s}}` as written.%(hint)s",
                    shown=shown,
                    first=first,
                    dotted=dotted,
                    hint=hint,
                ),
                first,
            ),
        )
    problems: list[Found] = []
    writers = index.written_by.get(first)
    if writers:
        who = join_labels(writers)
        verb = Message("updates") if len(writers) == 1 else Message("update")
        if in_condition:
            message = Message(
                "%(shown)s, which %(who)s %(verb)s during the conversation: "
                "the condition is evaluated again before each model call, so "
                "the instructions change mid-session, which defeats prompt "
                "caching.",
                shown=shown,
                who=who,
                verb=verb,
            )
        else:
            message = Message(
                "%(shown)s is filled in before each model call, and %(who)s "
                "%(verb)s `%(first)s` during the conversation: the "
                "instructions change mid-session, which defeats prompt "
                "caching. Write `{%(first)s}` to give the model the value "
                "through the history instead.",
                shown=shown,
                who=who,
                verb=verb,
                first=first,
            )
        problems.append(("SC310", W, message))
    if len(path) > 1:
        problem = path_problem(index, variable, path, shown)
        if problem is not None:
            problems.append(problem)
        listed = None if in_condition else _indexed_list(index, variable, path)
        if listed is not None:
            problems.append(
                (
                    "SC324",
                    E,
                    Message(
                        "%(shown)s: CX Agent Studio does not accept an index into a "
                        "list in instructions (`%(listed)s` is a list), so it rejects "
                        "the exported app. Reference the whole list, "
                        "`{{%(listed)s}}`, or keep the item in a variable of its own "
                        "that a tool or callback sets.",
                        shown=shown,
                        listed=listed,
                    ),
                )
            )
    return tuple(problems)


def _indexed_list(index: Index, variable: VariableSpec, path: tuple[str, ...]) -> str | None:
    """The part of `path` that is a list and is followed by an item number (`languages` in
    `{{languages.0}}`, `customer.orders` in `{{customer.orders.0.id}}`), or None."""
    rest = path[1:]
    if variable.type is VariableType.LIST:
        return variable.name if rest[0].isdigit() else None
    root = index.schemas.get(variable.schema or "")
    if variable.type is not VariableType.OBJECT or root is None:
        return None
    node: Any = root
    walked = variable.name
    for segment in rest:
        node = follow_refs(root, node)
        if not isinstance(node, dict):
            return None
        is_array = "array" in schema_types(node) or "items" in node or "prefixItems" in node
        if segment.isdigit() and is_array:
            return walked
        properties = node.get("properties")
        if not isinstance(properties, dict) or segment not in properties:
            return None
        node = properties[segment]
        walked = f"{walked}.{segment}"
    return None
