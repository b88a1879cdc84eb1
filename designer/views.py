"""The designer's pages and their HTMX fragments (function views; one URL, page or fragment)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.templatetags.static import static
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import reswap, retarget, trigger_client_event

from agents import selectors, services
from agents.core import rules
from agents.core.examples import example_value
from agents.i18n import localize, word
from agents.models import (
    Agent,
    AgentApp,
    Callback,
    LiveRun,
    Scenario,
    Schema,
    Tool,
    Variable,
    instructions_hash,
)
from agents.ratelimit import rate_limited
from agents.services import live
from designer import preview as preview_builder
from designer import simulation
from designer.forms import (
    AgentForm,
    CallbackForm,
    ScenarioForm,
    SchemaForm,
    ToolForm,
    VariableForm,
)

logger = logging.getLogger(__name__)

DESIGNER = "agents/app_designer.html"
APP_CHANGED = "app-changed"


# ---------------------------------------------------------------- plumbing


@require_GET
def healthz(request: HttpRequest) -> HttpResponse:
    """Liveness and database check for load balancers."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception:  # any database failure means "not healthy"
        # The error text (host names, users) goes to the log, never to the caller.
        logger.exception("healthz: the database check failed")
        return JsonResponse({"status": "error", "database": "unavailable"}, status=503)
    return JsonResponse({"status": "ok", "database": "ok"})


@require_GET
def favicon(request: HttpRequest) -> HttpResponse:
    """/favicon.ico, which browsers ask for whatever the page links: the SVG icon (resolved
    per request, so the static manifest is read only once it exists)."""
    return redirect(static("favicon.svg"), permanent=True)


def _fragment_or_redirect(
    request: HttpRequest,
    app: AgentApp,
    fragment: str,
    context: dict[str, Any],
    *,
    changed: bool = True,
) -> HttpResponse:
    """htmx gets the updated fragment (and an event for other regions); a plain POST redirects."""
    if not request.htmx:
        return redirect(_designer_url(app, request))
    response = render(request, f"{DESIGNER}#{fragment}", context)
    retarget(response, f"#{fragment}")
    reswap(response, "outerHTML")
    if changed:
        _announce_change(response, app)
    return response


def _announce_change(response: HttpResponse, app: AgentApp) -> None:
    """Tell the page the app changed, with each agent's instructions fingerprint: a rename
    may have rewritten the instructions open in the editor, which then reloads them."""
    fingerprints = {"instructions": _fingerprints(app)}
    trigger_client_event(response, APP_CHANGED, fingerprints, after="settle")


def _fingerprints(app: AgentApp) -> dict[int, str]:
    return {
        pk: instructions_hash(text)
        for pk, text in Agent.objects.filter(app=app).values_list("pk", "instructions")
    }


def _designer_url(app: AgentApp, request: HttpRequest) -> str:
    url = reverse("app-designer", args=[app.pk])
    agent = request.POST.get("agent") or request.GET.get("agent")
    return f"{url}?agent={agent}" if agent else url


def _form_response(request: HttpRequest, fragment: str, context: dict[str, Any]) -> HttpResponse:
    """A form on its own (GET: 200), or an invalid one with its errors: 200 for htmx (it swaps
    2xx only), 400 for a plain POST."""
    template = f"{DESIGNER}#{fragment}" if request.htmx else "agents/form_page.html"
    context.setdefault("fragment", fragment)
    invalid = request.method == "POST" and not request.htmx
    return render(request, template, context, status=400 if invalid else 200)


def _apply_service_errors(form: Any, error: services.ServiceError) -> None:
    for field, problems in error.field_errors().items():
        target = field if field in form.fields else None
        for problem in problems:
            form.add_error(target, problem)


def _inline_form(
    request: HttpRequest,
    *,
    fragment: str,
    context: dict[str, Any],
    blank: Callable[[], forms.Form],
    bound: Callable[[QueryDict], forms.Form],
    save: Callable[[Any], HttpResponse],
) -> HttpResponse:
    """The life of an inline form: GET shows it; POST validates, saves through a service
    (whose errors land on their fields) and answers what `save` returns; an invalid form
    comes back with its errors and everything typed."""
    if request.method == "GET":
        return _form_response(request, fragment, {**context, "form": blank()})
    form = bound(request.POST)
    if form.is_valid():
        try:
            return save(form.cleaned_data)
        except services.StaleObjectError as exc:
            form = _over_stale(form, exc, bound, request.POST)
        except services.ServiceError as exc:
            _apply_service_errors(form, exc)
    return _form_response(request, fragment, {**context, "form": form})


def _over_stale(
    form: forms.Form,
    exc: services.StaleObjectError,
    bound: Callable[[QueryDict], forms.Form],
    data: QueryDict,
) -> forms.Form:
    """A save refused because someone saved meanwhile: the form comes back with what was
    typed and the version saved meanwhile, so Save saves over it (a retry is not refused
    forever) and Cancel shows their change."""
    if exc.current_version is None or "version" not in form.fields:
        _apply_service_errors(form, exc)
        return form
    fresh = data.copy()
    fresh["version"] = str(exc.current_version)
    form = bound(fresh)
    form.is_valid()
    form.add_error(
        None,
        "Someone else saved this meanwhile (it is now at version "
        f"{exc.current_version}). What you typed is kept: Save again to save it over their "
        "change, or Cancel to see theirs.",
    )
    return form


def _updated_list(
    request: HttpRequest,
    app_id: int,
    fragment: str,
    list_context: Callable[[HttpRequest, AgentApp, selectors.Access], dict[str, Any]],
) -> HttpResponse:
    app, access = _loaded_app(request, app_id)
    return _fragment_or_redirect(request, app, fragment, list_context(request, app, access))


def _to_agent_page(request: HttpRequest, app: AgentApp, agent: Agent | None) -> HttpResponse:
    url = reverse("app-designer", args=[app.pk])
    if agent is not None:
        url = f"{url}?agent={agent.pk}"
    if request.htmx:
        response = HttpResponse(status=204)
        response["HX-Redirect"] = url
        return response
    return redirect(url)


def _loaded_app(
    request: HttpRequest, app_id: int, *, edit: bool = False
) -> tuple[AgentApp, selectors.Access]:
    return selectors.app_for_user(
        request.user, app_id, edit=edit, queryset=selectors.app_with_everything(app_id)
    )


def _designer_context(
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


# ---------------------------------------------------------------- app list


@login_required
@require_GET
def app_list(request: HttpRequest) -> HttpResponse:
    search = request.GET.get("q", "").strip()
    apps = selectors.app_list(request.user, search=search)
    template = "agents/app_list.html#app-table" if request.htmx else "agents/app_list.html"
    return render(request, template, {"apps": apps, "search": search, "form_errors": {}})


@login_required
@require_POST
def app_create(request: HttpRequest) -> HttpResponse:
    name = request.POST.get("name", "")
    description = request.POST.get("description", "")
    try:
        app = services.app_create(
            actor=request.user, owner=request.user, name=name, description=description
        )
    except services.ServiceError as exc:
        return render(
            request,
            "agents/app_list.html",
            {
                "apps": selectors.app_list(request.user),
                "search": "",
                "form_errors": exc.field_errors(),
                "typed": {"name": name, "description": description},
            },
            status=200 if request.htmx else 400,
        )
    return redirect("app-designer", app_id=app.pk)


@login_required
@require_POST
def app_duplicate(request: HttpRequest, app_id: int) -> HttpResponse:
    app, _access = selectors.app_for_user(request.user, app_id)
    copy = services.app_duplicate(actor=request.user, app=app, owner=request.user)
    messages.success(
        request,
        _("Duplicated “%(name)s” as “%(copy)s”.") % {"name": app.name, "copy": copy.name},
    )
    return redirect("app-list")


@login_required
@require_http_methods(["GET", "POST"])
def app_delete(request: HttpRequest, app_id: int) -> HttpResponse:
    app, access = selectors.app_for_user(request.user, app_id)
    if not access.is_owner:
        raise PermissionDenied(_("Only the owner can delete an app."))
    if request.method == "POST":
        name = app.name
        services.app_delete(actor=request.user, app=app)
        messages.success(request, _("Deleted “%(name)s”.") % {"name": name})
        return redirect("app-list")
    return render(request, "agents/app_delete.html", {"app": app})


# ---------------------------------------------------------------- designer page


@never_cache  # Back must not show an old copy: its base fingerprint would conflict.
@login_required
@require_GET
def app_designer(request: HttpRequest, app_id: int) -> HttpResponse:
    app, access = _loaded_app(request, app_id)
    context = _designer_context(request, app, access)
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
        return _stale_edit()
    preview = preview_builder.build_preview(app, agent, params)
    return render(
        request,
        f"{DESIGNER}#preview-panel",
        {"app": app, "agent": agent, "preview": preview, "access": access},
    )


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
            {"saved": True, "hash": agent.instructions_hash, "instructions": _fingerprints(app)}
        )
    if not request.htmx:
        return redirect(_designer_url(app, request))
    response = render(request, f"{DESIGNER}#save-status", {"agent": agent, "saved": True})
    _announce_change(response, app)
    return response


STALE_INSTRUCTIONS = gettext_lazy(
    "These instructions were changed elsewhere since you opened them (another editor, or a "
    "rename that updated references)."
)


def _int_or_none(value: str | None) -> int | None:
    """An id from a request parameter, or None when it is not one a database can hold."""
    try:
        number = int(value) if value not in (None, "") else None
    except ValueError:
        return None
    return number if number is not None and 0 < number <= rules.MAX_ID else None


# ---------------------------------------------------------------- variables


def _variable_context(
    request: HttpRequest, app: AgentApp, access: selectors.Access, **extra: Any
) -> dict[str, Any]:
    context = {
        "app": app,
        "access": access,
        "variables": list(app.variables.all()),
        "schemas": list(app.schemas.all()),
        "usage": preview_builder.usage_by_variable(app),
        "agent_id": _agent_param(request),
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
    app, _access = _loaded_app(request, app_id, edit=True)
    schemas = list(app.schemas.all())

    def save(data: dict[str, Any]) -> HttpResponse:
        services.variable_create(actor=request.user, app=app, **_variable_fields(data))
        return _updated_list(request, app_id, "variable-list", _variable_context)

    initial = {"name": request.GET.get("name", ""), "type": request.GET.get("type", "text")}
    return _inline_form(
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
    app, _access = _loaded_app(request, app_id, edit=True)
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
        return _updated_list(request, app_id, "variable-list", _variable_context)

    return _inline_form(
        request,
        fragment="variable-form",
        context={"app": app, "variable": variable},
        blank=lambda: VariableForm.for_variable(variable, app=app, schemas=schemas),
        bound=lambda data: VariableForm(data, app=app, schemas=schemas),
        save=save,
    )


@login_required
@require_POST
def variable_delete(request: HttpRequest, app_id: int, variable_id: int) -> HttpResponse:
    app, _access = selectors.app_for_user(request.user, app_id, edit=True)
    services.variable_delete(
        actor=request.user, variable=get_object_or_404(Variable, pk=variable_id, app=app)
    )
    app, access = _loaded_app(request, app_id)
    return _fragment_or_redirect(
        request, app, "variable-list", _variable_context(request, app, access)
    )


@login_required
@require_GET
def variable_default_field(request: HttpRequest, app_id: int) -> HttpResponse:
    """Swap only the default's widget when the type changes; the rest of the form stays as typed."""
    app, _access = _loaded_app(request, app_id, edit=True)
    form = VariableForm(request.GET, app=app, schemas=list(app.schemas.all()))
    uid = request.GET.get("form_uid", "new")
    return render(request, f"{DESIGNER}#default-field", {"app": app, "form": form, "uid": uid})


@login_required
@require_POST
def variable_default_check(request: HttpRequest, app_id: int) -> HttpResponse:
    """Check the default being typed against the variable's type and schema (the form's own
    rule, `form_text.parse_form_value`), so the JSON editor says what is wrong before Save."""
    app, _access = _loaded_app(request, app_id, edit=True)
    form = VariableForm(request.POST, app=app, schemas=list(app.schemas.all()))
    form.is_valid()
    errors = form.errors.get("default", []) if request.POST.get("default", "").strip() else []
    uid = request.POST.get("form_uid", "new")
    return render(request, f"{DESIGNER}#default-check", {"errors": errors, "uid": uid})


# ---------------------------------------------------------------- schemas


def _schema_context(
    request: HttpRequest, app: AgentApp, access: selectors.Access
) -> dict[str, Any]:
    return {
        "app": app,
        "access": access,
        "schemas": list(app.schemas.all()),
        "agent_id": _agent_param(request),
    }


@login_required
@require_http_methods(["GET", "POST"])
def schema_new(request: HttpRequest, app_id: int) -> HttpResponse:
    app, _access = _loaded_app(request, app_id, edit=True)
    starter = {"type": "object", "properties": {}, "required": []}

    def save(data: dict[str, Any]) -> HttpResponse:
        services.schema_create(
            actor=request.user,
            app=app,
            name=data["name"],
            json_schema=data["json_schema"],
            description=data["description"],
        )
        return _updated_list(request, app_id, "schema-list", _schema_context)

    return _inline_form(
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
    app, _access = _loaded_app(request, app_id, edit=True)
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
        return _updated_list(request, app_id, "schema-list", _schema_context)

    return _inline_form(
        request,
        fragment="schema-form",
        context={"app": app, "schema": schema},
        blank=lambda: SchemaForm.for_schema(schema),
        bound=SchemaForm,
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
            messages.error(request, str(exc))
        app, access = _loaded_app(request, app_id)
        context = _schema_context(request, app, access)
        context["schema_error"] = str(exc)
        return _fragment_or_redirect(request, app, "schema-list", context, changed=False)
    app, access = _loaded_app(request, app_id)
    return _fragment_or_redirect(request, app, "schema-list", _schema_context(request, app, access))


@login_required
@require_POST
@rate_limited("example", "example values")
def schema_example(request: HttpRequest, app_id: int) -> HttpResponse:
    """An example value generated from the schema being edited (JSON in, JSON out)."""
    selectors.app_for_user(request.user, app_id)
    try:
        schema = json.loads(request.POST.get("json_schema", ""))
    except json.JSONDecodeError as exc:
        error = _("Line %(line)s, column %(column)s: %(error)s.") % {
            "line": exc.lineno,
            "column": exc.colno,
            "error": exc.msg,
        }
        return JsonResponse({"error": error})
    return JsonResponse({"example": example_value(schema)})


# ---------------------------------------------------------------- tools


def _tool_context(request: HttpRequest, app: AgentApp, access: selectors.Access) -> dict[str, Any]:
    return {
        "app": app,
        "access": access,
        "tools": list(app.tools.all()),
        "agent_id": _agent_param(request),
    }


@login_required
@require_http_methods(["GET", "POST"])
def tool_new(request: HttpRequest, app_id: int) -> HttpResponse:
    app, _access = _loaded_app(request, app_id, edit=True)

    def save(data: dict[str, Any]) -> HttpResponse:
        fields = {k: v for k, v in data.items() if k not in ("version", "update_references")}
        # Added from an agent's page: that agent may call it (one transaction, agent locked).
        agent = _agent_from_request(request, app)
        services.tool_create(actor=request.user, app=app, attach_to=agent, **fields)
        return _updated_list(request, app_id, "tool-list", _tool_context)

    return _inline_form(
        request,
        fragment="tool-form",
        context={"app": app, "tool": None, "agent_id": _agent_param(request)},
        blank=lambda: ToolForm(initial={"kind": request.GET.get("kind", "python")}),
        bound=ToolForm,
        save=save,
    )


def _agent_param(request: HttpRequest) -> str:
    return request.POST.get("agent") or request.GET.get("agent") or ""


def _agent_from_request(request: HttpRequest, app: AgentApp) -> Agent | None:
    wanted = _agent_param(request)
    return Agent.objects.filter(app=app, pk=_int_or_none(wanted)).first() if wanted else None


@login_required
@require_http_methods(["GET", "POST"])
def tool_edit(request: HttpRequest, app_id: int, tool_id: int) -> HttpResponse:
    app, _access = _loaded_app(request, app_id, edit=True)
    tool = next((t for t in app.tools.all() if t.pk == tool_id), None)
    if tool is None:
        return HttpResponse(_("No such tool."), status=404)

    def save(data: dict[str, Any]) -> HttpResponse:
        fields = {k: v for k, v in data.items() if k != "version"}
        services.tool_update(
            actor=request.user, tool=tool, expected_version=data["version"], **fields
        )
        return _updated_list(request, app_id, "tool-list", _tool_context)

    # A problem's "line 3:5" opens the code there (the editor puts its caret on it).
    line = _int_or_none(request.GET.get("line"))
    return _inline_form(
        request,
        fragment="tool-form",
        context={
            "app": app,
            "tool": tool,
            "code_line": line,
            "code_column": _int_or_none(request.GET.get("column")) or 1,
        },
        blank=lambda: ToolForm.for_tool(tool),
        bound=ToolForm,
        save=save,
    )


@login_required
@require_POST
def tool_delete(request: HttpRequest, app_id: int, tool_id: int) -> HttpResponse:
    app, _access = selectors.app_for_user(request.user, app_id, edit=True)
    services.tool_delete(actor=request.user, tool=get_object_or_404(Tool, pk=tool_id, app=app))
    app, access = _loaded_app(request, app_id)
    return _fragment_or_redirect(request, app, "tool-list", _tool_context(request, app, access))


# ---------------------------------------------------------------- agents


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
    app, _access = _loaded_app(request, app_id, edit=True)

    def save(data: dict[str, Any]) -> HttpResponse:
        agent = services.agent_create(actor=request.user, app=app, **_agent_fields(data))
        return _to_agent_page(request, app, agent)

    return _inline_form(
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
    app, _access = _loaded_app(request, app_id, edit=True)
    agent = next((a for a in app.agents.all() if a.pk == agent_id), None)
    if agent is None:
        return HttpResponse(_("No such agent."), status=404)

    def save(data: dict[str, Any]) -> HttpResponse:
        services.agent_update(
            actor=request.user, agent=agent, expected_version=data["version"], **_agent_fields(data)
        )
        return _to_agent_page(request, app, agent)

    return _inline_form(
        request,
        fragment="agent-form",
        context={"app": app, "edited": agent},
        blank=lambda: AgentForm.for_agent(agent, app=app),
        bound=lambda data: AgentForm(data, app=app, agent=agent),
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
        messages.error(request, str(exc))
    # Back to the agent if it is still there (the root cannot go first), else to the root.
    return _to_agent_page(request, app, app.agents.order_by("-is_root").first())


# ---------------------------------------------------------------- usage


@login_required
@require_GET
def variable_usage(request: HttpRequest, app_id: int, variable_id: int) -> HttpResponse:
    app, _access = _loaded_app(request, app_id)
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


# ---------------------------------------------------------------- scenarios, simulated conversation


def _agent_of(app: AgentApp, agent_id: int) -> Agent | None:
    return next((a for a in app.agents.all() if a.pk == agent_id), None)


def _conversation(
    request: HttpRequest,
    app: AgentApp,
    access: selectors.Access,
    agent: Agent,
    params: Any,
    *,
    keep_editor: bool = True,
) -> HttpResponse:
    """The conversation fragment. An open scenario editor inside it survives a
    re-simulation (`hx-preserve`: the designer's unsaved edits) unless the scenario shown
    changed or the editor's own save asked for the fresh panel (`keep_editor=False`)."""
    shown = str(params.get("mocks_for", "") or "")
    picked = str(params.get("scenario", "") or "")
    context = {
        "app": app,
        "access": access,
        "agent": agent,
        "conversation": simulation.build_conversation(app, agent, params, request.user),
        "keep_editor": keep_editor and (not picked or picked == shown),
    }
    return render(request, f"{DESIGNER}#conversation-panel", context)


@login_required
@require_http_methods(["GET", "POST"])
@rate_limited("simulate", "simulations")
def agent_simulate(request: HttpRequest, app_id: int, agent_id: int) -> HttpResponse:
    """Run the chosen scenario against the (unsaved) instructions; the conversation fragment.

    Like the preview, it reads only the app's and the agent's rows (and the agent's
    scenarios); the app itself comes from the spec cached by revision."""
    app, agent, access = selectors.agent_for_user(
        request.user, app_id, agent_id, with_scenarios=True
    )
    params = request.POST if request.method == "POST" else request.GET
    try:
        params = preview_builder.with_instructions(agent, params)
    except preview_builder.StaleEdit:
        return _stale_edit()
    replay = str(params.get("replay", "") or "")
    if request.method == "POST" and (
        replay.isdigit() or (params.get("live") and params.get("model"))
    ):
        from designer import job_views  # it imports this module

        return job_views.submit_live(request, app, access, agent, params)
    return _conversation(request, app, access, agent, params)


def _stale_edit() -> HttpResponse:
    """An edit of a saved text that changed meanwhile: the editor sends the whole text."""
    response = HttpResponse(_("Send the whole instructions: the saved text changed."), status=409)
    response["X-Statecraft-Resend"] = "instructions"
    return response


@login_required
@require_POST
def live_run_golden(request: HttpRequest, app_id: int, agent_id: int, run_id: int) -> HttpResponse:
    """Save the scenario's live run as a new golden scenario; the conversation shows it."""
    app, agent, access = selectors.agent_for_user(
        request.user, app_id, agent_id, with_scenarios=True
    )
    if not access.can_edit:
        return HttpResponse(_("You may view this app but not change it."), status=403)
    run = LiveRun.objects.filter(pk=run_id, app=app, scenario__agent=agent).first()
    if run is None:
        return HttpResponse(_("No such live run."), status=404)
    base = f"{run.scenario_name} (golden from live run {run.pk})"[:100]
    try:
        scenario = live.live_run_save_golden(run=run, actor=request.user, name=base)
    except services.ServiceError as exc:
        return HttpResponse("; ".join(d.message for d in exc.diagnostics), status=400)
    app, agent, access = selectors.agent_for_user(
        request.user, app_id, agent_id, with_scenarios=True
    )
    response = _conversation(request, app, access, agent, {"scenario": str(scenario.pk)})
    response["HX-Trigger"] = "scenarios-changed"
    return response


@login_required
@require_http_methods(["GET", "POST"])
def scenario_new(request: HttpRequest, app_id: int, agent_id: int) -> HttpResponse:
    app, _access = _loaded_app(request, app_id, edit=True)
    agent = _agent_of(app, agent_id)
    if agent is None:
        return HttpResponse(_("No such agent."), status=404)

    def save(data: dict[str, Any]) -> HttpResponse:
        fields = {k: v for k, v in data.items() if k != "version"}
        scenario = services.scenario_save(actor=request.user, agent=agent, **fields)
        return _after_scenario_save(request, app, agent, scenario.pk)

    number = agent.scenarios.count() + 1
    initial = {
        "name": _("Scenario %(number)s") % {"number": number},
        "steps_script": "user: " + _("Hello!") + "\n",
    }
    return _inline_form(
        request,
        fragment="scenario-form",
        context={"app": app, "agent": agent, "scenario": None},
        blank=lambda: ScenarioForm(initial=initial),
        bound=ScenarioForm,
        save=save,
    )


@login_required
@require_http_methods(["GET", "POST"])
def scenario_edit(
    request: HttpRequest, app_id: int, agent_id: int, scenario_id: int
) -> HttpResponse:
    app, _access = _loaded_app(request, app_id, edit=True)
    agent = _agent_of(app, agent_id)
    scenario = (
        next((s for s in agent.scenarios.all() if s.pk == scenario_id), None) if agent else None
    )
    if scenario is None:
        return HttpResponse(_("No such scenario."), status=404)

    def save(data: dict[str, Any]) -> HttpResponse:
        fields = {k: v for k, v in data.items() if k != "version"}
        services.scenario_save(
            actor=request.user,
            agent=agent,
            scenario=scenario,
            expected_version=data["version"],
            **fields,
        )
        return _after_scenario_save(request, app, agent, scenario.pk)

    return _inline_form(
        request,
        fragment="scenario-form",
        context={"app": app, "agent": agent, "scenario": scenario},
        blank=lambda: ScenarioForm.for_scenario(scenario),
        bound=ScenarioForm,
        save=save,
    )


@login_required
@require_POST
def scenario_delete(
    request: HttpRequest, app_id: int, agent_id: int, scenario_id: int
) -> HttpResponse:
    app, _access = selectors.app_for_user(request.user, app_id, edit=True)
    scenario = get_object_or_404(Scenario, pk=scenario_id, agent_id=agent_id, agent__app=app)
    services.scenario_delete(actor=request.user, scenario=scenario)
    app, access = _loaded_app(request, app_id)
    agent = _agent_of(app, agent_id)
    if not request.htmx:
        return redirect(f"{reverse('app-designer', args=[app.pk])}?agent={agent_id}")
    return _conversation(request, app, access, agent, {}, keep_editor=False)


def _after_scenario_save(
    request: HttpRequest, app: AgentApp, agent: Agent, scenario_id: int
) -> HttpResponse:
    if not request.htmx:
        return redirect(
            f"{reverse('app-designer', args=[app.pk])}?agent={agent.pk}&scenario={scenario_id}"
        )
    app, access = _loaded_app(request, app.pk)
    agent = _agent_of(app, agent.pk)
    response = _conversation(
        request, app, access, agent, {"scenario": str(scenario_id)}, keep_editor=False
    )
    retarget(response, "#conversation-panel")
    reswap(response, "outerHTML")
    return response


# ---------------------------------------------------------------- sharing


@login_required
@require_http_methods(["GET", "POST"])
def app_share(request: HttpRequest, app_id: int) -> HttpResponse:
    """Owner shares the app with other users as viewer or editor (SPEC §6)."""
    app, access = selectors.app_for_user(request.user, app_id)
    errors: dict[str, list[str]] = {}
    typed = {"username": "", "role": "viewer"}
    if request.method == "POST":
        if not access.is_owner:
            raise PermissionDenied(_("Only the owner can share this app."))
        User = get_user_model()
        if "remove" in request.POST:
            user = User.objects.filter(pk=_int_or_none(request.POST.get("remove"))).first()
            if user is not None:
                services.app_unshare(actor=request.user, app=app, user=user)
            return redirect("app-share", app_id=app.pk)
        typed = {
            "username": request.POST.get("username", "").strip(),
            "role": request.POST.get("role", "viewer"),
        }
        # Known and unknown usernames get the same answer: the form reveals no account.
        try:
            services.app_share_by_username(
                app=app, username=typed["username"], role=typed["role"], actor=request.user
            )
        except services.ServiceError as exc:
            errors = exc.field_errors()
        else:
            messages.success(request, _share_message(typed["username"], typed["role"]))
            return redirect("app-share", app_id=app.pk)
    shares = app.shares.select_related("user").order_by("user__username")
    return render(
        request,
        "agents/app_share.html",
        {"app": app, "access": access, "shares": shares, "errors": errors, "typed": typed},
        status=400 if errors else 200,
    )


# ---------------------------------------------------------------- history


@login_required
@require_GET
def app_history(request: HttpRequest, app_id: int) -> HttpResponse:
    """Who changed what in the app, and when (viewers too: they see the app)."""
    app, access = selectors.app_for_user(request.user, app_id)
    events = selectors.app_history(app)
    return render(
        request, "agents/app_history.html", {"app": app, "access": access, "events": events}
    )


def _share_message(username: str, role: str) -> str:
    return _(
        "If “%(username)s” is a Statecraft user, they can now open this app as %(role)s; "
        "the list below shows everyone it is shared with."
    ) % {"username": username, "role": word(role)}


# ---------------------------------------------------------------- callbacks

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
    agent = _agent_of(app, _int_or_none(_agent_param(request)) or 0)
    return {"app": app, "access": access, "agent": agent, "open_callbacks": True}


@login_required
@require_http_methods(["GET", "POST"])
def callback_new(request: HttpRequest, app_id: int, agent_id: int) -> HttpResponse:
    app, _access = _loaded_app(request, app_id, edit=True)
    agent = _agent_of(app, agent_id)
    if agent is None:
        return HttpResponse(_("No such agent."), status=404)
    kind = request.GET.get("kind", "before_model")
    kind = kind if kind in CALLBACK_STARTER else "before_model"

    def save(data: dict[str, Any]) -> HttpResponse:
        services.callback_create(
            actor=request.user, agent=agent, kind=data["kind"], code=data["code"]
        )
        return _updated_list(request, app_id, "callback-list", _callback_list_context)

    return _inline_form(
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
    app, _access = _loaded_app(request, app_id, edit=True)
    agent = _agent_of(app, agent_id)
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
        return _updated_list(request, app_id, "callback-list", _callback_list_context)

    # A problem's "line 3:5" opens the code there, as for a tool.
    return _inline_form(
        request,
        fragment="callback-form",
        context={
            "app": app,
            "agent": agent,
            "callback": callback,
            "code_line": _int_or_none(request.GET.get("line")),
            "code_column": _int_or_none(request.GET.get("column")) or 1,
        },
        blank=lambda: CallbackForm.for_callback(callback),
        bound=CallbackForm,
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
    return _updated_list(request, app_id, "callback-list", _callback_list_context)
