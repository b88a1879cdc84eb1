"""Live models: configured endpoints, an app's default model, live and replay runs."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

from agents.core.rules import (
    DISPLAY_NAME_MAX_LENGTH,
    ENDPOINT_KIND_MAX_LENGTH,
    LIVE_RUN_MODE_MAX_LENGTH,
    LOCATION_MAX_LENGTH,
    MODEL_ERROR_MAX_LENGTH,
    MODEL_ID_MAX_LENGTH,
    MODEL_MAX_CONCURRENT_DEFAULT,
    MODEL_MAX_CONCURRENT_LIMIT,
    MODEL_NAME_MAX_LENGTH,
    MODEL_PER_MINUTE_LIMITS,
    NOW_MAX_LENGTH,
    PROJECT_ID_MAX_LENGTH,
    RESULT_STATUS_MAX_LENGTH,
    SCENARIO_NAME_MAX_LENGTH,
    USERNAME_MAX_LENGTH,
)
from agents.fields import OrderedJSONField
from agents.models.app import AgentApp
from agents.models.base import TimestampedModel
from agents.models.scenarios import ResultStatus, Scenario


class EndpointKind(models.TextChoices):
    OPENAI = "openai", _("OpenAI-compatible (chat completions)")
    GEMINI = "gemini", _("Gemini (API key or Vertex AI)")


class ModelEndpoint(TimestampedModel):
    """A model an operator configured in the admin (besides ``STATECRAFT_MODELS``).

    The API key is stored encrypted (``agents.keyring``) and never shown again: nothing
    reads `api_key_encrypted` but the model client. Not part of any app: never exported,
    versioned or audited."""

    name = models.CharField(max_length=MODEL_NAME_MAX_LENGTH, unique=True, verbose_name=_("name"))
    kind = models.CharField(
        max_length=ENDPOINT_KIND_MAX_LENGTH, choices=EndpointKind.choices, verbose_name=_("kind")
    )
    model = models.CharField(
        max_length=MODEL_ID_MAX_LENGTH,
        help_text=_("The model's id, like gemini-2.5-flash."),
        verbose_name=_("model"),
    )
    base_url = models.URLField(
        blank=True,
        help_text=_("Empty: the provider's own API. Any OpenAI-compatible URL works."),
        verbose_name=_("base url"),
    )
    api_key_encrypted = models.TextField(
        blank=True, editable=False, verbose_name=_("api key encrypted")
    )
    vertex = models.BooleanField(
        default=False,
        help_text=_("Gemini through Vertex AI with this machine's Google credentials."),
        verbose_name=_("vertex"),
    )
    project = models.CharField(
        max_length=PROJECT_ID_MAX_LENGTH, blank=True, verbose_name=_("project")
    )
    location = models.CharField(
        max_length=LOCATION_MAX_LENGTH, blank=True, verbose_name=_("location")
    )
    timeout = models.FloatField(default=60.0, verbose_name=_("timeout"))
    max_retries = models.PositiveSmallIntegerField(default=3, verbose_name=_("max retries"))
    price_in = models.FloatField(
        null=True,
        blank=True,
        help_text=_("USD per million input tokens."),
        verbose_name=_("price in"),
    )
    price_out = models.FloatField(
        null=True,
        blank=True,
        help_text=_("USD per million output tokens."),
        verbose_name=_("price out"),
    )
    max_concurrent = models.PositiveSmallIntegerField(
        default=MODEL_MAX_CONCURRENT_DEFAULT,
        validators=[
            MaxValueValidator(
                MODEL_MAX_CONCURRENT_LIMIT,
                message=_("At most %(limit_value)s requests at once; 0 for no limit."),
            )
        ],
        help_text=_("Requests to this model in flight at once, per worker process (0: no limit)."),
        verbose_name=_("max concurrent requests"),
    )
    requests_per_minute = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[
            MinValueValidator(
                1, message=_("Write at least 1 request a minute, or leave it empty for no limit.")
            ),
            MaxValueValidator(
                MODEL_PER_MINUTE_LIMITS["requests_per_minute"],
                message=_("At most %(limit_value)s requests a minute; leave it empty for none."),
            ),
        ],
        help_text=_("Requests started per minute, per worker process (empty: no limit)."),
        verbose_name=_("requests per minute"),
    )
    tokens_per_minute = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[
            MinValueValidator(
                1, message=_("Write at least 1 token a minute, or leave it empty for no limit.")
            ),
            MaxValueValidator(
                MODEL_PER_MINUTE_LIMITS["tokens_per_minute"],
                message=_("At most %(limit_value)s tokens a minute; leave it empty for none."),
            ),
        ],
        help_text=_(
            "Tokens (in and out) answered per minute, per worker process (empty: no limit)."
        ),
        verbose_name=_("tokens per minute"),
    )
    enabled = models.BooleanField(default=True, verbose_name=_("enabled"))

    class Meta:
        verbose_name_plural = _("model endpoints")
        ordering = ["name"]
        verbose_name = _("model endpoint")

    def __str__(self) -> str:
        return f"{self.name} ({self.kind}: {self.model})"

    @property
    def has_key(self) -> bool:
        return bool(self.api_key_encrypted)


class AppModelDefault(models.Model):
    """The model an app's live runs use when a run names none."""

    app = models.OneToOneField(
        AgentApp, on_delete=models.CASCADE, related_name="model_default", verbose_name=_("app")
    )
    model = models.CharField(max_length=MODEL_NAME_MAX_LENGTH, verbose_name=_("model"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("app model default")
        verbose_name_plural = _("app model defaults")

    def __str__(self) -> str:
        return f"{self.app}: {self.model}"


class LiveRunMode(models.TextChoices):
    LIVE = "live", _("Live")
    REPLAY = "replay", _("Replay")


class LiveRun(models.Model):
    """One run of a scenario with a model (live) or from a recording (replay).

    `calls` holds every model call: its request fingerprint, the request (instructions,
    contents, tool declarations) and the answer (parts, tokens, cost, error). A replay
    names its recording (`replay_of`) and its `drift` (which call, what changed)."""

    app = models.ForeignKey(
        AgentApp, on_delete=models.CASCADE, related_name="live_runs", verbose_name=_("app")
    )
    scenario = models.ForeignKey(
        Scenario,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="live_runs",
        verbose_name=_("scenario"),
    )
    scenario_name = models.CharField(
        max_length=SCENARIO_NAME_MAX_LENGTH, verbose_name=_("scenario name")
    )
    agent_name = models.CharField(max_length=DISPLAY_NAME_MAX_LENGTH, verbose_name=_("agent name"))
    model_name = models.CharField(max_length=MODEL_NAME_MAX_LENGTH, verbose_name=_("model name"))
    mode = models.CharField(
        max_length=LIVE_RUN_MODE_MAX_LENGTH,
        choices=LiveRunMode.choices,
        default=LiveRunMode.LIVE,
        verbose_name=_("mode"),
    )
    replay_of = models.ForeignKey(
        "self",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="replays",
        verbose_name=_("replay of"),
    )
    script = models.TextField(
        blank=True, help_text=_("The scenario's script when it ran."), verbose_name=_("script")
    )
    status = models.CharField(
        max_length=RESULT_STATUS_MAX_LENGTH,
        choices=ResultStatus.choices,
        default="none",
        verbose_name=_("status"),
    )
    error = models.CharField(
        max_length=MODEL_ERROR_MAX_LENGTH,
        blank=True,
        help_text=_("A named model error, if any."),
        verbose_name=_("error"),
    )
    now = models.CharField(
        max_length=NOW_MAX_LENGTH,
        blank=True,
        default="",
        help_text=_("The session clock the run's code read (ISO date-time); a replay reads it."),
        verbose_name=_("now"),
    )
    calls = OrderedJSONField(default=list, blank=True, verbose_name=_("calls"))
    drift = OrderedJSONField(default=list, blank=True, verbose_name=_("drift"))
    evaluation = OrderedJSONField(default=list, blank=True, verbose_name=_("evaluation"))
    timeline = OrderedJSONField(default=list, blank=True, verbose_name=_("timeline"))
    final_state = OrderedJSONField(default=dict, blank=True, verbose_name=_("final state"))
    diagnostics = OrderedJSONField(default=list, blank=True, verbose_name=_("diagnostics"))
    model_calls = models.PositiveIntegerField(default=0, verbose_name=_("model calls"))
    tokens_in = models.PositiveIntegerField(default=0, verbose_name=_("tokens in"))
    tokens_out = models.PositiveIntegerField(default=0, verbose_name=_("tokens out"))
    cost = models.FloatField(default=0.0, verbose_name=_("cost"))
    retries = models.PositiveIntegerField(default=0, verbose_name=_("retries"))
    app_revision = models.PositiveBigIntegerField(default=0, verbose_name=_("app revision"))
    ran_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="live_runs",
        verbose_name=_("ran by"),
    )
    ran_by_name = models.CharField(
        max_length=USERNAME_MAX_LENGTH, blank=True, verbose_name=_("ran by name")
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))

    class Meta:
        verbose_name_plural = _("live runs")
        ordering = ["-created_at", "-id"]
        verbose_name = _("live run")

    def __str__(self) -> str:
        return f"{self.scenario_name} · {self.model_name} · {self.mode}"

    @property
    def failed_expectations(self) -> int:
        """How many of the run's expectations failed (the designer's "failed: 2
        expectations", told apart from a model error)."""
        return sum(
            1 for r in self.evaluation or () if isinstance(r, dict) and r.get("status") == "failed"
        )
