"""Live runs through the API and the designer, and the secrets test: a model key never
appears in a page, an export, a version, an audit row, a log line or an API answer."""

from __future__ import annotations

import io
import json
import logging
import zipfile

import pytest
from django.core.management import call_command
from django.urls import reverse

from agents import keyring, services
from agents.models import AuditEvent, Job, LiveRun, ModelEndpoint
from agents.services import versions
from agents.services.live_models import endpoint_save
from tests.llm_server import (
    KEY,
    configure_models,
    openai_call,
    openai_stream_call,
    openai_stream_text,
    openai_text,
)
from tests.test_live_runs import GOLDEN, INSTRUCTIONS, bank_app  # noqa: F401

pytestmark = pytest.mark.django_db
HX = {"HX-Request": "true"}
ADMIN_KEY = "sk-admin-stored-9d8c7b6a5f"


@pytest.fixture
def configured(monkeypatch, server):
    configure_models(monkeypatch, {"loop": {"server": server, "model": "gpt-4o-mini"}})
    return server


def test_the_api_lists_models_without_keys(signed_in, configured):
    body = signed_in.get("/api/models").json()
    assert body == [
        {
            "name": "loop",
            "kind": "openai",
            "model": "gpt-4o-mini",
            "base_url": f"{configured.url}/v1",
            "label": "loop",
            "source": "env",
            "has_key": True,
            "max_concurrent": 8,
            "requests_per_minute": None,
            "tokens_per_minute": None,
        }
    ]


def test_api_simulate_with_a_model_is_a_job_that_reports_tokens_and_cost(
    signed_in,
    configured,
    bank_app,  # noqa: F811
    run_jobs,
):
    app, agent, scenario = bank_app
    configured.script(
        openai_stream_call("LookupBalance", "{}"), openai_stream_text("It is ", "1,250 EUR.")
    )
    url = f"/api/apps/{app.pk}/agents/{agent.pk}/scenarios/{scenario.pk}/simulate"
    response = signed_in.post(url, {"model": "loop"}, content_type="application/json")
    assert response.status_code == 202 and configured.seen == []
    assert run_jobs() == 1
    job = signed_in.get(response["Location"]).json()
    live = job["result"]
    assert job["status"] == "succeeded" and job["progress"]["done"] == 2
    assert live["model"] == "loop" and live["mode"] == "live" and live["status"] == "passed"
    assert [c["answer"]["tokens_in"] for c in live["calls"]] == [15, 9]
    # gpt-4o-mini's list price: 0.15 / 0.60 USD per million tokens.
    assert live["cost"] == pytest.approx((24 * 0.15 + 10 * 0.60) / 1e6)
    # A replay is a job too (it runs the tools again): 202, then the worker's result.
    queued = signed_in.post(f"/api/apps/{app.pk}/live-runs/{live['live_run']}/replay")
    assert queued.status_code == 202 and run_jobs() == 1
    replay = signed_in.get(queued["Location"]).json()["result"]
    assert replay["mode"] == "replay" and replay["drift"] == [] and replay["status"] == "passed"
    assert len(configured.seen) == 2  # the replay called no model


def test_api_simulate_without_a_model_stays_synchronous(signed_in, bank_app):  # noqa: F811
    app, agent, scenario = bank_app
    url = f"/api/apps/{app.pk}/agents/{agent.pk}/scenarios/{scenario.pk}/simulate"
    response = signed_in.post(url, {}, content_type="application/json")
    assert response.status_code == 200 and "final_state" in response.json()


def test_api_simulate_with_an_unknown_model_is_a_400_and_no_job(
    signed_in,
    configured,
    bank_app,  # noqa: F811
):
    app, agent, scenario = bank_app
    url = f"/api/apps/{app.pk}/agents/{agent.pk}/scenarios/{scenario.pk}/simulate"
    response = signed_in.post(url, {"model": "gpt-9"}, content_type="application/json")
    assert response.status_code == 400 and not Job.objects.exists()


def test_api_evaluate_with_a_model(signed_in, configured, bank_app, run_jobs):  # noqa: F811
    """The evaluate job runs the goldens live: its result holds the live run's figures."""
    app = bank_app[0]
    configured.script(openai_call("LookupBalance", {}), openai_text("It is 1,250 EUR."))
    response = signed_in.post(
        f"/api/apps/{app.pk}/evaluate", {"model": "loop"}, content_type="application/json"
    )
    assert response.status_code == 202
    assert run_jobs() == 1
    body = signed_in.get(response.json()["url"]).json()["result"]
    assert body["ok"] is True and body["summary"]["passed"] == 1
    assert body["scenarios"][0]["live"]["model_calls"] == 2


def test_an_unknown_model_is_a_400_naming_the_field(signed_in, configured, bank_app):  # noqa: F811
    app = bank_app[0]
    response = signed_in.post(
        f"/api/apps/{app.pk}/evaluate", {"model": "gpt-9"}, content_type="application/json"
    )
    assert response.status_code == 400
    assert "No model named 'gpt-9'" in json.dumps(response.json())


def test_a_bad_statecraft_models_fails_the_start_check_naming_the_field(monkeypatch):
    from django.core.management.base import SystemCheckError

    monkeypatch.setenv("STATECRAFT_MODELS", json.dumps({"m": {"kind": "openia", "model": "x"}}))
    with pytest.raises(SystemCheckError) as raised:
        call_command("check")
    assert "STATECRAFT_MODELS.m.kind" in str(raised.value)


def live_job(client, run_jobs, app, agent, data):
    """Run live / Replay in the designer: a job; the fragment polls; a worker runs it; the
    next poll is the conversation panel with the run."""
    url = reverse("agent-simulate", args=[app.pk, agent.pk])
    queued = client.post(url, data, headers=HX)
    assert queued.status_code == 200 and 'id="live-progress"' in queued.content.decode()
    job = Job.objects.filter(kind="live_run").order_by("-created_at").first()
    assert run_jobs() >= 1
    return client.get(reverse("live-job", args=[app.pk, agent.pk, job.pk]), headers=HX)


def test_the_designer_runs_live_as_a_job_and_answers_at_once(
    signed_in,
    configured,
    bank_app,  # noqa: F811
):
    """Run live answers with the polling fragment before any model is called."""
    app, agent, scenario = bank_app
    configured.script(openai_call("LookupBalance", {}), openai_text("It is 1,250 EUR."))
    url = reverse("agent-simulate", args=[app.pk, agent.pk])
    page = signed_in.post(url, {"scenario": scenario.pk, "model": "loop", "live": "1"}, headers=HX)
    html = page.content.decode()
    job = Job.objects.get(kind="live_run")
    assert (
        reverse("live-job", args=[app.pk, agent.pk, job.pk]) in html and 'id="live-cancel"' in html
    )
    assert configured.seen == [] and job.params["model"] == "loop"


def test_the_live_job_streams_text_and_counts_calls_while_it_runs(
    signed_in,
    configured,
    bank_app,  # noqa: F811
    run_jobs,
    monkeypatch,
):
    """A poll while the job runs shows the model's streamed text so far and the calls'
    tokens: the poll is made from inside the worker's progress write after the last model
    call, before the job has finished."""
    from agents.services.jobs import JobContext

    app, agent, scenario = bank_app
    configured.script(
        openai_stream_call("LookupBalance", "{}"), openai_stream_text("It is ", "1,250 EUR.")
    )
    url = reverse("agent-simulate", args=[app.pk, agent.pk])
    signed_in.post(url, {"scenario": scenario.pk, "model": "loop", "live": "1"}, headers=HX)
    job = Job.objects.get(kind="live_run")
    poll = reverse("live-job", args=[app.pk, agent.pk, job.pk])
    seen: list[str] = []
    real_progress = JobContext.progress

    def progress(self, **kwargs):
        real_progress(self, **kwargs)
        if kwargs.get("done") == 2:  # after the second model call: what a poll shows now
            seen.append(signed_in.get(poll, headers=HX).content.decode())

    monkeypatch.setattr(JobContext, "progress", progress)
    run_jobs()
    html = seen[0]
    assert "2 model calls so far" in html and "15+6 tok" in html and "9+4 tok" in html
    # Each call's words on their own line (the user's turn before them).
    assert '<span class="msg">It is 1,250 EUR.</span>' in html
    assert html.index("What is") < html.index("15+6 tok") < html.index("It is 1,250 EUR.")


def test_the_designer_runs_live_shows_cost_and_replays_without_drift(
    signed_in,
    configured,
    bank_app,  # noqa: F811
    run_jobs,
):
    app, agent, scenario = bank_app
    configured.script(
        openai_stream_call("LookupBalance", "{}"), openai_stream_text("It is ", "1,250 EUR.")
    )
    live = {"scenario": scenario.pk, "model": "loop", "live": "1"}
    page = live_job(signed_in, run_jobs, app, agent, live)
    html = page.content.decode()
    assert page.status_code == 200
    assert 'id="live-summary"' in html and "2 model calls" in html
    assert "15+6 tok" in html  # the first call's tokens beside its event
    run = LiveRun.objects.get()
    replay = live_job(signed_in, run_jobs, app, agent, {"scenario": scenario.pk, "replay": run.pk})
    assert "no drift" in replay.content.decode()
    assert len(configured.seen) == 2
    services.agent_update(agent=agent, instructions=INSTRUCTIONS.replace("Always", "Please"))
    drifted = live_job(signed_in, run_jobs, app, agent, {"scenario": scenario.pk, "replay": run.pk})
    text = drifted.content.decode()
    assert "drift at call 1" in text and "instructions line 3" in text
    # The call where it drifted is marked in the timeline, with the field path and values.
    marked = text[text.index('id="first-drift"') :]
    marked = marked[: marked.index("</li>")]
    assert "drift-mark" in marked and "model call 1:" in marked
    assert "system_instruction, instructions line 3:" in marked and "Please" in marked
    assert text.count('class="event event-') > text.count(" drifted")  # not every event


def test_the_designer_saves_a_live_run_as_a_golden(
    signed_in,
    configured,
    bank_app,  # noqa: F811
    run_jobs,
):
    app, agent, scenario = bank_app
    configured.script(
        openai_stream_call("LookupBalance", '{"account_id": "primary"}'),
        openai_stream_text("1,250"),
    )
    live_job(
        signed_in, run_jobs, app, agent, {"scenario": scenario.pk, "model": "loop", "live": "1"}
    )
    run = LiveRun.objects.get()
    page = signed_in.post(reverse("live-run-golden", args=[app.pk, agent.pk, run.pk]), headers=HX)
    assert page.status_code == 200
    golden = agent.scenarios.get(name__startswith="Balance live (golden")
    assert 'expect call: LookupBalance {"account_id": "primary"}' in services.scenario_script(
        golden
    )


def test_a_model_key_never_appears_anywhere(
    signed_in,
    staff,
    user,
    configured,
    bank_app,  # noqa: F811
    caplog,
    capsys,
    run_jobs,
):
    from django.test import Client

    caplog.set_level(logging.DEBUG)
    app, agent, scenario = bank_app
    # An admin endpoint with a stored key, saved through the admin's form.
    client = Client()
    client.force_login(staff)
    added = client.post(
        "/admin/agents/modelendpoint/add/",
        {
            "name": "stored",
            "kind": "openai",
            "model": "gpt-4o-mini",
            "base_url": f"{configured.url}/v1",
            "timeout": "5",
            "max_retries": "0",
            "max_concurrent": "8",
            "enabled": "on",
            "api_key": ADMIN_KEY,
        },
    )
    assert added.status_code == 302, added.content.decode()[:2000]
    stored = ModelEndpoint.objects.get(name="stored")
    assert ADMIN_KEY not in stored.api_key_encrypted
    assert keyring.decrypt(stored.api_key_encrypted) == ADMIN_KEY
    change_page = client.get(f"/admin/agents/modelendpoint/{stored.pk}/change/").content.decode()
    # Saving the form again without a key keeps the stored one.
    endpoint_save(endpoint=stored)
    assert keyring.decrypt(ModelEndpoint.objects.get(pk=stored.pk).api_key_encrypted) == ADMIN_KEY

    configured.repeat_last = False
    configured.script(
        openai_stream_call("LookupBalance", "{}"),
        openai_stream_text("1,250 EUR."),
        openai_stream_call("LookupBalance", "{}"),
        openai_stream_text("1,250 EUR."),
    )
    url = f"/api/apps/{app.pk}/agents/{agent.pk}/scenarios/{scenario.pk}/simulate"
    answers = [signed_in.post(url, {"model": "loop"}, content_type="application/json").content]
    assert run_jobs() == 1  # (a newer live run of the agent would supersede it)
    answers += [
        signed_in.post(url, {"model": "stored"}, content_type="application/json").content,
        signed_in.get("/api/models").content,
        signed_in.post(f"/api/apps/{app.pk}/evaluate").content,
    ]
    assert run_jobs() == 2
    answers += [signed_in.get(f"/api/jobs/{job.pk}/").content for job in Job.objects.all()]
    assert configured.seen[2].headers["authorization"] == f"Bearer {ADMIN_KEY}"
    designer = reverse("agent-simulate", args=[app.pk, agent.pk])
    configured.script(openai_stream_call("LookupBalance", "{}"), openai_stream_text("1,250 EUR."))
    pages = [
        signed_in.post(designer, {"model": "loop", "live": "1"}, headers=HX).content,
        live_job(
            signed_in, run_jobs, app, agent, {"scenario": scenario.pk, "model": "loop", "live": "1"}
        ).content,
        signed_in.get(reverse("app-designer", args=[app.pk])).content,
        signed_in.get(reverse("app-export-native", args=[app.pk])).content,
        signed_in.get(reverse("app-history", args=[app.pk])).content,
        client.get("/admin/agents/modelendpoint/").content,
        change_page.encode(),
        client.get("/admin/agents/liverun/").content,
        client.get(f"/admin/agents/liverun/{LiveRun.objects.first().pk}/change/").content,
        client.get("/admin/admin/logentry/").content,
    ]
    version = versions.version_create(app=app, user=user, name="with live runs")
    number = version.number
    pages += [
        signed_in.get(reverse("app-versions", args=[app.pk])).content,
        signed_in.get(reverse("version-export-native", args=[app.pk, number])).content,
        signed_in.get(f"/api/apps/{app.pk}/versions/").content,
        client.get(f"/admin/agents/appversion/{version.pk}/change/").content,
    ]
    # The ZIP exports are read member by member (a key in a deflated file would not show
    # in the archive's bytes).
    for name, args in (
        ("app-export-cx", [app.pk]),
        ("app-export-adk", [app.pk]),
        ("version-export-cx", [app.pk, number]),
    ):
        archive = signed_in.get(reverse(name, args=args))
        assert archive.status_code == 200 and archive.content[:2] == b"PK", name
        with zipfile.ZipFile(io.BytesIO(archive.content)) as opened:
            pages += [opened.read(member) for member in opened.namelist()]
            pages += [member.encode() for member in opened.namelist()]
    rows = [json.dumps(list(AuditEvent.objects.values()), default=str)]
    rows.append(json.dumps(version.document))
    rows.append(json.dumps(list(LiveRun.objects.values()), default=str))
    from django.contrib.admin.models import LogEntry

    rows.append(json.dumps(list(LogEntry.objects.values()), default=str))
    logs = "\n".join(r.getMessage() for r in caplog.records)
    out = capsys.readouterr()
    everything = b"\n".join(answers + pages).decode("utf-8", "replace")
    everything += "\n".join(rows) + logs + out.out + out.err
    assert len(configured.seen) >= 5  # the runs really happened
    for key in (KEY, ADMIN_KEY):
        assert key not in everything


def test_the_admin_pages_of_live_models_open_with_constant_queries(
    staff,
    configured,
    bank_app,  # noqa: F811
):
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from agents.services.live_models import app_model_set
    from agents.services.live_runs import run_live

    app, agent, scenario = bank_app
    admin_client = Client()
    admin_client.force_login(staff)
    configured.repeat_last = True
    configured.script(openai_text("Hello."))
    run_live(app=app, agent=agent, scenario=scenario, model="loop")
    app_model_set(app=app, model="loop")
    endpoint_save(endpoint=ModelEndpoint(name="e", kind="openai", model="m"), api_key="k-1")
    for name in ("liverun", "modelendpoint", "appmodeldefault"):
        url = reverse(f"admin:agents_{name}_changelist")
        assert admin_client.get(url).status_code == 200
    with CaptureQueriesContext(connection) as few:
        assert admin_client.get(reverse("admin:agents_liverun_changelist")).status_code == 200
    for _ in range(5):
        run_live(app=app, agent=agent, scenario=scenario, model="loop")
    with CaptureQueriesContext(connection) as many:
        assert admin_client.get(reverse("admin:agents_liverun_changelist")).status_code == 200
    assert len(many.captured_queries) == len(few.captured_queries)
    endpoint = ModelEndpoint.objects.get(name="e")
    change = admin_client.get(reverse("admin:agents_modelendpoint_change", args=[endpoint.pk]))
    assert change.status_code == 200 and "k-1" not in change.content.decode()
    assert admin_client.get(reverse("admin:agents_modelendpoint_add")).status_code == 200


def test_the_app_default_model_through_the_api(signed_in, configured, bank_app):  # noqa: F811
    app, agent, scenario = bank_app
    url = f"/api/apps/{app.pk}/model"
    assert signed_in.get(url).json() == {"model": ""}
    bad = signed_in.put(url, {"model": "nope"}, content_type="application/json")
    assert bad.status_code == 400 and "No model named 'nope'" in json.dumps(bad.json())
    assert signed_in.put(url, {"model": "loop"}, content_type="application/json").json() == {
        "model": "loop"
    }
    configured.script(openai_text("Hello."))
    from agents.services.live_runs import run_live

    outcome = run_live(app=app, agent=agent, scenario=scenario)  # no model named
    assert outcome.model == "loop" and len(configured.seen) == 1


def test_run_all_in_the_designer_with_the_picked_model_runs_live(
    signed_in,
    configured,
    bank_app,  # noqa: F811
    run_jobs,
):
    """The model picker's value goes with Run all: the evaluate_app job runs live."""
    app = bank_app[0]
    configured.script(openai_call("LookupBalance", {}), openai_text("It is 1,250 EUR."))
    page = signed_in.post(reverse("app-run-all", args=[app.pk]), {"model": "loop"}, headers=HX)
    assert page.status_code == 200 and "live · loop" in page.content.decode()
    assert run_jobs() == 1
    job = Job.objects.get(kind="evaluate_app")
    assert job.params["model"] == "loop" and len(configured.seen) == 2
    assert job.result["scenarios"][0]["live"]["model_calls"] == 2


def test_run_all_with_an_unknown_model_is_a_400_naming_it(signed_in, configured, bank_app):  # noqa: F811
    app = bank_app[0]
    page = signed_in.post(reverse("app-run-all", args=[app.pk]), {"model": "gpt-9"}, headers=HX)
    assert page.status_code == 400 and "gpt-9" in page.content.decode()


SIMULATED = {
    "displayName": "Simulated balance question",
    "scenario": {
        "task": "Ask for the balance of your current account.",
        "rubrics": ["The agent tells the user the balance."],
        "scenarioExpectations": [
            {"toolExpectation": {"expectedToolCall": {"tool": "LookupBalance"}}},
        ],
        "maxTurns": 2,
    },
}


def test_a_live_run_all_runs_the_cx_scenario_evaluations_with_the_judges_reasons(
    signed_in,
    configured,
    bank_app,  # noqa: F811
    run_jobs,
):
    """Run all with a model (the designer's, and so the API's evaluate job) runs the CX
    evaluations of the scenario kind too: a simulated user, then the judge; the designer
    shows the judge's reason per rubric, and the evaluation is no longer "needs a model"."""
    from agents.models import AgentApp

    app = bank_app[0]
    path = "evaluations/Simulated/Simulated.json"
    AgentApp.objects.filter(pk=app.pk).update(cx={"files": {path: json.dumps(SIMULATED)}})
    verdict = {"rubrics": [{"index": 1, "passed": True, "reason": "It said 1,250 EUR."}]}
    configured.script(
        openai_call("LookupBalance", {}),  # the golden "Balance live"
        openai_text("It is 1,250 EUR."),
        openai_text("What is my current account balance?"),  # the simulated user
        openai_call("LookupBalance", {}),  # the agent
        openai_text("Your balance is 1,250 EUR."),
        openai_text("END"),  # the user is done
        openai_text(json.dumps(verdict)),  # the judge
    )
    url = reverse("app-run-all", args=[app.pk])
    assert signed_in.post(url, {"model": "loop"}, headers=HX).status_code == 200
    assert run_jobs() == 1
    job = Job.objects.get(kind="evaluate_app")
    assert job.status == "succeeded", job.error
    assert (job.progress_done, job.progress_total) == (2, 2)
    golden, simulated = job.result["scenarios"]
    assert golden["status"] == "passed"
    assert simulated["kind"] == "simulated_user" and simulated["status"] == "passed"
    assert simulated["ended_by"] == "user" and simulated["turns"] == 1
    rubric = next(r for r in simulated["results"] if r["kind"] == "rubric")
    assert rubric["message"] == "It said 1,250 EUR."
    assert simulated["live"]["model_calls"] == 2
    assert job.result["summary"] == {
        "passed": 2,
        "failed": 0,
        "needs_model": 0,
        "no_expectations": 0,
        "stopped": 0,
        "flaky": 0,
    }
    page = signed_in.get(reverse("app-run-all-job", args=[app.pk, job.pk]), headers=HX)
    text = page.content.decode()
    assert "Simulated balance question" in text and "It said 1,250 EUR." in text
    assert "simulated user, 1 turn" in text and "the user's task ended" in text
    assert "needs a model, kept as imported" not in text
    # The API's evaluate body is the same job's result (its messages' templates, kept
    # beside the English for other languages, taken off).
    from agents.i18n import localized_data

    api = signed_in.get(f"/api/jobs/{job.pk}/").json()["result"]
    assert api["scenarios"][1]["results"] == localized_data(simulated["results"])
    assert "i18n" in simulated["results"][0] and "i18n" not in api["scenarios"][1]["results"][0]


def test_the_designer_makes_the_picked_model_the_apps_default(
    signed_in,
    configured,
    bank_app,  # noqa: F811
):
    """Designers pick the app's default model in the conversation panel (the one live
    runs that name no model use); Scripted clears it; the picker marks it."""
    from agents.models import AppModelDefault
    from agents.services.live_runs import run_live

    app, agent, scenario = bank_app
    url = reverse("agent-simulate", args=[app.pk, agent.pk])
    data = {"scenario": scenario.pk, "model": "loop", "make_default": "1"}
    page = signed_in.post(url, data, headers=HX)
    assert page.status_code == 200
    assert AppModelDefault.objects.get(app=app).model == "loop"
    assert "(openai: gpt-4o-mini) · the app's default</option>" in page.content.decode()
    assert len(configured.seen) == 0  # setting the default ran no model
    configured.script(openai_text("Hello."))
    assert run_live(app=app, agent=agent, scenario=scenario).model == "loop"
    unknown = signed_in.post(url, {**data, "model": "gpt-9"}, headers=HX)
    assert unknown.status_code == 400 and "No model named" in unknown.content.decode()
    signed_in.post(url, {**data, "model": ""}, headers=HX)
    assert not AppModelDefault.objects.filter(app=app).exists()


def test_a_viewer_cannot_set_the_apps_default_model(
    client,
    configured,
    bank_app,  # noqa: F811
    django_user_model,
):
    from agents.models import AppModelDefault

    app, agent, scenario = bank_app
    viewer = django_user_model.objects.create_user(username="viewer", password="pw-viewer-1")
    services.app_share(app=app, user=viewer, role="viewer", actor=app.owner)
    client.force_login(viewer)
    url = reverse("agent-simulate", args=[app.pk, agent.pk])
    page = client.post(url, {"scenario": scenario.pk, "model": "loop", "make_default": "1"})
    assert page.status_code == 403 and not AppModelDefault.objects.exists()
    assert (
        'id="make-default-model"' not in client.get(url, {"scenario": scenario.pk}).content.decode()
    )
