"""The schemas pane: add, edit, delete, example values."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.utils.text import capfirst
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from agents import selectors, services
from agents.core import limits
from agents.core.examples import example_value
from agents.core.form_text import json_error_message
from agents.i18n import localize
from agents.models import (
    AgentApp,
    Schema,
)
from designer.forms import (
    SchemaForm,
)
from designer.views.common import (
    DESIGNER,
    agent_param,
    fragment_or_redirect,
    inline_form,
    loaded_app,
    updated_list,
)
from server.ratelimit import rate_limited


def _schema_context(
    request: HttpRequest, app: AgentApp, access: selectors.Access
) -> dict[str, Any]:
    return {
        "app": app,
        "access": access,
        "schemas": list(app.schemas.all()),
        "agent_id": agent_param(request),
    }


@login_required
@require_http_methods(["GET", "POST"])
def schema_new(request: HttpRequest, app_id: int) -> HttpResponse:
    app, _access = loaded_app(request, app_id, edit=True)
    starter = {"type": "object", "properties": {}, "required": []}

    def save(data: dict[str, Any]) -> HttpResponse:
        services.schema_create(
            actor=request.user,
            app=app,
            name=data["name"],
            json_schema=data["json_schema"],
            description=data["description"],
        )
        return updated_list(request, app_id, "schema-list", _schema_context)

    return inline_form(
        request,
        fragment="schema-form",
        context={"app": app, "schema": None},
        blank=lambda: SchemaForm(initial={"json_schema": json.dumps(starter, indent=2)}),
        bound=SchemaForm,
        save=save,
    )


@login_required
@require_http_methods(["GET", "POST"])
def schema_edit(request: HttpRequest, app_id: int, schema_id: int) -> HttpResponse:
    app, _access = loaded_app(request, app_id, edit=True)
    schema = next((s for s in app.schemas.all() if s.pk == schema_id), None)
    if schema is None:
        return HttpResponse(_("No such schema."), status=404)

    def save(data: dict[str, Any]) -> HttpResponse:
        services.schema_update(
            actor=request.user,
            schema=schema,
            name=data["name"],
            json_schema=data["json_schema"],
            description=data["description"],
            expected_version=data["version"],
        )
        return updated_list(request, app_id, "schema-list", _schema_context)

    return inline_form(
        request,
        fragment="schema-form",
        context={"app": app, "schema": schema},
        blank=lambda: SchemaForm(instance=schema),
        bound=lambda data: SchemaForm(data, instance=schema),
        save=save,
    )


@login_required
@require_POST
def schema_delete(request: HttpRequest, app_id: int, schema_id: int) -> HttpResponse:
    app, access = selectors.app_for_user(request.user, app_id, edit=True)
    schema = get_object_or_404(Schema, pk=schema_id, app=app)
    try:
        services.schema_delete(actor=request.user, schema=schema)
    except services.ServiceError as exc:
        if not request.htmx:  # htmx shows the refusal in the list; a flash would repeat it
            messages.error(request, exc.localized())
        app, access = loaded_app(request, app_id)
        context = _schema_context(request, app, access)
        context["schema_error"] = exc.localized()
        return fragment_or_redirect(request, app, "schema-list", context, changed=False)
    app, access = loaded_app(request, app_id)
    return fragment_or_redirect(request, app, "schema-list", _schema_context(request, app, access))


@login_required
@require_POST
@rate_limited("example", "example values")
def schema_example(request: HttpRequest, app_id: int) -> HttpResponse:
    """An example value generated from the schema being edited: JSON in, JSON out; for
    htmx (the schema form's "Example value") the box that shows it."""
    selectors.app_for_user(request.user, app_id)
    try:
        schema = limits.loads_json(request.POST.get("json_schema", ""))
    except json.JSONDecodeError as exc:
        error = capfirst(localize(json_error_message(exc)))
        answer: dict[str, Any] = {"error": error}
    else:
        answer = {"example": example_value(schema)}
    if request.htmx:
        shown = answer.get("error") or json.dumps(answer["example"], indent=2, ensure_ascii=False)
        return render(request, f"{DESIGNER}#example-box", {"example": shown})
    return JsonResponse(answer)
