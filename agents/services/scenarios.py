"""Scenarios: session inputs, a token budget and steps, created or changed field by field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction

from agents import selectors
from agents.core import rules
from agents.core.diagnostics import Diagnostic, Message
from agents.core.script import format_script, parse_script
from agents.models import Agent, Scenario, ScenarioStep, expectation_to_json
from agents.services.common import (
    SCENARIO_FIELDS,
    Actor,
    changed,
    check_version,
    error,
    locked,
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


@transaction.atomic
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
    a new scenario takes the defaults for the others. `steps_script` replaces every step."""
    unknown = set(fields) - set(SCENARIO_FIELDS)
    if unknown:
        raise TypeError(f"scenario_save() got unexpected fields {sorted(unknown)}")
    if scenario is None:
        scenario = Scenario(agent=agent, **rules.SCENARIO_DEFAULTS)
        before = None
        script = ""
    else:
        scenario = locked(Scenario, scenario.pk)
        check_version(scenario, expected_version)
        before = snapshot(scenario)
        script = scenario_script(scenario)
    for key, value in fields.items():
        if key == "steps_script":
            script = value
        elif key == "name":
            scenario.name = value.strip()
        elif key == "session_values":
            scenario.session_values = {} if value is None else value
        else:
            setattr(scenario, key, value)
    if scenario.name is None:
        scenario.name = ""
    if cx is not None:
        scenario.cx = dict(cx)
    parsed = parse_script(script)
    diagnostics = _scenario_problems(scenario)
    diagnostics += on_field(parsed.diagnostics, "steps_script")
    raise_if(diagnostics)
    save(scenario)
    if before is None or "steps_script" in fields:
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
    changed(
        app=agent.app_id,
        actor=actor,
        action="scenario.create" if before is None else "scenario.update",
        name=f"{scenario.name} ({agent.display_name})",
        before=before,
        after={**snapshot(scenario), "steps_script": script},
    )
    return scenario


@transaction.atomic
def scenario_delete(*, scenario: Scenario, actor: Actor = None) -> None:
    changed(
        app=scenario.agent.app_id,
        actor=actor,
        action="scenario.delete",
        name=scenario.name,
        before=snapshot(scenario),
    )
    scenario.delete()
