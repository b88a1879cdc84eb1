"""Which failed checks of a golden a call it leaves out explains (``explain_failures``).

A golden that lists only some calls (``extraToolCallBehavior: ALLOW``) is run offline with
only the calls it lists; a failed state or response check may then be the model's to
decide. The search tries, in order, one more call first in an earlier turn (or the check's
own): a tool the golden never lists, with the arguments another golden of the app lists
for it (``listed_calls``). A check that passes so *needs a model*, with the evidence; one
no such call explains stays *failed*. Pure given the simulation it is handed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from agents.core.diagnostics import Message
from agents.core.evaluate import (
    _UNLISTED,
    ExpectationResult,
    ScenarioEvaluation,
    _evaluation,
    allows_extra_calls,
    evaluate,
    step_turns,
)
from agents.core.simulate import SimulationResult, no_parameter_arguments
from agents.core.spec import AppSpec, ExpectationSpec, ExpectKind, ScenarioSpec, StepKind, StepSpec


@dataclass(frozen=True, slots=True)
class ListedCall:
    """A call with its arguments as a golden of the app lists it (`source`: that golden's
    name; "" for a tool without parameters, which has nothing to choose)."""

    tool: str
    args: dict[str, Any]
    source: str = ""

    def text(self) -> str:
        return f"{self.tool} {json.dumps(self.args, ensure_ascii=False, sort_keys=True)}"


def listed_calls(scenarios: Iterable[ScenarioSpec]) -> tuple[ListedCall, ...]:
    """Every call with arguments the goldens list (``expect call: Tool {args}``), once each,
    in the order they first appear: what a model of this app is known to call."""
    seen: dict[str, ListedCall] = {}
    for scenario in scenarios:
        for step in scenario.steps:
            e = step.expectation
            if e is None or e.kind is not ExpectKind.CALL or not isinstance(e.value, dict):
                continue
            call = ListedCall(e.tool, dict(e.value), scenario.name)
            seen.setdefault(call.text(), call)
    return tuple(seen.values())


def _agent_at_turns(scenario: ScenarioSpec, result: SimulationResult) -> dict[int, str]:
    """The agent each turn starts with (the scenario's, then each transfer's target)."""
    agent = scenario.agent
    out: dict[int, str] = {}
    for turn in result.turns:
        out[turn.index] = agent
        for i in turn.events:
            event = result.events[i]
            if event.kind == "transfer" and isinstance(event.value, dict) and event.value.get("to"):
                agent = str(event.value["to"])
    return out


def _insert_call(scenario: ScenarioSpec, turn: int, call: ListedCall) -> tuple[ScenarioSpec, int]:
    """`scenario` with ``expect call: call`` first in `turn` (after its user input), and the
    index the new step has."""
    turns = step_turns(scenario)
    start = turns.index(turn)
    at = start + 1 if scenario.steps[start].kind is StepKind.USER else start
    step = StepSpec(
        StepKind.EXPECT,
        expectation=ExpectationSpec(ExpectKind.CALL, tool=call.tool, value=dict(call.args)),
    )
    steps = (*scenario.steps[:at], step, *scenario.steps[at:])
    return replace(scenario, steps=steps), at


def _through_turn(scenario: ScenarioSpec, turn: int) -> ScenarioSpec:
    """`scenario` up to the end of `turn` (itself when that is its last turn)."""
    turns = step_turns(scenario)
    end = sum(1 for t in turns if t <= turn)
    return scenario if end == len(turns) else replace(scenario, steps=scenario.steps[:end])


def explain_failures(
    app: AppSpec,
    scenario: ScenarioSpec,
    result: SimulationResult,
    evaluation: ScenarioEvaluation,
    resimulate: Callable[[ScenarioSpec], SimulationResult],
    *,
    examples: Iterable[ListedCall] = (),
    budget: int = 24,
    extra_calls_allowed: bool | None = None,
    resimulate_many: Callable[[list[ScenarioSpec]], list[SimulationResult]] | None = None,
    trials_at_once: int = 1,
) -> ScenarioEvaluation:
    """For a golden that lists only some calls (``extraToolCallBehavior: ALLOW``): which of
    its failed checks a call it leaves out explains, with the evidence.

    Offline the scripted model makes only the listed calls. A failed state or response
    check is tried again with one more call first in an earlier turn (or its own) — a call
    of a tool the agent of that turn has and this golden never lists (one it lists, it has
    said when it expects), with the arguments a golden of the app lists for it
    (`examples`, ``listed_calls``) or ``{}`` for a tool without parameters — keeping the
    calls found for earlier failures (greedy, at most `budget` simulations). A check that
    passes so is **needs a model**: "a live model may make the calls this golden leaves
    out", naming the calls and the golden that lists them; one no such call explains stays
    **failed**. Pure given `resimulate` (the simulation of a scenario).

    `trials_at_once` trials may be simulated together (`resimulate_many`: the simulations
    of several scenarios, in order, e.g. on two sandbox sessions): they are still read in
    order and the first that explains wins, so the outcome is the one-at-a-time search's;
    a trial after it was simulated for nothing."""
    if extra_calls_allowed is None:
        extra_calls_allowed = allows_extra_calls(app, scenario)
    failing = [
        r for r in evaluation.results if r.status == "failed" and r.kind in ("state", "response")
    ]
    if not extra_calls_allowed:
        return evaluation
    if not failing:
        return evaluation
    # Only tools the golden never lists: one it lists, it has said when it expects.
    listed = {
        step.expectation.tool
        for step in scenario.steps
        if step.expectation is not None and step.expectation.kind is ExpectKind.CALL
    }
    known = [c for c in examples if c.tool not in listed]
    probed, probed_result = scenario, result
    index: dict[int, int] = {r.step: r.step for r in evaluation.results}  # original → probed
    added: list[tuple[int, ListedCall]] = []
    explained: dict[int, tuple[tuple[int, ListedCall], ...]] = {}
    gave_up: set[int] = set()
    undecided: dict[int, str] = {}  # a trial a bound stopped: its check cannot be decided
    runs = 0

    def raw(s: ScenarioSpec, r: SimulationResult) -> dict[int, ExpectationResult]:
        return {x.step: x for x in evaluate(s, r, extra_calls_allowed=False).results}

    current = raw(probed, probed_result)
    while runs < budget:
        open_ = [
            r
            for r in failing
            if r.step not in explained
            and r.step not in gave_up
            and current.get(index[r.step]) is not None
            and current[index[r.step]].status == "failed"
        ]
        # A check that passes with the calls found so far is explained by them.
        for r in failing:
            now = current.get(index[r.step])
            if r.step not in explained and added and now is not None and now.status == "passed":
                explained[r.step] = tuple(added)
        if not open_:
            break
        target = open_[0]
        agents = _agent_at_turns(probed, probed_result)
        plan: list[tuple[int, ListedCall]] = []  # the trials for this target, in order
        for turn in range(target.turn + 1):
            agent = app.agent(agents.get(turn, probed.agent))
            if agent is None:
                continue
            candidates = [c for c in known if c.tool in agent.tools]
            candidates += [
                ListedCall(t, {})
                for t in agent.tools
                if t not in listed
                and no_parameter_arguments(app, t) is not None
                and not any(c.tool == t for c in candidates)
            ]
            plan += [(turn, call) for call in candidates]
        plan = plan[: max(0, budget - runs)]
        width = max(1, trials_at_once)
        found = False
        for start in range(0, len(plan), width):
            batch = []
            for turn, call in plan[start : start + width]:
                trial, at = _insert_call(probed, turn, call)
                trial_index = {o: (i + 1 if i >= at else i) for o, i in index.items()}
                # The target's turn decides the trial: a run is causal, so the trial is
                # simulated through that turn only, and in full only when it explains it.
                partial = _through_turn(trial, step_turns(trial)[trial_index[target.step]])
                batch.append((turn, call, trial, trial_index, partial))
            partials = [entry[4] for entry in batch]
            if len(batch) > 1 and resimulate_many is not None:
                simulated = resimulate_many(partials)
            else:
                simulated = [resimulate(partial) for partial in partials]
            for (turn, call, trial, trial_index, partial), trial_result in zip(
                batch, simulated, strict=True
            ):
                runs += 1
                outcomes = raw(partial, trial_result)
                now = outcomes.get(trial_index[target.step])
                if now is not None and now.status == "stopped":
                    undecided.setdefault(target.step, now.message)
                if now is not None and now.status == "passed" and partial is not trial:
                    trial_result = resimulate(trial)
                    outcomes = raw(trial, trial_result)
                    now = outcomes.get(trial_index[target.step])
                if now is not None and now.status == "passed":
                    probed, probed_result, index, current = (
                        trial,
                        trial_result,
                        trial_index,
                        outcomes,
                    )
                    added.append((turn, call))
                    found = True
                    break
            if found:
                break
        if not found:
            gave_up.add(target.step)
    for r in failing:
        now = current.get(index[r.step])
        if r.step not in explained and added and now is not None and now.status == "passed":
            explained[r.step] = tuple(added)
    if not explained and not undecided:
        return evaluation
    results = []
    for r in evaluation.results:
        calls = explained.get(r.step)
        if calls is None and r.step in undecided:
            results.append(replace(r, status="stopped", message=undecided[r.step]))
            continue
        if calls is None:
            results.append(r)
            continue
        said = "; ".join(
            Message(
                "%(call)s in turn %(turn)s (%(why)s)",
                call=call.text(),
                turn=turn,
                why=Message("the golden “%(source)s” lists it", source=call.source)
                if call.source
                else Message("it has no parameter to choose"),
            )
            for turn, call in calls
        )
        results.append(
            replace(
                r,
                status="needs_model",
                left_to_model=True,
                message=Message(
                    "%(unlisted)soffline, with %(calls)s — a call this golden does not "
                    "list — this check passes. Offline without it: %(message)s",
                    unlisted=_UNLISTED,
                    calls=said,
                    message=r.message,
                ),
            )
        )
    return _evaluation(results, evaluation.notes)
