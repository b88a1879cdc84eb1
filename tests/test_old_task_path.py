"""A task queued under the queue's old path (``agents.tasks.run_job``, before the task moved
beside the jobs it runs) still runs: reading a queue entry imports its task's path (the
worker, and the reaper asking whether the entry still waits), so the old path is kept
(``agents/tasks.py``)."""

from __future__ import annotations

import pytest

from agents.models import JobStatus
from agents.services import jobs

pytestmark = pytest.mark.django_db

OLD_PATH = "agents.tasks.run_job"


def _work(task_id: str) -> None:
    """What ``manage.py worker`` (django-tasks-db's ``db_worker``) does with one entry."""
    from django_tasks_db.management.commands.db_worker import Worker
    from django_tasks_db.models import DBTaskResult

    worker = Worker(
        queue_names=["default"],
        interval=0,
        batch=True,
        backend_name="default",
        startup_delay=False,
        max_tasks=1,
        worker_id="test-worker",
        excluded_queue_names=[],
    )
    entry = DBTaskResult.objects.get(pk=task_id)
    entry.claim(worker.worker_id)
    worker.run_task(entry)


def test_a_job_queued_under_the_old_task_path_is_seen_by_the_reaper_and_runs(
    user, bank, django_capture_on_commit_callbacks
):
    from django_tasks_db.models import DBTaskResult

    with django_capture_on_commit_callbacks(execute=True):
        job = jobs.job_submit(kind="evaluate_app", owner=user, app=bank)
    job.refresh_from_db()
    DBTaskResult.objects.filter(pk=job.task_id).update(task_path=OLD_PATH)

    assert jobs._queue_has(job.task_id)  # the reaper reads it: still waiting, not lost
    _work(job.task_id)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED
