"""The API of live models: the configured models, replays (jobs) and goldens of live runs.

``POST .../scenarios/{id}/simulate`` and ``POST /api/apps/{id}/evaluate`` take
``{"model": "<name>"}`` (agents/api/actions.py); these views add the rest.
"""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from agents.api import serializers as io
from agents.api.actions import ModelIn
from agents.api.base import (
    ERRORS,
    JOB_ACCEPTED,
    READ_ERRORS,
    ApiView,
    accepted,
    scenario_queryset,
    submitted,
)
from agents.api.throttles import SimulateThrottle, with_default_throttles
from agents.core import rules
from agents.core.diagnostics import Message
from agents.models import LiveRun, Scenario
from agents.services import live_goldens, live_jobs, live_models, live_pins
from agents.services.common import ServiceError, error
from agents.services.live_replays import recording_of


class GoldenIn(serializers.Serializer):
    name = serializers.CharField(
        max_length=rules.SCENARIO_NAME_MAX_LENGTH, help_text=_("The new scenario's name.")
    )


class ModelEndpointOut(serializers.Serializer):
    name = serializers.CharField()
    kind = serializers.CharField(help_text=_("openai or gemini."))
    model = serializers.CharField()
    base_url = serializers.CharField()
    label = serializers.CharField()
    source = serializers.CharField(help_text=_("env (STATECRAFT_MODELS) or admin."))
    has_key = serializers.BooleanField(help_text=_("Whether a key is configured (never the key)."))
    max_concurrent = serializers.IntegerField(
        help_text=_("Requests in flight at once per worker process (0: no limit).")
    )
    requests_per_minute = serializers.IntegerField(
        allow_null=True, help_text=_("Requests started per minute per worker process, or null.")
    )
    tokens_per_minute = serializers.IntegerField(
        allow_null=True, help_text=_("Tokens answered per minute per worker process, or null.")
    )


class ModelListView(ApiView):
    """The models a run may name (configured by the operator; never their keys)."""

    queryset = LiveRun.objects.none()
    pagination_class = None  # a short list, whole: the schema says a list, not a page

    @extend_schema(
        description=_("The models a run may name (configured by the operator; never their keys)."),
        tags=["models"],
        responses={200: ModelEndpointOut(many=True)},
    )
    def get(self, request: Request) -> Response:
        return Response(ModelEndpointOut(live_models.model_names(), many=True).data)


class LiveRunView(ApiView):
    queryset = LiveRun.objects.none()
    throttle_classes = with_default_throttles(SimulateThrottle)

    def load_run(self) -> LiveRun:
        app = self.load_app()
        return get_object_or_404(LiveRun, app=app, pk=self.kwargs["run_id"])


class LiveRunReplayView(LiveRunView):
    """Replay a live run offline with its recorded answers, as a job."""

    @extend_schema(
        description=_(
            "Queues a job that replays a live run offline with its recorded answers (no "
            "model is called; the tools and callbacks run again in the sandbox) and answers "
            "202 with the job's `id`, `url` (also `Location`) and `status`. Once succeeded, "
            "the job's `result` is the run as Run live's: {live_run (the recorded replay), "
            "mode, model, status, error, tokens_in, tokens_out, cost, calls, drift (at which "
            "call the request differs from the recording, and what changed), results, "
            "diagnostics}. Editors only (403 for a viewer)."
        ),
        tags=["actions"],
        operation_id="apps_live_runs_replay",
        summary=_("Replay a live run offline (no model called), as a job; report drift per call"),
        request=None,
        responses={**JOB_ACCEPTED, 400: ERRORS[400], 403: ERRORS[403], **READ_ERRORS},
    )
    def post(self, request: Request, app_id: int, run_id: int) -> Response:
        run = self.load_run()
        recording = recording_of(run)
        if recording.scenario is None:
            raise ServiceError(
                [
                    error(
                        "run",
                        Message("The run's scenario was deleted: its agent is unknown."),
                        "SC482",
                    )
                ]
            )
        job = submitted(
            live_jobs.live_run_submit,
            app=run.app,
            agent=recording.scenario.agent,
            actor=request.user,
            replay=run,
        )
        return accepted(request, job)


class LiveRunGoldenView(LiveRunView):
    """Save a live run as a new scenario whose expectations are what the model did."""

    @extend_schema(
        description=_(
            "Save a live run as a new scenario whose expectations are what the model did."
        ),
        tags=["actions"],
        operation_id="apps_live_runs_golden",
        summary=_("Save a live run as a golden scenario (calls with arguments, state, reply)"),
        request=GoldenIn,
        responses={201: io.ScenarioOut, **ERRORS},
    )
    def post(self, request: Request, app_id: int, run_id: int) -> Response:
        self.load_app(edit=True)
        run = self.load_run()
        data = self.valid(GoldenIn)
        scenario = live_goldens.live_run_save_golden(run=run, actor=request.user, name=data["name"])
        scenario = scenario_queryset().get(pk=scenario.pk)
        return Response(self.output(io.ScenarioOut, scenario), status=status.HTTP_201_CREATED)


class RecordingRunOut(serializers.Serializer):
    id = serializers.IntegerField()
    model = serializers.CharField(source="model_name")
    created_at = serializers.DateTimeField()
    status = serializers.CharField(help_text=_("The verdict: passed, failed, needs_model, none."))
    error = serializers.CharField(help_text=_("The model error that ended the run; empty: none."))


class PinIn(serializers.Serializer):
    pinned_run = serializers.IntegerField(
        allow_null=True,
        min_value=1,
        help_text=_(
            "The live run of this scenario its replays use (one that ended without a model "
            "error); null unpins: the latest successful live run."
        ),
    )


class RecordingOut(serializers.Serializer):
    pinned_run = serializers.IntegerField(
        allow_null=True, help_text=_("The run the designer pinned; null: none pinned.")
    )
    recording = RecordingRunOut(
        allow_null=True,
        help_text=_(
            "The run Replay, Run all with replay and evaluate --replay use: the pinned one, "
            "else the latest successful live run; null: none."
        ),
    )
    pinned = serializers.BooleanField(help_text=_("Whether `recording` is pinned."))
    runs = RecordingRunOut(many=True, help_text=_("The scenario's live runs, newest first."))


class ScenarioRecordingView(ApiView):
    """The recording a scenario's replays use, and its pin."""

    queryset = LiveRun.objects.none()

    def load_scenario(self, *, edit: bool = False) -> Scenario:
        app = self.load_app(edit=edit)
        agent = self.load_agent(app)
        return get_object_or_404(Scenario, agent=agent, pk=self.kwargs["scenario_id"])

    def body(self, scenario: Scenario) -> dict[str, Any]:
        chosen = live_pins.pinned_recording(scenario)
        runs = live_pins.scenario_recordings(scenario)
        return {
            "pinned_run": scenario.pinned_run_id,
            "recording": RecordingRunOut(chosen.run).data if chosen else None,
            "pinned": bool(chosen and chosen.pinned),
            "runs": RecordingRunOut(runs, many=True).data,
        }

    @extend_schema(
        description=_(
            "The recording the scenario's replays use (the pinned live run, else the latest "
            "successful one) and its live runs to pin from."
        ),
        tags=["actions"],
        operation_id="apps_agents_scenarios_recording",
        responses={200: RecordingOut, **READ_ERRORS},
    )
    def get(self, request: Request, app_id: int, agent_id: int, scenario_id: int) -> Response:
        return Response(self.body(self.load_scenario()))

    @extend_schema(
        description=_(
            "Pin a live run of the scenario as the recording its replays use (a failed run "
            "cannot be pinned); null unpins. Editors only."
        ),
        tags=["actions"],
        operation_id="apps_agents_scenarios_recording_pin",
        summary=_("Pin the recording the scenario's replays use"),
        request=PinIn,
        responses={200: RecordingOut, **ERRORS},
    )
    def put(self, request: Request, app_id: int, agent_id: int, scenario_id: int) -> Response:
        scenario = self.load_scenario(edit=True)
        data = self.valid(PinIn)
        live_pins.scenario_pin_run(scenario=scenario, run=data["pinned_run"], actor=request.user)
        return Response(self.body(scenario))


class AppModelView(ApiView):
    """The model an app's live runs use when a run names none."""

    queryset = LiveRun.objects.none()

    def body(self, app: Any) -> dict[str, Any]:
        from agents.models import AppModelDefault

        row = AppModelDefault.objects.filter(app=app).first()
        return {"model": row.model if row is not None else ""}

    @extend_schema(
        description=_("The model an app's live runs use when a run names none."),
        tags=["models"],
        responses={200: ModelIn, **READ_ERRORS},
    )
    def get(self, request: Request, app_id: int) -> Response:
        return Response(self.body(self.load_app()))

    @extend_schema(
        description=_("The model an app's live runs use when a run names none."),
        tags=["models"],
        summary=_("Set the app's default model (a configured name; empty clears it)"),
        request=ModelIn,
        responses={200: ModelIn, **ERRORS},
    )
    def put(self, request: Request, app_id: int) -> Response:
        app = self.load_app(edit=True)
        data = self.valid(ModelIn)
        live_models.app_model_set(app=app, model=(data.get("model") or "").strip())
        return Response(self.body(app))
