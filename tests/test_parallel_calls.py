"""One answer, several function calls (issue 30): ADK runs every call of the answer with the
calling agent's tools and transfers only after them (the merged response's
``transfer_to_agent``); a call that gets no response (it raised, or cannot be made) ends
the model loop as it ends ADK's invocation. Before, the transfer happened at once, the next
call of the same answer was refused (SC405, "not attached") and the next request sent the
call without its response: a provider's 400 ("tool_call_ids did not have response
messages"), here from a real loopback server that enforces the wire rules."""

# ruff: noqa: F811 - the fixtures imported from other test modules
from __future__ import annotations

import json

import pytest

from agents import services
from agents.services.live_runs import run_live
from tests.llm_server import Reply, gemini_call, gemini_text, openai_call, openai_text
from tests.test_live_runs import models_env  # noqa: F401

pytestmark = pytest.mark.django_db

NOTE = '''
def note_it(topic: str) -> dict:
    """Note the topic of the call."""
    context.state["topic"] = topic
    return {"noted": topic}
'''


def _app(user):
    app = services.app_create(owner=user, name="Parallel")
    services.variable_create(app=app, name="topic", type="text")
    root = app.agents.get(is_root=True)
    tools = [
        services.tool_create(app=app, name=name, kind="python", python_code=code)
        for name, code in (("note_it", NOTE), ("unwritten", ""))
    ]
    helper = services.agent_create(app=app, display_name="helper", instructions="Help.")
    root = services.agent_update(
        agent=root, display_name="host", instructions="Route.", tools=tools, children=[helper]
    )
    scenario = services.scenario_save(agent=root, name="Both", steps_script="user: billing\n")
    return app, root, scenario


def _openai_calls(*calls: tuple[str, dict]) -> Reply:
    reply = openai_call(*calls[0])
    reply.body["choices"][0]["message"]["tool_calls"] = [
        {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
        for i, (n, a) in enumerate(calls)
    ]
    return reply


def _gemini_calls(*calls: tuple[str, dict]) -> Reply:
    reply = gemini_call(*calls[0])
    reply.body["candidates"][0]["content"]["parts"] = [
        {"functionCall": {"name": n, "args": a}} for n, a in calls
    ]
    return reply


@pytest.mark.parametrize("kind", ["openai", "gemini"])
def test_a_transfer_beside_another_call_runs_both_then_transfers(kind, user, server, models_env):
    models_env(kind)
    app, root, scenario = _app(user)
    calls = (("transfer_to_agent", {"agent_name": "helper"}), ("note_it", {"topic": "billing"}))
    if kind == "openai":
        server.script(_openai_calls(*calls), openai_text("The helper is here."))
    else:
        server.script(_gemini_calls(*calls), gemini_text("The helper is here."))
    outcome = run_live(app=app, agent=root, scenario=scenario, model="loop")
    assert outcome.error == "", outcome.message
    kinds = [(e.kind, e.source) for e in outcome.result.events if e.kind != "user"]
    assert kinds.index(("tool_response", "note_it")) < kinds.index(("transfer", "helper")), kinds
    assert outcome.result.final_state["topic"] == "billing"
    assert not [d for d in outcome.result.diagnostics if d.code == "SC405"]
    assert len(server.seen) == 2  # the second request held both responses: no 400


def test_a_call_that_gets_no_response_ends_the_loop_without_a_request_missing_it(
    user, server, models_env
):
    models_env("openai")
    app, root, scenario = _app(user)
    server.script(
        _openai_calls(("note_it", {"topic": "x"}), ("unwritten", {"topic": "x"})),
        openai_text("never asked"),
    )
    outcome = run_live(app=app, agent=root, scenario=scenario, model="loop")
    assert [d.code for d in outcome.result.diagnostics if d.code == "SC411"] == ["SC411"]
    # No second request sending a call without its response (the server's 400).
    assert len(server.seen) == 1
    assert outcome.error == "", outcome.message
