"""The designer views' plumbing: loading the app, inline forms, htmx fragment answers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django_htmx.http import reswap, retarget, trigger_client_event

from agents import selectors, services
from agents.core import rules
from agents.models import (
    Agent,
    AgentApp,
    instructions_hash,
)

DESIGNER = "agents/app_designer.html"


APP_CHANGED = "app-changed"


def fragment_or_redirect(
    request: HttpRequest,
    app: AgentApp,
    fragment: str,
    context: dict[str, Any],
    *,
    changed: bool = True,
) -> HttpResponse:
    """htmx gets the updated fragment (and an event for other regions); a plain POST redirects."""
    if not request.htmx:
        return redirect(designer_url(app, request))
    response = render(request, f"{DESIGNER}#{fragment}", context)
    retarget(response, f"#{fragment}")
    reswap(response, "outerHTML")
    if changed:
        announce_change(response, app)
    return response


def announce_change(response: HttpResponse, app: AgentApp) -> None:
    """Tell the page the app changed, with each agent's instructions fingerprint: a rename
    may have rewritten the instructions open in the editor, which then reloads them."""
    event = {"instructions": fingerprints(app)}
    trigger_client_event(response, APP_CHANGED, event, after="settle")


def fingerprints(app: AgentApp) -> dict[int, str]:
    return {
        pk: instructions_hash(text)
        for pk, text in Agent.objects.filter(app=app).values_list("pk", "instructions")
    }


def designer_url(app: AgentApp, request: HttpRequest) -> str:
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


def inline_form(
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


def updated_list(
    request: HttpRequest,
    app_id: int,
    fragment: str,
    list_context: Callable[[HttpRequest, AgentApp, selectors.Access], dict[str, Any]],
) -> HttpResponse:
    app, access = loaded_app(request, app_id)
    return fragment_or_redirect(request, app, fragment, list_context(request, app, access))


def to_agent_page(request: HttpRequest, app: AgentApp, agent: Agent | None) -> HttpResponse:
    url = reverse("app-designer", args=[app.pk])
    if agent is not None:
        url = f"{url}?agent={agent.pk}"
    if request.htmx:
        response = HttpResponse(status=204)
        response["HX-Redirect"] = url
        return response
    return redirect(url)


def loaded_app(
    request: HttpRequest, app_id: int, *, edit: bool = False
) -> tuple[AgentApp, selectors.Access]:
    return selectors.app_for_user(
        request.user, app_id, edit=edit, queryset=selectors.app_with_everything(app_id)
    )


def int_or_none(value: str | None) -> int | None:
    """An id from a request parameter, or None when it is not one a database can hold."""
    try:
        number = int(value) if value not in (None, "") else None
    except ValueError:
        return None
    return number if number is not None and 0 < number <= rules.MAX_ID else None


def agent_param(request: HttpRequest) -> str:
    return request.POST.get("agent") or request.GET.get("agent") or ""


def agent_from_request(request: HttpRequest, app: AgentApp) -> Agent | None:
    wanted = agent_param(request)
    return Agent.objects.filter(app=app, pk=int_or_none(wanted)).first() if wanted else None


def agent_of(app: AgentApp, agent_id: int) -> Agent | None:
    return next((a for a in app.agents.all() if a.pk == agent_id), None)


def stale_edit() -> HttpResponse:
    """An edit of a saved text that changed meanwhile: the editor sends the whole text."""
    response = HttpResponse(_("Send the whole instructions: the saved text changed."), status=409)
    response["X-Statecraft-Resend"] = "instructions"
    return response
