"""The domain's tables: apps, their variables, schemas, tools, agents and callbacks."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models.functions import Lower
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from agents.core import rules, spec
from agents.core.rules import (
    APP_NAME_MAX_LENGTH,
    DISPLAY_NAME_MAX_LENGTH,
    NAME_MAX_LENGTH,
    NAME_PATTERN,
    SCENARIO_DEFAULTS,
    SCENARIO_NAME_MAX_LENGTH,
)
from agents.core.types import type_label
from agents.fields import OrderedJSONField

__all__ = ["NAME_MAX_LENGTH", "NAME_PATTERN"]


def instructions_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


class TimestampedModel(models.Model):
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))
    # Optimistic locking: a save names the version it read; services refuse a stale one.
    version = models.PositiveIntegerField(default=1, verbose_name=_("version"))

    class Meta:
        abstract = True


class VariableType(models.TextChoices):
    TEXT = spec.VariableType.TEXT, _("Text")
    NUMBER = spec.VariableType.NUMBER, _("Number")
    BOOLEAN = spec.VariableType.BOOLEAN, _("Yes/No")
    OBJECT = spec.VariableType.OBJECT, _("Custom object")
    LIST = spec.VariableType.LIST, _("List")


class ToolKind(models.TextChoices):
    PYTHON = spec.ToolKind.PYTHON, _("Python")
    OPENAPI = spec.ToolKind.OPENAPI, _("OpenAPI")
    MCP = spec.ToolKind.MCP, _("MCP")
    PLATFORM = spec.ToolKind.PLATFORM, _("Platform (CX)")


class CallbackKind(models.TextChoices):
    BEFORE_AGENT = spec.CallbackKind.BEFORE_AGENT, _("Before agent")
    AFTER_AGENT = spec.CallbackKind.AFTER_AGENT, _("After agent")
    BEFORE_MODEL = spec.CallbackKind.BEFORE_MODEL, _("Before model")
    AFTER_MODEL = spec.CallbackKind.AFTER_MODEL, _("After model")
    BEFORE_TOOL = spec.CallbackKind.BEFORE_TOOL, _("Before tool")
    AFTER_TOOL = spec.CallbackKind.AFTER_TOOL, _("After tool")


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
        max_length=10, choices=ShareRole.choices, default=ShareRole.VIEWER, verbose_name=_("role")
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


class Schema(TimestampedModel):
    """A JSON Schema (draft 2020-12) for custom objects, reusable by the app's variables."""

    app = models.ForeignKey(
        AgentApp, on_delete=models.CASCADE, related_name="schemas", verbose_name=_("app")
    )
    name = models.CharField(max_length=NAME_MAX_LENGTH, verbose_name=_("name"))
    description = models.TextField(blank=True, verbose_name=_("description"))
    json_schema = OrderedJSONField(default=dict, verbose_name=_("json schema"))

    class Meta:
        verbose_name = _("schema")
        verbose_name_plural = _("schemas")
        ordering = ["name", "id"]
        constraints = [
            models.UniqueConstraint(fields=["app", "name"], name="schema_unique_name_per_app"),
            models.CheckConstraint(
                condition=models.Q(name__regex=NAME_PATTERN), name="schema_name_valid"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def to_spec(self) -> spec.SchemaSpec:
        return spec.SchemaSpec(
            name=self.name, schema=self.json_schema, description=self.description
        )


class Variable(TimestampedModel):
    app = models.ForeignKey(
        AgentApp, on_delete=models.CASCADE, related_name="variables", verbose_name=_("app")
    )
    name = models.CharField(max_length=NAME_MAX_LENGTH, verbose_name=_("name"))
    type = models.CharField(
        max_length=10,
        choices=VariableType.choices,
        default=VariableType.TEXT,
        verbose_name=_("type"),
    )
    item_type = models.CharField(
        max_length=10,
        choices=[c for c in VariableType.choices if c[0] != VariableType.LIST],
        blank=True,
        help_text=_("For a list: the type of its items."),
        verbose_name=_("item type"),
    )
    schema = models.ForeignKey(
        Schema,
        on_delete=models.PROTECT,
        related_name="variables",
        null=True,
        blank=True,
        help_text=_("For a custom object, or a list of custom objects."),
        verbose_name=_("schema"),
    )
    # None means "no default"; any other JSON value is the default.
    default = OrderedJSONField(null=True, blank=True, verbose_name=_("default"))
    description = models.TextField(blank=True, verbose_name=_("description"))
    cx = OrderedJSONField(
        default=dict,
        blank=True,
        editable=False,
        help_text=_("What a CX import kept verbatim (CX fields Statecraft does not edit)."),
        verbose_name=_("cx"),
    )

    class Meta:
        verbose_name = _("variable")
        verbose_name_plural = _("variables")
        ordering = ["name", "id"]
        constraints = [
            models.UniqueConstraint(fields=["app", "name"], name="variable_unique_name_per_app"),
            models.CheckConstraint(
                condition=models.Q(name__regex=NAME_PATTERN), name="variable_name_valid"
            ),
            models.CheckConstraint(
                condition=models.Q(type__in=VariableType.values), name="variable_type_valid"
            ),
            models.CheckConstraint(
                condition=(
                    models.Q(type=VariableType.LIST, item_type__in=VariableType.values)
                    & ~models.Q(item_type=VariableType.LIST)
                )
                | (~models.Q(type=VariableType.LIST) & models.Q(item_type="")),
                name="variable_item_type_only_for_lists",
            ),
            models.CheckConstraint(
                condition=models.Q(type=VariableType.OBJECT, schema__isnull=False)
                | models.Q(
                    type=VariableType.LIST, item_type=VariableType.OBJECT, schema__isnull=False
                )
                | (
                    models.Q(schema__isnull=True)
                    & ~models.Q(type=VariableType.OBJECT)
                    & ~models.Q(item_type=VariableType.OBJECT)
                ),
                name="variable_schema_only_for_objects",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def type_label(self) -> str:
        """`Number`, `Customer`, `List of Text` (reads `schema`: select_related it)."""
        return type_label(
            spec.VariableType(self.type),
            spec.VariableType(self.item_type) if self.item_type else None,
            self.schema.name if self.schema_id else None,
        )

    def to_spec(self, schema_names: dict[int, str] | None = None) -> spec.VariableSpec:
        if self.schema_id is None:
            schema_name = None
        elif schema_names is not None:
            schema_name = schema_names[self.schema_id]
        else:
            schema_name = self.schema.name
        return spec.VariableSpec(
            name=self.name,
            type=spec.VariableType(self.type),
            default=self.default,
            description=self.description,
            item_type=spec.VariableType(self.item_type) if self.item_type else None,
            schema=schema_name,
            cx=dict(self.cx or {}),
        )


class Tool(TimestampedModel):
    app = models.ForeignKey(
        AgentApp, on_delete=models.CASCADE, related_name="tools", verbose_name=_("app")
    )
    name = models.CharField(max_length=NAME_MAX_LENGTH, verbose_name=_("name"))
    kind = models.CharField(
        max_length=10, choices=ToolKind.choices, default=ToolKind.PYTHON, verbose_name=_("kind")
    )
    description = models.TextField(blank=True, verbose_name=_("description"))
    python_code = models.TextField(
        blank=True,
        help_text=_("Python tool: a function named like the tool."),
        verbose_name=_("python code"),
    )
    openapi_spec = OrderedJSONField(
        null=True,
        blank=True,
        help_text=_("OpenAPI tool: an OpenAPI 3 document with one operation."),
        verbose_name=_("openapi spec"),
    )
    mcp_url = models.URLField(
        blank=True, help_text=_("MCP tool: Streamable-HTTP server URL."), verbose_name=_("mcp url")
    )
    mcp_headers = OrderedJSONField(
        default=dict,
        blank=True,
        help_text=_('MCP tool: headers, e.g. {"X-User": "$context.variables.user_id"}.'),
        verbose_name=_("mcp headers"),
    )
    mock_enabled = models.BooleanField(default=False, verbose_name=_("mock enabled"))
    mock_state = OrderedJSONField(
        default=dict,
        blank=True,
        help_text=_("Mock: variable values the tool sets when called."),
        verbose_name=_("mock state"),
    )
    mock_response = OrderedJSONField(
        null=True,
        blank=True,
        help_text=_("Mock: the JSON response."),
        verbose_name=_("mock response"),
    )
    cx = OrderedJSONField(
        default=dict,
        blank=True,
        editable=False,
        help_text=_("What a CX import kept verbatim (CX fields Statecraft does not edit)."),
        verbose_name=_("cx"),
    )

    class Meta:
        verbose_name = _("tool")
        verbose_name_plural = _("tools")
        ordering = ["name", "id"]
        constraints = [
            models.UniqueConstraint(fields=["app", "name"], name="tool_unique_name_per_app"),
            models.CheckConstraint(
                condition=models.Q(name__regex=NAME_PATTERN), name="tool_name_valid"
            ),
            models.CheckConstraint(
                condition=models.Q(kind__in=ToolKind.values), name="tool_kind_valid"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def to_spec(self) -> spec.ToolSpec:
        mock = (
            spec.ToolMock(state=dict(self.mock_state or {}), response=self.mock_response)
            if self.mock_enabled
            else None
        )
        return spec.ToolSpec(
            name=self.name,
            kind=spec.ToolKind(self.kind),
            description=self.description,
            python_code=self.python_code,
            openapi=self.openapi_spec,
            mcp_url=self.mcp_url,
            mcp_headers=tuple((str(k), str(v)) for k, v in (self.mcp_headers or {}).items()),
            mock=mock,
            cx=dict(self.cx or {}),
        )


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
    kind = models.CharField(max_length=20, choices=CallbackKind.choices, verbose_name=_("kind"))
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


class StepKind(models.TextChoices):
    USER = spec.StepKind.USER, _("User message")
    AGENT = spec.StepKind.AGENT, _("Agent message")
    TOOL = spec.StepKind.TOOL, _("Tool call")
    CALLBACK = spec.StepKind.CALLBACK, _("Callback run")
    EXPECT = spec.StepKind.EXPECT, _("Expectation")


Channel = models.TextChoices("Channel", [(c.upper(), (c, c)) for c in rules.CHANNELS])
Modality = models.TextChoices("Modality", [(m.upper(), (m, m)) for m in rules.MODALITIES])


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
        max_length=10,
        choices=Channel.choices,
        default=SCENARIO_DEFAULTS["channel"],
        verbose_name=_("channel"),
    )
    modality = models.CharField(
        max_length=10,
        choices=Modality.choices,
        default=SCENARIO_DEFAULTS["modality"],
        verbose_name=_("modality"),
    )
    session_id = models.CharField(
        max_length=100, default=SCENARIO_DEFAULTS["session_id"], verbose_name=_("session id")
    )
    project_id = models.CharField(
        max_length=100, default=SCENARIO_DEFAULTS["project_id"], verbose_name=_("project id")
    )
    project_number = models.CharField(
        max_length=30, default=SCENARIO_DEFAULTS["project_number"], verbose_name=_("project number")
    )
    location = models.CharField(
        max_length=50, default=SCENARIO_DEFAULTS["location"], verbose_name=_("location")
    )
    now = models.CharField(
        max_length=40,
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
        max_length=10, choices=StepKind.choices, default=StepKind.USER, verbose_name=_("kind")
    )
    text = models.TextField(
        blank=True, help_text=_("User or agent message."), verbose_name=_("text")
    )
    tool = models.CharField(
        max_length=NAME_MAX_LENGTH,
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
        max_length=20, choices=CallbackKind.choices, blank=True, verbose_name=_("callback kind")
    )
    variables = OrderedJSONField(
        default=dict,
        blank=True,
        help_text=_("User input: session variables it sets (JSON object)."),
        verbose_name=_("variables"),
    )
    event = models.CharField(
        max_length=200, blank=True, help_text=_("User input: its event."), verbose_name=_("event")
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
    NONE = "none", _("No expectations")


class ScenarioResult(models.Model):
    """The last evaluation of a scenario's expectations: when, who, and what came out."""

    scenario = models.OneToOneField(
        Scenario, on_delete=models.CASCADE, related_name="last_result", verbose_name=_("scenario")
    )
    status = models.CharField(max_length=12, choices=ResultStatus.choices, verbose_name=_("status"))
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
    ran_by_name = models.CharField(max_length=150, blank=True, verbose_name=_("ran by name"))
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


# ---------------------------------------------------------------- versions and labels

LABEL_PATTERN = r"\A[a-z0-9][a-z0-9_.-]*\Z"  # the whole text (not "$": "v1\n")
LABEL_MAX_LENGTH = 64


class AppVersion(models.Model):
    """An immutable, named snapshot of a whole app, stored as its native document.

    `number` counts per app from 1; nothing edits a version after it is saved
    (agents/versions.py creates and deletes them, the admin shows them read-only).
    """

    app = models.ForeignKey(
        AgentApp, on_delete=models.CASCADE, related_name="versions", verbose_name=_("app")
    )
    number = models.PositiveIntegerField(verbose_name=_("number"))
    name = models.CharField(max_length=200, verbose_name=_("name"))
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


class UserSettings(models.Model):
    """What a user chose for themselves: the language the designer speaks to them in."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="statecraft_settings",
        verbose_name=_("user"),
    )
    language = models.CharField(_("language"), max_length=8, choices=settings.LANGUAGES, blank=True)

    class Meta:
        verbose_name = _("user settings")
        verbose_name_plural = _("user settings")

    def __str__(self) -> str:
        return f"{self.user} · {self.language or '-'}"


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


# ---------------------------------------------------------------- rate-limit counts


class RateLimitCount(models.Model):
    """One window's count of one scope and requester (agents/ratelimit.py), when no Redis is
    configured: every gunicorn worker counts in the same row (an atomic UPDATE), so a limit
    holds across workers. `expires_at` is ratelimit.now() seconds; old rows are purged."""

    key = models.CharField(
        max_length=64, primary_key=True, verbose_name=_("key")
    )  # sha256 of scope, who, window
    count = models.PositiveIntegerField(default=0, verbose_name=_("count"))
    expires_at = models.FloatField(db_index=True, verbose_name=_("expires at"))

    class Meta:
        verbose_name = _("rate-limit count")
        verbose_name_plural = _("rate-limit counts")

    def __str__(self) -> str:
        return f"{self.key[:12]}… = {self.count}"


# --------------------------------------------------------------------------- live models


class EndpointKind(models.TextChoices):
    OPENAI = "openai", "OpenAI-compatible (chat completions)"
    GEMINI = "gemini", "Gemini (API key or Vertex AI)"


class ModelEndpoint(TimestampedModel):
    """A model an operator configured in the admin (besides ``STATECRAFT_MODELS``).

    The API key is stored encrypted (``agents.keyring``) and never shown again: nothing
    reads `api_key_encrypted` but the model client. Not part of any app: never exported,
    versioned or audited."""

    name = models.CharField(max_length=60, unique=True, verbose_name=_("name"))
    kind = models.CharField(max_length=10, choices=EndpointKind.choices, verbose_name=_("kind"))
    model = models.CharField(
        max_length=200,
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
    project = models.CharField(max_length=100, blank=True, verbose_name=_("project"))
    location = models.CharField(max_length=50, blank=True, verbose_name=_("location"))
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
    model = models.CharField(max_length=60, verbose_name=_("model"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("app model default")
        verbose_name_plural = _("app model defaults")

    def __str__(self) -> str:
        return f"{self.app}: {self.model}"


class LiveRunMode(models.TextChoices):
    LIVE = "live", "Live"
    REPLAY = "replay", "Replay"


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
    model_name = models.CharField(max_length=60, verbose_name=_("model name"))
    mode = models.CharField(
        max_length=8, choices=LiveRunMode.choices, default=LiveRunMode.LIVE, verbose_name=_("mode")
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
        max_length=12, choices=ResultStatus.choices, default="none", verbose_name=_("status")
    )
    error = models.CharField(
        max_length=30,
        blank=True,
        help_text=_("A named model error, if any."),
        verbose_name=_("error"),
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
    ran_by_name = models.CharField(max_length=150, blank=True, verbose_name=_("ran by name"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))

    class Meta:
        verbose_name_plural = _("live runs")
        ordering = ["-created_at", "-id"]
        verbose_name = _("live run")

    def __str__(self) -> str:
        return f"{self.scenario_name} · {self.model_name} · {self.mode}"


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
    kind = models.CharField(max_length=64)
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
    status = models.CharField(max_length=12, choices=JobStatus.choices, default=JobStatus.QUEUED)
    params = models.JSONField(default=dict, blank=True)
    caps = models.JSONField(default=dict, blank=True, help_text="Steps, code calls, seconds...")
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    current = models.CharField(max_length=300, blank=True)
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    cancel_requested = models.BooleanField(default=False)
    worker = models.CharField(max_length=200, blank=True, help_text="host:pid running it")
    task_id = models.CharField(max_length=64, blank=True, help_text="The task queue's id")
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
    key = models.CharField(max_length=100)
    position = models.PositiveIntegerField(default=0)
    data = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["position", "pk"]
        constraints = [models.UniqueConstraint(fields=["job", "key"], name="job_item_once")]

    def __str__(self) -> str:
        return f"{self.job_id} {self.key}"
