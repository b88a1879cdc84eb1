"""A Run all is judged at one revision, or says it was not (issue 32, item 6): a Run all
stopped after its first golden (its worker killed), the app edited, then retried gathers
the piece already done at the old revision and runs the rest at the new one. Its job's
result, its EvaluationRun and the designer's Run all summary say "mixed revisions" and
which golden ran at which; each golden's row records the revision it ran at.

The worker's part is played as a worker plays it (`jobs.job_run`), in the test's
transaction: the first piece runs, then the parent job is run again (as `jobs_recover`
queues it after its worker died) and finds its pieces."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from agents import services
from agents.models import EvaluationRun, Job
from agents.services import evaluation, evaluation_runs, jobs
from agents.services.jobs import JobContext

pytestmark = pytest.mark.django_db


def _stopped_after_the_first_golden_then_edited_and_retried(user, app) -> tuple[Job, int, int]:
    for n in (2, 3):
        services.scenario_save(
            agent=app.agents.get(is_root=True), name=f"Golden {n}", steps_script="user: Hello."
        )
    app.refresh_from_db()
    parent = evaluation.run_all_submit(app=app, actor=user, enqueue=False)
    _, pairs = evaluation.app_scenarios(app)
    assert len(pairs) >= 2
    pieces = evaluation_runs.plan(parent, pairs)
    children = evaluation_runs.spawn(JobContext(parent, "killed-worker"), pieces)
    jobs.job_run(str(children[0].pk))  # the first golden; then the worker is killed
    before = type(app).objects.get(pk=app.pk).revision
    services.app_update(app=app, description="edited while the Run all was stopped")
    after = type(app).objects.get(pk=app.pk).revision
    assert after != before
    jobs.job_run(str(parent.pk))  # retried: gathers the first piece, runs the rest
    return Job.objects.get(pk=parent.pk), before, after


def test_a_retried_run_all_after_an_edit_says_mixed_and_which_golden_ran_at_which(user, bank):
    job, before, after = _stopped_after_the_first_golden_then_edited_and_retried(user, bank)
    assert job.status == "succeeded", job.error
    revisions = job.result["revisions"]
    assert revisions["mixed"] is True and revisions["started"] == before
    by_revision = {group["revision"]: group["goldens"] for group in revisions["by_revision"]}
    first = job.result["scenarios"][0]
    assert by_revision[before] == [evaluation_runs.golden_name(first["agent_name"], first["name"])]
    assert len(by_revision[after]) == len(job.result["scenarios"]) - 1
    assert [s["app_revision"] for s in job.result["scenarios"]] == [before] + [after] * (
        len(job.result["scenarios"]) - 1
    )


def test_the_evaluation_run_and_the_api_say_mixed(user, bank):
    job, before, after = _stopped_after_the_first_golden_then_edited_and_retried(user, bank)
    run = EvaluationRun.objects.get(job=job)
    client = APIClient()
    client.force_login(user)
    detail = client.get(reverse("api:evaluation-run-detail", args=[bank.pk, run.pk])).json()
    assert detail["revisions"]["mixed"] is True
    assert [g["revision"] for g in detail["revisions"]["by_revision"]] == [before, after]
    body = client.get(reverse("api:job-detail", args=[job.pk])).json()
    assert body["result"]["revisions"]["mixed"] is True


def test_the_designer_run_all_summary_and_the_run_page_say_mixed_revisions(user, bank, signed_in):
    job, before, after = _stopped_after_the_first_golden_then_edited_and_retried(user, bank)
    fragment = signed_in.get(reverse("app-run-all-job", args=[bank.pk, job.pk])).content.decode()
    assert "Mixed revisions:" in fragment
    assert f"At revision {before}:" in fragment and f"At revision {after}:" in fragment
    run = EvaluationRun.objects.get(job=job)
    page = signed_in.get(reverse("evaluation-run", args=[bank.pk, run.pk])).content.decode()
    assert "Mixed revisions:" in page


def test_a_run_all_at_one_revision_is_not_mixed(user, bank, run_jobs):
    services.scenario_save(
        agent=bank.agents.get(is_root=True), name="Golden 2", steps_script="user: Hi."
    )
    bank.refresh_from_db()
    job = evaluation.run_all_submit(app=bank, actor=user)
    run_jobs()
    job.refresh_from_db()
    assert job.result["revisions"]["mixed"] is False
    assert [g["revision"] for g in job.result["revisions"]["by_revision"]] == [bank.revision]
