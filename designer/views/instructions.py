"""An agent's instructions: load and save from the editor."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods

from agents import selectors, services
from agents.i18n import localize
from agents.models import (
    Agent,
)
from designer.views.common import DESIGNER, announce_change, designer_url, fingerprints


@login_required
@require_http_methods(["GET", "POST"])
def agent_instructions(request: HttpRequest, app_id: int, agent_id: int) -> HttpResponse:
    """GET: the saved instructions and their fingerprint (JSON). POST: save them; if the
    saved text changed since the editor loaded it, the save is refused and nothing is lost.

    The editor saves with `Accept: application/json`: 200 with the new fingerprint and
    every agent's (the page's app-changed event), or 409 with the text saved meanwhile, so
    the editor can merge it with what was typed or show both side by side."""
    app, _access = selectors.app_for_user(request.user, app_id, edit=request.method == "POST")
    agent = get_object_or_404(Agent, pk=agent_id, app=app)
    if request.method == "GET":
        return JsonResponse({"instructions": agent.instructions, "hash": agent.instructions_hash})
    wants_json = "application/json" in request.headers.get("Accept", "")
    try:
        agent = services.agent_save_instructions(
            actor=request.user,
            agent=agent,
            instructions=request.POST.get("instructions", ""),
            base_hash=request.POST.get("base_hash") or None,
        )
    except services.ServiceError as exc:
        status_text = " ".join(localize(d.message) for d in exc.diagnostics)
        stale = isinstance(exc, services.StaleObjectError)
        if wants_json and stale:
            agent.refresh_from_db(fields=["instructions"])
            return JsonResponse(
                {
                    "error": str(STALE_INSTRUCTIONS),
                    "instructions_text": agent.instructions,
                    "hash": agent.instructions_hash,
                },
                status=409,
            )
        if wants_json:
            # A refusal (a NUL character, a text over the limit): its reason, not a conflict;
            # the editor keeps the typing and does not retry the same text.
            return JsonResponse({"error": status_text, "refused": True}, status=422)
        if not request.htmx:
            return HttpResponse(status_text, status=409 if stale else 422)
        return render(
            request, f"{DESIGNER}#save-status", {"agent": agent, "save_error": status_text}
        )
    if wants_json:
        return JsonResponse(
            {"saved": True, "hash": agent.instructions_hash, "instructions": fingerprints(app)}
        )
    if not request.htmx:
        return redirect(designer_url(app, request))
    response = render(request, f"{DESIGNER}#save-status", {"agent": agent, "saved": True})
    announce_change(response, app)
    return response


STALE_INSTRUCTIONS = gettext_lazy(
    "These instructions were changed elsewhere since you opened them (another editor, or a "
    "rename that updated references)."
)
