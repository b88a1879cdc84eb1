"""Live runs: a scenario with a real model, recorded.

``run_live`` runs one scenario against a model; a job's kind calls it (``live_run``, the
live ``evaluate_app``), on the runner its job lends (``JobContext.runner``), and so do the
tests and services that run one scenario at once::

    run_live(*, app, agent, scenario, model=None, actor=None, instructions=None,
             use_mocks=None, on_text=None, on_call=None, caps=None,
             clock=time.monotonic, sleeper=time.sleep, stream=False, record=True,
             runner=None, should_stop=None) -> LiveOutcome

- the endpoint is ``resolve_model`` 's (the run's name, the app's default, CX
  ``modelSettings``); its client is ``agents.llm.registry.client_for``'s;
- the model's function calls run the real tools and callbacks in the sandbox, through the
  one door (``simulate_bounded``, with the live time cap), on the job's runner when one is
  given: the job's caps then count the run's code calls, model calls and tokens too;
- the run's caps (``LIVE_MAX_MODEL_CALLS``, ``LIVE_MAX_CALLS_PER_TURN``,
  ``LIVE_MAX_TOKENS``, ``LIVE_MAX_SECONDS``) are counted by ``agents.core.live.Capped``
  with the injected clock; the time cap and a Cancel are also watched while an answer
  streams in, and each answer's size is capped (``LIVE_MAX_ANSWER_BYTES``);
- the scripted ``tool:``/``agent:`` steps and the expectations are checked against what
  the model did (``evaluate_live``; CX's ``extraToolCallBehavior`` from the scenario's
  CX evaluation, ALLOW by default);
- with `record` the run is stored (``agents.services.live_recording``).

A replay (``agents.services.live_replays``) runs the same engine (`run_scenario`) with the
recording answering instead of a model.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from django.utils import timezone

from agents import selectors
from agents.core.diagnostics import Message
from agents.core.live import Capped, Caps, Recorder, Replayer, evaluate_live
from agents.core.model import ModelAnswer, ModelRequest, ModelStrategy
from agents.core.spec import ScenarioSpec
from agents.i18n import with_i18n
from agents.llm.endpoints import Endpoint
from agents.llm.masking import has_secret, masked_tree
from agents.llm.registry import client_for
from agents.models import Agent, AgentApp, LiveRun, Scenario
from agents.services.common import Actor, setting
from agents.services.live_models import resolve_model, with_temperature
from agents.services.live_recording import LiveOutcome, live_run_record
from agents.services.sandbox_door import BoundedRunner, simulate_bounded, with_instructions

__all__ = ["LiveOutcome", "live_caps", "model_strategy", "run_live", "run_scenario"]


def live_caps() -> Caps:
    return Caps(
        max_calls=int(setting("LIVE_MAX_MODEL_CALLS")),
        max_calls_per_turn=int(setting("LIVE_MAX_CALLS_PER_TURN")),
        max_tokens=int(setting("LIVE_MAX_TOKENS")),
        max_seconds=float(setting("LIVE_MAX_SECONDS")),
    )


def _config_failure(message: str) -> ModelStrategy:
    def ask(request: ModelRequest) -> ModelAnswer:
        return ModelAnswer(error="config", message=message)

    return ask


def model_strategy(
    endpoint: Endpoint,
    *,
    stream: bool = False,
    on_text: Any = None,
    sleeper: Any = time.sleep,
    mask_answers: bool = True,
) -> ModelStrategy:
    """The strategy that asks `endpoint`; one that answers the error ``config`` when the
    endpoint cannot be used (its key unreadable or missing, no Google credentials).
    `mask_answers` False: the answers as the model wrote them (``run_scenario`` masks the
    run once it is over)."""
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
            max_answer_bytes=int(setting("LIVE_MAX_ANSWER_BYTES")),
            mask_answers=mask_answers,
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


def first_error(calls: list[dict[str, Any]]) -> str:
    """The error of the first model call that failed ("" when none did)."""
    return next((c["answer"]["error"] for c in calls if c["answer"].get("error")), "")


def run_live(
    *,
    app: AgentApp,
    agent: Agent,
    scenario: Scenario,
    model: str | None = None,
    actor: Actor = None,
    instructions: str | None = None,
    use_mocks: bool | None = None,
    on_text: Callable[[str], None] | None = None,
    on_call: Callable[[ModelAnswer | None, ModelRequest], None] | None = None,
    caps: Caps | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleeper: Callable[[float], None] = time.sleep,
    stream: bool = False,
    record: bool = True,
    runner: BoundedRunner | None = None,
    should_stop: Callable[[], str] | None = None,
) -> LiveOutcome:
    """Run `scenario` with a model (see the module docstring). `should_stop` (a job's
    cancel hook) is asked before every model call: a reason ends the run there, recorded
    with the error ``cancelled``. Unsaved `instructions` are a try-out: not recorded.
    Raises ServiceError only when no model can be named (``ModelNotConfigured``)."""
    spec = with_instructions(selectors.app_spec(app), agent.display_name, instructions)
    scenario_spec = scenario.to_spec(app_id=f"apps/{app.pk}")
    if use_mocks is not None:
        scenario_spec = replace(scenario_spec, use_mocks=use_mocks)
    return run_live_specs(
        app=app,
        spec=spec,
        scenario_spec=scenario_spec,
        scenario=scenario,
        agent_name=agent.display_name,
        agent_cx=agent.cx,
        model=model,
        actor=actor,
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


def run_live_specs(
    *,
    app: AgentApp,
    spec: Any,
    scenario_spec: ScenarioSpec,
    scenario: Scenario | None,
    agent_name: str,
    agent_cx: Any = None,
    model: str | None = None,
    actor: Actor = None,
    on_text: Callable[[str], None] | None = None,
    on_call: Callable[[ModelAnswer | None, ModelRequest], None] | None = None,
    caps: Caps | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleeper: Callable[[float], None] = time.sleep,
    stream: bool = False,
    record: bool = True,
    runner: BoundedRunner | None = None,
    should_stop: Callable[[], str] | None = None,
) -> LiveOutcome:
    """`run_live` of specs already read: the app's working copy, or a saved version's
    (an experiment's column, ``evaluation_runs``; `scenario` None: the run is recorded
    without a scenario row)."""
    endpoint, temperature = resolve_model(app, model, agent_cx=agent_cx)
    strategy = with_temperature(
        model_strategy(
            endpoint, stream=stream, on_text=on_text, sleeper=sleeper, mask_answers=False
        ),
        temperature,
    )
    if runner is not None:  # a job's: its model calls and tokens count against its caps
        strategy = runner.metered(strategy)
    return run_scenario(
        app=app,
        spec=spec,
        scenario_spec=scenario_spec,
        scenario=scenario,
        agent_name=agent_name,
        model_name=endpoint.name,
        strategy=strategy,
        actor=actor,
        on_call=on_call,
        caps=caps,
        clock=clock,
        record=record,
        runner=runner,
        should_stop=should_stop,
    )


def with_session_clock(spec: ScenarioSpec, replay_of: LiveRun | None) -> ScenarioSpec:
    """The scenario with the clock its code reads: the scenario's own when it sets one;
    else, in a replay, the moment its recording ran with (``LiveRun.now``) and, live, the
    moment the run starts (UTC, to the second; recorded with the run). The clock stands
    still during the run, so a replay reads what the live run read (docs/designer/replay.md)."""
    if spec.session.now:
        return spec
    if replay_of is not None:
        now = replay_of.now  # "" for a recording made before runs kept their clock
    else:
        now = timezone.now().replace(microsecond=0).isoformat()
    return replace(spec, session=replace(spec.session, now=now)) if now else spec


def run_scenario(
    *,
    app: AgentApp,
    spec: Any,
    scenario_spec: ScenarioSpec,
    scenario: Scenario | None,
    agent_name: str,
    model_name: str,
    strategy: ModelStrategy,
    actor: Actor,
    record: bool,
    runner: BoundedRunner | None,
    replay_of: LiveRun | None = None,
    on_call: Callable[[ModelAnswer | None, ModelRequest], None] | None = None,
    caps: Caps | None = None,
    clock: Callable[[], float] = time.monotonic,
    should_stop: Callable[[], str] | None = None,
) -> LiveOutcome:
    """The engine of a live run and of a replay: `strategy` answers each model call (the
    model, or the recording of `replay_of`: a ``Replayer``), within the run's caps; the
    expectations checked against what it did; recorded with `record`."""
    caps = caps or live_caps()
    scenario_spec = with_session_clock(scenario_spec, replay_of)
    # The secrets of the answers (a key, the access token a request carried): the run's
    # tools get the model's own arguments and its expectations compare them; what is
    # stored and shown is masked once the run is over (`masked_tree`).
    secrets: set[str] = set()

    def inner(request: ModelRequest) -> ModelAnswer:
        if on_call is not None:  # each call as it begins and ends (a job shows the run so far)
            on_call(None, request)
        answer = strategy(request)
        secrets.update(answer.extra.get("secrets") or ())
        if on_call is not None:
            on_call(answer, request)
        return answer

    recorder = Recorder(inner)
    capped = Capped(recorder, caps, clock, should_stop=should_stop)
    result = simulate_bounded(
        spec, scenario_spec, runner=runner, model=capped, max_seconds=caps.max_seconds
    )
    calls = [c.as_json() for c in recorder.calls]
    drift: list[dict[str, Any]] = []
    if isinstance(strategy, Replayer):
        drift = [d.as_json() for d in strategy.drift]
        if strategy.unused and not drift:
            change = Message(
                "the run made %(made)s model calls; the recording has %(recorded)s",
                made=strategy.position,
                recorded=len(strategy.recording),
            )
            drift.append(
                with_i18n({"call": strategy.position, "turn": -1, "changes": [change]}, "changes")
            )
    evaluation = evaluate_live(
        scenario_spec,
        result,
        extra_tool_calls=extra_tool_calls(scenario_spec),  # type: ignore[arg-type]
    )
    failed = "cancelled" if capped.cancelled else first_error(calls)
    if not failed and capped.stopped:
        failed = "cap"
    if not failed and any(d.code in ("SC404", "SC405") for d in result.diagnostics):
        failed = "unknown_tool"  # the model called a tool the agent does not have
    if secrets and has_secret(calls, tuple(secrets)):
        result, evaluation, calls = masked_tree((result, evaluation, calls), tuple(secrets))
    outcome = LiveOutcome(None, scenario_spec, result, evaluation, calls, drift, model_name, failed)
    if not record:
        return outcome
    return live_run_record(
        outcome, app=app, scenario=scenario, agent_name=agent_name, replay_of=replay_of, actor=actor
    )
