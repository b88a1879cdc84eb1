"""Jobs: long work (Run all, evaluate, the version diff's scenarios, large imports) run by a
worker, not in the web request (docs/operations/jobs.md).

A request calls `job_submit`: a `Job` row is written and its id is enqueued on Django's
Tasks framework (``run_job`` below; the backend is ``TASKS_BACKEND``: the database
queue by default, RQ on Redis to spread workers over machines). A worker calls `job_run`,
which claims the job (one conditional UPDATE: a job never runs twice at once), runs its
kind's function and stores the outcome. The row is the truth the page and the API read:
status, progress, the current piece, the result, the error; the queue agrees with it (a
job that ends failed fails its task, `JobFailed`). Messages (the error, the current piece)
are stored as their template and parameters beside the English (`Job.error_data`,
`Job.current_data`) and shown in the reader's language when read.

Job kinds are pluggable: `register(name, run=...)` adds one; `run(ctx)` gets a
`JobContext` (the job, its caps, the bounded-runner stop hook, progress, idempotent items)
and returns the result (JSON). Every piece of work a kind stores goes through
`JobContext.item(key, ...)`, written once per (job, key): a job retried after its worker
died skips the pieces already done and never stores one twice.

A worker killed mid-job (SIGKILL, a lost machine) leaves the job "running" with a stale
heartbeat; `jobs_recover` (run by every worker at start and then periodically, and by a
read of the job) queues it again, up to ``JOBS_MAX_ATTEMPTS`` runs, then marks it failed
with the reason. Never lost silently, never run twice to a double write.

A queued job whose queue entry is gone (Redis restarted without its data, a task the
queue failed before it could claim the row) is enqueued again by `jobs_reap`, in the same
loop, once it has waited ``JOBS_REQUEUE_SECONDS``. A transient error (the database or
Redis unreachable, a full disk, a lock timeout) is not the job's fault: the attempt ends,
and the job is queued again after a backoff (``JOBS_RETRY_BACKOFF_SECONDS``, doubling), up
to ``JOBS_MAX_ATTEMPTS``; what the user reads names the kind of problem in their language,
never the raw error (host names, internal paths). The claim and the final write of a job
are retried on a database error (`db_retry`).

This module is the entry point every caller imports from; the concerns beside it live in
`job_context` (what a kind runs with: `JobContext`, `JobStopped`), `job_faults` (transient
errors, `db_retry`) and `job_workers` (the workers seen), re-exported here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db import models, transaction
from django.db.models import F
from django.tasks import task
from django.utils import timezone
from django.utils.translation import gettext_noop

from agents.core import rules
from agents.core.diagnostics import Message
from agents.i18n import localize, localized_data
from agents.models import (
    JOB_ACTIVE,
    JOB_FINISHED,
    AgentApp,
    Job,
    JobItem,
    JobStatus,
    message_columns,
)
from agents.services.common import Actor, setting

# The job's own concerns, one module each; imported from here by every caller.
from agents.services.job_context import (  # noqa: F401
    CANCEL_POLL_SECONDS,
    JobContext,
    JobStopped,
    partial_result,
)
from agents.services.job_faults import (  # noqa: F401
    _FAILED,
    _RETRIED,
    PROBLEM_CONNECTION,
    PROBLEM_DATABASE,
    PROBLEM_DISK,
    PROBLEM_LOCK,
    PROBLEM_QUEUE,
    db_retry,
    transient_problem,
)
from agents.services.job_workers import (  # noqa: F401
    WORKER_SEEN_SECONDS,
    _worker_gone,
    forget_old_workers,
    queue_wait,
    this_worker,
    worker_beat,
    workers_seen,
)

logger = logging.getLogger("agents.jobs")

# The words a job's own progress text (`current`) is made of: stored as a `Message` (its
# English text and its template, `Job.current_data`), shown in the reader's language.
# Anything else there is data (a scenario's name, the model's text so far).
PROGRESS_READING = gettext_noop("reading %(file)s")
PROGRESS_DIFF = gettext_noop("simulating the scenarios of both sides")


# ---------------------------------------------------------------- kinds


@dataclass(frozen=True)
class JobKind:
    """A kind of job: `run(ctx)` does the work and returns the result (JSON)."""

    name: str
    run: Callable[[JobContext], Any]
    label: str = ""  # may be lazy (gettext_lazy): shown in the reader's language
    # How a worker runs a job of this kind it takes from the queue (default `job_run`): a
    # Run all's piece takes its queued siblings too, several at once (evaluation_runs).
    from_queue: Callable[[str], Any] | None = None


KINDS: dict[str, JobKind] = {}


def register(
    name: str,
    *,
    run: Callable[[JobContext], Any],
    label: str = "",
    from_queue: Callable[[str], Any] | None = None,
) -> JobKind:
    """Add a kind of job (e.g. the live-model runs): `job_submit(kind=name, ...)` then runs
    `run(ctx)` in a worker. Register at import of a module that `agents.apps` loads."""
    kind = JobKind(name, run, label or name.replace("_", " "), from_queue)
    KINDS[name] = kind
    return kind


def job_kind_label(name: str) -> str:
    """A kind's label in the reader's language (the admin's Jobs); an unknown kind: its name."""
    kind = KINDS.get(name)
    return str(kind.label) if kind is not None else name


def job_kind(name: str) -> JobKind:
    # The built-in kinds are registered by agents.services.job_kinds, which agents.apps loads.
    if name not in KINDS:
        raise ValueError(f"No job kind {name!r}; known: {', '.join(sorted(KINDS))}.")
    return KINDS[name]


# ---------------------------------------------------------------- errors


class JobLimitError(Exception):
    """The user has as many queued and running jobs as ``JOBS_MAX_ACTIVE_PER_USER`` allows."""

    def __init__(self, active: int, limit: int) -> None:
        self.active = active
        self.limit = limit
        self.message = Message(
            "Too many jobs: you have %(active)s queued or running, and at most %(limit)s are "
            "allowed at once (JOBS_MAX_ACTIVE_PER_USER=%(limit)s). Wait for one to finish, "
            "or cancel one.",
            active=active,
            limit=limit,
        )
        super().__init__(self.message)

    def localized(self) -> str:
        """The message in the reader's language (`str(error)` is English)."""
        return localize(self.message)


# ---------------------------------------------------------------- submit, cancel


def default_caps() -> dict[str, Any]:
    return {
        "max_steps": int(setting("SIMULATION_MAX_STEPS")),
        "max_code_calls": int(setting("JOBS_MAX_CODE_CALLS")),
        "max_seconds": float(setting("JOBS_MAX_SECONDS")),
        "max_model_calls": int(setting("JOBS_MAX_MODEL_CALLS")),
        "max_tokens": int(setting("JOBS_MAX_TOKENS")),
    }


def job_submit(
    *,
    kind: str,
    owner: Actor,
    app: AgentApp | None = None,
    params: dict[str, Any] | None = None,
    caps: dict[str, Any] | None = None,
    reuse: bool = False,
    enqueue: bool = True,
) -> Job:
    """Write a queued job and enqueue it (after the transaction commits).

    Refused with `JobLimitError` when the owner already has ``JOBS_MAX_ACTIVE_PER_USER``
    jobs queued or running. `reuse`: an unfinished or succeeded job of the same kind, app,
    parameters and app revision by the same owner is returned instead of a new one (the
    version diff's page reloaded). `enqueue` False: the caller runs it itself
    (`manage.py evaluate`)."""
    job_kind(kind)
    params = dict(params or {})
    if app is not None:
        params.setdefault("app_revision", app.revision)
    user = owner if owner is not None and owner.pk else None
    with transaction.atomic():
        if user is not None:
            # One submission at a time per user: the count below cannot race.
            get_user_model().objects.select_for_update().filter(pk=user.pk).first()
            if reuse:
                found = (
                    Job.objects.filter(kind=kind, owner=user, app=app, params=params)
                    .exclude(status__in=(JobStatus.FAILED, JobStatus.CANCELLED))
                    .order_by("-created_at")
                    .first()
                )
                if found is not None:
                    return found
            # A Run all's pieces (its child jobs) count as their parent, once.
            active = Job.objects.filter(
                owner=user, status__in=JOB_ACTIVE, parent__isnull=True
            ).count()
            limit = int(setting("JOBS_MAX_ACTIVE_PER_USER"))
            if active >= limit:
                raise JobLimitError(active, limit)
        job = Job.objects.create(
            kind=kind,
            owner=user,
            app=app,
            params=params,
            caps={**default_caps(), **(caps or {})},
            queued_at=timezone.now(),
        )
        if enqueue:
            transaction.on_commit(lambda: job_enqueue(job.pk))
    return job


class JobFailed(Exception):
    """Raised by the queue's task (`run_job`) once the job's row says failed, so the queue's
    own status says it too (django-tasks' ``FAILED``, RQ's failed registry): the job, its
    kind and its reason, in English for the operator (the row keeps it for every reader)."""

    def __init__(self, job: Job) -> None:
        self.job_id = str(job.pk)
        self.reason = job.error
        super().__init__(f"job {job.pk} ({job.kind}) failed: {job.error}")


@task
def run_job(job_id: str) -> None:
    """The task the queue carries (Django's Tasks framework, ``TASKS``): a job's id. The
    job itself (kind, parameters, progress, result) lives in the database. A piece of one
    user's Run all gives its turn to another user's waiting work (`yields_turn`).

    One truth per job: when the row ends failed, the task raises `JobFailed` after the row
    is recorded, so the queue marks the task failed too (a worker goes on to the next, as
    after any task's error). Succeeded and cancelled jobs end the task successfully (a
    Cancel is what the user asked; the queue has no cancelled state), and so does an
    attempt queued again after a transient error (its retry is a new task)."""
    if yields_turn(job_id):
        job_enqueue(job_id, delay=float(setting("JOBS_YIELD_SECONDS")))
        return
    name = Job.objects.filter(pk=job_id).values_list("kind", flat=True).first()
    kind = KINDS.get(name or "")
    if kind is not None and kind.from_queue is not None:
        kind.from_queue(job_id)
    else:
        job_run(job_id)
    raise_if_failed(job_id)


def raise_if_failed(job_id: Any) -> None:
    """`JobFailed` when the job's row says failed (read after the run: the run of this task,
    or of the worker that took it with its siblings before this task came)."""
    job = db_retry(
        lambda: Job.objects.filter(pk=job_id).only("pk", "kind", "status", "error").first()
    )
    if job is not None and job.status == JobStatus.FAILED:
        raise JobFailed(job)


def yields_turn(job_id: Any) -> bool:
    """The fair queue: a piece of a fanned-out job (``Job.parent``) taken from the queue
    while its owner already has ``JOBS_MAX_RUNNING_PER_USER`` pieces running and another
    user's job waits is put back on the queue, so one user's thousand pieces never hold
    every worker (per-user concurrency, yielding only when someone else waits). The parent
    still runs its own pieces in its threads; this only bounds what the queue hands out."""
    job = Job.objects.filter(pk=job_id, status=JobStatus.QUEUED).values("owner_id", "parent_id")
    row = job.first()
    if row is None or row["parent_id"] is None or row["owner_id"] is None:
        return False
    limit = int(setting("JOBS_MAX_RUNNING_PER_USER"))
    if limit <= 0:
        return False
    running = Job.objects.filter(
        owner_id=row["owner_id"], status=JobStatus.RUNNING, parent__isnull=False
    ).count()
    if running < limit:
        return False
    others = Job.objects.filter(status=JobStatus.QUEUED).exclude(owner_id=row["owner_id"])
    return others.exists()


def job_enqueue(job_id: Any, *, delay: float = 0.0) -> bool:
    """Put the job's id on the queue (after `delay` seconds where the backend can defer)
    and record the queue's id. A queue that refuses (Redis down) leaves the job queued
    without a task id: `jobs_reap` enqueues it again once the queue is back."""
    task = run_job
    if delay > 0 and task.get_backend().supports_defer:
        task = task.using(run_after=timezone.now() + timedelta(seconds=delay))
    try:
        result = task.enqueue(str(job_id))
    except Exception:  # the queue is unreachable: the reaper tries again
        logger.exception("job %s: the queue refused it; the reaper enqueues it again", job_id)
        return False
    task_id = str(result.id)[: rules.TASK_ID_MAX_LENGTH]
    Job.objects.filter(pk=job_id, status=JobStatus.QUEUED).update(task_id=task_id)
    return True


@transaction.atomic
def job_cancel(*, job: Job) -> Job:
    """Cancel a job: a queued one at once; a running one stops at its next code call or
    scenario (its finished pieces are kept). A finished job is left as it is."""
    now = timezone.now()
    queued = Job.objects.filter(pk=job.pk, status=JobStatus.QUEUED)
    if not queued.update(
        status=JobStatus.CANCELLED,
        finished_at=now,
        **message_columns("current", ""),
        **message_columns("error", Message("Cancelled before it ran.")),
    ):
        Job.objects.filter(pk=job.pk, status=JobStatus.RUNNING).update(cancel_requested=True)
    pieces_cancel(job)
    return Job.objects.get(pk=job.pk)


def pieces_cancel(job: Job) -> None:
    """Cancel a fanned-out job's unfinished pieces (``evaluation_runs``): the queued at
    once, the running at their next call."""
    pieces = Job.objects.filter(parent=job)
    pieces.filter(status=JobStatus.QUEUED).update(
        status=JobStatus.CANCELLED,
        finished_at=timezone.now(),
        **message_columns("current", ""),
        **message_columns("error", Message("Cancelled.")),
    )
    pieces.filter(status=JobStatus.RUNNING).update(cancel_requested=True)


def job_run(job_id: str, *, worker: str | None = None) -> Job | None:
    """Claim the job and run it (the task's body). None when it is not queued any more
    (cancelled, or claimed by another worker): nothing runs twice."""
    worker = worker or this_worker()

    def claim() -> int:
        now = timezone.now()
        return Job.objects.filter(pk=job_id, status=JobStatus.QUEUED).update(
            status=JobStatus.RUNNING,
            worker=worker,
            attempts=F("attempts") + 1,
            started_at=now,
            heartbeat_at=now,
            **message_columns("error", ""),
        )

    if not db_retry(claim, what=f"job {job_id}: claim"):
        return None
    job = db_retry(lambda: Job.objects.select_related("app", "owner").get(pk=job_id))
    ctx = JobContext(job, worker)
    logger.info("job %s (%s) started by %s, attempt %s", job.pk, job.kind, worker, job.attempts)
    status, result, error = JobStatus.SUCCEEDED, None, ""
    try:
        result = job_kind(job.kind).run(ctx)
        if ctx.cancelled:
            status, error = JobStatus.CANCELLED, Message("Cancelled.")
    except JobStopped as stop:
        status, error, result = stop.status, stop.reason, stop.result
    except Exception as exc:  # the job fails with the reason; the worker goes on
        problem = transient_problem(exc)
        if problem is not None:
            logger.warning("job %s (%s): a transient error: %r", job.pk, job.kind, exc)
            return _after_transient(job, ctx, problem)
        logger.exception("job %s (%s) failed", job.pk, job.kind)
        status, error = JobStatus.FAILED, failure_message(exc)
    if result is None and status != JobStatus.SUCCEEDED:
        result = db_retry(lambda: partial_result(job, ctx))
    finished = timezone.now()
    db_retry(
        lambda: ctx._mine().update(
            status=status,
            result=result,
            finished_at=finished,
            **message_columns("error", error),
            **message_columns("current", ""),
        ),
        what=f"job {job.pk}: its outcome",
    )
    logger.info("job %s (%s) %s", job.pk, job.kind, status)
    db_retry(job.refresh_from_db)
    return job


def failure_message(exc: BaseException) -> str:
    """What a job that raised `exc` says: the error's class and its message (a `Message`
    the raiser wrote is kept, so it reads in the reader's language; other text is data)."""
    reason = exc.args[0] if len(exc.args) == 1 and isinstance(exc.args[0], Message) else str(exc)
    return Message("%(error)s: %(reason)s", error=type(exc).__name__, reason=reason)


def _after_transient(job: Job, ctx: JobContext, problem: str) -> Job:
    """The attempt ended on a transient problem: queue the job again after a backoff, or
    after ``JOBS_MAX_ATTEMPTS`` runs fail it, naming the problem (never the raw error)."""
    max_attempts = int(setting("JOBS_MAX_ATTEMPTS"))
    if job.attempts < max_attempts and not ctx.cancelled:
        delay = float(setting("JOBS_RETRY_BACKOFF_SECONDS")) * 2 ** (job.attempts - 1)
        message = Message(_RETRIED[problem], attempt=job.attempts, seconds=f"{delay:g}")
        fields = {"status": JobStatus.QUEUED, "worker": "", "task_id": ""}
        fields |= message_columns("current", "") | message_columns("error", message)
        moved = db_retry(
            lambda: ctx._mine().update(**fields, queued_at=timezone.now()),
            what=f"job {job.pk}: queue again",
        )
        if moved:
            logger.warning("job %s: queued again in %g s", job.pk, delay)
            job_enqueue(job.pk, delay=delay)
    else:
        message = Message(_FAILED[problem], attempt=job.attempts, max_attempts=max_attempts)
        status = JobStatus.CANCELLED if ctx.cancelled else JobStatus.FAILED
        result = db_retry(lambda: partial_result(job, ctx))
        db_retry(
            lambda: ctx._mine().update(
                status=status,
                result=result,
                finished_at=timezone.now(),
                **message_columns("error", message),
                **message_columns("current", ""),
            ),
            what=f"job {job.pk}: its outcome",
        )
        logger.info("job %s (%s) %s", job.pk, job.kind, status)
    db_retry(job.refresh_from_db)
    return job


# ---------------------------------------------------------------- recovery


def jobs_recover(jobs: Iterable[Job] | None = None) -> list[Job]:
    """Running jobs whose worker is gone (its process on this host has exited, or no
    heartbeat for ``JOBS_STALE_SECONDS``): queue each again, or after
    ``JOBS_MAX_ATTEMPTS`` runs mark it failed with the reason. Returns those touched."""
    stale_before = timezone.now() - timedelta(seconds=float(setting("JOBS_STALE_SECONDS")))
    candidates = (
        list(jobs) if jobs is not None else list(Job.objects.filter(status=JobStatus.RUNNING))
    )
    touched: list[Job] = []
    max_attempts = int(setting("JOBS_MAX_ATTEMPTS"))
    for job in candidates:
        if job.status != JobStatus.RUNNING:
            continue
        beat = job.heartbeat_at or job.started_at or job.created_at
        if not (_worker_gone(job.worker) or beat < stale_before):
            continue
        lost = Job.objects.filter(pk=job.pk, status=JobStatus.RUNNING, worker=job.worker)
        why = f"its worker ({job.worker}) stopped during attempt {job.attempts}"  # the log's
        if job.attempts < max_attempts and not job.cancel_requested:
            retried = Message(
                "Retried: its worker (%(worker)s) stopped during attempt %(attempt)s.",
                worker=job.worker,
                attempt=job.attempts,
            )
            again = {
                "worker": "",
                "task_id": "",
                "queued_at": timezone.now(),
                **message_columns("current", ""),
                **message_columns("error", retried),
            }
            if lost.update(status=JobStatus.QUEUED, **again):
                logger.warning("job %s: %s; queued again", job.pk, why)
                transaction.on_commit(lambda pk=job.pk: job_enqueue(pk))
                touched.append(job)
        else:
            status = JobStatus.CANCELLED if job.cancel_requested else JobStatus.FAILED
            message = Message(
                "The job failed: its worker (%(worker)s) stopped during attempt %(attempt)s of "
                "%(max_attempts)s (JOBS_MAX_ATTEMPTS). The scenarios it finished are kept; run it "
                "again for the rest.",
                worker=job.worker,
                attempt=job.attempts,
                max_attempts=max_attempts,
            )
            ended = message_columns("current", "") | message_columns("error", message)
            if lost.update(status=status, finished_at=timezone.now(), **ended):
                logger.warning("job %s: %s; marked %s", job.pk, why, status)
                touched.append(job)
    return touched


def _queue_has(task_id: str) -> bool:
    """True when the queue still holds the task (waiting, deferred or running); False when
    it is gone (Redis lost it) or finished without the job running (failed in the queue)."""
    try:
        found = run_job.get_backend().get_result(task_id)
    except Exception as exc:
        if type(exc).__name__ == "TaskResultDoesNotExist":  # django.tasks' or django_tasks'
            return False
        raise
    status = getattr(found.status, "value", found.status)
    return str(status).upper() in ("READY", "RUNNING")


def jobs_reap() -> list[Job]:
    """Queued jobs whose queue entry is gone, queued for ``JOBS_REQUEUE_SECONDS`` or more:
    enqueue each again (the database queue and RQ alike). Run in every worker's loop.
    While the queue itself is unreachable, nothing is enqueued (logged; the next round
    tries again)."""
    since = timezone.now() - timedelta(seconds=float(setting("JOBS_REQUEUE_SECONDS")))
    waiting = Job.objects.filter(status=JobStatus.QUEUED).filter(
        models.Q(queued_at__lte=since) | models.Q(queued_at__isnull=True, created_at__lte=since)
    )
    touched: list[Job] = []
    for job in waiting.only("pk", "task_id", "kind"):
        if job.task_id and _queue_has(job.task_id):
            continue
        again = Job.objects.filter(pk=job.pk, status=JobStatus.QUEUED, task_id=job.task_id)
        if again.update(task_id="", queued_at=timezone.now()) and job_enqueue(job.pk):
            logger.warning(
                "job %s: its queue entry %s is gone; enqueued again", job.pk, job.task_id or "-"
            )
            touched.append(job)
    return touched


# ---------------------------------------------------------------- reads


def job_for_user(user: Actor, job_id: Any) -> Job:
    """The job, when `user` submitted it and may still see its app; Job.DoesNotExist
    otherwise (a share removed ends the reading of its jobs; operators see every job in
    the admin). A running job whose worker is gone is recovered first."""
    from agents.selectors import app_access

    if user is None or not user.pk:
        raise Job.DoesNotExist
    job = Job.objects.select_related("app").get(pk=job_id, owner=user)
    if job.app is not None and app_access(user, job.app) is None:
        raise Job.DoesNotExist
    if job.status == JobStatus.RUNNING and jobs_recover([job]):
        job.refresh_from_db()
    return job


def job_data(job: Job, *, url: str = "") -> dict[str, Any]:
    """The job as the API and the page show it (`result.scenarios` fill in as they
    finish; the whole result once the job succeeded)."""
    result = job.result
    if result is None and job.status in JOB_ACTIVE:
        items = [item.data for item in JobItem.objects.filter(job=job)]
        result = {"scenarios": items} if items else None
    return {
        "id": str(job.pk),
        "kind": job.kind,
        "url": url,
        "status": job.status,
        "progress": {"done": job.progress_done, "total": job.progress_total},
        "current": localize(job.current_message),  # in the reader's language
        "result": localized_data(result),
        "error": localize(job.error_message),
        "attempts": job.attempts,
        "caps": job.caps,
        "created_at": job.created_at,
        "started_at": job.started_at,
        "finished_at": job.finished_at,
    }


def is_finished(job: Job) -> bool:
    return job.status in JOB_FINISHED
