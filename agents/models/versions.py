"""Versions (immutable snapshots of an app) and the labels that point at them."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from agents.core.rules import (
    LABEL_MAX_LENGTH,
    LABEL_PATTERN,
    VERSION_NAME_MAX_LENGTH,
)
from agents.fields import OrderedJSONField
from agents.models.app import AgentApp


class AppVersion(models.Model):
    """An immutable, named snapshot of a whole app, stored as its native document.

    `number` counts per app from 1; nothing edits a version after it is saved
    (agents/services/versions.py creates and deletes them, the admin shows them read-only).
    """

    app = models.ForeignKey(
        AgentApp, on_delete=models.CASCADE, related_name="versions", verbose_name=_("app")
    )
    number = models.PositiveIntegerField(verbose_name=_("number"))
    name = models.CharField(max_length=VERSION_NAME_MAX_LENGTH, verbose_name=_("name"))
    note = models.TextField(blank=True, verbose_name=_("note"))
    # The native-format document (agents/core/formats.py), key order kept.
    document = OrderedJSONField(verbose_name=_("document"))
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="app_versions_created",
        verbose_name=_("created by"),
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        verbose_name_plural = _("app versions")
        ordering = ["app_id", "-number"]
        verbose_name = _("app version")
        constraints = [
            models.UniqueConstraint(fields=["app", "number"], name="appversion_unique_number"),
            models.UniqueConstraint(fields=["app", "name"], name="appversion_unique_name"),
            models.CheckConstraint(
                condition=models.Q(number__gte=1), name="appversion_number_positive"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.app} · v{self.number} {self.name}"


class AppLabel(models.Model):
    """A movable name (`production`, `staging`) that points at one version of its app."""

    app = models.ForeignKey(
        AgentApp, on_delete=models.CASCADE, related_name="labels", verbose_name=_("app")
    )
    name = models.CharField(max_length=LABEL_MAX_LENGTH, verbose_name=_("name"))
    # PROTECT: a version a label points at cannot vanish under a pipeline reading the label.
    version = models.ForeignKey(
        AppVersion, on_delete=models.PROTECT, related_name="labels", verbose_name=_("version")
    )
    moved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="app_labels_moved",
        verbose_name=_("moved by"),
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        verbose_name_plural = _("app labels")
        ordering = ["app_id", "name"]
        verbose_name = _("app label")
        constraints = [
            models.UniqueConstraint(fields=["app", "name"], name="applabel_unique_name_per_app"),
            models.CheckConstraint(
                condition=models.Q(name__regex=LABEL_PATTERN), name="applabel_name_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.app} · {self.name}"
