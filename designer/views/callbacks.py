"""An agent's callbacks: add, edit, delete."""

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
    Callback,
)
from designer.forms import (
    CallbackForm,
)
from designer.views.common import (
    agent_of,
    agent_param,
    inline_form,
    int_or_none,
    loaded_app,
    updated_list,
)

CALLBACK_STARTER = {
    "before_agent": "def before_agent_callback(callback_context):\n    pass\n",
    "after_agent": "def after_agent_callback(callback_context):\n    pass\n",
    "before_model": "def before_model_callback(callback_context, llm_request):\n    pass\n",
    "after_model": "def after_model_callback(callback_context, llm_response):\n    pass\n",
    "before_tool": "def before_tool_callback(tool, args, tool_context):\n    pass\n",
    "after_tool": "def after_tool_callback(tool, args, tool_context, tool_response):\n    pass\n",
}


def _callback_list_context(
    request: HttpRequest, app: AgentApp, access: selectors.Access
) -> dict[str, Any]:
    agent = agent_of(app, int_or_none(agent_param(request)) or 0)
    return {"app": app, "access": access, "agent": agent, "open_callbacks": True}


@login_required
@require_http_methods(["GET", "POST"])
def callback_new(request: HttpRequest, app_id: int, agent_id: int) -> HttpResponse:
    app, _access = loaded_app(request, app_id, edit=True)
    agent = agent_of(app, agent_id)
    if agent is None:
        return HttpResponse(_("No such agent."), status=404)
    kind = request.GET.get("kind", "before_model")
    kind = kind if kind in CALLBACK_STARTER else "before_model"

    def save(data: dict[str, Any]) -> HttpResponse:
        services.callback_create(
            actor=request.user, agent=agent, kind=data["kind"], code=data["code"]
        )
        return updated_list(request, app_id, "callback-list", _callback_list_context)

    return inline_form(
        request,
        fragment="callback-form",
        context={"app": app, "agent": agent, "callback": None},
        blank=lambda: CallbackForm(initial={"kind": kind, "code": CALLBACK_STARTER[kind]}),
        bound=CallbackForm,
        save=save,
    )


@login_required
@require_http_methods(["GET", "POST"])
def callback_edit(
    request: HttpRequest, app_id: int, agent_id: int, callback_id: int
) -> HttpResponse:
    app, _access = loaded_app(request, app_id, edit=True)
    agent = agent_of(app, agent_id)
    callback = (
        next((c for c in agent.callbacks.all() if c.pk == callback_id), None) if agent else None
    )
    if callback is None:
        return HttpResponse(_("No such callback."), status=404)

    def save(data: dict[str, Any]) -> HttpResponse:
        services.callback_update(
            actor=request.user,
            callback=callback,
            kind=data["kind"],
            code=data["code"],
            expected_version=data["version"],
        )
        return updated_list(request, app_id, "callback-list", _callback_list_context)

    # A problem's "line 3:5" opens the code there, as for a tool.
    return inline_form(
        request,
        fragment="callback-form",
        context={
            "app": app,
            "agent": agent,
            "callback": callback,
        },
        blank=lambda: CallbackForm(
            instance=callback,
            line=int_or_none(request.GET.get("line")),
            column=int_or_none(request.GET.get("column")) or 1,
        ),
        bound=lambda data: CallbackForm(data, instance=callback),
        save=save,
    )


@login_required
@require_POST
def callback_delete(
    request: HttpRequest, app_id: int, agent_id: int, callback_id: int
) -> HttpResponse:
    app, _access = selectors.app_for_user(request.user, app_id, edit=True)
    callback = get_object_or_404(Callback, pk=callback_id, agent_id=agent_id, agent__app=app)
    services.callback_delete(actor=request.user, callback=callback)
    return updated_list(request, app_id, "callback-list", _callback_list_context)
