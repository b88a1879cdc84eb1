"""Agents (instructions, tools, sub-agents) and their callbacks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agents.core import rules
from agents.core.diagnostics import Diagnostic, Message
from agents.core.rename import RenameKind
from agents.models import Agent, AgentApp, Callback, CallbackKind, Tool
from agents.services.common import (
    Actor,
    ServiceError,
    StaleObjectError,
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
)


def agent_problems(agent: Agent) -> list[Diagnostic]:
    name = agent.display_name.strip()
    diagnostics = rules.display_name_problems(name)
    if (
        not diagnostics
        and Agent.objects.filter(app_id=agent.app_id, display_name__iexact=name)
        .exclude(pk=agent.pk)
        .exists()
    ):
        diagnostics.append(
            error(
                "display_name",
                Message("An agent named '%(name)s' already exists in this app.", name=name),
                "SC004",
            )
        )
    return diagnostics


def _links(agent: Agent) -> dict[str, list[str]]:
    return {
        "tools": sorted(agent.tools.values_list("name", flat=True)),
        "children": sorted(agent.children.values_list("display_name", flat=True)),
    }


def _state(agent: Agent) -> dict[str, Any]:
    """What the history shows of an agent: its fields and its links."""
    return {**snapshot(agent), **_links(agent)}


def _set_agent_links(
    agent: Agent, tools: Sequence[Tool] | None, children: Sequence[Agent] | None
) -> None:
    if tools is not None:
        if any(t.app_id != agent.app_id for t in tools):
            raise ServiceError(
                [error("tools", Message("A tool of another app cannot be attached."))]
            )
        agent.tools.set(tools)
    if children is not None:
        if any(c.app_id != agent.app_id or c.pk == agent.pk for c in children):
            raise ServiceError(
                [error("children", Message("Sub-agents must be other agents of the same app."))]
            )
        agent.children.set(children)
        if _has_cycle(agent):
            raise ServiceError(
                [
                    error(
                        "children", Message("That would make an agent its own sub-agent (a cycle).")
                    )
                ]
            )


def _has_cycle(start: Agent) -> bool:
    """Whether the app's sub-agent links (as saved just now) form a cycle (the core's one
    check, `rules.sub_agent_cycle`, over the agents' ids)."""
    edges: dict[int, list[int]] = {}
    for parent_id, child_id in Agent.children.through.objects.filter(
        from_agent__app_id=start.app_id
    ).values_list("from_agent_id", "to_agent_id"):
        edges.setdefault(parent_id, []).append(child_id)
        edges.setdefault(child_id, [])
    return rules.sub_agent_cycle(edges) is not None


@app_write
def agent_create(
    *,
    app: AgentApp,
    display_name: str,
    instructions: str = "",
    description: str = "",
    is_root: bool | None = None,
    tools: Sequence[Tool] = (),
    children: Sequence[Agent] = (),
    cx: Mapping[str, Any] | None = None,
    actor: Actor = None,
) -> Agent:
    if is_root is None:
        is_root = not app.agents.exists()
    agent = Agent(
        app=app,
        display_name=display_name.strip(),
        instructions=instructions,
        description=description,
        is_root=is_root,
        cx=dict(cx or {}),
    )
    raise_if(agent_problems(agent))
    if is_root:
        app.agents.filter(is_root=True).update(is_root=False)
    save(agent)
    _set_agent_links(agent, tools, children)
    changed(
        app=app,
        actor=actor,
        action="agent.create",
        name=agent.display_name,
        after={**snapshot(agent), **_links(agent)},
    )
    return agent


@app_write
def agent_update(
    *,
    agent: Agent,
    display_name: str | None = None,
    instructions: str | None = None,
    description: str | None = None,
    is_root: bool | None = None,
    tools: Sequence[Tool] | None = None,
    children: Sequence[Agent] | None = None,
    expected_version: int | None = None,
    cx: Mapping[str, Any] | None = None,
    actor: Actor = None,
) -> Agent:
    """Change what is given; `cx` (what a CX import kept) replaces the kept CX fields."""
    agent = locked(Agent, agent.pk)
    check_version(agent, expected_version)
    before = _state(agent)
    if display_name is not None and display_name.strip() != agent.display_name:
        agent = agent_rename(agent=agent, new_name=display_name, actor=actor)
    data: dict[str, Any] = {}
    if instructions is not None:
        data["instructions"] = instructions
    if description is not None:
        data["description"] = description
    if cx is not None:
        data["cx"] = dict(cx)
    if is_root:  # the one root moves here (a refusal below rolls this back too)
        Agent.objects.filter(app_id=agent.app_id, is_root=True).exclude(pk=agent.pk).update(
            is_root=False
        )
        data["is_root"] = True
    agent, _ = model_update(
        instance=agent,
        fields=("instructions", "description", "cx", "is_root"),
        data=data,
        lock=False,
        before=before,
        problems=agent_problems,
        state=_state,
        actor=actor,
        action="agent.update",
        name=lambda a: a.display_name,
        on_save=lambda a: _set_agent_links(a, tools, children),
    )
    return agent


@app_write
def agent_save_instructions(
    *, agent: Agent, instructions: str, base_hash: str | None = None, actor: Actor = None
) -> Agent:
    """Save an agent's instructions from the editor.

    `base_hash` fingerprints the text the editor started from: if the saved text has
    changed since (another editor, or a rename rewriting references), the save is
    refused, so nobody's words are silently overwritten. Other agent fields (tools,
    description) may change meanwhile without conflict.
    """
    agent = locked(Agent, agent.pk)
    if base_hash is not None and base_hash != agent.instructions_hash:
        raise StaleObjectError(
            [
                error(
                    "instructions",
                    Message(
                        "These instructions were changed elsewhere since you opened "
                        "them (another editor, or a rename that updated references). "
                        "Copy your text, reload, and apply your change again."
                    ),
                    "SC002",
                )
            ]
        )
    if instructions != agent.instructions:
        before = agent.instructions
        agent.instructions = instructions
        save(agent)
        changed(
            app=agent.app_id,
            actor=actor,
            action="agent.instructions",
            name=agent.display_name,
            before={"instructions": before},
            after={"instructions": instructions},
        )
    return agent


@app_write
def agent_delete(*, agent: Agent, actor: Actor = None) -> None:
    if agent.is_root and agent.app.agents.exclude(pk=agent.pk).exists():
        raise ServiceError(
            [
                error(
                    "__all__",
                    Message("Make another agent the root before deleting the root agent."),
                )
            ]
        )
    changed(
        app=agent.app_id,
        actor=actor,
        action="agent.delete",
        name=agent.display_name,
        before=snapshot(agent),
    )
    agent.delete()


@app_write
def agent_rename(
    *, agent: Agent, new_name: str, expected_version: int | None = None, actor: Actor = None
) -> Agent:
    """Rename an agent and every `{@AGENT: …}` reference to it."""
    agent = locked(Agent, agent.pk)
    check_version(agent, expected_version)
    old = agent.display_name
    agent.display_name = new_name.strip()
    raise_if(agent_problems(agent))
    save(agent)
    changed(
        app=agent.app_id,
        actor=actor,
        action="agent.rename",
        name=agent.display_name,
        before={"display_name": old},
        after={"display_name": agent.display_name},
    )
    rewrite_instructions(
        app_id=agent.app_id, kind=RenameKind.AGENT, old=old, new=agent.display_name, actor=actor
    )
    agent.refresh_from_db()
    return agent


# ---------------------------------------------------------------- callbacks


def callback_problems(callback: Callback) -> list[Diagnostic]:
    diagnostics: list[Diagnostic] = []
    if callback.kind not in CallbackKind.values:
        diagnostics.append(
            error(
                "kind",
                Message("Choose when the callback runs: before/after agent, model or tool."),
                "SC005",
            )
        )
    diagnostics += rules.python_problems(callback.code, "code", required=True)
    return diagnostics


def _callback_name(callback: Callback) -> str:
    # No English word in it: the history shows the stored name in every language.
    return f"{callback.agent.display_name} / {callback.kind} #{callback.order}"


@app_write
def callback_create(
    *,
    agent: Agent,
    kind: str,
    code: str,
    order: int | None = None,
    cx: Mapping[str, Any] | None = None,
    actor: Actor = None,
) -> Callback:
    if order is None:
        last = agent.callbacks.filter(kind=kind).order_by("-order").first()
        order = 0 if last is None else last.order + 1
    callback = Callback(agent=agent, kind=kind, code=code, order=order, cx=dict(cx or {}))
    raise_if(callback_problems(callback))
    save(callback)
    changed(
        app=agent.app_id,
        actor=actor,
        action="callback.create",
        name=_callback_name(callback),
        after=snapshot(callback),
    )
    return callback


@app_write
def callback_update(
    *,
    callback: Callback,
    code: str | None = None,
    kind: str | None = None,
    order: int | None = None,
    expected_version: int | None = None,
    actor: Actor = None,
) -> Callback:
    given = {"code": code, "kind": kind, "order": order}
    callback, _ = model_update(
        instance=callback,
        fields=("code", "kind", "order"),
        data={key: value for key, value in given.items() if value is not None},
        expected_version=expected_version,
        problems=callback_problems,
        actor=actor,
        action="callback.update",
        name=_callback_name,
        app=callback.agent.app_id,
    )
    return callback


@app_write
def callback_delete(*, callback: Callback, actor: Actor = None) -> None:
    changed(
        app=callback.agent.app_id,
        actor=actor,
        action="callback.delete",
        name=_callback_name(callback),
        before=snapshot(callback),
    )
    callback.delete()
