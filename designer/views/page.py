"""The designer page and its live preview."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods

from agents import selectors
from agents.models import (
    Agent,
    AgentApp,
)
from agents.ratelimit import rate_limited
from designer import preview as preview_builder
from designer.views.common import DESIGNER, loaded_app, stale_edit


def designer_context(
    request: HttpRequest, app: AgentApp, access: selectors.Access
) -> dict[str, Any]:
    agents = list(app.agents.all())
    wanted = request.GET.get("agent") or request.POST.get("agent")
    agent = next((a for a in agents if str(a.pk) == wanted), None) or next(iter(agents), None)
    variables = list(app.variables.all())
    return {
        "app": app,
        "access": access,
        "agents": agents,
        "agent": agent,
        "variables": variables,
        "schemas": list(app.schemas.all()),
        "tools": list(app.tools.all()),
        "usage": preview_builder.usage_by_variable(app),
        "preview": preview_builder.build_preview(app, agent, request.GET) if agent else None,
        # The conversation loads as its own fragment: a page view never waits on a simulation.
        "conversation": None,
        # A viewer's visit runs nobody's code: the last stored result, and a Run button.
        "stored": _stored_result(request, agent) if agent and not access.can_edit else None,
    }


def _stored_result(request: HttpRequest, agent: Agent) -> dict[str, Any]:
    scenarios = list(agent.scenarios.all())
    wanted = request.GET.get("scenario")
    scenario = next((s for s in scenarios if str(s.pk) == wanted), None) or next(
        iter(scenarios), None
    )
    return {"scenario": scenario, "result": getattr(scenario, "last_result", None)}


@never_cache  # Back must not show an old copy: its base fingerprint would conflict.
@login_required
@require_GET
def app_designer(request: HttpRequest, app_id: int) -> HttpResponse:
    app, access = loaded_app(request, app_id)
    context = designer_context(request, app, access)
    fragment = request.GET.get("fragment") if request.htmx else None
    if fragment in {
        "variable-list",
        "schema-list",
        "tool-list",
        "agent-list",
        "callback-list",
        "agent-tools",
    }:
        return render(request, f"{DESIGNER}#{fragment}", context)
    context["imported"] = selectors.app_was_imported(app)
    running = selectors.active_run_all(request.user, app)
    if running is not None:  # back on the page while Run all runs: its progress again
        from designer.job_views import run_all_context

        context["run_all"] = run_all_context(app, running)
    return render(request, DESIGNER, context)


@login_required
@require_http_methods(["GET", "POST"])
@rate_limited("preview", "previews")
def agent_preview(request: HttpRequest, app_id: int, agent_id: int) -> HttpResponse:
    """The live preview: compile the (unsaved) instructions with the session values typed.

    Called on every keystroke: it reads the app's row and the agent's, and the rest from
    the spec cached by the app's revision (no reload of the whole app)."""
    app, agent, access = selectors.agent_for_user(request.user, app_id, agent_id)
    params = request.POST if request.method == "POST" else request.GET
    try:
        params = preview_builder.with_instructions(agent, params)
    except preview_builder.StaleEdit:
        return stale_edit()
    preview = preview_builder.build_preview(app, agent, params)
    return render(
        request,
        f"{DESIGNER}#preview-panel",
        {"app": app, "agent": agent, "preview": preview, "access": access},
    )
