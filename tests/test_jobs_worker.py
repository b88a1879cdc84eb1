"""Jobs with a real worker process: `manage.py worker` on the database queue (the embedded
default) and on Redis (RQ); a worker SIGKILLed mid-job; cancel while running.

The test waits for what the worker prints (its log lines on a pipe, read with a
deadline), never for a fixed time.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from agents.models import Job, JobItem, ScenarioResult, WorkerHeartbeat
from agents.services import jobs
from tests.workers import redis_queue, slow_app

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.xdist_group("workers")]
REDIS_URL = "redis://127.0.0.1:6379/7"


@pytest.fixture
def api(user):
    client = APIClient()
    client.force_login(user)
    return client


def test_a_worker_process_runs_the_job_and_reports_progress(workers, api, bank):
    long_ago, lately = timezone.now() - timedelta(days=8), timezone.now() - timedelta(days=1)
    for name, seen in (("gone:1", long_ago), ("lately:2", lately)):
        WorkerHeartbeat.objects.create(
            worker=name, queue="database", started_at=seen, seen_at=seen, stopped=True
        )
    worker = workers()
    total = slow_app(bank, 2)
    location = api.post(reverse("api:app-evaluate", args=[bank.pk]))["Location"]
    job_id = location.rstrip("/").rsplit("/", 1)[-1]
    worker.wait_for_progress(job_id, total)
    worker.wait_for(f"job {job_id} (evaluate_app) succeeded")
    body = api.get(location).json()
    assert body["status"] == "succeeded"
    assert body["progress"] == {"done": total, "total": total}
    assert len(body["result"]["scenarios"]) == total
    # The worker forgot the heartbeat of a worker gone for more than a week, not the other.
    assert not WorkerHeartbeat.objects.filter(worker__in=["gone:1"]).exists()
    assert WorkerHeartbeat.objects.filter(worker="lately:2").exists()


def test_a_worker_killed_mid_job_is_retried_without_duplicates(workers, user, bank):
    total = slow_app(bank, 4)
    first = workers()
    job = jobs.job_submit(kind="evaluate_app", owner=user, app=bank)
    first.wait_for_progress(job.pk, total)
    first.kill()
    assert Job.objects.get(pk=job.pk).status == "running"  # as the dead worker left it
    second = workers()
    second.wait_for(f"job {job.pk} (evaluate_app) succeeded")
    job.refresh_from_db()
    assert job.attempts == 2 and job.progress_done == total
    keys = list(JobItem.objects.filter(job=job).values_list("key", flat=True))
    assert len(keys) == total == len(set(keys))
    assert ScenarioResult.objects.filter(scenario__agent__app=bank).count() == total


def test_a_job_whose_worker_died_too_often_fails_with_the_reason(workers, user, bank):
    total = slow_app(bank, 6)
    first = workers()
    job = jobs.job_submit(kind="evaluate_app", owner=user, app=bank)
    first.wait_for_progress(job.pk, total)
    first.kill()
    second = workers(JOBS_MAX_ATTEMPTS="1")
    second.wait_for(f"recovered job {job.pk}")
    job.refresh_from_db()
    assert job.status == "failed"
    assert "stopped during attempt 1 of 1 (JOBS_MAX_ATTEMPTS)" in job.error
    assert JobItem.objects.filter(job=job).count() >= 1  # what it finished is kept


def test_cancel_stops_a_running_job(workers, api, bank):
    worker = workers()
    total = slow_app(bank, 4)
    location = api.post(reverse("api:app-evaluate", args=[bank.pk]))["Location"]
    job_id = location.rstrip("/").rsplit("/", 1)[-1]
    worker.wait_for_progress(job_id, total)
    assert api.post(location + "cancel").status_code == 200
    worker.wait_for(f"job {job_id} (evaluate_app) cancelled")
    body = api.get(location).json()
    assert body["status"] == "cancelled"
    assert body["progress"]["done"] < total


@pytest.fixture
def rq_queue(settings):
    """The test process enqueues on Redis (db 7) as a web process with TASKS_BACKEND=rq."""
    with redis_queue(settings, REDIS_URL):
        yield


def test_an_rq_worker_runs_the_job_from_redis(rq_queue, workers, api, bank):
    worker = workers(TASKS_BACKEND="rq", REDIS_URL=REDIS_URL)
    total = slow_app(bank, 1)
    location = api.post(reverse("api:app-evaluate", args=[bank.pk]))["Location"]
    job_id = location.rstrip("/").rsplit("/", 1)[-1]
    assert Job.objects.get(pk=job_id).task_id  # the RQ job's id
    worker.wait_for(f"job {job_id} (evaluate_app) succeeded")
    body = api.get(location).json()
    assert body["status"] == "succeeded" and body["progress"]["done"] == total


def test_an_rq_worker_killed_mid_job_is_recovered_without_duplicates(rq_queue, workers, user, bank):
    """RQ's warm worker runs the job in its own process (server.rq_worker): SIGKILLed, the
    job's worker pid is gone, and the next worker queues it again on Redis and finishes it."""
    total = slow_app(bank, 4)
    first = workers(TASKS_BACKEND="rq", REDIS_URL=REDIS_URL)
    job = jobs.job_submit(kind="evaluate_app", owner=user, app=bank)
    first.wait_for_progress(job.pk, total)
    first.kill()
    assert Job.objects.get(pk=job.pk).status == "running"  # as the dead worker left it
    second = workers(TASKS_BACKEND="rq", REDIS_URL=REDIS_URL)
    second.wait_for(f"recovered job {job.pk}")
    second.wait_for(f"job {job.pk} (evaluate_app) succeeded")
    job.refresh_from_db()
    assert job.attempts == 2 and job.progress_done == total
    keys = list(JobItem.objects.filter(job=job).values_list("key", flat=True))
    assert len(keys) == total == len(set(keys))
    assert ScenarioResult.objects.filter(scenario__agent__app=bank).count() == total
