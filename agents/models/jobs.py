"""Long work run by a worker, and its finished pieces."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

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
    result = models.JSONField(null=True, blank=True, verbose_name=_("result"))
    error = models.TextField(blank=True, verbose_name=_("error"))
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
