"""The designer page and its live preview."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import get_token
from django.shortcuts import render
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe
from django.utils.translation import get_language
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods

from agents import selectors, services
from agents.models import (
    Agent,
    AgentApp,
    Channel,
    Modality,
)
from designer.views import preview as preview_builder
from designer.views.common import DESIGNER, int_or_none, loaded_app, stale_edit
from designer.views.run_all import run_all_context
from server.ratelimit import rate_limited


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
        "channels": Channel.choices,
        "modalities": Modality.choices,
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


# The page's two panes that only the app's saved state decides (the lists; the agent's
# head, callbacks and instructions) are rendered once per app revision and kept in Django's
# cache, keyed by what changes them (revision, the chosen agent, whether the reader may edit,
# the language). A page view then reads the app's row and the agent's instead of the whole
# app, and renders only the preview pane. The CSRF token is the one part that belongs to the
# reader: the cached HTML holds CSRF_SLOT where it goes, replaced on every view.
CACHED_PANES = ("side-pane", "editor-pane")
CSRF_SLOT = "statecraft-csrf-slot"
LIST_FRAGMENTS = {
    "variable-list",
    "schema-list",
    "tool-list",
    "agent-list",
    "callback-list",
}


def _pane_key(pane: str, app: AgentApp, access: selectors.Access, agent: Agent | None) -> str:
    role = "edit" if access.can_edit else "view"
    agent_pk = agent.pk if agent is not None else "-"
    return (
        f"statecraft:pane:{pane}:{app.pk}:{app.revision}:{app.created_at.timestamp()}:"
        f"{role}:{agent_pk}:{get_language()}"
    )


def _chosen_agent(request: HttpRequest, app: AgentApp) -> Agent | None:
    """The agent of `?agent=` if the app has it, else its first (as `designer_context`)."""
    wanted = int_or_none(request.GET.get("agent") or request.POST.get("agent"))
    agents = Agent.objects.filter(app=app)
    chosen = agents.filter(pk=wanted).first() if wanted else None
    return chosen or agents.first()


def _light_context(
    request: HttpRequest,
    app: AgentApp,
    access: selectors.Access,
    agent: Agent | None,
    *,
    preview: bool,
) -> dict[str, Any]:
    """What the page needs beside its cached panes: the preview unless it is cached too
    (from the cached spec), a viewer's stored result."""
    return {
        "app": app,
        "access": access,
        "agent": agent,
        "channels": Channel.choices,
        "modalities": Modality.choices,
        "preview": (
            preview_builder.build_preview(app, agent, request.GET) if agent and preview else None
        ),
        "conversation": None,
        "stored": _stored_result(request, agent) if agent and not access.can_edit else None,
    }


@never_cache  # Back must not show an old copy: its base fingerprint would conflict.
@login_required
@require_GET
def app_designer(request: HttpRequest, app_id: int) -> HttpResponse:
    fragment = request.GET.get("fragment") if request.htmx else None
    if fragment in LIST_FRAGMENTS:
        app, access = loaded_app(request, app_id)
        return render(request, f"{DESIGNER}#{fragment}", designer_context(request, app, access))
    app, access = selectors.app_for_user(request.user, app_id)
    agent = _chosen_agent(request, app)
    seconds = settings.DESIGNER_PANE_CACHE_SECONDS
    # The preview pane too when nothing typed decides it (a plain visit: only ?agent=).
    panes_here = CACHED_PANES + (("preview-pane",) if set(request.GET) <= {"agent"} else ())
    keys = {pane: _pane_key(pane, app, access, agent) for pane in panes_here}
    panes = cache.get_many(list(keys.values())) if seconds > 0 else {}
    if len(panes) == len(keys):
        context = _light_context(request, app, access, agent, preview="preview-pane" not in keys)
    else:
        app, access = loaded_app(request, app_id)
        context = designer_context(request, app, access)
        if seconds > 0:
            for pane, key in keys.items():
                context_slot = {**context, "csrf_token": CSRF_SLOT}
                panes[key] = render_to_string(f"{DESIGNER}#{pane}", context_slot)
            cache.set_many(panes, timeout=seconds)
    if panes:
        token = get_token(request)
        for pane, key in keys.items():
            context[pane.replace("-", "_")] = mark_safe(panes[key].replace(CSRF_SLOT, token))
    context["collapsed"] = services.user_collapsed(request.user)
    running = selectors.active_run_all(request.user, app)
    if running is not None:  # back on the page while Run all runs: its progress again
        context["run_all"] = run_all_context(app, running)
    elif (last := selectors.latest_run_all(app)) is not None:
        # After a reload: the app's latest Run all, as it ended (issue 33, item 9), when it
        # has its summary. It is not run again when the app changes (Run all does that).
        restored = run_all_context(app, last)
        if restored["summary"]:
            context["run_all"] = {**restored, "restored": True}
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
        params = preview_builder.with_edit_applied(agent, params)
    except preview_builder.StaleEdit:
        return stale_edit()
    preview = preview_builder.build_preview(app, agent, params)
    return render(
        request,
        f"{DESIGNER}#preview-panel",
        {"app": app, "agent": agent, "preview": preview, "access": access},
    )


# The regions that follow every change on the page: each asks again on the `app-changed`
# event (sent by every save: `common.announce_change`) with htmx, and swaps what it shows.


@login_required
@require_GET
def variable_usage_counts(request: HttpRequest, app_id: int) -> HttpResponse:
    """The usage count of each variable row the page shows (`?shown=<id>`, repeated), each
    an out-of-band swap into its row's count: the rows themselves (and a form opened in
    one) are not replaced. Read rights, as the page."""
    app, _access = selectors.app_for_user(request.user, app_id)
    shown = {int_or_none(value) for value in request.GET.getlist("shown")}
    variables = [v for v in app.variables.all() if v.pk in shown]
    usage = preview_builder.usage_by_variable(app) if variables else {}
    return render(
        request, f"{DESIGNER}#usage-counts", {"app": app, "variables": variables, "usage": usage}
    )


@login_required
@require_GET
def agent_tools_line(request: HttpRequest, app_id: int, agent_id: int) -> HttpResponse:
    """The agent's "Tools:" line (its tools and sub-agents) under its name. Read rights."""
    app, agent, access = selectors.agent_for_user(request.user, app_id, agent_id)
    return render(
        request, f"{DESIGNER}#agent-tools", {"app": app, "agent": agent, "access": access}
    )
