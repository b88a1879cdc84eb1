"""The app and who it is shared with."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from agents.core import spec
from agents.core.rules import (
    APP_NAME_MAX_LENGTH,
    SHARE_ROLE_MAX_LENGTH,
)
from agents.fields import OrderedJSONField
from agents.models.base import TimestampedModel


class ShareRole(models.TextChoices):
    VIEWER = "viewer", _("Viewer")
    EDITOR = "editor", _("Editor")


class AgentApp(TimestampedModel):
    """What CX Agent Studio calls an app: variables, schemas, tools and agents."""

    name = models.CharField(max_length=APP_NAME_MAX_LENGTH, verbose_name=_("name"))
    description = models.TextField(blank=True, verbose_name=_("description"))
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="agent_apps",
        verbose_name=_("owner"),
    )
    # Bumped by every write to anything in the app: the key of its cached AppSpec.
    revision = models.PositiveBigIntegerField(default=1, verbose_name=_("revision"))
    cx = OrderedJSONField(
        default=dict,
        blank=True,
        editable=False,
        help_text=_("What a CX import kept verbatim (CX fields Statecraft does not edit)."),
        verbose_name=_("cx"),
    )

    class Meta:
        verbose_name_plural = _("apps")
        ordering = ["name", "id"]
        verbose_name = _("app")
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "name"], name="agentapp_unique_name_per_owner"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def to_spec(self, *, carry: bool = True) -> spec.AppSpec:
        """The core's view of the app; prefetch related rows to keep this query-free.

        `carry` False leaves out what a CX import kept at the app level (possibly hundreds
        of KB of files, needed only to export): the working spec of previews and
        simulations does without it, and never reads the (deferred) column."""
        schemas = list(self.schemas.all())
        schema_names = {s.pk: s.name for s in schemas}
        return spec.AppSpec(
            name=self.name,
            description=self.description,
            variables=tuple(v.to_spec(schema_names) for v in self.variables.all()),
            schemas=tuple(s.to_spec() for s in schemas),
            tools=tuple(t.to_spec() for t in self.tools.all()),
            agents=tuple(a.to_spec() for a in self.agents.all()),
            cx=dict(self.cx or {}) if carry else {},
        )


class AppShare(TimestampedModel):
    """Access to an app for a user other than its owner."""

    app = models.ForeignKey(
        AgentApp, on_delete=models.CASCADE, related_name="shares", verbose_name=_("app")
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="app_shares",
        verbose_name=_("user"),
    )
    role = models.CharField(
        max_length=SHARE_ROLE_MAX_LENGTH,
        choices=ShareRole.choices,
        default=ShareRole.VIEWER,
        verbose_name=_("role"),
    )

    class Meta:
        verbose_name = _("share")
        verbose_name_plural = _("shares")
        constraints = [
            models.UniqueConstraint(fields=["app", "user"], name="appshare_unique_user_per_app"),
            models.CheckConstraint(
                condition=models.Q(role__in=ShareRole.values), name="appshare_role_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} → {self.app} ({self.role})"
