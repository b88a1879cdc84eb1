"""The agents pane: add, edit, delete an agent."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from agents import selectors, services
from agents.models import (
    Agent,
)
from designer.forms import (
    AgentForm,
)
from designer.views.common import inline_form, loaded_app, to_agent_page


def _agent_fields(data: dict[str, Any]) -> dict[str, Any]:
    return {
        "display_name": data["display_name"],
        "description": data["description"],
        "is_root": data["is_root"] or None,
        "tools": list(data["tools"]),
        "children": list(data["children"]),
    }


@login_required
@require_http_methods(["GET", "POST"])
def agent_new(request: HttpRequest, app_id: int) -> HttpResponse:
    app, _access = loaded_app(request, app_id, edit=True)

    def save(data: dict[str, Any]) -> HttpResponse:
        agent = services.agent_create(actor=request.user, app=app, **_agent_fields(data))
        return to_agent_page(request, app, agent)

    return inline_form(
        request,
        fragment="agent-form",
        context={"app": app, "edited": None},
        blank=lambda: AgentForm(app=app),
        bound=lambda data: AgentForm(data, app=app),
        save=save,
    )


@login_required
@require_http_methods(["GET", "POST"])
def agent_edit(request: HttpRequest, app_id: int, agent_id: int) -> HttpResponse:
    app, _access = loaded_app(request, app_id, edit=True)
    agent = next((a for a in app.agents.all() if a.pk == agent_id), None)
    if agent is None:
        return HttpResponse(_("No such agent."), status=404)

    def save(data: dict[str, Any]) -> HttpResponse:
        services.agent_update(
            actor=request.user, agent=agent, expected_version=data["version"], **_agent_fields(data)
        )
        return to_agent_page(request, app, agent)

    return inline_form(
        request,
        fragment="agent-form",
        context={"app": app, "edited": agent},
        blank=lambda: AgentForm(instance=agent, app=app),
        bound=lambda data: AgentForm(data, instance=agent, app=app),
        save=save,
    )


@login_required
@require_POST
def agent_delete(request: HttpRequest, app_id: int, agent_id: int) -> HttpResponse:
    app, _access = selectors.app_for_user(request.user, app_id, edit=True)
    agent = get_object_or_404(Agent, pk=agent_id, app=app)
    try:
        services.agent_delete(actor=request.user, agent=agent)
    except services.ServiceError as exc:
        messages.error(request, exc.localized())
    # Back to the agent if it is still there (the root cannot go first), else to the root.
    return to_agent_page(request, app, app.agents.order_by("-is_root").first())
