"""API routes, included under /api/ by the root URLconf (namespace `api`).

Variables, schemas and tools are addressed by name, agents and scenarios by id.
"""

from __future__ import annotations

from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from agents.api import live_views, version_views, views

app_name = "api"

app = "apps/<int:app_id>/"
agent = app + "agents/<int:agent_id>/"
scenario = agent + "scenarios/<int:scenario_id>/"

urlpatterns = [
    path("apps/", views.AppListView.as_view(), name="app-list"),
    path("apps/import", views.AppImportView.as_view(), name="app-import"),
    path(app, views.AppDetailView.as_view(), name="app-detail"),
    path(app + "lint", views.AppLintView.as_view(), name="app-lint"),
    path(app + "evaluate", views.AppEvaluateView.as_view(), name="app-evaluate"),
    path(app + "versions/", version_views.VersionListView.as_view(), name="version-list"),
    path(
        app + "versions/<int:number>/",
        version_views.VersionDetailView.as_view(),
        name="version-detail",
    ),
    path(
        app + "versions/<int:number>/restore",
        version_views.VersionRestoreView.as_view(),
        name="version-restore",
    ),
    path(app + "labels/", version_views.LabelListView.as_view(), name="label-list"),
    path(app + "labels/<str:name>/", version_views.LabelDetailView.as_view(), name="label-detail"),
    path(app + "variables/", views.VariableListView.as_view(), name="variable-list"),
    path(app + "variables/<str:name>/", views.VariableDetailView.as_view(), name="variable-detail"),
    path(app + "schemas/", views.SchemaListView.as_view(), name="schema-list"),
    path(app + "schemas/<str:name>/", views.SchemaDetailView.as_view(), name="schema-detail"),
    path(app + "tools/", views.ToolListView.as_view(), name="tool-list"),
    path(app + "tools/<str:name>/", views.ToolDetailView.as_view(), name="tool-detail"),
    path(app + "agents/", views.AgentListView.as_view(), name="agent-list"),
    path(agent, views.AgentDetailView.as_view(), name="agent-detail"),
    path(agent + "compile", views.AgentCompileView.as_view(), name="agent-compile"),
    path(agent + "scenarios/", views.ScenarioListView.as_view(), name="scenario-list"),
    path(scenario, views.ScenarioDetailView.as_view(), name="scenario-detail"),
    path(scenario + "simulate", views.ScenarioSimulateView.as_view(), name="scenario-simulate"),
    path(scenario + "evaluate", views.ScenarioEvaluateView.as_view(), name="scenario-evaluate"),
    path("models", live_views.ModelListView.as_view(), name="model-list"),
    path(app + "model", live_views.AppModelView.as_view(), name="app-model"),
    path(
        app + "live-runs/<int:run_id>/replay",
        live_views.LiveRunReplayView.as_view(),
        name="live-run-replay",
    ),
    path(
        app + "live-runs/<int:run_id>/golden",
        live_views.LiveRunGoldenView.as_view(),
        name="live-run-golden",
    ),
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
