"""Tools (Python, OpenAPI, MCP, with mocks); a tool can be created already attached to an agent."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from agents.core import rules
from agents.core.diagnostics import Diagnostic, Message
from agents.core.formats import not_json_data
from agents.core.rename import RenameKind
from agents.models import Agent, AgentApp, Tool, ToolKind
from agents.services.common import (
    TOOL_FIELDS,
    Actor,
    ServiceError,
    app_write,
    changed,
    check_version,
    error,
    locked,
    model_update,
    raise_if,
    rewrite_instructions,
    save,
    snapshot,
    unique,
)


def tool_problems(tool: Tool) -> list[Diagnostic]:
    diagnostics = rules.name_problems(tool.name, max_length=rules.TOOL_NAME_MAX_LENGTH)
    diagnostics += unique(Tool, tool, what="tool")
    if tool.kind not in ToolKind.values:
        diagnostics.append(
            error("kind", Message("Choose Python, OpenAPI, MCP or Platform."), "SC005")
        )
    if tool.kind == ToolKind.PLATFORM and tool.name not in rules.PLATFORM_TOOLS:
        diagnostics.append(error("name", rules.platform_tool_problem(sentence=True), "SC011"))
    if tool.kind == ToolKind.PYTHON:
        diagnostics += rules.python_problems(tool.python_code, "python_code")
    if tool.openapi_spec is not None and not isinstance(tool.openapi_spec, dict):
        diagnostics.append(
            error("openapi_spec", Message("The OpenAPI document must be a JSON object."), "SC008")
        )
    if not isinstance(tool.mcp_headers, dict) or not all(
        isinstance(v, str) for v in tool.mcp_headers.values()
    ):
        diagnostics.append(
            error(
                "mcp_headers",
                Message('Headers must be a JSON object of strings, e.g. {"X-Id": "abc"}.'),
                "SC008",
            )
        )
    if not isinstance(tool.mock_state, dict):
        diagnostics.append(
            error(
                "mock_state",
                Message('Mock state must be a JSON object: {"variable_name": value}.'),
                "SC008",
            )
        )
    for name in ("mock_state", "mock_response"):
        problem = not_json_data(getattr(tool, name), name)
        if problem is not None:  # NaN, infinity: JSON cannot carry it to the simulation's reader
            diagnostics.append(
                error(
                    name, Message("Not JSON data: %(message)s.", message=problem.message), "SC209"
                )
            )
    return diagnostics


@app_write
def tool_create(
    *,
    app: AgentApp,
    name: str,
    kind: str = ToolKind.PYTHON,
    attach_to: Agent | None = None,
    cx: Mapping[str, Any] | None = None,
    actor: Actor = None,
    **fields: Any,
) -> Tool:
    """A new tool; with `attach_to`, that agent may call it (same transaction, agent locked)."""
    unknown = set(fields) - set(TOOL_FIELDS)
    if unknown:
        raise TypeError(f"tool_create() got unexpected fields {sorted(unknown)}")
    tool = Tool(app=app, name=name, kind=kind, cx=dict(cx or {}), **fields)
    raise_if(tool_problems(tool))
    save(tool)
    changed(app=app, actor=actor, action="tool.create", name=name, after=snapshot(tool))
    if attach_to is not None:
        agent = locked(Agent, attach_to.pk)
        if agent.app_id != app.pk:
            raise ServiceError([error("agent", Message("That agent belongs to another app."))])
        agent.tools.add(tool)  # adds one link; the others stay as they are
        save(agent)
        changed(
            app=app,
            actor=actor,
            action="agent.attach_tool",
            name=agent.display_name,
            after={"tool": tool.name},
        )
    return tool


@app_write
def tool_update(
    *,
    tool: Tool,
    expected_version: int | None = None,
    update_references: bool = True,
    actor: Actor = None,
    **fields: Any,
) -> Tool:
    """Change a tool; a new name renames its Python function too, and with
    `update_references` every `{@TOOL: …}` that names it."""
    unknown = set(fields) - {*TOOL_FIELDS, "name"}
    if unknown:
        raise TypeError(f"tool_update() got unexpected fields {sorted(unknown)}")
    new_name = fields.pop("name", None)
    tool, _ = model_update(
        instance=tool,
        fields=TOOL_FIELDS,
        data=fields,
        expected_version=expected_version,
        problems=tool_problems,
        actor=actor,
        action="tool.update",
        name=lambda t: t.name,
    )
    if new_name is not None and new_name != tool.name:
        tool = tool_rename(
            tool=tool, new_name=new_name, update_references=update_references, actor=actor
        )
    return tool


@app_write
def tool_delete(*, tool: Tool, actor: Actor = None) -> None:
    changed(
        app=tool.app_id, actor=actor, action="tool.delete", name=tool.name, before=snapshot(tool)
    )
    tool.delete()


@app_write
def tool_rename(
    *,
    tool: Tool,
    new_name: str,
    expected_version: int | None = None,
    update_references: bool = True,
    actor: Actor = None,
) -> Tool:
    """Rename a tool and its Python function (CX requires them equal) and, with
    `update_references`, every `{@TOOL: …}` reference."""
    tool = locked(Tool, tool.pk)
    check_version(tool, expected_version)
    old = tool.name
    tool.name = new_name
    raise_if(
        rules.name_problems(new_name, max_length=rules.TOOL_NAME_MAX_LENGTH)
        + unique(Tool, tool, what="tool")
    )
    if tool.python_code:
        tool.python_code = re.sub(
            r"^(\s*def\s+)" + re.escape(old) + r"(\s*\()",
            lambda m: f"{m.group(1)}{new_name}{m.group(2)}",
            tool.python_code,
            flags=re.MULTILINE,
        )
    save(tool)
    changed(
        app=tool.app_id,
        actor=actor,
        action="tool.rename",
        name=new_name,
        before={"name": old},
        after={"name": new_name},
    )
    if update_references:
        rewrite_instructions(
            app_id=tool.app_id, kind=RenameKind.TOOL, old=old, new=new_name, actor=actor
        )
    return tool
