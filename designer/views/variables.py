"""The variables pane: add, edit, delete, the default's widget and check, usage."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from agents import selectors, services
from agents.models import (
    AgentApp,
    Variable,
)
from designer.forms import (
    VariableForm,
)
from designer.views import preview as preview_builder
from designer.views.common import (
    DESIGNER,
    agent_param,
    fragment_or_redirect,
    inline_form,
    loaded_app,
    updated_list,
)


def _variable_context(
    request: HttpRequest, app: AgentApp, access: selectors.Access, **extra: Any
) -> dict[str, Any]:
    context = {
        "app": app,
        "access": access,
        "variables": list(app.variables.all()),
        "schemas": list(app.schemas.all()),
        "usage": preview_builder.usage_by_variable(app),
        "agent_id": agent_param(request),
    }
    context.update(extra)
    return context


def _variable_fields(data: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": data["name"],
        "type": data["type"],
        "item_type": data["item_type"],
        "schema": data["schema"],
        "default": data["default_value"],
        "description": data["description"],
    }


@login_required
@require_http_methods(["GET", "POST"])
def variable_new(request: HttpRequest, app_id: int) -> HttpResponse:
    app, _access = loaded_app(request, app_id, edit=True)
    schemas = list(app.schemas.all())

    def save(data: dict[str, Any]) -> HttpResponse:
        services.variable_create(actor=request.user, app=app, **_variable_fields(data))
        return updated_list(request, app_id, "variable-list", _variable_context)

    initial = {"name": request.GET.get("name", ""), "type": request.GET.get("type", "text")}
    return inline_form(
        request,
        fragment="variable-form",
        context={"app": app, "variable": None},
        blank=lambda: VariableForm(app=app, schemas=schemas, initial=initial),
        bound=lambda data: VariableForm(data, app=app, schemas=schemas),
        save=save,
    )


@login_required
@require_http_methods(["GET", "POST"])
def variable_edit(request: HttpRequest, app_id: int, variable_id: int) -> HttpResponse:
    app, _access = loaded_app(request, app_id, edit=True)
    variable = next((v for v in app.variables.all() if v.pk == variable_id), None)
    if variable is None:
        return HttpResponse(_("No such variable."), status=404)
    schemas = list(app.schemas.all())

    def save(data: dict[str, Any]) -> HttpResponse:
        services.variable_update(
            actor=request.user,
            variable=variable,
            update_references=data["update_references"],
            update_code=data["update_references"] and data["update_code"],
            expected_version=data["version"],
            **_variable_fields(data),
        )
        return updated_list(request, app_id, "variable-list", _variable_context)

    return inline_form(
        request,
        fragment="variable-form",
        context={"app": app, "variable": variable},
        blank=lambda: VariableForm(instance=variable, app=app, schemas=schemas),
        bound=lambda data: VariableForm(data, instance=variable, app=app, schemas=schemas),
        save=save,
    )


@login_required
@require_POST
def variable_delete(request: HttpRequest, app_id: int, variable_id: int) -> HttpResponse:
    app, _access = selectors.app_for_user(request.user, app_id, edit=True)
    services.variable_delete(
        actor=request.user, variable=get_object_or_404(Variable, pk=variable_id, app=app)
    )
    app, access = loaded_app(request, app_id)
    return fragment_or_redirect(
        request, app, "variable-list", _variable_context(request, app, access)
    )


@login_required
@require_GET
def variable_default_field(request: HttpRequest, app_id: int) -> HttpResponse:
    """Swap only the default's widget when the type changes; the rest of the form stays as typed."""
    app, _access = loaded_app(request, app_id, edit=True)
    form = VariableForm(request.GET, app=app, schemas=list(app.schemas.all()))
    return render(request, f"{DESIGNER}#default-field", {"app": app, "form": form})


@login_required
@require_POST
def variable_default_check(request: HttpRequest, app_id: int) -> HttpResponse:
    """Check the default being typed against the variable's type and schema (the form's own
    rule, `form_text.parse_form_value`), so the JSON editor says what is wrong before Save."""
    app, _access = loaded_app(request, app_id, edit=True)
    form = VariableForm(request.POST, app=app, schemas=list(app.schemas.all()))
    form.is_valid()
    errors = form.errors.get("default", []) if request.POST.get("default", "").strip() else []
    uid = request.POST.get("form_uid", "new")
    return render(request, f"{DESIGNER}#default-check", {"errors": errors, "uid": uid})


@login_required
@require_GET
def variable_usage(request: HttpRequest, app_id: int, variable_id: int) -> HttpResponse:
    app, _access = loaded_app(request, app_id)
    variable = next((v for v in app.variables.all() if v.pk == variable_id), None)
    if variable is None:
        return HttpResponse(_("No such variable."), status=404)
    usage = preview_builder.usage_by_variable(app).get(variable.name)
    template = f"{DESIGNER}#usage-detail" if request.htmx else "agents/form_page.html"
    return render(
        request,
        template,
        {"app": app, "variable": variable, "var_usage": usage, "fragment": "usage-detail"},
    )
