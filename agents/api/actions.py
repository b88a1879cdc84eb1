"""The API's action endpoints on an app's content, and their shapes: lint, compile,
simulate, evaluate (one scenario or the whole app, as jobs).

Viewers may call them all: they read the app and change none of its content (an
evaluation stores the scenario's last result) — but not live (a `model` or a `judge`:
the operator's model key is spent), which needs edit rights (the services refuse it:
``LiveNotAllowed``, a 403). Live runs and evaluations are jobs, submitted by the services'
use cases (``live_jobs.live_run_submit``, ``evaluation.run_all_submit``). Compile,
lint and simulate serve the app from the spec cached by revision (`selectors.app_spec`),
as the designer's preview does, so a warm cache answers in the same few queries.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import exceptions, serializers
from rest_framework.request import Request
from rest_framework.response import Response

from agents import selectors, services
from agents.api.base import (
    ERRORS,
    JOB_ACCEPTED,
    READ_ERRORS,
    ApiView,
    InvalidInput,
    accepted,
    submitted,
)
from agents.api.json_boundary import json_data_response
from agents.api.serializers import DiagnosticOut, MessageField
from agents.api.throttles import CompileThrottle, SimulateThrottle, with_default_throttles
from agents.core import rules
from agents.core.lint import lint_app
from agents.core.simulate import SimulationResult
from agents.models import Agent, AgentApp, Channel, Modality, Scenario
from agents.services import evaluation, live_jobs

# ---------------------------------------------------------------- shapes


class DiagnosticsOut(serializers.Serializer):
    diagnostics = DiagnosticOut(many=True)


class CompileIn(serializers.Serializer):
    instructions = serializers.CharField(
        required=False,
        allow_blank=True,
        trim_whitespace=False,
        help_text=gettext_lazy("Text to compile; default: the agent's saved instructions."),
    )
    values = serializers.DictField(
        child=serializers.JSONField(allow_null=True),
        required=False,
        help_text=gettext_lazy(
            "Typed values over the defaults: {name: value}; null removes a default."
        ),
    )
    channel = serializers.ChoiceField(choices=Channel.choices, required=False, default="web")
    modality = serializers.ChoiceField(choices=Modality.choices, required=False, default="text")


class SpanOut(serializers.Serializer):
    start = serializers.IntegerField()
    end = serializers.IntegerField()
    kind = serializers.CharField(help_text=gettext_lazy("static, missing, dynamic, tool or agent."))
    name = serializers.CharField()


class CompileOut(serializers.Serializer):
    text = serializers.CharField(help_text=gettext_lazy("The compiled prompt."))
    diagnostics = DiagnosticOut(many=True)
    spans = SpanOut(
        many=True, help_text=gettext_lazy("Where values and kept references are in `text`.")
    )


class SimulateIn(serializers.Serializer):
    use_mocks = serializers.BooleanField(
        required=False,
        help_text=gettext_lazy("Use tool mocks even when a tool has code (default: scenario's)."),
    )
    instructions = serializers.CharField(
        required=False,
        allow_blank=True,
        trim_whitespace=False,
        help_text=gettext_lazy("Unsaved instructions to simulate; default: the saved ones."),
    )
    model = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=rules.MODEL_NAME_MAX_LENGTH,
        help_text=gettext_lazy(
            "Run live with this configured model (GET /api/models); empty: scripted."
        ),
    )


class ModelIn(serializers.Serializer):
    model = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=rules.MODEL_NAME_MAX_LENGTH,
        help_text=gettext_lazy("Run the goldens live with this configured model; empty: scripted."),
    )


class EvaluateIn(ModelIn):
    judge = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=rules.MODEL_NAME_MAX_LENGTH,
        help_text=gettext_lazy(
            "With `model`: the configured model that judges the rubrics of the CX evaluations "
            "of the scenario kind; empty: the run's model."
        ),
    )

    models = serializers.ListField(
        child=serializers.CharField(max_length=rules.MODEL_NAME_MAX_LENGTH),
        required=False,
        max_length=8,
        help_text=gettext_lazy(
            "An experiment across models: each golden runs live with every one (a column "
            "each in the run's matrix); `model`, if given, is the first."
        ),
    )
    versions = serializers.ListField(
        child=serializers.CharField(max_length=64),
        required=False,
        max_length=8,
        help_text=gettext_lazy(
            "An experiment across versions: version numbers or labels (`current`: the working "
            "copy); a version's column runs the goldens saved in it."
        ),
    )
    # The range is the service's to check (``evaluation.experiment_params``), so every
    # out-of-range value gets the same refusal naming the limit and its setting.
    repeat = serializers.IntegerField(
        required=False,
        help_text=gettext_lazy(
            "Run each golden this many times (at most EVALUATION_MAX_REPEAT): its pass "
            "rate, and flaky when some runs passed and others failed."
        ),
    )
    threshold = serializers.FloatField(
        required=False,
        help_text=gettext_lazy(
            "The pass rate a golden needs (default 1: every run); `result.ok` is false when "
            "a golden of any column is below it."
        ),
    )


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
        help_text=gettext_lazy(
            "user, agent, tool_call, tool_response, state_update, callback, transfer, "
            "error or note (a designer-only remark, never an error)."
        )
    )
    text = serializers.CharField(
        help_text=gettext_lazy("What the model sees (empty for callback, note, error).")
    )
    tokens = serializers.IntegerField()
    label = MessageField()  # in the request's language (a failure's words; names as typed)
    source = serializers.CharField()
    variable = serializers.CharField(allow_null=True)
    value = serializers.JSONField(allow_null=True)
    error = DiagnosticOut(allow_null=True)
    step = serializers.IntegerField(allow_null=True)
    dropped_at_turn = serializers.IntegerField(allow_null=True)
    model_visible = serializers.BooleanField()
    model_call = serializers.IntegerField(
        allow_null=True,
        help_text=gettext_lazy("The model call this event answers (agent, tool_call)."),
    )
    instructions_changed = serializers.ListField(
        child=serializers.CharField(),
        help_text=gettext_lazy(
            "Static variables whose value in the instructions changed since the "
            "previous model call (on the first event of a model call's answer)."
        ),
    )


class ModelCallOut(serializers.Serializer):
    index = serializers.IntegerField()
    turn = serializers.IntegerField()
    step = serializers.IntegerField(allow_null=True)
    instructions = serializers.CharField(
        help_text=gettext_lazy("Compiled from the state just before this model call.")
    )
    instruction_tokens = serializers.IntegerField()
    changed = serializers.ListField(
        child=serializers.CharField(),
        help_text=gettext_lazy(
            "Static variables whose value changed since the previous model call."
        ),
    )
    scripted = serializers.SerializerMethodField(
        help_text=gettext_lazy("The scenario's answer, as parts.")
    )
    answer = serializers.SerializerMethodField(
        help_text=gettext_lazy("The answer the turn went on with, as parts.")
    )
    replaced_by = serializers.CharField(
        help_text=gettext_lazy("before_model_callback, after_model_callback, or empty.")
    )
    history = serializers.ListField(
        child=serializers.IntegerField(), help_text=gettext_lazy("Events the model received.")
    )
    sent_instructions = serializers.CharField(
        help_text=gettext_lazy(
            "The system instruction as a before_model callback left it, which the "
            "model receives (ADK's LlmRequest); empty when no callback changed it."
        )
    )
    hidden_tools = serializers.ListField(
        child=serializers.CharField(),
        help_text=gettext_lazy(
            "Tools a before_model callback hid (llm_request.config.hide_tool): not "
            "declared to the model for this call."
        ),
    )

    @extend_schema_field(serializers.ListField(child=serializers.DictField()))
    def get_scripted(self, call: Any) -> list[dict[str, Any]]:
        return [dict(part) for part in call.scripted]

    @extend_schema_field(serializers.ListField(child=serializers.DictField()))
    def get_answer(self, call: Any) -> list[dict[str, Any]]:
        return [dict(part) for part in call.answer]


class TurnOut(serializers.Serializer):
    index = serializers.IntegerField()
    events = serializers.ListField(
        child=serializers.IntegerField(), help_text=gettext_lazy("Event indexes.")
    )
    state_after = serializers.JSONField(help_text=gettext_lazy("Variable values after the turn."))
    changed = serializers.ListField(child=serializers.CharField())
    builtins = serializers.JSONField(
        help_text=gettext_lazy("$context values at the end of the turn.")
    )
    model_input = serializers.ListField(
        child=serializers.IntegerField(), help_text=gettext_lazy("Events in the context window.")
    )
    tokens_used = serializers.IntegerField()
    dropped = serializers.ListField(child=serializers.IntegerField())
    warnings = DiagnosticOut(many=True)
    http = HttpRequestOut(many=True)
    instructions = serializers.CharField(
        help_text=gettext_lazy("Those of the turn's last model call.")
    )


@extend_schema_field(OpenApiTypes.OBJECT)
class StateField(serializers.JSONField):
    pass


class SimulationOut(serializers.Serializer):
    use_mocks = serializers.BooleanField()
    instructions = serializers.CharField(
        help_text=gettext_lazy(
            "Compiled with the values at session start (each model call compiles "
            "them again: model_calls)."
        )
    )
    instruction_tokens = serializers.IntegerField()
    instruction_diagnostics = DiagnosticOut(many=True)
    diagnostics = DiagnosticOut(
        many=True, help_text=gettext_lazy("Step errors and warnings, in order.")
    )
    turns = TurnOut(many=True)
    events = EventOut(many=True)
    model_calls = ModelCallOut(many=True)
    final_state = StateField()


# ---------------------------------------------------------------- lint and compile


class AppLintView(ApiView):
    """The app's diagnostics, as the designer's lint panel shows them."""

    queryset = AgentApp.objects.none()

    @extend_schema(
        description=gettext_lazy("The app's diagnostics, as the designer's lint panel shows them."),
        tags=["actions"],
        operation_id="apps_lint",
        summary=gettext_lazy("Every diagnostic of the app (saved state)"),
        responses={200: DiagnosticsOut, **READ_ERRORS},
    )
    def get(self, request: Request, app_id: int) -> Response:
        # The spec cached by revision, as the designer's preview: one query when it is warm.
        app = self.load_app()
        diagnostics = lint_app(selectors.app_spec(app), selectors.app_scenario_specs(app))
        return Response(self.output(DiagnosticsOut, {"diagnostics": diagnostics}))


class AgentCompileView(ApiView):
    """The compiled prompt of an agent, with diagnostics and highlight spans."""

    queryset = Agent.objects.none()
    throttle_classes = with_default_throttles(CompileThrottle)

    @extend_schema(
        tags=["actions"],
        operation_id="apps_agents_compile",
        summary=gettext_lazy("Compile instructions (saved or given) with typed values"),
        description=(
            gettext_lazy(
                "Values start from the variables' defaults; `values` overrides them (null removes "
                "one). Diagnostics: the agent's lint for these instructions and the compile's. "
                "Viewers may compile."
            )
        ),
        request=CompileIn,
        responses={200: CompileOut, 400: ERRORS[400], **READ_ERRORS},
    )
    def post(self, request: Request, app_id: int, agent_id: int) -> Response:
        # The agent and its app in one query, the rest from the spec cached by revision:
        # the same reads as the designer's preview.
        app, agent, self.access = selectors.agent_for_user(request.user, app_id, agent_id)
        data = self.valid(CompileIn)
        preview = services.preview_agent(
            app=app,
            agent=agent,
            instructions=data.get("instructions"),
            values=data.get("values", {}),
            channel=data["channel"],
            modality=data["modality"],
        )
        if preview.input_problems:
            raise InvalidInput(preview.input_problems)
        result = {"text": preview.text, "diagnostics": preview.diagnostics, "spans": preview.spans}
        return Response(self.output(CompileOut, result))


# ---------------------------------------------------------------- simulate and evaluate


class ScenarioSimulateView(ApiView):
    """Run a scenario through the simulator."""

    queryset = Scenario.objects.none()
    throttle_classes = with_default_throttles(SimulateThrottle)

    @extend_schema(
        tags=["actions"],
        operation_id="apps_agents_scenarios_simulate",
        summary=gettext_lazy(
            "Run the scenario: turns, events, state, built-ins, HTTP requests, warnings"
        ),
        description=(
            gettext_lazy(
                "Python tools and callbacks run in the sandbox unless `use_mocks` (default: the "
                "scenario's setting). `instructions` simulates unsaved text. Viewers may simulate "
                "(scripted). With `model` (a configured model; editors only: 403 for a viewer) "
                "the run is live and a job: 202 with the job's "
                "`id`, `url` (also `Location`) and `status`; GET the url: `progress.done` counts "
                "the model calls so far and `current` holds the model's text so far; once "
                "succeeded, `result` is {live_run (the recorded run's id, null for unsaved "
                "instructions), mode, model, status, error, tokens_in, tokens_out, cost, calls, "
                "drift, results, diagnostics}. Without a model it answers 200 at once with the "
                "simulation."
            )
        ),
        request=SimulateIn,
        responses={200: SimulationOut, 400: ERRORS[400], **JOB_ACCEPTED, **READ_ERRORS},
    )
    def post(self, request: Request, app_id: int, agent_id: int, scenario_id: int) -> Response:
        # The agent and its app in one query, the scenario and its steps in two; the app
        # itself comes from the spec cached by revision (as the designer's simulation).
        app, agent, self.access = selectors.agent_for_user(request.user, app_id, agent_id)
        scenario = (
            Scenario.objects.prefetch_related("steps").filter(pk=scenario_id, agent=agent).first()
        )
        if scenario is None:
            raise exceptions.NotFound(_("No such scenario for this agent."))
        scenario.agent = agent  # its spec names the agent
        data = self.valid(SimulateIn)
        if data.get("model"):  # a live run is long work: a job (docs/operations/jobs.md)
            job = submitted(
                live_jobs.live_run_submit,
                app=app,
                agent=agent,
                actor=request.user,
                scenario_id=scenario.pk,
                model=data["model"],
                instructions=data.get("instructions"),
                use_mocks=data.get("use_mocks"),
            )
            return accepted(request, job)
        scenario_spec, result = services.simulate_scenario(
            app=app,
            agent=agent,
            scenario=scenario,
            instructions=data.get("instructions"),
            use_mocks=data.get("use_mocks"),
        )
        body = self.output(SimulationOut, simulation_body(result, scenario_spec.use_mocks))
        return json_data_response(body)


def simulation_body(result: SimulationResult, use_mocks: bool) -> dict[str, Any]:
    return {
        "use_mocks": use_mocks,
        "instructions": result.instructions,
        "instruction_tokens": result.instruction_tokens,
        "instruction_diagnostics": result.instruction_diagnostics,
        "diagnostics": result.diagnostics,
        "turns": result.turns,
        "events": result.events,
        "model_calls": result.model_calls,
        "final_state": result.final_state,
    }


class ScenarioEvaluateView(ApiView):
    """Run one scenario's expectations (goldens) as a job, storing its last result."""

    queryset = Scenario.objects.none()
    throttle_classes = with_default_throttles(SimulateThrottle)

    @extend_schema(
        tags=["actions"],
        operation_id="apps_agents_scenarios_evaluate",
        summary=gettext_lazy(
            "Check the scenario's expectations (a job): each passed, failed or needing a model"
        ),
        description=(
            gettext_lazy(
                "Queues a job that simulates the scenario (Python tools and callbacks in the "
                "sandbox) and checks each expectation against what happened; the outcome is "
                "stored as the scenario's last result. Answers 202 at once; GET the job's `url` "
                "until its status is succeeded, failed or cancelled: `result` is then the "
                "scenario's outcome. Viewers may evaluate."
            )
        ),
        request=ModelIn,
        responses={**JOB_ACCEPTED, **READ_ERRORS},
    )
    def post(self, request: Request, app_id: int, agent_id: int, scenario_id: int) -> Response:
        app = self.load_app()
        scenario = Scenario.objects.filter(
            pk=scenario_id, agent_id=agent_id, agent__app=app
        ).first()
        if scenario is None:
            raise exceptions.NotFound(_("No such scenario for this agent."))
        model = self.valid(ModelIn).get("model") or None
        job = submitted(
            evaluation.scenario_evaluate_submit,
            app=app,
            scenario=scenario,
            actor=request.user,
            model=model,
        )
        return accepted(request, job)


class AppEvaluateView(ApiView):
    """Run the expectations of every scenario of the app as a job (as `manage.py evaluate`)."""

    queryset = AgentApp.objects.none()
    throttle_classes = with_default_throttles(SimulateThrottle)

    @extend_schema(
        tags=["actions"],
        operation_id="apps_evaluate",
        summary=gettext_lazy(
            "Check every scenario's expectations (a job); `result.ok` is false when one failed"
        ),
        description=(
            gettext_lazy(
                "Queues a job and answers 202 with its `id`, `url` and `status` (and a "
                "`Location` header). GET the url for `status` (queued, running, succeeded, "
                "failed, cancelled), `progress` {done, total} and `result` {ok, summary, "
                "scenarios}: each scenario's outcome as it finishes. POST `<url>cancel` stops it. "
                "`model` runs every scenario live with that configured model; `judge` (another "
                "configured model) then judges the rubrics of the CX scenario evaluations."
            )
        ),
        request=EvaluateIn,
        responses={**JOB_ACCEPTED, **READ_ERRORS},
    )
    def post(self, request: Request, app_id: int) -> Response:
        app = self.load_app()
        data = self.valid(EvaluateIn)
        job = submitted(
            evaluation.run_all_submit,
            app=app,
            actor=request.user,
            model=data.get("model") or None,
            judge=data.get("judge") or None,
            models=data.get("models") or None,
            versions=data.get("versions") or None,
            repeat=data.get("repeat", 1),
            threshold=data.get("threshold", 1.0),
        )
        return accepted(request, job)
