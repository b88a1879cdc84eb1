"""What lint looks up once per call: the app's declarations by name, who writes each variable,
"did you mean" suggestions, and the words messages use.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from agents.core.code_analysis import CodeAnalysis, analyze_code
from agents.core.diagnostics import Message, Severity
from agents.core.spec import AgentSpec, AppSpec, ToolKind, ToolSpec, VariableSpec, VariableType

SNAKE_CASE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*", re.ASCII)
FUZZY_BUDGET = 50  # distinct unknown names per call that get a "did you mean"
HTTP_METHODS = frozenset({"get", "put", "post", "delete", "options", "head", "patch", "trace"})
SESSION_CONTEXT = "x-ces-session-context"
# The words below are `Message`s too: a page shows them in the reader's language.
TYPE_WORDS = {
    VariableType.TEXT: Message("Text"),
    VariableType.NUMBER: Message("Number"),
    VariableType.BOOLEAN: Message("Yes/No"),
    VariableType.OBJECT: Message("Custom object"),
    VariableType.LIST: Message("List"),
}
KIND_WORDS = {
    "number": Message("a number"),
    "text": Message("text"),
    "boolean": Message("a yes/no value"),
    "object": Message("an object"),
    "list": Message("a list"),
    "null": "None",
}
SCALAR_SCHEMA_TYPES = frozenset({"string", "number", "integer", "boolean", "null"})
SCHEMA_TYPE_WORDS = {
    "string": Message("text"),
    "number": Message("a number"),
    "integer": Message("a number"),
    "boolean": Message("a yes/no value"),
    "null": "null",
}
CALLBACK_WORDS = {
    "before_agent": Message("before agent"),
    "after_agent": Message("after agent"),
    "before_model": Message("before model"),
    "after_model": Message("after model"),
    "before_tool": Message("before tool"),
    "after_tool": Message("after tool"),
}
UNDECIDABLE_KEYWORDS = (
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
Found = tuple[str, Severity, str] | tuple[str, Severity, str, str]


@dataclass(slots=True)
class Writer:
    label: str  # "the tool LookupBalance", "the before model callback of Root"
    title: str  # the same at the start of a sentence: "The tool LookupBalance"
    field: str
    subject: str
    analysis: CodeAnalysis | None = None


@dataclass(slots=True)
class Index:
    app: AppSpec
    variables: dict[str, VariableSpec]
    tools: dict[str, ToolSpec]
    agents: dict[str, AgentSpec]
    schemas: dict[str, dict[str, Any]]
    written_by: dict[str, list[str]]  # variable -> labels of what writes it
    _names: dict[str, Names] = field(default_factory=dict)
    _suggestions: dict[tuple[str, str], str | None] = field(default_factory=dict)
    _fuzzy_left: int = FUZZY_BUDGET

    def suggest(self, kind: str, name: str) -> str:
        """`` Did you mean `x`?`` for a near miss among declared names, else ``""``.

        Fuzzy matching costs a scan of the declared names, so it is done for the
        first `FUZZY_BUDGET` distinct misses of a call only (a text full of
        unknown names must still lint quickly); after that only case is forgiven.
        """
        key = (kind, name)
        if key not in self._suggestions:
            names = self._names.get(kind)
            if names is None:
                source = {"variable": self.variables, "tool": self.tools}.get(kind, self.agents)
                names = self._names[kind] = Names(source)
            self._fuzzy_left -= 1
            self._suggestions[key] = names.near(name, fuzzy=self._fuzzy_left >= 0)
        match = self._suggestions[key]
        return Message(" Did you mean `%(match)s`?", match=match) if match else ""


class Names:
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


def near_match(name: str, names: list[str]) -> str | None:
    return Names(names).near(name)


def callback_writers(agent: AgentSpec) -> Iterable[Writer]:
    for index, callback in enumerate(agent.callbacks):
        kind = str(callback.kind)
        words = CALLBACK_WORDS.get(kind, kind.replace("_", " "))
        yield Writer(
            label=Message("the %(kind)s callback of %(agent)s", kind=words, agent=agent.name),
            title=Message("The %(kind)s callback of %(agent)s", kind=words, agent=agent.name),
            field=f"agents.{agent.name}.callbacks.{index}.code",
            subject=agent.name,
            analysis=analyze_code(callback.code, filename="<callback>"),
        )


def tool_writer(tool: ToolSpec) -> Writer:
    analysis = None
    if tool.kind is ToolKind.PYTHON:
        analysis = analyze_code(tool.python_code, filename=f"<tool {tool.name}>")
    return Writer(
        label=Message("the tool %(name)s", name=tool.name),
        title=Message("The tool %(name)s", name=tool.name),
        field=f"tools.{tool.name}.python_code",
        subject=tool.name,
        analysis=analysis,
    )


def build_index(app: AppSpec) -> Index:
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
        writer = tool_writer(tool)
        if writer.analysis is not None:
            for name in writer.analysis.written_names:
                add(name, writer.label)
        if tool.mock is not None and isinstance(tool.mock.state, dict):
            for name in tool.mock.state:
                add(str(name), writer.label)
    for agent in app.agents:
        for writer in callback_writers(agent):
            assert writer.analysis is not None
            for name in writer.analysis.written_names:
                add(name, writer.label)
    return Index(app, variables, tools, agents, schemas, written_by)


def join_labels(labels: list[str]) -> str:
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


def either(words: list[str]) -> str:
    """`a`, `a or b`, `a, b or c` (words the reader's language shows)."""
    if len(words) == 1:
        return words[0]
    if len(words) == 2:
        return Message("%(first)s or %(last)s", first=words[0], last=words[1])
    return Message("%(others)s or %(last)s", others=", ".join(words[:-1]), last=words[-1])
