"""What the designer page shows beside the editor: the compiled preview and variable usage."""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.urls import reverse
from django.utils.text import capfirst
from django.utils.translation import gettext as _

from agents import i18n, selectors, services
from agents.core import form_text, limits, lint, rules
from agents.core import types as core_types
from agents.core.diagnostics import Diagnostic
from agents.core.parse import TokenKind, parse
from agents.core.spec import AppSpec
from agents.core.usage import UseKind, variable_uses
from agents.i18n import localize
from agents.models import Agent, AgentApp, CallbackKind, Tool

CHANNELS = rules.CHANNELS
MODALITIES = rules.MODALITIES


@dataclass
class SessionValue:
    name: str
    type_label: str
    default_text: str
    typed: str
    error: str = ""


# The editor's reference kinds and the compiled prompt's span kinds, by index in the data.
TOKEN_KINDS = {
    TokenKind.STATIC: 0,
    TokenKind.DYNAMIC: 1,
    TokenKind.TOOL: 2,
    TokenKind.AGENT: 3,
    TokenKind.IF: 4,
    TokenKind.ELIF: 4,
    TokenKind.ELSE: 4,
    TokenKind.ENDIF: 4,
}
SPAN_KINDS = {"static": 0, "dynamic": 1, "tool": 2, "agent": 3, "missing": 4, "undeclared": 5}
# The problems listed under the preview; all of them still reach the editor's squiggles.
LISTED_DIAGNOSTICS = 200
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def utf16_offsets(text: str) -> Callable[[int], int]:
    """Python counts code points, the browser UTF-16 units: the offset converter for `text`."""
    if len(text.encode("utf-16-le")) == 2 * len(text):
        return lambda offset: offset
    astral = [m.start() for m in _ASTRAL.finditer(text)]
    return lambda offset: offset + bisect.bisect_left(astral, offset)


@dataclass
class Preview:
    text: str
    diagnostics: list[Diagnostic]
    channel: str
    modality: str
    session_values: list[SessionValue]
    values_json: str
    values_json_error: str
    input_errors: list[str]  # refused values (pasted JSON), channel, modality
    completion: dict[str, Any]  # the editor's autocomplete (json_script)
    counts: dict[str, int] = field(default_factory=dict)
    instructions: str = ""
    spans: tuple[Any, ...] = ()
    code_targets: dict[str, tuple[str, str]] = field(default_factory=dict)

    @property
    def listed_diagnostics(self) -> list[tuple[Diagnostic, dict[str, str] | None]]:
        """The problems listed, each with where a click opens its code (a tool's Python at
        the problem's line) when it is in code rather than in the instructions."""
        listed = []
        for d in self.diagnostics[:LISTED_DIAGNOSTICS]:
            target = self.code_targets.get(d.field or "") if d.line else None
            link = None
            if target:
                url, element = target
                link = {"url": f"{url}?line={d.line}&column={d.column or 1}", "target": element}
            listed.append((d, link))
        return listed

    @property
    def unlisted_count(self) -> int:
        return max(0, len(self.diagnostics) - LISTED_DIAGNOSTICS)

    @property
    def data(self) -> dict[str, Any]:
        """What the browser needs to draw the preview and mark the editor (json_script
        "preview-data"): the compiled text with its spans, the instructions' reference
        tokens (the server's lexer; the browser has none) and the problems to underline.
        Offsets are UTF-16 and delta-encoded (gap from the previous end, length), so a
        1 MB text costs little more than itself."""
        to_js = utf16_offsets(self.text)
        names: dict[str, int] = {}
        spans: list[int] = []
        last = 0
        # A dynamic `{name}` of no declared variable is marked like an unresolved `{{name}}`.
        undeclared = {d.reference for d in self.diagnostics if d.code == "SC302"}
        for span in sorted(self.spans, key=lambda s: s.start):
            start, end = to_js(span.start), to_js(span.end)
            if start < last:
                continue
            kind = span.kind
            if kind == "dynamic" and span.name in undeclared:
                kind = "undeclared"
            spans += (start - last, end - start, SPAN_KINDS.get(kind, 4))
            spans.append(names.setdefault(span.name, len(names)))
            last = end
        in_js = utf16_offsets(self.instructions)
        tokens: list[int] = []
        last = 0
        for token in parse(self.instructions).tokens:
            kind = TOKEN_KINDS.get(token.kind)
            if kind is None:
                continue
            start, end = in_js(token.start), in_js(token.end)
            tokens += (start - last, end - start, kind)
            last = end
        return {
            "text": self.text,
            "spans": spans,
            "names": list(names),
            "tokens": tokens,
            "squiggles": self.squiggles,
        }

    @property
    def squiggles(self) -> list[dict[str, Any]]:
        """Where the editor underlines a problem (json_script): the ones with a position."""
        to_js = utf16_offsets(self.instructions)
        return [
            {
                "from": to_js(d.start),
                "to": to_js(d.end if d.end is not None else d.start),
                "severity": str(d.severity),
                "message": localize(d.message),
                "code": d.code,
            }
            for d in self.diagnostics
            if d.start is not None
        ]


def _typed_values(
    spec: AppSpec, params: Mapping[str, Any]
) -> tuple[dict[str, Any], list[SessionValue], str, str]:
    """The request's session values, typed: a pasted JSON object, then per-variable fields
    (later wins). Text that cannot be read is reported here; whether a value fits its
    variable is the preview use case's check (the same as the API's)."""
    values: dict[str, Any] = {}
    rows: list[SessionValue] = []
    values_json = params.get("values_json", "") or ""
    json_error = ""
    if values_json.strip():
        try:
            pasted = limits.loads_json(values_json)
        except json.JSONDecodeError as exc:
            json_error = capfirst(localize(form_text.json_error_message(exc)))
        else:
            if isinstance(pasted, dict):
                values.update(pasted)
            else:
                json_error = _('Paste one JSON object: {"variable_name": value}.')
    schemas = {s.name: s.schema for s in spec.schemas}
    for variable in spec.variables:
        typed = params.get(f"value__{variable.name}", "") or ""
        default_text = form_text.format_form_value(
            variable.default, variable.type, variable.item_type, decimal_comma=i18n.decimal_comma()
        )
        row = SessionValue(
            variable.name,
            core_types.type_label(variable.type, variable.item_type, variable.schema),
            default_text,
            typed,
        )
        if typed.strip():
            parsed = form_text.parse_form_value(
                typed,
                variable.type,
                item_type=variable.item_type,
                schema=schemas.get(variable.schema or ""),
                decimal_comma=i18n.decimal_comma(),
                grouping=i18n.number_grouping(),
            )
            if parsed.errors:
                row.error = "; ".join(localize(e) for e in parsed.errors)
            else:
                values[variable.name] = parsed.value
        rows.append(row)
    return values, rows, values_json, json_error


def completion_data(spec: AppSpec, agent_name: str | None) -> dict[str, Any]:
    agent = spec.agent(agent_name) if agent_name else None
    return {
        "variables": [
            {
                "name": v.name,
                "type": localize(core_types.type_label(v.type, v.item_type, v.schema)),
                "default": i18n.shown_value(v.default)[:60],
            }
            for v in spec.variables
        ],
        "tools": [t.name for t in spec.tools],
        "agentTools": list(agent.tools) if agent else [],
        "agents": [a.name for a in spec.agents],
    }


def build_preview(app: AgentApp, agent: Agent, params: Mapping[str, Any]) -> Preview:
    """The preview panel: the request parsed, the preview use case, the result shaped."""
    spec = selectors.app_spec(app)
    values, rows, values_json, json_error = _typed_values(spec, params)
    result = services.preview_agent(
        app=app,
        agent=agent,
        instructions=params.get("instructions"),
        values=values,
        channel=params.get("channel") or rules.SCENARIO_DEFAULTS["channel"],
        modality=params.get("modality") or rules.SCENARIO_DEFAULTS["modality"],
    )
    by_variable = {row.name: row for row in rows}
    code_targets: dict[str, tuple[str, str]] = {}
    if any(d.line and (d.field or "").startswith("agents.") for d in result.diagnostics):
        # The n-th callback of the agent in the spec is the n-th in the model's order.
        for index, pk in enumerate(agent.callbacks.values_list("pk", flat=True)):
            code_targets[f"agents.{agent.display_name}.callbacks.{index}.code"] = (
                reverse("callback-edit", args=[app.pk, agent.pk, pk]),
                f"#callback-{pk}",
            )
    if any(d.line and (d.field or "").startswith("tools.") for d in result.diagnostics):
        for name, pk in Tool.objects.filter(app=app).values_list("name", "pk"):
            code_targets[f"tools.{name}.python_code"] = (
                reverse("tool-edit", args=[app.pk, pk]),
                f"#tool-{pk}",
            )
    other_problems: list[str] = []
    for problem in result.input_problems:
        row = by_variable.get(problem.subject or "")
        if row is not None and not row.error and row.typed.strip():
            row.error = localize(problem.message)
        else:
            other_problems.append(localize(problem.message))
    return Preview(
        text=result.text,
        diagnostics=list(result.diagnostics),
        channel=result.channel,
        modality=result.modality,
        session_values=rows,
        values_json=values_json,
        values_json_error=json_error,
        input_errors=other_problems,
        completion=completion_data(spec, agent.display_name),
        counts=result.counts,
        instructions=result.instructions,
        spans=result.spans,
        code_targets=code_targets,
    )


def undeclared_name(diagnostic: Diagnostic) -> str:
    """The variable an "undeclared variable" diagnostic names, so the page offers to create it."""
    if diagnostic.code not in lint.UNDECLARED_VARIABLE_CODES:
        return ""
    return diagnostic.reference or ""


@dataclass
class VariableUsage:
    static: list[str] = field(default_factory=list)  # agent names, once per reference
    dynamic: list[str] = field(default_factory=list)
    conditions: list[str] = field(default_factory=list)
    writers: list[str] = field(
        default_factory=list
    )  # "tool LookupBalance", "before model callback of Root"
    headers: list[str] = field(default_factory=list)  # "Tool: Header" ($context.variables…)
    readers: list[str] = field(default_factory=list)  # code that reads it
    references: int | None = None  # set by `listed`: the count before the lists were merged

    @property
    def total(self) -> int:
        if self.references is not None:
            return self.references
        return (
            len(self.static)
            + len(self.dynamic)
            + len(self.conditions)
            + len(self.writers)
            + len(self.headers)
            + len(self.readers)
        )

    def listed(self) -> VariableUsage:
        """Each agent (or writer) once per list, with how often when more than once; the
        total still counts every reference."""

        def once(names: list[str]) -> list[str]:
            counts: dict[str, int] = {}
            for name in names:
                counts[name] = counts.get(name, 0) + 1
            return [name if n == 1 else f"{name} ({n}\u00d7)" for name, n in counts.items()]

        return VariableUsage(
            once(self.static),
            once(self.dynamic),
            once(self.conditions),
            once(self.writers),
            once(self.headers),
            once(self.readers),
            self.total,
        )


def usage_by_variable(app: AgentApp) -> dict[str, VariableUsage]:
    """Where each variable is referenced, and who reads or writes it: the core's one usage
    analysis (`agents.core.usage`, which lint's "never used" reads too) over the cached spec."""
    usage: dict[str, VariableUsage] = {}
    for name, uses in variable_uses(selectors.app_spec(app)).items():
        found = usage[name] = VariableUsage()
        for use in uses:
            if use.kind is UseKind.STATIC:
                found.static.append(use.owner)
            elif use.kind is UseKind.DYNAMIC:
                found.dynamic.append(use.owner)
            elif use.kind is UseKind.CONDITION:
                found.conditions.append(use.owner)
            elif use.kind is UseKind.CONTEXT:
                found.headers.append(f"{use.owner}: {use.detail}")
            else:
                who = _("tool %(name)s") % {"name": use.owner}
                if use.callback is not None:
                    kind = str(CallbackKind(use.callback).label).lower()
                    who = f"{kind} callback of {use.owner}"
                (found.writers if use.kind is UseKind.WRITE else found.readers).append(who)
    return {name: found.listed() for name, found in usage.items()}


class StaleEdit(Exception):
    """An edit sent against a saved text that is no longer the one saved."""


def instructions_param(agent: Agent, params: Mapping[str, Any]) -> str | None:
    """The (unsaved) instructions a preview or a conversation is about.

    Either whole (`instructions`), or — what the editor sends while typing, so a key of a
    1 MB text does not post 1 MB — one edit of the saved text: `instructions_from` and
    `instructions_to` (UTF-16 offsets, as the browser counts) replaced by
    `instructions_insert`, against the text whose fingerprint is `base_hash`. A fingerprint
    that is not the saved text's raises StaleEdit (the editor then sends the whole text)."""
    if "instructions_insert" not in params:
        return params.get("instructions")
    if params.get("base_hash") != agent.instructions_hash:
        raise StaleEdit
    try:
        start, end = (
            int(params.get("instructions_from", "")),
            int(params.get("instructions_to", "")),
        )
    except ValueError as exc:
        raise StaleEdit from exc
    saved = agent.instructions.encode("utf-16-le")
    if not 0 <= start <= end <= len(saved) // 2:
        raise StaleEdit
    try:
        head = saved[: 2 * start].decode("utf-16-le")
        tail = saved[2 * end :].decode("utf-16-le")
    except UnicodeDecodeError as exc:  # an offset inside a surrogate pair
        raise StaleEdit from exc
    return head + params.get("instructions_insert", "") + tail


def with_edit_applied(agent: Agent, params: Any) -> Any:
    """`params` with the whole instructions in `instructions` (see instructions_param)."""
    if "instructions_insert" not in params:
        return params
    text = instructions_param(agent, params)
    fresh = params.copy()
    for key in ("instructions_from", "instructions_to", "instructions_insert"):
        fresh.pop(key, None)
    fresh["instructions"] = text
    return fresh
