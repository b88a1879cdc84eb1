"""The app's history: one row per write."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from agents.core.rules import (
    APP_NAME_MAX_LENGTH,
    DISPLAY_NAME_MAX_LENGTH,
)
from agents.fields import OrderedJSONField
from agents.models.app import AgentApp


class AuditEvent(models.Model):
    """Who changed what in an app, and when: one row per write (the app's history).

    `before`/`after` hold the changed object's fields (instructions, defaults,
    schemas, code…) as JSON; the app and the user may be deleted later, so their
    names are kept too.
    """

    app = models.ForeignKey(
        AgentApp,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="audit_events",
        verbose_name=_("app"),
    )
    app_name = models.CharField(max_length=APP_NAME_MAX_LENGTH, verbose_name=_("app name"))
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="audit_events",
        verbose_name=_("actor"),
    )
    actor_name = models.CharField(max_length=150, blank=True, verbose_name=_("actor name"))
    action = models.CharField(
        max_length=40, help_text=_("e.g. variable.update"), verbose_name=_("action")
    )
    object_type = models.CharField(max_length=20, verbose_name=_("object type"))
    object_name = models.CharField(
        max_length=DISPLAY_NAME_MAX_LENGTH, blank=True, verbose_name=_("object name")
    )
    before = OrderedJSONField(null=True, blank=True, verbose_name=_("before"))
    after = OrderedJSONField(null=True, blank=True, verbose_name=_("after"))
    created_at = models.DateTimeField(
        auto_now_add=True, db_index=True, verbose_name=_("created at")
    )

    class Meta:
        verbose_name = _("history event")
        verbose_name_plural = _("history events")
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["app", "-created_at"], name="audit_app_recent")]

    def __str__(self) -> str:
        from agents.i18n import action_words

        who = self.actor_name or gettext("system")
        return f"{who}: {action_words(self.action)} {self.object_name}".strip()
