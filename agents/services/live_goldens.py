"""Goldens from live runs: a run's user turns and what the model did, saved as a scenario
whose expectations the designer then edits like any script."""

from __future__ import annotations

from typing import Any

from agents.core.diagnostics import Message
from agents.core.script import format_script, parse_script
from agents.core.spec import ExpectationSpec, ExpectKind, StepKind, StepSpec
from agents.models import LiveRun, Scenario
from agents.services.common import Actor, ServiceError, error
from agents.services.scenarios import scenario_save

__all__ = ["golden_steps", "live_run_save_golden"]


def golden_steps(run: LiveRun) -> list[StepSpec]:
    """A live run as a golden: each turn's user input, then what the model did — the
    calls with their arguments (``expect call``), transfers, the variables the turn
    changed (``expect state``) and the reply (``expect agent``)."""
    user_steps = [s for s in parse_script(run.script).steps if s.kind is StepKind.USER]
    mocks: dict[int, list[StepSpec]] = {}
    turn = -1
    for step in parse_script(run.script).steps:
        if step.kind is StepKind.USER:
            turn += 1
        elif step.expectation is not None and step.expectation.kind is ExpectKind.MOCK:
            mocks.setdefault(max(turn, 0), []).append(step)
    events_by_turn: dict[int, list[dict[str, Any]]] = {}
    for event in run.timeline:
        events_by_turn.setdefault(int(event["turn"]), []).append(event)
    steps: list[StepSpec] = []
    for index, user in enumerate(user_steps):
        steps.append(user)
        steps.extend(mocks.get(index, []))
        changed: dict[str, Any] = {}
        replies: list[str] = []
        for event in events_by_turn.get(index, []):
            kind = event["kind"]
            if kind == "tool_call" and event["source"] == "transfer_to_agent":
                continue
            if kind == "tool_call":
                args = event["value"] if isinstance(event["value"], dict) else {}
                expectation = ExpectationSpec(ExpectKind.CALL, tool=event["source"], value=args)
                steps.append(StepSpec(StepKind.EXPECT, expectation=expectation))
            elif kind == "transfer" and isinstance(event["value"], dict):
                expectation = ExpectationSpec(ExpectKind.TRANSFER, agent=event["value"]["to"])
                steps.append(StepSpec(StepKind.EXPECT, expectation=expectation))
            elif kind == "state_update" and event.get("variable"):
                changed[event["variable"]] = event["value"]
            elif kind == "agent":
                replies.append(event["text"])
        if changed:
            expectation = ExpectationSpec(ExpectKind.STATE, value=changed)
            steps.append(StepSpec(StepKind.EXPECT, expectation=expectation))
        if replies:
            expectation = ExpectationSpec(ExpectKind.AGENT, value=" ".join(replies))
            steps.append(StepSpec(StepKind.EXPECT, expectation=expectation))
    return steps


def live_run_save_golden(*, run: LiveRun, actor: Actor, name: str) -> Scenario:
    """Save a live run as a new scenario of its agent whose expectations are what the model
    did (the designer edits them like any script). Audited, as every scenario save."""
    if run.mode != "live":
        raise ServiceError(
            [error("run", Message("Save a live run, not a replay, as a golden."), "SC482")]
        )
    scenario = run.scenario
    if scenario is None:
        raise ServiceError(
            [
                error(
                    "run", Message("The run's scenario was deleted: its agent is unknown."), "SC482"
                )
            ]
        )
    steps = golden_steps(run)
    script = format_script(steps)
    return scenario_save(
        agent=scenario.agent,
        actor=actor,
        name=name,
        steps_script=script,
        session_values=scenario.session_values,
        now=scenario.now,
        use_mocks=scenario.use_mocks,
        token_budget=scenario.token_budget,
    )
