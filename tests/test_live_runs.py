"""Live runs against a real HTTP server on loopback that speaks the model's protocol.

Each test scripts the server's answers (tests/llm_server.py): no client object is mocked;
the SDKs (openai, google-genai) talk HTTP to it. Tools run their real code in the sandbox.
"""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from agents import services
from agents.core.live import Caps
from agents.demo import LOOKUP_BALANCE_CODE
from agents.models import LiveRun, Scenario
from agents.services.live_goldens import live_run_save_golden
from agents.services.live_replays import replay_live
from agents.services.live_runs import run_live
from tests.llm_server import (
    KEY,
    Reply,
    configure_models,
    gemini_call,
    gemini_error,
    gemini_stream,
    gemini_text,
    openai_call,
    openai_error,
    openai_stream_call,
    openai_stream_text,
    openai_text,
)

pytestmark = pytest.mark.django_db

GOLDEN = """user: Hi! What is the balance of my current account?
expect call: LookupBalance
expect state: {"current_account_balance": 1250}
"""
INSTRUCTIONS = """If the user asks for their balance, call the {@TOOL: LookupBalance}.
The tool will update the {current_account_balance} variable.
Always share the {current_account_balance} with the user.
"""


@pytest.fixture
def models_env(monkeypatch, server):
    def configure(kind: str = "openai", **extra):
        configure_models(monkeypatch, {"loop": {"server": server, "kind": kind, **extra}})

    return configure


@pytest.fixture
def bank_app(user):
    app = services.app_create(owner=user, name="Live bank")
    services.variable_create(app=app, name="current_account_balance", type="number")
    tool = services.tool_create(
        app=app,
        name="LookupBalance",
        kind="python",
        python_code=LOOKUP_BALANCE_CODE,
        description="Looks up the balance of the user's account.",
    )
    root = app.agents.get(is_root=True)
    root = services.agent_update(
        agent=root, display_name="banking_agent", instructions=INSTRUCTIONS, tools=[tool]
    )
    scenario = services.scenario_save(agent=root, name="Balance live", steps_script=GOLDEN)
    return app, root, scenario


def counting_sleeper():
    slept: list[float] = []
    return slept, slept.append


def test_the_model_gets_the_runtime_request_and_its_call_runs_the_real_tool(
    server, models_env, bank_app
):
    models_env()
    app, agent, scenario = bank_app
    server.script(
        openai_call("LookupBalance", {"account_id": "primary"}),
        openai_text("Your balance is 1,250 EUR."),
    )
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="loop")
    first = server.seen[0]
    assert first.path == "/v1/chat/completions"
    assert first.headers["authorization"] == f"Bearer {KEY}"
    system = first.body["messages"][0]
    # The system instruction is the compiled instructions of that model call.
    assert system == {"role": "system", "content": outcome.result.model_calls[0].instructions}
    assert "call the {@TOOL: LookupBalance}" in system["content"]
    assert first.body["messages"][1] == {
        "role": "user",
        "content": "Hi! What is the balance of my current account?",
    }
    declared = first.body["tools"][0]["function"]
    assert declared["name"] == "LookupBalance"
    assert declared["parameters"]["properties"] == {"account_id": {"type": "string"}}
    # The second call carries the tool's real response (its code ran in the sandbox) and
    # the state update the tool wrote, after the tool result (OpenAI's order).
    second = server.seen[1].body["messages"]
    tool_message = next(m for m in second if m["role"] == "tool")
    assert json.loads(tool_message["content"])["balance"] == 1250
    assert second[-1] == {
        "role": "user",
        "content": "<state_update>current_account_balance: 1250</state_update>",
    }
    assert outcome.result.final_state["current_account_balance"] == 1250
    assert outcome.evaluation.status == "passed", outcome.evaluation
    assert outcome.run.model_calls == 2 and outcome.run.tokens_in == 20 + 11


# Bella Notte's engine, in small: before every model call it appends the turn's directive to
# the system instruction and hides a tool the model must not call now.
DIRECTIVE = "\n<system_directive>Ask which account.</system_directive>"
DIRECTIVE_CALLBACK = f"""
DIRECTIVE = {DIRECTIVE!r}

def before_model_callback(callback_context, llm_request):
    llm_request.config.hide_tool("LookupBalance")
    si = llm_request.config.system_instruction
    llm_request.config.system_instruction = si + DIRECTIVE
    return None
"""


def test_the_model_gets_the_request_as_the_before_model_callback_left_it(
    server, models_env, bank_app
):
    """Issue 18 (the runtime as CX runs it): ADK hands the model the LlmRequest the
    callbacks changed — the directive appended to the system instruction reaches the model,
    and a tool the callback hid is not declared to it. Before, both changes were lost."""
    models_env()
    app, agent, scenario = bank_app
    services.callback_create(agent=agent, kind="before_model", code=DIRECTIVE_CALLBACK)
    server.script(openai_text("Which account: current or savings?"))
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="loop")
    first = server.seen[0]
    system = first.body["messages"][0]["content"]
    call = outcome.result.model_calls[0]
    assert system == call.instructions + DIRECTIVE
    assert call.sent_instructions == call.instructions + DIRECTIVE
    assert call.hidden_tools == ("LookupBalance",)
    assert "LookupBalance" not in json.dumps(first.body.get("tools") or [])


def test_gemini_generate_content_with_a_function_call(server, models_env, bank_app):
    models_env("gemini")
    app, agent, scenario = bank_app
    server.script(gemini_call("LookupBalance", {}), gemini_text("1,250 EUR."))
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="loop")
    first = server.seen[0]
    assert first.path == "/v1beta/models/test-model:generateContent"
    assert first.headers["x-goog-api-key"] == KEY
    system = first.body["systemInstruction"]["parts"][0]["text"]
    assert system == outcome.result.model_calls[0].instructions
    declarations = first.body["tools"][0]["functionDeclarations"]
    assert [d["name"] for d in declarations] == ["LookupBalance"]
    response = server.seen[1].body["contents"][2]["parts"][0]["functionResponse"]
    assert response["name"] == "LookupBalance" and response["response"]["balance"] == 1250
    assert outcome.evaluation.status == "passed"


def test_gemini_stream_generate_content_streams_the_text(server, models_env, bank_app):
    models_env("gemini")
    app, agent, scenario = bank_app
    server.script(gemini_call("LookupBalance", {}), gemini_stream("Your balance ", "is 1,250."))
    pieces: list[str] = []
    outcome = run_live(
        app=app, agent=agent, scenario=scenario, model="loop", stream=True, on_text=pieces.append
    )
    assert server.seen[1].path.endswith(":streamGenerateContent?alt=sse")
    # Shown as it arrives, but for the last word of what came so far (a key split across
    # pieces is masked whole before any of it is shown).
    assert pieces == ["Your balance ", "is ", "1,250."]
    reply = [e for e in outcome.result.events if e.kind == "agent"][-1]
    assert reply.text == "Your balance is 1,250."


def test_openai_streaming_with_a_tool_call_split_over_chunks(server, models_env, bank_app):
    models_env()
    app, agent, scenario = bank_app
    server.script(
        openai_stream_call("LookupBalance", '{"account_id": "primary"}'),
        openai_stream_text("Your balance ", "is 1,250 EUR."),
    )
    pieces: list[str] = []
    outcome = run_live(
        app=app, agent=agent, scenario=scenario, model="loop", stream=True, on_text=pieces.append
    )
    assert server.seen[0].body["stream"] is True
    call = next(e for e in outcome.result.events if e.kind == "tool_call")
    assert call.value == {"account_id": "primary"}
    assert "".join(pieces) == "Your balance is 1,250 EUR."
    assert outcome.run.tokens_out == 6 + 4


def test_an_auth_failure_is_named_and_the_key_is_not_in_the_message(server, models_env, bank_app):
    models_env()
    app, agent, scenario = bank_app
    server.script(openai_error(401, f"Incorrect API key provided: {KEY}"))
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="loop")
    assert outcome.error == "auth"
    problem = next(d for d in outcome.result.diagnostics if d.code == "SC421")
    assert "refused the API key from LIVE_KEY" in problem.message
    assert KEY not in json.dumps(outcome.run.calls) + json.dumps(outcome.run.diagnostics)


def test_a_gemini_invalid_key_is_an_auth_error(server, models_env, bank_app):
    models_env("gemini")
    app, agent, scenario = bank_app
    server.script(
        gemini_error(400, "API key not valid. Please pass a valid API key.", "API_KEY_INVALID")
    )
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="loop")
    assert outcome.error == "auth"


def test_a_429_is_retried_with_backoff_through_the_injected_sleeper(server, models_env, bank_app):
    models_env()
    app, agent, scenario = bank_app
    server.script(
        openai_error(429, "slow down"),
        openai_error(503, "overloaded"),
        openai_call("LookupBalance", {}),
        openai_text("1,250 EUR."),
    )
    slept, sleeper = counting_sleeper()
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="loop", sleeper=sleeper)
    # The OpenAI SDK's backoff, 0.5 s doubling, each wait times a jitter in (0.75, 1].
    assert len(slept) == 2 and 0.375 < slept[0] <= 0.5 and 0.75 < slept[1] <= 1.0
    assert outcome.calls[0]["answer"]["retries"] == 2
    assert outcome.run.retries == 2 and outcome.evaluation.status == "passed"


@pytest.mark.parametrize("kind", ["openai", "gemini"])
def test_a_429_waits_what_its_retry_after_asks(server, models_env, bank_app, kind):
    models_env(kind)
    app, agent, scenario = bank_app
    error = openai_error if kind == "openai" else gemini_error
    call = openai_call if kind == "openai" else gemini_call
    text = openai_text if kind == "openai" else gemini_text
    server.script(
        error(429, "slow down", headers={"Retry-After": "3"}),
        call("LookupBalance", {}),
        text("1,250 EUR."),
    )
    slept, sleeper = counting_sleeper()
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="loop", sleeper=sleeper)
    # 3 s, waited in slices of a second (a Cancel or the run's time cap ends the wait).
    assert slept == [1.0, 1.0, 1.0] and len(server.seen) == 3
    assert outcome.calls[0]["answer"]["retries"] == 1 and outcome.evaluation.status == "passed"


def test_a_retry_after_longer_than_two_minutes_is_not_waited_for(server, models_env, bank_app):
    models_env()
    app, agent, scenario = bank_app
    server.script(openai_error(429, "come back tomorrow", headers={"Retry-After": "86400"}))
    slept, sleeper = counting_sleeper()
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="loop", sleeper=sleeper)
    assert slept == [] and len(server.seen) == 1
    assert outcome.error == "quota" and outcome.calls[0]["answer"]["retries"] == 0


def test_429_beyond_the_retries_is_a_quota_error(server, models_env, bank_app):
    models_env(max_retries=1)
    app, agent, scenario = bank_app
    server.script(openai_error(429), openai_error(429))
    slept, sleeper = counting_sleeper()
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="loop", sleeper=sleeper)
    assert outcome.error == "quota" and len(slept) == 1
    assert "after 1 retry" in outcome.calls[0]["answer"]["message"]


def test_a_timeout_is_named(server, models_env, bank_app):
    models_env(timeout=0.3)
    app, agent, scenario = bank_app
    server.script(Reply(stall=True))
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="loop")
    assert outcome.error == "timeout"
    assert "did not answer within 0.3 s" in outcome.calls[0]["answer"]["message"]


def test_malformed_tool_arguments_are_named_and_no_tool_runs(server, models_env, bank_app):
    models_env()
    app, agent, scenario = bank_app
    server.script(openai_call("LookupBalance", '{"account_id": "prim'))
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="loop")
    assert outcome.error == "malformed_arguments"
    assert not [e for e in outcome.result.events if e.kind == "tool_call"]
    assert "LookupBalance" in outcome.calls[0]["answer"]["message"]


def test_a_tool_the_model_invents_is_reported_and_ends_the_turn(server, models_env, bank_app):
    models_env()
    app, agent, scenario = bank_app
    server.script(openai_call("TransferMoney", {"amount": 100}), openai_text("never asked"))
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="loop")
    assert len(server.seen) == 1
    problem = next(d for d in outcome.result.diagnostics if d.code == "SC404")
    assert "TransferMoney" in problem.message
    assert outcome.evaluation.status == "failed" and outcome.error == "unknown_tool"


def test_a_model_that_never_stops_calling_tools_hits_the_cap(server, models_env, bank_app):
    models_env()
    app, agent, scenario = bank_app
    server.repeat_last = True
    server.script(openai_call("LookupBalance", {}))
    caps = Caps(max_calls=50, max_calls_per_turn=4, max_tokens=10**6, max_seconds=999)
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="loop", caps=caps)
    assert len(server.seen) == 4
    assert outcome.error == "cap"
    problem = next(d for d in outcome.result.diagnostics if d.code == "SC421")
    assert "4 times in turn 0" in problem.message


def test_the_time_cap_uses_the_injected_clock(server, models_env, bank_app):
    models_env()
    app, agent, scenario = bank_app
    server.repeat_last = True
    server.script(openai_call("LookupBalance", {}))
    ticks = iter(range(0, 1000, 10))  # each reading of the clock is 10 "seconds" later
    caps = Caps(max_calls=50, max_calls_per_turn=50, max_tokens=10**6, max_seconds=25)
    outcome = run_live(
        app=app,
        agent=agent,
        scenario=scenario,
        model="loop",
        caps=caps,
        clock=lambda: next(ticks),
    )
    assert outcome.error == "cap" and len(server.seen) == 2


def test_record_replay_then_an_instruction_change_drifts_at_the_right_call(
    server, models_env, bank_app
):
    models_env()
    app, agent, scenario = bank_app
    server.script(openai_call("LookupBalance", {}), openai_text("It is 1,250 EUR."))
    live = run_live(app=app, agent=agent, scenario=scenario, model="loop")
    assert live.run.model_calls == 2
    replay = replay_live(run=live.run)
    assert len(server.seen) == 2  # the replay called no model
    assert replay.drift == [] and replay.evaluation.status == "passed"
    assert replay.run.mode == "replay" and replay.run.replay_of == live.run
    # Change one instruction line: the first call's request differs.
    services.agent_update(
        agent=agent, instructions=INSTRUCTIONS.replace("Always share", "Never hide")
    )
    app.refresh_from_db()
    drifted = replay_live(run=live.run)
    assert [d["call"] for d in drifted.drift] == [0, 1]
    change = drifted.drift[0]["changes"][0]
    # The field path, the line, and the two values around the first differing character.
    assert change.startswith("system_instruction, instructions line 3: ")
    assert "'…" in change and "Always share" in change and "Never hide" in change


def test_drift_in_the_history_names_the_second_call(server, models_env, bank_app, user):
    models_env()
    app, agent, scenario = bank_app
    server.script(openai_call("LookupBalance", {}), openai_text("It is 1,250 EUR."))
    live = run_live(app=app, agent=agent, scenario=scenario, model="loop")
    tool = app.tools.get(name="LookupBalance")
    services.tool_update(
        tool=tool, actor=user, python_code=LOOKUP_BALANCE_CODE.replace("1250", "990")
    )
    app.refresh_from_db()
    drifted = replay_live(run=live.run)
    assert [d["call"] for d in drifted.drift] == [1]
    change = next(c for c in drifted.drift[0]["changes"] if "history content" in c)
    # Named by its path, with the two values around the difference (1250 → 990).
    assert change.startswith("history content 3, contents[2].parts[0].function_response")
    assert "1250" in change and "990" in change, change


def test_save_as_golden_turns_a_live_run_into_a_scenario_that_replays(
    server, models_env, bank_app, user
):
    models_env()
    app, agent, scenario = bank_app
    server.script(openai_call("LookupBalance", {"account_id": "primary"}), openai_text("1,250."))
    live = run_live(app=app, agent=agent, scenario=scenario, model="loop")
    golden = live_run_save_golden(run=live.run, actor=user, name="Balance golden")
    script = services.scenario_script(golden)
    assert 'expect call: LookupBalance {"account_id": "primary"}' in script
    assert 'expect state: {"current_account_balance": 1250}' in script
    assert "expect agent: 1,250." in script
    # Offline, the golden's call runs the real tool and its state expectation holds.
    run = services.scenario_evaluate(app=app, agent=agent, scenario=golden, actor=user)
    assert run.evaluation.failed == 0 and run.evaluation.passed >= 2


def test_a_model_not_configured_is_a_clear_error(bank_app, monkeypatch):
    monkeypatch.delenv("STATECRAFT_MODELS", raising=False)
    app, agent, scenario = bank_app
    with pytest.raises(services.ServiceError) as raised:
        run_live(app=app, agent=agent, scenario=scenario, model="nope")
    assert "No model named 'nope'" in str(raised.value)


def test_evaluate_command_runs_the_golden_live_and_exits_0(server, models_env, bank_app, tmp_path):
    models_env()
    app, _, scenario = bank_app
    server.script(openai_call("LookupBalance", {}), openai_text("Your balance is 1,250 EUR."))
    out = io.StringIO()
    junit = tmp_path / "live.xml"
    call_command("evaluate", str(app.pk), "--model", "loop", "--junit", str(junit), stdout=out)
    text = out.getvalue()
    assert "PASS  Live bank / banking_agent / Balance live" in text, text
    system = server.seen[0].body["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("If the user asks")
    assert server.seen[0].body["tools"][0]["function"]["name"] == "LookupBalance"
    # The tool's real code ran: its response reached the model's second call.
    tool_message = next(m for m in server.seen[1].body["messages"] if m["role"] == "tool")
    assert json.loads(tool_message["content"])["currency"] == "EUR"
    assert server.seen[0].headers["authorization"] == f"Bearer {KEY}"
    root = ET.parse(junit).getroot()
    assert root.get("failures") == "0" and root.get("tests") == "1"
    assert LiveRun.objects.filter(scenario=scenario, mode="live").count() == 1


def test_evaluate_command_live_fails_with_exit_1_when_the_model_skips_the_call(
    server, models_env, bank_app
):
    models_env()
    app, _, scenario = bank_app
    server.script(openai_text("I cannot look that up."))
    with pytest.raises(CommandError) as raised:
        call_command("evaluate", str(app.pk), "--model", "loop", stdout=io.StringIO())
    assert raised.value.returncode == 1
    assert Scenario.objects.get(pk=scenario.pk).last_result.status == "failed"


def test_a_cx_scenario_evaluation_runs_a_simulated_user_then_the_judge(
    server, models_env, bank_app
):
    models_env()
    app, _, scenario = bank_app
    evaluation = {
        "displayName": "Simulated balance question",
        "scenario": {
            "task": "Ask for the balance of your current account.",
            "rubrics": ["The agent tells the user the balance.", "The agent is rude."],
            "scenarioExpectations": [
                {"toolExpectation": {"expectedToolCall": {"tool": "LookupBalance"}}},
                {"agentResponse": {"chunks": [{"text": "1,250"}]}},
            ],
            "userFacts": [{"name": "account", "value": "primary"}],
            "maxTurns": 3,
        },
    }
    path = "evaluations/Simulated/Simulated.json"
    from agents.models import AgentApp

    services.scenario_delete(scenario=scenario)  # only the CX evaluation runs
    AgentApp.objects.filter(pk=app.pk).update(cx={"files": {path: json.dumps(evaluation)}})
    verdicts = {
        "rubrics": [
            {"index": 1, "passed": True, "reason": "It said 1,250 EUR."},
            {"index": 2, "passed": False, "reason": "It was polite."},
        ]
    }
    server.script(
        openai_text("Hi, what is my current account balance?"),  # the simulated user
        openai_call("LookupBalance", {}),  # the agent
        openai_text("Your balance is 1,250 EUR."),
        openai_text("END"),  # the user's task is done
        openai_text(json.dumps(verdicts)),  # the judge
    )
    out = io.StringIO()
    with pytest.raises(CommandError) as raised:
        call_command("evaluate", str(app.pk), "--model", "loop", stdout=out)
    assert raised.value.returncode == 1  # the second rubric failed
    text = out.getvalue()
    assert "FAIL  Live bank / Simulated balance question  (simulated user, 1 turn," in text
    assert "ended by user" in text
    assert "It said 1,250 EUR." in text and "It was polite." in text
    user_request = server.seen[0].body["messages"]
    assert "Ask for the balance" in user_request[0]["content"]
    assert "account: primary" in user_request[0]["content"]
    judge = server.seen[4].body["messages"][1]["content"]
    assert "AGENT: Your balance is 1,250 EUR." in judge and "1. The agent tells" in judge
    assert len(server.seen) == 5  # the final re-run answered from the memo
    run = LiveRun.objects.get(scenario_name="Simulated balance question")
    assert run.model_calls == 2 and "user: Hi, what is my current account balance?" in run.script


def test_refused_content_is_named_for_both_protocols(server, models_env, bank_app):
    models_env()
    app, agent, scenario = bank_app
    refused = openai_text("")
    refused.body["choices"][0]["finish_reason"] = "content_filter"
    server.script(refused)
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="loop")
    assert outcome.error == "refused"
    models_env("gemini")
    blocked = gemini_text("")
    blocked.body["candidates"][0]["finishReason"] = "SAFETY"
    server.script(blocked)
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="loop")
    assert outcome.error == "refused" and "safety" in outcome.calls[0]["answer"]["message"]


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ("{not json", "STATECRAFT_MODELS is not valid JSON"),
        ('{"m": {"kind": "claude", "model": "x"}}', "STATECRAFT_MODELS.m.kind"),
        ('{"m": {"kind": "openai"}}', "STATECRAFT_MODELS.m.model"),
        (
            '{"m": {"kind": "openai", "model": "x", "api_key": "sk-1"}}',
            "STATECRAFT_MODELS.m.api_key",
        ),
        (
            '{"m": {"kind": "openai", "model": "x", "api_key_env": "NOPE"}}',
            "the environment variable NOPE",
        ),
        ('{"m": {"kind": "gemini", "model": "x"}}', "STATECRAFT_MODELS.m.api_key_env"),
        ('{"m": {"kind": "openai", "model": "x", "timeout": "5"}}', "STATECRAFT_MODELS.m.timeout"),
        ('{"m": {"kind": "openai", "model": "x", "base_url": "ftp://h"}}', "m.base_url"),
    ],
)
def test_a_bad_statecraft_models_names_the_field(config, field):
    from agents.llm.endpoints import ConfigError, parse_models

    with pytest.raises(ConfigError) as raised:
        parse_models(config, {})
    assert field in str(raised.value)


def test_the_price_table_and_an_endpoint_price_override():
    from agents.llm.endpoints import Endpoint, cost_of

    flash = Endpoint("f", "gemini", "gemini-2.5-flash")
    assert cost_of(flash, 1_000_000, 1_000_000) == pytest.approx(0.30 + 2.50)
    lite = Endpoint("l", "gemini", "gemini-2.5-flash-lite")  # the longest prefix wins
    assert cost_of(lite, 1_000_000, 0) == pytest.approx(0.10)
    local = Endpoint("o", "openai", "llama3.1", price_in=1.0, price_out=2.0)
    assert cost_of(local, 500_000, 250_000) == pytest.approx(1.0)
    assert cost_of(Endpoint("u", "openai", "unknown-model"), 10**6, 10**6) == 0.0


def test_the_app_default_model_and_cx_model_settings_pick_the_endpoint(
    server, models_env, bank_app
):
    from agents.models import AgentApp
    from agents.services.live_models import app_model_set, resolve_model

    models_env()
    app, _, _ = bank_app
    with pytest.raises(services.ServiceError):
        resolve_model(app, None)
    AgentApp.objects.filter(pk=app.pk).update(
        cx={"app": {"modelSettings": {"model": "test-model", "temperature": 0.2}}}
    )
    endpoint, temperature = resolve_model(app, None)  # CX names the endpoint's model
    assert endpoint.name == "loop" and temperature == 0.2
    AgentApp.objects.filter(pk=app.pk).update(cx={})
    app_model_set(app=app, model="loop")
    assert resolve_model(app, None)[0].name == "loop"


def test_cx_model_settings_temperature_reaches_the_wire(server, models_env, bank_app):
    from agents.models import AgentApp

    models_env()
    app, agent, scenario = bank_app
    AgentApp.objects.filter(pk=app.pk).update(
        cx={"app": {"modelSettings": {"model": "test-model", "temperature": 0.3}}}
    )
    server.script(openai_text("Hello."))
    run_live(app=app, agent=agent, scenario=scenario)
    assert server.seen[0].body["temperature"] == 0.3


def test_extra_tool_calls_disallow_fails_a_call_the_golden_does_not_list(
    server, models_env, bank_app, user
):
    models_env()
    app, agent, scenario = bank_app
    services.scenario_save(
        agent=agent,
        scenario=scenario,
        steps_script="user: Hi!\nexpect agent: Hello, how can I help?\n",
    )
    from agents.models import Scenario as ScenarioModel

    ScenarioModel.objects.filter(pk=scenario.pk).update(
        cx={"golden": {"extraToolCallBehavior": "DISALLOW"}}
    )
    scenario.refresh_from_db()
    server.script(openai_call("LookupBalance", {}), openai_text("Hello, how can I help you?"))
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="loop")
    kinds = {r.kind: r.status for r in outcome.evaluation.results}
    assert kinds == {"agent": "passed", "extra calls": "failed"}


def test_manage_py_evaluate_model_in_a_real_process(
    server, bank_app, tmp_path, migrated_sqlite_url
):
    """The pipeline's way: STATECRAFT_MODELS and the key in the environment of a real
    `manage.py evaluate APP --model NAME` process (its start-up check reads them too)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from agents.core.formats import dumps_native
    from agents.services import exchange

    app, _, _ = bank_app
    document = tmp_path / "bank.json"
    document.write_text(dumps_native(exchange.app_export_native(app)), encoding="utf-8")
    server.script(
        openai_call("LookupBalance", {"account_id": "primary"}),
        openai_text("Your balance is 1,250 EUR."),
    )
    root = Path(__file__).resolve().parent.parent
    models = {
        "ci": {
            "kind": "openai",
            "model": "test-model",
            "base_url": f"{server.url}/v1",
            "api_key_env": "CI_MODEL_KEY",
        }
    }
    env = {
        **os.environ,
        "DATABASE_URL": migrated_sqlite_url,
        "STATECRAFT_MODELS": json.dumps(models),
        "CI_MODEL_KEY": KEY,
    }
    manage = [sys.executable, "manage.py"]
    settings = "--settings=tests.settings"

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [*manage, *args, settings],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )

    assert (
        run(
            "createsuperuser", "--noinput", "--username", "ci", "--email", "ci@example.com"
        ).returncode
        == 0
    )
    imported = run("import_app", str(document), "--owner", "ci", "--name", "CI bank")
    assert imported.returncode == 0, imported.stderr
    done = run("evaluate", "CI bank", "--model", "ci", "--junit", str(tmp_path / "j.xml"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS  CI bank / banking_agent / Balance live" in done.stdout
    assert [s.headers["authorization"] for s in server.seen] == [f"Bearer {KEY}"] * 2
    assert KEY not in done.stdout + done.stderr
    env["STATECRAFT_MODELS"] = '{"ci": {"kind": "openai"}}'
    bad = run("evaluate", "CI bank", "--model", "ci")
    assert bad.returncode != 0 and "STATECRAFT_MODELS.ci.model" in bad.stderr


def test_gemini_streams_a_function_call(server, models_env, bank_app):
    models_env("gemini")
    app, agent, scenario = bank_app
    call = gemini_call("LookupBalance", {"account_id": "primary"}).body
    server.script(Reply(stream=[call], done_marker=False), gemini_stream("1,250 ", "EUR."))
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="loop", stream=True)
    assert all(s.path.endswith(":streamGenerateContent?alt=sse") for s in server.seen)
    event = next(e for e in outcome.result.events if e.kind == "tool_call")
    assert event.value == {"account_id": "primary"}
    assert outcome.evaluation.status == "passed"


def test_gemini_429_and_503_are_retried_by_us_alone_with_backoff(server, models_env, bank_app):
    models_env("gemini")
    app, agent, scenario = bank_app
    server.script(
        gemini_error(429, "Resource has been exhausted"),
        gemini_error(503, "The model is overloaded"),
        gemini_call("LookupBalance", {}),
        gemini_text("1,250 EUR."),
    )
    slept, sleeper = counting_sleeper()
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="loop", sleeper=sleeper)
    assert len(slept) == 2 and 0.375 < slept[0] <= 0.5 and 0.75 < slept[1] <= 1.0
    assert len(server.seen) == 4  # google-genai's own retries off
    assert outcome.calls[0]["answer"]["retries"] == 2 and outcome.evaluation.status == "passed"


def test_gemini_429_beyond_the_retries_is_quota_and_a_timeout_is_named(
    server, models_env, bank_app
):
    models_env("gemini", max_retries=1, timeout=0.3)
    app, agent, scenario = bank_app
    server.script(gemini_error(429), gemini_error(429))
    slept, sleeper = counting_sleeper()
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="loop", sleeper=sleeper)
    assert outcome.error == "quota" and len(slept) == 1 and len(server.seen) == 2
    server.script(Reply(stall=True))
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="loop", sleeper=sleeper)
    assert outcome.error == "timeout"
    assert "did not answer within 0.3 s" in outcome.calls[0]["answer"]["message"]


def test_gemini_a_tool_the_model_invents_ends_the_turn(server, models_env, bank_app):
    models_env("gemini")
    app, agent, scenario = bank_app
    server.script(gemini_call("TransferMoney", {"amount": 100}), gemini_text("never asked"))
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="loop")
    assert len(server.seen) == 1 and outcome.error == "unknown_tool"
    assert any(
        d.code == "SC404" and "TransferMoney" in d.message for d in outcome.result.diagnostics
    )


def test_gemini_gets_back_the_thought_signature_of_each_function_call(server, models_env, bank_app):
    """Gemini 3 answers a request whose function call lacks its thought signature with a
    400; the signature each answer carried goes back with its call, in order."""
    import base64

    models_env("gemini")
    app, agent, scenario = bank_app
    first, second = gemini_call("LookupBalance", {}), gemini_call("LookupBalance", {})
    for reply, signature in ((first, b"sig-1"), (second, b"sig-2")):
        part = reply.body["candidates"][0]["content"]["parts"][0]
        part["thoughtSignature"] = base64.b64encode(signature).decode()
    server.script(first, second, gemini_text("1,250 EUR."))
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="loop")
    assert outcome.error == "" and len(server.seen) == 3

    def signatures(seen):
        return [
            part.get("thoughtSignature")
            for content in seen.body["contents"]
            if content["role"] == "model"
            for part in content["parts"]
            if "functionCall" in part
        ]

    assert signatures(server.seen[1]) == ["c2lnLTE="]
    assert signatures(server.seen[2]) == ["c2lnLTE=", "c2lnLTI="]
    # The recorded request (its fingerprint) is the runtime's: a replay does not drift.
    assert replay_live(run=outcome.run).drift == []


@pytest.mark.parametrize(
    ("caps", "message"),
    [
        (Caps(max_calls=1), "the run reached its cap of 1 model calls"),
        (Caps(max_tokens=25), "the run reached its cap of 25 tokens"),  # the first used 27
    ],
)
def test_the_run_caps_on_model_calls_and_tokens(server, models_env, bank_app, caps, message):
    models_env()
    app, agent, scenario = bank_app
    server.script(openai_call("LookupBalance", {}), openai_text("never asked"))
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="loop", caps=caps)
    assert len(server.seen) == 1 and outcome.error == "cap"
    problem = next(d for d in outcome.result.diagnostics if d.code == "SC421")
    assert message in problem.message
    assert outcome.run.model_calls == 1 and outcome.run.tokens_in + outcome.run.tokens_out == 27


def test_an_agents_cx_model_settings_outrank_the_apps(server, models_env, bank_app):
    from agents.models import Agent, AgentApp

    models_env()
    app, agent, scenario = bank_app
    AgentApp.objects.filter(pk=app.pk).update(
        cx={"app": {"modelSettings": {"model": "not-configured", "temperature": 0.9}}}
    )
    Agent.objects.filter(pk=agent.pk).update(
        cx={"modelSettings": {"model": "test-model", "temperature": 0.1}}
    )
    agent.refresh_from_db()
    server.script(openai_text("Hello."))
    outcome = run_live(app=app, agent=agent, scenario=scenario)
    assert outcome.run.model_name == "loop" and server.seen[0].body["temperature"] == 0.1


def test_evaluate_replay_in_ci_passes_offline_then_fails_on_drift(
    server, models_env, bank_app, tmp_path
):
    """Live once (`--model`), then `--replay` in CI: no model called, exit 0; after one
    instruction line changed, the replay names the call that drifted and exits 1."""
    models_env()
    app, agent, _ = bank_app
    server.script(openai_call("LookupBalance", {}), openai_text("Your balance is 1,250 EUR."))
    call_command("evaluate", str(app.pk), "--model", "loop", stdout=io.StringIO())
    assert len(server.seen) == 2
    out = io.StringIO()
    call_command("evaluate", str(app.pk), "--replay", stdout=out)
    assert len(server.seen) == 2  # the replay called no model
    assert "PASS   Live bank / banking_agent / Balance live  (replay of live run" in out.getvalue()
    assert "1 passed, 0 failed, 0 drifted, 0 not recorded" in out.getvalue()
    services.agent_update(
        agent=agent, instructions=INSTRUCTIONS.replace("Always share", "Never hide")
    )
    out = io.StringIO()
    junit = tmp_path / "replay.xml"
    with pytest.raises(CommandError) as raised:
        call_command("evaluate", str(app.pk), "--replay", "--junit", str(junit), stdout=out)
    assert raised.value.returncode == 1 and "drifted from their recording" in str(raised.value)
    text = out.getvalue()
    assert "DRIFT  Live bank / banking_agent / Balance live" in text
    assert "model call 1 (turn 0) differs from the recording:" in text
    assert "instructions line 3:" in text and "Never hide" in text
    failure = ET.parse(junit).getroot().find(".//failure")
    assert failure is not None and "model call 1 (turn 0)" in failure.get("message")
    assert len(server.seen) == 2


def test_evaluate_replay_lists_a_scenario_never_recorded_and_refuses_a_model(bank_app):
    app, _, _ = bank_app
    out = io.StringIO()
    call_command("evaluate", str(app.pk), "--replay", stdout=out)  # exit 0
    assert "----   Live bank / banking_agent / Balance live  (no live recording" in out.getvalue()
    with pytest.raises(CommandError) as raised:
        call_command("evaluate", str(app.pk), "--replay", "--model", "x", stdout=io.StringIO())
    assert raised.value.returncode == 2


def test_a_live_transfer_to_agent_hands_over_to_the_sub_agent(server, models_env, bank_app):
    """The root's request declares transfer_to_agent with its sub-agents as the enum and
    ADK's note; the model's transfer hands over, and the next request is the sub-agent's
    (its instructions, its tools); `expect transfer` holds."""
    models_env()
    app, root, scenario = bank_app
    cards = services.agent_create(
        app=app,
        display_name="card_agent",
        description="Blocks and replaces lost cards.",
        instructions="You block lost cards. Ask for the last four digits.",
    )
    services.agent_update(agent=root, children=[cards])
    services.scenario_save(
        agent=root,
        scenario=scenario,
        steps_script="user: I lost my card\nexpect transfer: card_agent\n",
    )
    server.script(
        openai_call("transfer_to_agent", {"agent_name": "card_agent"}),
        openai_text("I can block it. What are the last four digits?"),
    )
    root.refresh_from_db()
    scenario.refresh_from_db()
    outcome = run_live(app=app, agent=root, scenario=scenario, model="loop")
    first, second = (s.body for s in server.seen)
    declared = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert declared["transfer_to_agent"]["parameters"]["properties"]["agent_name"] == {
        "type": "string",
        "enum": ["card_agent"],
    }
    assert "Agent name: card_agent" in first["messages"][0]["content"]
    assert "Blocks and replaces lost cards." in first["messages"][0]["content"]
    assert second["messages"][0]["content"].startswith("You block lost cards.")
    assert "tools" not in second or all(
        t["function"]["name"] != "LookupBalance" for t in second["tools"]
    )
    assert outcome.evaluation.status == "passed", outcome.evaluation


def test_live_callbacks_run_around_the_models_calls(server, models_env, bank_app, user):
    """A before_model callback's state write reaches the model's request as a state
    update; an after_tool callback's change of the tool's response is what the model
    gets back."""
    models_env()
    app, agent, scenario = bank_app
    services.variable_create(app=app, name="greeted", type="boolean")
    services.callback_create(
        agent=agent,
        kind="before_model",
        code="def before_model_callback(callback_context, llm_request):\n"
        '    callback_context.state["greeted"] = True\n'
        "    return None\n",
    )
    services.callback_create(
        agent=agent,
        kind="after_tool",
        code="def after_tool_callback(tool, input, callback_context, tool_response):\n"
        '    tool_response["checked_by"] = "after_tool"\n'
        "    return tool_response\n",
    )
    server.script(openai_call("LookupBalance", {}), openai_text("It is 1,250 EUR."))
    agent.refresh_from_db()
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="loop")
    assert outcome.error == "" and len(server.seen) == 2
    first = server.seen[0].body["messages"]
    # The user's message and the callback's state update (one user turn on the wire).
    assert first[-1] == {
        "role": "user",
        "content": "Hi! What is the balance of my current account?\n"
        "<state_update>greeted: true</state_update>",
    }
    tool_message = next(m for m in server.seen[1].body["messages"] if m["role"] == "tool")
    assert json.loads(tool_message["content"])["checked_by"] == "after_tool"
    assert outcome.result.final_state["greeted"] is True


def test_a_simulated_user_that_never_ends_stops_at_the_turn_limit(server, models_env, bank_app):
    models_env()
    app, _, scenario = bank_app
    evaluation = {
        "displayName": "Chatty user",
        "scenario": {
            "task": "Keep asking about your balance.",
            "scenarioExpectations": [
                {"toolExpectation": {"expectedToolCall": {"tool": "LookupBalance"}}}
            ],
            "maxTurns": 2,
        },
    }
    from agents.models import AgentApp

    services.scenario_delete(scenario=scenario)
    path = "evaluations/Chatty/Chatty.json"
    AgentApp.objects.filter(pk=app.pk).update(cx={"files": {path: json.dumps(evaluation)}})
    server.script(
        openai_text("What is my balance?"),  # user, turn 1
        openai_call("LookupBalance", {}),  # agent
        openai_text("It is 1,250 EUR."),
        openai_text("And again, what is it?"),  # user, turn 2 (never END)
        openai_text("Still 1,250 EUR."),  # agent (turn 1 answered from the memo)
    )
    out = io.StringIO()
    call_command("evaluate", str(app.pk), "--model", "loop", stdout=out)  # exit 0
    text = out.getvalue()
    assert "PASS  Live bank / Chatty user  (simulated user, 2 turns, ended by turns" in text
    assert len(server.seen) == 5  # no third user turn: the limit is 2


def test_adks_transfer_note_comes_before_what_the_callback_appended(server, models_env, bank_app):
    """ADK appends its note on transfer_to_agent before the callbacks run, so the directive a
    before_model callback appends comes after the note in what the model receives."""
    models_env()
    app, agent, scenario = bank_app
    helper = services.agent_create(
        app=app, display_name="savings_agent", description="Savings questions."
    )
    agent = services.agent_update(agent=agent, children=[helper])
    services.callback_create(agent=agent, kind="before_model", code=DIRECTIVE_CALLBACK)
    server.script(openai_text("Which account?"))
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="loop")
    system = server.seen[0].body["messages"][0]["content"]
    call = outcome.result.model_calls[0]
    assert system.startswith(call.instructions + "\n\nYou have a list of other agents")
    assert system.endswith("other than the function call." + DIRECTIVE)


def _kinds(contents):
    """The runtime's contents as (role, part kind) pairs: call, response or the text."""
    out = []
    for content in contents:
        for part in content["parts"]:
            kind = (
                "call"
                if "function_call" in part
                else "response"
                if "function_response" in part
                else part.get("text")
            )
            out.append((content["role"], kind))
    return out


@pytest.mark.parametrize("kind", ["openai", "gemini"])
def test_a_state_update_the_tool_wrote_comes_right_after_its_function_response(
    kind, server, models_env, bank_app
):
    """The tool writes a dynamically referenced variable, then the model answers and the
    user speaks again. Both wire protocols want a function call followed at once by its
    response (the loopback server answers the real 400 otherwise): the runtime's request
    — what is recorded and fingerprinted, and what a replay compares — has the
    ``<state_update>`` right after the function response, not between the call and its
    response, and the wire has the same order."""
    models_env(kind)
    app, agent, _ = bank_app
    scenario = services.scenario_save(
        agent=agent, name="Two turns", steps_script="user: What is my balance?\nuser: Thanks!\n"
    )
    call, text = (openai_call, openai_text) if kind == "openai" else (gemini_call, gemini_text)
    server.script(
        call("LookupBalance", {"account_id": "primary"}),
        text("It is 1,250 EUR."),
        text("You are welcome."),
    )
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="loop")
    assert server.refused == []
    assert outcome.run.model_calls == 3 and outcome.run.error == ""
    update = "<state_update>current_account_balance: 1250</state_update>"
    assert _kinds(outcome.run.calls[2]["request"]["contents"]) == [
        ("user", "What is my balance?"),
        ("model", "call"),
        ("user", "response"),
        ("user", update),
        ("model", "It is 1,250 EUR."),
        ("user", "Thanks!"),
    ]
    wire = server.seen[2].body
    if kind == "openai":
        assert [m["role"] for m in wire["messages"]] == [
            "system",
            "user",
            "assistant",
            "tool",
            "user",
            "assistant",
            "user",
        ]
        assert wire["messages"][4]["content"] == update
    else:
        assert [[next(iter(p)) for p in c["parts"]] for c in wire["contents"]] == [
            ["text"],
            ["functionCall"],
            ["functionResponse", "text"],
            ["text"],
            ["text"],
        ]
        assert wire["contents"][2]["parts"][1]["text"] == update


RAISING_CODE = """def LookupBalance(account_id: str = "primary") -> dict:
    context.state["current_account_balance"] = 1
    raise ValueError("the bank is down")
"""


@pytest.mark.parametrize("kind", ["openai", "gemini"])
def test_a_call_whose_tool_raised_is_not_sent_again_without_its_response(
    kind, server, models_env, bank_app, user
):
    """The tool raises: the turn ends there with the function call and no response (its
    write undone). The next turn's request left that call in the history, and both real
    services refuse a call without its response (OpenAI's 400 "An assistant message with
    'tool_calls' must be followed by tool messages…", Gemini's "function response turn
    comes immediately after a function call turn"): the runtime leaves it out, as ADK's
    contents do (``drop_orphaned_function_calls``)."""
    models_env(kind)
    app, agent, _ = bank_app
    tool = app.tools.get(name="LookupBalance")
    services.tool_update(tool=tool, actor=user, python_code=RAISING_CODE)
    scenario = services.scenario_save(
        agent=agent, name="Down", steps_script="user: What is my balance?\nuser: Try again?\n"
    )
    call, text = (openai_call, openai_text) if kind == "openai" else (gemini_call, gemini_text)
    server.script(call("LookupBalance", {}), text("The bank is down, sorry."))
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="loop")
    assert server.refused == []
    assert outcome.run.model_calls == 2 and outcome.run.error == ""
    assert _kinds(outcome.run.calls[1]["request"]["contents"]) == [
        ("user", "What is my balance?"),
        ("user", "Try again?"),
    ]
    assert [e.kind for e in outcome.result.events if e.kind in ("tool_call", "error")][:1] == [
        "tool_call"
    ]


@pytest.mark.parametrize("kind", ["openai", "gemini"])
def test_a_response_whose_call_left_the_context_window_is_not_sent(
    kind, server, models_env, bank_app
):
    """With a small token budget the window drops the turn's first events — the user's
    message and the function call — and keeps the function response: a response without
    its call, which both services refuse (OpenAI's 400 "messages with role 'tool' must be a
    response to a preceeding message with 'tool_calls'", Gemini's "function response turn
    comes immediately after a function call turn"). It is left out, as ADK leaves an
    orphaned response out (``drop_orphaned_function_responses``)."""
    models_env(kind)
    app, agent, _ = bank_app
    # The instructions take 47 tokens; 55 left hold the update, the response and the reply
    # (50) but not the user's message and the call before them (25 more).
    scenario = services.scenario_save(
        agent=agent,
        name="Window",
        steps_script="user: What is my balance?\nuser: Thanks!\n",
        token_budget=102,
    )
    call, text = (openai_call, openai_text) if kind == "openai" else (gemini_call, gemini_text)
    server.script(
        call("LookupBalance", {"account_id": "primary"}),
        text("It is 1,250 EUR."),
        text("You are welcome."),
    )
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="loop")
    assert server.refused == []
    assert outcome.run.model_calls == 3 and outcome.run.error == ""
    assert _kinds(outcome.run.calls[2]["request"]["contents"]) == [
        ("user", "<state_update>current_account_balance: 1250</state_update>"),
        ("model", "It is 1,250 EUR."),
        ("user", "Thanks!"),
    ]
