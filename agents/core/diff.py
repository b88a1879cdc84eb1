"""The three-layer diff of two versions of an app: declarations, instruction text, compiled prompt.

``diff_apps(before, after)`` compares two ``AppSpec`` values (with their
scenarios) and returns an ``AppDiff`` of frozen dataclasses:

1. ``declarations`` — schemas, variables, tools, agents and scenarios (and the
   app's own name and description) added, removed, renamed or changed, field by
   field (``type``, ``default``, ``description``, a schema keyword such as
   ``json_schema/properties/age/minimum``, a tool's ``python_code`` as a line
   diff). A rename is recognised when an object disappears and another of the
   same kind appears that is identical but for its name (a tool's Python
   function is renamed with the tool, so ``def old_name`` counts as equal).
   Links to a renamed object (a variable's schema, an agent's tools and
   sub-agents, a scenario's agent) are compared through the rename, so a
   rename is one change, not one per reference.
2. ``instructions`` — a line diff (difflib) of each agent's instructions.
3. ``prompts`` — each agent's instructions compiled with the same session
   values on both sides (each side's defaults, overridden by ``values``), with
   the same channel and modality: what the model would receive, before and
   after. A changed default changes the prompt without changing the text.
   ``scenarios`` — when a ``run_code`` is given (or no scenario needs code),
   each scenario present on both sides is simulated on both, and the change in
   its state updates, final state and step errors is reported.

Pure and deterministic: no Django, no I/O (code runs only through ``run_code``).
"""

from __future__ import annotations

import bisect
import difflib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from agents.core.compile import compile_instructions
from agents.core.diagnostics import Severity
from agents.core.script import format_script
from agents.core.simulate import CodeRunner, SimulationResult, simulate
from agents.core.spec import (
    AgentSpec,
    AppSpec,
    ScenarioSpec,
    SchemaSpec,
    ToolSpec,
    VariableSpec,
)

# Simulates one scenario against one side (the default: `simulate` with `run_code`).
Simulator = Callable[[AppSpec, ScenarioSpec], SimulationResult]

__all__ = [
    "AppDiff",
    "DeclarationChange",
    "DiffLine",
    "FieldChange",
    "InstructionDiff",
    "PromptDiff",
    "ScenarioResultChange",
    "TextDiff",
    "diff_apps",
    "line_diff",
]

Change = Literal["added", "removed", "renamed", "changed"]
LineKind = Literal["same", "added", "removed", "gap"]
DEFAULT_CONTEXT = 3


# ---------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class DiffLine:
    """One line of a line diff; `gap` stands for unchanged lines left out."""

    kind: LineKind
    text: str
    before_line: int | None = None  # 1-based
    after_line: int | None = None


@dataclass(frozen=True, slots=True)
class TextDiff:
    lines: tuple[DiffLine, ...] = ()
    added: int = 0
    removed: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed)


@dataclass(frozen=True, slots=True)
class FieldChange:
    """A field that differs: its value before and after as text (None: absent).

    Multi-line text (code, steps) also comes as a line diff in `lines`.
    """

    field: str
    before: str | None
    after: str | None
    lines: TextDiff | None = None


@dataclass(frozen=True, slots=True)
class DeclarationChange:
    kind: Literal["app", "schema", "variable", "tool", "agent", "scenario"]
    change: Change
    name: str  # the name after (before, for a removal)
    old_name: str | None = None  # a rename: the name before
    fields: tuple[FieldChange, ...] = ()


@dataclass(frozen=True, slots=True)
class InstructionDiff:
    agent: str
    old_agent: str | None
    change: Change
    diff: TextDiff


@dataclass(frozen=True, slots=True)
class PromptDiff:
    """An agent's compiled prompt before and after (empty text: the agent is not there)."""

    agent: str
    old_agent: str | None
    before: str
    after: str
    diff: TextDiff

    @property
    def changed(self) -> bool:
        return self.before != self.after

    @property
    def size(self) -> int:
        """Characters of both prompts together."""
        return len(self.before) + len(self.after)


@dataclass(frozen=True, slots=True)
class ScenarioResultChange:
    """What a scenario's simulation does differently between the two versions."""

    agent: str
    scenario: str
    change: Literal["added", "removed", "changed", "same"]
    final_state: tuple[FieldChange, ...] = ()
    updates_before: tuple[str, ...] = ()
    updates_after: tuple[str, ...] = ()
    errors_before: tuple[str, ...] = ()
    errors_after: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class AppDiff:
    declarations: tuple[DeclarationChange, ...]
    instructions: tuple[InstructionDiff, ...]
    prompts: tuple[PromptDiff, ...]
    scenarios: tuple[ScenarioResultChange, ...]

    @property
    def changed_prompts(self) -> tuple[PromptDiff, ...]:
        return tuple(p for p in self.prompts if p.changed)

    @property
    def changed_scenarios(self) -> tuple[ScenarioResultChange, ...]:
        return tuple(s for s in self.scenarios if s.change != "same")

    @property
    def is_empty(self) -> bool:
        return not (
            self.declarations or self.instructions or self.changed_prompts or self.changed_scenarios
        )


# ---------------------------------------------------------------- line diff


Opcode = tuple[str, int, int, int, int]


def _anchors(a: Sequence[str], b: Sequence[str]) -> list[tuple[int, int]]:
    """Lines found exactly once in each text, kept in the order both agree on (patience diff).

    The longest increasing run of their positions in `b` (by patience sorting)."""
    seen_a: dict[str, int] = {}
    for i, line in enumerate(a):
        seen_a[line] = -1 if line in seen_a else i
    seen_b: dict[str, int] = {}
    for j, line in enumerate(b):
        seen_b[line] = -1 if line in seen_b else j
    pairs = [
        (i, seen_b[line]) for line, i in seen_a.items() if i >= 0 and seen_b.get(line, -1) >= 0
    ]
    pairs.sort()
    tails: list[int] = []  # tails[k]: index in `pairs` ending the best run of length k + 1
    previous: list[int] = [-1] * len(pairs)
    tail_values: list[int] = []
    for index, (_, j) in enumerate(pairs):
        k = bisect.bisect_left(tail_values, j)
        if k:
            previous[index] = tails[k - 1]
        if k == len(tails):
            tails.append(index)
            tail_values.append(j)
        else:
            tails[k] = index
            tail_values[k] = j
    run: list[tuple[int, int]] = []
    index = tails[-1] if tails else -1
    while index >= 0:
        run.append(pairs[index])
        index = previous[index]
    run.reverse()
    return run


def _opcodes(a: Sequence[str], b: Sequence[str]) -> list[Opcode]:
    """difflib's opcodes, anchored on lines unique to both texts first (fast on big texts).

    Between two anchors difflib's SequenceMatcher does the work on a few lines only."""
    codes: list[Opcode] = []

    def equal(i1: int, i2: int, j1: int, j2: int) -> None:
        if codes and codes[-1][0] == "equal" and codes[-1][2] == i1:
            codes[-1] = ("equal", codes[-1][1], i2, codes[-1][3], j2)
        else:
            codes.append(("equal", i1, i2, j1, j2))

    def gap(i1: int, i2: int, j1: int, j2: int) -> None:
        if i1 == i2 and j1 == j2:
            return
        if i1 == i2 or j1 == j2:
            codes.append(("insert" if i1 == i2 else "delete", i1, i2, j1, j2))
            return
        matcher = difflib.SequenceMatcher(None, a[i1:i2], b[j1:j2], autojunk=False)
        for tag, x1, x2, y1, y2 in matcher.get_opcodes():
            if tag == "equal":
                equal(x1 + i1, x2 + i1, y1 + j1, y2 + j1)
            else:
                codes.append((tag, x1 + i1, x2 + i1, y1 + j1, y2 + j1))

    head = 0
    limit = min(len(a), len(b))
    while head < limit and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < limit - head and a[len(a) - 1 - tail] == b[len(b) - 1 - tail]:
        tail += 1
    if head:
        equal(0, head, 0, head)
    i, j = head, head
    for anchor_i, anchor_j in _anchors(a[head : len(a) - tail], b[head : len(b) - tail]):
        anchor_i, anchor_j = anchor_i + head, anchor_j + head
        gap(i, anchor_i, j, anchor_j)
        equal(anchor_i, anchor_i + 1, anchor_j, anchor_j + 1)
        i, j = anchor_i + 1, anchor_j + 1
    gap(i, len(a) - tail, j, len(b) - tail)
    if tail:
        equal(len(a) - tail, len(a), len(b) - tail, len(b))
    return codes


def _grouped(codes: list[Opcode], context: int) -> list[list[Opcode]]:
    """Hunks of changes with `context` unchanged lines around them (as difflib groups them)."""
    codes = [c for c in codes if c[1] != c[2] or c[3] != c[4]]
    if not codes:
        return []
    if codes[0][0] == "equal":
        _, i1, i2, j1, j2 = codes[0]
        codes[0] = ("equal", max(i1, i2 - context), i2, max(j1, j2 - context), j2)
    if codes[-1][0] == "equal":
        _, i1, i2, j1, j2 = codes[-1]
        codes[-1] = ("equal", i1, min(i2, i1 + context), j1, min(j2, j1 + context))
    groups: list[list[Opcode]] = []
    group: list[Opcode] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > 2 * context:
            group.append((tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context)))
            groups.append(group)
            group = []
            i1, j1 = max(i1, i2 - context), max(j1, j2 - context)
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        groups.append(group)
    return groups


def line_diff(before: str, after: str, *, context: int = DEFAULT_CONTEXT) -> TextDiff:
    """The lines of `before` and `after` that differ, with `context` lines around each hunk."""
    if before == after:
        return TextDiff()
    a, b = before.splitlines(), after.splitlines()
    lines: list[DiffLine] = []
    added = removed = 0
    for number, group in enumerate(_grouped(_opcodes(a, b), context)):
        first = group[0]
        if number or first[1] > 0 or first[3] > 0:
            lines.append(DiffLine("gap", "", first[1] + 1, first[3] + 1))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines.extend(
                    DiffLine("same", a[i], i + 1, j1 + (i - i1) + 1) for i in range(i1, i2)
                )
                continue
            lines.extend(DiffLine("removed", a[i], i + 1, None) for i in range(i1, i2))
            lines.extend(DiffLine("added", b[j], None, j + 1) for j in range(j1, j2))
            removed += i2 - i1
            added += j2 - j1
    if not added and not removed:
        # Only line endings differ (a final newline): say so rather than show nothing.
        lines = [DiffLine("removed", repr(before[-20:])), DiffLine("added", repr(after[-20:]))]
        added = removed = 1
    return TextDiff(tuple(lines), added, removed)


# ---------------------------------------------------------------- field helpers


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _json_changes(field: str, before: Any, after: Any) -> list[FieldChange]:
    """Changes between two JSON values, keyword by keyword down objects (`a/b/c` paths)."""
    if before == after and type(before) is type(after):
        return []
    if isinstance(before, dict) and isinstance(after, dict):
        out: list[FieldChange] = []
        for key in [*before, *(k for k in after if k not in before)]:
            path = f"{field}/{key}"
            if key not in after:
                out.append(FieldChange(path, _json(before[key]), None))
            elif key not in before:
                out.append(FieldChange(path, None, _json(after[key])))
            else:
                out.extend(_json_changes(path, before[key], after[key]))
        return out
    return [
        FieldChange(
            field,
            None if before is None else _json(before),
            None if after is None else _json(after),
        )
    ]


def _plain(field: str, before: Any, after: Any) -> list[FieldChange]:
    if before == after:
        return []
    return [FieldChange(field, _shown(before), _shown(after))]


def _shown(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def _multiline(field: str, before: str, after: str) -> list[FieldChange]:
    if before == after:
        return []
    return [FieldChange(field, before or None, after or None, line_diff(before, after))]


def _names(names: Iterable[str]) -> str | None:
    joined = ", ".join(names)
    return joined or None


# ---------------------------------------------------------------- matching and renames


def _match[T](
    before: Sequence[T],
    after: Sequence[T],
    name: Callable[[T], str],
    same_but_name: Callable[[T, T], bool],
) -> tuple[list[tuple[T, T]], list[tuple[T, T]], list[T], list[T]]:
    """(pairs kept by name, renamed pairs, removed, added)."""
    after_by_name = {name(x): x for x in after}
    before_names = {name(x) for x in before}
    kept = [(x, after_by_name[name(x)]) for x in before if name(x) in after_by_name]
    gone = [x for x in before if name(x) not in after_by_name]
    new = [x for x in after if name(x) not in before_names]
    renamed: list[tuple[T, T]] = []
    for old in gone:
        partner = next((n for n in new if same_but_name(old, n)), None)
        if partner is not None:
            renamed.append((old, partner))
            new.remove(partner)
    removed = [x for x in gone if all(x is not old for old, _ in renamed)]
    return kept, renamed, removed, new


def _schema_fields(a: SchemaSpec, b: SchemaSpec) -> list[FieldChange]:
    return [
        *_plain("description", a.description, b.description),
        *_json_changes("json_schema", a.schema, b.schema),
    ]


def _variable_fields(
    a: VariableSpec, b: VariableSpec, schema_renames: Mapping[str, str]
) -> list[FieldChange]:
    old_schema = schema_renames.get(a.schema, a.schema) if a.schema else None
    return [
        *_plain("type", a.type.value, b.type.value),
        *_plain(
            "item_type",
            a.item_type.value if a.item_type else None,
            b.item_type.value if b.item_type else None,
        ),
        *_plain("schema", old_schema, b.schema),
        *_json_changes("default", a.default, b.default),
        *_plain("description", a.description, b.description),
    ]


def _function_neutral(tool: ToolSpec) -> str:
    return re.sub(rf"\bdef\s+{re.escape(tool.name)}\b", "def __tool__", tool.python_code)


def _tool_fields(a: ToolSpec, b: ToolSpec, *, renamed: bool = False) -> list[FieldChange]:
    code_a = _function_neutral(a) if renamed else a.python_code
    code_b = _function_neutral(b) if renamed else b.python_code
    out = [
        *_plain("kind", a.kind.value, b.kind.value),
        *_plain("description", a.description, b.description),
    ]
    if code_a != code_b:
        out += _multiline("python_code", a.python_code, b.python_code)
    out += _json_changes("openapi", a.openapi, b.openapi)
    out += _plain("mcp_url", a.mcp_url, b.mcp_url)
    out += _json_changes("mcp_headers", dict(a.mcp_headers), dict(b.mcp_headers))
    if (a.mock is None) != (b.mock is None):
        out.append(
            FieldChange(
                "mock", "on" if a.mock is not None else "off", "on" if b.mock is not None else "off"
            )
        )
    if a.mock is not None and b.mock is not None:
        out += _json_changes("mock.state", a.mock.state, b.mock.state)
        out += _json_changes("mock.response", a.mock.response, b.mock.response)
    return out


def _agent_fields(
    a: AgentSpec,
    b: AgentSpec,
    tool_renames: Mapping[str, str],
    agent_renames: Mapping[str, str],
) -> list[FieldChange]:
    old_tools = [tool_renames.get(t, t) for t in a.tools]
    old_children = [agent_renames.get(c, c) for c in a.children]
    out = [
        *_plain("description", a.description, b.description),
        *_plain("is_root", "yes" if a.is_root else "no", "yes" if b.is_root else "no"),
    ]
    if old_tools != list(b.tools):
        out.append(FieldChange("tools", _names(a.tools), _names(b.tools)))
    if old_children != list(b.children):
        out.append(FieldChange("children", _names(a.children), _names(b.children)))
    callbacks_a = {(c.kind.value, c.order): c.code for c in a.callbacks}
    callbacks_b = {(c.kind.value, c.order): c.code for c in b.callbacks}
    for key in [*callbacks_a, *(k for k in callbacks_b if k not in callbacks_a)]:
        field = f"callbacks.{key[0]}[{key[1]}]"
        out += _multiline(field, callbacks_a.get(key, ""), callbacks_b.get(key, ""))
    return out


def _scenario_key(s: ScenarioSpec) -> str:
    return f"{s.agent} / {s.name}"


def _scenario_fields(a: ScenarioSpec, b: ScenarioSpec) -> list[FieldChange]:
    sa, sb = a.session, b.session
    out = [*_json_changes("session.values", dict(sa.values), dict(sb.values))]
    fields = ("channel", "modality", "session_id", "project_id", "project_number", "location")
    for field in (*fields, "now"):
        out += _plain(f"session.{field}", getattr(sa, field), getattr(sb, field))
    out += _plain("token_budget", a.token_budget, b.token_budget)
    out += _plain("use_mocks", a.use_mocks, b.use_mocks)
    out += _multiline("steps", format_script(a.steps), format_script(b.steps))
    return out


# ---------------------------------------------------------------- layer 1: declarations


@dataclass(frozen=True, slots=True)
class _Renames:
    schemas: dict[str, str]  # before name -> after name
    variables: dict[str, str]
    tools: dict[str, str]
    agents: dict[str, str]


def _declarations(
    before: AppSpec,
    after: AppSpec,
    scenarios_before: Sequence[ScenarioSpec],
    scenarios_after: Sequence[ScenarioSpec],
) -> tuple[list[DeclarationChange], _Renames, list[tuple[AgentSpec | None, AgentSpec | None]]]:
    out: list[DeclarationChange] = []
    app_fields = [
        *_plain("name", before.name, after.name),
        *_plain("description", before.description, after.description),
    ]
    if app_fields:
        out.append(DeclarationChange("app", "changed", after.name, fields=tuple(app_fields)))

    def report(
        kind: Any,
        kept: list,
        renamed: list,
        removed: list,
        added: list,
        name: Callable[[Any], str],
        fields: Callable[[Any, Any, bool], list[FieldChange]],
    ) -> None:
        for old, new in renamed:
            out.append(
                DeclarationChange(
                    kind, "renamed", name(new), name(old), tuple(fields(old, new, True))
                )
            )
        for old, new in kept:
            changes = fields(old, new, False)
            if changes:
                out.append(DeclarationChange(kind, "changed", name(new), fields=tuple(changes)))
        out.extend(DeclarationChange(kind, "removed", name(x)) for x in removed)
        out.extend(DeclarationChange(kind, "added", name(x)) for x in added)

    # Schemas
    kept, renamed, removed, added = _match(
        before.schemas,
        after.schemas,
        lambda s: s.name,
        lambda a, b: replace(a, name="") == replace(b, name=""),
    )
    schema_renames = {a.name: b.name for a, b in renamed}
    report(
        "schema",
        kept,
        renamed,
        removed,
        added,
        lambda s: s.name,
        lambda a, b, _: _schema_fields(a, b),
    )

    # Variables (their schema compared through the schema renames)
    def variable_same(a: VariableSpec, b: VariableSpec) -> bool:
        return not _variable_fields(a, b, schema_renames)

    kept, renamed, removed, added = _match(
        before.variables, after.variables, lambda v: v.name, variable_same
    )
    variable_renames = {a.name: b.name for a, b in renamed}
    report(
        "variable",
        kept,
        renamed,
        removed,
        added,
        lambda v: v.name,
        lambda a, b, _: _variable_fields(a, b, schema_renames),
    )

    # Tools (a renamed tool's function is renamed with it)
    kept, renamed, removed, added = _match(
        before.tools,
        after.tools,
        lambda t: t.name,
        lambda a, b: not _tool_fields(a, b, renamed=True),
    )
    tool_renames = {a.name: b.name for a, b in renamed}
    report(
        "tool",
        kept,
        renamed,
        removed,
        added,
        lambda t: t.name,
        lambda a, b, was_renamed: _tool_fields(a, b, renamed=was_renamed),
    )

    # Agents (their tools compared through the tool renames)
    def agent_same(a: AgentSpec, b: AgentSpec) -> bool:
        return a.instructions == b.instructions and not _agent_fields(a, b, tool_renames, {})

    kept_agents, renamed_agents, removed_agents, added_agents = _match(
        before.agents, after.agents, lambda a: a.name, agent_same
    )
    agent_renames = {a.name: b.name for a, b in renamed_agents}
    report(
        "agent",
        kept_agents,
        renamed_agents,
        removed_agents,
        added_agents,
        lambda a: a.name,
        lambda a, b, _: _agent_fields(a, b, tool_renames, agent_renames),
    )
    agent_pairs: list[tuple[AgentSpec | None, AgentSpec | None]] = [
        *kept_agents,
        *renamed_agents,
        *((a, None) for a in removed_agents),
        *((None, b) for b in added_agents),
    ]

    # Scenarios, by agent (through the agent renames) and name
    moved = [replace(s, agent=agent_renames.get(s.agent, s.agent)) for s in scenarios_before]
    kept, renamed, removed, added = _match(
        moved, list(scenarios_after), _scenario_key, lambda a, b: False
    )
    report(
        "scenario",
        kept,
        renamed,
        removed,
        added,
        _scenario_key,
        lambda a, b, _: _scenario_fields(a, b),
    )
    renames = _Renames(schema_renames, variable_renames, tool_renames, agent_renames)
    return out, renames, agent_pairs


# ---------------------------------------------------------------- layers 2 and 3


def _agent_change(a: AgentSpec | None, b: AgentSpec | None) -> Change:
    if a is None:
        return "added"
    if b is None:
        return "removed"
    return "renamed" if a.name != b.name else "changed"


def _names_of(a: AgentSpec | None, b: AgentSpec | None) -> tuple[str, str | None]:
    if b is None:
        assert a is not None
        return a.name, None
    return b.name, (a.name if a is not None and a.name != b.name else None)


def _session_values(app: AppSpec, values: Mapping[str, Any] | None) -> dict[str, Any]:
    return {**app.default_values(), **(values or {})}


def _errors(result: SimulationResult) -> tuple[str, ...]:
    return tuple(d.message for d in result.diagnostics if d.severity is Severity.ERROR)


def _updates(result: SimulationResult) -> tuple[str, ...]:
    return tuple(e.text for e in result.events if e.kind == "state_update")


def _scenario_results(
    before: AppSpec,
    after: AppSpec,
    scenarios_before: Sequence[ScenarioSpec],
    scenarios_after: Sequence[ScenarioSpec],
    agent_renames: Mapping[str, str],
    run_code: CodeRunner | None,
    simulator: Simulator | None = None,
) -> list[ScenarioResultChange]:
    if simulator is None:

        def simulator(app: AppSpec, scenario: ScenarioSpec) -> SimulationResult:
            return simulate(app, scenario, run_code=run_code)

    after_by_key = {_scenario_key(s): s for s in scenarios_after}
    out: list[ScenarioResultChange] = []
    seen: set[str] = set()
    for old in scenarios_before:
        key = f"{agent_renames.get(old.agent, old.agent)} / {old.name}"
        new = after_by_key.get(key)
        if new is None:
            out.append(ScenarioResultChange(old.agent, old.name, "removed"))
            continue
        seen.add(key)
        result_a = simulator(before, old)
        result_b = simulator(after, new)
        final = _json_changes("state", result_a.final_state, result_b.final_state)
        change = ScenarioResultChange(
            new.agent,
            new.name,
            "same",
            tuple(replace(f, field=f.field.removeprefix("state/")) for f in final),
            _updates(result_a),
            _updates(result_b),
            _errors(result_a),
            _errors(result_b),
        )
        differs = (
            final
            or change.updates_before != change.updates_after
            or change.errors_before != change.errors_after
        )
        out.append(replace(change, change="changed") if differs else change)
    out.extend(
        ScenarioResultChange(s.agent, s.name, "added")
        for s in scenarios_after
        if _scenario_key(s) not in seen
    )
    return out


def diff_apps(
    before: AppSpec,
    after: AppSpec,
    *,
    before_scenarios: Iterable[ScenarioSpec] = (),
    after_scenarios: Iterable[ScenarioSpec] = (),
    values: Mapping[str, Any] | None = None,
    channel: str = "web",
    modality: str = "text",
    simulate_scenarios: bool = True,
    run_code: CodeRunner | None = None,
    context: int = DEFAULT_CONTEXT,
    simulator: Simulator | None = None,
) -> AppDiff:
    """The three-layer diff from `before` to `after` (see the module docstring). Never raises.

    `values` are session values used on both sides over each side's defaults; the
    scenarios are simulated only when `simulate_scenarios` (code through `run_code`, or
    each simulation by `simulator`: the Django layer's bounded one).
    """
    scenarios_before = tuple(before_scenarios)
    scenarios_after = tuple(after_scenarios)
    declarations, renames, agent_pairs = _declarations(
        before, after, scenarios_before, scenarios_after
    )
    values_before = _session_values(before, values)
    values_after = _session_values(after, values)
    instructions: list[InstructionDiff] = []
    prompts: list[PromptDiff] = []
    for a, b in agent_pairs:
        name, old_name = _names_of(a, b)
        text_a = a.instructions if a is not None else ""
        text_b = b.instructions if b is not None else ""
        text_diff = line_diff(text_a, text_b, context=context)
        if text_diff.changed or a is None or b is None:
            instructions.append(InstructionDiff(name, old_name, _agent_change(a, b), text_diff))
        compiled_a = (
            compile_instructions(text_a, values_before, channel=channel, modality=modality).text
            if a is not None
            else ""
        )
        if b is not None and text_a == text_b and values_before == values_after:
            compiled_b = compiled_a  # same text, same values: the same prompt
        elif b is not None:
            compiled_b = compile_instructions(
                text_b, values_after, channel=channel, modality=modality
            ).text
        else:
            compiled_b = ""
        prompts.append(
            PromptDiff(
                name,
                old_name,
                compiled_a,
                compiled_b,
                line_diff(compiled_a, compiled_b, context=context),
            )
        )
    scenarios = (
        _scenario_results(
            before, after, scenarios_before, scenarios_after, renames.agents, run_code, simulator
        )
        if simulate_scenarios
        else []
    )
    return AppDiff(tuple(declarations), tuple(instructions), tuple(prompts), tuple(scenarios))
