"""Live runs: a scenario with a real model, recorded; replays; goldens from live runs.

``run_live`` is the one function a job calls (today the API, the designer and
``manage.py evaluate --model`` call it synchronously)::

    run_live(*, app, agent, scenario, model=None, actor=None, instructions=None,
             use_mocks=None, replay_of=None, on_text=None, caps=None,
             clock=time.monotonic, sleeper=time.sleep, stream=False, record=True,
             runner=None, should_stop=None) -> LiveOutcome

- the endpoint is ``resolve_model`` 's (the run's name, the app's default, CX
  ``modelSettings``); with `replay_of` (a stored ``LiveRun``) no model is called: the
  recording answers (``agents.core.live.Replayer``) and the drift is reported;
- the model's function calls run the real tools and callbacks in the sandbox, through the
  simulation's door (``simulate_bounded``, with the live time cap);
- the caps (``LIVE_MAX_MODEL_CALLS``, ``LIVE_MAX_CALLS_PER_TURN``, ``LIVE_MAX_TOKENS``,
  ``LIVE_MAX_SECONDS``) are counted by ``agents.core.live.Capped`` with the injected clock;
  the time cap and a Cancel are also watched while an answer streams in, and each answer's
  size is capped (``LIVE_MAX_ANSWER_BYTES``, ``agents.llm.clients``);
- the scripted ``tool:``/``agent:`` steps and the expectations are checked against what
  the model did (``evaluate_live``; CX's ``extraToolCallBehavior`` from the scenario's
  CX evaluation, ALLOW by default);
- with `record` the run is stored (``LiveRun``): every call's fingerprint, request and
  answer, the timeline, tokens, cost.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from django.conf import settings
from django.db import transaction

from agents import selectors
from agents.core.diagnostics import Message, Severity
from agents.core.evaluate import ScenarioEvaluation
from agents.core.live import Capped, Caps, Recorder, Replayer, evaluate_live
from agents.core.model import ModelAnswer, ModelRequest
from agents.core.render import render_value
from agents.core.script import format_expectation, parse_script
from agents.core.simulate import SimulationResult
from agents.core.spec import ExpectationSpec, ExpectKind, ScenarioSpec, StepKind, StepSpec
from agents.i18n import with_i18n
from agents.llm.clients import client_for
from agents.llm.endpoints import Endpoint
from agents.models import Agent, AgentApp, LiveRun, Scenario
from agents.services.common import Actor, ServiceError, error
from agents.services.live_models import resolve_model, with_temperature
from agents.services.simulation import BoundedRunner, simulate_bounded, with_instructions

__all__ = ["LiveOutcome", "live_caps", "live_run_save_golden", "replay_live", "run_live"]


def live_caps() -> Caps:
    return Caps(
        max_calls=int(getattr(settings, "LIVE_MAX_MODEL_CALLS", 40)),
        max_calls_per_turn=int(getattr(settings, "LIVE_MAX_CALLS_PER_TURN", 10)),
        max_tokens=int(getattr(settings, "LIVE_MAX_TOKENS", 200_000)),
        max_seconds=float(getattr(settings, "LIVE_MAX_SECONDS", 120.0)),
    )


@dataclass(frozen=True)
class LiveOutcome:
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


def _config_failure(message: str) -> Callable[[ModelRequest], ModelAnswer]:
    def ask(request: ModelRequest) -> ModelAnswer:
        return ModelAnswer(error="config", message=message)

    return ask


def _strategy(
    endpoint: Endpoint, *, stream: bool, on_text: Any, sleeper: Any
) -> Callable[[ModelRequest], ModelAnswer]:
    if endpoint.key_unreadable:
        return _config_failure(
            Message(
                "the stored API key of %(name)s cannot be decrypted (MODEL_KEYS_SECRET or "
                "SECRET_KEY changed since it was saved): type the key again in the admin",
                name=endpoint.name,
            )
        )
    if endpoint.api_key_env and not endpoint.api_key:
        return _config_failure(
            Message("the variable %(api_key_env)s holds no key", api_key_env=endpoint.api_key_env)
        )
    try:
        return client_for(
            endpoint,
            stream=stream,
            on_text=on_text,
            sleeper=sleeper,
            max_answer_bytes=int(getattr(settings, "LIVE_MAX_ANSWER_BYTES", 256 * 1024)),
        )
    except Exception as exc:  # e.g. Vertex AI without Google credentials on this machine
        return _config_failure(
            Message(
                "%(name)s cannot be used: %(error)s: %(exc)s",
                name=endpoint.name,
                error=type(exc).__name__,
                exc=exc.args[0] if len(exc.args) == 1 and isinstance(exc.args[0], Message) else exc,
            )
        )


def extra_tool_calls(spec: ScenarioSpec) -> str:
    """CX's ``extraToolCallBehavior`` of the scenario's evaluation (ALLOW by default)."""

    def find(value: Any, depth: int = 0) -> str:
        if depth > 4 or not isinstance(value, Mapping):
            return ""
        found = value.get("extraToolCallBehavior")
        if isinstance(found, str):
            return found.upper()
        for sub in value.values():
            hit = find(sub, depth + 1)
            if hit:
                return hit
        return ""

    return "DISALLOW" if find(spec.cx) == "DISALLOW" else "ALLOW"


def _json_safe(value: Any) -> Any:
    try:
        return json.loads(json.dumps(value, default=str))
    except (TypeError, ValueError):
        return render_value(value)


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
            "value": _json_safe(event.value),
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


def run_live(
    *,
    app: AgentApp,
    agent: Agent,
    scenario: Scenario,
    model: str | None = None,
    actor: Actor = None,
    instructions: str | None = None,
    use_mocks: bool | None = None,
    replay_of: LiveRun | None = None,
    on_text: Callable[[str], None] | None = None,
    on_call: Callable[[ModelAnswer], None] | None = None,
    caps: Caps | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleeper: Callable[[float], None] = time.sleep,
    stream: bool = False,
    record: bool = True,
    runner: BoundedRunner | None = None,
    should_stop: Callable[[], str] | None = None,
) -> LiveOutcome:
    """Run `scenario` with a model, or replay a recording (see the module docstring).
    `should_stop` (a job's cancel hook) is asked before every model call: a reason ends
    the run there, recorded with the error ``cancelled``.
    Raises ServiceError only when no model can be named (``ModelNotConfigured``)."""
    spec = with_instructions(selectors.app_spec(app), agent.display_name, instructions)
    scenario_spec = scenario.to_spec(app_id=f"apps/{app.pk}")
    if use_mocks is not None:
        scenario_spec = replace(scenario_spec, use_mocks=use_mocks)
    return _run(
        app=app,
        spec=spec,
        scenario_spec=scenario_spec,
        scenario=scenario,
        agent_name=agent.display_name,
        agent_cx=agent.cx,
        model=model,
        actor=actor,
        replay_of=replay_of,
        on_text=on_text,
        on_call=on_call,
        caps=caps,
        clock=clock,
        sleeper=sleeper,
        stream=stream,
        record=record and instructions is None,
        runner=runner,
        should_stop=should_stop,
    )


def _run(
    *,
    app: AgentApp,
    spec: Any,
    scenario_spec: ScenarioSpec,
    scenario: Scenario | None,
    agent_name: str,
    agent_cx: Any,
    model: str | None,
    actor: Actor,
    replay_of: LiveRun | None,
    on_text: Any,
    caps: Caps | None,
    clock: Callable[[], float],
    sleeper: Callable[[float], None],
    stream: bool,
    record: bool,
    runner: BoundedRunner | None,
    strategy: Callable[[ModelRequest], ModelAnswer] | None = None,
    on_call: Callable[[ModelAnswer], None] | None = None,
    should_stop: Callable[[], str] | None = None,
) -> LiveOutcome:
    caps = caps or live_caps()
    replayer: Replayer | None = None
    if replay_of is not None:
        replayer = Replayer(replay_of.calls)
        model_name = replay_of.model_name
        inner: Callable[[ModelRequest], ModelAnswer] = replayer
    elif strategy is not None:
        model_name = model or "model"
        inner = strategy
    else:
        endpoint, temperature = resolve_model(app, model, agent_cx=agent_cx)
        model_name = endpoint.name
        inner = with_temperature(
            _strategy(endpoint, stream=stream, on_text=on_text, sleeper=sleeper), temperature
        )
    if on_call is not None:  # each answer as it comes (a job shows the run's figures so far)
        asked = inner

        def inner(request: ModelRequest) -> ModelAnswer:
            answer = asked(request)
            on_call(answer)
            return answer

    recorder = Recorder(inner)
    capped = Capped(recorder, caps, clock, should_stop=should_stop)
    result = simulate_bounded(
        spec, scenario_spec, runner=runner, model=capped, max_seconds=caps.max_seconds
    )
    calls = [c.as_json() for c in recorder.calls]
    drift = [d.as_json() for d in replayer.drift] if replayer is not None else []
    if replayer is not None and replayer.unused and not drift:
        change = Message(
            "the run made %(made)s model calls; the recording has %(recorded)s",
            made=replayer.position,
            recorded=len(replayer.recording),
        )
        drift.append(
            with_i18n({"call": replayer.position, "turn": -1, "changes": [change]}, "changes")
        )
    evaluation = evaluate_live(
        scenario_spec,
        result,
        extra_tool_calls=extra_tool_calls(scenario_spec),  # type: ignore[arg-type]
    )
    failed = "cancelled" if capped.cancelled else _first_error(calls)
    if not failed and capped.stopped:
        failed = "cap"
    if not failed and any(d.code in ("SC404", "SC405") for d in result.diagnostics):
        failed = "unknown_tool"  # the model called a tool the agent does not have
    outcome = LiveOutcome(None, scenario_spec, result, evaluation, calls, drift, model_name, failed)
    if not record:
        return outcome
    return _store(
        outcome, app=app, scenario=scenario, agent_name=agent_name, replay_of=replay_of, actor=actor
    )


def _first_error(calls: list[dict[str, Any]]) -> str:
    """The error of the first model call that failed ("" when none did)."""
    return next((c["answer"]["error"] for c in calls if c["answer"].get("error")), "")


@transaction.atomic
def _store(
    outcome: LiveOutcome,
    *,
    app: AgentApp,
    scenario: Scenario | None,
    agent_name: str,
    replay_of: LiveRun | None,
    actor: Actor,
) -> LiveOutcome:
    """Record `outcome` as a `LiveRun` (the one place a run's record is built); the
    outcome with its stored run."""
    from agents.core.script import format_script

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
        status=outcome.evaluation.status,
        error=outcome.error,
        calls=calls,
        drift=outcome.drift,
        evaluation=[dataclasses.asdict(r) for r in outcome.evaluation.results],
        timeline=timeline(result, calls),
        final_state=_json_safe(result.final_state),
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


def replay_live(
    *,
    run: LiveRun,
    actor: Actor = None,
    instructions: str | None = None,
    record: bool = True,
    use_mocks: bool | None = None,
    on_call: Callable[[ModelAnswer], None] | None = None,
    should_stop: Callable[[], str] | None = None,
) -> LiveOutcome:
    """Re-run a stored live run offline with its recorded answers; the outcome's `drift`
    says at which call the request differs from the recording and what changed."""
    if run.mode == "replay" and run.replay_of is not None:
        run = run.replay_of  # a replay of a replay replays the recording
    app = AgentApp.objects.get(pk=run.app_id)
    scenario = run.scenario
    agent = scenario.agent if scenario is not None else None
    agent_name = agent.display_name if agent is not None else run.agent_name
    spec = with_instructions(selectors.app_spec(app), agent_name, instructions)
    if scenario is not None:
        scenario_spec = scenario.to_spec(app_id=f"apps/{app.pk}")
    else:
        parsed = parse_script(run.script)
        scenario_spec = ScenarioSpec(name=run.scenario_name, agent=agent_name, steps=parsed.steps)
    if use_mocks is not None:
        scenario_spec = replace(scenario_spec, use_mocks=use_mocks)
    return _run(
        app=app,
        spec=spec,
        scenario_spec=scenario_spec,
        scenario=scenario,
        agent_name=agent_name,
        agent_cx=agent.cx if agent is not None else {},
        model=None,
        actor=actor,
        replay_of=run,
        on_text=None,
        caps=None,
        clock=time.monotonic,
        sleeper=time.sleep,
        stream=False,
        record=record and instructions is None,
        runner=None,
        on_call=on_call,
        should_stop=should_stop,
    )


# --------------------------------------------------------------------------- goldens


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
    from agents.core.script import format_script
    from agents.services.scenarios import scenario_save

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


def errors_of(result: SimulationResult) -> tuple[str, ...]:
    return tuple(d.message for d in result.diagnostics if d.severity is Severity.ERROR)


def lines_of(expectations: list[ExpectationSpec]) -> list[str]:
    return [format_expectation(e) for e in expectations]


# --------------------------------------------------------------------------- scenario kind


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

    def client(which: Endpoint) -> Callable[[ModelRequest], ModelAnswer]:
        return _strategy(which, stream=False, on_text=None, sleeper=sleeper)

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
        outcome = _store(
            LiveOutcome(
                None,
                scenario_spec,
                result,
                evaluation,
                calls,
                [],
                endpoint.name,
                _first_error(calls),
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
