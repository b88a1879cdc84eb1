"""The simulated conversation beside the preview: scenario in, timeline view-model out.

The core simulates (pure, deterministic); this module chooses the scenario,
hands the core a code runner that goes through the sandbox, and shapes the
result for the template.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext_lazy as _

from agents import services
from agents.core.evaluate import ExpectationResult, ScenarioEvaluation
from agents.core.render import render_value
from agents.core.simulate import SimulationResult
from agents.models import Agent, AgentApp, Scenario


@dataclass
class StateRow:
    name: str
    value: str
    changed: bool


_BADGE = {"passed": _("✓ passed"), "failed": _("✗ failed"), "needs_model": _("? needs a model")}


def _pretty(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, indent=2)
    except (TypeError, ValueError):
        return render_value(value)


@dataclass
class ExpectView:
    """An expectation's outcome at its step of the timeline (an item among the events)."""

    result: ExpectationResult
    kind: str = "expect"
    index: int | None = None
    tokens: int = 0

    @property
    def step(self) -> int:
        return self.result.step

    @property
    def status(self) -> str:
        return self.result.status

    @property
    def badge(self) -> str:
        return _BADGE[self.result.status]

    @property
    def expected_text(self) -> str:
        return _pretty(self.result.expected)

    @property
    def actual_text(self) -> str:
        return _pretty(self.result.actual)


def _interleave(events: list[Any], expectations: list[ExpectationResult]) -> list[Any]:
    """The turn's events with each expectation placed at its step (after the events the
    steps before it produced)."""
    pending = sorted(expectations, key=lambda r: r.step)
    items: list[Any] = []
    for event in events:
        while pending and event.step is not None and pending[0].step < event.step:
            items.append(ExpectView(pending.pop(0)))
        if event.step is None:  # after_agent callbacks: the end of the turn
            items.extend(ExpectView(r) for r in pending)
            pending = []
        items.append(event)
    items.extend(ExpectView(r) for r in pending)
    return items


@dataclass
class TurnView:
    index: int
    events: list[Any]
    state: list[StateRow]
    builtins: dict[str, str]
    http: list[Any]
    warnings: list[Any]
    tokens_used: int
    budget: int
    dropped: set[int]

    @property
    def meter_percent(self) -> int:
        return min(100, round(100 * self.tokens_used / self.budget)) if self.budget else 0


@dataclass
class Conversation:
    scenarios: list[Scenario]
    scenario: Scenario | None
    result: SimulationResult | None = None
    turns: list[TurnView] = field(default_factory=list)
    diagnostics: list[Any] = field(default_factory=list)
    use_mocks: bool = False
    budget: int = 0
    evaluation: ScenarioEvaluation | None = None


def _mocks_choice(params: Mapping[str, Any], scenario: Scenario) -> bool | None:
    """The mocks checkbox, when it was shown for this scenario (a hidden "off" precedes it,
    so unticking it is a choice too); None keeps the scenario's own setting."""
    if str(params.get("mocks_for", "")) != str(scenario.pk):
        return None
    # The hidden "off" and the ticked box both arrive, in an order the browser chooses.
    given = params.getlist("use_mocks") if hasattr(params, "getlist") else [params.get("use_mocks")]
    return any(value in ("on", "true", "1") for value in given)


def build_conversation(app: AgentApp, agent: Agent, params: Mapping[str, Any]) -> Conversation:
    scenarios = list(agent.scenarios.all())
    wanted = str(params.get("scenario", "") or "")
    scenario = next((s for s in scenarios if str(s.pk) == wanted), None) or next(
        iter(scenarios), None
    )
    conversation = Conversation(scenarios=scenarios, scenario=scenario)
    if scenario is None:
        return conversation
    run = services.scenario_run(
        app=app,
        agent=agent,
        scenario=scenario,
        instructions=params.get("instructions"),
        use_mocks=_mocks_choice(params, scenario),
    )
    scenario_spec, result = run.spec, run.result
    conversation.evaluation = run.evaluation
    use_mocks = scenario_spec.use_mocks
    conversation.result = result
    conversation.use_mocks = use_mocks
    conversation.budget = scenario_spec.token_budget
    conversation.diagnostics = list(result.diagnostics)
    events = result.events
    for turn in result.turns:
        conversation.turns.append(
            TurnView(
                index=turn.index,
                events=_interleave(
                    [events[i] for i in turn.events],
                    [r for r in run.evaluation.results if r.turn == turn.index],
                ),
                state=[
                    StateRow(k, render_value(v), k in turn.changed)
                    for k, v in turn.state_after.items()
                ],
                builtins={
                    k: v if isinstance(v, str) else render_value(v)
                    for k, v in turn.builtins.items()
                },
                http=list(turn.http),
                warnings=list(turn.warnings),
                tokens_used=turn.tokens_used,
                budget=scenario_spec.token_budget,
                dropped=set(turn.dropped),
            )
        )
    return conversation
