"""The job workers seen (docs/operations/jobs.md): each worker's heartbeat row (`/healthz`,
the admin, the designer's "no worker is running"), and whether a worker of this host is
gone (`jobs.jobs_recover`)."""

from __future__ import annotations

import os
import socket
from datetime import timedelta

from django.utils import timezone

from agents.core.diagnostics import Message
from agents.models import Job, JobStatus, WorkerHeartbeat
from agents.services.common import setting

# A worker whose heartbeat is older than this is not counted as seen (/healthz, the designer).
WORKER_SEEN_SECONDS = 60.0


def this_worker() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _worker_gone(worker: str) -> bool:
    """True when `worker` ran on this host and its process is gone."""
    host, _, pid = worker.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def worker_beat(worker: str, *, queue: str = "", stopped: bool = False) -> None:
    """Write the worker's heartbeat row (`manage.py worker`, at start, every
    ``JOBS_HEARTBEAT_SECONDS`` and at exit with `stopped`)."""
    now = timezone.now()
    updated = WorkerHeartbeat.objects.filter(worker=worker).update(seen_at=now, stopped=stopped)
    if not updated:
        WorkerHeartbeat.objects.update_or_create(
            worker=worker,
            defaults={"queue": queue, "started_at": now, "seen_at": now, "stopped": stopped},
        )


def workers_seen(seconds: float = WORKER_SEEN_SECONDS) -> list[WorkerHeartbeat]:
    """The workers whose heartbeat is at most `seconds` old and that did not say they stopped."""
    since = timezone.now() - timedelta(seconds=seconds)
    return list(WorkerHeartbeat.objects.filter(seen_at__gte=since, stopped=False))


def forget_old_workers(days: float = 7) -> int:
    """Delete heartbeat rows older than `days` (workers long gone)."""
    since = timezone.now() - timedelta(days=days)
    return WorkerHeartbeat.objects.filter(seen_at__lt=since).delete()[0]


def queue_wait(job: Job) -> Message | None:
    """What the designer says of a job that has waited in the queue longer than a worker
    takes to pick it up (``JOBS_PICKUP_SECONDS``): no worker seen (with the fix), or every
    worker busy. None while it is not late (or not queued)."""
    if job.status != JobStatus.QUEUED:
        return None
    since = job.queued_at or job.created_at
    waited = (timezone.now() - since).total_seconds()
    if waited < float(setting("JOBS_PICKUP_SECONDS")):
        return None
    if not workers_seen():
        return Message(
            "Waiting for %(seconds)s s: no job worker is running. Start one (make worker, or "
            "manage.py worker under a supervisor) and this job runs.",
            seconds=int(waited),
        )
    return Message(
        "Waiting for %(seconds)s s: every job worker is busy; this job runs when one is free.",
        seconds=int(waited),
    )
