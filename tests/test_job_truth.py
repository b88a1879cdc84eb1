"""One truth per job (issue 29, items 2 and 3): the queue's own status agrees with the job's
row (a failed job fails its task: the database queue, RQ on a real Redis, Django's
ImmediateBackend), and a job's messages are stored as their template and parameters, read
in the reader's language (a cap error in French and German, in the API and the designer's
fragment). Each probe fails on the code before: the task said SUCCESSFUL, the error was
English for every reader.

The database queue runs through django-tasks-db's own `run_task` (as tests/test_jobs.py) or
a real `manage.py worker` process; RQ through a real worker on a redis-server of the
test's own.
"""

from __future__ import annotations

import pytest
from django.db import OperationalError
from django.tasks import TaskResultStatus
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from agents import services
from agents.core.diagnostics import Message
from agents.models import Job, JobStatus
from agents.services import jobs
from tests.test_jobs import run_queue
from tests.workers import redis_queue

pytestmark = pytest.mark.django_db

CAP_FR = "La tâche a atteint sa limite de 2 appels de code (JOBS_MAX_CODE_CALLS)"
CAP_DE = "Der Job hat seine Obergrenze von 2 Codeaufrufen erreicht (JOBS_MAX_CODE_CALLS)"
CAP_EN = "The job reached its cap of 2 code calls (JOBS_MAX_CODE_CALLS)"


def many_calls(app) -> None:
    """`app` (the bank demo) with a scenario of four quick tool calls: a job capped at two
    code calls fails on it."""
    tool = app.tools.get()
    services.tool_update(tool=tool, python_code="def LookupBalance(account_id=''):\n    return 1\n")
    script = "\n".join(f'tool: LookupBalance {{"account_id": "{i}"}}' for i in range(4))
    services.scenario_save(agent=app.agents.get(), name="Many calls", steps_script=script)


def capped(user, app, **kwargs) -> Job:
    return jobs.job_submit(
        kind="evaluate_app", owner=user, app=app, caps={"max_code_calls": 2}, **kwargs
    )


def task_row(job: Job):
    from django_tasks_db.models import DBTaskResult

    job.refresh_from_db()
    return DBTaskResult.objects.get(pk=job.task_id)


# ---------------------------------------------------------------- the queue agrees


def test_a_failed_job_fails_its_task_on_the_database_queue(
    user, bank, django_capture_on_commit_callbacks
):
    many_calls(bank)
    with django_capture_on_commit_callbacks(execute=True):
        failing = capped(user, bank)
    assert run_queue() == 1
    failing.refresh_from_db()
    assert failing.status == JobStatus.FAILED
    task = task_row(failing)
    assert task.status == TaskResultStatus.FAILED
    assert task.exception_class_path == "agents.services.jobs.JobFailed"
    assert f"job {failing.pk} (evaluate_app) failed: {CAP_EN}" in task.traceback


def test_the_worker_goes_on_and_a_succeeded_or_cancelled_job_is_successful(
    user, bank, django_capture_on_commit_callbacks
):
    """A failed task does not stop the queue: the next job runs; a succeeded job's task is
    SUCCESSFUL, and a cancelled one's too (the user's wish; the queue has no cancelled)."""
    many_calls(bank)
    with django_capture_on_commit_callbacks(execute=True):
        failing = capped(user, bank)
        fine = jobs.job_submit(kind="evaluate_app", owner=user, app=bank)
        cancelled = jobs.job_submit(kind="evaluate_app", owner=user, app=bank)
    jobs.job_cancel(job=cancelled)
    assert run_queue() == 3
    statuses = {
        job.pk: (Job.objects.get(pk=job.pk).status, task_row(job).status)
        for job in (failing, fine, cancelled)
    }
    assert statuses == {
        failing.pk: (JobStatus.FAILED, TaskResultStatus.FAILED),
        fine.pk: (JobStatus.SUCCEEDED, TaskResultStatus.SUCCESSFUL),
        cancelled.pk: (JobStatus.CANCELLED, TaskResultStatus.SUCCESSFUL),
    }


def test_a_transient_error_is_retried_then_the_failure_fails_the_last_task(
    settings, user, bank, django_capture_on_commit_callbacks
):
    """The attempt stopped by a transient error ends its task successfully (the retry is a
    new task); past JOBS_MAX_ATTEMPTS the job fails, and so does the task that ran it. The
    reaper never runs the failed job again."""
    settings.JOBS_RETRY_BACKOFF_SECONDS = 0
    settings.JOBS_MAX_ATTEMPTS = 2
    settings.JOBS_REQUEUE_SECONDS = 0

    def full_disk(ctx):
        raise OperationalError("could not extend file: No space left on device")

    jobs.register("full_disk_test", run=full_disk)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            job = jobs.job_submit(kind="full_disk_test", owner=user, app=bank)
        first = task_row(job)
        assert run_queue() == 1  # attempt 1: queued again, on a new task
        job.refresh_from_db()
        assert job.status == JobStatus.QUEUED and job.task_id != str(first.pk)
        first.refresh_from_db()
        assert first.status == TaskResultStatus.SUCCESSFUL
        assert run_queue() == 1  # attempt 2: failed for good
        job.refresh_from_db()
        assert job.status == JobStatus.FAILED and job.attempts == 2
        assert task_row(job).status == TaskResultStatus.FAILED
        Job.objects.filter(pk=job.pk).update(queued_at=timezone.now() - timezone.timedelta(hours=1))
        assert jobs.jobs_reap() == [] and run_queue() == 0
        assert Job.objects.get(pk=job.pk).attempts == 2
    finally:
        jobs.KINDS.pop("full_disk_test", None)


def test_a_kind_run_from_the_queue_its_own_way_fails_its_task_too(
    user, bank, django_capture_on_commit_callbacks
):
    """A kind that takes its jobs from the queue itself (`from_queue`, as a Run all's pieces
    with their siblings) is judged by its row as well."""
    taken: list[str] = []

    def from_queue(job_id: str) -> None:
        taken.append(job_id)
        jobs.job_run(job_id)

    def broken(ctx):
        raise ValueError(Message("the golden %(name)s has no steps", name="Happy path"))

    jobs.register("from_queue_test", run=broken, from_queue=from_queue)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            job = jobs.job_submit(kind="from_queue_test", owner=user, app=bank)
        run_queue()
    finally:
        jobs.KINDS.pop("from_queue_test", None)
    assert taken == [str(job.pk)]
    task = task_row(job)
    assert job.status == JobStatus.FAILED and task.status == TaskResultStatus.FAILED
    assert "ValueError: the golden Happy path has no steps" in task.traceback


def test_a_piece_its_parent_ran_fails_its_own_task_when_the_queue_brings_it(
    user, bank, django_capture_on_commit_callbacks
):
    """A piece of a fanned-out job (``Job.parent``) may be run by its parent before its own
    task comes: the task then runs nothing and says what the row says."""
    parent = jobs.job_submit(kind="evaluate_app", owner=user, app=bank, enqueue=False)
    many_calls(bank)
    with django_capture_on_commit_callbacks(execute=True):
        piece = capped(user, bank)
    Job.objects.filter(pk=piece.pk).update(parent=parent)
    ran = jobs.job_run(str(piece.pk))  # the parent's thread runs it first
    assert ran.status == JobStatus.FAILED
    run_queue()
    assert task_row(piece).status == TaskResultStatus.FAILED
    assert Job.objects.get(pk=piece.pk).attempts == 1  # run once


def test_the_immediate_backend_records_a_failed_job_as_failed(settings, user, bank):
    """Django's ImmediateBackend (TASKS_BACKEND=immediate: tests, debugging) runs the task
    in the caller and records its exception: a failed job's result is FAILED."""
    from django.tasks import task_backends

    from tests.workers import _forget_backends

    many_calls(bank)
    failing = capped(user, bank, enqueue=False)
    fine = jobs.job_submit(kind="evaluate_app", owner=user, app=bank, enqueue=False)
    settings.TASKS = {"default": {"BACKEND": "django.tasks.backends.immediate.ImmediateBackend"}}
    _forget_backends(task_backends)
    try:
        failed = jobs.run_job.enqueue(str(failing.pk))
        succeeded = jobs.run_job.enqueue(str(fine.pk))
    finally:
        _forget_backends(task_backends)
    assert failed.status == TaskResultStatus.FAILED
    assert failed.errors[0].exception_class_path == "agents.services.jobs.JobFailed"
    assert succeeded.status == TaskResultStatus.SUCCESSFUL
    assert Job.objects.get(pk=failing.pk).status == JobStatus.FAILED


@pytest.mark.django_db(transaction=True)
@pytest.mark.xdist_group("workers")
def test_a_worker_process_records_a_failed_job_as_failed_in_the_database_queue(workers, user, bank):
    many_calls(bank)
    failing = capped(user, bank)
    fine = jobs.job_submit(kind="evaluate_app", owner=user, app=bank)
    worker = workers()
    worker.wait_for(f"job {failing.pk} (evaluate_app) failed")
    worker.wait_for(f"job {fine.pk} (evaluate_app) succeeded")  # it went on
    worker.stop()
    assert task_row(failing).status == TaskResultStatus.FAILED
    assert task_row(fine).status == TaskResultStatus.SUCCESSFUL


@pytest.mark.django_db(transaction=True)
@pytest.mark.xdist_group("workers")
def test_an_rq_worker_records_a_failed_job_as_failed_in_redis(
    settings, redis_server, workers, user, bank
):
    url = redis_server.url(3)
    many_calls(bank)
    with redis_queue(settings, url):
        failing = capped(user, bank)
        fine = jobs.job_submit(kind="evaluate_app", owner=user, app=bank)
        worker = workers(TASKS_BACKEND="rq", REDIS_URL=url)
        worker.wait_for(f"job {failing.pk} (evaluate_app) failed")
        worker.wait_for(f"job {fine.pk} (evaluate_app) succeeded")  # it went on
        worker.wait_for("Job OK")  # RQ recorded the second task: the first is recorded too
        failing.refresh_from_db()
        fine.refresh_from_db()
        backend = jobs.run_job.get_backend()
        failed = backend.get_result(failing.task_id)
        assert failed.status == TaskResultStatus.FAILED
        assert failed.errors[0].exception_class_path == "agents.services.jobs.JobFailed"
        assert backend.get_result(fine.task_id).status == TaskResultStatus.SUCCESSFUL
    assert Job.objects.get(pk=failing.pk).status == JobStatus.FAILED


# ---------------------------------------------------------------- messages stored as ids


@pytest.fixture
def api(user):
    client = APIClient()
    client.force_login(user)
    return client


@pytest.mark.parametrize(("language", "words"), [("fr", CAP_FR), ("de", CAP_DE), ("en", CAP_EN)])
def test_a_jobs_cap_error_reads_in_the_readers_language_in_the_api(
    api, user, bank, language, words
):
    many_calls(bank)
    job = jobs.job_run(str(capped(user, bank, enqueue=False).pk))
    assert job.status == JobStatus.FAILED and job.error.startswith(CAP_EN)  # stored: English
    assert job.error_data["template"].startswith("%(reason)s")  # and its template
    body = api.get(f"/api/jobs/{job.pk}/", headers={"accept-language": language}).json()
    assert body["error"].startswith(words)


def test_a_model_call_cap_error_reads_in_french_and_german(api, user):
    """The job-wide model-call cap's error (JOBS_MAX_MODEL_CALLS), as `JobContext.check`
    writes it, read through the API."""

    def calls(ctx):
        ctx.caps.model_calls = 1
        ctx.check()

    jobs.register("model_cap_test", run=calls)
    try:
        job = jobs.job_submit(
            kind="model_cap_test", owner=user, caps={"max_model_calls": 1}, enqueue=False
        )
        job = jobs.job_run(str(job.pk))
    finally:
        jobs.KINDS.pop("model_cap_test", None)
    assert job.error == "The job reached its cap of 1 model calls (JOBS_MAX_MODEL_CALLS)."
    french = api.get(f"/api/jobs/{job.pk}/", headers={"accept-language": "fr"}).json()
    german = api.get(f"/api/jobs/{job.pk}/", headers={"accept-language": "de"}).json()
    assert french["error"].startswith("La tâche a atteint sa limite de 1 appels du modèle")
    assert german["error"].startswith("Der Job hat seine Obergrenze von 1 Modellaufrufen")


@pytest.mark.parametrize(("language", "words"), [("fr", CAP_FR), ("de", CAP_DE)])
def test_a_jobs_cap_error_reads_in_the_users_language_in_the_designers_fragment(
    client, user, bank, language, words
):
    """The Run all fragment, for a user who chose their language in the header."""
    from agents.models import UserSettings

    many_calls(bank)
    job = jobs.job_run(str(capped(user, bank, enqueue=False).pk))
    UserSettings.objects.update_or_create(user=user, defaults={"language": language})
    client.force_login(user)  # signing in takes the language the user chose
    page = client.get(reverse("app-run-all-job", args=[bank.pk, job.pk]))
    assert words in page.content.decode()


def test_an_old_rows_error_is_shown_as_stored(api, user, bank):
    """A row written before the template was kept: its English as stored, in every
    language (nothing reads it back against the catalog)."""
    job = jobs.job_submit(kind="evaluate_app", owner=user, app=bank, enqueue=False)
    Job.objects.filter(pk=job.pk).update(status=JobStatus.FAILED, error=f"{CAP_EN}.")
    body = api.get(f"/api/jobs/{job.pk}/", headers={"accept-language": "fr"}).json()
    assert body["error"] == f"{CAP_EN}."


def test_an_import_jobs_progress_reads_in_the_language(api, user):
    job = jobs.job_submit(kind="import_app", owner=user, params={"filename": "x"}, enqueue=False)
    reading = Message(jobs.PROGRESS_READING, file="shop.json")
    Job.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING, worker="test:1")
    jobs.JobContext(job, "test:1").progress(current=reading)
    german = api.get(f"/api/jobs/{job.pk}/", headers={"accept-language": "de"}).json()
    assert german["current"] == "shop.json wird gelesen"
    assert Job.objects.get(pk=job.pk).current == "reading shop.json"
