"""Long work run by a worker, and its finished pieces."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

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
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


JOB_ACTIVE = (JobStatus.QUEUED, JobStatus.RUNNING)
JOB_FINISHED = (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED)


class Job(models.Model):
    """Long work run by a worker (`agents.services.jobs`): Run all, evaluate, the version
    diff's scenario results, large imports. The task queue (``django.tasks``) only carries
    the job's id; this row is the truth the page and the API read."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    kind = models.CharField(max_length=JOB_KIND_MAX_LENGTH)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="jobs",
        help_text="Who submitted it (none: manage.py evaluate).",
    )
    app = models.ForeignKey(
        AgentApp, on_delete=models.CASCADE, null=True, blank=True, related_name="jobs"
    )
    status = models.CharField(
        max_length=JOB_STATUS_MAX_LENGTH, choices=JobStatus.choices, default=JobStatus.QUEUED
    )
    params = models.JSONField(default=dict, blank=True)
    caps = models.JSONField(default=dict, blank=True, help_text="Steps, code calls, seconds...")
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    current = models.CharField(max_length=JOB_CURRENT_MAX_LENGTH, blank=True)
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    cancel_requested = models.BooleanField(default=False)
    worker = models.CharField(
        max_length=WORKER_MAX_LENGTH, blank=True, help_text="host:pid running it"
    )
    task_id = models.CharField(
        max_length=TASK_ID_MAX_LENGTH, blank=True, help_text="The task queue's id"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
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

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="items")
    key = models.CharField(max_length=JOB_ITEM_KEY_MAX_LENGTH)
    position = models.PositiveIntegerField(default=0)
    data = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["position", "pk"]
        constraints = [models.UniqueConstraint(fields=["job", "key"], name="job_item_once")]

    def __str__(self) -> str:
        return f"{self.job_id} {self.key}"
