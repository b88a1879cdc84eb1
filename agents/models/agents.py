"""An app's agents and their callbacks."""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Lower
from django.utils.translation import gettext_lazy as _

from agents.core import spec
from agents.core.rules import (
    CALLBACK_KIND_MAX_LENGTH,
    DISPLAY_NAME_MAX_LENGTH,
)
from agents.fields import OrderedJSONField
from agents.models.app import AgentApp
from agents.models.base import TimestampedModel, instructions_hash
from agents.models.tools import Tool


class CallbackKind(models.TextChoices):
    BEFORE_AGENT = spec.CallbackKind.BEFORE_AGENT, _("Before agent")
    AFTER_AGENT = spec.CallbackKind.AFTER_AGENT, _("After agent")
    BEFORE_MODEL = spec.CallbackKind.BEFORE_MODEL, _("Before model")
    AFTER_MODEL = spec.CallbackKind.AFTER_MODEL, _("After model")
    BEFORE_TOOL = spec.CallbackKind.BEFORE_TOOL, _("Before tool")
    AFTER_TOOL = spec.CallbackKind.AFTER_TOOL, _("After tool")


class Agent(TimestampedModel):
    app = models.ForeignKey(
        AgentApp, on_delete=models.CASCADE, related_name="agents", verbose_name=_("app")
    )
    display_name = models.CharField(
        max_length=DISPLAY_NAME_MAX_LENGTH, verbose_name=_("display name")
    )
    description = models.TextField(blank=True, verbose_name=_("description"))
    instructions = models.TextField(blank=True, verbose_name=_("instructions"))
    is_root = models.BooleanField(default=False, verbose_name=_("is root"))
    tools = models.ManyToManyField(Tool, related_name="agents", blank=True, verbose_name=_("tools"))
    children = models.ManyToManyField(
        "self", symmetrical=False, related_name="parents", blank=True, verbose_name=_("children")
    )
    cx = OrderedJSONField(
        default=dict,
        blank=True,
        editable=False,
        help_text=_("What a CX import kept verbatim (CX fields Statecraft does not edit)."),
        verbose_name=_("cx"),
    )

    class Meta:
        verbose_name = _("agent")
        verbose_name_plural = _("agents")
        ordering = ["-is_root", "display_name", "id"]
        constraints = [
            models.UniqueConstraint(
                Lower("display_name"), "app", name="agent_unique_display_name_per_app"
            ),
            models.UniqueConstraint(
                fields=["app"], condition=models.Q(is_root=True), name="agent_one_root_per_app"
            ),
        ]

    def __str__(self) -> str:
        return self.display_name

    @property
    def instructions_hash(self) -> str:
        """Fingerprint of the saved instructions: the editor's base for a conflict-free save."""
        return instructions_hash(self.instructions)

    def to_spec(self) -> spec.AgentSpec:
        return spec.AgentSpec(
            name=self.display_name,
            instructions=self.instructions,
            description=self.description,
            tools=tuple(t.name for t in self.tools.all()),
            children=tuple(c.display_name for c in self.children.all()),
            callbacks=tuple(c.to_spec() for c in self.callbacks.all()),
            is_root=self.is_root,
            cx=dict(self.cx or {}),
        )


class Callback(TimestampedModel):
    agent = models.ForeignKey(
        Agent, on_delete=models.CASCADE, related_name="callbacks", verbose_name=_("agent")
    )
    kind = models.CharField(
        max_length=CALLBACK_KIND_MAX_LENGTH, choices=CallbackKind.choices, verbose_name=_("kind")
    )
    order = models.PositiveIntegerField(default=0, verbose_name=_("order"))
    code = models.TextField(
        help_text=_("Python; may update state like a tool."), verbose_name=_("code")
    )
    cx = OrderedJSONField(
        default=dict,
        blank=True,
        editable=False,
        help_text=_("What a CX import kept verbatim (CX fields Statecraft does not edit)."),
        verbose_name=_("cx"),
    )

    class Meta:
        verbose_name = _("callback")
        verbose_name_plural = _("callbacks")
        ordering = ["kind", "order", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "kind", "order"], name="callback_unique_order_per_kind"
            ),
            models.CheckConstraint(
                condition=models.Q(kind__in=CallbackKind.values), name="callback_kind_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} #{self.order}"

    def to_spec(self) -> spec.CallbackSpec:
        return spec.CallbackSpec(
            kind=spec.CallbackKind(self.kind),
            code=self.code,
            order=self.order,
            cx=dict(self.cx or {}),
        )
