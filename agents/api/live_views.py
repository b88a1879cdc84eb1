"""The API of live models: the configured models, replays and goldens of live runs.

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
from agents.api.actions import ModelIn, SimulationOut, simulation_body
from agents.api.base import ERRORS, READ_ERRORS, ApiView, live_allowed, scenario_queryset
from agents.api.json_boundary import json_data_response
from agents.api.throttles import SimulateThrottle, with_default_throttles
from agents.core import rules
from agents.i18n import localize, localized_data
from agents.models import LiveRun
from agents.services import live, live_models


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


def live_payload(outcome: Any) -> dict[str, Any]:
    """A live run for the API and the designer (never a key: none is in a run)."""
    run = outcome.run
    calls = []
    for call in outcome.calls:
        answer = localized_data(call["answer"])  # its message in the reader's language
        calls.append(
            {
                "index": call["index"],
                "turn": call["turn"],
                "fingerprint": call["fingerprint"],
                "tokens_in": answer.get("tokens_in", 0),
                "tokens_out": answer.get("tokens_out", 0),
                "cost": answer.get("cost", 0.0),
                "retries": answer.get("retries", 0),
                "error": answer.get("error", ""),
                "message": answer.get("message", ""),
                "parts": answer.get("parts", []),
            }
        )
    tokens_in, tokens_out = outcome.tokens
    return {
        "id": run.pk if run is not None else None,
        "mode": run.mode if run is not None else ("replay" if outcome.drift else "live"),
        "model": outcome.model,
        "replay_of": run.replay_of_id if run is not None else None,
        "status": outcome.evaluation.status,
        "error": outcome.error,
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "cost": outcome.cost,
        "calls": calls,
        "drift": localized_data(outcome.drift),
        "results": [
            {
                "step": r.step,
                "turn": r.turn,
                "kind": r.kind,
                "line": r.line,
                "status": r.status,
                "message": localize(r.message),
                "differences": [localize(d) for d in r.differences],
            }
            for r in outcome.evaluation.results
        ],
    }


def live_simulation(outcome: Any) -> dict[str, Any]:
    body = simulation_body(outcome.result, outcome.spec.use_mocks)
    body["live"] = live_payload(outcome)
    return body


class ModelListView(ApiView):
    """The models a run may name (configured by the operator; never their keys)."""

    queryset = LiveRun.objects.none()

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
    """Replay a live run offline with its recorded answers; `live.drift` says where the
    requests differ from the recording."""

    @extend_schema(
        description=_(
            "Replay a live run offline with its recorded answers; `live.drift` says"
            " where the requests differ from the recording."
        ),
        tags=["actions"],
        operation_id="apps_live_runs_replay",
        summary=_("Replay a live run offline (no model called); report drift per call"),
        request=None,
        responses={200: SimulationOut, **READ_ERRORS},
    )
    def post(self, request: Request, app_id: int, run_id: int) -> Response:
        run = self.load_run()
        live_allowed(self.access)  # as a live run: editors (README, "Live runs")
        outcome = live.replay_live(run=run, actor=request.user)
        return json_data_response(self.output(SimulationOut, live_simulation(outcome)))


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
        scenario = live.live_run_save_golden(run=run, actor=request.user, name=data["name"])
        scenario = scenario_queryset().get(pk=scenario.pk)
        return Response(self.output(io.ScenarioOut, scenario), status=status.HTTP_201_CREATED)


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
