"""Root URLs: the designer pages and fragments, the API, the admin site, sign-in, health."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.i18n import JavaScriptCatalog

from designer import admin_shortcut, views
from designer.views import accounts, evaluations, exchange, jobs, versions
from server.signin import SignInForm

app_patterns = [
    path("", views.app_designer, name="app-designer"),
    path("duplicate", views.app_duplicate, name="app-duplicate"),
    path("delete", views.app_delete, name="app-delete"),
    path("share", views.app_share, name="app-share"),
    path("history", views.app_history, name="app-history"),
    path("run-all", jobs.app_run_all, name="app-run-all"),
    path("run-all/<uuid:job_id>", jobs.run_all_status, name="app-run-all-job"),
    path("run-all/<uuid:job_id>/cancel", jobs.run_all_cancel, name="app-run-all-cancel"),
    path("evaluations/", evaluations.app_evaluations, name="app-evaluations"),
    path("evaluations/new", evaluations.evaluation_start, name="evaluation-start"),
    path("evaluations/<int:evaluation_id>", evaluations.evaluation_run, name="evaluation-run"),
    path(
        "evaluations/<int:evaluation_id>/cancel",
        evaluations.evaluation_run_cancel,
        name="evaluation-run-cancel",
    ),
    path(
        "evaluations/<int:evaluation_id>/export",
        evaluations.evaluation_run_export,
        name="evaluation-run-export",
    ),
    path("export", exchange.app_export, name="app-export"),
    path("import-report", exchange.app_import_report, name="app-import-report"),
    path("export/native", exchange.app_export_native, name="app-export-native"),
    path("export/cx", exchange.app_export_cx, name="app-export-cx"),
    path("export/adk", exchange.app_export_adk, name="app-export-adk"),
    path("import-evalset", exchange.app_import_evalset, name="app-import-evalset"),
    path(
        "import-evalset/jobs/<uuid:import_job_id>",
        exchange.app_import_evalset_job,
        name="app-import-evalset-job",
    ),
    path("versions/", versions.app_versions, name="app-versions"),
    path("versions/new", versions.version_create, name="version-create"),
    path("versions/diff", versions.version_diff, name="version-diff"),
    path(
        "versions/diff/scenarios/<uuid:job_id>",
        versions.version_diff_scenarios,
        name="version-diff-scenarios",
    ),
    path("versions/labels", versions.label_set, name="label-set"),
    path("versions/labels/<str:name>/delete", versions.label_delete, name="label-delete"),
    path("versions/<int:number>/restore", versions.version_restore, name="version-restore"),
    path("versions/<int:number>/delete", versions.version_delete, name="version-delete"),
    path(
        "versions/<int:number>/export/native",
        versions.version_export_native,
        name="version-export-native",
    ),
    path(
        "versions/<int:number>/export/cx",
        versions.version_export_cx,
        name="version-export-cx",
    ),
    path("variables/new", views.variable_new, name="variable-new"),
    path("variables/default-field", views.variable_default_field, name="variable-default-field"),
    path("variables/default-check", views.variable_default_check, name="variable-default-check"),
    path("variables/<int:variable_id>/edit", views.variable_edit, name="variable-edit"),
    path("variables/<int:variable_id>/delete", views.variable_delete, name="variable-delete"),
    path("variables/<int:variable_id>/usage", views.variable_usage, name="variable-usage"),
    path("variables/usage-counts", views.variable_usage_counts, name="variable-usage-counts"),
    path("schemas/new", views.schema_new, name="schema-new"),
    path("schemas/example", views.schema_example, name="schema-example"),
    path("schemas/<int:schema_id>/edit", views.schema_edit, name="schema-edit"),
    path("schemas/<int:schema_id>/delete", views.schema_delete, name="schema-delete"),
    path("tools/new", views.tool_new, name="tool-new"),
    path("tools/<int:tool_id>/edit", views.tool_edit, name="tool-edit"),
    path("tools/<int:tool_id>/delete", views.tool_delete, name="tool-delete"),
    path("agents/new", views.agent_new, name="agent-new"),
    path("agents/<int:agent_id>/edit", views.agent_edit, name="agent-edit"),
    path("agents/<int:agent_id>/delete", views.agent_delete, name="agent-delete"),
    path("agents/<int:agent_id>/instructions", views.agent_instructions, name="agent-instructions"),
    path("agents/<int:agent_id>/preview", views.agent_preview, name="agent-preview"),
    path("agents/<int:agent_id>/tools-line", views.agent_tools_line, name="agent-tools-line"),
    path("agents/<int:agent_id>/simulate", views.agent_simulate, name="agent-simulate"),
    path(
        "agents/<int:agent_id>/live-jobs/<uuid:live_job_id>",
        jobs.live_job_status,
        name="live-job",
    ),
    path(
        "agents/<int:agent_id>/live-jobs/<uuid:live_job_id>/cancel",
        jobs.live_job_cancel,
        name="live-job-cancel",
    ),
    path(
        "agents/<int:agent_id>/live-runs/<int:run_id>/golden",
        views.live_run_golden,
        name="live-run-golden",
    ),
    path(
        "agents/<int:agent_id>/scenarios/<int:scenario_id>/pin",
        views.scenario_pin,
        name="scenario-pin",
    ),
    path("agents/<int:agent_id>/callbacks/new", views.callback_new, name="callback-new"),
    path(
        "agents/<int:agent_id>/callbacks/<int:callback_id>/edit",
        views.callback_edit,
        name="callback-edit",
    ),
    path(
        "agents/<int:agent_id>/callbacks/<int:callback_id>/delete",
        views.callback_delete,
        name="callback-delete",
    ),
    path("agents/<int:agent_id>/scenarios/new", views.scenario_new, name="scenario-new"),
    path(
        "agents/<int:agent_id>/scenarios/<int:scenario_id>/edit",
        views.scenario_edit,
        name="scenario-edit",
    ),
    path(
        "agents/<int:agent_id>/scenarios/<int:scenario_id>/delete",
        views.scenario_delete,
        name="scenario-delete",
    ),
]

urlpatterns = [
    path("", views.app_list, name="app-list"),
    path("healthz", views.healthz, name="healthz"),
    # Browsers ask for /favicon.ico whatever the page links: the SVG icon answers.
    path("favicon.ico", views.favicon, name="favicon"),
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(authentication_form=SignInForm),
        name="login",
    ),
    path("accounts/api-token", accounts.api_token, name="api-token"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/language", accounts.set_language, name="set-language"),
    path("accounts/collapsed", accounts.set_collapsed, name="set-collapsed"),
    # The front end's translated strings (designer.js, the editor bundle): a script URL, so
    # the CSP (no inline script) holds; pages add ?l=<language> so a browser caches each apart.
    path("jsi18n/", JavaScriptCatalog.as_view(domain="djangojs"), name="javascript-catalog"),
    path("apps/new", views.app_create, name="app-create"),
    path("apps/import", exchange.app_import, name="app-import"),
    path(
        "apps/import/jobs/<uuid:import_job_id>",
        exchange.app_import_job,
        name="app-import-job",
    ),
    path("apps/<int:app_id>/", include(app_patterns)),
    path("api/", include("agents.api.urls")),
    # Ahead of the admin's own (and part of the admin's URLs): a table-less content type
    # is a 404, not a 500.
    path(
        "admin/",
        include(
            [
                path(
                    "r/<int:content_type_id>/<path:object_id>/",
                    admin.site.admin_view(admin_shortcut.shortcut),
                    name="admin-view-on-site",
                )
            ]
        ),
    ),
    path("admin/", admin.site.urls),
]

# JSON under /api/, the HTML pages elsewhere (designer/errors.py).
handler404 = "designer.errors.page_not_found"
handler500 = "designer.errors.server_error"
