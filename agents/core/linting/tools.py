"""Lint of tools and code: Python tools and callback code (reads and writes of the state),
mocks, OpenAPI documents and MCP headers with their ``$context`` references.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from agents.core import rules
from agents.core.code_analysis import KIND_NULL, StateWrite, context_refs
from agents.core.diagnostics import Diagnostic, Message, Severity
from agents.core.linting.index import (
    HTTP_METHODS,
    INFO,
    KIND_WORDS,
    SESSION_CONTEXT,
    TYPE_WORDS,
    E,
    Index,
    W,
    Writer,
    near_match,
    tool_writer,
)
from agents.core.spec import ToolKind, ToolSpec
from agents.core.types import validate_value


def lint_tool(index: Index, tool: ToolSpec) -> Iterable[Diagnostic]:
    name = tool.name
    description = (tool.description or "").strip()
    if tool.kind is ToolKind.PYTHON:
        writer = tool_writer(tool)
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
        yield from lint_code(index, writer)
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


def _lint_mock(index: Index, tool: ToolSpec) -> Iterable[Diagnostic]:
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


def lint_code(index: Index, writer: Writer) -> Iterable[Diagnostic]:
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
    index: Index, write: StateWrite, label: str, where: str, subject: str
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
            get=KIND_WORDS.get(kind, kind),
            type_words=TYPE_WORDS[variable.type],
        ),
    )


def _shown(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _context_problems(index: Index, text: str, tool: str, where: str) -> Iterable[Diagnostic]:
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
        close = near_match(ref.path[0], sorted(_BUILTINS)) if ref.path else None
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


def _lint_openapi(index: Index, tool: ToolSpec) -> Iterable[Diagnostic]:
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
                operations += sum(1 for key in item if str(key).lower() in HTTP_METHODS)
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
            if SESSION_CONTEXT in node:
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
    value = parameter[SESSION_CONTEXT]
    location = parameter.get("in")
    field_name = f"{where}.{SESSION_CONTEXT}"
    if not isinstance(value, str) or not context_refs(value):
        yield Diagnostic(
            "SC362",
            W,
            Message(
                "In %(tool)s, `%(session_context)s` should be a built-in like "
                "`$context.session_id`, not %(value)s.",
                tool=tool,
                session_context=SESSION_CONTEXT,
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


def _lint_mcp(index: Index, tool: ToolSpec) -> Iterable[Diagnostic]:
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
