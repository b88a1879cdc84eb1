"""The Evaluations page of an app (issue 31): its evaluation runs as a history with a chart
of the pass rate, each golden's last results as a strip of marks, a form to start an
experiment (models x versions, repetitions, a pass threshold), and one run's matrix with the
comparison of two of its columns and its exports."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST
from rest_framework.utils.encoders import JSONEncoder

from agents import selectors
from agents.core.diagnostics import Message
from agents.i18n import localize, localized_data
from agents.models import JOB_ACTIVE, AgentApp, EvaluationRun, Job
from agents.services import (
    ServiceError,
    evaluation,
    evaluation_history,
    evaluation_matrix,
    jobs,
    live_models,
    versions,
)
from agents.services.live_models import LiveNotAllowed
from designer.charts import pass_rate_svg

PAGE = "agents/app_evaluations.html"
RUN_PAGE = "agents/evaluation_run.html"
HISTORY_SHOWN = 30


def _runs_context(app: AgentApp, access: Any, **extra: Any) -> dict[str, Any]:
    runs = list(evaluation_history.run_list(app).defer(None)[:HISTORY_SHOWN])
    return {
        "app": app,
        "access": access,
        "runs": runs,
        "chart": pass_rate_svg(runs),
        "strips": evaluation_history.golden_strips(runs),
        "active": any(r.status in JOB_ACTIVE for r in runs),
        "models": live_models.model_names(),
        "versions": list(versions.version_list(app)),
        "max_repeat": evaluation.max_repeat(),
        "errors": {},
        "typed": {"repeat": 1, "threshold": 100, "models": [], "versions": [""]},
        **extra,
    }


@login_required
@require_GET
def app_evaluations(request: HttpRequest, app_id: int) -> HttpResponse:
    app, access = selectors.app_for_user(request.user, app_id)
    context = _runs_context(app, access)
    if request.htmx:
        return render(request, f"{PAGE}#runs-panel", context)
    return render(request, PAGE, context)


def _typed(request: HttpRequest) -> dict[str, Any]:
    return {
        "models": [m for m in request.POST.getlist("models") if m],
        "versions": request.POST.getlist("versions") or [""],
        "repeat": request.POST.get("repeat", "1"),
        "threshold": request.POST.get("threshold", "100"),
    }


def _form_values(typed: dict[str, Any]) -> tuple[int, float, dict[str, list[str]]]:
    """The form's repeat and threshold (a fraction) read as the form asks for them (a whole
    number, a percentage), and its refusals, each quoting what was typed; both at once."""
    errors: dict[str, list[str]] = {}
    top = evaluation.max_repeat()
    text = str(typed["repeat"]).strip()
    repeat = int(text) if text.isdigit() else 0
    if not 1 <= repeat <= top:
        errors["repeat"] = [
            localize(
                Message(
                    "Repeat: a whole number from 1 to %(top)s, not “%(value)s”.",
                    top=top,
                    value=text,
                )
            )
        ]
    text = str(typed["threshold"]).strip()
    try:
        percent = float(text.replace(",", "."))
    except ValueError:
        percent = -1.0
    if not 0 <= percent <= 100:  # NaN too
        errors["threshold"] = [
            localize(
                Message("Pass threshold: a percentage from 0 to 100, not “%(value)s”.", value=text)
            )
        ]
    return repeat, percent / 100, errors


@login_required
@require_POST
def evaluation_start(request: HttpRequest, app_id: int) -> HttpResponse:
    """Start an experiment: Run all across the chosen models and versions, repeated."""
    app, access = selectors.app_for_user(request.user, app_id, edit=True)
    typed = _typed(request)
    repeat, threshold, errors = _form_values(typed)
    job = None
    try:
        if not errors:
            job = evaluation.run_all_submit(
                app=app,
                actor=request.user,
                models=typed["models"],
                versions=[v or "current" for v in typed["versions"]],
                repeat=repeat,
                threshold=threshold,
            )
    except LiveNotAllowed as exc:
        errors = {"models": [exc.localized()]}
    except ServiceError as exc:
        errors = exc.field_errors()
    except jobs.JobLimitError as exc:
        errors = {"__all__": [exc.localized()]}
    if errors:
        context = _runs_context(
            app, access, errors=errors, typed=typed, general_errors=errors.get("__all__", [])
        )
        return render(request, PAGE, context, status=400)
    assert job is not None  # submitted: no error
    run, _created = EvaluationRun.objects.get_or_create(
        job=job, defaults=evaluation.run_fields(job)
    )
    return redirect("evaluation-run", app.pk, run.pk)


def _run(app: AgentApp, run_id: int) -> EvaluationRun:
    try:
        return evaluation_history.run_for_app(app, run_id)
    except EvaluationRun.DoesNotExist:
        raise Http404(_("No such evaluation run for this app.")) from None


def _version_label(column: dict[str, Any]) -> str:
    """A column's version as the reader names it: `v3` (a number), `prod` (a label, even
    one starting with a digit: `2fa-fix`), `working copy`."""
    version = str(column.get("version") or "")
    if not version:
        return _("working copy")
    return f"v{version}" if version.isdigit() else version


def _column_label(column: dict[str, Any]) -> str:
    """A column as the reader names it: `gpt-4o · v3`, `scripted · working copy` (its key,
    `offline@current`, is the data's)."""
    return f"{column.get('model') or _('scripted')} · {_version_label(column)}"


def _not_judged(rows: list[dict[str, Any]], key: str) -> int:
    """A column's goldens no repetition judged (each needed a model, stopped or was
    cancelled): the totals count them apart, not as passed or failed."""
    return sum(1 for row in rows if (row["cells"].get(key) or {"judged": 1})["judged"] == 0)


@login_required
@require_GET
def evaluation_run(request: HttpRequest, app_id: int, evaluation_id: int) -> HttpResponse:
    """One run: its matrix (goldens x columns), the totals, and a comparison of two
    columns (`a`, `b`)."""
    app, access = selectors.app_for_user(request.user, app_id)
    run = _run(app, evaluation_id)
    matrix = localized_data(run.matrix or {})  # the failures in the reader's language
    columns = [
        {**c, "label": _column_label(c), "version_label": _version_label(c)}
        for c in matrix.get("columns") or []
    ]
    keys = [c["key"] for c in columns]
    labels = {c["key"]: c["label"] for c in columns}
    rows = matrix.get("rows", [])
    a = request.GET.get("a") or (keys[0] if keys else "")
    b = request.GET.get("b") or (keys[1] if len(keys) > 1 else "")
    changed, compare_error = [], ""
    if a and b and a != b:
        try:
            changed = evaluation_matrix.compare(matrix, a, b)
        except ServiceError as exc:
            compare_error = exc.localized()
    job = run.job
    stored_totals = matrix.get("totals") or {}
    context = {
        "app": app,
        "access": access,
        "run": run,
        "job": job,
        "active": run.status in JOB_ACTIVE,
        "can_cancel": job is not None and job.owner_id == request.user.pk,
        "progress": (job.progress_done, job.progress_total) if job else (0, 0),
        "columns": columns,
        "rows": [{**row, "line": [row["cells"].get(k) for k in keys]} for row in rows],
        "totals": [
            {**stored_totals[k], "not_judged": _not_judged(rows, k)} if k in stored_totals else None
            for k in keys
        ],
        "partial_threshold": run.threshold < 1,
        "a": a,
        "b": b,
        "a_label": labels.get(a, a),
        "b_label": labels.get(b, b),
        "changed": changed,
        "compare_error": compare_error,
    }
    if request.htmx:
        return render(request, f"{RUN_PAGE}#run-panel", context)
    return render(request, RUN_PAGE, context)


@login_required
@require_POST
def evaluation_run_cancel(request: HttpRequest, app_id: int, evaluation_id: int) -> HttpResponse:
    """Cancel a run that is going (its finished pieces are kept), then show it. A run is
    its submitter's to cancel, as its job is (as Run all's Cancel and the API's: whoever
    started it may stop it, whatever their role now); one that has ended is left as it is."""
    app, _access = selectors.app_for_user(request.user, app_id)
    run = _run(app, evaluation_id)
    if run.job_id is not None and run.status in JOB_ACTIVE:
        try:
            job = jobs.job_for_user(request.user, run.job_id)
        except Job.DoesNotExist:
            raise Http404(_("Only who started this run can cancel it.")) from None
        jobs.job_cancel(job=job)
        evaluation_history.settle(app)
    return redirect("evaluation-run", app.pk, run.pk)


@login_required
@require_GET
def evaluation_run_export(request: HttpRequest, app_id: int, evaluation_id: int) -> HttpResponse:
    """The run's matrix as CSV (``?format=csv``, the default) or JSON."""
    app, _access = selectors.app_for_user(request.user, app_id)
    run = _run(app, evaluation_id)
    if request.GET.get("format") == "json":
        # As `GET /api/apps/{id}/evaluation-runs/{run}` answers: its dates, the reader's words.
        data = localized_data(evaluation_history.history_data(run))
        body = json.dumps(data, cls=JSONEncoder, indent=2, ensure_ascii=False)
        response = HttpResponse(body, content_type="application/json")
        name = f"evaluation-run-{run.pk}.json"
    else:
        response = HttpResponse(
            evaluation_matrix.matrix_csv(run.matrix), content_type="text/csv; charset=utf-8"
        )
        name = f"evaluation-run-{run.pk}.csv"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
