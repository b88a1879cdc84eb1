"""API routes, included under /api/ by the root URLconf (namespace `api`).

The resources are ViewSets on a router (`<basename>-list`, `<basename>-detail`):
variables, schemas, tools and labels are addressed by name, apps, agents, scenarios
and versions by id or number. The action endpoints (lint, compile, simulate, evaluate,
import, restore, jobs, live runs) are views of their own, without a trailing slash.
"""

from __future__ import annotations

from django.urls import path, register_converter
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.routers import SimpleRouter

from agents.api import actions, evaluation_views, job_views, live_views, version_views, views

app_name = "api"


class IdConverter:
    """An id of the API's URLs: at most 18 digits, so it always fits the database's 64-bit
    integers (a longer one is a 404, never an overflow answered 500)."""

    regex = "[0-9]{1,18}"

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value: int) -> str:
        return str(value)


register_converter(IdConverter, "id")

app = "apps/<id:app_id>/"
agent = app + "agents/<id:agent_id>/"
scenario = agent + "scenarios/<id:scenario_id>/"

# Path converters (`<id:app_id>`, IdConverter above), not regexes: the URLs are those of `path()`.
router = SimpleRouter(use_regex_path=False)
router.register("apps", views.AppViewSet, basename="app")
router.register(app + "versions", version_views.VersionViewSet, basename="version")
router.register(app + "labels", version_views.LabelViewSet, basename="label")
router.register(app + "variables", views.VariableViewSet, basename="variable")
router.register(app + "schemas", views.SchemaViewSet, basename="schema")
router.register(app + "tools", views.ToolViewSet, basename="tool")
router.register(app + "agents", views.AgentViewSet, basename="agent")
router.register(agent + "scenarios", views.ScenarioViewSet, basename="scenario")

urlpatterns = [
    path("apps/import", views.AppImportView.as_view(), name="app-import"),
    path(app + "import-evalset", views.AppImportEvalsetView.as_view(), name="app-import-evalset"),
    path(app + "lint", actions.AppLintView.as_view(), name="app-lint"),
    path(app + "evaluate", actions.AppEvaluateView.as_view(), name="app-evaluate"),
    path(
        app + "versions/<id:number>/restore",
        version_views.VersionRestoreView.as_view(),
        name="version-restore",
    ),
    path(agent + "compile", actions.AgentCompileView.as_view(), name="agent-compile"),
    path(scenario + "simulate", actions.ScenarioSimulateView.as_view(), name="scenario-simulate"),
    path(scenario + "evaluate", actions.ScenarioEvaluateView.as_view(), name="scenario-evaluate"),
    path(
        scenario + "recording",
        live_views.ScenarioRecordingView.as_view(),
        name="scenario-recording",
    ),
    *router.urls,
    path("models", live_views.ModelListView.as_view(), name="model-list"),
    path(app + "model", live_views.AppModelView.as_view(), name="app-model"),
    path(
        app + "live-runs/<id:run_id>/replay",
        live_views.LiveRunReplayView.as_view(),
        name="live-run-replay",
    ),
    path(
        app + "live-runs/<id:run_id>/golden",
        live_views.LiveRunGoldenView.as_view(),
        name="live-run-golden",
    ),
    path(
        app + "evaluation-runs",
        evaluation_views.EvaluationRunListView.as_view(),
        name="evaluation-run-list",
    ),
    path(
        app + "evaluation-runs/<id:evaluation_id>",
        evaluation_views.EvaluationRunDetailView.as_view(),
        name="evaluation-run-detail",
    ),
    path(
        app + "evaluation-runs/<id:evaluation_id>/matrix.csv",
        evaluation_views.EvaluationRunCsvView.as_view(),
        name="evaluation-run-csv",
    ),
    path(
        app + "evaluation-runs/<id:evaluation_id>/compare",
        evaluation_views.EvaluationRunCompareView.as_view(),
        name="evaluation-run-compare",
    ),
    path("jobs/<uuid:job_id>/", job_views.JobDetailView.as_view(), name="job-detail"),
    path("jobs/<uuid:job_id>/cancel", job_views.JobCancelView.as_view(), name="job-cancel"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves the page's script from a URL (no inline script: CSP); the
    # template has no inline style either.
    path(
        "docs/",
        SpectacularSwaggerSplitView.as_view(
            url_name="api:schema", template_name="api/swagger_ui.html"
        ),
        name="docs",
    ),
]
