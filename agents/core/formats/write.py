"""Writing an app (and its scenarios) as the native document."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from agents.core.formats.schema import FORMAT_NAME, FORMAT_VERSION
from agents.core.spec import (
    AgentSpec,
    AppSpec,
    ExpectationSpec,
    ExpectKind,
    ScenarioSpec,
    StepKind,
    StepSpec,
    ToolKind,
    ToolSpec,
    VariableSpec,
    VariableType,
)


def _json(value: Any) -> Any:
    """A copy, so the document never shares a dict with the (read-only) spec."""
    return copy.deepcopy(value)


def to_native(app: AppSpec, scenarios: Iterable[ScenarioSpec] = ()) -> dict[str, Any]:
    """The native document of `app`; each scenario goes under the agent it talks to."""
    by_agent: dict[str, list[ScenarioSpec]] = {}
    for scenario in scenarios:
        by_agent.setdefault(scenario.agent, []).append(scenario)
    return {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "app": {
            "name": app.name,
            "description": app.description,
            "schemas": [
                {"name": s.name, "description": s.description, "json_schema": _json(s.schema)}
                for s in app.schemas
            ],
            "variables": [_variable_out(v) for v in app.variables],
            "tools": [_tool_out(t) for t in app.tools],
            "agents": [_agent_out(a, by_agent.get(a.name, ())) for a in app.agents],
            **_cx_out(app.cx),
        },
    }


def _cx_out(carry: Mapping[str, Any]) -> dict[str, Any]:
    """`{"cx": ...}` when a CX import kept something of the object, else nothing."""
    return {"cx": _json(carry)} if carry else {}


def _variable_out(variable: VariableSpec) -> dict[str, Any]:
    out: dict[str, Any] = {"name": variable.name, "type": variable.type.value}
    if variable.type is VariableType.LIST and variable.item_type is not None:
        out["item_type"] = variable.item_type.value
    if variable.schema:
        out["schema"] = variable.schema
    if variable.default is not None:
        out["default"] = _json(variable.default)
    out["description"] = variable.description
    out.update(_cx_out(variable.cx))
    return out


def _tool_out(tool: ToolSpec) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": tool.name,
        "kind": tool.kind.value,
        "description": tool.description,
    }
    if tool.kind is ToolKind.PYTHON or tool.python_code:
        out["python_code"] = tool.python_code
    if tool.openapi is not None:
        out["openapi"] = _json(tool.openapi)
    if tool.mcp_url:
        out["mcp_url"] = tool.mcp_url
    if tool.mcp_headers:
        out["mcp_headers"] = dict(tool.mcp_headers)
    out["mock"] = (
        None
        if tool.mock is None
        else {"state": _json(tool.mock.state), "response": _json(tool.mock.response)}
    )
    out.update(_cx_out(tool.cx))
    return out


def _agent_out(agent: AgentSpec, scenarios: Iterable[ScenarioSpec]) -> dict[str, Any]:
    return {
        "name": agent.name,
        "description": agent.description,
        "is_root": agent.is_root,
        "instructions": agent.instructions,
        "tools": list(agent.tools),
        "children": list(agent.children),
        "callbacks": [
            {"kind": c.kind.value, "order": c.order, "code": c.code, **_cx_out(c.cx)}
            for c in agent.callbacks
        ],
        "scenarios": [_scenario_out(s) for s in scenarios],
        **_cx_out(agent.cx),
    }


def _scenario_out(scenario: ScenarioSpec) -> dict[str, Any]:
    session = scenario.session
    return {
        "name": scenario.name,
        "session": {
            "values": _json(session.values),
            "channel": session.channel,
            "modality": session.modality,
            "session_id": session.session_id,
            "project_id": session.project_id,
            "project_number": session.project_number,
            "location": session.location,
            **({"now": session.now} if session.now else {}),
        },
        "token_budget": scenario.token_budget,
        "use_mocks": scenario.use_mocks,
        "steps": [_step_out(step) for step in scenario.steps],
        **_cx_out(scenario.cx),
    }


def _expectation_out(expectation: ExpectationSpec) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": expectation.kind.value}
    if expectation.tool:
        out["tool"] = expectation.tool
    if expectation.agent:
        out["agent"] = expectation.agent
    if expectation.kind not in (ExpectKind.NO_CALLS, ExpectKind.TRANSFER):
        out["value"] = _json(expectation.value)
    if expectation.note:
        out["note"] = expectation.note
    return out


def _step_out(step: StepSpec) -> dict[str, Any]:
    if step.kind is StepKind.EXPECT and step.expectation is not None:
        return {"kind": step.kind.value, "expectation": _expectation_out(step.expectation)}
    if step.kind is StepKind.USER and (step.variables or step.event):
        out: dict[str, Any] = {"kind": step.kind.value, "text": step.text}
        if step.variables:
            out["variables"] = _json(step.variables)
        if step.event:
            out["event"] = step.event
        return out
    if step.kind is StepKind.TOOL:
        return {"kind": step.kind.value, "tool": step.tool, "args": _json(step.args)}
    if step.kind is StepKind.CALLBACK:
        return {"kind": step.kind.value, "callback": step.callback.value if step.callback else ""}
    return {"kind": step.kind.value, "text": step.text}
