"""Variables: typed, with defaults that fit their type or schema; renames rewrite references."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agents.core import rules
from agents.core import types as core_types
from agents.core.diagnostics import Diagnostic, Message
from agents.core.rename import RenameKind, rename_state_in_code, rename_state_key
from agents.models import (
    AgentApp,
    Callback,
    Scenario,
    ScenarioStep,
    Schema,
    Tool,
    Variable,
    VariableType,
)
from agents.services.common import (
    UNSET,
    Actor,
    app_write,
    changed,
    check_version,
    error,
    locked,
    model_update,
    on_field,
    raise_if,
    rewrite_instructions,
    rewrite_text_field,
    save,
    snapshot,
    unique,
)
from agents.services.schemas import schema_map


def _schemas_for(variable: Variable) -> dict[str, dict]:
    if variable.app_id is not None:
        return schema_map(variable.app)
    return {variable.schema.name: variable.schema.json_schema} if variable.schema_id else {}


def variable_problems(variable: Variable) -> list[Diagnostic]:
    diagnostics = rules.name_problems(variable.name)
    diagnostics += unique(Variable, variable, what="variable")
    if variable.type not in VariableType.values:
        diagnostics.append(
            error(
                "type",
                Message(
                    "'%(type)s' is not a variable type; choose one of Text, "
                    "Number, Yes/No, Custom object or List.",
                    type=variable.type,
                ),
                "SC005",
            )
        )
        return diagnostics
    if variable.type == VariableType.LIST:
        if variable.item_type not in VariableType.values or variable.item_type == VariableType.LIST:
            diagnostics.append(
                error(
                    "item_type",
                    Message(
                        "Choose the type of the list's items: Text, Number, Yes/No or "
                        "Custom object."
                    ),
                    "SC005",
                )
            )
            return diagnostics
    else:
        variable.item_type = ""
    needs_schema = VariableType.OBJECT in (variable.type, variable.item_type)
    if needs_schema and variable.schema_id is None:
        diagnostics.append(
            error(
                "schema",
                Message("A custom object needs a schema: pick one or create it first."),
                "SC006",
            )
        )
        return diagnostics
    if not needs_schema:
        variable.schema = None
    if (
        variable.schema_id is not None
        and variable.app_id
        and variable.schema.app_id != variable.app_id
    ):
        diagnostics.append(error("schema", Message("That schema belongs to another app."), "SC006"))
        return diagnostics
    if variable.default is not None:
        diagnostics += on_field(
            core_types.validate_value(variable.default, variable.to_spec(), _schemas_for(variable)),
            "default",
        )
    return diagnostics


@app_write
def variable_create(
    *,
    app: AgentApp,
    name: str,
    type: str,
    default: Any = None,
    description: str = "",
    item_type: str = "",
    schema: Schema | None = None,
    cx: Mapping[str, Any] | None = None,
    actor: Actor = None,
) -> Variable:
    variable = Variable(
        cx=dict(cx or {}),
        app=app,
        name=name,
        type=type,
        default=default,
        description=description,
        item_type=item_type or "",
        schema=schema,
    )
    raise_if(variable_problems(variable))
    save(variable)
    changed(app=app, actor=actor, action="variable.create", name=name, after=snapshot(variable))
    return variable


@app_write
def variable_update(
    *,
    variable: Variable,
    name: str | None = None,
    type: str | None = None,
    default: Any = UNSET,
    description: str | None = None,
    item_type: str | None = None,
    schema: Schema | Any | None = UNSET,
    expected_version: int | None = None,
    update_references: bool = False,
    update_code: bool = False,
    actor: Actor = None,
) -> Variable:
    """Change a variable; a new name with `update_references` also rewrites every reference,
    and with `update_code` the `context.state[...]` accesses of tool and callback code, all
    in this one transaction."""
    variable = locked(Variable, variable.pk)
    check_version(variable, expected_version)
    before = snapshot(variable)
    if name is not None and name != variable.name and update_references:
        variable = variable_rename(
            variable=variable, new_name=name, update_code=update_code, actor=actor
        )
    given = {"name": name, "type": type, "description": description, "item_type": item_type}
    data = {key: value for key, value in given.items() if value is not None}
    if default is not UNSET:
        data["default"] = default
    if schema is not UNSET:
        data["schema"] = schema
    variable, _ = model_update(
        instance=variable,
        fields=("name", "type", "item_type", "schema", "default", "description"),
        data=data,
        lock=False,
        before=before,
        problems=variable_problems,
        actor=actor,
        action="variable.update",
        name=lambda v: v.name,
    )
    return variable


@app_write
def variable_delete(*, variable: Variable, actor: Actor = None) -> None:
    changed(
        app=variable.app_id,
        actor=actor,
        action="variable.delete",
        name=variable.name,
        before=snapshot(variable),
    )
    variable.delete()


@app_write
def variable_rename(
    *,
    variable: Variable,
    new_name: str,
    expected_version: int | None = None,
    update_code: bool = False,
    actor: Actor = None,
) -> Variable:
    """Rename a variable and every reference to it: instructions, tool headers, OpenAPI, mocks;
    with `update_code` also the state accesses in tool and callback code."""
    variable = locked(Variable, variable.pk)
    check_version(variable, expected_version)
    old = variable.name
    variable.name = new_name
    raise_if(rules.name_problems(new_name) + unique(Variable, variable, what="variable"))
    save(variable)
    changed(
        app=variable.app_id,
        actor=actor,
        action="variable.rename",
        name=new_name,
        before={"name": old},
        after={"name": new_name},
    )
    rewrite_instructions(
        app_id=variable.app_id, kind=RenameKind.VARIABLE, old=old, new=new_name, actor=actor
    )
    for tool in Tool.objects.select_for_update().filter(app_id=variable.app_id):
        headers = rename_state_key(tool.mcp_headers, old, new_name)
        openapi = rename_state_key(tool.openapi_spec, old, new_name)
        mock_state = {(new_name if k == old else k): v for k, v in (tool.mock_state or {}).items()}
        fields = {"mcp_headers": headers, "openapi_spec": openapi, "mock_state": mock_state}
        before = {f: getattr(tool, f) for f in fields if getattr(tool, f) != fields[f]}
        if before:
            tool.mcp_headers, tool.openapi_spec, tool.mock_state = headers, openapi, mock_state
            save(tool)
            changed(
                app=variable.app_id,
                actor=actor,
                action="tool.update",
                name=tool.name,
                before=before,
                after={f: fields[f] for f in before},
            )
    _rename_in_scenarios(variable.app_id, old, new_name, actor)
    if update_code:
        _rename_in_code(variable.app_id, old, new_name, actor)
    return variable


def _renamed_key(values: Any, old: str, new: str) -> Any:
    """`values` (a JSON object) with the key `old` called `new`, in its place; unchanged when
    it has no `old` or already has a `new` (nothing is overwritten)."""
    if not isinstance(values, dict) or old not in values or new in values:
        return values
    return {(new if key == old else key): value for key, value in values.items()}


def _rename_in_scenarios(app_id: int, old: str, new: str, actor: Actor) -> None:
    """Scenarios name variables too: their session values, each `variables:` line and each
    `expect state` move to the new name (one audit record per scenario changed)."""
    scenarios = Scenario.objects.select_for_update().filter(agent__app_id=app_id)
    steps_of: dict[int, list[ScenarioStep]] = {}
    for step in ScenarioStep.objects.select_for_update().filter(scenario__agent__app_id=app_id):
        steps_of.setdefault(step.scenario_id, []).append(step)
    for scenario in scenarios:
        before: dict[str, Any] = {}
        after: dict[str, Any] = {}
        values = _renamed_key(scenario.session_values, old, new)
        if values is not scenario.session_values:
            before["session_values"], after["session_values"] = scenario.session_values, values
            scenario.session_values = values
            save(scenario)
        for step in steps_of.get(scenario.pk, []):
            label = f"step {step.order + 1}"
            variables = _renamed_key(step.variables, old, new)
            expectation = step.expectation
            if isinstance(expectation, dict) and expectation.get("kind") == "state":
                value = _renamed_key(expectation.get("value"), old, new)
                if value is not expectation.get("value"):
                    expectation = {**expectation, "value": value}
            if variables is step.variables and expectation is step.expectation:
                continue
            if variables is not step.variables:
                before[f"{label} variables"], after[f"{label} variables"] = (
                    step.variables,
                    variables,
                )
            if expectation is not step.expectation:
                before[f"{label} expect state"] = step.expectation.get("value")
                after[f"{label} expect state"] = expectation.get("value")
            step.variables, step.expectation = variables, expectation
            save(step)
        if after:
            changed(
                app=app_id,
                actor=actor,
                action="scenario.update",
                name=scenario.name,
                before=before,
                after=after,
            )


def _rename_in_code(app_id: int, old: str, new: str, actor: Actor) -> None:
    """`context.state["old"]` becomes `context.state["new"]` in every tool and callback."""
    rewrite_text_field(
        app_id=app_id,
        objects=Tool.objects.select_for_update().filter(app_id=app_id).exclude(python_code=""),
        field="python_code",
        rewrite=lambda code: rename_state_in_code(code, old, new),
        action="tool.update",
        name_of=lambda tool: tool.name,
        actor=actor,
    )
    rewrite_text_field(
        app_id=app_id,
        objects=Callback.objects.select_for_update().filter(agent__app_id=app_id),
        field="code",
        rewrite=lambda code: rename_state_in_code(code, old, new),
        action="callback.update",
        name_of=lambda callback: f"{callback.kind} callback",
        actor=actor,
    )
