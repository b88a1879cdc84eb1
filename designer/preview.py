"""What the designer page shows beside the editor: the compiled preview and variable usage."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from agents.core import code_analysis, lint
from agents.core import types as core_types
from agents.core.compile import compile_instructions
from agents.core.diagnostics import Diagnostic, Severity
from agents.core.parse import TokenKind, parse
from agents.core.render import render_value
from agents.core.spec import AppSpec
from agents.models import Agent, AgentApp

CHANNELS = ("web", "api", "telephony")
MODALITIES = ("text", "voice")


@dataclass
class SessionValue:
    name: str
    type_label: str
    default_text: str
    typed: str
    error: str = ""


@dataclass
class Preview:
    html: SafeString
    text: str
    diagnostics: list[Diagnostic]
    channel: str
    modality: str
    session_values: list[SessionValue]
    values_json: str
    values_json_error: str
    completion: dict[str, Any]  # the editor's autocomplete data (the page: json_script)
    counts: dict[str, int] = field(default_factory=dict)


def _session_values(
    spec: AppSpec, params: Mapping[str, Any]
) -> tuple[dict[str, Any], list[SessionValue], str, str]:
    """Defaults, then a pasted JSON object, then per-variable fields: later wins."""
    values = spec.default_values()
    rows: list[SessionValue] = []
    values_json = params.get("values_json", "") or ""
    json_error = ""
    if values_json.strip():
        try:
            pasted = json.loads(values_json)
        except json.JSONDecodeError as exc:
            json_error = f"Line {exc.lineno}, column {exc.colno}: {exc.msg}."
        else:
            if isinstance(pasted, dict):
                unknown = [k for k in pasted if spec.variable(k) is None]
                if unknown:
                    json_error = f"Not declared, ignored: {', '.join(sorted(unknown))}."
                values.update({k: v for k, v in pasted.items() if spec.variable(k) is not None})
            else:
                json_error = 'Paste one JSON object: {"variable_name": value}.'
    schemas = {s.name: s.schema for s in spec.schemas}
    for variable in spec.variables:
        typed = params.get(f"value__{variable.name}", "") or ""
        default_text = core_types.format_form_value(
            variable.default, variable.type, variable.item_type
        )
        row = SessionValue(
            variable.name,
            core_types.type_label(variable.type, variable.item_type, variable.schema),
            default_text,
            typed,
        )
        if typed.strip():
            parsed = core_types.parse_form_value(
                typed,
                variable.type,
                item_type=variable.item_type,
                schema=schemas.get(variable.schema or ""),
            )
            if parsed.errors:
                row.error = "; ".join(parsed.errors)
            else:
                values[variable.name] = parsed.value
        rows.append(row)
    return values, rows, values_json, json_error


def _render_compiled(text: str, spans: tuple[Any, ...]) -> SafeString:
    """Escape the compiled text and wrap each span: substituted values and kept references."""
    out: list[str] = []
    position = 0
    for span in sorted(spans, key=lambda s: s.start):
        if span.start < position:
            continue
        out.append(escape(text[position : span.start]))
        piece = escape(text[span.start : span.end])
        if span.kind == "static":
            out.append(
                f'<mark class="ref ref-static" title="from {{{{{escape(span.name)}}}}}" '
                f'data-ref="{escape(span.name)}">{piece}</mark>'
            )
        else:
            title = {
                "dynamic": "dynamic variable — its value arrives as a state update",
                "tool": "tool reference",
                "agent": "sub-agent reference",
                "missing": "no value: stays literally in the prompt",
            }.get(span.kind, span.kind)
            out.append(
                f'<span class="chip chip-{escape(span.kind)}" title="{title}" '
                f'data-ref="{escape(span.name)}">{piece}</span>'
            )
        position = span.end
    out.append(escape(text[position:]))
    return mark_safe("".join(out))


def completion_data(spec: AppSpec, agent_name: str | None) -> dict[str, Any]:
    agent = spec.agent(agent_name) if agent_name else None
    return {
        "variables": [
            {
                "name": v.name,
                "type": core_types.type_label(v.type, v.item_type, v.schema),
                "default": "" if v.default is None else render_value(v.default)[:60],
            }
            for v in spec.variables
        ],
        "tools": [t.name for t in spec.tools],
        "agentTools": list(agent.tools) if agent else [],
        "agents": [a.name for a in spec.agents],
    }


def build_preview(app: AgentApp, agent: Agent, params: Mapping[str, Any]) -> Preview:
    spec = app.to_spec()
    instructions = params.get("instructions")
    if instructions is None:
        instructions = agent.instructions
    channel = params.get("channel") if params.get("channel") in CHANNELS else "web"
    modality = params.get("modality") if params.get("modality") in MODALITIES else "text"
    values, rows, values_json, json_error = _session_values(spec, params)
    compiled = compile_instructions(instructions, values, channel=channel, modality=modality)
    diagnostics = lint.merge_diagnostics(
        _diagnostics_for(spec, agent.display_name, instructions),
        compiled.diagnostics,
    )
    counts = {str(s): sum(1 for d in diagnostics if d.severity is s) for s in Severity}
    return Preview(
        html=_render_compiled(compiled.text, compiled.spans),
        text=compiled.text,
        diagnostics=diagnostics,
        channel=channel,
        modality=modality,
        session_values=rows,
        values_json=values_json,
        values_json_error=json_error,
        completion=completion_data(spec, agent.display_name),
        counts=counts,
    )


_NAME_IN_BACKTICKS = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*)`")


def undeclared_name(diagnostic: Diagnostic) -> str:
    """The variable an "undeclared variable" diagnostic names, so the page offers to create it."""
    if diagnostic.code not in lint.UNDECLARED_VARIABLE_CODES:
        return ""
    match = _NAME_IN_BACKTICKS.search(diagnostic.message)
    return match.group(1) if match else ""


def _diagnostics_for(spec: AppSpec, agent_name: str, instructions: str) -> tuple[Diagnostic, ...]:
    """The app's problems with this agent's unsaved instructions, less other agents' own.

    One lint pass: the app-wide checks (unused variables, writes, schemas) need every
    agent's text anyway, and this agent's diagnostics come out of the same pass.
    """
    edited = replace(
        spec,
        agents=tuple(
            replace(a, instructions=instructions) if a.name == agent_name else a
            for a in spec.agents
        ),
    )
    own = f"agents.{agent_name}."
    return tuple(
        d
        for d in lint.lint_app(edited)
        if not (d.field or "").startswith("agents.") or (d.field or "").startswith(own)
    )


@dataclass
class VariableUsage:
    static: list[str] = field(default_factory=list)  # agent names, once per reference
    dynamic: list[str] = field(default_factory=list)
    conditions: list[str] = field(default_factory=list)
    writers: list[str] = field(
        default_factory=list
    )  # "tool LookupBalance", "callback before_model #0 of agent"
    headers: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return (
            len(self.static)
            + len(self.dynamic)
            + len(self.conditions)
            + len(self.writers)
            + len(self.headers)
        )


def usage_by_variable(app: AgentApp) -> dict[str, VariableUsage]:
    """Where each variable is referenced, and who writes it (from prefetched rows)."""
    usage: dict[str, VariableUsage] = {v.name: VariableUsage() for v in app.variables.all()}
    for agent in app.agents.all():
        for token in parse(agent.instructions).tokens:
            if token.kind is TokenKind.STATIC and token.path and token.path[0] in usage:
                usage[token.path[0]].static.append(agent.display_name)
            elif token.kind is TokenKind.DYNAMIC and token.name in usage:
                usage[token.name].dynamic.append(agent.display_name)
            elif token.kind in (TokenKind.IF, TokenKind.ELIF) and token.condition is not None:
                for path in token.condition.references:
                    if path and path[0] in usage:
                        usage[path[0]].conditions.append(agent.display_name)
        for callback in agent.callbacks.all():
            for write in code_analysis.analyze_code(callback.code).writes:
                if write.name in usage:
                    usage[write.name].writers.append(
                        f"{callback.get_kind_display().lower()} callback of {agent.display_name}"
                    )
    for tool in app.tools.all():
        writers = (
            {w.name for w in code_analysis.analyze_code(tool.python_code).writes}
            if tool.python_code
            else set()
        )
        if tool.mock_enabled:
            writers |= set((tool.mock_state or {}).keys())
        for name in writers:
            if name in usage:
                usage[name].writers.append(f"tool {tool.name}")
        for header, value in (tool.mcp_headers or {}).items():
            for name in usage:
                if f"$context.variables.{name}" in str(value):
                    usage[name].headers.append(f"{tool.name}: {header}")
    return usage
