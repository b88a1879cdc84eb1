"""API shapes: input serializers validate a request's JSON, output serializers render objects.

Input serializers only check shapes and resolve names to rows of the app (passed as
`context["app"]`); every rule about what may be saved lives in `agents.services`.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
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
    code = serializers.CharField(help_text="Stable code, e.g. SC003 (see the README).")
    severity = serializers.ChoiceField(choices=["error", "warning", "info"])
    message = MessageField()
    line = serializers.IntegerField(allow_null=True, help_text="1-based, in the instructions.")
    column = serializers.IntegerField(allow_null=True)
    start = serializers.IntegerField(allow_null=True, help_text="Character offset.")
    end = serializers.IntegerField(allow_null=True)
    field = serializers.CharField(
        allow_null=True, help_text="The request field concerned; `__all__` for the whole object."
    )
    subject = serializers.CharField(allow_null=True)
    reference = serializers.CharField(
        allow_null=True, help_text="The name the problem is about, e.g. an undeclared variable."
    )


class ErrorOut(serializers.Serializer):
    """Every 400 and 409 answer; 401/403/404 carry `detail` only."""

    detail = serializers.CharField(help_text="The messages in one sentence.")
    diagnostics = DiagnosticOut(many=True, required=False)


class DiagnosticsOut(serializers.Serializer):
    diagnostics = DiagnosticOut(many=True)


class ImportIn(serializers.Serializer):
    file = serializers.FileField(help_text="A .json/.yaml Statecraft export or a CX .zip.")
    name = serializers.CharField(required=False, help_text="The new app's name.")


class ReportRowOut(serializers.Serializer):
    severity = serializers.ChoiceField(choices=["error", "warning", "info"])
    code = serializers.CharField()
    field = serializers.CharField(help_text="The field in the file ('' for the whole file).")
    message = MessageField()


class ReportFileOut(serializers.Serializer):
    file = serializers.CharField(help_text="A file of the CX ZIP, or the uploaded file.")
    diagnostics = ReportRowOut(many=True)
    kept_whole = serializers.BooleanField(
        help_text="The file is kept as is and written back on export; nothing else to say."
    )


class ImportReportOut(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["native", "cx"])
    file = serializers.CharField(help_text="The uploaded file's name.")
    counts = serializers.DictField(child=serializers.IntegerField())
    files = ReportFileOut(many=True, help_text="Every diagnostic, grouped by file.")
    kept_files = serializers.IntegerField(help_text="How many files are kept whole.")


class ImportedAppOut(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    url = serializers.CharField()


class ImportOut(serializers.Serializer):
    """201: `app` and `report`; 400: `detail`, `diagnostics` and `report` (nothing created)."""

    app = ImportedAppOut(required=False)
    detail = serializers.CharField(required=False)
    diagnostics = DiagnosticOut(many=True, required=False)
    report = ImportReportOut()


# ---------------------------------------------------------------- apps


class AppIn(serializers.Serializer):
    name = serializers.CharField(max_length=rules.APP_NAME_MAX_LENGTH)
    description = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)


class AppPatchIn(AppIn):
    name = serializers.CharField(max_length=rules.APP_NAME_MAX_LENGTH, required=False)
    version = serializers.IntegerField(
        required=False, min_value=1, max_value=MAX_ID, help_text="The version you read."
    )


class AppOut(serializers.ModelSerializer):
    owner = serializers.CharField(source="owner.get_username", read_only=True)
    role = serializers.SerializerMethodField(help_text="Your access: owner, editor or viewer.")
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
    json_schema = serializers.JSONField(help_text="A JSON Schema (draft 2020-12) object.")


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
        help_text="For a list: the type of its items.",
    )
    schema = serializers.CharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        help_text="For a custom object or a list of them: the schema's name.",
    )
    default = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text="Typed JSON: a number is a JSON number, a list a JSON array; null: none.",
    )
    description = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)

    def validate_item_type(self, value: str | None) -> str:
        return value or ""

    def validate_schema(self, value: str | None) -> Schema | None:
        if not value:
            return None
        schema = _app(self).schemas.filter(name=value).first()
        if schema is None:
            raise serializers.ValidationError(f"This app has no schema named '{value}'.")
        return schema


class VariablePatchIn(VariableIn):
    name = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)
    type = serializers.ChoiceField(choices=VariableType.choices, required=False)
    version = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)
    update_references = serializers.BooleanField(
        required=False,
        default=False,
        help_text="With a new name: also rewrite every reference (instructions, tools).",
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
        required=False, allow_null=True, help_text="OpenAPI 3 document with one operation."
    )
    mcp_url = serializers.URLField(
        required=False, allow_blank=True, max_length=rules.URL_MAX_LENGTH
    )
    mcp_headers = serializers.JSONField(
        required=False, help_text='e.g. {"X-User": "$context.variables.user_id"}'
    )
    mock_enabled = serializers.BooleanField(required=False)
    mock_state = serializers.JSONField(
        required=False, help_text="Variable values the mock sets when called."
    )
    mock_response = serializers.JSONField(required=False, allow_null=True)


class ToolPatchIn(ToolIn):
    name = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)
    version = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)
    update_references = serializers.BooleanField(
        required=False,
        default=True,
        help_text="With a new name: also rewrite every {@TOOL: …} reference.",
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
        required=False, help_text="true makes this the root agent (the previous root is not)."
    )
    tools = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="Names of the app's tools."
    )
    children = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="Display names of the sub-agents (other agents of the app).",
    )

    def validate_tools(self, names: list[str]) -> list[Tool]:
        found = {t.name: t for t in _app(self).tools.filter(name__in=names)}
        missing = [n for n in names if n not in found]
        if missing:
            raise serializers.ValidationError(f"No tool named {', '.join(missing)} in this app.")
        return [found[n] for n in dict.fromkeys(names)]

    def validate_children(self, names: list[str]) -> list[Agent]:
        agents = {a.display_name.lower(): a for a in _app(self).agents.all()}
        missing = [n for n in names if n.strip().lower() not in agents]
        if missing:
            raise serializers.ValidationError(f"No agent named {', '.join(missing)} in this app.")
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
            "The steps, one per line: `user: text`, `agent: text`, "
            '`tool: Name {"arg": 1}`, `callback: before_model`.'
        ),
    )
    session_values = serializers.JSONField(
        required=False, help_text='Initial values overriding defaults: {"name": value}.'
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
        help_text="The session clock code reads (ISO date-time, like 2026-06-01T12:00:00); "
        "empty: the real clock.",
    )
    token_budget = serializers.IntegerField(
        min_value=1, max_value=rules.TOKEN_BUDGET_MAX, required=False
    )
    use_mocks = serializers.BooleanField(required=False)


class ScenarioPatchIn(ScenarioIn):
    name = serializers.CharField(max_length=rules.SCENARIO_NAME_MAX_LENGTH, required=False)
    version = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)


class StepOut(serializers.Serializer):
    kind = serializers.CharField(help_text="user, agent, tool, callback or expect.")
    text = serializers.CharField()
    tool = serializers.CharField()
    args = serializers.JSONField()
    callback_kind = BlankAsNullCharField(allow_null=True)
    variables = serializers.JSONField(help_text="User input: session variables it sets.")
    event = serializers.CharField(help_text="User input: its event.")
    expectation = serializers.JSONField(
        allow_null=True, help_text="Expect: {kind, tool, agent, value, note}."
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
            "version",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    def get_steps_script(self, scenario: Scenario) -> str:
        return format_script(tuple(step.to_spec() for step in scenario.steps.all()))


# ---------------------------------------------------------------- actions


class CompileIn(serializers.Serializer):
    instructions = serializers.CharField(
        required=False,
        allow_blank=True,
        trim_whitespace=False,
        help_text="Text to compile; default: the agent's saved instructions.",
    )
    values = serializers.DictField(
        child=serializers.JSONField(allow_null=True),
        required=False,
        help_text="Typed values over the defaults: {name: value}; null removes a default.",
    )
    channel = serializers.ChoiceField(choices=Channel.choices, required=False, default="web")
    modality = serializers.ChoiceField(choices=Modality.choices, required=False, default="text")


class SpanOut(serializers.Serializer):
    start = serializers.IntegerField()
    end = serializers.IntegerField()
    kind = serializers.CharField(help_text="static, missing, dynamic, tool or agent.")
    name = serializers.CharField()


class CompileOut(serializers.Serializer):
    text = serializers.CharField(help_text="The compiled prompt.")
    diagnostics = DiagnosticOut(many=True)
    spans = SpanOut(many=True, help_text="Where values and kept references are in `text`.")


class SimulateIn(serializers.Serializer):
    use_mocks = serializers.BooleanField(
        required=False, help_text="Use tool mocks even when a tool has code (default: scenario's)."
    )
    instructions = serializers.CharField(
        required=False,
        allow_blank=True,
        trim_whitespace=False,
        help_text="Unsaved instructions to simulate; default: the saved ones.",
    )
    model = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=rules.MODEL_NAME_MAX_LENGTH,
        help_text="Run live with this configured model (GET /api/models); empty: scripted.",
    )


class ModelIn(serializers.Serializer):
    model = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=rules.MODEL_NAME_MAX_LENGTH,
        help_text="Run the goldens live with this configured model; empty: scripted.",
    )


class GoldenIn(serializers.Serializer):
    name = serializers.CharField(
        max_length=rules.SCENARIO_NAME_MAX_LENGTH, help_text="The new scenario's name."
    )


class ModelEndpointOut(serializers.Serializer):
    name = serializers.CharField()
    kind = serializers.CharField(help_text="openai or gemini.")
    model = serializers.CharField()
    base_url = serializers.CharField()
    label = serializers.CharField()
    source = serializers.CharField(help_text="env (STATECRAFT_MODELS) or admin.")
    has_key = serializers.BooleanField(help_text="Whether a key is configured (never the key).")


class LiveCallOut(serializers.Serializer):
    index = serializers.IntegerField()
    turn = serializers.IntegerField()
    fingerprint = serializers.CharField(help_text="SHA-256 of the request's canonical JSON.")
    tokens_in = serializers.IntegerField()
    tokens_out = serializers.IntegerField()
    cost = serializers.FloatField(help_text="Estimated USD (README: Costs and caps).")
    retries = serializers.IntegerField()
    error = serializers.CharField(help_text="auth, quota, timeout, refused, cap… or empty.")
    message = serializers.CharField()
    parts = serializers.JSONField(help_text="The answer: text and function-call parts.")


class DriftOut(serializers.Serializer):
    call = serializers.IntegerField(help_text="The model call (from 0) whose request differs.")
    turn = serializers.IntegerField()
    changes = serializers.ListField(child=serializers.CharField())


class LiveRunOut(serializers.Serializer):
    id = serializers.IntegerField(allow_null=True, help_text="The stored run (null: not stored).")
    mode = serializers.CharField(help_text="live or replay.")
    model = serializers.CharField()
    replay_of = serializers.IntegerField(allow_null=True)
    status = serializers.CharField()
    error = serializers.CharField()
    tokens_in = serializers.IntegerField()
    tokens_out = serializers.IntegerField()
    cost = serializers.FloatField()
    calls = LiveCallOut(many=True)
    drift = DriftOut(many=True)
    results = serializers.JSONField(help_text="Each expectation checked against the model.")


class HeaderOut(serializers.Serializer):
    name = serializers.CharField()
    value = serializers.CharField()


class HttpRequestOut(serializers.Serializer):
    tool = serializers.CharField()
    method = serializers.CharField()
    url = serializers.CharField()
    headers = serializers.SerializerMethodField()
    body = serializers.CharField(allow_null=True)

    @extend_schema_field(HeaderOut(many=True))
    def get_headers(self, request: Any) -> list[dict[str, str]]:
        return [{"name": name, "value": value} for name, value in request.headers]


class EventOut(serializers.Serializer):
    index = serializers.IntegerField()
    turn = serializers.IntegerField()
    kind = serializers.CharField(
        help_text="user, agent, tool_call, tool_response, state_update, callback, transfer, "
        "error or note (a designer-only remark, never an error)."
    )
    text = serializers.CharField(help_text="What the model sees (empty for callback, note, error).")
    tokens = serializers.IntegerField()
    label = serializers.CharField()
    source = serializers.CharField()
    variable = serializers.CharField(allow_null=True)
    value = serializers.JSONField(allow_null=True)
    error = DiagnosticOut(allow_null=True)
    step = serializers.IntegerField(allow_null=True)
    dropped_at_turn = serializers.IntegerField(allow_null=True)
    model_visible = serializers.BooleanField()
    model_call = serializers.IntegerField(
        allow_null=True, help_text="The model call this event answers (agent, tool_call)."
    )
    instructions_changed = serializers.ListField(
        child=serializers.CharField(),
        help_text="Static variables whose value in the instructions changed since the "
        "previous model call (on the first event of a model call's answer).",
    )


class ModelCallOut(serializers.Serializer):
    index = serializers.IntegerField()
    turn = serializers.IntegerField()
    step = serializers.IntegerField(allow_null=True)
    instructions = serializers.CharField(
        help_text="Compiled from the state just before this model call."
    )
    instruction_tokens = serializers.IntegerField()
    changed = serializers.ListField(
        child=serializers.CharField(),
        help_text="Static variables whose value changed since the previous model call.",
    )
    scripted = serializers.SerializerMethodField(help_text="The scenario's answer, as parts.")
    answer = serializers.SerializerMethodField(
        help_text="The answer the turn went on with, as parts."
    )
    replaced_by = serializers.CharField(
        help_text="before_model_callback, after_model_callback, or empty."
    )
    history = serializers.ListField(
        child=serializers.IntegerField(), help_text="Events the model received."
    )

    @extend_schema_field(serializers.ListField(child=serializers.DictField()))
    def get_scripted(self, call: Any) -> list[dict[str, Any]]:
        return [dict(part) for part in call.scripted]

    @extend_schema_field(serializers.ListField(child=serializers.DictField()))
    def get_answer(self, call: Any) -> list[dict[str, Any]]:
        return [dict(part) for part in call.answer]


class TurnOut(serializers.Serializer):
    index = serializers.IntegerField()
    events = serializers.ListField(child=serializers.IntegerField(), help_text="Event indexes.")
    state_after = serializers.JSONField(help_text="Variable values after the turn.")
    changed = serializers.ListField(child=serializers.CharField())
    builtins = serializers.JSONField(help_text="$context values at the end of the turn.")
    model_input = serializers.ListField(
        child=serializers.IntegerField(), help_text="Events in the context window."
    )
    tokens_used = serializers.IntegerField()
    dropped = serializers.ListField(child=serializers.IntegerField())
    warnings = DiagnosticOut(many=True)
    http = HttpRequestOut(many=True)
    instructions = serializers.CharField(help_text="Those of the turn's last model call.")


@extend_schema_field(OpenApiTypes.OBJECT)
class StateField(serializers.JSONField):
    pass


class SimulationOut(serializers.Serializer):
    use_mocks = serializers.BooleanField()
    instructions = serializers.CharField(
        help_text="Compiled with the values at session start (each model call compiles "
        "them again: model_calls)."
    )
    instruction_tokens = serializers.IntegerField()
    instruction_diagnostics = DiagnosticOut(many=True)
    diagnostics = DiagnosticOut(many=True, help_text="Step errors and warnings, in order.")
    turns = TurnOut(many=True)
    events = EventOut(many=True)
    model_calls = ModelCallOut(many=True)
    final_state = StateField()
    live = LiveRunOut(required=False, allow_null=True, help_text="A live run's calls and cost.")


class ExpectationResultOut(serializers.Serializer):
    step = serializers.IntegerField(help_text="Index of the expectation's step (from 0).")
    turn = serializers.IntegerField()
    kind = serializers.CharField(help_text="state, call, response, no calls, transfer, agent.")
    line = serializers.CharField(help_text="The expectation as its script line.")
    note = serializers.CharField()
    status = serializers.ChoiceField(choices=["passed", "failed", "needs_model"])
    message = MessageField()
    expected = serializers.JSONField(allow_null=True)
    actual = serializers.JSONField(allow_null=True)
    differences = serializers.ListField(child=serializers.CharField())


class ScenarioEvaluationOut(serializers.Serializer):
    scenario = serializers.IntegerField()
    name = serializers.CharField()
    agent = serializers.IntegerField()
    agent_name = serializers.CharField()
    status = serializers.ChoiceField(choices=["passed", "failed", "needs_model", "none"])
    passed = serializers.IntegerField()
    failed = serializers.IntegerField()
    needs_model = serializers.IntegerField()
    results = ExpectationResultOut(many=True)
    diagnostics = DiagnosticOut(many=True, help_text="The simulation's step errors and warnings.")


class EvaluationSummaryOut(serializers.Serializer):
    passed = serializers.IntegerField()
    failed = serializers.IntegerField()
    needs_model = serializers.IntegerField()
    no_expectations = serializers.IntegerField()


class AppEvaluationOut(serializers.Serializer):
    ok = serializers.BooleanField(help_text="No expectation failed.")
    summary = EvaluationSummaryOut()
    scenarios = ScenarioEvaluationOut(many=True)


class JobAcceptedOut(serializers.Serializer):
    id = serializers.UUIDField()
    url = serializers.URLField(help_text="GET it for progress and the result.")
    status = serializers.ChoiceField(
        choices=["queued", "running", "succeeded", "failed", "cancelled"]
    )


class JobProgressOut(serializers.Serializer):
    done = serializers.IntegerField()
    total = serializers.IntegerField()


class JobOut(serializers.Serializer):
    id = serializers.UUIDField()
    kind = serializers.CharField(help_text="evaluate_app, evaluate_scenario, version_diff...")
    url = serializers.URLField()
    status = serializers.ChoiceField(
        choices=["queued", "running", "succeeded", "failed", "cancelled"]
    )
    progress = JobProgressOut()
    current = serializers.CharField(help_text="What runs now (agent / scenario), or empty.")
    result = serializers.JSONField(
        allow_null=True,
        help_text="evaluate_app: {ok, summary, scenarios}; `scenarios` (each as "
        "ScenarioEvaluationOut) fill in while it runs. evaluate_scenario: one "
        "ScenarioEvaluationOut. Null while nothing finished.",
    )
    error = serializers.CharField(help_text="Why it failed or was cancelled; empty otherwise.")
    attempts = serializers.IntegerField(
        help_text="Runs so far (a job whose worker died is retried)."
    )
    caps = serializers.JSONField(
        help_text="max_steps, max_code_calls, max_seconds, max_model_calls, max_tokens."
    )
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
