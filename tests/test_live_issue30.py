"""Issue 30: live evaluation that holds — judging, history, masking, malformed answers and
recordings, each against a real HTTP server on loopback (tests/llm_server.py)."""

# ruff: noqa: F811 - the fixtures imported from other test modules
from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from agents import services
from agents.core.evaluate import evaluate
from agents.core.simulate import simulate
from agents.core.spec import (
    AgentSpec,
    AppSpec,
    ExpectationSpec,
    ExpectKind,
    ScenarioSpec,
    StepKind,
    StepSpec,
    ToolKind,
    ToolSpec,
)
from agents.demo import LOOKUP_BALANCE_CODE
from agents.llm.masking import MIN_MASKED_KEY, mask_message, mask_secrets
from agents.models import LiveRun
from agents.services.live_recording import replayable_recording
from agents.services.live_runs import run_live
from tests.llm_server import (
    KEY,
    Reply,
    configure_models,
    openai_call,
    openai_error,
    openai_text,
)
from tests.test_live_runs import bank_app, models_env  # noqa: F401

pytestmark = pytest.mark.django_db

HTML = b"<!doctype html><html><body><h1>Welcome to nginx!</h1></body></html>"


# --------------------------------------------------------------------------- 1. judging


def test_a_turn_without_an_agent_response_judges_no_reply(server, models_env, user):
    """A golden turn that specifies no reply (an imported CX turn without agentResponse:
    an empty ``agent:`` step) judges none; before, its empty text scored 0 % and failed."""
    app = services.app_create(owner=user, name="Empty reply")
    root = app.agents.get(is_root=True)
    scenario = services.scenario_save(
        agent=root, name="No reply specified", steps_script="user: Hello\nagent:\n"
    )
    models_env()
    server.script(openai_text("Good evening, welcome!"))
    outcome = run_live(app=app, agent=root, scenario=scenario, model="loop")
    assert not [r for r in outcome.evaluation.results if r.kind == "agent"]
    assert outcome.evaluation.status in ("none", "passed")


def _offline_app() -> AppSpec:
    tool = ToolSpec(name="LookupBalance", kind=ToolKind.PYTHON, python_code=LOOKUP_BALANCE_CODE)
    agent = AgentSpec(name="bank", is_root=True, tools=("LookupBalance",))
    return AppSpec(name="bank", agents=(agent,), tools=(tool,))


def test_a_golden_with_an_expected_call_not_made_is_never_passed():
    """Offline, a call the golden lists without arguments is not made (the model chooses
    them): the golden needs a model even when its other checks pass — never *passed*."""
    app = _offline_app()
    scenario = ScenarioSpec(
        name="g",
        agent="bank",
        steps=(
            StepSpec(StepKind.USER, text="Hi"),
            StepSpec(
                StepKind.EXPECT, expectation=ExpectationSpec(ExpectKind.CALL, tool="LookupBalance")
            ),
            StepSpec(StepKind.EXPECT, expectation=ExpectationSpec(ExpectKind.STATE, value={})),
            StepSpec(StepKind.AGENT, text="Hello."),
        ),
    )
    result = simulate(app, scenario)
    evaluation = evaluate(scenario, result)
    assert any(r.status == "passed" for r in evaluation.results)
    assert evaluation.status == "needs_model"


# --------------------------------------------------------------------------- 8. updatedVariables


def test_updated_variables_match_a_value_written_during_the_turn(user):
    """CX compares ``updatedVariables`` with what the turn wrote: a value a tool wrote and
    later code of the same turn moved on still matches (bella_notte's guest_name)."""
    code = (
        "def Pend(name: str = 'Garcia') -> dict:\n"
        "    context.state['sm'] = {'pending': {'guest_name': name}}\n"
        "    return {'ok': True}\n"
    )
    moved = (
        "def before_model_callback(callback_context, llm_request):\n"
        "    sm = callback_context.state.get('sm') or {}\n"
        "    if sm.get('pending'):\n"
        "        callback_context.state['sm'] = {'filled': sm['pending'], 'pending': {}}\n"
        "    return None\n"
    )
    app = services.app_create(owner=user, name="During the turn")
    schema = services.schema_create(app=app, name="SM", json_schema={"type": "object"})
    services.variable_create(app=app, name="sm", type="object", schema=schema)
    tool = services.tool_create(app=app, name="Pend", kind="python", python_code=code)
    root = services.agent_update(agent=app.agents.get(is_root=True), tools=[tool])
    services.callback_create(agent=root, kind="before_model", code=moved)
    script = (
        'user: Garcia\ntool: Pend {"name": "Garcia"}\n'
        'expect state: {"sm": {"pending": {"guest_name": "Garcia"}}}\nagent: Noted.\n'
    )
    scenario = services.scenario_save(agent=root, name="Deferred", steps_script=script)
    run = services.scenario_run(app=app, agent=root, scenario=scenario)
    assert run.result.turns[0].state_after["sm"]["pending"] == {}  # moved on by the end
    state = [r for r in run.evaluation.results if r.kind == "state"]
    assert state and state[0].status == "passed", state


# --------------------------------------------------------------------------- 3. history


def test_a_live_request_carries_the_whole_conversation(server, models_env, bank_app):
    """No token window by default live: the last request still holds the first user
    message although the conversation is far past the default budget of 8,000 tokens."""
    models_env()
    app, agent, scenario = bank_app
    long = "word " * 6000  # about 6,000 tokens a message
    script = "\n".join(f"user: {i} {long}\nagent:" for i in range(3))
    scenario = services.scenario_save(agent=agent, name="Long talk", steps_script=script)
    server.script(openai_text("Yes."), openai_text("Yes."), openai_text("Yes."))
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="loop")
    last = server.seen[-1].body["messages"]
    users = [m["content"] for m in last if m["role"] == "user"]
    assert users[0].startswith("0 word") and len(users) == 3
    assert all(not t.dropped for t in outcome.result.turns)


def test_a_budget_the_scenario_sets_windows_the_history_and_says_where(
    server,
    models_env,
    bank_app,
):
    models_env()
    app, agent, _ = bank_app
    long = "word " * 6000
    script = "\n".join(f"user: {i} {long}\nagent:" for i in range(3))
    scenario = services.scenario_save(agent=agent, name="Windowed", steps_script=script)
    scenario.token_budget = 9000
    scenario.save()
    server.script(openai_text("Yes."), openai_text("Yes."), openai_text("Yes."))
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="loop")
    users = [m["content"] for m in server.seen[-1].body["messages"] if m["role"] == "user"]
    assert not users[0].startswith("0 word")
    dropped = [t for t in outcome.result.turns if t.dropped]
    assert dropped  # the timeline's turn says which events left the window


# --------------------------------------------------------------------------- 4. masking


def test_a_one_letter_key_changes_no_tool_argument(server, monkeypatch, bank_app):
    configure_models(monkeypatch, {"loop": {"server": server}}, key="k")
    app, agent, scenario = bank_app
    server.script(
        openai_call("LookupBalance", {"account_id": "checking-key"}),
        openai_text("Your checking balance is 1,250 EUR."),
    )
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="loop")
    calls = [e for e in outcome.result.events if e.kind == "tool_call"]
    assert calls[0].value == {"account_id": "checking-key"}
    response = next(e for e in outcome.result.events if e.kind == "tool_response")
    assert response.value["account_id"] == "checking-key"
    assert "***" not in json.dumps(outcome.run.calls)


ECHO = '''
def echo(note: str) -> dict:
    """Keep a note."""
    context.state["note_length"] = len(note)
    return {"length": len(note)}
'''


def test_a_key_the_model_echoes_reaches_the_tool_whole_and_is_masked_where_stored(
    server, models_env, user
):
    """Masked only where shown or stored, never in what runs: the model echoes the
    endpoint's key into a tool's argument; the tool gets the model's own text (its length
    says so), while the stored run, its timeline and its verdicts hold only ``***``."""
    from agents.models import LiveRun

    models_env()
    app = services.app_create(owner=user, name="Echo")
    services.variable_create(app=app, name="note_length", type="number")
    root = app.agents.get(is_root=True)
    tool = services.tool_create(app=app, name="echo", kind="python", python_code=ECHO)
    root = services.agent_update(agent=root, tools=[tool])
    scenario = services.scenario_save(agent=root, name="Echo", steps_script="user: note it\n")
    said = f"my key is {KEY}"
    server.script(openai_call("echo", {"note": said}), openai_text(f"Noted: {KEY}"))
    outcome = run_live(app=app, agent=root, scenario=scenario, model="loop")
    assert outcome.error == ""
    response = next(e for e in outcome.result.events if e.kind == "tool_response")
    assert response.value == {"length": len(said)}  # the tool got the key, not ***
    stored = json.dumps(list(LiveRun.objects.filter(pk=outcome.run.pk).values()), default=str)
    assert "my key is ***" in stored and KEY not in stored
    shown = json.dumps([[str(e.label), str(e.text), e.value] for e in outcome.result.events])
    assert KEY not in shown


def test_a_key_shorter_than_eight_characters_is_never_used_to_mask():
    assert MIN_MASKED_KEY == 8
    assert mask_secrets({"flow": "takeout"}, "k") == {"flow": "takeout"}
    assert mask_secrets("EMPTY keys stay", "EMPTY") == "EMPTY keys stay"
    assert mask_message("the key sk-live-1234 leaked", "sk-live-1234") == "the key *** leaked"
    assert mask_secrets("Bearer abc.def", "x") == "Bearer ***"


# --------------------------------------------------------------------------- 5. malformed


@pytest.mark.parametrize(
    ("kind", "reply", "content_type"),
    [
        ("openai", Reply(raw=HTML, content_type="text/html"), "text/html"),
        (
            "openai",
            Reply(raw=b'{"id": "x", "choices": [{"ind', content_type="application/json"),
            "application/json",
        ),
        ("gemini", Reply(raw=HTML, content_type="text/html; charset=utf-8"), "text/html"),
        ("gemini", Reply(body={"modelVersion": "x"}), "application/json"),
    ],
    ids=["openai-html", "openai-cut-json", "gemini-html", "gemini-no-candidates"],
)
def test_a_200_whose_body_is_not_the_protocol_ends_the_run_as_malformed(
    kind,
    reply,
    content_type,
    server,
    models_env,
    bank_app,
):
    models_env(kind)
    app, agent, scenario = bank_app
    server.script(reply)
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="loop")
    assert outcome.error == "malformed"
    assert outcome.run.error == "malformed"
    message = str(outcome.calls[0]["answer"]["message"])
    assert "HTTP 200" in message and content_type in message
    assert len(server.seen) == 1  # not retried, and the run ended there
    assert any(d.code == "SC421" for d in outcome.result.diagnostics)


def test_evaluate_live_names_a_malformed_answer(server, models_env, bank_app):
    models_env()
    app, _, _ = bank_app
    server.script(Reply(raw=HTML, content_type="text/html"))
    out = io.StringIO()
    with pytest.raises(CommandError):
        call_command("evaluate", str(app.pk), "--model", "loop", stdout=out, stderr=out)
    assert "malformed" in out.getvalue()


# --------------------------------------------------------------------------- 6. recordings


def test_after_a_failed_run_replay_uses_the_latest_successful_recording(
    server,
    monkeypatch,
    bank_app,
):
    """Live once (good), then once with a wrong key (401): ``evaluate --replay`` still
    replays the good recording, says which, and the designer's Replay targets it."""
    configure_models(monkeypatch, {"loop": {"server": server}})
    app, agent, scenario = bank_app
    server.script(openai_call("LookupBalance", {}), openai_text("Your balance is 1,250 EUR."))
    good = run_live(app=app, agent=agent, scenario=scenario, model="loop").run
    server.script(openai_error(401, "Incorrect API key provided"))
    bad = run_live(app=app, agent=agent, scenario=scenario, model="loop").run
    assert bad.error == "auth" and bad.pk != good.pk
    assert replayable_recording(scenario) == good
    seen = len(server.seen)
    out = io.StringIO()
    call_command("evaluate", str(app.pk), "--replay", stdout=out)
    text = out.getvalue()
    assert f"(replay of live run {good.pk} (loop," in text and "the latest successful one" in text
    assert "1 passed, 0 failed, 0 drifted, 0 not recorded" in text
    assert len(server.seen) == seen  # no model called


def test_replay_says_so_when_every_live_run_failed(server, monkeypatch, bank_app):
    configure_models(monkeypatch, {"loop": {"server": server}})
    app, agent, scenario = bank_app
    server.script(openai_error(401, "Incorrect API key provided"))
    run_live(app=app, agent=agent, scenario=scenario, model="loop")
    assert LiveRun.objects.filter(scenario=scenario).count() == 1
    assert replayable_recording(scenario) is None
    out = io.StringIO()
    call_command("evaluate", str(app.pk), "--replay", stdout=out)
    assert "no successful live recording: every live run failed" in out.getvalue()


def test_the_designer_replays_the_good_recording_after_a_failed_run(
    server,
    monkeypatch,
    bank_app,
    client,
):

    configure_models(monkeypatch, {"loop": {"server": server}})
    app, agent, scenario = bank_app
    server.script(openai_call("LookupBalance", {}), openai_text("Your balance is 1,250 EUR."))
    good = run_live(app=app, agent=agent, scenario=scenario, model="loop").run
    server.script(openai_error(401, "Incorrect API key provided"))
    bad = run_live(app=app, agent=agent, scenario=scenario, model="loop").run
    client.force_login(app.owner)
    simulate = f"/apps/{app.pk}/agents/{agent.pk}/simulate"
    page = client.get(simulate, {"scenario": scenario.pk}, headers={"HX-Request": "true"})
    html = page.content.decode()
    assert f'"replay": "{good.pk}"' in html and f'"replay": "{bad.pk}"' not in html
    assert f"replays live run {good.pk}" in html


# --------------------------------------------------------------------------- 7. determinism

PICK_CODE = '''import random


def Pick(topic: str = "any") -> dict:
    """Picks an acknowledgement at random, as bella_notte's engine does."""
    word = random.choice([f"ack-{i}" for i in range(1000)])
    context.state["ack"] = word
    return {"ack": word, "n": random.randint(0, 10**9)}
'''


def test_record_then_replay_of_code_that_draws_from_random_reports_no_drift(
    server, models_env, user
):
    """Code drawing from `random` during a live run draws the same in its replay (the
    call is seeded from what it receives): an unchanged app replays without drift."""
    from agents.services.live_replays import replay_live

    models_env()
    app = services.app_create(owner=user, name="Random acks")
    services.variable_create(app=app, name="ack", type="text")
    tool = services.tool_create(app=app, name="Pick", kind="python", python_code=PICK_CODE)
    root = services.agent_update(agent=app.agents.get(is_root=True), tools=[tool])
    scenario = services.scenario_save(
        agent=root, name="Ack", steps_script="user: Hi\nexpect call: Pick\n"
    )
    server.script(openai_call("Pick", {"topic": "hello"}), openai_text("Done."))
    live = run_live(app=app, agent=root, scenario=scenario, model="loop")
    assert live.error == "" and live.result.final_state["ack"].startswith("ack-")
    replay = replay_live(run=live.run)
    assert replay.drift == []
    assert replay.result.final_state["ack"] == live.result.final_state["ack"]


# --------------------------------------------------------------------------- 5. pins


def test_a_pinned_recording_is_what_every_replay_uses_and_a_failed_run_moves_nothing(
    server,
    monkeypatch,
    bank_app,
    client,
):
    """Two good live runs: by default the latest is the recording. The designer pins the
    first through the API: ``evaluate --replay`` and the designer's Replay use it and say
    so; a failed run after it moves nothing, and cannot itself be pinned (400 naming the
    field); the designer's Pin control unpins."""
    configure_models(monkeypatch, {"loop": {"server": server}})
    app, agent, scenario = bank_app
    server.script(openai_call("LookupBalance", {}), openai_text("Your balance is 1,250 EUR."))
    first = run_live(app=app, agent=agent, scenario=scenario, model="loop").run
    server.script(openai_call("LookupBalance", {}), openai_text("Your balance is 1,250 EUR."))
    second = run_live(app=app, agent=agent, scenario=scenario, model="loop").run
    client.force_login(app.owner)
    url = f"/api/apps/{app.pk}/agents/{agent.pk}/scenarios/{scenario.pk}/recording"
    body = client.get(url).json()
    assert body["recording"]["id"] == second.pk and body["pinned"] is False
    assert [r["id"] for r in body["runs"]] == [second.pk, first.pk]
    assert body["runs"][0]["model"] == "loop" and body["runs"][0]["status"] == "passed"
    answer = client.put(url, {"pinned_run": first.pk}, content_type="application/json")
    assert answer.status_code == 200, answer.content
    assert answer.json()["recording"]["id"] == first.pk and answer.json()["pinned"] is True
    scenario_url = f"/api/apps/{app.pk}/agents/{agent.pk}/scenarios/{scenario.pk}/"
    assert client.get(scenario_url).json()["pinned_run"] == first.pk
    # A failed run later (a wrong key): the pin stays, and the failed run cannot be pinned.
    server.script(openai_error(401, "Incorrect API key provided"))
    bad = run_live(app=app, agent=agent, scenario=scenario, model="loop").run
    assert bad.error == "auth"
    refused = client.put(url, {"pinned_run": bad.pk}, content_type="application/json")
    assert refused.status_code == 400
    problem = refused.json()["diagnostics"][0]
    assert problem["field"] == "pinned_run" and "auth" in problem["message"]
    seen = len(server.seen)
    out = io.StringIO()
    call_command("evaluate", str(app.pk), "--replay", stdout=out)
    text = out.getvalue()
    assert f"(replay of live run {first.pk} (loop, " in text and ", pinned):" in text, text
    assert len(server.seen) == seen
    # The designer: Replay targets the pinned run, the list offers the runs (the failed
    # one disabled), and its Pin control unpins (the latest successful one again).
    simulate = f"/apps/{app.pk}/agents/{agent.pk}/simulate"
    html = client.get(simulate, {"scenario": scenario.pk}, headers={"HX-Request": "true"})
    html = html.content.decode()
    assert f'"replay": "{first.pk}"' in html and f"replays live run {first.pk}" in html
    assert f'<option value="{first.pk}" selected>' in html
    assert f'<option value="{bad.pk}" disabled>' in html
    pin = f"/apps/{app.pk}/agents/{agent.pk}/scenarios/{scenario.pk}/pin"
    page = client.post(pin, {"pinned_run": ""}, headers={"HX-Request": "true"})
    assert page.status_code == 200
    assert f'"replay": "{second.pk}"' in page.content.decode()
    scenario.refresh_from_db()
    assert scenario.pinned_run is None


def test_a_version_restore_keeps_the_pinned_recording(server, monkeypatch, bank_app):
    """The pin is the designer's choice of recording, not part of a version: restoring a
    version keeps the scenario's pin (before, the restored scenario came back unpinned)."""
    from agents.services import live_pins, versions

    configure_models(monkeypatch, {"loop": {"server": server}})
    app, agent, scenario = bank_app
    runs = []
    for _ in range(2):
        server.script(openai_call("LookupBalance", {}), openai_text("Your balance is 1,250 EUR."))
        runs.append(run_live(app=app, agent=agent, scenario=scenario, model="loop").run)
    live_pins.scenario_pin_run(scenario=scenario, run=runs[0].pk, actor=app.owner)
    version = versions.version_create(app=app, user=app.owner, name="Pinned")
    services.agent_update(agent=agent, instructions="Changed after the version.")
    versions.version_restore(version=version, user=app.owner)
    scenario.refresh_from_db()
    assert scenario.pinned_run_id == runs[0].pk


def test_a_replay_reads_the_clock_its_live_run_read(server, models_env, user):
    """A scenario without a clock: the live run records the moment it ran with, and its
    replay gives the code that moment (no drift although the real clock moved on)."""
    from agents.services.live_replays import replay_live

    models_env()
    code = (
        "import datetime\n"
        "import uuid\n\n\n"
        "def Stamp(topic: str = 'any') -> dict:\n"
        "    now = datetime.datetime.now().isoformat()\n"
        "    context.state['stamp'] = now\n"
        "    return {'at': now, 'id': str(uuid.uuid4())}\n"
    )
    app = services.app_create(owner=user, name="Clock")
    services.variable_create(app=app, name="stamp", type="text")
    tool = services.tool_create(app=app, name="Stamp", kind="python", python_code=code)
    root = services.agent_update(agent=app.agents.get(is_root=True), tools=[tool])
    scenario = services.scenario_save(
        agent=root, name="Stamp", steps_script="user: Hi\nexpect call: Stamp\n"
    )
    assert scenario.now == ""
    server.script(openai_call("Stamp", {"topic": "x"}), openai_text("Done."))
    live = run_live(app=app, agent=root, scenario=scenario, model="loop")
    assert live.run.now and live.result.final_state["stamp"] == live.run.now[:19]
    LiveRun.objects.filter(pk=live.run.pk).update(now="2020-01-02T03:04:05+00:00")
    live.run.refresh_from_db()
    replay = replay_live(run=live.run)
    # The recorded moment is what the replay's code read (here one set in the past).
    assert replay.result.final_state["stamp"] == "2020-01-02T03:04:05"
    assert replay.run.now == "2020-01-02T03:04:05+00:00"
