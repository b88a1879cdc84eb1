"""Replays: a recorded live run run again offline, its recording answering every model call.

No model is called (``agents.core.live.Replayer``); the tools and callbacks run again in
the sandbox, on the job's runner when one is given (a replay is a job like a live run: the
job's code-call and time caps and its Cancel apply). When a request differs from the
recorded one, the drift says at which call and what changed, and the replay goes on with
the recorded answer so the consequences show.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from agents import selectors
from agents.core.live import Replayer
from agents.core.model import ModelAnswer, ModelRequest
from agents.core.script import parse_script
from agents.core.spec import ScenarioSpec
from agents.models import AgentApp, LiveRun
from agents.services.common import Actor
from agents.services.live_runs import LiveOutcome, run_scenario
from agents.services.sandbox_door import BoundedRunner, with_instructions

__all__ = ["recording_of", "replay_live"]


def recording_of(run: LiveRun) -> LiveRun:
    """The live run a replay of `run` replays: a replay of a replay replays its recording."""
    if run.mode == "replay" and run.replay_of is not None:
        return run.replay_of
    return run


def replay_live(
    *,
    run: LiveRun,
    actor: Actor = None,
    instructions: str | None = None,
    record: bool = True,
    use_mocks: bool | None = None,
    on_call: Callable[[ModelAnswer | None, ModelRequest], None] | None = None,
    should_stop: Callable[[], str] | None = None,
    runner: BoundedRunner | None = None,
) -> LiveOutcome:
    """Re-run a stored live run offline with its recorded answers; the outcome's `drift`
    says at which call the request differs from the recording and what changed. Unsaved
    `instructions` are a try-out: not recorded."""
    run = recording_of(run)
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
    return run_scenario(
        app=app,
        spec=spec,
        scenario_spec=scenario_spec,
        scenario=scenario,
        agent_name=agent_name,
        model_name=run.model_name,
        strategy=Replayer(run.calls),
        actor=actor,
        replay_of=run,
        record=record and instructions is None,
        runner=runner,
        on_call=on_call,
        should_stop=should_stop,
    )
