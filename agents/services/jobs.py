"""Jobs: long work (Run all, evaluate, the version diff's scenarios, large imports) run by a
worker, not in the web request (docs/operations/jobs.md).

A request calls `job_submit`: a `Job` row is written and its id is enqueued on Django's
Tasks framework (``run_job`` below; the backend is ``TASKS_BACKEND``: the database
queue by default, RQ on Redis to spread workers over machines). A worker calls `job_run`,
which claims the job (one conditional UPDATE: a job never runs twice at once), runs its
kind's function and stores the outcome. The row is the truth the page and the API read:
status, progress, the current piece, the result, the error.

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
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import socket
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db import (
    IntegrityError,
    InterfaceError,
    OperationalError,
    connection,
    models,
    transaction,
)
from django.db.models import F
from django.tasks import task
from django.utils import timezone
from django.utils.translation import gettext_noop

from agents.core import rules
from agents.core.diagnostics import Message
from agents.i18n import localize, localized_data, recovered_message
from agents.models import (
    JOB_ACTIVE,
    JOB_FINISHED,
    AgentApp,
    Job,
    JobItem,
    JobStatus,
    WorkerHeartbeat,
)
from agents.services.common import Actor, setting
from agents.services.sandbox_door import BoundedRunner, JobCaps, job_runner

logger = logging.getLogger("agents.jobs")

# The words a job's own progress text (`current`) is made of: it is stored as English (a
# short text column, read by the API and the page), and shown in the reader's language by
# `shown_current`. Anything else there is data (a scenario's name, the model's text so far).
PROGRESS_READING = gettext_noop("reading %(file)s")
PROGRESS_DIFF = gettext_noop("simulating the scenarios of both sides")
_PROGRESS = tuple(
    (template, re.compile(re.escape(template).replace(re.escape("%(file)s"), "(?P<file>.+)"), re.S))
    for template in (PROGRESS_READING, PROGRESS_DIFF)
)


def shown_current(text: str) -> str:
    """A job's `current` in the reader's language when a job's own words wrote it."""
    for template, pattern in _PROGRESS:
        match = pattern.fullmatch(text or "")
        if match is not None:
            return localize(Message(template, **match.groupdict()))
    return text


# A worker whose heartbeat is older than this is not counted as seen (/healthz, the designer).
WORKER_SEEN_SECONDS = 60.0
# How often a running job reads its row for a cancel request (and writes its heartbeat).
CANCEL_POLL_SECONDS = 0.25


def this_worker() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


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


class JobStopped(Exception):
    """Raised inside a job's run: cancelled, or past one of the job's own caps."""

    def __init__(self, status: str, reason: str, result: Any = None) -> None:
        self.status = status
        self.reason = reason
        self.result = result  # what the job's result says of it (a refused import's report)
        super().__init__(reason)


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


@task
def run_job(job_id: str) -> None:
    """The task the queue carries (Django's Tasks framework, ``TASKS``): a job's id. The
    job itself (kind, parameters, progress, result) lives in the database. A piece of one
    user's Run all gives its turn to another user's waiting work (`yields_turn`)."""
    if yields_turn(job_id):
        job_enqueue(job_id, delay=float(setting("JOBS_YIELD_SECONDS")))
        return
    name = Job.objects.filter(pk=job_id).values_list("kind", flat=True).first()
    kind = KINDS.get(name or "")
    if kind is not None and kind.from_queue is not None:
        kind.from_queue(job_id)
        return
    job_run(job_id)


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
        current="",
        error=Message("Cancelled before it ran."),
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
        current="",
        error=Message("Cancelled."),
    )
    pieces.filter(status=JobStatus.RUNNING).update(cancel_requested=True)


# ---------------------------------------------------------------- the worker's side


class JobContext:
    """What a kind's `run` gets: its job, caps, progress, items, the stop hook, and the
    bounded runner its simulations run on (`runner`, lent by `lending` for the whole run:
    the job's caps and cancel hook on every code call and model call; a kind cannot open
    a runner of its own, ``sandbox_door.OwnRunnerRefused``)."""

    def __init__(self, job: Job, worker: str, clock: Callable[[], float] = time.monotonic):
        self.job = job
        self.worker = worker
        self.clock = clock
        caps = job.caps or {}
        self.caps = JobCaps(
            max_code_calls=caps.get("max_code_calls"),
            max_seconds=caps.get("max_seconds"),
            max_model_calls=caps.get("max_model_calls"),
            max_tokens=caps.get("max_tokens"),
            started=clock(),
        )
        self.cancelled = False
        # A live run asks for a Cancel before every model and tool call (`stop_now`), not
        # every ``CANCEL_POLL_SECONDS`` (a model's answer takes seconds: one small query).
        self.every_call = False
        self._runner: BoundedRunner | None = None
        self._polled = float("-inf")
        self._beat = clock()

    # The runner ---------------------------------------------------------------

    @property
    def owner(self) -> str:
        """Whose run it is, for the warm session pool (a session never serves two users)."""
        return f"user:{self.job.owner_id}" if self.job.owner_id else "command"

    @contextlib.contextmanager
    def lending(self) -> Iterator[JobContext]:
        """While the kind runs: its bounded runner (`runner`), with the job's caps and
        cancel hook (`cancel_hook`)."""
        with job_runner(caps=self.caps, should_stop=self.cancel_hook, owner=self.owner) as lent:
            self._runner = lent
            try:
                yield self
            finally:
                self._runner = None

    @property
    def runner(self) -> BoundedRunner:
        """The bounded runner the job lends its kind (see `lending`)."""
        if self._runner is None:
            raise RuntimeError("a job's runner is lent while its kind runs (JobContext.lending)")
        return self._runner

    def cancel_hook(self) -> str:
        """What the runner asks before each code call and model call: `stop_now` for a live
        run (`every_call`), else `should_stop`."""
        return self.stop_now() if self.every_call else self.should_stop()

    # Progress and heartbeat -------------------------------------------------

    def _mine(self) -> Any:
        return Job.objects.filter(pk=self.job.pk, status=JobStatus.RUNNING, worker=self.worker)

    def progress(
        self, *, done: int | None = None, total: int | None = None, current: str | None = None
    ) -> None:
        fields: dict[str, Any] = {"heartbeat_at": timezone.now()}
        if done is not None:
            fields["progress_done"] = self.job.progress_done = done
            of = total if total is not None else self.job.progress_total
            logger.info("job %s: %s of %s done", self.job.pk, done, of)
        if total is not None:
            fields["progress_total"] = self.job.progress_total = total
        if current is not None:
            fields["current"] = self.job.current = current[: rules.JOB_CURRENT_MAX_LENGTH]
        self._mine().update(**fields)
        self._beat = self.clock()

    def should_stop(self) -> str:
        """ "" to go on; else why to stop (the bounded runner refuses the call with it)."""
        now = self.clock()
        if self.cancelled:
            return Message("the job was cancelled")
        if now - self._polled >= CANCEL_POLL_SECONDS:
            self._polled = now
            row = Job.objects.filter(pk=self.job.pk).values("cancel_requested", "status").first()
            if row is None or row["cancel_requested"] or row["status"] != JobStatus.RUNNING:
                self.cancelled = True
                return Message("the job was cancelled")
        if now - self._beat >= float(setting("JOBS_HEARTBEAT_SECONDS")):
            self._mine().update(heartbeat_at=timezone.now())
            self._beat = now
        return ""

    def stop_now(self) -> str:
        """`should_stop` reading the row every time, not every ``CANCEL_POLL_SECONDS``: the
        check before each model call and tool call of a live run (one small query beside a
        model's seconds), so a Cancel stops it at the end of the current call."""
        self._polled = float("-inf")
        return self.should_stop()

    def check(self) -> None:
        """Between pieces: stop when cancelled or past one of the job's caps (its time, its
        code calls, its model calls and tokens)."""
        self._polled = float("-inf")
        if self.should_stop():
            raise JobStopped(JobStatus.CANCELLED, "Cancelled.")
        caps = self.caps
        reason = ""
        if caps.max_seconds is not None and self.clock() - caps.started >= caps.max_seconds:
            reason = Message(
                "The job reached its time cap of %(seconds)s s (JOBS_MAX_SECONDS)",
                seconds=f"{caps.max_seconds:g}",
            )
        elif caps.max_code_calls is not None and caps.code_calls >= caps.max_code_calls:
            reason = Message(
                "The job reached its cap of %(count)s code calls (JOBS_MAX_CODE_CALLS)",
                count=caps.max_code_calls,
            )
        elif caps.max_model_calls is not None and caps.model_calls >= caps.max_model_calls:
            reason = Message(
                "The job reached its cap of %(count)s model calls (JOBS_MAX_MODEL_CALLS)",
                count=caps.max_model_calls,
            )
        elif caps.max_tokens is not None and caps.tokens >= caps.max_tokens:
            reason = Message(
                "The job reached its cap of %(count)s tokens (JOBS_MAX_TOKENS)",
                count=caps.max_tokens,
            )
        if not reason:
            return
        done, total = self.job.progress_done, self.job.progress_total
        if total:  # a job of pieces (scenarios): how far it got
            reason = Message(
                "%(reason)s after %(done)s of %(total)s.", reason=reason, done=done, total=total
            )
        else:
            reason = Message("%(reason)s.", reason=reason)
        raise JobStopped(JobStatus.FAILED, reason)

    # Items ------------------------------------------------------------------

    def done_keys(self) -> set[str]:
        return set(JobItem.objects.filter(job=self.job).values_list("key", flat=True))

    def item(self, key: str, data: Any, *, position: int = 0) -> bool:
        """Store one finished piece, once per (job, key); False when it was already stored
        (a retried job): the caller then writes nothing else for it. Call inside the
        transaction that writes the piece's own rows, so both or neither are stored."""
        try:
            with transaction.atomic():
                JobItem.objects.create(job=self.job, key=key, data=data, position=position)
        except IntegrityError:
            return False
        return True

    def items(self) -> list[Any]:
        return [item.data for item in JobItem.objects.filter(job=self.job)]


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
            error="",
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
        status, error = JobStatus.FAILED, f"{type(exc).__name__}: {exc}"
    if result is None and status != JobStatus.SUCCEEDED:
        result = db_retry(lambda: partial_result(job, ctx))
    finished = timezone.now()
    db_retry(
        lambda: ctx._mine().update(
            status=status, result=result, error=error, finished_at=finished, current=""
        ),
        what=f"job {job.pk}: its outcome",
    )
    logger.info("job %s (%s) %s", job.pk, job.kind, status)
    db_retry(job.refresh_from_db)
    return job


# ---------------------------------------------------------------- transient errors

# What the user reads of a transient problem (the raw error, with its host names and paths,
# stays in the worker's log): one sentence per kind of problem, retried or failed.
PROBLEM_DATABASE, PROBLEM_QUEUE, PROBLEM_DISK, PROBLEM_LOCK = "database", "redis", "disk", "lock"
PROBLEM_CONNECTION = "connection"
_RETRIED = {
    PROBLEM_DATABASE: gettext_noop(
        "Attempt %(attempt)s stopped: the database was unavailable. Retried in %(seconds)s s."
    ),
    PROBLEM_QUEUE: gettext_noop(
        "Attempt %(attempt)s stopped: Redis was unavailable. Retried in %(seconds)s s."
    ),
    PROBLEM_DISK: gettext_noop(
        "Attempt %(attempt)s stopped: the server's disk was full. Retried in %(seconds)s s."
    ),
    PROBLEM_LOCK: gettext_noop(
        "Attempt %(attempt)s stopped: a database lock wait timed out. Retried in %(seconds)s s."
    ),
    PROBLEM_CONNECTION: gettext_noop(
        "Attempt %(attempt)s stopped: a service it needs was unreachable. Retried in %(seconds)s s."
    ),
}
_FAILED = {
    PROBLEM_DATABASE: gettext_noop(
        "The job failed: the database was unavailable on attempt %(attempt)s of "
        "%(max_attempts)s (JOBS_MAX_ATTEMPTS). The scenarios it finished are kept; run it "
        "again for the rest."
    ),
    PROBLEM_QUEUE: gettext_noop(
        "The job failed: Redis was unavailable on attempt %(attempt)s of %(max_attempts)s "
        "(JOBS_MAX_ATTEMPTS). The scenarios it finished are kept; run it again for the rest."
    ),
    PROBLEM_DISK: gettext_noop(
        "The job failed: the server's disk was full on attempt %(attempt)s of "
        "%(max_attempts)s (JOBS_MAX_ATTEMPTS). The scenarios it finished are kept; run it "
        "again for the rest."
    ),
    PROBLEM_LOCK: gettext_noop(
        "The job failed: a database lock wait timed out on attempt %(attempt)s of "
        "%(max_attempts)s (JOBS_MAX_ATTEMPTS). The scenarios it finished are kept; run it "
        "again for the rest."
    ),
    PROBLEM_CONNECTION: gettext_noop(
        "The job failed: a service it needs was unreachable on attempt %(attempt)s of "
        "%(max_attempts)s (JOBS_MAX_ATTEMPTS). The scenarios it finished are kept; run it "
        "again for the rest."
    ),
}
_DISK_FULL = ("no space left on device", "disk full", "could not extend file")
_LOCK_TIMEOUT = ("lock timeout", "lock_timeout", "canceling statement due to lock timeout")


def transient_problem(exc: BaseException) -> str | None:
    """What kind of transient problem `exc` is (one of the PROBLEM_* keys), or None when it
    is the job's own failure. Transient: the database or Redis unreachable or restarting, a
    full disk, a lock timeout, a deadlock, a refused connection (causes included)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        text = str(exc).lower()
        if (isinstance(exc, OSError) and exc.errno == 28) or any(w in text for w in _DISK_FULL):
            return PROBLEM_DISK
        if any(w in text for w in _LOCK_TIMEOUT) or "deadlock" in text:
            return PROBLEM_LOCK
        if isinstance(exc, InterfaceError) or (
            isinstance(exc, OperationalError) and _database_away(exc)
        ):
            return PROBLEM_DATABASE
        module = type(exc).__module__
        if module.startswith("redis"):
            return PROBLEM_QUEUE
        psycopg_error = module.startswith("psycopg") and type(exc).__name__ == "OperationalError"
        if psycopg_error and _database_away(exc):
            return PROBLEM_DATABASE
        if isinstance(exc, ConnectionError):
            return PROBLEM_CONNECTION
        exc = exc.__cause__ or exc.__context__
    return None


# SQLSTATE classes of a database that is away or busy, not of a wrong query: connection
# exceptions (08), insufficient resources (53: disk full, too many connections), operator
# intervention (57: shutting down, starting up, statement cancelled), transaction rollback
# (40: deadlock, serialization), lock not available (55P03).
_AWAY_CLASSES = ("08", "53", "57", "40")
# SQLite says what is wrong with the query in an OperationalError too: not transient.
_QUERY_FAULTS = ("no such table", "no such column", "has no column", "syntax error")


def _database_away(exc: BaseException) -> bool:
    cause = exc.__cause__ if exc.__cause__ is not None else exc
    code = getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None)
    if code:
        return code[:2] in _AWAY_CLASSES or code == "55P03"
    return not any(fault in str(exc).lower() for fault in _QUERY_FAULTS)


def _after_transient(job: Job, ctx: JobContext, problem: str) -> Job:
    """The attempt ended on a transient problem: queue the job again after a backoff, or
    after ``JOBS_MAX_ATTEMPTS`` runs fail it, naming the problem (never the raw error)."""
    max_attempts = int(setting("JOBS_MAX_ATTEMPTS"))
    if job.attempts < max_attempts and not ctx.cancelled:
        delay = float(setting("JOBS_RETRY_BACKOFF_SECONDS")) * 2 ** (job.attempts - 1)
        message = Message(_RETRIED[problem], attempt=job.attempts, seconds=f"{delay:g}")
        fields = {"status": JobStatus.QUEUED, "worker": "", "current": "", "task_id": ""}
        moved = db_retry(
            lambda: ctx._mine().update(**fields, error=message, queued_at=timezone.now()),
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
                error=message,
                finished_at=timezone.now(),
                current="",
            ),
            what=f"job {job.pk}: its outcome",
        )
        logger.info("job %s (%s) %s", job.pk, job.kind, status)
    db_retry(job.refresh_from_db)
    return job


def db_retry[T](
    action: Callable[[], T], *, what: str = "", sleep: Callable[[float], None] = time.sleep
) -> T:
    """Run `action`; on a database error (connection lost, the database restarting) close
    the connection and try again with a backoff (0.2 s, doubling, at most 5 s apart) for
    up to ``JOBS_DB_RETRY_SECONDS``, then raise. Never inside a transaction (the whole
    transaction is lost with the connection): there it raises at once."""
    budget = float(setting("JOBS_DB_RETRY_SECONDS"))
    waited, delay = 0.0, 0.2
    while True:
        try:
            return action()
        except (OperationalError, InterfaceError) as exc:
            query_fault = isinstance(exc, OperationalError) and not _database_away(exc)
            if connection.in_atomic_block or waited >= budget or query_fault:
                raise
            logger.warning("%s: a database error (%s); retried in %.1f s", what or "db", exc, delay)
            with contextlib.suppress(Exception):
                connection.close()
            sleep(delay)
            waited += delay
            delay = min(delay * 2, 5.0)


def partial_result(job: Job, ctx: JobContext) -> Any:
    items = ctx.items()
    return {"scenarios": items} if items else None


# ---------------------------------------------------------------- recovery


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
                "current": "",
                "worker": "",
                "error": retried,
                "task_id": "",
                "queued_at": timezone.now(),
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
            if lost.update(status=status, current="", finished_at=timezone.now(), error=message):
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


# ---------------------------------------------------------------- workers seen


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
        "current": shown_current(job.current),
        "result": localized_data(result),  # messages in the reader's language
        "error": localize(recovered_message(job.error)),  # stored English, shown translated
        "attempts": job.attempts,
        "caps": job.caps,
        "created_at": job.created_at,
        "started_at": job.started_at,
        "finished_at": job.finished_at,
    }


def is_finished(job: Job) -> bool:
    return job.status in JOB_FINISHED
