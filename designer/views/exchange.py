"""Export and import pages: native JSON/YAML downloads, the CX Agent Studio ZIP, the upload form."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.utils.http import content_disposition_header
from django.utils.text import slugify
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_GET, require_http_methods

from agents import selectors
from agents.core.diagnostics import Diagnostic, Severity, strip_prefix
from agents.core.formats import dumps_native
from agents.i18n import localize, localized_data
from agents.models import AgentApp, Job, JobStatus
from agents.services import exchange, jobs
from server.ratelimit import rate_limited

TEMPLATE = "agents/app_import.html"
MAX_UPLOAD_BYTES = 20 * 1024 * 1024
POLL_MS = 500  # as Run all
WARNINGS_HEADER = "X-Statecraft-Export-Warnings"
_NATIVE_TYPES = {"json": "application/json", "yaml": "application/yaml"}


def _file_stem(app: AgentApp) -> str:
    return slugify(app.name) or f"app-{app.pk}"


def _attachment(response: HttpResponse, filename: str) -> HttpResponse:
    response["Content-Disposition"] = content_disposition_header(True, filename)
    return response


def _rows(
    diagnostics: Sequence[Diagnostic], default_file: str, *, zip_files: bool = False
) -> list[dict[str, Any]]:
    """One row per diagnostic: severity, file, field and the message without that prefix.

    CX diagnostics name the file of the ZIP in `subject` (`zip_files`); the others
    concern the one uploaded file.
    """
    rows = []
    for d in diagnostics:
        file = d.subject if zip_files and d.subject else default_file
        message = strip_prefix(d.message, f"{file}: ")
        if d.field:
            message = strip_prefix(message, f"{d.field}: ")
        rows.append(
            {
                "severity": d.severity.value,
                "code": d.code,
                "file": file,
                "field": d.field or "",
                "message": message,
            }
        )
    return rows


@login_required
@require_GET
def app_export(request: HttpRequest, app_id: int) -> HttpResponse:
    """The export page: both downloads and what the CX export cannot carry."""
    app, access = selectors.app_for_user(request.user, app_id)
    return render(request, TEMPLATE, _export_context(app, access))


def _export_context(app: AgentApp, access: Any, **extra: Any) -> dict[str, Any]:
    data, diagnostics = exchange.app_export_cx(app)
    adk_data, package, adk_diagnostics = exchange.app_export_adk(app)
    return {
        "mode": "export",
        "app": app,
        "access": access,
        # The instructions' errors first (exported as written), unless CX reports them too.
        "rows": _rows(
            [
                d
                for d in exchange.app_instruction_errors(app)
                if (d.code, d.field) not in {(c.code, c.field) for c in diagnostics}
            ],
            "",
        )
        + _rows(diagnostics, "", zip_files=True),
        "cx_size": len(data),
        "adk_size": len(adk_data),
        "adk_package": package,
        "adk_rows": _rows(adk_diagnostics, f"{package}/"),
        **extra,
    }


@login_required
@require_GET
def app_export_native(request: HttpRequest, app_id: int) -> HttpResponse:
    """The native document as a download: ``?format=json`` (default) or ``yaml``."""
    app, _access = selectors.app_for_user(request.user, app_id)
    fmt = request.GET.get("format", "json")
    if fmt not in _NATIVE_TYPES:
        return HttpResponseBadRequest(_("format must be json or yaml"))
    problems = exchange.app_export_problems(app)
    if problems:  # never a download that silently lacks a scenario
        return HttpResponseBadRequest(
            "\n".join(f"{localize(d.message)} [{d.code}]" for d in problems),
            content_type="text/plain; charset=utf-8",
        )
    text = dumps_native(exchange.app_export_native(app), fmt)
    response = HttpResponse(text, content_type=f"{_NATIVE_TYPES[fmt]}; charset=utf-8")
    return _attachment(response, f"{_file_stem(app)}.statecraft.{fmt}")


@login_required
@require_GET
def app_export_cx(request: HttpRequest, app_id: int) -> HttpResponse:
    """The CX Agent Studio ZIP; the header counts the warnings (and errors) of the export."""
    app, _access = selectors.app_for_user(request.user, app_id)
    data, diagnostics = exchange.app_export_cx(app)
    response = HttpResponse(data, content_type="application/zip")
    response[WARNINGS_HEADER] = str(sum(d.severity is not Severity.INFO for d in diagnostics))
    return _attachment(response, f"{_file_stem(app)}-cx-agent-studio.zip")


@login_required
@require_GET
def app_export_adk(request: HttpRequest, app_id: int) -> HttpResponse:
    """The ADK package as a ZIP (``<package>/agent.py``…, its goldens as evalsets)."""
    app, _ = selectors.app_for_user(request.user, app_id)
    data, package, diagnostics = exchange.app_export_adk(app)
    response = HttpResponse(data, content_type="application/zip")
    response[WARNINGS_HEADER] = str(sum(d.severity is not Severity.INFO for d in diagnostics))
    return _attachment(response, f"{package}-adk.zip")


@login_required
@require_http_methods(["POST"])
@rate_limited("import", "imports", methods=("POST",))
def app_import_evalset(request: HttpRequest, app_id: int) -> HttpResponse:
    """Add an ADK evalset's eval cases to the app as scenarios of its root agent."""
    app, access = selectors.app_for_user(request.user, app_id, edit=True)
    upload = request.FILES.get("evalset")
    if upload is None or upload.size > MAX_UPLOAD_BYTES:
        problem = _("Choose an ADK evalset file (.evalset.json).")
        if upload is not None:
            problem = _("The file is over %(size)s MB.") % {
                "size": MAX_UPLOAD_BYTES // (1024 * 1024)
            }
        context = _export_context(app, access, evalset_error=problem)
        return render(request, TEMPLATE, context, status=400)
    filename = upload.name or "evalset.json"
    data = upload.read()
    try:
        if exchange.evalset_as_job(data):  # a large evalset: a job, and its progress at once
            job = exchange.app_import_evalset_submit(
                app=app, actor=request.user, data=data, filename=filename
            )
            return redirect("app-import-evalset-job", app_id=app.pk, import_job_id=job.pk)
        created, notes = exchange.app_import_evalset(
            app=app, actor=request.user, data=data, filename=filename
        )
    except jobs.JobLimitError as exc:
        context = _export_context(app, access, evalset_error=exc.localized())
        return render(request, TEMPLATE, context, status=429)
    except exchange.ImportRefused as exc:
        rows = _rows(exc.diagnostics, filename)
        context = _export_context(app, access, evalset_rows=rows)
        return render(request, TEMPLATE, context, status=400)
    return _evalset_imported(request, app, filename, len(created), notes)


def _evalset_imported(
    request: HttpRequest, app: AgentApp, filename: str, count: int, notes: Sequence[Any]
) -> HttpResponse:
    """Where an evalset's import ends: the designer, with what it added."""
    summary = ngettext(
        "Added %(count)s scenario from %(file)s.",
        "Added %(count)s scenarios from %(file)s.",
        count,
    ) % {"count": count, "file": filename}
    warnings = [d for d in notes if d.severity is not Severity.INFO]
    if warnings:
        summary += " " + " ".join(localize(d.message) for d in warnings[:3])
    messages.success(request, summary)
    return redirect("app-designer", app_id=app.pk)


@login_required
@require_GET
def app_import_evalset_job(
    request: HttpRequest, app_id: int, import_job_id: object
) -> HttpResponse:
    """A large evalset's import job: its progress on the export page (polled while it
    runs), then where the synchronous import ends: the designer, or every problem."""
    # A job is its submitter's alone (404 to anyone else, as every job page), then the app's
    # edit rights.
    try:
        job = jobs.job_for_user(request.user, import_job_id)
    except Job.DoesNotExist:
        raise Http404("No such import of yours.") from None
    if job.kind != "import_evalset" or job.app_id != app_id:
        raise Http404("No such import of yours.")
    app, access = selectors.app_for_user(request.user, app_id, edit=True)
    filename = job.params.get("filename") or "evalset.json"
    finished = jobs.is_finished(job)
    if finished and request.htmx:  # the whole page, once: the designer, or the refusal
        response = HttpResponse(status=204)
        response["HX-Redirect"] = request.get_full_path()
        return response
    followed = {"job": job, "filename": filename, "active": not finished, "poll_ms": POLL_MS}
    if request.htmx:  # the polled fragment: no export built for it
        context = {"app": app, "access": access, "evalset_job": followed}
        return render(request, f"{TEMPLATE}#evalset-job", context)
    result = localized_data(job.result or {})
    if job.status == JobStatus.SUCCEEDED:
        count = len(result.get("scenarios") or [])
        return _evalset_imported(request, app, filename, count, [])
    extra: dict[str, Any] = {"evalset_job": followed}
    if result.get("diagnostics"):  # refused: every problem, as the synchronous import
        extra["evalset_rows"] = [
            {**row, "message": strip_prefix(str(row.get("message", "")), f"{filename}: ")}
            for row in result["diagnostics"]
        ]
    elif finished:
        extra["evalset_error"] = _("%(file)s was not imported: %(why)s.") % {
            "file": filename,
            "why": localize(job.error_message) if job.error else job.status,
        }
    return render(request, TEMPLATE, _export_context(app, access, **extra))


@login_required
@require_http_methods(["GET", "POST"])
@rate_limited("import", "imports", methods=("POST",))
def app_import(request: HttpRequest) -> HttpResponse:
    """Upload a native JSON/YAML file or a CX ZIP; nothing is created unless all of it is valid."""
    context: dict[str, Any] = {"mode": "import", "rows": [], "typed": {"name": ""}}
    if request.method == "GET":
        return render(request, TEMPLATE, context)
    typed_name = request.POST.get("name", "").strip()
    context["typed"] = {"name": typed_name}
    upload = request.FILES.get("file")
    if upload is None:
        context["file_error"] = _(
            "Choose a file: a .json or .yaml export, or a CX Agent Studio .zip."
        )
        return render(request, TEMPLATE, context, status=400)
    if upload.size > MAX_UPLOAD_BYTES:
        context["file_error"] = _("The file is over %(size)s MB.") % {
            "size": MAX_UPLOAD_BYTES // (1024 * 1024)
        }
        return render(request, TEMPLATE, context, status=400)
    filename = upload.name or "upload"
    data = upload.read()
    try:
        if exchange.import_as_job(data):  # a large upload: a job, and its progress at once
            job = exchange.app_import_submit(
                owner=request.user, data=data, name=typed_name or None, filename=filename
            )
            return redirect("app-import-job", import_job_id=job.pk)
        app, _kind, diagnostics = exchange.app_import_file(
            owner=request.user, data=data, name=typed_name or None, filename=filename
        )
    except jobs.JobLimitError as exc:
        context["file_error"] = exc.localized()
        return render(request, TEMPLATE, context, status=429)
    except exchange.ImportRefused as exc:
        context["kind"] = exc.kind
        context["rows"] = _rows(exc.diagnostics, filename, zip_files=exc.kind == "cx")
        context["report"] = exchange.import_report(exc.kind, exc.diagnostics, filename)
        return render(request, TEMPLATE, context, status=400)
    warnings = sum(d.severity is Severity.WARNING for d in diagnostics)
    return _imported(request, app, filename, warnings, bool(diagnostics))


def _imported(
    request: HttpRequest, app: AgentApp, filename: str, warnings: int, reported: bool
) -> HttpResponse:
    """Where an import that made `app` ends: its report when it has anything to say."""
    summary = _("Imported “%(name)s” from %(file)s.") % {"name": app.name, "file": filename}
    if warnings:
        summary += " " + ngettext(
            "%(count)s warning: see the import report.",
            "%(count)s warnings: see the import report.",
            warnings,
        ) % {"count": warnings}
    messages.success(request, summary)
    if reported:
        return redirect("app-import-report", app_id=app.pk)
    return redirect("app-designer", app_id=app.pk)


@login_required
@require_GET
def app_import_job(request: HttpRequest, import_job_id: object) -> HttpResponse:
    """A large import's job: its progress (the page polls this fragment while it runs),
    then where the synchronous import ends: the app (or its report), or every problem."""
    try:
        job = jobs.job_for_user(request.user, import_job_id)
    except Job.DoesNotExist:
        raise Http404("No such import of yours.") from None
    if job.kind != "import_app":
        raise Http404("No such import of yours.")
    filename = job.params.get("filename") or "upload"
    result = localized_data(job.result or {})  # its messages in the reader's language
    finished = jobs.is_finished(job)
    if finished and request.htmx:  # the whole page, once: the app, or the refusal
        response = HttpResponse(status=204)
        response["HX-Redirect"] = request.get_full_path()
        return response
    if job.status == JobStatus.SUCCEEDED and result.get("app"):
        app = AgentApp.objects.filter(pk=result["app"]["id"], owner=request.user).first()
        if app is None:
            raise Http404("The imported app is gone.")
        return _imported(request, app, filename, result["warnings"], bool(result["diagnostics"]))
    context: dict[str, Any] = {
        "mode": "import",
        "rows": [],
        "typed": {"name": job.params.get("name") or ""},
        "import_job": {
            "job": job,
            "filename": filename,
            "active": not finished,
            "poll_ms": POLL_MS,
        },
    }
    if result.get("report"):  # refused: every problem, as the synchronous import lists them
        context["kind"] = result["kind"]
        context["rows"] = result["diagnostics"]
        context["report"] = result["report"]
    elif finished:
        context["file_error"] = _("%(file)s was not imported: %(why)s.") % {
            "file": filename,
            "why": localize(job.error_message) if job.error else job.status,
        }
    if request.htmx:
        return render(request, f"{TEMPLATE}#import-job", context)
    return render(request, TEMPLATE, context)


@login_required
@require_GET
def app_import_report(request: HttpRequest, app_id: int) -> HttpResponse:
    """Every diagnostic of the import that made the app, grouped by file."""
    app, access = selectors.app_for_user(request.user, app_id)
    report = exchange.app_import_report(app)
    context = {"mode": "report", "app": app, "access": access, "report": report}
    return render(request, TEMPLATE, context)
