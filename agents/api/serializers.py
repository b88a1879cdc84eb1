"""API shapes: input serializers validate a request's JSON, output serializers render objects.

Input serializers only check shapes and resolve names to rows of the app (passed as
`context["app"]`); every rule about what may be saved lives in `agents.services`.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from agents.core import rules
from agents.core.script import format_script
from agents.i18n import localize
from agents.models import (
    Agent,
    AgentApp,
    Channel,
    Modality,
    Scenario,
    Schema,
    Tool,
    ToolKind,
    Variable,
    VariableType,
)

MAX_ID = rules.MAX_ID
ITEM_TYPES = [c for c in VariableType.choices if c[0] != VariableType.LIST]
# The identifiers stay; their labels (the schema's enum descriptions) read in the language.
SEVERITIES = [("error", _("error")), ("warning", _("warning")), ("info", _("info"))]


def _app(serializer: serializers.Serializer) -> AgentApp:
    return serializer.context["app"]


class BlankAsNullCharField(serializers.CharField):
    """Renders an empty string as null (an unset optional choice)."""

    def to_representation(self, value: Any) -> str | None:
        return str(value) if value else None


# ---------------------------------------------------------------- errors and diagnostics


class MessageField(serializers.CharField):
    """A message in the request's language (Accept-Language): the core's English `Message`
    template translated, its parameters filled in. Codes are never translated."""

    def to_representation(self, value: Any) -> str:
        return localize(value)


class DiagnosticOut(serializers.Serializer):
    code = serializers.CharField(
        help_text=_("Stable code, e.g. SC003 (see /docs/reference/diagnostics/).")
    )
    severity = serializers.ChoiceField(choices=SEVERITIES)
    message = MessageField()
    line = serializers.IntegerField(allow_null=True, help_text=_("1-based, in the instructions."))
    column = serializers.IntegerField(allow_null=True)
    start = serializers.IntegerField(allow_null=True, help_text=_("Character offset."))
    end = serializers.IntegerField(allow_null=True)
    field = serializers.CharField(
        allow_null=True, help_text=_("The request field concerned; `__all__` for the whole object.")
    )
    subject = serializers.CharField(allow_null=True)
    reference = serializers.CharField(
        allow_null=True, help_text=_("The name the problem is about, e.g. an undeclared variable.")
    )


@extend_schema_serializer(
    description=_("Every 400 and 409 answer; 401/403/404 carry `detail` only.")
)
class ErrorOut(serializers.Serializer):
    """Every 400 and 409 answer; 401/403/404 carry `detail` only."""

    detail = serializers.CharField(help_text=_("The messages in one sentence."))
    diagnostics = DiagnosticOut(many=True, required=False)


# ---------------------------------------------------------------- apps


class AppIn(serializers.Serializer):
    name = serializers.CharField(max_length=rules.APP_NAME_MAX_LENGTH)
    description = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)


class AppPatchIn(AppIn):
    name = serializers.CharField(max_length=rules.APP_NAME_MAX_LENGTH, required=False)
    version = serializers.IntegerField(
        required=False, min_value=1, max_value=MAX_ID, help_text=_("The version you read.")
    )


class AppOut(serializers.ModelSerializer):
    owner = serializers.CharField(source="owner.get_username", read_only=True)
    role = serializers.SerializerMethodField(help_text=_("Your access: owner, editor or viewer."))
    variable_count = serializers.IntegerField(read_only=True)
    agent_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = AgentApp
        fields = [
            "id",
            "name",
            "description",
            "owner",
            "role",
            "variable_count",
            "agent_count",
            "version",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    @extend_schema_field(serializers.ChoiceField(choices=["owner", "editor", "viewer"]))
    def get_role(self, app: AgentApp) -> str:
        user = self.context["request"].user
        if app.owner_id == user.pk:
            return "owner"
        # `my_shares` is prefetched by the view; `access` is set on a single app.
        shares = getattr(app, "my_shares", None)
        if shares is not None:
            return shares[0].role if shares else "viewer"
        return self.context["access"].role


# ---------------------------------------------------------------- schemas


class SchemaIn(serializers.Serializer):
    name = serializers.CharField(allow_blank=True, trim_whitespace=False)
    description = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)
    json_schema = serializers.JSONField(help_text=_("A JSON Schema (draft 2020-12) object."))


class SchemaPatchIn(SchemaIn):
    name = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)
    json_schema = serializers.JSONField(required=False)
    version = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)


class SchemaOut(serializers.ModelSerializer):
    json_schema = serializers.JSONField(read_only=True)

    class Meta:
        model = Schema
        fields = ["name", "description", "json_schema", "version", "created_at", "updated_at"]
        read_only_fields = fields


# ---------------------------------------------------------------- variables


class VariableIn(serializers.Serializer):
    name = serializers.CharField(allow_blank=True, trim_whitespace=False)
    type = serializers.ChoiceField(choices=VariableType.choices)
    item_type = serializers.ChoiceField(
        choices=ITEM_TYPES,
        required=False,
        allow_null=True,
        allow_blank=True,
        help_text=_("For a list: the type of its items."),
    )
    schema = serializers.CharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        help_text=_("For a custom object or a list of them: the schema's name."),
    )
    default = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text=_("Typed JSON: a number is a JSON number, a list a JSON array; null: none."),
    )
    description = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)

    def validate_item_type(self, value: str | None) -> str:
        return value or ""

    def validate_schema(self, value: str | None) -> Schema | None:
        if not value:
            return None
        schema = _app(self).schemas.filter(name=value).first()
        if schema is None:
            raise serializers.ValidationError(
                _("This app has no schema named '%(name)s'.") % {"name": value}
            )
        return schema


class VariablePatchIn(VariableIn):
    name = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)
    type = serializers.ChoiceField(choices=VariableType.choices, required=False)
    version = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)
    update_references = serializers.BooleanField(
        required=False,
        default=False,
        help_text=_("With a new name: also rewrite every reference (instructions, tools)."),
    )


class VariableOut(serializers.ModelSerializer):
    item_type = BlankAsNullCharField(read_only=True, allow_null=True)
    schema = serializers.SlugRelatedField(slug_field="name", read_only=True, allow_null=True)
    default = serializers.JSONField(read_only=True, allow_null=True)
    type_label = serializers.CharField(read_only=True)

    class Meta:
        model = Variable
        fields = [
            "name",
            "type",
            "item_type",
            "schema",
            "type_label",
            "default",
            "description",
            "version",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


# ---------------------------------------------------------------- tools


class ToolIn(serializers.Serializer):
    name = serializers.CharField(allow_blank=True, trim_whitespace=False)
    kind = serializers.ChoiceField(choices=ToolKind.choices, required=False)
    description = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)
    python_code = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)
    openapi_spec = serializers.JSONField(
        required=False, allow_null=True, help_text=_("OpenAPI 3 document with one operation.")
    )
    mcp_url = serializers.URLField(
        required=False, allow_blank=True, max_length=rules.URL_MAX_LENGTH
    )
    mcp_headers = serializers.JSONField(
        required=False, help_text=_('e.g. {"X-User": "$context.variables.user_id"}')
    )
    mock_enabled = serializers.BooleanField(required=False)
    mock_state = serializers.JSONField(
        required=False, help_text=_("Variable values the mock sets when called.")
    )
    mock_response = serializers.JSONField(required=False, allow_null=True)


class ToolPatchIn(ToolIn):
    name = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)
    version = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)
    update_references = serializers.BooleanField(
        required=False,
        default=True,
        help_text=_("With a new name: also rewrite every {@TOOL: …} reference."),
    )


class ToolOut(serializers.ModelSerializer):
    openapi_spec = serializers.JSONField(read_only=True, allow_null=True)
    mcp_headers = serializers.JSONField(read_only=True)
    mock_state = serializers.JSONField(read_only=True)
    mock_response = serializers.JSONField(read_only=True, allow_null=True)

    class Meta:
        model = Tool
        fields = [
            "name",
            "kind",
            "description",
            "python_code",
            "openapi_spec",
            "mcp_url",
            "mcp_headers",
            "mock_enabled",
            "mock_state",
            "mock_response",
            "version",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


# ---------------------------------------------------------------- agents


class AgentIn(serializers.Serializer):
    display_name = serializers.CharField(max_length=rules.DISPLAY_NAME_MAX_LENGTH)
    description = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)
    instructions = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)
    is_root = serializers.BooleanField(
        required=False, help_text=_("true makes this the root agent (the previous root is not).")
    )
    tools = serializers.ListField(
        child=serializers.CharField(), required=False, help_text=_("Names of the app's tools.")
    )
    children = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text=_("Display names of the sub-agents (other agents of the app)."),
    )

    def validate_tools(self, names: list[str]) -> list[Tool]:
        found = {t.name: t for t in _app(self).tools.filter(name__in=names)}
        missing = [n for n in names if n not in found]
        if missing:
            raise serializers.ValidationError(
                _("No tool named %(names)s in this app.") % {"names": ", ".join(missing)}
            )
        return [found[n] for n in dict.fromkeys(names)]

    def validate_children(self, names: list[str]) -> list[Agent]:
        agents = {a.display_name.lower(): a for a in _app(self).agents.all()}
        missing = [n for n in names if n.strip().lower() not in agents]
        if missing:
            raise serializers.ValidationError(
                _("No agent named %(names)s in this app.") % {"names": ", ".join(missing)}
            )
        return list(
            {agents[n.strip().lower()].pk: agents[n.strip().lower()] for n in names}.values()
        )


class AgentPatchIn(AgentIn):
    display_name = serializers.CharField(max_length=rules.DISPLAY_NAME_MAX_LENGTH, required=False)
    version = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)


class CallbackOut(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.CharField()
    order = serializers.IntegerField()
    code = serializers.CharField()


class AgentSummaryOut(serializers.ModelSerializer):
    class Meta:
        model = Agent
        fields = ["id", "display_name", "description", "is_root", "version"]
        read_only_fields = fields


class AgentOut(serializers.ModelSerializer):
    tools = serializers.SlugRelatedField(slug_field="name", many=True, read_only=True)
    children = serializers.SlugRelatedField(slug_field="display_name", many=True, read_only=True)
    callbacks = CallbackOut(many=True, read_only=True)

    class Meta:
        model = Agent
        fields = [
            "id",
            "display_name",
            "description",
            "instructions",
            "is_root",
            "tools",
            "children",
            "callbacks",
            "version",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


class AppDetailOut(AppOut):
    variables = VariableOut(many=True, read_only=True)
    schemas = SchemaOut(many=True, read_only=True)
    tools = ToolOut(many=True, read_only=True)
    agents = AgentSummaryOut(many=True, read_only=True)

    class Meta(AppOut.Meta):
        fields = [
            *(f for f in AppOut.Meta.fields if not f.endswith("_count")),
            "variables",
            "schemas",
            "tools",
            "agents",
        ]
        read_only_fields = fields


# ---------------------------------------------------------------- scenarios


class ScenarioIn(serializers.Serializer):
    name = serializers.CharField(max_length=rules.SCENARIO_NAME_MAX_LENGTH)
    steps_script = serializers.CharField(
        required=False,
        allow_blank=True,
        trim_whitespace=False,
        help_text=(
            _(
                "The steps, one per line: `user: text`, `agent: text`, "
                '`tool: Name {"arg": 1}`, `callback: before_model`.'
            )
        ),
    )
    session_values = serializers.JSONField(
        required=False, help_text=_('Initial values overriding defaults: {"name": value}.')
    )
    channel = serializers.ChoiceField(choices=Channel.choices, required=False)
    modality = serializers.ChoiceField(choices=Modality.choices, required=False)
    session_id = serializers.CharField(max_length=rules.SESSION_ID_MAX_LENGTH, required=False)
    project_id = serializers.CharField(max_length=rules.PROJECT_ID_MAX_LENGTH, required=False)
    project_number = serializers.CharField(
        max_length=rules.PROJECT_NUMBER_MAX_LENGTH, required=False
    )
    location = serializers.CharField(max_length=rules.LOCATION_MAX_LENGTH, required=False)
    now = serializers.CharField(
        max_length=rules.NOW_MAX_LENGTH,
        required=False,
        allow_blank=True,
        help_text=_(
            "The session clock code reads (ISO date-time, like 2026-06-01T12:00:00); "
            "empty: the real clock."
        ),
    )
    token_budget = serializers.IntegerField(
        min_value=1, max_value=rules.TOKEN_BUDGET_MAX, required=False
    )
    use_mocks = serializers.BooleanField(required=False)


class ScenarioPatchIn(ScenarioIn):
    name = serializers.CharField(max_length=rules.SCENARIO_NAME_MAX_LENGTH, required=False)
    version = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)


class StepOut(serializers.Serializer):
    kind = serializers.CharField(help_text=_("user, agent, tool, callback or expect."))
    text = serializers.CharField()
    tool = serializers.CharField()
    args = serializers.JSONField()
    callback_kind = BlankAsNullCharField(allow_null=True)
    variables = serializers.JSONField(help_text=_("User input: session variables it sets."))
    event = serializers.CharField(help_text=_("User input: its event."))
    expectation = serializers.JSONField(
        allow_null=True, help_text=_("Expect: {kind, tool, agent, value, note}.")
    )


class ScenarioOut(serializers.ModelSerializer):
    agent = serializers.IntegerField(source="agent_id", read_only=True)
    session_values = serializers.JSONField(read_only=True)
    steps = StepOut(many=True, read_only=True)
    steps_script = serializers.SerializerMethodField()

    class Meta:
        model = Scenario
        fields = [
            "id",
            "agent",
            "name",
            "steps_script",
            "steps",
            "session_values",
            "channel",
            "modality",
            "session_id",
            "project_id",
            "project_number",
            "location",
            "now",
            "token_budget",
            "use_mocks",
            "pinned_run",
            "version",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    def get_steps_script(self, scenario: Scenario) -> str:
        return format_script(tuple(step.to_spec() for step in scenario.steps.all()))


# ---------------------------------------------------------------- jobs


class JobAcceptedOut(serializers.Serializer):
    id = serializers.UUIDField()
    url = serializers.URLField(help_text=_("GET it for progress and the result."))
    status = serializers.ChoiceField(
        choices=["queued", "running", "succeeded", "failed", "cancelled"]
    )
