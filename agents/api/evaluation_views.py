"""The history of an app's evaluation runs (``agents.services.evaluation_history``).

``POST /api/apps/{id}/evaluate`` starts one (with `models`, `versions`, `repeat`,
`threshold` for an experiment); these views read what it kept: the list, one run with its
matrix (JSON), the matrix as CSV, and the goldens whose verdict differs between two columns.
"""

from __future__ import annotations

from django.http import Http404, HttpResponse
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from agents.api.base import ERRORS, READ_ERRORS, ApiView
from agents.i18n import localized_data
from agents.models import EvaluationRun
from agents.services import evaluation_history, evaluation_matrix


class EvaluationRunOut(serializers.Serializer):
    id = serializers.IntegerField()
    job = serializers.CharField(allow_null=True, help_text=_("The job's id (GET /api/jobs/ID/)."))
    owner = serializers.CharField(allow_null=True)
    status = serializers.CharField()
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    app_revision = serializers.IntegerField()
    models = serializers.ListField(child=serializers.CharField(), help_text=_("'' offline."))
    versions = serializers.ListField(
        child=serializers.CharField(), help_text=_("'' the working copy.")
    )
    repeat = serializers.IntegerField()
    threshold = serializers.FloatField()
    totals = serializers.JSONField(
        help_text=_(
            "`goldens`, `pass_rate` (first column), `passed`, `failed`, `flaky`, `tokens_in`, "
            "`tokens_out`."
        )
    )
    cost = serializers.FloatField()
    revisions = serializers.JSONField(
        allow_null=True,
        help_text=_(
            "The app revisions its goldens ran at: `{started, mixed, by_revision: [{revision, "
            "goldens}]}`; `mixed` is true when a run retried after an edit judged its goldens "
            "at more than one revision (null for a run gathered before this was recorded)."
        ),
    )


class EvaluationRunDetailOut(EvaluationRunOut):
    matrix = serializers.JSONField(
        help_text=_(
            "`{columns: [{key, model, version}], rows: [{golden, agent_name, name, cells: "
            "{KEY: {runs, passed, judged, pass_rate, flaky, status, below_threshold, "
            "first_failure, cost, tokens_in, tokens_out, latency_p50, latency_p95}}}], "
            "totals: {KEY: ...}, threshold}` (KEY: a column's key, model@version)"
        )
    )


class ChangeOut(serializers.Serializer):
    golden = serializers.CharField()
    a = serializers.CharField()
    b = serializers.CharField()
    a_pass_rate = serializers.FloatField(allow_null=True)
    b_pass_rate = serializers.FloatField(allow_null=True)
    a_first_failure = serializers.JSONField(allow_null=True)
    b_first_failure = serializers.JSONField(allow_null=True)


class EvaluationRunView(ApiView):
    """An app's evaluation runs: whoever may see the app reads them."""

    queryset = EvaluationRun.objects.none()
    pagination_class = None

    def load_run(self) -> EvaluationRun:
        app = self.load_app()
        try:
            return evaluation_history.run_for_app(app, self.kwargs["evaluation_id"])
        except EvaluationRun.DoesNotExist:
            raise Http404(gettext("No such evaluation run for this app.")) from None


class EvaluationRunListView(EvaluationRunView):
    @extend_schema(
        tags=["evaluation runs"],
        summary=_("The app's evaluation runs, newest first (the history)"),
        description=_(
            "Each Run all of the app (the latest EVALUATION_RUNS_KEPT): who, when, the app "
            "revision, models, versions, repetitions, totals and cost; without the matrix."
        ),
        responses={200: EvaluationRunOut(many=True), **READ_ERRORS},
    )
    def get(self, request: Request, app_id: int) -> Response:
        app = self.load_app()
        runs = evaluation_history.run_list(app)[:200]
        return Response([evaluation_history.history_data(r, matrix=False) for r in runs])


class EvaluationRunDetailView(EvaluationRunView):
    @extend_schema(
        tags=["evaluation runs"],
        summary=_("One evaluation run with its matrix (goldens x (model, version))"),
        description=_(
            "The run and its matrix: goldens as rows, (model, version) as columns; each cell "
            "its repetitions' verdicts, pass rate, flakiness, first failure, cost, tokens "
            "and latency."
        ),
        responses={200: EvaluationRunDetailOut, **READ_ERRORS},
    )
    def get(self, request: Request, app_id: int, evaluation_id: int) -> Response:
        return Response(localized_data(evaluation_history.history_data(self.load_run())))


class EvaluationRunCsvView(EvaluationRunView):
    @extend_schema(
        tags=["evaluation runs"],
        summary=_("The run's matrix as CSV: one line per (golden, model, version)"),
        description=_(
            "Columns: `golden`, `agent`, `scenario`, `model`, `version`, `runs`, `passed`, "
            "`pass_rate`, `flaky`, `status`, `cost`, `tokens_in`, `tokens_out`, "
            "`latency_p50`, `latency_p95`, `first_failure`."
        ),
        responses={200: OpenApiResponse(OpenApiTypes.STR), **READ_ERRORS},
    )
    def get(self, request: Request, app_id: int, evaluation_id: int) -> HttpResponse:
        run = self.load_run()
        response = HttpResponse(
            evaluation_matrix.matrix_csv(run.matrix), content_type="text/csv; charset=utf-8"
        )
        name = f"evaluation-run-{run.pk}.csv"
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response


class EvaluationRunCompareView(EvaluationRunView):
    @extend_schema(
        tags=["evaluation runs"],
        summary=_("The goldens whose verdict differs between two columns, and why"),
        description=_(
            "`a` and `b` are column keys (model@version: offline for the scripted run, "
            "current for the working copy); each changed golden with both verdicts and "
            "the first failing expectation of each side. 400 names an unknown column."
        ),
        parameters=[
            OpenApiParameter("a", str, required=True, description=_("A column key.")),
            OpenApiParameter("b", str, required=True, description=_("Another column key.")),
        ],
        responses={200: ChangeOut(many=True), 400: ERRORS[400], **READ_ERRORS},
    )
    def get(self, request: Request, app_id: int, evaluation_id: int) -> Response:
        run = self.load_run()
        a = str(request.query_params.get("a", ""))
        b = str(request.query_params.get("b", ""))
        return Response(evaluation_matrix.compare(run.matrix, a, b))
