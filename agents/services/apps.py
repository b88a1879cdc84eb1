"""Apps as a whole: create, rename, delete, share, duplicate, and create from a spec."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction

from agents import selectors
from agents.core import rules
from agents.core.diagnostics import Diagnostic, Message, Severity
from agents.core.formats import check_app_spec
from agents.core.script import format_script
from agents.core.spec import AppSpec, ScenarioSpec
from agents.models import (
    JOB_ACTIVE,
    Agent,
    AgentApp,
    AppLabel,
    AppShare,
    Job,
    Schema,
    ShareRole,
    Tool,
    Variable,
)
from agents.services.agents import agent_create, agent_delete, agent_update, callback_create
from agents.services.common import (
    Actor,
    ServiceError,
    app_write,
    changed,
    error,
    logger,
    model_update,
    raise_if,
    save,
    snapshot,
)
from agents.services.jobs import job_cancel
from agents.services.scenarios import scenario_save
from agents.services.schemas import schema_create
from agents.services.tools import tool_create
from agents.services.variables import variable_create


def _app_name_problems(owner_id: int, name: str, exclude: int | None = None) -> list[Diagnostic]:
    problems = rules.app_name_problems(name)
    if problems:
        return problems
    clash = AgentApp.objects.filter(owner_id=owner_id, name=name.strip()).exclude(pk=exclude)
    if clash.exists():
        return [
            error(
                "name",
                Message("You already have an app named '%(strip)s'.", strip=name.strip()),
                "SC004",
            )
        ]
    return []


@transaction.atomic
def app_create(
    *,
    owner: Actor,
    name: str,
    description: str = "",
    cx: Mapping[str, Any] | None = None,
    actor: Actor = None,
) -> AgentApp:
    """A new app owned by `owner`, with its root agent. `cx`: what a CX import kept."""
    raise_if(_app_name_problems(owner.pk, name))
    app = AgentApp(owner=owner, name=name.strip(), description=description, cx=dict(cx or {}))
    save(app)
    changed(app=app, actor=actor or owner, action="app.create", name=app.name, after=snapshot(app))
    agent_create(app=app, display_name="root_agent", is_root=True, actor=actor or owner)
    return app


@app_write
def app_update(
    *,
    app: AgentApp,
    name: str | None = None,
    description: str | None = None,
    expected_version: int | None = None,
    actor: Actor = None,
) -> AgentApp:
    data: dict[str, Any] = {}
    if name is not None:
        data["name"] = name.strip()
    if description is not None:
        data["description"] = description
    app, _ = model_update(
        instance=app,
        fields=("name", "description"),
        data=data,
        expected_version=expected_version,
        # the name as given: its problems name what was typed
        problems=lambda a: [] if name is None else _app_name_problems(a.owner_id, name, a.pk),
        actor=actor,
        action="app.update",
        name=lambda a: a.name,
    )
    return app


@app_write
def app_delete(*, app: AgentApp, actor: Actor = None) -> None:
    changed(app=app, actor=actor, action="app.delete", name=app.name, before=snapshot(app))
    # Variables protect their schema and labels their version; remove them first so the
    # cascade can proceed.
    Variable.objects.filter(app=app).delete()
    AppLabel.objects.filter(app=app).delete()
    app.delete()


def _role_problems(role: str) -> list[Diagnostic]:
    if role in ShareRole.values:
        return []
    return [
        error(
            "role", Message("Role must be one of %(values)s.", values=", ".join(ShareRole.values))
        )
    ]


@app_write
def app_share(*, app: AgentApp, user: Actor, role: str, actor: Actor = None) -> AppShare:
    raise_if(_role_problems(role))
    if user.pk == app.owner_id:
        raise ServiceError([error("user", Message("The owner already has full access."))])
    share, _ = AppShare.objects.update_or_create(app=app, user=user, defaults={"role": role})
    changed(
        app=app,
        actor=actor,
        action="share.set",
        name=user.get_username(),
        after={"user": user.get_username(), "role": role},
    )
    return share


def app_share_by_username(
    *, app: AgentApp, username: str, role: str, actor: Actor
) -> AppShare | None:
    """Share with the user of that name. An unknown name shares with nobody and is not an
    error (the answer must not reveal which accounts exist); a bad role is refused for
    either kind of name."""
    raise_if(_role_problems(role))
    user = get_user_model().objects.filter(username=username.strip()).first()
    if user is None:
        logger.info("share of app %s with an unknown username refused silently", app.pk)
        return None
    return app_share(app=app, user=user, role=role, actor=actor)


@app_write
def app_unshare(*, app: AgentApp, user: Actor, actor: Actor = None) -> None:
    """End `user`'s access to `app`: the share is removed and their jobs on the app are
    cancelled (a queued one at once, a running one at its next step); their job results
    on the app read as not found from then on (`jobs.job_for_user`)."""
    deleted, _ = AppShare.objects.filter(app=app, user=user).delete()
    if app.owner_id != user.pk:
        for job in Job.objects.filter(app=app, owner=user, status__in=JOB_ACTIVE):
            job_cancel(job=job)
    if deleted:
        changed(
            app=app,
            actor=actor,
            action="share.remove",
            name=user.get_username(),
            before={"user": user.get_username()},
        )


# ---------------------------------------------------------------- from a spec (import, duplicate)


def free_name(owner_id: int, base: str, suffix: Callable[[int], str]) -> str:
    """The first of `base + suffix(0)`, `base + suffix(1)`… that the owner does not use yet,
    the base cut so that each fits the longest app name."""
    limit = rules.APP_NAME_MAX_LENGTH
    base = base.strip() or "Untitled app"
    taken = set(AgentApp.objects.filter(owner_id=owner_id).values_list("name", flat=True))
    n = 0
    while True:
        candidate = base[: limit - len(suffix(n))].rstrip() + suffix(n)
        if candidate not in taken:
            return candidate
        n += 1


# Service field names → the names the native format (and the import page) use.
_TOOL_FIELDS = {
    "openapi_spec": "openapi",
    "mock_state": "mock.state",
    "mock_response": "mock.response",
}
_AGENT_FIELDS = {"display_name": "name"}
_SCENARIO_FIELDS = {
    "steps_script": "steps",
    "session_values": "session.values",
    "channel": "session.channel",
    "modality": "session.modality",
    "now": "session.now",
}


def _named(d: Diagnostic, prefix: str, fields: Mapping[str, str]) -> Diagnostic:
    if not d.field or d.field == "__all__":
        where = prefix
    else:
        where = f"{prefix}.{fields.get(d.field, d.field)}"
    return replace(
        d, field=where, message=Message("%(where)s: %(message)s", where=where, message=d.message)
    )


@contextmanager
def _about(prefix: str, fields: Mapping[str, str] | None = None) -> Iterator[None]:
    """Re-raise a service's refusal with fields that name the object (`variables.x.default`)."""
    try:
        yield
    except ServiceError as exc:
        raise ServiceError([_named(d, prefix, fields or {}) for d in exc.diagnostics]) from exc


@transaction.atomic
def app_create_from_spec(
    *,
    owner: Actor,
    spec: AppSpec,
    scenarios: Iterable[ScenarioSpec] = (),
    name: str,
    actor: Actor = None,
) -> AgentApp:
    """Create the app `spec` describes, owned by `owner`: all of it, or nothing.

    The core checks the whole app first (every problem at once); the services then
    check each object again as it is created, and a refusal rolls everything back.
    """
    scenarios = tuple(scenarios)
    actor = actor or owner
    errors = [d for d in check_app_spec(spec, scenarios) if d.severity is Severity.ERROR]
    if errors:
        raise ServiceError(errors)
    with _about("name"):
        app = app_create(
            owner=owner, name=name, description=spec.description, cx=spec.cx, actor=actor
        )
    schemas = _create_schemas(app, spec, actor)
    _create_variables(app, spec, schemas, actor)
    tools = _create_tools(app, spec, actor)
    agents = _create_agents(app, spec, tools, actor)
    for scenario in scenarios:
        with _about(f"agents.{scenario.agent}.scenarios.{scenario.name}", _SCENARIO_FIELDS):
            session = scenario.session
            scenario_save(
                agent=agents[scenario.agent],
                name=scenario.name,
                steps_script=format_script(scenario.steps),
                session_values=dict(session.values),
                channel=session.channel,
                modality=session.modality,
                session_id=session.session_id,
                project_id=session.project_id,
                project_number=session.project_number,
                location=session.location,
                now=session.now,
                token_budget=scenario.token_budget,
                use_mocks=scenario.use_mocks,
                cx=scenario.cx,
                actor=actor,
            )
    return app


def _create_schemas(app: AgentApp, spec: AppSpec, actor: Actor) -> dict[str, Schema]:
    schemas: dict[str, Schema] = {}
    for schema in spec.schemas:
        with _about(f"schemas.{schema.name}"):
            schemas[schema.name] = schema_create(
                app=app,
                name=schema.name,
                json_schema=schema.schema,
                description=schema.description,
                actor=actor,
            )
    return schemas


def _create_variables(
    app: AgentApp, spec: AppSpec, schemas: Mapping[str, Schema], actor: Actor
) -> None:
    for variable in spec.variables:
        with _about(f"variables.{variable.name}"):
            variable_create(
                app=app,
                name=variable.name,
                type=variable.type.value,
                default=variable.default,
                description=variable.description,
                item_type=variable.item_type.value if variable.item_type else "",
                schema=schemas.get(variable.schema) if variable.schema else None,
                cx=variable.cx,
                actor=actor,
            )


def _create_tools(app: AgentApp, spec: AppSpec, actor: Actor) -> dict[str, Tool]:
    tools: dict[str, Tool] = {}
    for tool in spec.tools:
        with _about(f"tools.{tool.name}", _TOOL_FIELDS):
            tools[tool.name] = tool_create(
                app=app,
                name=tool.name,
                kind=tool.kind.value,
                description=tool.description,
                python_code=tool.python_code,
                openapi_spec=tool.openapi,
                mcp_url=tool.mcp_url,
                mcp_headers=dict(tool.mcp_headers),
                mock_enabled=tool.mock is not None,
                mock_state=dict(tool.mock.state) if tool.mock else {},
                mock_response=tool.mock.response if tool.mock else None,
                cx=tool.cx,
                actor=actor,
            )
    return tools


def _create_agents(
    app: AgentApp, spec: AppSpec, tools: Mapping[str, Tool], actor: Actor
) -> dict[str, Agent]:
    """The root replaces the root agent `app_create` made; links once every agent exists."""
    created_root = app.agents.get(is_root=True)
    root = next((a for a in spec.agents if a.is_root), spec.agents[0] if spec.agents else None)
    agents: dict[str, Agent] = {}
    if root is None:
        agent_delete(agent=created_root, actor=actor)
        return agents
    with _about(f"agents.{root.name}", _AGENT_FIELDS):
        agents[root.name] = agent_update(
            agent=created_root,
            display_name=root.name,
            instructions=root.instructions,
            description=root.description,
            cx=root.cx,
            actor=actor,
        )
    for agent in spec.agents:
        if agent is root:
            continue
        with _about(f"agents.{agent.name}", _AGENT_FIELDS):
            agents[agent.name] = agent_create(
                app=app,
                display_name=agent.name,
                instructions=agent.instructions,
                description=agent.description,
                is_root=False,
                cx=agent.cx,
                actor=actor,
            )
    for agent in spec.agents:
        with _about(f"agents.{agent.name}", _AGENT_FIELDS):
            if agent.tools or agent.children:
                agent_update(
                    agent=agents[agent.name],
                    tools=[tools[t] for t in agent.tools],
                    children=[agents[c] for c in agent.children],
                    actor=actor,
                )
        for i, callback in enumerate(agent.callbacks):
            with _about(f"agents.{agent.name}.callbacks[{i}]"):
                callback_create(
                    agent=agents[agent.name],
                    kind=callback.kind.value,
                    code=callback.code,
                    order=callback.order,
                    cx=callback.cx,
                    actor=actor,
                )
    return agents


@transaction.atomic
def app_duplicate(
    *, app: AgentApp, owner: Actor, name: str | None = None, actor: Actor = None
) -> AgentApp:
    """A full copy of an app — schemas, variables, tools, agents, callbacks, scenarios —
    owned by `owner`: the app read as the core sees it, created again from that spec."""
    spec, scenarios = selectors.app_specs(app)
    if name:
        raise_if(rules.app_name_problems(name))
        copy_name = free_name(owner.pk, name, lambda n: f" {n + 1}" if n else "")
    else:
        copy_name = free_name(owner.pk, app.name, lambda n: f" (copy) {n + 1}" if n else " (copy)")
    copy = app_create_from_spec(
        owner=owner, spec=spec, scenarios=scenarios, name=copy_name, actor=actor or owner
    )
    logger.info("app %s duplicated as %s by %s", app.pk, copy.pk, owner.get_username())
    return copy
