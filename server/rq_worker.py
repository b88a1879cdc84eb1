"""The RQ worker class `manage.py worker` runs with ``TASKS_BACKEND=rq`` (docs/operations/jobs.md).

RQ's default worker forks a *work horse* per job, so whatever a job leaves in the process
(the warm sandbox sessions of `sandbox_door.SessionPool`) dies with the horse. `WarmWorker`
is RQ's `SimpleWorker` (each job in the worker's own process, no fork), so the pool the
worker set up at start serves job after job, as on the database queue.

What that changes, and why it is safe:

* The job runs under the worker's own pid, which `jobs.job_run` records as the job's
  ``worker``; a worker killed mid-job (SIGKILL, OOM, a lost machine) leaves the job
  ``running`` with that pid gone and its heartbeat stopping, and `jobs.jobs_recover`
  (every worker at start and then every half ``JOBS_STALE_SECONDS``, and any read of
  the job) queues it again or fails it with the reason, exactly as before. Run the
  workers under a supervisor that restarts them (systemd ``Restart=always``).
* RQ's job timeout still applies (a SIGALRM in the worker, the main thread) and ends in
  the job's own failure; each job's own caps (``JOBS_MAX_*``) come first.
* Django's database connections outlive a job here, as they outlive a request in
  gunicorn: like a request, each job starts and ends with `close_old_connections`, so a
  connection the database dropped (or older than ``CONN_MAX_AGE``) is not reused.
"""

from __future__ import annotations

from typing import Any

from django.db import close_old_connections
from rq.worker import SimpleWorker


class WarmWorker(SimpleWorker):
    """An RQ worker that runs each job in its own process, keeping warm sandbox sessions."""

    def execute_job(self, job: Any, queue: Any) -> None:
        close_old_connections()
        try:
            super().execute_job(job, queue)
        finally:
            close_old_connections()
