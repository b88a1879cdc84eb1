"""The history of evaluation runs: one row per Run all (its goldens x repetitions x models x
versions), kept after its job's rows are gone (``EVALUATION_RUNS_KEPT`` per app)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from agents.core.rules import JOB_STATUS_MAX_LENGTH
from agents.models.app import AgentApp
from agents.models.jobs import Job, JobStatus


class EvaluationRun(models.Model):
    """One evaluation run of an app: who, when, on which revision and versions, with which
    models and how many repetitions; its totals and its matrix (goldens as rows, (model,
    version) as columns) once gathered."""

    app = models.ForeignKey(
        AgentApp, on_delete=models.CASCADE, related_name="evaluation_runs", verbose_name=_("app")
    )
    job = models.OneToOneField(
        Job,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="evaluation_run",
        verbose_name=_("job"),
    )
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="evaluation_runs",
        verbose_name=_("owner"),
    )
    status = models.CharField(
        max_length=JOB_STATUS_MAX_LENGTH,
        choices=JobStatus.choices,
        default=JobStatus.QUEUED,
        verbose_name=_("status"),
    )
    app_revision = models.PositiveIntegerField(default=0, verbose_name=_("app revision"))
    models_used = models.JSONField(
        default=list, blank=True, help_text=_("Model names ('' offline)"), verbose_name=_("models")
    )
    versions = models.JSONField(
        default=list,
        blank=True,
        help_text=_("Version numbers or labels ('' the working copy)"),
        verbose_name=_("versions"),
    )
    repeat = models.PositiveSmallIntegerField(default=1, verbose_name=_("repeat"))
    threshold = models.FloatField(default=1.0, verbose_name=_("pass threshold"))
    totals = models.JSONField(default=dict, blank=True, verbose_name=_("totals"))
    matrix = models.JSONField(default=dict, blank=True, verbose_name=_("matrix"))
    cost = models.FloatField(default=0.0, verbose_name=_("cost"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    finished_at = models.DateTimeField(null=True, blank=True, verbose_name=_("finished at"))

    class Meta:
        verbose_name = _("evaluation run")
        verbose_name_plural = _("evaluation runs")
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["app", "-created_at"], name="evalrun_app_created")]

    def __str__(self) -> str:
        return f"{self.app_id} {self.created_at:%Y-%m-%d %H:%M} ({self.status})"
