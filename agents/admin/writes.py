"""The admin's writes, through the services: a new object is the service's create (its
name rules, uniqueness and limits, its history entry, the app's revision), a change the
service's update (a rename rewrites references, a stale form is refused, the history
records it), a delete the service's delete. agents/admin/designs.py calls these from save_model,
save_formset and delete_model; objects without a service (scenario steps, a share's
change) are saved as the admin always did, and recorded in the history."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from django.db.models import Model
from django.http import HttpRequest

from agents import services
from agents.models import Agent, AgentApp, AppShare, Callback, Scenario, Schema, Tool, Variable
from agents.services.common import SCENARIO_FIELDS, TOOL_FIELDS, ServiceError, changed

EXPECTED_VERSION = "expected_version"  # the admin form's hidden field: the version it showed

# Each model's parent: fixed once the object exists (the services move nothing between
# apps or agents), so the admin shows it read-only on a change.
PARENT_FIELD: Mapping[type[Model], str] = {
    Variable: "app",
    Schema: "app",
    Tool: "app",
    Agent: "app",
    Callback: "agent",
    Scenario: "agent",
}


def app_id_of(obj: Model) -> int | None:
    """The app an object belongs to (None for an app the admin has not saved yet)."""
    from agents.models import ScenarioStep

    if isinstance(obj, AgentApp):
        return obj.pk
    if isinstance(obj, Callback | Scenario):
        return obj.agent.app_id
    if isinstance(obj, ScenarioStep):
        return obj.scenario.agent.app_id
    return getattr(obj, "app_id", None)


def record(request: HttpRequest, obj: Model, verb: str) -> None:
    """An operator's write without a service is history too, and expires the cached spec."""
    app_id = app_id_of(obj)
    if app_id is not None and AgentApp.objects.filter(pk=app_id).exists():
        changed(
            app=app_id,
            actor=request.user,
            action=f"{obj._meta.model_name}.admin_{verb}",
            name=str(obj),
        )


class RowRefused(ServiceError):
    """A service refused an inline row: `prefix` is that row's form."""

    def __init__(self, prefix: str, refusal: ServiceError) -> None:
        super().__init__(refusal.diagnostics)
        self.prefix = prefix


def _given(data: Mapping[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    return {name: data[name] for name in names if name in data}


VARIABLE_FIELDS = ("name", "type", "item_type", "schema", "default", "description")
AGENT_FIELDS = ("display_name", "instructions", "description", "tools", "children")
SCENARIO_SET_FIELDS = tuple(f for f in SCENARIO_FIELDS if f != "steps_script")


def _agent_fields(data: Mapping[str, Any]) -> dict[str, Any]:
    fields = _given(data, AGENT_FIELDS)
    for links in ("tools", "children"):
        if links in fields:
            fields[links] = list(fields[links])
    return fields


def _update_app(obj: AgentApp, data: Mapping[str, Any], **kw: Any) -> None:
    services.app_update(app=obj, **_given(data, ("name", "description")), **kw)
    if "owner" in data and data["owner"].pk != AgentApp.objects.get(pk=obj.pk).owner_id:
        AgentApp.objects.filter(pk=obj.pk).update(owner=data["owner"])
        changed(app=obj.pk, actor=kw["actor"], action="agentapp.admin_change", name=obj.name)


def _update_variable(obj: Variable, data: Mapping[str, Any], **kw: Any) -> None:
    fields = _given(data, VARIABLE_FIELDS)
    services.variable_update(variable=obj, update_references=True, **fields, **kw)


def _update_schema(obj: Schema, data: Mapping[str, Any], **kw: Any) -> None:
    services.schema_update(schema=obj, **_given(data, ("name", "json_schema", "description")), **kw)


def _update_tool(obj: Tool, data: Mapping[str, Any], **kw: Any) -> None:
    services.tool_update(
        tool=obj, update_references=True, **_given(data, ("name", *TOOL_FIELDS)), **kw
    )


def _update_agent(obj: Agent, data: Mapping[str, Any], **kw: Any) -> None:
    fields = _agent_fields(data)
    agent = services.agent_update(agent=obj, is_root=bool(data.get("is_root")), **fields, **kw)
    if "is_root" in data and not data["is_root"] and agent.is_root:
        # The services move the root to another agent; unticking it here leaves none.
        Agent.objects.filter(pk=agent.pk).update(is_root=False)
        changed(
            app=agent.app_id,
            actor=kw["actor"],
            action="agent.admin_change",
            name=agent.display_name,
            before={"is_root": True},
            after={"is_root": False},
        )


def _update_callback(obj: Callback, data: Mapping[str, Any], **kw: Any) -> None:
    services.callback_update(callback=obj, **_given(data, ("code", "kind", "order")), **kw)


def _update_scenario(obj: Scenario, data: Mapping[str, Any], **kw: Any) -> None:
    fields = _given(data, SCENARIO_SET_FIELDS)
    services.scenario_save(agent=obj.agent, scenario=obj, **fields, **kw)


UPDATE: Mapping[type[Model], Callable[..., None]] = {
    AgentApp: _update_app,
    Variable: _update_variable,
    Schema: _update_schema,
    Tool: _update_tool,
    Agent: _update_agent,
    Callback: _update_callback,
    Scenario: _update_scenario,
}

# A new object, from the admin's unsaved instance (its parent set) and the form's data.
CREATE: Mapping[type[Model], Callable[[Any, Mapping[str, Any], Any], Model]] = {
    AgentApp: lambda obj, data, actor: services.app_create(
        owner=obj.owner, **_given(data, ("name", "description", "cx")), actor=actor
    ),
    Variable: lambda obj, data, actor: services.variable_create(
        app=obj.app, **_given(data, (*VARIABLE_FIELDS, "cx")), actor=actor
    ),
    Schema: lambda obj, data, actor: services.schema_create(
        app=obj.app,
        name=data.get("name", ""),
        json_schema=obj.json_schema,  # the app page's inline row has no such field
        description=data.get("description", ""),
        actor=actor,
    ),
    Tool: lambda obj, data, actor: services.tool_create(
        app=obj.app, **_given(data, ("name", *TOOL_FIELDS, "cx")), actor=actor
    ),
    Agent: lambda obj, data, actor: services.agent_create(
        app=obj.app,
        is_root=bool(data.get("is_root")),
        **_agent_fields(data),
        **_given(data, ("cx",)),
        actor=actor,
    ),
    Callback: lambda obj, data, actor: services.callback_create(
        agent=obj.agent, **_given(data, ("kind", "code", "order", "cx")), actor=actor
    ),
    Scenario: lambda obj, data, actor: services.scenario_save(
        agent=obj.agent, **_given(data, (*SCENARIO_SET_FIELDS, "cx")), actor=actor
    ),
    AppShare: lambda obj, data, actor: services.app_share(
        app=obj.app, user=obj.user, role=obj.role, actor=actor
    ),
}

DELETE: Mapping[type[Model], Callable[..., None]] = {
    AgentApp: lambda obj, actor: services.app_delete(app=obj, actor=actor),
    Variable: lambda obj, actor: services.variable_delete(variable=obj, actor=actor),
    Schema: lambda obj, actor: services.schema_delete(schema=obj, actor=actor),
    Tool: lambda obj, actor: services.tool_delete(tool=obj, actor=actor),
    Agent: lambda obj, actor: services.agent_delete(agent=obj, actor=actor),
    Callback: lambda obj, actor: services.callback_delete(callback=obj, actor=actor),
    Scenario: lambda obj, actor: services.scenario_delete(scenario=obj, actor=actor),
    AppShare: lambda obj, actor: services.app_unshare(app=obj.app, user=obj.user, actor=actor),
}


def _form_data(form: Any) -> dict[str, Any]:
    return {name: value for name, value in form.cleaned_data.items() if name in form.fields}


def save_new(request: HttpRequest, obj: Model, form: Any) -> bool:
    """A new object created by its service (False: it has none, the caller saves it).

    `obj`, the admin's unsaved instance, becomes the created row: the admin's log entry,
    its inlines and its redirect go on with it."""
    create = CREATE.get(type(obj))
    if create is None:
        return False
    data = _form_data(form)
    data.pop(EXPECTED_VERSION, None)
    created = create(obj, data, request.user)
    obj.__dict__.update(
        {name: value for name, value in created.__dict__.items() if name != "_state"}
    )
    obj._state.adding, obj._state.db = False, created._state.db
    return True


def save_changed(request: HttpRequest, obj: Model, form: Any) -> bool:
    """A changed object saved by its service (False: it has none, the caller saves it)."""
    update = UPDATE.get(type(obj))
    if update is None:
        return False
    data = _form_data(form)
    update(obj, data, expected_version=data.pop(EXPECTED_VERSION, None), actor=request.user)
    return True


def delete(request: HttpRequest, obj: Model) -> None:
    """Delete through the service (its refusals, its history), or as the admin does."""
    remove = DELETE.get(type(obj))
    if remove is not None:
        remove(obj, request.user)
        return
    record(request, obj, "delete")
    obj.delete()


def save_formset(request: HttpRequest, formset: Any) -> bool:
    """An inline formset's rows, each through its service (False: no service for them).

    A row's refusal names the row (RowRefused), so the admin shows it there."""
    if formset.model not in UPDATE and formset.model not in CREATE:
        return False
    deleted = set(formset.deleted_forms)
    # What the admin's change message reads, as BaseModelFormSet.save() leaves it.
    formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []
    for form in formset.forms:
        new = form in formset.extra_forms
        if new and (form in deleted or not form.has_changed()):
            continue
        try:
            if form in deleted:
                delete(request, form.instance)
                formset.deleted_objects.append(form.instance)
            elif new:
                setattr(form.instance, formset.fk.name, formset.instance)
                if not save_new(request, form.instance, form):
                    record(request, form.save(), "add")
                formset.new_objects.append(form.instance)
            elif form.has_changed():
                if not save_changed(request, form.instance, form):
                    record(request, form.save(), "change")
                formset.changed_objects.append((form.instance, form.changed_data))
        except ServiceError as exc:
            if form in deleted:  # a row ticked for deletion shows no errors: the page does
                whole = [replace(d, field="__all__") for d in exc.diagnostics]
                raise ServiceError(whole) from exc
            raise RowRefused(form.prefix, exc) from exc
    return True
