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

This module is the entry point; the checks live in ``agents.core.linting`` by concern:
``index`` (what the app declares, looked up once; "did you mean"), ``instructions``
(brace groups, references, an agent's tools and sub-agents), ``paths`` (``{{x.path}}``
against types and schemas), ``declarations`` (names, variables, schemas, unused
variables from ``agents.core.usage``) and ``tools`` (code, mocks, OpenAPI, MCP).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from agents.core import codes, rules
from agents.core.diagnostics import Diagnostic, Message, Severity
from agents.core.linting.declarations import lint_names, lint_schemas, lint_unused, lint_variables
from agents.core.linting.index import E, W, build_index
from agents.core.linting.instructions import lint_agent_text
from agents.core.linting.tools import lint_tool
from agents.core.spec import AppSpec, ScenarioSpec

__all__ = ["CODES", "lint_agent", "lint_app", "lint_edited_agent", "lint_scenarios"]

CODES: dict[str, str] = codes.section("lint")


# ---------------------------------------------------------------------------
# Public entry points


def lint_app(app: AppSpec, scenarios: Iterable[ScenarioSpec] = ()) -> tuple[Diagnostic, ...]:
    """Every diagnostic of the app: variables, schemas, tools, then each agent in turn, then
    the `scenarios` (a step naming a tool no agent has, SC012)."""
    index = build_index(app)
    found: list[Diagnostic] = []
    found.extend(lint_names(app))
    found.extend(lint_variables(index))
    found.extend(lint_schemas(app))
    for tool in app.tools:
        found.extend(lint_tool(index, tool))
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
        agent_found.extend(lint_agent_text(index, agent, agent.instructions))
    found.extend(lint_unused(app))
    found.extend(agent_found)
    found.extend(lint_scenarios(app, scenarios))
    return tuple(found)


def lint_scenarios(app: AppSpec, scenarios: Iterable[ScenarioSpec]) -> list[Diagnostic]:
    """SC012 of each scenario, on ``agents.<agent>.scenarios.<name>.steps``."""
    found: list[Diagnostic] = []
    for scenario in scenarios:
        field = f"agents.{scenario.agent}.scenarios.{scenario.name}.steps"
        for d in rules.scenario_tool_problems(scenario.steps, app, scenario.agent):
            message = Message(
                "scenario %(scenario)s: %(message)s", scenario=scenario.name, message=d.message
            )
            found.append(replace(d, field=field, message=message, subject=scenario.agent))
    return found


def lint_agent(
    app: AppSpec, agent_name: str, *, instructions: str | None = None
) -> tuple[Diagnostic, ...]:
    """Diagnostics of one agent: its instructions (or the unsaved `instructions`), tools, callbacks.

    App-wide problems (variables, schemas, tools, unused variables) are left to ``lint_app``.
    """
    index = build_index(app)
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
    return tuple(lint_agent_text(index, agent, text))


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
