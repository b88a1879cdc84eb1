"""Export and import of whole apps: the native JSON/YAML document and the CX Agent Studio ZIP.

Exports read the app with one selector; the import writes through the service
functions inside one transaction, after the core has checked the whole app
(`formats.check_app_spec`), so it writes nothing unless all of it is valid.
A problem the services still find rolls everything back and comes out as a
`ServiceError` whose fields name the object: ``variables.customer.default``,
``tools.LookupBalance.python_code``, ``agents.Root.scenarios.Happy path.name``.

Choices (README): an imported app whose name the owner already uses is
imported as "Name (imported)" (then "Name (imported 2)", ...), never merged
and never refused; lint problems (an undeclared reference in instructions, a
missing description) do not block an import — the designer shows them, as it
does for an app typed in by hand.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, Literal

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction

from agents import selectors, services
from agents.core.cx_format import from_cx_files, read_zip, to_cx_files, zip_bytes
from agents.core.diagnostics import Diagnostic, Severity
from agents.core.formats import check_app_spec, from_native, loads_native, to_native
from agents.core.script import format_script
from agents.core.spec import AppSpec, ScenarioSpec
from agents.models import Agent, AgentApp, Schema, Tool
from agents.services import ServiceError

APP_NAME_MAX_LENGTH = 200

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
}


# ---------------------------------------------------------------- export


def app_export_specs(app: AgentApp) -> tuple[AppSpec, tuple[ScenarioSpec, ...]]:
    """The app and its scenarios as the core sees them, read in a fixed number of queries."""
    loaded = selectors.app_with_everything(app.pk).get()
    scenarios = tuple(
        scenario.to_spec(app_id=str(loaded.pk))
        for agent in loaded.agents.all()
        for scenario in agent.scenarios.all()
    )
    return loaded.to_spec(), scenarios


def app_export_native(app: AgentApp) -> dict[str, Any]:
    """The native document of the app (`formats.dumps_native` turns it into JSON or YAML)."""
    spec, scenarios = app_export_specs(app)
    return to_native(spec, scenarios)


def app_export_cx(app: AgentApp) -> tuple[bytes, tuple[Diagnostic, ...]]:
    """The CX Agent Studio ZIP of the app and what CX has no place for."""
    spec, scenarios = app_export_specs(app)
    files, diagnostics = to_cx_files(spec, scenarios)
    return zip_bytes(files), diagnostics


# ---------------------------------------------------------------- reading an upload

UploadKind = Literal["native", "cx"]


def read_app_file(
    data: bytes,
) -> tuple[UploadKind, AppSpec | None, tuple[ScenarioSpec, ...], tuple[Diagnostic, ...]]:
    """What an uploaded file holds: a CX ZIP (by its signature) or a native JSON/YAML text."""
    if data[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        files, problems = read_zip(data)
        if files is None:
            return "cx", None, (), problems
        spec, diagnostics = from_cx_files(files)
        return "cx", spec, (), diagnostics
    doc, problems = loads_native(data)
    if doc is None:
        return "native", None, (), problems
    spec, scenarios, diagnostics = from_native(doc)
    return "native", spec, scenarios, diagnostics


# ---------------------------------------------------------------- import


def _free_name(owner: AbstractBaseUser, wanted: str) -> str:
    wanted = wanted.strip()[:APP_NAME_MAX_LENGTH] or "Imported app"
    taken = set(AgentApp.objects.filter(owner=owner).values_list("name", flat=True))
    if wanted not in taken:
        return wanted
    n = 1
    while True:
        suffix = " (imported)" if n == 1 else f" (imported {n})"
        candidate = wanted[: APP_NAME_MAX_LENGTH - len(suffix)] + suffix
        if candidate not in taken:
            return candidate
        n += 1


def _named(d: Diagnostic, prefix: str, fields: Mapping[str, str]) -> Diagnostic:
    if not d.field or d.field == "__all__":
        where = prefix
    else:
        where = f"{prefix}.{fields.get(d.field, d.field)}"
    return replace(d, field=where, message=f"{where}: {d.message}")


@contextmanager
def _about(prefix: str, fields: Mapping[str, str] | None = None) -> Iterator[None]:
    """Re-raise a service's refusal with fields that name the object (`variables.x.default`)."""
    try:
        yield
    except ServiceError as exc:
        raise ServiceError([_named(d, prefix, fields or {}) for d in exc.diagnostics]) from exc


@transaction.atomic
def app_import(
    *,
    owner: AbstractBaseUser,
    spec: AppSpec,
    scenarios: Iterable[ScenarioSpec] = (),
    name: str | None = None,
) -> AgentApp:
    """Create the app `spec` describes, owned by `owner`: all of it, or nothing.

    Every problem the core can find is reported at once before anything is
    written; the services check each object again as it is created, and a
    refusal there rolls back the whole import.
    """
    scenarios = tuple(scenarios)
    errors = [d for d in check_app_spec(spec, scenarios) if d.severity is Severity.ERROR]
    if errors:
        raise ServiceError(errors)
    with _about("name"):
        app = services.app_create(
            owner=owner, name=_free_name(owner, name or spec.name), description=spec.description
        )
    schemas = _create_schemas(app, spec)
    _create_variables(app, spec, schemas)
    tools = _create_tools(app, spec)
    agents = _create_agents(app, spec, tools)
    for scenario in scenarios:
        with _about(f"agents.{scenario.agent}.scenarios.{scenario.name}", _SCENARIO_FIELDS):
            session = scenario.session
            services.scenario_save(
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
                token_budget=scenario.token_budget,
                use_mocks=scenario.use_mocks,
            )
    return app


def _create_schemas(app: AgentApp, spec: AppSpec) -> dict[str, Schema]:
    schemas: dict[str, Schema] = {}
    for schema in spec.schemas:
        with _about(f"schemas.{schema.name}"):
            schemas[schema.name] = services.schema_create(
                app=app,
                name=schema.name,
                json_schema=schema.schema,
                description=schema.description,
            )
    return schemas


def _create_variables(app: AgentApp, spec: AppSpec, schemas: Mapping[str, Schema]) -> None:
    for variable in spec.variables:
        with _about(f"variables.{variable.name}"):
            services.variable_create(
                app=app,
                name=variable.name,
                type=variable.type.value,
                default=variable.default,
                description=variable.description,
                item_type=variable.item_type.value if variable.item_type else "",
                schema=schemas.get(variable.schema) if variable.schema else None,
            )


def _create_tools(app: AgentApp, spec: AppSpec) -> dict[str, Tool]:
    tools: dict[str, Tool] = {}
    for tool in spec.tools:
        with _about(f"tools.{tool.name}", _TOOL_FIELDS):
            tools[tool.name] = services.tool_create(
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
            )
    return tools


def _create_agents(app: AgentApp, spec: AppSpec, tools: Mapping[str, Tool]) -> dict[str, Agent]:
    """The root replaces the root agent `app_create` made; links once every agent exists."""
    created_root = app.agents.get(is_root=True)
    root = next((a for a in spec.agents if a.is_root), spec.agents[0] if spec.agents else None)
    agents: dict[str, Agent] = {}
    if root is None:
        services.agent_delete(agent=created_root)
        return agents
    with _about(f"agents.{root.name}", _AGENT_FIELDS):
        agents[root.name] = services.agent_update(
            agent=created_root,
            display_name=root.name,
            instructions=root.instructions,
            description=root.description,
        )
    for agent in spec.agents:
        if agent is root:
            continue
        with _about(f"agents.{agent.name}", _AGENT_FIELDS):
            agents[agent.name] = services.agent_create(
                app=app,
                display_name=agent.name,
                instructions=agent.instructions,
                description=agent.description,
                is_root=False,
            )
    for agent in spec.agents:
        with _about(f"agents.{agent.name}", _AGENT_FIELDS):
            if agent.tools or agent.children:
                services.agent_update(
                    agent=agents[agent.name],
                    tools=[tools[t] for t in agent.tools],
                    children=[agents[c] for c in agent.children],
                )
        for i, callback in enumerate(agent.callbacks):
            with _about(f"agents.{agent.name}.callbacks[{i}]"):
                services.callback_create(
                    agent=agents[agent.name],
                    kind=callback.kind.value,
                    code=callback.code,
                    order=callback.order,
                )
    return agents
