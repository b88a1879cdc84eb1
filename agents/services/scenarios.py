"""Scenarios: session inputs, a token budget and steps, created or changed field by field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agents import selectors
from agents.core import rules
from agents.core.diagnostics import Diagnostic, Message
from agents.core.script import format_script, parse_script
from agents.core.spec import StepSpec
from agents.models import Agent, Scenario, ScenarioStep, expectation_to_json
from agents.services.common import (
    SCENARIO_FIELDS,
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
    save,
    snapshot,
)


def _scenario_problems(scenario: Scenario) -> list[Diagnostic]:
    diagnostics = rules.scenario_name_problems(scenario.name)
    if (
        not diagnostics
        and Scenario.objects.filter(agent_id=scenario.agent_id, name=scenario.name)
        .exclude(pk=scenario.pk)
        .exists()
    ):
        diagnostics.append(
            error(
                "name",
                Message("This agent already has a scenario named '%(name)s'.", name=scenario.name),
                "SC004",
            )
        )
    diagnostics += rules.token_budget_problems(scenario.token_budget)
    diagnostics += rules.channel_problems(scenario.channel)
    diagnostics += rules.modality_problems(scenario.modality)
    diagnostics += rules.now_problems(scenario.now)
    app_spec = selectors.app_spec(scenario.agent.app)
    diagnostics += rules.session_values_problems(scenario.session_values, app_spec)
    return diagnostics


def scenario_script(scenario: Scenario) -> str:
    """The saved steps as the step script the designer edits."""
    return format_script(tuple(step.to_spec() for step in scenario.steps.all()))


@app_write
def scenario_save(
    *,
    agent: Agent,
    scenario: Scenario | None = None,
    expected_version: int | None = None,
    cx: Mapping[str, Any] | None = None,
    actor: Actor = None,
    **fields: Any,
) -> Scenario:
    """Create (`scenario` None) or change a scenario. Only the fields given change (a PATCH);
    a new scenario takes the defaults for the others. `steps_script` replaces every step.

    What does not stop the save is on the returned scenario's ``warnings``, on the form
    field (``steps_script``): a step naming a tool no agent of the app has (SC012)."""
    unknown = set(fields) - set(SCENARIO_FIELDS)
    if unknown:
        raise TypeError(f"scenario_save() got unexpected fields {sorted(unknown)}")
    data: dict[str, Any] = {}
    for key, value in fields.items():
        if key == "name":
            data["name"] = value.strip()
        elif key == "session_values":
            data["session_values"] = {} if value is None else value
        elif key != "steps_script":
            data[key] = value
    if cx is not None:
        data["cx"] = dict(cx)

    def write_steps(scenario: Scenario) -> None:
        scenario.steps.all().delete()
        ScenarioStep.objects.bulk_create(
            ScenarioStep(
                scenario=scenario,
                order=i,
                kind=step.kind.value,
                text=step.text,
                tool=step.tool,
                args=step.args,
                callback_kind=step.callback.value if step.callback else "",
                variables=step.variables,
                event=step.event,
                expectation=expectation_to_json(step.expectation),
            )
            for i, step in enumerate(parsed.steps)
        )

    def problems(scenario: Scenario) -> list[Diagnostic]:
        return _scenario_problems(scenario) + on_field(parsed.diagnostics, "steps_script")

    if scenario is not None:
        scenario = locked(Scenario, scenario.pk)
        check_version(scenario, expected_version)
        script = fields.get("steps_script", UNSET)
        if script is UNSET:
            script = scenario_script(scenario)
        parsed = parse_script(script)
        scenario, _ = model_update(
            instance=scenario,
            fields=(*(f for f in SCENARIO_FIELDS if f != "steps_script"), "cx"),
            data=data,
            lock=False,
            problems=problems,
            state=lambda s: {**snapshot(s), "steps_script": script},
            before=snapshot(scenario),
            actor=actor,
            action="scenario.update",
            name=lambda s: f"{s.name} ({agent.display_name})",
            app=agent.app_id,
            on_save=write_steps if "steps_script" in fields else None,
        )
        scenario.warnings = _step_warnings(agent, parsed.steps)
        return scenario
    scenario = Scenario(agent=agent, **rules.SCENARIO_DEFAULTS)
    for key, value in data.items():
        setattr(scenario, key, value)
    if scenario.name is None:
        scenario.name = ""
    script = fields.get("steps_script", "")
    parsed = parse_script(script)
    raise_if(problems(scenario))
    save(scenario)
    write_steps(scenario)
    changed(
        app=agent.app_id,
        actor=actor,
        action="scenario.create",
        name=f"{scenario.name} ({agent.display_name})",
        after={**snapshot(scenario), "steps_script": script},
    )
    scenario.warnings = _step_warnings(agent, parsed.steps)
    return scenario


def _step_warnings(agent: Agent, steps: tuple[StepSpec, ...]) -> list[Diagnostic]:
    app_spec = selectors.app_spec(agent.app)
    return on_field(
        rules.scenario_tool_problems(steps, app_spec, agent.display_name), "steps_script"
    )


@app_write
def scenario_delete(*, scenario: Scenario, actor: Actor = None) -> None:
    changed(
        app=scenario.agent.app_id,
        actor=actor,
        action="scenario.delete",
        name=scenario.name,
        before=snapshot(scenario),
    )
    scenario.delete()
