"""The Versions page of an app (save, label, restore, export, delete) and the diff page.

Adapters only: each view checks access through the selectors, calls one
function of agents/services/versions.py and renders. Viewers see, diff and export;
editors save versions, move labels and restore; the owner (or staff) deletes.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.utils.http import content_disposition_header
from django.utils.text import slugify
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from agents import selectors
from agents.core import limits, rules
from agents.core.form_text import json_error_message
from agents.core.formats import dumps_native
from agents.i18n import localize
from agents.models import JOB_FINISHED, AgentApp, AppVersion, Channel, Job, Modality
from agents.selectors import Access
from agents.services import ServiceError, jobs, versions

VERSIONS = "agents/app_versions.html"
DIFF = "agents/version_diff.html"
CONFIRM = "agents/version_confirm.html"
WORKING = "working"
CHANNELS = rules.CHANNELS
MODALITIES = rules.MODALITIES
_NATIVE_TYPES = {"json": "application/json", "yaml": "application/yaml"}
# Whole compiled prompts are shown beside the diff up to this size; beyond it only the diff.
FULL_PROMPT_LIMIT = 100_000


def _version(app: AgentApp, number: int) -> AppVersion:
    found = AppVersion.objects.filter(app=app, number=number).select_related("created_by").first()
    if found is None:
        raise Http404(_("This app has no version %(number)s.") % {"number": number})
    return found


def _versions_context(
    request: HttpRequest, app: AgentApp, access: Access, **extra: Any
) -> dict[str, Any]:
    return {
        "app": app,
        "access": access,
        "versions": list(versions.version_list(app)),
        "labels": list(versions.label_list(app)),
        "may_delete": versions.may_delete_versions(request.user, access),
        "errors": {},
        "typed": {},
        "label_errors": {},
        "label_typed": {},
        **extra,
    }


def _panel(request: HttpRequest, context: dict[str, Any], *, invalid: bool) -> HttpResponse:
    """htmx gets the panel fragment (200 even when invalid: htmx swaps only 2xx)."""
    if request.htmx:
        return render(request, f"{VERSIONS}#versions-panel", context)
    return render(request, VERSIONS, context, status=400 if invalid else 200)


@login_required
@require_GET
def app_versions(request: HttpRequest, app_id: int) -> HttpResponse:
    app, access = selectors.app_for_user(request.user, app_id)
    context = _versions_context(request, app, access)
    if request.htmx:
        return render(request, f"{VERSIONS}#versions-panel", context)
    return render(request, VERSIONS, context)


@login_required
@require_POST
def version_create(request: HttpRequest, app_id: int) -> HttpResponse:
    app, access = selectors.app_for_user(request.user, app_id, edit=True)
    name = request.POST.get("name", "")
    note = request.POST.get("note", "")
    try:
        version = versions.version_create(app=app, user=request.user, name=name, note=note)
    except ServiceError as exc:
        errors = exc.field_errors()
        errors["general"] = errors.pop("__all__", [])  # templates cannot read `__all__`
        context = _versions_context(
            request, app, access, errors=errors, typed={"name": name, "note": note}
        )
        return _panel(request, context, invalid=True)
    if request.htmx:
        context = _versions_context(request, app, access, saved=version)
        return render(request, f"{VERSIONS}#versions-panel", context)
    messages.success(
        request,
        _("Saved version %(number)s · %(name)s.")
        % {"number": version.number, "name": version.name},
    )
    return redirect("app-versions", app_id=app.pk)


@login_required
@require_POST
def label_set(request: HttpRequest, app_id: int) -> HttpResponse:
    app, access = selectors.app_for_user(request.user, app_id, edit=True)
    name = request.POST.get("label", "").strip()
    wanted = request.POST.get("version", "")
    typed = {"label": name, "version": wanted}
    try:
        version = versions.version_for_app(app, number=wanted)
        label = versions.label_set(app=app, version=version, name=name, user=request.user)
    except ServiceError as exc:
        errors = exc.field_errors()
        if "name" in errors:
            errors["label"] = errors.pop("name")
        context = _versions_context(request, app, access, label_errors=errors, label_typed=typed)
        return _panel(request, context, invalid=True)
    if request.htmx:
        return render(
            request, f"{VERSIONS}#versions-panel", _versions_context(request, app, access)
        )
    messages.success(
        request,
        _("The label %(name)s now points at version %(number)s.")
        % {"name": label.name, "number": version.number},
    )
    return redirect("app-versions", app_id=app.pk)


@login_required
@require_POST
def label_delete(request: HttpRequest, app_id: int, name: str) -> HttpResponse:
    app, access = selectors.app_for_user(request.user, app_id, edit=True)
    try:
        versions.label_delete(app=app, name=name, user=request.user)
    except ServiceError as exc:
        raise Http404(str(exc)) from exc
    if request.htmx:
        return render(
            request, f"{VERSIONS}#versions-panel", _versions_context(request, app, access)
        )
    messages.success(request, _("Removed the label %(name)s.") % {"name": name})
    return redirect("app-versions", app_id=app.pk)


@login_required
@require_http_methods(["GET", "POST"])
def version_restore(request: HttpRequest, app_id: int, number: int) -> HttpResponse:
    """GET asks for confirmation; POST replaces the working copy with the version."""
    app, access = selectors.app_for_user(request.user, app_id, edit=True)
    version = _version(app, number)
    context = {"app": app, "access": access, "version": version, "action": "restore"}
    if request.method == "POST":
        try:
            versions.version_restore(version=version, user=request.user)
        except ServiceError as exc:
            context["errors"] = [localize(d.message) for d in exc.diagnostics]
            return render(request, CONFIRM, context, status=400)
        messages.success(
            request,
            _("Restored version %(number)s · %(name)s into the working copy.")
            % {"number": version.number, "name": version.name},
        )
        return redirect("app-designer", app_id=app.pk)
    return render(request, CONFIRM, context)


@login_required
@require_http_methods(["GET", "POST"])
def version_delete(request: HttpRequest, app_id: int, number: int) -> HttpResponse:
    app, access = selectors.app_for_user(request.user, app_id)
    if not versions.may_delete_versions(request.user, access):
        raise PermissionDenied(_("Only the app's owner (or staff) can delete a version."))
    version = _version(app, number)
    context = {"app": app, "access": access, "version": version, "action": "delete"}
    if request.method == "POST":
        try:
            versions.version_delete(version=version, user=request.user)
        except ServiceError as exc:
            context["errors"] = [localize(d.message) for d in exc.diagnostics]
            return render(request, CONFIRM, context, status=400)
        messages.success(
            request,
            _("Deleted version %(number)s · %(name)s.") % {"number": number, "name": version.name},
        )
        return redirect("app-versions", app_id=app.pk)
    return render(request, CONFIRM, context)


# ---------------------------------------------------------------- export


def _attachment(response: HttpResponse, filename: str) -> HttpResponse:
    response["Content-Disposition"] = content_disposition_header(True, filename)
    return response


def _stem(app: AgentApp, version: AppVersion) -> str:
    """`bank-demo-v3`, after the app's name as saved in the version."""
    name = str(version.document.get("app", {}).get("name", ""))
    return f"{slugify(name) or f'app-{app.pk}'}-v{version.number}"


@login_required
@require_GET
def version_export_native(request: HttpRequest, app_id: int, number: int) -> HttpResponse:
    """The version's native document: ``?format=json`` (default) or ``yaml``."""
    app, _access = selectors.app_for_user(request.user, app_id)
    version = _version(app, number)
    fmt = request.GET.get("format", "json")
    if fmt not in _NATIVE_TYPES:
        return HttpResponseBadRequest(_("format must be json or yaml"))
    text = dumps_native(version.document, fmt)
    response = HttpResponse(text, content_type=f"{_NATIVE_TYPES[fmt]}; charset=utf-8")
    return _attachment(response, f"{_stem(app, version)}.statecraft.{fmt}")


@login_required
@require_GET
def version_export_cx(request: HttpRequest, app_id: int, number: int) -> HttpResponse:
    app, _access = selectors.app_for_user(request.user, app_id)
    version = _version(app, number)
    data, _diagnostics = versions.version_export_cx(version)
    response = HttpResponse(data, content_type="application/zip")
    return _attachment(response, f"{_stem(app, version)}-cx-agent-studio.zip")


# ---------------------------------------------------------------- diff


def _side_choice(
    app: AgentApp, raw: str, field: str, errors: dict[str, str]
) -> AppVersion | str | None:
    """A version, None for the working copy, or "" when the parameter is wrong (in `errors`)."""
    raw = (raw or "").strip()
    if raw in ("", WORKING):
        return None
    try:
        return versions.version_for_app(app, number=raw)
    except ServiceError as exc:
        errors[field] = localize(exc.diagnostics[0].message).replace(
            "version must", f"{field} must"
        )
        return ""


@login_required
@require_GET
def version_diff(request: HttpRequest, app_id: int) -> HttpResponse:
    """Three layers between two versions (or a version and the working copy)."""
    app, access = selectors.app_for_user(request.user, app_id)
    listed = list(versions.version_list(app))
    errors: dict[str, str] = {}
    default_from = str(listed[0].number) if listed else WORKING
    raw_from = request.GET.get("from", default_from)
    raw_to = request.GET.get("to", WORKING)
    before = _side_choice(app, raw_from, "from", errors)
    after = _side_choice(app, raw_to, "to", errors)
    channel = request.GET.get("channel", "web")
    modality = request.GET.get("modality", "text")
    if channel not in CHANNELS:
        errors["channel"] = _("channel must be one of %(values)s.") % {
            "values": ", ".join(CHANNELS)
        }
    if modality not in MODALITIES:
        errors["modality"] = _("modality must be one of %(values)s.") % {
            "values": ", ".join(MODALITIES)
        }
    values_text = request.GET.get("values", "").strip()
    values: dict[str, Any] = {}
    if values_text:
        try:
            parsed = limits.loads_json(values_text)
        except json.JSONDecodeError as exc:
            errors["values"] = _("values must be a JSON object: %(error)s.") % {
                "error": localize(json_error_message(exc))
            }
        else:
            if isinstance(parsed, dict):
                values = parsed
            else:
                errors["values"] = _('values must be a JSON object, e.g. {"customer_name": "Ada"}.')
    context: dict[str, Any] = {
        "app": app,
        "access": access,
        "versions": listed,
        "errors": errors,
        "chosen": {
            "from": raw_from,
            "to": raw_to,
            "channel": channel,
            "modality": modality,
            "values": values_text,
        },
        "channels": Channel.choices,
        "modalities": Modality.choices,
        "full_prompt_limit": FULL_PROMPT_LIMIT,
    }
    if errors:
        return render(request, DIFF, context, status=400)
    before_side = versions.diff_side(app, before)  # type: ignore[arg-type]
    after_side = versions.diff_side(app, after)  # type: ignore[arg-type]
    # The page answers at once; the scenarios are simulated on both sides by a job (the
    # section polls for its result), reused while the page is reloaded unchanged.
    diff = versions.app_diff(
        app,
        before_side,
        after_side,
        values=values,
        channel=channel,
        modality=modality,
        simulate_scenarios=False,
    )
    context.update(before=before_side, after=after_side, diff=diff)
    context["scenario_job"] = _scenario_job(
        request,
        app,
        before_side,
        after_side,
        {
            "before": before.number if before else None,  # type: ignore[union-attr]
            "after": after.number if after else None,  # type: ignore[union-attr]
            "values": values,
            "channel": channel,
            "modality": modality,
        },
    )
    return render(request, DIFF, context)


def _scenario_job(
    request: HttpRequest,
    app: AgentApp,
    before: versions.DiffSide,
    after: versions.DiffSide,
    params: dict[str, Any],
) -> dict[str, Any]:
    """What the page's scenario-results section shows: the job simulating both sides."""
    if not (before.scenarios and after.scenarios):
        return {"job": None, "scenarios": None, "active": False, "error": ""}
    try:
        job = jobs.job_submit(
            kind="version_diff", owner=request.user, app=app, params=params, reuse=True
        )
    except jobs.JobLimitError as exc:
        return {"job": None, "scenarios": None, "active": False, "error": exc.localized()}
    return _scenario_context(job)


def _scenario_context(job: Job) -> dict[str, Any]:
    finished = job.status in JOB_FINISHED
    scenarios = (job.result or {}).get("scenarios") if job.status == "succeeded" else None
    return {
        "job": job,
        "scenarios": scenarios,
        "changed": [s for s in scenarios or () if s["change"] != "same"],
        "active": not finished,
        "error": job.error_message if finished and job.status != "succeeded" else "",
        "poll_ms": 500,
    }


@login_required
@require_GET
def version_diff_scenarios(request: HttpRequest, app_id: int, job_id: object) -> HttpResponse:
    """The scenario-results section of a diff page, from its job (polled while it runs)."""
    app, access = selectors.app_for_user(request.user, app_id)
    try:
        job = jobs.job_for_user(request.user, job_id)
    except Job.DoesNotExist:
        raise Http404("No such job of yours.") from None
    if job.app_id != app.pk or job.kind != "version_diff":
        raise Http404("No such diff job for this app.")
    context = {"app": app, "access": access, "scenario_job": _scenario_context(job)}
    return render(request, f"{DIFF}#scenario-results", context)
