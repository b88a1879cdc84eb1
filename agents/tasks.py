"""The task the queue carries (Django's Tasks framework, ``TASKS``): a job's id.

The job itself (kind, parameters, progress, result) lives in the database
(`agents.models.Job`); the worker runs it through `agents.services.jobs.job_run`.
"""

from __future__ import annotations

from django.tasks import task


@task
def run_job(job_id: str) -> None:
    from agents.services.jobs import job_run

    job_run(job_id)
