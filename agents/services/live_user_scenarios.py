"""CX evaluations of the scenario kind, run live: a model plays the user
(``agents.core.user_sim``), the agent answers with the run's model, the expectations are
checked and the rubrics judged by a judge model. Each is recorded as a live run (its user
turns are the run's script, so it replays like any other).

In a job (a live Run all) every simulation runs on the job's runner and every model call
(the agent's, the simulated user's, the judge's) counts against the job's caps.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from agents import selectors
from agents.core.evaluate import ScenarioEvaluation
from agents.core.live import Capped, Caps, Recorder
from agents.core.model import ModelStrategy
from agents.core.simulate import SimulationResult
from agents.core.spec import ScenarioSpec, StepKind, StepSpec
from agents.llm.endpoints import Endpoint
from agents.models import AgentApp
from agents.services.common import Actor
from agents.services.live_models import resolve_model, with_temperature
from agents.services.live_recording import live_run_record
from agents.services.live_runs import LiveOutcome, first_error, live_caps, model_strategy
from agents.services.sandbox_door import BoundedRunner, simulate_bounded

__all__ = ["UserScenarioOutcome", "run_user_scenarios"]


@dataclass(frozen=True)
class UserScenarioOutcome:
    """A CX evaluation of the scenario kind run live: the conversation, the checks."""

    name: str
    path: str
    evaluation: ScenarioEvaluation
    outcome: LiveOutcome
    turns: int
    ended_by: str  # user (its task ended), turns (the limit), error


def run_user_scenarios(
    *,
    app: AgentApp,
    model: str,
    judge: str | None = None,
    actor: Actor = None,
    caps: Caps | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleeper: Callable[[float], None] = time.sleep,
    runner: BoundedRunner | None = None,
    paths: set[str] | None = None,
) -> list[UserScenarioOutcome]:
    """Every CX evaluation of the scenario kind the app carries (or those whose file is in
    `paths`), run live: a model plays
    the user (``agents.core.user_sim``), the agent answers with `model`, the expectations
    are checked and the rubrics judged by `judge` (default: `model`). Each is stored as a
    live run (replayable: its user turns are the run's script)."""
    from agents.core.cx.evaluations import needs_model_evaluations
    from agents.core.evaluate import _status
    from agents.core.live import Memo
    from agents.core.spec import AppSpec
    from agents.core.user_sim import (
        check_expectations,
        judge_request,
        read_scenario,
        read_verdicts,
        transcript,
        user_message,
        user_request,
    )

    carry = AgentApp.objects.filter(pk=app.pk).values_list("cx", flat=True).first() or {}
    files = carry.get("files") if isinstance(carry, Mapping) else None
    listed = needs_model_evaluations(AppSpec(name=app.name, cx=carry))
    if paths is not None:
        listed = [(name, path) for name, path in listed if path in paths]
    if not listed or not isinstance(files, Mapping):
        return []
    spec = selectors.app_spec(app)
    root = next((a for a in spec.agents if a.is_root), spec.agents[0] if spec.agents else None)
    if root is None:
        return []
    endpoint, temperature = resolve_model(app, model)
    judge_endpoint = resolve_model(app, judge)[0] if judge else endpoint

    def client(which: Endpoint) -> ModelStrategy:
        strategy = model_strategy(which, sleeper=sleeper)
        # A job's runner counts every model call of the job (JOBS_MAX_MODEL_CALLS...).
        return runner.metered(strategy) if runner is not None else strategy

    outcomes: list[UserScenarioOutcome] = []
    for _name, path in listed:
        try:
            data = json.loads(files[path])
        except (ValueError, TypeError, KeyError, RecursionError):
            continue
        scenario = read_scenario(data, path)
        if scenario is None:
            continue
        caps_now = caps or live_caps()
        recorder = Recorder(with_temperature(client(endpoint), temperature))
        capped = Capped(recorder, caps_now, clock)
        agent_model = Memo(capped)
        user_model = Capped(client(endpoint), caps_now, clock)
        steps: list[StepSpec] = []
        conversation: list[tuple[str, str]] = []
        result: SimulationResult | None = None
        ended_by = "turns"
        for turn in range(scenario.max_turns):
            answer = user_model(user_request(scenario, conversation, turn))
            if answer.error:
                ended_by = "error"
                break
            text = user_message(" ".join(p.get("text", "") for p in answer.parts if "text" in p))
            if text is None:
                ended_by = "user"
                break
            steps.append(StepSpec(StepKind.USER, text=text))
            scenario_spec = ScenarioSpec(name=scenario.name, agent=root.name, steps=tuple(steps))
            recorder.calls.clear()
            result = simulate_bounded(
                spec,
                scenario_spec,
                runner=runner,
                model=agent_model,
                max_seconds=caps_now.max_seconds,
            )
            conversation = transcript(result)
            if any(d.code == "SC421" for d in result.diagnostics):
                ended_by = "error"
                break
        scenario_spec = ScenarioSpec(name=scenario.name, agent=root.name, steps=tuple(steps))
        if result is None:
            result = SimulationResult("", 0, (), (), {}, ())
        results = check_expectations(scenario, result)
        if scenario.rubrics:
            verdict = client(judge_endpoint)(judge_request(scenario, conversation, 0))
            text = " ".join(p.get("text", "") for p in verdict.parts if "text" in p)
            results += read_verdicts(scenario, text, verdict.message if verdict.error else "")
        evaluation = ScenarioEvaluation(
            results=tuple(results),
            status=_status(results),
            passed=sum(r.status == "passed" for r in results),
            failed=sum(r.status == "failed" for r in results),
        )
        # The final run's calls, in order (earlier turns answered from the memo).
        final = Recorder(agent_model)
        if steps:
            final_result = simulate_bounded(
                spec,
                scenario_spec,
                runner=runner,
                model=final,
                max_seconds=caps_now.max_seconds,
            )
            result = final_result
        calls = [c.as_json() for c in final.calls]
        outcome = live_run_record(
            LiveOutcome(
                None,
                scenario_spec,
                result,
                evaluation,
                calls,
                [],
                endpoint.name,
                first_error(calls),
            ),
            app=app,
            scenario=None,
            agent_name=root.name,
            replay_of=None,
            actor=actor,
        )
        outcomes.append(
            UserScenarioOutcome(scenario.name, path, evaluation, outcome, len(steps), ended_by)
        )
    return outcomes
