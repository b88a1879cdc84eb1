"""What a job's kind runs with (docs/operations/jobs.md): `JobContext` (the job, its caps,
its progress, its idempotent items, the cancel hook and the bounded runner it lends the
kind) and `JobStopped` (cancelled, or past one of the job's caps)."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from agents.core import rules
from agents.core.diagnostics import Message
from agents.models import Job, JobItem, JobStatus, message_columns
from agents.services.common import setting
from agents.services.sandbox_door import BoundedRunner, JobCaps, job_runner

logger = logging.getLogger("agents.jobs")

# How often a running job reads its row for a cancel request (and writes its heartbeat).
CANCEL_POLL_SECONDS = 0.25


class JobStopped(Exception):
    """Raised inside a job's run: cancelled, or past one of the job's own caps."""

    def __init__(self, status: str, reason: str, result: Any = None) -> None:
        self.status = status
        self.reason = reason
        self.result = result  # what the job's result says of it (a refused import's report)
        super().__init__(reason)


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
            stored = message_columns("current", current, rules.JOB_CURRENT_MAX_LENGTH)
            self.job.current, self.job.current_data = stored["current"], stored["current_data"]
            fields |= stored
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


def partial_result(job: Job, ctx: JobContext) -> Any:
    items = ctx.items()
    return {"scenarios": items} if items else None
