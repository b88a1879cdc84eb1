"""Where the queue's task used to live: tasks enqueued as ``agents.tasks.run_job`` before
it moved beside the jobs it runs (`agents.services.jobs.run_job`) still find it here."""

from agents.services.jobs import run_job

__all__ = ["run_job"]
