"""Scenarios: scripted sessions with an agent, their steps and their last result."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from agents.core import rules, spec
from agents.core.rules import (
    CALLBACK_KIND_MAX_LENGTH,
    CHANNEL_MAX_LENGTH,
    LOCATION_MAX_LENGTH,
    MODALITY_MAX_LENGTH,
    NOW_MAX_LENGTH,
    PROJECT_ID_MAX_LENGTH,
    PROJECT_NUMBER_MAX_LENGTH,
    RESULT_STATUS_MAX_LENGTH,
    SCENARIO_DEFAULTS,
    SCENARIO_NAME_MAX_LENGTH,
    SESSION_ID_MAX_LENGTH,
    STEP_EVENT_MAX_LENGTH,
    STEP_KIND_MAX_LENGTH,
    TOOL_NAME_MAX_LENGTH,
    USERNAME_MAX_LENGTH,
)
from agents.fields import OrderedJSONField
from agents.models.agents import Agent, CallbackKind
from agents.models.base import TimestampedModel


class StepKind(models.TextChoices):
    USER = spec.StepKind.USER, _("User message")
    AGENT = spec.StepKind.AGENT, _("Agent message")
    TOOL = spec.StepKind.TOOL, _("Tool call")
    CALLBACK = spec.StepKind.CALLBACK, _("Callback run")
    EXPECT = spec.StepKind.EXPECT, _("Expectation")


# A scenario's channel and modality are setting values (stored and exported as typed);
# the pages show each one's word in the reader's language.
SETTING_VALUE_LABELS = {
    "web": pgettext_lazy("channel", "web"),
    "api": pgettext_lazy("channel", "api"),
    "telephony": pgettext_lazy("channel", "telephony"),
    "text": pgettext_lazy("modality", "text"),
    "voice": pgettext_lazy("modality", "voice"),
}
Channel = models.TextChoices(
    "Channel", [(c.upper(), (c, SETTING_VALUE_LABELS[c])) for c in rules.CHANNELS]
)
Modality = models.TextChoices(
    "Modality", [(m.upper(), (m, SETTING_VALUE_LABELS[m])) for m in rules.MODALITIES]
)


class Scenario(TimestampedModel):
    """A scripted session with an agent: inputs, a context-window budget and steps."""

    agent = models.ForeignKey(
        Agent, on_delete=models.CASCADE, related_name="scenarios", verbose_name=_("agent")
    )
    name = models.CharField(max_length=SCENARIO_NAME_MAX_LENGTH, verbose_name=_("name"))
    session_values = OrderedJSONField(
        default=dict,
        blank=True,
        help_text=_("Initial variable values overriding defaults."),
        verbose_name=_("session values"),
    )
    channel = models.CharField(
        max_length=CHANNEL_MAX_LENGTH,
        choices=Channel.choices,
        default=SCENARIO_DEFAULTS["channel"],
        verbose_name=_("channel"),
    )
    modality = models.CharField(
        max_length=MODALITY_MAX_LENGTH,
        choices=Modality.choices,
        default=SCENARIO_DEFAULTS["modality"],
        verbose_name=_("modality"),
    )
    session_id = models.CharField(
        max_length=SESSION_ID_MAX_LENGTH,
        default=SCENARIO_DEFAULTS["session_id"],
        verbose_name=_("session id"),
    )
    project_id = models.CharField(
        max_length=PROJECT_ID_MAX_LENGTH,
        default=SCENARIO_DEFAULTS["project_id"],
        verbose_name=_("project id"),
    )
    project_number = models.CharField(
        max_length=PROJECT_NUMBER_MAX_LENGTH,
        default=SCENARIO_DEFAULTS["project_number"],
        verbose_name=_("project number"),
    )
    location = models.CharField(
        max_length=LOCATION_MAX_LENGTH,
        default=SCENARIO_DEFAULTS["location"],
        verbose_name=_("location"),
    )
    now = models.CharField(
        max_length=NOW_MAX_LENGTH,
        blank=True,
        default=SCENARIO_DEFAULTS["now"],
        help_text=_("The session clock code reads (ISO date-time); empty: the real clock."),
        verbose_name=_("now"),
    )
    token_budget = models.PositiveIntegerField(
        default=SCENARIO_DEFAULTS["token_budget"], verbose_name=_("token budget")
    )
    use_mocks = models.BooleanField(
        default=SCENARIO_DEFAULTS["use_mocks"],
        help_text=_("Use tool mocks even when a tool has code."),
        verbose_name=_("use mocks"),
    )
    cx = OrderedJSONField(
        default=dict,
        blank=True,
        editable=False,
        help_text=_("What a CX import kept verbatim (CX fields Statecraft does not edit)."),
        verbose_name=_("cx"),
    )
    # The recording Replay and `evaluate --replay` use (services.live_pins): None = the
    # latest successful live run. A pinned run that is deleted unpins (SET_NULL).
    pinned_run = models.ForeignKey(
        "agents.LiveRun",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        editable=False,
        related_name="+",
        help_text=_("The live run replays use; empty: the latest successful one."),
        verbose_name=_("pinned recording"),
    )

    class Meta:
        verbose_name = _("scenario")
        verbose_name_plural = _("scenarios")
        ordering = ["name", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "name"], name="scenario_unique_name_per_agent"
            ),
            models.CheckConstraint(
                condition=models.Q(token_budget__gte=1), name="scenario_budget_positive"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def to_spec(self, *, app_id: str = "") -> spec.ScenarioSpec:
        return spec.ScenarioSpec(
            name=self.name,
            agent=self.agent.display_name,
            session=spec.SessionSpec(
                values=dict(self.session_values or {}),
                channel=self.channel,
                modality=self.modality,
                session_id=self.session_id,
                app_id=app_id,
                project_id=self.project_id,
                project_number=self.project_number,
                location=self.location,
                now=self.now,
            ),
            steps=tuple(step.to_spec() for step in self.steps.all()),
            token_budget=self.token_budget,
            use_mocks=self.use_mocks,
            cx=dict(self.cx or {}),
        )


class ScenarioStep(TimestampedModel):
    scenario = models.ForeignKey(
        Scenario, on_delete=models.CASCADE, related_name="steps", verbose_name=_("scenario")
    )
    order = models.PositiveIntegerField(default=0, verbose_name=_("order"))
    kind = models.CharField(
        max_length=STEP_KIND_MAX_LENGTH,
        choices=StepKind.choices,
        default=StepKind.USER,
        verbose_name=_("kind"),
    )
    text = models.TextField(
        blank=True, help_text=_("User or agent message."), verbose_name=_("text")
    )
    tool = models.CharField(
        max_length=TOOL_NAME_MAX_LENGTH,
        blank=True,
        help_text=_("Tool call: the tool's name."),
        verbose_name=_("tool"),
    )
    args = OrderedJSONField(
        default=dict,
        blank=True,
        help_text=_("Tool call: its arguments (JSON object)."),
        verbose_name=_("args"),
    )
    callback_kind = models.CharField(
        max_length=CALLBACK_KIND_MAX_LENGTH,
        choices=CallbackKind.choices,
        blank=True,
        verbose_name=_("callback kind"),
    )
    variables = OrderedJSONField(
        default=dict,
        blank=True,
        help_text=_("User input: session variables it sets (JSON object)."),
        verbose_name=_("variables"),
    )
    event = models.CharField(
        max_length=STEP_EVENT_MAX_LENGTH,
        blank=True,
        help_text=_("User input: its event."),
        verbose_name=_("event"),
    )
    expectation = OrderedJSONField(
        null=True,
        blank=True,
        help_text=_("Expectation: kind, tool, agent, value, note."),
        verbose_name=_("expectation"),
    )

    class Meta:
        verbose_name = _("scenario step")
        verbose_name_plural = _("scenario steps")
        ordering = ["order", "id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(kind__in=StepKind.values), name="step_kind_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.order}. {self.get_kind_display()}"

    def to_spec(self) -> spec.StepSpec:
        return spec.StepSpec(
            kind=spec.StepKind(self.kind),
            text=self.text,
            tool=self.tool,
            args=dict(self.args or {}),
            callback=spec.CallbackKind(self.callback_kind) if self.callback_kind else None,
            variables=dict(self.variables or {}),
            event=self.event,
            expectation=expectation_from_json(self.expectation),
        )


def expectation_to_json(expectation: spec.ExpectationSpec | None) -> dict[str, Any] | None:
    if expectation is None:
        return None
    return {
        "kind": expectation.kind.value,
        "tool": expectation.tool,
        "agent": expectation.agent,
        "value": expectation.value,
        "note": expectation.note,
    }


def expectation_from_json(data: Any) -> spec.ExpectationSpec | None:
    if not isinstance(data, dict) or "kind" not in data:
        return None
    return spec.ExpectationSpec(
        kind=spec.ExpectKind(data["kind"]),
        tool=data.get("tool", ""),
        agent=data.get("agent", ""),
        value=data.get("value"),
        note=data.get("note", ""),
    )


class ResultStatus(models.TextChoices):
    PASSED = "passed", _("Passed")
    FAILED = "failed", _("Failed")
    NEEDS_MODEL = "needs_model", _("Needs a model")
    STOPPED = "stopped", _("Stopped by a limit")
    NONE = "none", _("No expectations")


class ScenarioResult(models.Model):
    """The last evaluation of a scenario's expectations: when, who, and what came out."""

    scenario = models.OneToOneField(
        Scenario, on_delete=models.CASCADE, related_name="last_result", verbose_name=_("scenario")
    )
    status = models.CharField(
        max_length=RESULT_STATUS_MAX_LENGTH, choices=ResultStatus.choices, verbose_name=_("status")
    )
    passed = models.PositiveIntegerField(default=0, verbose_name=_("passed"))
    failed = models.PositiveIntegerField(default=0, verbose_name=_("failed"))
    needs_model = models.PositiveIntegerField(default=0, verbose_name=_("needs model"))
    results = OrderedJSONField(
        default=list,
        blank=True,
        help_text=_("Each expectation: step, turn, status, message, diff."),
        verbose_name=_("results"),
    )
    app_revision = models.PositiveBigIntegerField(default=0, verbose_name=_("app revision"))
    ran_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="scenario_results",
        verbose_name=_("ran by"),
    )
    ran_by_name = models.CharField(
        max_length=USERNAME_MAX_LENGTH, blank=True, verbose_name=_("ran by name")
    )
    ran_at = models.DateTimeField(verbose_name=_("ran at"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("scenario result")
        verbose_name_plural = _("scenario results")
        ordering = ["-ran_at"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(status__in=ResultStatus.values), name="result_status_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.scenario} — {self.get_status_display()}"
