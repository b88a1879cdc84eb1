"""Jobs (docs/operations/jobs.md): the API answers 202, a worker runs the job from the database
queue, the job's url shows progress and the result, cancel, caps and the per-user limit.

Here the database backend's own task runner runs the queue in the test process;
tests/test_jobs_worker.py runs `manage.py worker` as a separate process.
"""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from agents import services
from agents.models import Job, JobItem, Scenario, ScenarioResult
from agents.services import jobs

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(user):
    client = APIClient()
    client.force_login(user)
    return client


def _scenarios(app, count: int) -> list:
    agent = app.agents.get()
    return [
        services.scenario_save(
            agent=agent, name=f"Extra {i}", steps_script=f"user: hello {i}\nagent: Hi"
        )
        for i in range(count)
    ]


def run_queue() -> int:
    """What a database worker does with each ready task (django-tasks-db's own `run_task`),
    in the test's transaction (its loop closes the connection between tasks)."""
    from django_tasks_db.management.commands.db_worker import Worker
    from django_tasks_db.models import DBTaskResult

    worker = Worker(
        queue_names=["default"],
        interval=0,
        batch=True,
        backend_name="default",
        startup_delay=False,
        max_tasks=None,
        worker_id="test-worker",
        excluded_queue_names=[],
    )
    ran = 0
    for task in DBTaskResult.objects.ready():
        task.claim("test-worker")
        worker.run_task(task)
        ran += 1
    return ran


def test_evaluate_answers_202_and_the_worker_fills_the_job(
    api, bank, django_capture_on_commit_callbacks
):
    _scenarios(bank, 2)
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(reverse("api:app-evaluate", args=[bank.pk]))
    assert response.status_code == 202
    body = response.json()
    assert set(body) == {"id", "url", "status"} and body["status"] == "queued"
    assert response["Location"] == body["url"]
    assert api.get(body["url"]).json()["progress"] == {"done": 0, "total": 0}
    run_queue()
    job = api.get(body["url"]).json()
    assert job["status"] == "succeeded", job["error"]
    assert job["progress"] == {"done": 3, "total": 3}
    names = [s["name"] for s in job["result"]["scenarios"]]
    assert len(names) == 3 and {"Extra 0", "Extra 1"} <= set(names)
    first = job["result"]["scenarios"][0]
    assert set(first) >= {"scenario", "agent", "status", "results", "diagnostics"}
    assert job["result"]["ok"] is True and job["started_at"] and job["finished_at"]
    assert ScenarioResult.objects.filter(scenario__agent__app=bank).count() == 3


def test_the_scenario_evaluate_is_a_job_with_one_scenario(
    api, bank, django_capture_on_commit_callbacks
):
    agent = bank.agents.get()
    scenario = agent.scenarios.get()
    url = reverse("api:scenario-evaluate", args=[bank.pk, agent.pk, scenario.pk])
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(url)
    assert response.status_code == 202
    run_queue()
    job = api.get(response["Location"]).json()
    assert job["status"] == "succeeded"
    assert job["result"]["scenario"] == scenario.pk and job["result"]["status"] == "passed"


def test_a_job_is_only_its_owners(api, bob_api, bank):
    response = api.post(reverse("api:app-evaluate", args=[bank.pk]))
    assert bob_api.get(response["Location"]).status_code == 404
    assert bob_api.post(response["Location"] + "cancel").status_code == 404


@pytest.fixture
def bob_api(other_user):
    client = APIClient()
    client.force_login(other_user)
    return client


def _scenario_evaluate_url(app) -> str:
    scenario = Scenario.objects.filter(agent__app=app).select_related("agent").first()
    return reverse("api:scenario-evaluate", args=[app.pk, scenario.agent.pk, scenario.pk])


def test_a_users_active_jobs_are_limited_with_a_429_naming_the_limit(api, bank, settings):
    settings.JOBS_MAX_ACTIVE_PER_USER = 2
    url = _scenario_evaluate_url(bank)  # a scenario's evaluation supersedes none
    assert [api.post(url).status_code for _ in range(2)] == [202, 202]
    refused = api.post(url)
    assert refused.status_code == 429
    assert "at most 2 are allowed at once (JOBS_MAX_ACTIVE_PER_USER=2)" in refused.json()["detail"]


def test_a_cancelled_job_frees_a_place_under_the_limit(api, bank, settings):
    settings.JOBS_MAX_ACTIVE_PER_USER = 1
    url = _scenario_evaluate_url(bank)
    first = api.post(url)
    assert api.post(url).status_code == 429
    cancelled = api.post(first["Location"] + "cancel").json()
    assert cancelled["status"] == "cancelled" and cancelled["finished_at"]
    assert api.post(url).status_code == 202


def test_a_job_cancelled_while_queued_never_runs(api, bank, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(reverse("api:app-evaluate", args=[bank.pk]))
    api.post(response["Location"] + "cancel")
    run_queue()
    job = Job.objects.get()
    assert job.status == "cancelled" and job.attempts == 0
    assert not JobItem.objects.exists() and not ScenarioResult.objects.exists()


def test_a_job_stops_at_its_code_call_cap_and_says_which(user, bank):
    _scenarios(bank, 0)
    tool = bank.tools.get()
    services.tool_update(tool=tool, python_code="def LookupBalance(account_id=''):\n    return 1\n")
    agent = bank.agents.get()
    script = "\n".join(f'tool: LookupBalance {{"account_id": "{i}"}}' for i in range(4))
    services.scenario_save(agent=agent, name="Many calls", steps_script=script)
    job = jobs.job_submit(
        kind="evaluate_app", owner=user, app=bank, caps={"max_code_calls": 2}, enqueue=False
    )
    job = jobs.job_run(str(job.pk))
    assert job.status == "failed"
    assert "reached its cap of 2 code calls (JOBS_MAX_CODE_CALLS)" in job.error
    messages = [d["message"] for s in job.result["scenarios"] for d in s["diagnostics"]]
    assert any("the job reached its cap of 2 code calls" in m for m in messages)


def test_a_job_is_claimed_once(user, bank):
    job = jobs.job_submit(kind="evaluate_app", owner=user, app=bank, enqueue=False)
    assert jobs.job_run(str(job.pk)).status == "succeeded"
    assert jobs.job_run(str(job.pk)) is None  # the queue delivering it twice runs nothing
    assert Job.objects.get(parent=None).attempts == 1
    assert JobItem.objects.filter(job__parent=None).count() == 1


def test_the_job_kinds_are_a_registry_others_extend(user, bank):
    seen = []

    def run(ctx):
        ctx.progress(done=0, total=2, current="first")
        seen.append(ctx.caps.max_model_calls)
        ctx.item("one", {"n": 1})
        assert ctx.item("one", {"n": 2}) is False  # once per (job, key)
        ctx.progress(done=2)
        return {"items": ctx.items()}

    jobs.register("test_kind", run=run, label="A test kind")
    try:
        job = jobs.job_submit(
            kind="test_kind", owner=user, caps={"max_model_calls": 7}, enqueue=False
        )
        job = jobs.job_run(str(job.pk))
    finally:
        jobs.KINDS.pop("test_kind")
    assert job.status == "succeeded" and job.result == {"items": [{"n": 1}]}
    assert seen == [7] and (job.progress_done, job.progress_total) == (2, 2)


def test_an_unknown_kind_is_refused_with_the_known_ones(user):
    with pytest.raises(ValueError, match=r"No job kind 'nope'; known: .*evaluate_app"):
        jobs.job_submit(kind="nope", owner=user)


def test_the_schema_documents_the_job_endpoints(api):
    schema = api.get(reverse("api:schema"), {"format": "json"}).json()
    paths = schema["paths"]
    assert "202" in paths["/api/apps/{app_id}/evaluate"]["post"]["responses"]
    assert "/api/jobs/{job_id}/" in paths and "/api/jobs/{job_id}/cancel" in paths
    job = schema["components"]["schemas"]["JobOut"]["properties"]
    assert {"id", "status", "progress", "result", "created_at", "error"} <= set(job)
