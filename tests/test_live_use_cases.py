"""Each live use case exists once (``live_jobs.live_run_submit``, ``evaluation.run_all_submit``,
``live_jobs.live_job_outcome``) and the job owns its runner: probes of the defects the copies
in the adapters caused (issue 29, items 1 and 2), each failing on the code before.

The model is a real HTTP server on loopback (tests/llm_server.py); jobs run as a worker runs
them (``jobs.job_run``); tools run their real code in the sandbox.
"""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from agents import selectors, services
from agents.models import Job, LiveRun
from agents.services import jobs, live_jobs
from agents.services.live_runs import run_live
from agents.services.sandbox_door import OwnRunnerRefused
from tests.llm_server import (
    configure_models,
    openai_call,
    openai_stream_call,
    openai_stream_text,
    openai_text,
)
from tests.test_live_runs import bank_app  # noqa: F401

pytestmark = pytest.mark.django_db
HX = {"HX-Request": "true"}
TWO_CALLS = "user: Twice, please.\nexpect call: LookupBalance\n"


@pytest.fixture
def loop(monkeypatch, server):
    configure_models(monkeypatch, {"loop": {"server": server}})
    return server


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


# ---------------------------------------------------------------- no GET runs anything


@pytest.mark.parametrize("role", ["viewer", "owner"])
def test_a_get_with_live_asks_no_model(loop, bank_app, other_user, user, role):  # noqa: F811
    """A GET of the conversation with ``live=1&model=`` (a link, a prefetch, a crawler)
    draws the scripted simulation: no request reaches the model, no job is queued."""
    app, agent, scenario = bank_app
    if role == "viewer":
        services.app_share(app=app, user=other_user, role="viewer", actor=user)
    reader = _client(other_user if role == "viewer" else user)
    loop.script(openai_call("LookupBalance", {}), openai_text("1,250 EUR."))
    url = reverse("agent-simulate", args=[app.pk, agent.pk])
    page = reader.get(url, {"scenario": scenario.pk, "live": "1", "model": "loop"}, headers=HX)
    assert page.status_code == 200 and 'id="conversation-panel"' in page.content.decode()
    assert loop.seen == [] and not Job.objects.exists() and not LiveRun.objects.exists()


def test_a_get_with_a_replay_runs_nothing(loop, bank_app, user):  # noqa: F811
    app, agent, scenario = bank_app
    loop.script(openai_call("LookupBalance", {}), openai_text("1,250 EUR."))
    recorded = run_live(app=app, agent=agent, scenario=scenario, model="loop").run
    url = reverse("agent-simulate", args=[app.pk, agent.pk])
    _client(user).get(url, {"scenario": scenario.pk, "replay": recorded.pk}, headers=HX)
    assert LiveRun.objects.count() == 1 and not Job.objects.exists()  # no replay was run


def test_a_finished_live_job_is_drawn_from_what_it_stored(
    loop,
    bank_app,  # noqa: F811
    user,
    run_jobs,
):
    """The panel of a finished live run reads the timeline the job stored: the tool's code
    changed since (or the sandbox refusing everything) shows nothing new, since nothing runs."""
    app, agent, scenario = bank_app
    client = _client(user)
    # The designer's runs stream.
    loop.script(
        openai_stream_call("LookupBalance", "{}"), openai_stream_text("Your balance is 1,250 EUR.")
    )
    url = reverse("agent-simulate", args=[app.pk, agent.pk])
    client.post(url, {"scenario": scenario.pk, "model": "loop", "live": "1"}, headers=HX)
    assert run_jobs() == 1
    job = Job.objects.get(kind="live_run")
    services.tool_update(
        tool=app.tools.get(),
        python_code="def LookupBalance(account_id=''):\n    raise ValueError('changed since')\n",
    )
    page = client.get(reverse("live-job", args=[app.pk, agent.pk, job.pk]), headers=HX)
    html = page.content.decode()
    assert "Your balance is 1,250 EUR." in html and "1250" in html
    assert "changed since" not in html


def test_the_live_fragment_asks_often_until_the_models_first_text_shows(
    loop,
    bank_app,  # noqa: F811
    user,
):
    """The first streamed token is what the designer waits to see: the fragment asks for
    itself every 100 ms until the job holds text (or a call), then every 500 ms."""
    app, agent, scenario = bank_app
    client = _client(user)
    url = reverse("agent-simulate", args=[app.pk, agent.pk])
    queued = client.post(url, {"scenario": scenario.pk, "model": "loop", "live": "1"}, headers=HX)
    assert 'hx-trigger="load delay:100ms"' in queued.content.decode()
    job = Job.objects.get(kind="live_run")
    Job.objects.filter(pk=job.pk).update(status="running", current="Your bal")
    page = client.get(reverse("live-job", args=[app.pk, agent.pk, job.pk]), headers=HX)
    html = page.content.decode()
    assert "Your bal" in html and 'hx-trigger="load delay:500ms"' in html


# ---------------------------------------------------------------- refusals first


def test_a_run_all_refused_with_400_cancels_nothing(loop, bank_app, user):  # noqa: F811
    app = bank_app[0]
    client = _client(user)
    client.post(reverse("app-run-all", args=[app.pk]), headers=HX)
    earlier = Job.objects.get(kind="evaluate_app")
    refused = client.post(reverse("app-run-all", args=[app.pk]), {"model": "gpt-9"}, headers=HX)
    assert refused.status_code == 400 and "No model named 'gpt-9'" in refused.content.decode()
    earlier.refresh_from_db()
    assert earlier.status == "queued" and Job.objects.filter(parent=None).count() == 1


def test_a_viewers_live_run_all_is_403_and_cancels_nothing(
    loop,
    bank_app,  # noqa: F811
    user,
    other_user,
):
    app = bank_app[0]
    services.app_share(app=app, user=other_user, role="viewer", actor=user)
    viewer = _client(other_user)
    viewer.post(reverse("app-run-all", args=[app.pk]), headers=HX)  # offline: a viewer may
    refused = viewer.post(reverse("app-run-all", args=[app.pk]), {"model": "loop"}, headers=HX)
    assert refused.status_code == 403
    assert Job.objects.get(kind="evaluate_app").status == "queued"


@pytest.mark.parametrize("wanted", ["999999", "", "not-a-number"])
def test_an_unknown_scenario_is_refused_never_the_first(
    loop,
    bank_app,  # noqa: F811
    user,
    wanted,
):
    app, agent, _scenario = bank_app
    url = reverse("agent-simulate", args=[app.pk, agent.pk])
    data = {"model": "loop", "live": "1", **({"scenario": wanted} if wanted else {})}
    page = _client(user).post(url, data, headers=HX)
    assert page.status_code == 200
    assert ("has no scenario" if wanted else "Pick the scenario to run.") in page.content.decode()
    assert not Job.objects.exists() and loop.seen == []
    with pytest.raises(services.ServiceError) as refused:
        live_jobs.live_run_submit(
            app=app, agent=agent, actor=user, scenario_id=wanted or None, model="loop"
        )
    assert refused.value.field_errors().keys() == {"scenario"}


def test_the_designer_and_the_api_normalise_instructions_alike(
    loop,
    bank_app,  # noqa: F811
    user,
):
    """The saved instructions sent back (a browser sends CRLF line ends) are no try-out:
    the run is recorded, through the designer and through the API."""
    app, agent, scenario = bank_app
    typed = agent.instructions.replace("\n", "\r\n")
    client = _client(user)
    client.post(
        reverse("agent-simulate", args=[app.pk, agent.pk]),
        {"scenario": scenario.pk, "model": "loop", "live": "1", "instructions": typed},
        headers=HX,
    )
    api = APIClient()
    api.force_login(user)
    api.post(
        f"/api/apps/{app.pk}/agents/{agent.pk}/scenarios/{scenario.pk}/simulate",
        {"model": "loop", "instructions": typed},
        format="json",
    )
    submitted = list(Job.objects.filter(kind="live_run").order_by("created_at"))
    assert len(submitted) == 2
    assert [job.params["instructions"] for job in submitted] == [None, None]


def test_a_viewer_may_not_replay(loop, bank_app, user, other_user):  # noqa: F811
    app, agent, scenario = bank_app
    loop.script(openai_call("LookupBalance", {}), openai_text("1,250 EUR."))
    recorded = run_live(app=app, agent=agent, scenario=scenario, model="loop").run
    services.app_share(app=app, user=other_user, role="viewer", actor=user)
    api = APIClient()
    api.force_login(other_user)
    refused = api.post(f"/api/apps/{app.pk}/live-runs/{recorded.pk}/replay")
    assert refused.status_code == 403 and not Job.objects.exists()


# ---------------------------------------------------------------- the job owns its runner


def test_a_replay_job_honours_the_jobs_code_call_cap(
    loop,
    bank_app,  # noqa: F811
    user,
    settings,
):
    """A replay runs the tools again: on the job's runner, within its caps."""
    app, agent, scenario = bank_app
    services.scenario_save(agent=agent, scenario=scenario, steps_script=TWO_CALLS)
    loop.script(
        openai_call("LookupBalance", {"account_id": "a"}),
        openai_call("LookupBalance", {"account_id": "b"}),
        openai_text("Twice 1,250 EUR."),
    )
    recorded = run_live(app=app, agent=agent, scenario=scenario, model="loop").run
    settings.JOBS_MAX_CODE_CALLS = 1
    job = live_jobs.live_run_submit(app=app, agent=agent, actor=user, replay=recorded)
    job = jobs.job_run(str(job.pk))
    assert job.status == "failed"
    assert "The job reached its cap of 1 code calls (JOBS_MAX_CODE_CALLS)" in job.error
    # The panel of the finished job says where the replay stopped, as it stored it.
    stopped = live_jobs.live_job_outcome(job)
    notes = [d.message for d in stopped.result.diagnostics if d.code == "SC472"]
    assert notes and "the job reached its cap of 1 code calls" in notes[0]


def test_the_job_caps_on_model_calls_and_tokens_stop_a_live_run_all(
    loop,
    bank_app,  # noqa: F811
    user,
    settings,
):
    app = bank_app[0]
    settings.JOBS_MAX_MODEL_CALLS = 1
    settings.JOBS_MAX_TOKENS = 1
    loop.repeat_last = True
    loop.script(openai_call("LookupBalance", {}))  # a model that never stops calling
    job = services.evaluation.run_all_submit(app=app, actor=user, model="loop")
    job = jobs.job_run(str(job.pk))
    assert len(loop.seen) == 1  # the second call was refused before it was sent
    assert job.status == "failed"
    assert "The job reached its cap of 1 model calls (JOBS_MAX_MODEL_CALLS)" in job.error
    (row,) = job.result["scenarios"]
    assert row["live"]["error"] == "cap"
    # Stored as its template: each reader of the job reads the cap in their language.
    api = APIClient()
    api.force_login(user)
    read = {
        language: api.get(f"/api/jobs/{job.pk}/", headers={"accept-language": language}).json()
        for language in ("fr", "de")
    }
    assert "La tâche a atteint sa limite de 1 appels du modèle" in read["fr"]["error"]
    assert "Der Job hat seine Obergrenze von 1 Modellaufrufen erreicht" in read["de"]["error"]


def test_a_job_kind_cannot_open_a_runner_of_its_own(user, bank):
    """While a job lends its runner, nothing in the kind opens another (which would escape
    the job's caps and its Cancel)."""
    from agents.services.sandbox_door import batch_runner, simulate_bounded

    job = jobs.job_submit(kind="evaluate_app", owner=user, app=bank, enqueue=False)
    with jobs.JobContext(job, "test-worker").lending() as ctx:
        assert ctx.runner is not None
        with pytest.raises(OwnRunnerRefused), batch_runner():
            pass
        with pytest.raises(OwnRunnerRefused):
            simulate_bounded(selectors.app_spec(bank), selectors.app_scenario_specs(bank)[0])
    with batch_runner() as own:  # outside a job: as before
        assert own.caps is None
