"""Defects of live runs a black-box tester found (issue 21): a Cancel that did not stop a
live run, viewers starting paid runs, a run that asked a refused key again, Re-record
without a model, Run all's live summary, the job's result, "Last live run" telling a model
error from failed expectations.

The model is the loopback server (tests/llm_server.py); jobs run through ``jobs.job_run``,
the worker's own entry point."""

from __future__ import annotations

import json
import threading

import pytest
from django.db import connections
from django.test import Client

from agents import services
from agents.models import Job, LiveRun, ShareRole
from agents.services.jobs import job_run
from agents.services.live_runs import run_live
from tests.llm_server import (
    ModelServer,
    configure_models,
    openai_call,
    openai_error,
    openai_stream_call,
    openai_stream_text,
    openai_text,
)
from tests.test_live_runs import GOLDEN, bank_app  # noqa: F401

pytestmark = pytest.mark.django_db
HX = {"HX-Request": "true"}

TWO_TURNS = """user: Hi! What is the balance of my current account?
expect call: LookupBalance
user: And again, please.
expect call: LookupBalance
"""


class HeldServer(ModelServer):
    """The loopback model server holding its `hold`-th request (1-based) until the test
    lets it answer (`go`): the test acts while that model call is in flight."""

    hold = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        self.arrived = threading.Event()
        self.go = threading.Event()

    def next_reply(self):
        reply = super().next_reply()
        if len(self.seen) == self.hold:
            self.arrived.set()
            self.go.wait(30)
        return reply


def _configure(monkeypatch, server, name="loop"):
    configure_models(monkeypatch, {name: {"server": server, "model": "gpt-4o-mini"}})


@pytest.fixture
def configured(monkeypatch, server):
    _configure(monkeypatch, server)
    return server


@pytest.fixture
def viewer_client(bank_app, django_user_model):  # noqa: F811
    viewer = django_user_model.objects.create_user("vera", password="pw-vera-123456")
    services.app_share(app=bank_app[0], user=viewer, role=ShareRole.VIEWER)
    client = Client()
    client.force_login(viewer)
    return client


def _in_worker(job_id: str) -> threading.Thread:
    def work() -> None:
        try:
            job_run(job_id)
        finally:
            connections.close_all()

    thread = threading.Thread(target=work)
    thread.start()
    return thread


# ---------------------------------------------------------------- 1. Cancel stops a live run


@pytest.mark.django_db(transaction=True)
def test_cancel_during_a_model_call_ends_the_run_there_recorded_as_cancelled(
    monkeypatch,
    signed_in,
    bank_app,  # noqa: F811
):
    """A model that would call tools for ever; Cancel while its first call is in flight:
    no tool code runs after it, no further model call is made (the old code went on to the
    per-turn cap: 10 calls, each with one more unanswered tool call), and the LiveRun, the
    job's result and the designer say cancelled."""
    app, agent, scenario = bank_app
    scenario = services.scenario_save(agent=agent, scenario=scenario, steps_script=TWO_TURNS)
    held = HeldServer(repeat_last=True)
    try:
        _configure(monkeypatch, held)
        held.script(openai_stream_call("LookupBalance", "{}"))
        url = f"/api/apps/{app.pk}/agents/{agent.pk}/scenarios/{scenario.pk}/simulate"
        response = signed_in.post(url, {"model": "loop"}, content_type="application/json")
        assert response.status_code == 202
        job_id = response.json()["id"]
        worker = _in_worker(job_id)
        assert held.arrived.wait(30), "the model was not called"
        cancel = signed_in.post(f"/api/jobs/{job_id}/cancel")
        assert cancel.status_code == 200
        held.go.set()  # the call in flight answers: a function call
        worker.join(60)
        assert not worker.is_alive()
    finally:
        held.close()
    assert len(held.seen) == 1  # no model call after the cancel
    job = signed_in.get(f"/api/jobs/{job_id}/").json()
    assert job["status"] == "cancelled"
    result = job["result"]
    assert result["error"] == "cancelled" and len(result["calls"]) == 1
    run = LiveRun.objects.get(pk=result["live_run"])
    assert run.error == "cancelled" and run.model_calls == 1
    # The tool's code did not run after the cancel (its balance never reached the state).
    assert run.final_state.get("current_account_balance") in (None, 0)
    # The designer's panel for the finished job: cancelled, never "passed".
    panel = signed_in.get(f"/apps/{app.pk}/agents/{agent.pk}/live-jobs/{job_id}", headers=HX)
    text = panel.content.decode()
    assert panel.status_code == 200
    assert "Last live run: loop, cancelled" in text, text
    assert "The live run stopped: Cancelled." in text
    assert len(held.seen) == 1  # showing the run called no model


def test_a_cancel_hook_is_asked_before_every_model_call(configured, bank_app):  # noqa: F811
    """`run_live(should_stop=…)`: asked before each call; a reason ends the run there."""
    app, agent, scenario = bank_app
    scenario = services.scenario_save(agent=agent, scenario=scenario, steps_script=TWO_TURNS)
    configured.repeat_last = True
    configured.script(openai_call("LookupBalance", {}))
    asked: list[int] = []

    def stop() -> str:
        asked.append(len(configured.seen))
        return "the job was cancelled" if len(configured.seen) >= 2 else ""

    outcome = run_live(app=app, agent=agent, scenario=scenario, model="loop", should_stop=stop)
    assert len(configured.seen) == 2  # the old code went on to the per-turn cap (10)
    assert outcome.error == "cancelled" and outcome.run.error == "cancelled"
    assert len(outcome.result.turns) == 1  # the second turn was not run
    assert any("the later turns were not run" in d.message for d in outcome.result.diagnostics)


# ---------------------------------------------------------------- 2. viewers: no live runs


def test_a_viewer_may_not_start_a_live_run_through_the_api(
    configured,
    viewer_client,
    bank_app,  # noqa: F811
):
    app, agent, scenario = bank_app
    base = f"/api/apps/{app.pk}"
    simulate = f"{base}/agents/{agent.pk}/scenarios/{scenario.pk}/simulate"
    for url, body in (
        (simulate, {"model": "loop"}),
        (f"{base}/evaluate", {"model": "loop"}),
        (f"{base}/evaluate", {"model": "loop", "judge": "loop"}),
        (f"{base}/agents/{agent.pk}/scenarios/{scenario.pk}/evaluate", {"model": "loop"}),
    ):
        response = viewer_client.post(url, body, content_type="application/json")
        assert response.status_code == 403, (url, response.content)
        assert "needs edit rights" in response.json()["detail"]
    assert not Job.objects.exists() and configured.seen == []
    # Scripted runs stay a viewer's.
    assert viewer_client.post(simulate, {}, content_type="application/json").status_code == 200
    scripted = viewer_client.post(f"{base}/evaluate", {}, content_type="application/json")
    assert scripted.status_code == 202


def test_a_viewer_may_not_replay_or_run_live_in_the_designer(
    configured,
    signed_in,
    viewer_client,
    bank_app,  # noqa: F811
):
    app, agent, scenario = bank_app
    configured.script(openai_call("LookupBalance", {}), openai_text("It is 1,250 EUR."))
    recorded = run_live(app=app, agent=agent, scenario=scenario, model="loop").run
    seen = len(configured.seen)
    replay = viewer_client.post(f"/api/apps/{app.pk}/live-runs/{recorded.pk}/replay")
    assert replay.status_code == 403
    simulate = f"/apps/{app.pk}/agents/{agent.pk}/simulate"
    for body in (
        {"scenario": scenario.pk, "live": "1", "model": "loop"},
        {"scenario": scenario.pk, "replay": recorded.pk},
        {"scenario": scenario.pk, "rerecord": "loop"},
    ):
        response = viewer_client.post(simulate, body, headers=HX)
        assert response.status_code == 403, body
        assert "needs edit rights" in response.content.decode()
    run_all = viewer_client.post(f"/apps/{app.pk}/run-all", {"model": "loop"}, headers=HX)
    assert run_all.status_code == 403
    assert not Job.objects.exists() and len(configured.seen) == seen
    # The viewer's panel offers no Replay; the scripted simulation is still theirs.
    panel = viewer_client.get(simulate, {"scenario": scenario.pk}, headers=HX)
    assert panel.status_code == 200 and 'id="replay-live"' not in panel.content.decode()
    owner_panel = signed_in.get(simulate, {"scenario": scenario.pk}, headers=HX)
    assert 'id="replay-live"' in owner_panel.content.decode()


# ---------------------------------------------------------------- 3. errors that end the run


@pytest.mark.parametrize(
    "reply, error",
    [
        (openai_error(401, "Incorrect API key provided"), "auth"),
        (openai_error(429, "quota exceeded"), "quota"),
    ],
)
def test_an_auth_or_quota_error_ends_the_whole_run(
    configured,
    bank_app,  # noqa: F811
    reply,
    error,
):
    app, agent, scenario = bank_app
    scenario = services.scenario_save(agent=agent, scenario=scenario, steps_script=TWO_TURNS)
    configured.repeat_last = True
    configured.script(reply)
    outcome = run_live(
        app=app, agent=agent, scenario=scenario, model="loop", sleeper=lambda s: None
    )
    calls = 1 if error == "auth" else 4  # a 429: the call and its 3 retries
    assert len(configured.seen) == calls  # the old code asked again in turn 1
    assert outcome.error == error
    assert len(outcome.result.turns) == 1
    stopped = [d for d in outcome.result.diagnostics if "the later turns" in d.message]
    assert len(stopped) == 1 and f"({error})" in stopped[0].message
    later = [r for r in outcome.evaluation.results if r.turn == 1]
    assert later and all("not run" in r.message for r in later)


def test_a_malformed_call_still_ends_only_its_turn(configured, bank_app):  # noqa: F811
    """Not every error ends the run: malformed arguments in turn 0, then turn 1 is asked."""
    app, agent, scenario = bank_app
    scenario = services.scenario_save(agent=agent, scenario=scenario, steps_script=TWO_TURNS)
    configured.script(
        openai_call("LookupBalance", "{not json"),
        openai_call("LookupBalance", {}),
        openai_text("It is 1,250 EUR."),
    )
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="loop")
    assert len(configured.seen) == 3 and len(outcome.result.turns) == 2


# ---------------------------------------------------------------- 4. Re-record live


def test_re_record_uses_the_recordings_model_whatever_the_picker_says(
    configured,
    signed_in,
    bank_app,  # noqa: F811
    run_jobs,
):
    app, agent, scenario = bank_app
    configured.script(openai_call("LookupBalance", {}), openai_text("It is 1,250 EUR."))
    recorded = run_live(app=app, agent=agent, scenario=scenario, model="loop").run
    simulate = f"/apps/{app.pk}/agents/{agent.pk}/simulate"
    # A replay after an instruction change: drift, and the Re-record button names the model.
    replayed = signed_in.post(
        simulate,
        {"scenario": scenario.pk, "replay": recorded.pk, "instructions": "Say hello."},
        headers=HX,
    )
    assert run_jobs() == 1
    job = Job.objects.get(parent=None)
    panel = signed_in.get(f"/apps/{app.pk}/agents/{agent.pk}/live-jobs/{job.pk}", headers=HX)
    text = panel.content.decode()
    assert replayed.status_code == 200 and 'id="rerecord-live"' in text, text
    assert "{&quot;rerecord&quot;: &quot;loop&quot;}" in text or '"rerecord": "loop"' in text
    # Re-record with the picker on Scripted (model ""): a live job with the recording's model.
    configured.script(
        openai_stream_call("LookupBalance", "{}"), openai_stream_text("It is ", "1,250 EUR.")
    )
    seen = len(configured.seen)
    response = signed_in.post(
        simulate, {"scenario": scenario.pk, "rerecord": "loop", "model": ""}, headers=HX
    )
    assert response.status_code == 200
    rerecord = Job.objects.exclude(pk=job.pk).get()
    assert rerecord.kind == "live_run" and rerecord.params["model"] == "loop"
    assert run_jobs() == 1
    assert len(configured.seen) == seen + 2
    assert LiveRun.objects.filter(mode="live").count() == 2


def test_re_record_with_a_model_no_longer_configured_says_so(
    configured,
    signed_in,
    bank_app,  # noqa: F811
):
    app, agent, scenario = bank_app
    simulate = f"/apps/{app.pk}/agents/{agent.pk}/simulate"
    response = signed_in.post(simulate, {"scenario": scenario.pk, "rerecord": "gone"}, headers=HX)
    text = response.content.decode()
    assert response.status_code == 200
    assert "The recording&#x27;s model gone is no longer configured" in text, text
    assert not Job.objects.exists() and configured.seen == []


# ---------------------------------------------------------------- 5. Run all's live summary


def test_a_live_run_all_summary_shows_the_badge_tokens_and_cost(
    configured,
    signed_in,
    bank_app,  # noqa: F811
    run_jobs,
):
    app = bank_app[0]
    configured.script(openai_call("LookupBalance", {}), openai_text("It is 1,250 EUR."))
    response = signed_in.post(f"/apps/{app.pk}/run-all", {"model": "loop"}, headers=HX)
    assert response.status_code == 200
    assert run_jobs() == 1
    job = Job.objects.get(parent=None)
    done = signed_in.get(f"/apps/{app.pk}/run-all/{job.pk}", headers=HX).content.decode()
    assert 'id="run-all-live"' in done and "live · loop" in done, done
    # 20+11 in, 7+5 out (the loopback server's usage); gpt-4o-mini's price.
    assert "2 model calls · 31 in + 12 out tokens" in done
    cost = (31 * 0.15 + 12 * 0.60) / 1e6
    assert f"${cost:.6f}" in done


# ---------------------------------------------------------------- 6. the job's result


def test_the_live_simulate_job_result_carries_the_expectation_results(
    configured,
    signed_in,
    bank_app,  # noqa: F811
    run_jobs,
):
    app, agent, scenario = bank_app
    configured.script(
        openai_stream_call("LookupBalance", "{}"), openai_stream_text("It is ", "1,250 EUR.")
    )
    url = f"/api/apps/{app.pk}/agents/{agent.pk}/scenarios/{scenario.pk}/simulate"
    response = signed_in.post(url, {"model": "loop"}, content_type="application/json")
    assert response.status_code == 202
    assert run_jobs() == 1
    result = signed_in.get(response["Location"]).json()["result"]
    assert set(result) >= {"live_run", "mode", "model", "calls", "drift", "error", "results"}
    assert [(r["kind"], r["status"]) for r in result["results"]] == [
        ("call", "passed"),
        ("state", "passed"),
    ] or sorted(r["kind"] for r in result["results"]) == ["call", "state"]
    assert all(r["status"] == "passed" for r in result["results"])
    assert "i18n" not in json.dumps(result)


# ---------------------------------------------------------------- 7. Last live run


def test_last_live_run_tells_a_model_error_from_failed_expectations(
    configured,
    signed_in,
    bank_app,  # noqa: F811
):
    app, agent, scenario = bank_app
    simulate = f"/apps/{app.pk}/agents/{agent.pk}/simulate"
    configured.script(openai_text("I cannot look that up."))
    run_live(app=app, agent=agent, scenario=scenario, model="loop")
    text = signed_in.get(simulate, {"scenario": scenario.pk}, headers=HX).content.decode()
    assert "Last live run: loop, failed: 2 expectations" in text, text
    configured.script(openai_error(401, "Incorrect API key provided"))
    run_live(app=app, agent=agent, scenario=scenario, model="loop")
    text = signed_in.get(simulate, {"scenario": scenario.pk}, headers=HX).content.decode()
    assert "Last live run: loop, error: auth" in text, text
