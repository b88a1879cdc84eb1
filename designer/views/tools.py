"""The tools pane: add, edit, delete."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from agents import selectors, services
from agents.models import (
    AgentApp,
    Tool,
)
from designer.forms import (
    ToolForm,
)
from designer.views.common import (
    agent_from_request,
    agent_param,
    fragment_or_redirect,
    inline_form,
    int_or_none,
    loaded_app,
    updated_list,
)


def _tool_context(request: HttpRequest, app: AgentApp, access: selectors.Access) -> dict[str, Any]:
    return {
        "app": app,
        "access": access,
        "tools": list(app.tools.all()),
        "agent_id": agent_param(request),
    }


@login_required
@require_http_methods(["GET", "POST"])
def tool_new(request: HttpRequest, app_id: int) -> HttpResponse:
    app, _access = loaded_app(request, app_id, edit=True)

    def save(data: dict[str, Any]) -> HttpResponse:
        fields = {k: v for k, v in data.items() if k not in ("version", "update_references")}
        # Added from an agent's page: that agent may call it (one transaction, agent locked).
        agent = agent_from_request(request, app)
        services.tool_create(actor=request.user, app=app, attach_to=agent, **fields)
        return updated_list(request, app_id, "tool-list", _tool_context)

    return inline_form(
        request,
        fragment="tool-form",
        context={"app": app, "tool": None, "agent_id": agent_param(request)},
        blank=lambda: ToolForm(app=app, initial={"kind": request.GET.get("kind", "python")}),
        bound=lambda data: ToolForm(data, app=app),
        save=save,
    )


@login_required
@require_http_methods(["GET", "POST"])
def tool_edit(request: HttpRequest, app_id: int, tool_id: int) -> HttpResponse:
    app, _access = loaded_app(request, app_id, edit=True)
    tool = next((t for t in app.tools.all() if t.pk == tool_id), None)
    if tool is None:
        return HttpResponse(_("No such tool."), status=404)

    def save(data: dict[str, Any]) -> HttpResponse:
        fields = {k: v for k, v in data.items() if k != "version"}
        services.tool_update(
            actor=request.user, tool=tool, expected_version=data["version"], **fields
        )
        return updated_list(request, app_id, "tool-list", _tool_context)

    return inline_form(
        request,
        fragment="tool-form",
        context={"app": app, "tool": tool},
        # A problem's "line 3:5" opens the code there (the editor puts its caret on it).
        blank=lambda: ToolForm(
            instance=tool,
            app=app,
            line=int_or_none(request.GET.get("line")),
            column=int_or_none(request.GET.get("column")) or 1,
        ),
        bound=lambda data: ToolForm(data, instance=tool, app=app),
        save=save,
    )


@login_required
@require_POST
def tool_delete(request: HttpRequest, app_id: int, tool_id: int) -> HttpResponse:
    app, _access = selectors.app_for_user(request.user, app_id, edit=True)
    services.tool_delete(actor=request.user, tool=get_object_or_404(Tool, pk=tool_id, app=app))
    app, access = loaded_app(request, app_id)
    return fragment_or_redirect(request, app, "tool-list", _tool_context(request, app, access))
