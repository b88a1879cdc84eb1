"""Export and import of whole apps: the native JSON/YAML document, the CX Agent Studio ZIP
and the ADK package (with its goldens as ADK evalsets, which import back as scenarios).

Exports read the app with one selector; the import writes through the service
functions inside one transaction, after the core has checked the whole app
(`formats.check_app_spec`), so it writes nothing unless all of it is valid.
A problem the services still find rolls everything back and comes out as a
`ServiceError` whose fields name the object: ``variables.customer.default``,
``tools.LookupBalance.python_code``, ``agents.Root.scenarios.Happy path.name``.

Choices (docs/reference/choices.md): an imported app whose name the owner already uses is
imported as "Name (imported)" (then "Name (imported 2)", ...), never merged
and never refused; lint problems (an undeclared reference in instructions, a
missing description) do not block an import — the designer shows them, as it
does for an app typed in by hand.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Iterable
from typing import Any, Literal

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction
from django.urls import reverse
from django.utils.translation import pgettext

from agents import selectors
from agents.core import limits
from agents.core.adk.evalsets import scenarios_from_evalset
from agents.core.adk.package import package_name, to_adk_files
from agents.core.cx.app import read_cx_files, read_zip, to_cx_files, zip_bytes
from agents.core.diagnostics import (
    Diagnostic,
    Message,
    Severity,
    has_errors,
    message_data,
    message_from_data,
    strip_prefix,
)
from agents.core.formats import from_native, loads_native, to_native
from agents.core.lint import lint_app
from agents.core.script import format_script
from agents.core.spec import AppSpec, ScenarioSpec
from agents.i18n import with_i18n
from agents.models import AgentApp, Job, JobStatus, Scenario
from agents.services import jobs
from agents.services.apps import app_create_from_spec, free_name
from agents.services.common import ServiceError, changed, setting
from agents.services.scenarios import scenario_save

logger = logging.getLogger("agents.exchange")


# ---------------------------------------------------------------- export


def app_export_specs(app: AgentApp) -> tuple[AppSpec, tuple[ScenarioSpec, ...]]:
    """The app and its scenarios as exported: a scenario saved before the nesting limit
    (a value nested too deeply to copy) is left out, and `app_export_problems` names it."""
    spec, scenarios = selectors.app_specs(app)
    return spec, tuple(s for s in scenarios if limits.scenario_too_deep(s) is None)


def app_export_problems(app: AgentApp) -> tuple[Diagnostic, ...]:
    """SC502 for each scenario the export leaves out (nested too deeply, saved before the
    limit)."""
    _, scenarios = selectors.app_specs(app)
    return tuple(
        limits.scenario_too_deep_error(s, deep)
        for s in scenarios
        if (deep := limits.scenario_too_deep(s)) is not None
    )


def app_export_native(app: AgentApp) -> dict[str, Any]:
    """The native document of the app (`formats.dumps_native` turns it into JSON or YAML)."""
    spec, scenarios = app_export_specs(app)
    return to_native(spec, scenarios)


def app_export_cx(app: AgentApp) -> tuple[bytes, tuple[Diagnostic, ...]]:
    """The CX Agent Studio ZIP of the app and what CX has no place for."""
    spec, scenarios = app_export_specs(app)
    files, diagnostics = to_cx_files(spec, scenarios)
    return zip_bytes(files), app_export_problems(app) + tuple(diagnostics)


def app_instruction_errors(app: AgentApp) -> tuple[Diagnostic, ...]:
    """The errors in the agents' instructions (an undeclared variable, a tool the agent may
    not call, an unclosed tag…): exported as they are, so the export report lists them."""
    spec, _ = app_export_specs(app)
    return tuple(
        d
        for d in lint_app(spec)
        if d.severity is Severity.ERROR and (d.field or "").endswith(".instructions")
    )


def app_export_adk_files(app: AgentApp) -> tuple[dict[str, bytes], tuple[Diagnostic, ...]]:
    """The ADK package of the app (``<package>/agent.py``…, path → bytes) and what ADK has
    no place for (`agents.core.adk.package`)."""
    spec, scenarios = app_export_specs(app)
    files, diagnostics = to_adk_files(spec, scenarios)
    return files, app_export_problems(app) + tuple(diagnostics)


def app_export_adk(app: AgentApp) -> tuple[bytes, str, tuple[Diagnostic, ...]]:
    """The ADK package as a ZIP (the package folder at its root), its name, and the notes."""
    files, diagnostics = app_export_adk_files(app)
    spec, _ = app_export_specs(app)
    return zip_bytes(files), package_name(spec), diagnostics


# ---------------------------------------------------------------- ADK evalsets


def app_import_evalset(
    *, app: AgentApp, actor: AbstractBaseUser, data: bytes, filename: str = "evalset.json"
) -> tuple[list[Scenario], tuple[Diagnostic, ...]]:
    """Add an ADK evalset's eval cases to `app` as scenarios of its root agent (all of them
    or none; a name the agent already uses gets " (imported)"). Refused with
    `ImportRefused` when the file is not an evalset or holds more eval cases than
    ``IMPORT_MAX_OBJECTS``; returns the scenarios and the notes."""
    over = evalset_precheck(data)[0]
    if over:
        raise ImportRefused("native", over)
    spec, existing = app_export_specs(app)
    scenarios, diagnostics = scenarios_from_evalset(data, spec, filename)
    if has_errors(diagnostics):
        raise ImportRefused("native", [d for d in diagnostics if d.severity is Severity.ERROR])
    agents = {a.display_name: a for a in app.agents.all()}
    taken = {s.name for s in existing}
    created: list[Scenario] = []
    try:
        with transaction.atomic():
            for scenario in scenarios:
                name, n = scenario.name, 1
                while name in taken:
                    name = f"{scenario.name}{imported_suffix(n)}"
                    n += 1
                taken.add(name)
                session = scenario.session
                created.append(
                    scenario_save(
                        agent=agents[scenario.agent],
                        name=name,
                        steps_script=format_script(scenario.steps),
                        session_values=dict(session.values),
                        channel=session.channel,
                        modality=session.modality,
                        actor=actor,
                    )
                )
    except ServiceError as exc:
        raise ImportRefused("native", exc.diagnostics) from exc
    return created, diagnostics


def evalset_precheck(data: bytes | str) -> tuple[tuple[Diagnostic, ...], int]:
    """The evalset's case limit (``IMPORT_MAX_OBJECTS``), checked before any scenario is
    built, and how many eval cases it holds (0 when it does not parse: reading it says why)."""
    try:
        doc = limits.loads_json(data)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return (), 0
    return (
        limits.evalset_problems(doc, max_objects=settings.IMPORT_MAX_OBJECTS),
        limits.evalset_case_count(doc),
    )


def evalset_as_job(data: bytes) -> bool:
    """An evalset imports as a job from ``IMPORT_JOB_MIN_BYTES`` bytes or
    ``IMPORT_EVALSET_JOB_MIN_CASES`` eval cases (each case is a scenario written)."""
    if import_as_job(data):
        return True
    cases = evalset_precheck(data)[1]
    return cases >= int(setting("IMPORT_EVALSET_JOB_MIN_CASES"))


def app_import_evalset_submit(
    *, app: AgentApp, actor: AbstractBaseUser, data: bytes, filename: str = "evalset.json"
) -> Job:
    """Queue an evalset's import into `app` as a job (kind ``import_evalset``) run as
    `actor`. The case limit is checked first, in the request (`ImportRefused`, nothing
    queued); the text travels in the row and is dropped once the job has read it. Over
    the per-user job limit: `jobs.JobLimitError`."""
    over = evalset_precheck(data)[0]
    if over:
        raise ImportRefused("native", over)
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    params = {"filename": filename, "size": len(data), "document": text}
    return jobs.job_submit(kind="import_evalset", owner=actor, app=app, params=params)


def app_import_evalset_job_run(ctx: jobs.JobContext) -> dict[str, Any]:
    """The ``import_evalset`` job: `app_import_evalset` as the job's owner. The result
    names the app, the scenarios made and carries the report (as ``import_app``'s); a
    refusal fails the job with every problem in its result, and nothing is created."""
    job = ctx.job
    params = job.params
    filename = params.get("filename") or "evalset.json"
    ctx.progress(done=0, total=1, current=Message(jobs.PROGRESS_READING, file=filename))
    access = selectors.app_access(job.owner, job.app) if job.owner is not None else None
    if access is None or not access.can_edit:  # the share revoked while it waited
        Job.objects.filter(pk=job.pk).update(
            params={k: v for k, v in params.items() if k != "document"}
        )
        raise jobs.JobStopped(
            JobStatus.FAILED,
            Message("%(file)s: not imported: you may no longer edit this app.", file=filename),
        )
    try:
        created, notes = app_import_evalset(
            app=job.app, actor=job.owner, data=params.get("document") or "", filename=filename
        )
    except ImportRefused as exc:
        detail = Message("%(file)s: not imported; nothing was created.", file=filename)
        refused = {
            "app": {"id": job.app_id, "url": reverse("api:app-detail", args=[job.app_id])},
            "kind": "evalset",
            "detail": detail,
            "scenarios": [],
            "diagnostics": [with_i18n(d.to_dict(), "message") for d in exc.diagnostics],
            "report": _report_with_i18n(import_report("native", exc.diagnostics, filename)),
            "i18n": {"detail": message_data(detail)},
        }
        raise jobs.JobStopped(JobStatus.FAILED, refused["detail"], result=refused) from exc
    finally:
        kept = {k: v for k, v in params.items() if k != "document"}
        Job.objects.filter(pk=job.pk).update(params=kept)
    ctx.progress(done=1, current="")
    return {
        "app": {
            "id": job.app_id,
            "name": job.app.name,
            "url": reverse("api:app-detail", args=[job.app_id]),
        },
        "kind": "evalset",
        "scenarios": [{"id": s.pk, "name": s.name} for s in created],
        "warnings": sum(d.severity is Severity.WARNING for d in notes),
        "diagnostics": len(notes),
        "report": _report_with_i18n(import_report("native", notes, filename)),
    }


# ---------------------------------------------------------------- reading an upload

UploadKind = Literal["native", "cx"]


def read_app_file(
    data: bytes, filename: str = ""
) -> tuple[UploadKind, AppSpec | None, tuple[ScenarioSpec, ...], tuple[Diagnostic, ...]]:
    """What an uploaded file holds: a CX ZIP (by its signature) or a native JSON/YAML text.
    A file named ``.zip`` that is not one is refused as such (not read as a native text)."""
    if filename.lower().endswith(".zip") and data[:4] not in (b"PK\x03\x04", b"PK\x05\x06"):
        message = Message(
            "%(filename)s is not a ZIP file (a CX Agent Studio export is one); export it again",
            filename=filename,
        )
        return "cx", None, (), (Diagnostic("SC601", Severity.ERROR, message, field="(zip)"),)
    if data[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        files, problems = read_zip(data)
        if files is None:
            return "cx", None, (), problems
        spec, scenarios, diagnostics = read_cx_files(files)
        over = limits.app_spec_problems(spec, **_limits()) if spec is not None else ()
        if over:
            return "cx", None, (), over
        return "cx", spec, scenarios, diagnostics
    doc, problems = loads_native(data, max_yaml_bytes=settings.IMPORT_MAX_YAML_BYTES)
    if doc is None:
        return "native", None, (), problems
    return read_native_document(doc)


def _limits() -> dict[str, int]:
    return {
        "max_objects": settings.IMPORT_MAX_OBJECTS,
        "max_instructions_bytes": settings.IMPORT_MAX_INSTRUCTIONS_BYTES,
    }


def read_native_document(
    doc: Any,
) -> tuple[UploadKind, AppSpec | None, tuple[ScenarioSpec, ...], tuple[Diagnostic, ...]]:
    """What a native document (JSON/YAML, already parsed by `loads_native`) holds."""
    # Counted on the document as read, before the (per-object) checks in depth.
    over = limits.native_document_problems(doc, **_limits())
    if over:
        return "native", None, (), over
    spec, scenarios, diagnostics = from_native(doc)
    return "native", spec, scenarios, diagnostics


# ---------------------------------------------------------------- import


def imported_suffix(n: int) -> str:
    """What a name already in use gets on import: " (imported)", then " (imported 2)"…, in
    the importer's language when it is created (then it is the user's data, kept as is)."""
    if n == 1:
        return pgettext("imported name suffix", " (imported)")
    return pgettext("imported name suffix", " (imported %(n)s)") % {"n": n}


def app_import(
    *,
    owner: AbstractBaseUser,
    spec: AppSpec,
    scenarios: Iterable[ScenarioSpec] = (),
    name: str | None = None,
) -> AgentApp:
    """Create the app `spec` describes, owned by `owner`: all of it, or nothing."""
    wanted = name or spec.name
    free = free_name(
        owner.pk,
        wanted,
        lambda n: "" if n == 0 else imported_suffix(n),
    )
    app = app_create_from_spec(owner=owner, spec=spec, scenarios=scenarios, name=free)
    logger.info("app %s imported by %s as %r", app.pk, owner.get_username(), app.name)
    return app


class ImportRefused(ServiceError):
    """An uploaded file was not imported; `kind` says how it was read (native or cx)."""

    def __init__(self, kind: UploadKind, diagnostics: Iterable[Diagnostic]) -> None:
        self.kind = kind
        super().__init__(tuple(diagnostics))


_SEVERITY_RANK = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}


def import_report(
    kind: UploadKind, diagnostics: Iterable[Diagnostic], filename: str
) -> dict[str, Any]:
    """Every diagnostic of an import, grouped by the file it is about (a CX ZIP's files; the
    uploaded file otherwise): the report the import page, the API and the app's history show.

    Files with errors come first, then those with warnings, then notes; within a file,
    errors, warnings, notes, each in the order found. A message loses its ``file: field:``
    prefix (the group and the row say them).
    """
    groups: dict[str, list[tuple[int, int, dict[str, str]]]] = {}
    counts = {s.value: 0 for s in Severity}
    for n, d in enumerate(diagnostics):
        file = d.subject if kind == "cx" and d.subject else filename
        message = strip_prefix(d.message, f"{file}: ")
        if d.field:
            message = strip_prefix(message, f"{d.field}: ")
        counts[d.severity.value] += 1
        row = {
            "severity": d.severity.value,
            "code": d.code,
            "field": d.field or "",
            "message": message,
        }
        groups.setdefault(file, []).append((_SEVERITY_RANK[d.severity], n, row))
    ordered = sorted(groups.items(), key=lambda item: (min(r[0] for r in item[1]), item[0]))
    files = [
        {"file": file, "diagnostics": [row for _, _, row in sorted(rows, key=lambda r: r[:2])]}
        for file, rows in ordered
    ]
    for group in files:  # a file kept whole, with nothing else to say: one line on the page
        rows = group["diagnostics"]
        group["kept_whole"] = len(rows) == 1 and rows[0]["code"] == "SC607" and not rows[0]["field"]
    kept = sum(group["kept_whole"] for group in files)
    return {"kind": kind, "file": filename, "counts": counts, "files": files, "kept_files": kept}


def app_import_file(
    *, owner: AbstractBaseUser, data: bytes, name: str | None = None, filename: str = "upload"
) -> tuple[AgentApp, UploadKind, tuple[Diagnostic, ...]]:
    """Import an uploaded file (native JSON/YAML or CX ZIP): the one use case behind the
    import page and `manage.py import_app`. All of it or nothing: anything wrong raises
    `ImportRefused` with every problem (its errors first). Returns the app, the kind of
    file and the warnings and notes that did not stop it."""
    return _import_read(read_app_file(data, filename), owner=owner, name=name, filename=filename)


def _import_read(
    read: tuple[UploadKind, AppSpec | None, tuple[ScenarioSpec, ...], tuple[Diagnostic, ...]],
    *,
    owner: AbstractBaseUser,
    name: str | None,
    filename: str,
) -> tuple[AgentApp, UploadKind, tuple[Diagnostic, ...]]:
    """`app_import_file` once the upload is read (`read_app_file`, `read_native_document`)."""
    kind, spec, scenarios, diagnostics = read
    if spec is None or has_errors(diagnostics):
        errors = [d for d in diagnostics if d.severity is Severity.ERROR]
        raise ImportRefused(kind, errors or diagnostics)
    try:
        with transaction.atomic():
            app = app_import(owner=owner, spec=spec, scenarios=scenarios, name=name)
            # The whole report stays in the app's history (the import report page reads it).
            changed(
                app=app,
                actor=owner,
                action="app.import",
                name=app.name,
                after=_stored_report(import_report(kind, diagnostics, filename)),
            )
    except ServiceError as exc:
        raise ImportRefused(kind, exc.diagnostics) from exc
    return app, kind, tuple(d for d in diagnostics if d.severity is not Severity.ERROR)


def app_import_report(app: AgentApp) -> dict[str, Any] | None:
    """The report of the import that made `app` (None for an app made in Statecraft); its
    messages are `Message`s again, so the page shows them in the reader's language."""
    event = app.audit_events.filter(action="app.import").order_by("-id").first()  # one query
    if event is None:
        return None
    report = event.after
    if not isinstance(report, dict):
        return report
    english = 0  # rows stored before their templates were kept: shown as stored
    for group in report.get("files", []):
        for row in group.get("diagnostics", []):
            stored = row.pop("i18n", None)
            if stored is not None:
                row["message"] = message_from_data(stored, row.get("message", ""))
            english += not isinstance(row.get("message"), Message)
    report["stored_in_english"] = english
    return report


def _stored_report(report: dict[str, Any]) -> dict[str, Any]:
    """The report as the history keeps it: each row's message also as its template and
    parameters (``i18n``), read back by `app_import_report`."""
    for group in report["files"]:
        for row in group["diagnostics"]:
            if isinstance(row["message"], Message):
                row["i18n"] = message_data(row["message"])
    return report


# ---------------------------------------------------------------- large imports as jobs


def import_job_min_bytes() -> int:
    """Uploads of at least this many bytes import as a job (0: every upload does)."""
    return int(setting("IMPORT_JOB_MIN_BYTES"))


def import_as_job(data: bytes) -> bool:
    return len(data) >= import_job_min_bytes()


def app_import_submit(
    *, owner: AbstractBaseUser, data: bytes, name: str | None = None, filename: str = "upload"
) -> Job:
    """Queue the import of an uploaded file as a job (kind ``import_app``) run as `owner`.

    What is cheap to check is checked first, in the request (`ImportRefused` as the
    synchronous import): a ``.zip`` that is not one, the ZIP's own limits, a text that does
    not parse or is over ``IMPORT_MAX_YAML_BYTES``, a document over ``IMPORT_MAX_OBJECTS``.
    A native text is parsed only there: the job gets the parsed document (``document``,
    as JSON text, so its keys keep their order on every database) and does not parse the
    upload again; a ZIP travels as its bytes (``data``, base64). Either is dropped from the
    row once the job has read it (the upload size limit is checked before, by the page and
    the API). Over the per-user job limit: `jobs.JobLimitError`."""
    kind, problems, doc = _import_precheck(data, filename)
    if problems:
        raise ImportRefused(kind, problems)
    params: dict[str, Any] = {"filename": filename, "name": name or "", "size": len(data)}
    if doc is not None:
        params["document"] = json.dumps(doc, ensure_ascii=False)
    else:
        params["data"] = base64.b64encode(data).decode("ascii")
    return jobs.job_submit(kind="import_app", owner=owner, params=params)


def _import_precheck(data: bytes, filename: str) -> tuple[UploadKind, tuple[Diagnostic, ...], Any]:
    """The refusals `read_app_file` finds before it builds any object (no database), and a
    native text's parsed document (None for a ZIP)."""
    if filename.lower().endswith(".zip") and data[:4] not in (b"PK\x03\x04", b"PK\x05\x06"):
        kind, _, _, problems = read_app_file(data, filename)
        return kind, problems, None
    if data[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        files, problems = read_zip(data)
        return "cx", problems if files is None else (), None
    doc, problems = loads_native(data, max_yaml_bytes=settings.IMPORT_MAX_YAML_BYTES)
    if doc is None:
        return "native", problems, None
    return "native", limits.native_document_problems(doc, **_limits()), doc


def app_import_job_run(ctx: jobs.JobContext) -> dict[str, Any]:
    """The ``import_app`` job: `app_import_file` as the job's owner (audited as the page's
    import). The result names the new app and carries the report; a refusal fails the job
    with every problem in its result."""
    job = ctx.job
    params = job.params
    filename = params.get("filename") or "upload"
    ctx.progress(done=0, total=1, current=Message(jobs.PROGRESS_READING, file=filename))
    try:
        if "document" in params:  # a native text, parsed by the request (app_import_submit)
            read = read_native_document(json.loads(params["document"]))
        else:
            read = read_app_file(base64.b64decode(params.get("data") or ""), filename)
        app, kind, diagnostics = _import_read(
            read, owner=job.owner, name=params.get("name") or None, filename=filename
        )
    except ImportRefused as exc:
        detail = Message("%(file)s: not imported; nothing was created.", file=filename)
        refused = {
            "app": None,
            "kind": exc.kind,
            "detail": detail,
            "diagnostics": [with_i18n(d.to_dict(), "message") for d in exc.diagnostics],
            "report": _report_with_i18n(import_report(exc.kind, exc.diagnostics, filename)),
            "i18n": {"detail": message_data(detail)},
        }
        raise jobs.JobStopped(JobStatus.FAILED, refused["detail"], result=refused) from exc
    finally:
        kept = {k: v for k, v in params.items() if k not in ("data", "document")}
        Job.objects.filter(pk=job.pk).update(params=kept)
    ctx.progress(done=1, current="")
    return {
        "app": {
            "id": app.pk,
            "name": app.name,
            "url": reverse("api:app-detail", args=[app.pk]),
        },
        "kind": kind,
        "warnings": sum(d.severity is Severity.WARNING for d in diagnostics),
        "diagnostics": len(diagnostics),
        "report": _report_with_i18n(import_report(kind, diagnostics, filename)),
    }


def _report_with_i18n(report: dict[str, Any]) -> dict[str, Any]:
    """A report stored in a job's result: each row's message keeps its template
    (`agents.i18n.with_i18n`), so the API and the page show it in the reader's language."""
    for group in report["files"]:
        group["diagnostics"] = [with_i18n(row, "message") for row in group["diagnostics"]]
    return report
