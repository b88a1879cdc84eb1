"""CX's end_session ends the conversation (issue 30): an app whose before_model callback
answers a trigger with transfer_call + end_session finishes there — in the scripted
simulation and live (a real model server on loopback) — instead of calling the model again
until the cap; the later turns are not run, and the timeline says so (SC423)."""

# ruff: noqa: F811 - the fixtures imported from other test modules
from __future__ import annotations

import pytest

from agents import services
from agents.services.live_runs import run_live
from agents.services.sandbox_door import simulate_scenario
from tests.llm_server import openai_text
from tests.test_live_runs import models_env  # noqa: F401

pytestmark = pytest.mark.django_db

TRIGGER = """
def before_model_callback(callback_context: CallbackContext, llm_request: LlmRequest):
    for part in callback_context.get_last_user_input():
        if "human" in (part.text or ""):
            return LlmResponse.from_parts(parts=[
                Part.from_text(text="Connecting you to a colleague."),
                Part.from_function_call(name="transfer_call", args={"queue": "care"}),
                Part.from_end_session(reason="transferred"),
            ])
    return None
"""
TRANSFER_CALL = '''
def transfer_call(queue: str = "care") -> dict:
    """Hand the call to a human queue."""
    context.state["queue"] = queue
    return {"transferred": True}
'''
SCRIPT = "user: I want a human\nagent: (never asked)\nuser: hello?\nagent: (never asked)\n"


def _app(user):
    app = services.app_create(owner=user, name="Hand over")
    services.variable_create(app=app, name="queue", type="text")
    root = app.agents.get(is_root=True)
    transfer = services.tool_create(
        app=app, name="transfer_call", kind="python", python_code=TRANSFER_CALL, attach_to=root
    )
    end = services.tool_create(app=app, name="end_session", kind="platform", attach_to=root)
    root = services.agent_update(agent=root, tools=[transfer, end])
    services.callback_create(agent=root, kind="before_model", code=TRIGGER)
    scenario = services.scenario_save(agent=root, name="Human", steps_script=SCRIPT)
    return app, root, scenario


def _check(result):
    calls = [e.source for e in result.events if e.kind == "tool_call"]
    assert calls == ["transfer_call", "end_session"], calls
    assert result.final_state["queue"] == "care"
    assert len(result.turns) == 1  # the second user turn is not run
    assert len(result.model_calls) == 1  # no second model call, no loop to the cap
    ended = [d for d in result.diagnostics if d.code == "SC423"]
    assert ended and "1 later turn(s)" in str(ended[0].message)
    assert not [d for d in result.diagnostics if d.code == "SC419"]  # the loop cap


def test_end_session_ends_the_scripted_simulation(user):
    app, root, scenario = _app(user)
    _, result = simulate_scenario(app=app, agent=root, scenario=scenario)
    _check(result)


def test_end_session_ends_a_live_run(user, server, models_env):
    models_env()
    app, root, scenario = _app(user)
    server.script(*[openai_text("Anything else?") for _ in range(5)])
    outcome = run_live(app=app, agent=root, scenario=scenario, model="loop")
    _check(outcome.result)
    assert server.seen == []  # the callback answered; the model was never called
    assert outcome.error == ""
