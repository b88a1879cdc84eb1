"""Bounds of one model answer (an attacker's endpoint): an endless slow stream held a job
worker past every cap and past Cancel; a key the endpoint echoed in an answer was stored
and shown; a 10 MB answer made a 42 MB job result.

The model is the loopback server (tests/llm_server.py): `openai_drip`/`gemini_drip` send
a chunk every 50 ms and never end; each test ends it with a small cap, and the server
records that the client closed the stream (`hung_up`). Nothing here sleeps."""

from __future__ import annotations

import json

import pytest

from agents import services
from agents.models import Job, LiveRun
from tests.llm_server import (
    KEY,
    configure_models,
    gemini_drip,
    openai_call,
    openai_drip,
    openai_stream_call,
    openai_stream_text,
    openai_text,
)
from tests.test_live_fixes import TWO_TURNS, _in_worker
from tests.test_live_runs import bank_app  # noqa: F401

pytestmark = pytest.mark.django_db


def _configure(monkeypatch, server, **entry):
    configure_models(monkeypatch, {"loop": {"server": server, "model": "gpt-4o-mini", **entry}})


def _run(bank_app, **options):  # noqa: F811
    from agents.services.live_runs import run_live

    app, agent, scenario = bank_app
    return run_live(app=app, agent=agent, scenario=scenario, model="loop", **options)


# ---------------------------------------------------------------- 1. an endless stream


def test_an_endless_openai_stream_ends_at_the_runs_time_cap(
    monkeypatch,
    settings,
    server,
    bank_app,  # noqa: F811
):
    """The old code read for ever (each read within the endpoint's 60 s timeout)."""
    settings.LIVE_MAX_SECONDS = 0.5
    _configure(monkeypatch, server)
    server.script(openai_drip())
    outcome = _run(bank_app, stream=True)
    assert outcome.calls[0]["answer"]["error"] == "timeout"
    assert "the run reached its time cap of 0.5 s" in outcome.calls[0]["answer"]["message"]
    assert server.hung_up.wait(10), "the client did not close the stream"
    assert len(server.seen) == 1
    assert outcome.run.error == "timeout"


def test_an_endless_gemini_stream_ends_at_the_calls_own_timeout_as_a_total(
    monkeypatch,
    server,
    bank_app,  # noqa: F811
):
    """Gemini's read timeout was per read too: 0.5 s between chunks of 50 ms never passed."""
    _configure(monkeypatch, server, kind="gemini", model="gemini-2.5-flash", timeout=0.5)
    server.script(gemini_drip())
    outcome = _run(bank_app, stream=True)
    answer = outcome.calls[0]["answer"]
    assert answer["error"] == "timeout"
    assert "did not answer within 0.5 s" in answer["message"]
    assert server.hung_up.wait(10)
    assert server.dripped >= 2


def test_a_non_streamed_answer_respects_a_total_deadline(
    monkeypatch,
    server,
    bank_app,  # noqa: F811
):
    """A body dripped slowly to a non-streamed call: the old client waited for ever."""
    _configure(monkeypatch, server, timeout=0.5)
    server.script(openai_drip())
    outcome = _run(bank_app)
    assert outcome.calls[0]["answer"]["error"] == "timeout"
    assert server.hung_up.wait(10)


@pytest.mark.django_db(transaction=True)
def test_cancel_while_an_endless_stream_is_read_ends_the_job(
    monkeypatch,
    signed_in,
    bank_app,  # noqa: F811
):
    """Run live through the API and a real worker; Cancel while the model drips: the job
    ends cancelled (the old job ran on past JOBS_MAX_SECONDS, its `current` growing)."""
    from tests.llm_server import ModelServer

    app, agent, scenario = bank_app
    scenario = services.scenario_save(agent=agent, scenario=scenario, steps_script=TWO_TURNS)
    server = ModelServer()
    try:
        _configure(monkeypatch, server)
        server.script(openai_drip())
        url = f"/api/apps/{app.pk}/agents/{agent.pk}/scenarios/{scenario.pk}/simulate"
        response = signed_in.post(url, {"model": "loop"}, content_type="application/json")
        assert response.status_code == 202
        job_id = response.json()["id"]
        worker = _in_worker(job_id)
        assert server.dripping.wait(30), "the model did not stream"
        assert signed_in.post(f"/api/jobs/{job_id}/cancel").status_code == 200
        worker.join(30)
        assert not worker.is_alive(), "the job ran on after Cancel"
        assert server.hung_up.wait(10)
    finally:
        server.close()
    assert len(server.seen) == 1
    job = Job.objects.get(pk=job_id)
    assert job.status == "cancelled"
    result = signed_in.get(f"/api/jobs/{job_id}/").json()["result"]
    assert result["error"] == "cancelled"
    assert result["calls"][0]["answer"]["error"] == "cancelled"
    assert LiveRun.objects.get(pk=result["live_run"]).error == "cancelled"


# ---------------------------------------------------------------- 3. the answer's size


def test_an_endless_stream_ends_at_the_answer_size_cap(
    monkeypatch,
    settings,
    server,
    bank_app,  # noqa: F811
):
    settings.LIVE_MAX_ANSWER_BYTES = 100
    _configure(monkeypatch, server)
    server.script(openai_drip("0123456789", every=0.001))
    outcome = _run(bank_app, stream=True)
    answer = outcome.calls[0]["answer"]
    assert answer["error"] == "too_large"
    assert "passed the cap of 100 bytes (LIVE_MAX_ANSWER_BYTES)" in answer["message"]
    assert server.hung_up.wait(10)
    assert outcome.run.error == "too_large"
    assert answer["tokens_out"] >= 25  # what it streamed counts (a quarter of its bytes)


def test_a_large_text_or_arguments_answer_is_too_large(
    monkeypatch,
    settings,
    server,
    bank_app,  # noqa: F811
):
    """Non-streamed: 5 KB of text, then 5 KB of arguments, past a cap of 1 KB."""
    settings.LIVE_MAX_ANSWER_BYTES = 1000
    _configure(monkeypatch, server)
    server.script(openai_text("x" * 5000))
    first = _run(bank_app)
    assert first.calls[0]["answer"]["error"] == "too_large"
    assert "x" * 1000 not in json.dumps(first.run.calls)
    server.script(openai_call("LookupBalance", {"note": "y" * 5000}))
    second = _run(bank_app)
    assert second.calls[0]["answer"]["error"] == "too_large"
    assert "y" * 1000 not in json.dumps(second.run.calls)


def test_the_token_cap_counts_an_estimate_when_the_reported_usage_is_smaller(
    monkeypatch,
    settings,
    server,
    bank_app,  # noqa: F811
):
    """The server reports 5 tokens out for 40 KB of text: a quarter of its bytes (10,000)
    counts, past LIVE_MAX_TOKENS, so the second turn's call is not made."""
    settings.LIVE_MAX_TOKENS = 5000
    _, agent, scenario = bank_app
    services.scenario_save(agent=agent, scenario=scenario, steps_script=TWO_TURNS)
    _configure(monkeypatch, server)
    server.repeat_last = True
    server.script(openai_text("z " * 20000, tokens=(11, 5)))
    outcome = _run(bank_app)
    assert len(server.seen) == 1  # the old code asked again (16 tokens counted)
    assert outcome.error == "cap"


# ---------------------------------------------------------------- 2. an echoed key


def test_a_key_echoed_in_an_answer_is_masked_everywhere(
    monkeypatch,
    server,
    bank_app,  # noqa: F811
):
    """Text (streamed in pieces that split the key) and arguments: the run's record, the
    streamed text and a golden saved from the run carry no key."""
    _configure(monkeypatch, server)
    server.script(
        openai_stream_call("LookupBalance", json.dumps({"account_id": f"{KEY} Bearer {KEY}"})),
        openai_stream_text(
            "Your key is Bearer sk-", KEY[3:9], KEY[9:], " and x-goog-api-key: AIzaEcho1234 ok"
        ),
    )
    pieces: list[str] = []
    outcome = _run(bank_app, stream=True, on_text=pieces.append)
    shown = "".join(pieces)
    assert shown == "Your key is Bearer *** and x-goog-api-key: *** ok"
    stored = json.dumps(LiveRun.objects.filter(pk=outcome.run.pk).values().first(), default=str)
    assert KEY not in stored and "AIzaEcho1234" not in stored
    assert "Bearer ***" in stored
    call = next(e for e in outcome.result.events if e.kind == "tool_call")
    assert call.value == {"account_id": "*** Bearer ***"}
    from agents.services.live_goldens import live_run_save_golden

    golden = live_run_save_golden(run=outcome.run, actor=outcome.run.ran_by, name="echo")
    assert KEY not in json.dumps(golden.to_spec(app_id="a").steps, default=str)
