"""Lint an app: every problem a designer can fix, with a position or a field (SPEC §3).

``lint_agent`` is what the live preview calls on every keystroke with the
unsaved instructions: it parses the text once and does a dictionary lookup per
reference; the analysis of tool and callback code is cached by code text
(``analyze_code``), so only instructions are re-read.

Diagnostics about instructions carry ``line``/``column``/``start``/``end`` and
``field="agents.<name>.instructions"``; the others carry a ``field`` such as
``variables.<name>.default``, ``tools.<name>.python_code`` (with the line and
column in the code), ``tools.<name>.mcp_headers.<Header>``. ``subject`` is the
agent, variable, tool or schema the diagnostic belongs to.

Codes: the SC3xx codes of ``CODES`` below, plus the codes of the checks lint
reuses unchanged — the syntax diagnostics of ``parse`` (SC1xx), value checks
of defaults and mock states by ``types.validate_value`` (SC2xx) and schema
checks by ``schemas.check_schema``.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from agents.core import codes, rules, safe_regex
from agents.core.code_analysis import (
    KIND_NULL,
    CodeAnalysis,
    StateWrite,
    analyze_code,
    context_refs,
)
from agents.core.diagnostics import Diagnostic, Message, Severity
from agents.core.parse import Lexeme, Scan, TokenKind, positions
from agents.core.schemas import check_schema
from agents.core.spec import AgentSpec, AppSpec, ToolKind, ToolSpec, VariableSpec, VariableType
from agents.core.types import is_missing, resolve_local_ref, validate_value
from agents.core.usage import unused_variables

__all__ = ["CODES", "lint_agent", "lint_app", "lint_edited_agent"]

CODES: dict[str, str] = codes.section("lint")

_SNAKE_CASE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*", re.ASCII)
_FUZZY_BUDGET = 50  # distinct unknown names per call that get a "did you mean"
_HTTP_METHODS = frozenset({"get", "put", "post", "delete", "options", "head", "patch", "trace"})
_SESSION_CONTEXT = "x-ces-session-context"
# The words below are `Message`s too: a page shows them in the reader's language.
_TYPE_WORDS = {
    VariableType.TEXT: Message("Text"),
    VariableType.NUMBER: Message("Number"),
    VariableType.BOOLEAN: Message("Yes/No"),
    VariableType.OBJECT: Message("Custom object"),
    VariableType.LIST: Message("List"),
}
_KIND_WORDS = {
    "number": Message("a number"),
    "text": Message("text"),
    "boolean": Message("a yes/no value"),
    "object": Message("an object"),
    "list": Message("a list"),
    "null": "None",
}
_SCALAR_SCHEMA_TYPES = frozenset({"string", "number", "integer", "boolean", "null"})
_SCHEMA_TYPE_WORDS = {
    "string": Message("text"),
    "number": Message("a number"),
    "integer": Message("a number"),
    "boolean": Message("a yes/no value"),
    "null": "null",
}
_CALLBACK_WORDS = {
    "before_agent": Message("before agent"),
    "after_agent": Message("after agent"),
    "before_model": Message("before model"),
    "after_model": Message("after model"),
    "before_tool": Message("before tool"),
    "after_tool": Message("after tool"),
}
_UNDECIDABLE_KEYWORDS = (
    "anyOf",
    "oneOf",
    "allOf",
    "if",
    "dependentSchemas",
    "$dynamicRef",
    "unevaluatedProperties",
)

E, W, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO
# Values CX Agent Studio fills in instructions itself, declared or not (its linter's
# INSTRUCTION_BUILTINS; it advises every agent to mention `{current_date}`).
CX_INSTRUCTION_BUILTINS = frozenset({"current_date"})


# ---------------------------------------------------------------------------
# What an app declares, looked up once per call


# A problem found in a brace group: (code, severity, message), plus the undeclared name it
# is about for SC301 to SC303 (the diagnostic's `reference`).
_Found = tuple[str, Severity, str] | tuple[str, Severity, str, str]


@dataclass(slots=True)
class _Writer:
    label: str  # "the tool LookupBalance", "the before model callback of Root"
    title: str  # the same at the start of a sentence: "The tool LookupBalance"
    field: str
    subject: str
    analysis: CodeAnalysis | None = None


@dataclass(slots=True)
class _Index:
    app: AppSpec
    variables: dict[str, VariableSpec]
    tools: dict[str, ToolSpec]
    agents: dict[str, AgentSpec]
    schemas: dict[str, dict[str, Any]]
    written_by: dict[str, list[str]]  # variable -> labels of what writes it
    _names: dict[str, _Names] = field(default_factory=dict)
    _suggestions: dict[tuple[str, str], str | None] = field(default_factory=dict)
    _fuzzy_left: int = _FUZZY_BUDGET

    def suggest(self, kind: str, name: str) -> str:
        """`` Did you mean `x`?`` for a near miss among declared names, else ``""``.

        Fuzzy matching costs a scan of the declared names, so it is done for the
        first `_FUZZY_BUDGET` distinct misses of a call only (a text full of
        unknown names must still lint quickly); after that only case is forgiven.
        """
        key = (kind, name)
        if key not in self._suggestions:
            names = self._names.get(kind)
            if names is None:
                source = {"variable": self.variables, "tool": self.tools}.get(kind, self.agents)
                names = self._names[kind] = _Names(source)
            self._fuzzy_left -= 1
            self._suggestions[key] = names.near(name, fuzzy=self._fuzzy_left >= 0)
        match = self._suggestions[key]
        return Message(" Did you mean `%(match)s`?", match=match) if match else ""


class _Names:
    """Declared names, ready for "did you mean" look-ups."""

    __slots__ = ("folded", "names")

    def __init__(self, names: Iterable[str]) -> None:
        self.names = list(names)
        self.folded: dict[str, str] = {}
        for name in reversed(self.names):  # the first declared wins
            self.folded[name.casefold()] = name

    def near(self, name: str, *, fuzzy: bool = True) -> str | None:
        same_but_case = self.folded.get(name.casefold())
        if same_but_case is not None or not fuzzy:
            return same_but_case
        matches = difflib.get_close_matches(name, self.names, n=1, cutoff=0.75)
        return matches[0] if matches else None


def _near_match(name: str, names: list[str]) -> str | None:
    return _Names(names).near(name)


def _callback_writers(agent: AgentSpec) -> Iterable[_Writer]:
    for index, callback in enumerate(agent.callbacks):
        kind = str(callback.kind)
        words = _CALLBACK_WORDS.get(kind, kind.replace("_", " "))
        yield _Writer(
            label=Message("the %(kind)s callback of %(agent)s", kind=words, agent=agent.name),
            title=Message("The %(kind)s callback of %(agent)s", kind=words, agent=agent.name),
            field=f"agents.{agent.name}.callbacks.{index}.code",
            subject=agent.name,
            analysis=analyze_code(callback.code, filename="<callback>"),
        )


def _tool_writer(tool: ToolSpec) -> _Writer:
    analysis = None
    if tool.kind is ToolKind.PYTHON:
        analysis = analyze_code(tool.python_code, filename=f"<tool {tool.name}>")
    return _Writer(
        label=Message("the tool %(name)s", name=tool.name),
        title=Message("The tool %(name)s", name=tool.name),
        field=f"tools.{tool.name}.python_code",
        subject=tool.name,
        analysis=analysis,
    )


def _index(app: AppSpec) -> _Index:
    variables: dict[str, VariableSpec] = {}
    for variable in app.variables:
        variables.setdefault(variable.name, variable)
    tools: dict[str, ToolSpec] = {}
    for tool in app.tools:
        tools.setdefault(tool.name, tool)
    agents: dict[str, AgentSpec] = {}
    for agent in app.agents:
        agents.setdefault(agent.name, agent)
    schemas = {s.name: s.schema for s in app.schemas if isinstance(s.schema, dict)}
    written_by: dict[str, list[str]] = {}

    def add(name: str, label: str) -> None:
        labels = written_by.setdefault(name, [])
        if label not in labels:
            labels.append(label)

    for tool in app.tools:
        writer = _tool_writer(tool)
        if writer.analysis is not None:
            for name in writer.analysis.written_names:
                add(name, writer.label)
        if tool.mock is not None and isinstance(tool.mock.state, dict):
            for name in tool.mock.state:
                add(str(name), writer.label)
    for agent in app.agents:
        for writer in _callback_writers(agent):
            assert writer.analysis is not None
            for name in writer.analysis.written_names:
                add(name, writer.label)
    return _Index(app, variables, tools, agents, schemas, written_by)


# ---------------------------------------------------------------------------
# Public entry points


def lint_app(app: AppSpec) -> tuple[Diagnostic, ...]:
    """Every diagnostic of the app: variables, schemas, tools, then each agent in turn."""
    index = _index(app)
    found: list[Diagnostic] = []
    found.extend(_lint_names(app))
    found.extend(_lint_variables(index))
    found.extend(_lint_schemas(app))
    for tool in app.tools:
        found.extend(_lint_tool(index, tool))
    if app.agents:
        roots = [a.name for a in app.agents if a.is_root]
        if not roots:
            found.append(
                Diagnostic(
                    "SC314",
                    W,
                    Message(
                        "The app has no root agent: mark the agent that starts each "
                        "conversation as root."
                    ),
                    field="agents",
                )
            )
        elif len(roots) > 1:
            found.append(
                Diagnostic(
                    "SC314",
                    E,
                    Message(
                        "The app has %(roots_count)s root agents (%(roots)s); only "
                        "one can start the conversation.",
                        roots_count=len(roots),
                        roots=", ".join(roots),
                    ),
                    field="agents",
                )
            )
    agent_found: list[Diagnostic] = []
    for agent in app.agents:
        agent_found.extend(_lint_agent(index, agent, agent.instructions))
    found.extend(_lint_unused(app))
    found.extend(agent_found)
    return tuple(found)


def lint_agent(
    app: AppSpec, agent_name: str, *, instructions: str | None = None
) -> tuple[Diagnostic, ...]:
    """Diagnostics of one agent: its instructions (or the unsaved `instructions`), tools, callbacks.

    App-wide problems (variables, schemas, tools, unused variables) are left to ``lint_app``.
    """
    index = _index(app)
    agent = index.agents.get(agent_name)
    if agent is None:
        return (
            Diagnostic(
                "SC313",
                E,
                Message(
                    "The app has no agent named %(agent_name)s.%(suggestion)s",
                    agent_name=repr(agent_name),
                    suggestion=index.suggest("agent", agent_name),
                ),
                field="agents",
                subject=agent_name,
            ),
        )
    text = agent.instructions if instructions is None else instructions
    return tuple(_lint_agent(index, agent, text))


def lint_edited_agent(app: AppSpec, agent_name: str, instructions: str) -> tuple[Diagnostic, ...]:
    """What the designer sees while editing one agent: the app's problems with this agent's
    unsaved `instructions`, less other agents' own (one lint pass over the edited app)."""
    edited = replace(
        app,
        agents=tuple(
            replace(a, instructions=instructions) if a.name == agent_name else a for a in app.agents
        ),
    )
    if edited.agent(agent_name) is None:
        return lint_agent(app, agent_name)
    own = f"agents.{agent_name}."
    return tuple(
        d
        for d in lint_app(edited)
        if not (d.field or "").startswith("agents.") or (d.field or "").startswith(own)
    )


# ---------------------------------------------------------------------------
# Instructions


def _lint_agent(index: _Index, agent: AgentSpec, text: str) -> list[Diagnostic]:
    """Diagnostics of one agent (who uses which variable is `agents.core.usage`'s).

    The instructions are scanned once with the parser's ``Scan`` (what ``parse``
    and ``compile_instructions`` share) rather than ``parse``: references repeat,
    so each distinct brace group is judged once, and positions are computed only
    for the groups that have a problem. Building a token per reference would cost
    several times the whole lint on a long text.
    """
    name = agent.name
    where = f"agents.{name}.instructions"
    scan = Scan(text if isinstance(text, str) else str(text))
    found: list[Diagnostic] = [
        dataclasses.replace(d, field=d.field or where, subject=d.subject or name)
        for d in scan.diagnostics()
    ]
    agent_tools = frozenset(agent.tools)
    mentioned: set[str] = set()
    problems_of: dict[str, tuple[_Found, ...]] = {}
    lexemes = scan.lexemes  # may be the parser's cache of every group ever seen
    for raw in set(scan.parts[1::2]):
        problems = _lexeme_problems(index, agent, agent_tools, lexemes[raw], mentioned)
        if problems:
            problems_of[raw] = problems
    if problems_of:
        parts, ends, demoted = scan.parts, scan.ends, scan.kinds
        hits: list[tuple[int, int, tuple[_Found, ...]]] = []
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
    for writer in _callback_writers(agent):
        found.extend(_lint_code(index, writer))
    return found


def _lexeme_problems(
    index: _Index,
    agent: AgentSpec,
    agent_tools: frozenset[str],
    lexeme: Lexeme,
    mentioned: set[str],
) -> tuple[_Found, ...]:
    """(code, severity, message) for one distinct brace group, wherever it is."""
    kind = lexeme.kind
    if kind is TokenKind.STATIC:
        return _static_problems(index, lexeme.path, in_condition=False)
    if kind is TokenKind.IF or kind is TokenKind.ELIF:
        if lexeme.condition is None:
            return ()  # parse reported it
        found: list[_Found] = []
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
    index: _Index, agent: AgentSpec, agent_tools: frozenset[str], kind: TokenKind, name: str
) -> _Found | None:
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
    index: _Index, path: tuple[str, ...], *, in_condition: bool
) -> tuple[_Found, ...]:
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
    problems: list[_Found] = []
    writers = index.written_by.get(first)
    if writers:
        who = _join(writers)
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
        problem = _path_problem(index, variable, path, shown)
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


def _indexed_list(index: _Index, variable: VariableSpec, path: tuple[str, ...]) -> str | None:
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
        node = _follow_refs(root, node)
        if not isinstance(node, dict):
            return None
        is_array = "array" in _schema_types(node) or "items" in node or "prefixItems" in node
        if segment.isdigit() and is_array:
            return walked
        properties = node.get("properties")
        if not isinstance(properties, dict) or segment not in properties:
            return None
        node = properties[segment]
        walked = f"{walked}.{segment}"
    return None


def _join(labels: list[str]) -> str:
    if len(labels) == 1:
        return labels[0]
    if len(labels) == 2:
        return Message("%(first)s and %(last)s", first=labels[0], last=labels[1])
    if len(labels) == 3:
        return Message(
            "%(first)s, %(second)s and %(last)s",
            first=labels[0],
            second=labels[1],
            last=labels[2],
        )
    return Message(
        "%(first)s, %(second)s and %(count)s more",
        first=labels[0],
        second=labels[1],
        count=len(labels) - 2,
    )


def _or(words: list[str]) -> str:
    """`a`, `a or b`, `a, b or c` (words the reader's language shows)."""
    if len(words) == 1:
        return words[0]
    if len(words) == 2:
        return Message("%(first)s or %(last)s", first=words[0], last=words[1])
    return Message("%(others)s or %(last)s", others=", ".join(words[:-1]), last=words[-1])


# ---------------------------------------------------------------------------
# Static paths into typed values


def _path_problem(
    index: _Index, variable: VariableSpec, path: tuple[str, ...], shown: str
) -> _Found | None:
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
                type_words=_TYPE_WORDS[vtype],
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
            words = _TYPE_WORDS[variable.item_type] if variable.item_type else Message("values")
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


def _schema_types(node: dict[str, Any]) -> set[str]:
    declared = node.get("type")
    if isinstance(declared, str):
        return {declared}
    if isinstance(declared, list):
        return {t for t in declared if isinstance(t, str)}
    return set()


def _follow_refs(root: dict[str, Any], node: Any) -> Any:
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
) -> _Found | None:
    node: Any = root
    for segment in segments:
        node = _follow_refs(root, node)
        if not isinstance(node, dict):
            return None  # `true`, an unresolvable $ref: nothing to say
        types = _schema_types(node)
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
        if types and types <= _SCALAR_SCHEMA_TYPES:
            words = _or(sorted({_SCHEMA_TYPE_WORDS[t] for t in types}))
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
        if any(keyword in node for keyword in _UNDECIDABLE_KEYWORDS):
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
            close = _near_match(segment, known)
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
        close = _near_match(segment, known)
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


# ---------------------------------------------------------------------------
# Declarations: names, variables, schemas


def _lint_names(app: AppSpec) -> Iterable[Diagnostic]:
    for collection, items in (
        ("variables", app.variables),
        ("tools", app.tools),
        ("agents", app.agents),
        ("schemas", app.schemas),
    ):
        seen: set[str] = set()
        reported: set[str] = set()
        for item in items:
            if item.name in seen and item.name not in reported:
                reported.add(item.name)
                yield Diagnostic(
                    "SC332",
                    E,
                    Message(
                        "Two %(collection)s are named `%(name)s`: names must be unique in an app.",
                        collection=collection,
                        name=item.name,
                    ),
                    field=f"{collection}.{item.name}.name",
                    subject=item.name,
                )
            seen.add(item.name)


def _lint_variables(index: _Index) -> Iterable[Diagnostic]:
    schemas = index.schemas
    for variable in index.app.variables:
        name = variable.name
        prefix = f"variables.{name}"
        if rules.name_problems(name):
            yield Diagnostic(
                "SC331",
                E,
                Message(
                    "`%(name)s` is not a valid variable name: use letters, digits "
                    "and underscores, not starting with a digit, at most "
                    "%(name_max_length)s characters.",
                    name=name,
                    name_max_length=rules.NAME_MAX_LENGTH,
                ),
                field=f"{prefix}.name",
                subject=name,
            )
        elif not _SNAKE_CASE.fullmatch(name):
            yield Diagnostic(
                "SC330",
                W,
                Message(
                    "`%(name)s` is not snake_case (the convention is `%(snake)s`).",
                    name=name,
                    snake=_snake(name),
                ),
                field=f"{prefix}.name",
                subject=name,
            )
        if not (variable.description or "").strip():
            yield Diagnostic(
                "SC333",
                W,
                Message(
                    "`%(name)s` has no description: CX Agent Studio requires one "
                    "on export, and the model reads it to understand the "
                    "variable.",
                    name=name,
                ),
                field=f"{prefix}.description",
                subject=name,
            )
        needs_schema = variable.type is VariableType.OBJECT or (
            variable.type is VariableType.LIST and variable.item_type is VariableType.OBJECT
        )
        if needs_schema and variable.schema not in schemas:
            what = Message("A list of objects")
            if variable.type is VariableType.OBJECT:
                what = Message("A custom object")
            if variable.schema:
                message = Message(
                    "`%(name)s` uses the schema `%(schema)s`, which the app does not have.",
                    name=name,
                    schema=variable.schema,
                )
            else:
                message = Message(
                    "%(what)s needs a schema: choose one for `%(name)s`.", what=what, name=name
                )
            yield Diagnostic("SC320", E, message, field=f"{prefix}.schema", subject=name)
        if variable.default is not None:
            for diagnostic in validate_value(variable.default, variable, schemas):
                if diagnostic.code != "SC206":  # SC320 above says it in lint's words
                    yield diagnostic


def _snake(name: str) -> str:
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name)
    snake = re.sub(r"_+", "_", spaced.lower()).strip("_")
    return snake or name.lower()


def _lint_schemas(app: AppSpec) -> Iterable[Diagnostic]:
    for schema in app.schemas:
        where = f"schemas.{schema.name}"
        for diagnostic in check_schema(schema.schema):
            inner = diagnostic.field
            yield dataclasses.replace(
                diagnostic,
                field=(f"{where}{inner}" if inner.startswith("#") else f"{where}.{inner}")
                if inner
                else where,
                subject=diagnostic.subject or schema.name,
            )


def _lint_unused(app: AppSpec) -> Iterable[Diagnostic]:
    for name in unused_variables(app):
        yield Diagnostic(
            "SC311",
            W,
            Message(
                "`%(name)s` is never used: no instructions reference it "
                "(`{{%(name)s}}`, `{%(name)s}` or in a condition), no tool "
                "reads or updates it.",
                name=name,
            ),
            field=f"variables.{name}",
            subject=name,
        )


# ---------------------------------------------------------------------------
# Tools and callbacks


def _lint_tool(index: _Index, tool: ToolSpec) -> Iterable[Diagnostic]:
    name = tool.name
    description = (tool.description or "").strip()
    if tool.kind is ToolKind.PYTHON:
        writer = _tool_writer(tool)
        analysis = writer.analysis
        assert analysis is not None
        if analysis.syntax_error is None and name not in analysis.functions:
            defined = ", ".join(f"`{f}`" for f in analysis.functions)
            found = Message(" (it defines %(defined)s)", defined=defined) if defined else ""
            yield Diagnostic(
                "SC350",
                E,
                Message(
                    "The code of %(name)s has no function named "
                    "`%(name)s`%(found)s: the runtime calls the function whose "
                    "name is the tool's name.",
                    name=name,
                    found=found,
                ),
                field=f"tools.{name}.python_code",
                subject=name,
            )
        if not description:
            description = (analysis.docstring_of(name) or "").strip()
        yield from _lint_code(index, writer)
    elif tool.kind is ToolKind.OPENAPI:
        yield from _lint_openapi(index, tool)
    elif tool.kind is ToolKind.MCP:
        yield from _lint_mcp(index, tool)
    elif tool.kind is ToolKind.PLATFORM and not description:
        description = rules.PLATFORM_TOOLS.get(name, "")
    if not description:
        hint = Message(" or a docstring") if tool.kind is ToolKind.PYTHON else ""
        yield Diagnostic(
            "SC334",
            W,
            Message(
                "The tool %(name)s has no description%(hint)s: the model "
                "reads it to decide when to call the tool, and CX Agent "
                "Studio expects one.",
                name=name,
                hint=hint,
            ),
            field=f"tools.{name}.description",
            subject=name,
        )
    if tool.mock is not None:
        yield from _lint_mock(index, tool)


def _lint_mock(index: _Index, tool: ToolSpec) -> Iterable[Diagnostic]:
    assert tool.mock is not None
    state = tool.mock.state
    if not isinstance(state, Mapping):
        return
    for key, value in state.items():
        where = f"tools.{tool.name}.mock.state.{key}"
        variable = index.variables.get(str(key))
        if variable is None:
            yield Diagnostic(
                "SC344",
                E,
                Message(
                    "The mock of %(name)s sets `%(key)s`, which the app does not "
                    "declare.%(suggestion)s",
                    name=tool.name,
                    key=key,
                    suggestion=index.suggest("variable", str(key)),
                ),
                field=where,
                subject=tool.name,
            )
            continue
        for diagnostic in validate_value(value, variable, index.schemas, field=where):
            if diagnostic.code != "SC206":
                yield dataclasses.replace(
                    diagnostic,
                    severity=E,
                    message=Message(
                        "The mock of %(name)s: %(message)s",
                        name=tool.name,
                        message=diagnostic.message,
                    ),
                    subject=tool.name,
                )


def _lint_code(index: _Index, writer: _Writer) -> Iterable[Diagnostic]:
    analysis = writer.analysis
    if analysis is None:
        return
    where, subject = writer.field, writer.subject
    label = writer.title
    if analysis.syntax_error is not None:
        yield dataclasses.replace(analysis.syntax_error, field=where, subject=subject)
        return
    variables = index.variables
    for read in analysis.reads:
        if read.name is None:
            continue
        if read.name not in variables:
            yield Diagnostic(
                "SC343",
                W,
                Message(
                    "%(label)s reads `%(name)s`, which the app does not declare.",
                    label=label,
                    name=read.name,
                ),
                read.line,
                read.column,
                field=where,
                subject=subject,
            )
    for write in analysis.writes:
        yield from _write_problems(index, write, label, where, subject)


def _write_problems(
    index: _Index, write: StateWrite, label: str, where: str, subject: str
) -> Iterable[Diagnostic]:
    def diagnostic(code: str, severity: Severity, message: str) -> Diagnostic:
        return Diagnostic(
            code, severity, message, write.line, write.column, field=where, subject=subject
        )

    name = write.name
    if name is None:
        verb = Message("removes") if write.removal else Message("updates")
        yield diagnostic(
            "SC342",
            INFO,
            Message(
                "%(label)s %(verb)s a variable whose name is computed: "
                "Statecraft can't check it. Use the name as text, e.g. "
                '`context.state["name"] = value`.',
                label=label,
                verb=verb,
            ),
        )
        return
    variable = index.variables.get(name)
    if variable is None:
        hint = index.suggest("variable", name)
        if write.removal:
            yield diagnostic(
                "SC343",
                W,
                Message(
                    "%(label)s removes `%(name)s`, which the app does not declare.%(hint)s",
                    label=label,
                    name=name,
                    hint=hint,
                ),
            )
        else:
            yield diagnostic(
                "SC340",
                INFO,
                Message(
                    "%(label)s writes `%(name)s`, which no variable declares: the "
                    "session keeps it as the runtime does (code's own key), but "
                    "the model is not shown it and it is not exported; declare it "
                    "to make it a variable.%(hint)s",
                    label=label,
                    name=name,
                    hint=hint,
                ),
            )
        return
    if write.removal:
        return
    if write.literal:
        problems = validate_value(write.value, variable, index.schemas, field=where)
        problems = tuple(p for p in problems if p.code != "SC206")
        if problems:
            yield diagnostic(
                "SC341",
                W,
                Message(
                    "%(label)s sets `%(name)s` to %(shown)s, which does not fit it: %(message)s",
                    label=label,
                    name=name,
                    shown=_shown(write.value),
                    message=problems[0].message,
                ),
            )
        return
    kind = write.value_kind
    if kind is None or kind == KIND_NULL or kind == variable.type.value:
        return
    yield diagnostic(
        "SC341",
        W,
        Message(
            "%(label)s sets `%(name)s` to %(get)s, but `%(name)s` is %(type_words)s.",
            label=label,
            name=name,
            get=_KIND_WORDS.get(kind, kind),
            type_words=_TYPE_WORDS[variable.type],
        ),
    )


def _shown(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _context_problems(index: _Index, text: str, tool: str, where: str) -> Iterable[Diagnostic]:
    for ref in context_refs(text):
        if ref.all_variables or ref.builtin:
            continue
        variable = ref.variable
        if variable is not None:
            if variable not in index.variables:
                yield Diagnostic(
                    "SC361",
                    E,
                    Message(
                        "`%(raw)s` in %(tool)s: the app has no variable "
                        "`%(variable)s`.%(suggestion)s",
                        raw=ref.raw,
                        tool=tool,
                        variable=variable,
                        suggestion=index.suggest("variable", variable),
                    ),
                    start=ref.start,
                    end=ref.end,
                    field=where,
                    subject=tool,
                )
            continue
        shown = ref.raw if ref.path else Message("`$context` alone")
        close = _near_match(ref.path[0], sorted(_BUILTINS)) if ref.path else None
        hint = Message(" Did you mean `%(match)s`?", match=f"$context.{close}") if close else ""
        yield Diagnostic(
            "SC360",
            E,
            Message(
                "`%(shown)s` in %(tool)s is not a built-in: use "
                "$context.project_id, project_number, location, app_id, "
                "session_id, turn_index, variables or "
                "variables.<name>.%(hint)s",
                shown=shown,
                tool=tool,
                hint=hint,
            ),
            start=ref.start,
            end=ref.end,
            field=where,
            subject=tool,
        )


_BUILTINS = (
    "project_id",
    "project_number",
    "location",
    "app_id",
    "session_id",
    "turn_index",
    "variables",
)


def _lint_openapi(index: _Index, tool: ToolSpec) -> Iterable[Diagnostic]:
    name = tool.name
    document = tool.openapi
    prefix = f"tools.{name}.openapi"
    if not isinstance(document, dict) or not document:
        yield Diagnostic(
            "SC352",
            E,
            Message("The OpenAPI tool %(name)s has no OpenAPI document.", name=name),
            field=prefix,
            subject=name,
        )
        return
    paths = document.get("paths")
    operations = 0
    if isinstance(paths, dict):
        for item in paths.values():
            if isinstance(item, dict):
                operations += sum(1 for key in item if str(key).lower() in _HTTP_METHODS)
    if operations != 1:
        yield Diagnostic(
            "SC352",
            E,
            Message(
                "The OpenAPI document of %(name)s has %(operations)s "
                "operations; a tool needs exactly one.",
                name=name,
                operations=operations,
            ),
            field=f"{prefix}.paths",
            subject=name,
        )
    # Walk every string of the document (iteratively: documents can be deep).
    stack: list[tuple[Any, str]] = [(document, prefix)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, dict):
            if _SESSION_CONTEXT in node:
                yield from _session_context_problems(node, name, where)
            for key, value in reversed(list(node.items())):
                stack.append((value, f"{where}.{key}"))
        elif isinstance(node, list):
            for position in range(len(node) - 1, -1, -1):
                stack.append((node[position], f"{where}.{position}"))
        elif isinstance(node, str) and "$context" in node:
            yield from _context_problems(index, node, name, where)


def _session_context_problems(
    parameter: dict[str, Any], tool: str, where: str
) -> Iterable[Diagnostic]:
    value = parameter[_SESSION_CONTEXT]
    location = parameter.get("in")
    field_name = f"{where}.{_SESSION_CONTEXT}"
    if not isinstance(value, str) or not context_refs(value):
        yield Diagnostic(
            "SC362",
            W,
            Message(
                "In %(tool)s, `%(session_context)s` should be a built-in like "
                "`$context.session_id`, not %(value)s.",
                tool=tool,
                session_context=_SESSION_CONTEXT,
                value=repr(value),
            ),
            field=field_name,
            subject=tool,
        )
    if location is not None and location not in ("header", "query"):
        yield Diagnostic(
            "SC362",
            W,
            Message(
                "In %(tool)s, the parameter `%(get)s` is in the %(location)s: "
                "only header and query parameters can take a session value.",
                tool=tool,
                get=parameter.get("name", "?"),
                location=location,
            ),
            field=field_name,
            subject=tool,
        )


def _lint_mcp(index: _Index, tool: ToolSpec) -> Iterable[Diagnostic]:
    name = tool.name
    if not (tool.mcp_url or "").strip():
        yield Diagnostic(
            "SC353",
            E,
            Message("The MCP tool %(name)s has no server URL.", name=name),
            field=f"tools.{name}.mcp_url",
            subject=name,
        )
    for header, value in tool.mcp_headers:
        where = f"tools.{name}.mcp_headers.{header}"
        yield from _context_problems(index, value, name, where)


UNDECLARED_VARIABLE_CODES = frozenset({"SC301", "SC302", "SC303"})
# Paths in instructions that CX Agent Studio cannot resolve (its linter's V104): a part the
# schema does not declare, a part of something that is not an object, an index into a list.
# The CX export reports them as errors.
CX_REJECTED_PATH_CODES = frozenset({"SC321", "SC322", "SC323", "SC324"})
_SEVERITY_ORDER = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}


def merge_diagnostics(*groups: Iterable[Diagnostic]) -> list[Diagnostic]:
    """Lint's and the compiler's diagnostics as one list for a designer: each problem
    once, an undeclared variable not also reported as valueless, worst first, then by
    position."""
    seen: set[tuple[Any, ...]] = set()
    merged: list[Diagnostic] = []
    for group in groups:
        for d in group:
            key = (d.code, d.start, d.end, d.message)
            if key not in seen:
                seen.add(key)
                merged.append(d)
    undeclared_at = {d.start for d in merged if d.code in UNDECLARED_VARIABLE_CODES}
    undeclared = {(d.start, d.reference) for d in merged if d.code in UNDECLARED_VARIABLE_CODES}
    merged = [
        d
        for d in merged
        if not (d.code == "SC120" and d.start in undeclared_at)
        and not (d.code == "SC122" and (d.start, d.reference) in undeclared)
    ]
    merged.sort(key=lambda d: (_SEVERITY_ORDER[d.severity], d.line or 10**9, d.column or 0))
    return merged
