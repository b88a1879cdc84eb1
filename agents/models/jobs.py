"""Long work run by a worker, and its finished pieces."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from agents.core.diagnostics import Message, message_data, message_from_data
from agents.core.rules import (
    JOB_CURRENT_MAX_LENGTH,
    JOB_ITEM_KEY_MAX_LENGTH,
    JOB_KIND_MAX_LENGTH,
    JOB_STATUS_MAX_LENGTH,
    TASK_ID_MAX_LENGTH,
    WORKER_MAX_LENGTH,
)
from agents.models.app import AgentApp


class JobStatus(models.TextChoices):
    QUEUED = "queued", _("Queued")
    RUNNING = "running", _("Running")
    SUCCEEDED = "succeeded", _("Succeeded")
    FAILED = "failed", _("Failed")
    CANCELLED = "cancelled", _("Cancelled")


JOB_ACTIVE = (JobStatus.QUEUED, JobStatus.RUNNING)
JOB_FINISHED = (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED)


class Job(models.Model):
    """Long work run by a worker (`agents.services.jobs`): Run all, evaluate, the version
    diff's scenario results, large imports. The task queue (``django.tasks``) only carries
    the job's id; this row is the truth the page and the API read."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    kind = models.CharField(max_length=JOB_KIND_MAX_LENGTH, verbose_name=_("kind"))
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="jobs",
        help_text=_("Who submitted it (none: manage.py evaluate)."),
        verbose_name=_("owner"),
    )
    app = models.ForeignKey(
        AgentApp,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="jobs",
        verbose_name=_("app"),
    )
    status = models.CharField(
        max_length=JOB_STATUS_MAX_LENGTH,
        choices=JobStatus.choices,
        default=JobStatus.QUEUED,
        verbose_name=_("status"),
    )
    params = models.JSONField(default=dict, blank=True, verbose_name=_("params"))
    caps = models.JSONField(
        default=dict,
        blank=True,
        help_text=_("Steps, code calls, seconds..."),
        verbose_name=_("caps"),
    )
    progress_done = models.PositiveIntegerField(default=0, verbose_name=_("progress done"))
    progress_total = models.PositiveIntegerField(default=0, verbose_name=_("progress total"))
    current = models.CharField(
        max_length=JOB_CURRENT_MAX_LENGTH, blank=True, verbose_name=_("current")
    )
    # A message (`current`, `error`) is stored as its English text and as its template and
    # parameters (`*_data`, `message_data`), shown in the reader's language when read
    # (`current_message`, `error_message`). A row written before the data: as stored.
    current_data = models.JSONField(
        null=True, blank=True, verbose_name=_("current (template and parameters)")
    )
    result = models.JSONField(null=True, blank=True, verbose_name=_("result"))
    error = models.TextField(blank=True, verbose_name=_("error"))
    error_data = models.JSONField(
        null=True, blank=True, verbose_name=_("error (template and parameters)")
    )
    attempts = models.PositiveSmallIntegerField(default=0, verbose_name=_("attempts"))
    cancel_requested = models.BooleanField(default=False, verbose_name=_("cancel requested"))
    worker = models.CharField(
        max_length=WORKER_MAX_LENGTH,
        blank=True,
        help_text=_("host:pid running it"),
        verbose_name=_("worker"),
    )
    task_id = models.CharField(
        max_length=TASK_ID_MAX_LENGTH,
        blank=True,
        help_text=_("The task queue's id"),
        verbose_name=_("task id"),
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    started_at = models.DateTimeField(null=True, blank=True, verbose_name=_("started at"))
    finished_at = models.DateTimeField(null=True, blank=True, verbose_name=_("finished at"))
    heartbeat_at = models.DateTimeField(null=True, blank=True, verbose_name=_("heartbeat at"))
    # When it was (last) put on the queue: the reaper enqueues again a job queued longer
    # than JOBS_REQUEUE_SECONDS whose queue entry is gone.
    queued_at = models.DateTimeField(null=True, blank=True, verbose_name=_("queued at"))
    # A piece of a fanned-out job (a Run all's golden x repetition x model x version): run
    # by any worker, gathered by its parent (``agents.services.evaluation_runs``).
    parent = models.ForeignKey(
        "self",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="pieces",
        verbose_name=_("parent job"),
    )

    class Meta:
        verbose_name = _("job")
        verbose_name_plural = _("jobs")
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["owner", "status"], name="job_owner_status")]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(status__in=JobStatus.values), name="job_status_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.id} ({self.status})"

    @property
    def error_message(self) -> str:
        """The error as the `Message` it was (render it with `agents.i18n.localize`); a
        row stored without its template: the text as stored."""
        return message_from_data(self.error_data, self.error) if self.error_data else self.error

    @property
    def current_message(self) -> str:
        """What the job is doing now as the `Message` it was (or the text: data, such as a
        scenario's name or the model's text so far)."""
        if self.current_data:
            return message_from_data(self.current_data, self.current)
        return self.current


def message_columns(field: str, message: Any, max_length: int | None = None) -> dict[str, Any]:
    """The columns that store `message` in a job's `field` (``error``, ``current``): its
    English text (cut to `max_length`) and, for a `Message`, its template and parameters
    (``<field>_data``; None for plain text)."""
    text = str(message or "")
    return {
        field: text[:max_length] if max_length else text,
        f"{field}_data": message_data(message) if isinstance(message, Message) else None,
    }


class JobItem(models.Model):
    """One finished piece of a job (a scenario's outcome): written once per (job, key), so
    a job retried after its worker died never counts or stores a piece twice."""

    job = models.ForeignKey(
        Job, on_delete=models.CASCADE, related_name="items", verbose_name=_("job")
    )
    key = models.CharField(max_length=JOB_ITEM_KEY_MAX_LENGTH, verbose_name=_("key"))
    position = models.PositiveIntegerField(default=0, verbose_name=_("position"))
    data = models.JSONField(default=dict, verbose_name=_("data"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))

    class Meta:
        verbose_name = _("job item")
        verbose_name_plural = _("job items")
        ordering = ["position", "pk"]
        constraints = [models.UniqueConstraint(fields=["job", "key"], name="job_item_once")]

    def __str__(self) -> str:
        return f"{self.job_id} {self.key}"


class WorkerHeartbeat(models.Model):
    """A job worker's sign of life (`manage.py worker` writes its row at start and then every
    ``JOBS_HEARTBEAT_SECONDS``): `/healthz` counts the workers seen in the last minute, the
    admin lists them, and the designer says when queued work waits with no worker seen."""

    worker = models.CharField(
        max_length=WORKER_MAX_LENGTH,
        primary_key=True,
        help_text=_("host:pid"),
        verbose_name=_("worker"),
    )
    queue = models.CharField(max_length=JOB_STATUS_MAX_LENGTH, blank=True, verbose_name=_("queue"))
    started_at = models.DateTimeField(verbose_name=_("started at"))
    seen_at = models.DateTimeField(db_index=True, verbose_name=_("last heartbeat"))
    stopped = models.BooleanField(default=False, verbose_name=_("stopped"))

    class Meta:
        verbose_name = _("worker")
        verbose_name_plural = _("workers")
        ordering = ["-seen_at"]

    def __str__(self) -> str:
        return self.worker
