"""A live run's outcome and its record: the one place a ``LiveRun`` row is written, and
its timeline.

A run is recorded with every model call (its request's fingerprint and the request, the
answer), the drift of a replay, the expectations' results, the timeline the designer
draws, the final state, the figures (calls, tokens, cost, retries) and who ran it on which
revision of the app.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from agents.core.evaluate import ScenarioEvaluation
from agents.core.run_data import json_safe
from agents.core.script import format_script
from agents.core.simulate import SimulationResult
from agents.core.spec import ScenarioSpec
from agents.models import AgentApp, LiveRun, Scenario
from agents.services.common import Actor


@dataclass(frozen=True)
class LiveOutcome:
    """What a live run or a replay did: its stored run (None when not recorded), the
    scenario, the simulation, the expectations' verdicts, the model calls (their record),
    the drift of a replay, the model's name and the error that ended it ("" when none)."""

    run: LiveRun | None
    spec: ScenarioSpec
    result: SimulationResult
    evaluation: ScenarioEvaluation
    calls: list[dict[str, Any]]
    drift: list[dict[str, Any]]
    model: str
    error: str = ""

    @property
    def tokens(self) -> tuple[int, int]:
        return (
            sum(c["answer"].get("tokens_in", 0) for c in self.calls),
            sum(c["answer"].get("tokens_out", 0) for c in self.calls),
        )

    @property
    def cost(self) -> float:
        return sum(float(c["answer"].get("cost") or 0.0) for c in self.calls)


def timeline(result: SimulationResult, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The run's events for the designer's timeline, with each model call's tokens/cost."""
    out = []
    for event in result.events:
        entry: dict[str, Any] = {
            "index": event.index,
            "turn": event.turn,
            "kind": event.kind,
            "label": event.label or event.text,
            "text": event.text,
            "source": event.source,
            "variable": event.variable,
            "value": json_safe(event.value),
            "model_call": event.model_call,
        }
        if event.model_call is not None and event.model_call < len(calls):
            answer = calls[event.model_call]["answer"]
            entry["tokens_in"] = answer.get("tokens_in", 0)
            entry["tokens_out"] = answer.get("tokens_out", 0)
            entry["cost"] = answer.get("cost", 0.0)
        if event.error is not None:
            entry["error"] = event.error.message
        out.append(entry)
    return out


@transaction.atomic
def live_run_record(
    outcome: LiveOutcome,
    *,
    app: AgentApp,
    scenario: Scenario | None,
    agent_name: str,
    replay_of: LiveRun | None,
    actor: Actor,
) -> LiveOutcome:
    """Record `outcome` as a `LiveRun`; the outcome with its stored run."""
    result, calls = outcome.result, outcome.calls
    answers = [c["answer"] for c in calls]
    run = LiveRun.objects.create(
        app=app,
        scenario=scenario,
        scenario_name=outcome.spec.name,
        agent_name=agent_name,
        model_name=outcome.model,
        mode="replay" if replay_of is not None else "live",
        replay_of=replay_of,
        script=format_script(outcome.spec.steps),
        now=outcome.spec.session.now,
        status=outcome.evaluation.status,
        error=outcome.error,
        calls=calls,
        drift=outcome.drift,
        evaluation=[dataclasses.asdict(r) for r in outcome.evaluation.results],
        timeline=timeline(result, calls),
        final_state=json_safe(result.final_state),
        diagnostics=[
            {"code": d.code, "severity": d.severity.value, "message": d.message}
            for d in result.diagnostics
        ],
        model_calls=len(calls),
        tokens_in=sum(a.get("tokens_in", 0) for a in answers),
        tokens_out=sum(a.get("tokens_out", 0) for a in answers),
        cost=sum(float(a.get("cost") or 0.0) for a in answers),
        retries=sum(a.get("retries", 0) for a in answers),
        app_revision=app.revision,
        ran_by=actor if actor is not None and actor.pk else None,
        ran_by_name=actor.get_username() if actor is not None and actor.pk else "",
    )
    return dataclasses.replace(outcome, run=run)


def replayable_recording(scenario: Scenario) -> LiveRun | None:
    """The recording a replay of `scenario` uses (*Replay*, ``evaluate --replay``): its
    latest **successful** live run — one that ended without a model error (a wrong key,
    a model down, a timeout, a malformed answer, a cap, a Cancel). A failed run is kept
    and shown, but never replaces the good recording. None when there is none."""
    return (
        LiveRun.objects.filter(scenario=scenario, mode="live", error="")
        .order_by("-created_at", "-id")
        .first()
    )
