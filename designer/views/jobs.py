"""The designer's jobs: Run all (submit, the progress fragment, cancel) and Run live /
Replay (the polling fragment, then the run as the job stored it; cancel).

"Run all" answers at once with the job's progress fragment; while the job is queued or
running the fragment asks for itself again every half second (htmx polling; docs/operations/jobs.md,
why polling rather than server-sent events), so the bar moves, the results fill
in as scenarios finish, and the Cancel button stops the job. The work is a worker's
(`agents.services.jobs`, kind ``evaluate_app``); no request waits for it.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from agents import selectors
from agents.core.diagnostics import Message
from agents.models import JOB_ACTIVE, AgentApp, Job, JobItem, JobStatus, LiveRun
from agents.services import evaluation, jobs, live_jobs, live_models
from agents.services.common import ServiceError, error
from designer.views import conversation
from designer.views.common import loaded_app
from designer.views.page import designer_context
from designer.views.run_all import POLL_MS, run_all_context
from server.ratelimit import rate_limited

DESIGNER = "agents/app_designer.html"
FIRST_TEXT_POLL_MS = 100  # a live run's fragment, until the model's first text shows


def _job(request: HttpRequest, app: AgentApp, job_id: object) -> Job:
    try:
        job = jobs.job_for_user(request.user, job_id)
    except Job.DoesNotExist:
        raise Http404("No such job of yours.") from None
    if job.app_id != app.pk:
        raise Http404("No such job for this app.")
    return job


def render_run_all(request: HttpRequest, app: AgentApp, access: Any, job: Job) -> HttpResponse:
    context = {"app": app, "access": access, "run_all": run_all_context(app, job)}
    return render(request, f"{DESIGNER}#run-all", context)


@login_required
@require_POST
@rate_limited("simulate", "simulations")
def app_run_all(request: HttpRequest, app_id: int) -> HttpResponse:
    """Submit Run all (``evaluation.run_all_submit``: a newer one supersedes this user's
    unfinished one for the app); the progress fragment, or the designer page with it
    without JavaScript."""
    app, access = loaded_app(request, app_id)
    # The conversation panel's model picker: a model runs every scenario live (issue 21).
    # Its judge picker: the model that judges the rubrics of a live run ("": the run's own);
    # a scripted Run all judges nothing, so the picker's value goes only with a model.
    model = str(request.POST.get("model", "") or "")
    judge = str(request.POST.get("judge", "") or "") if model else ""
    try:
        job = evaluation.run_all_submit(
            app=app, actor=request.user, model=model or None, judge=judge or None
        )
    except live_models.LiveNotAllowed as exc:
        return _text(exc.localized(), 403)
    except ServiceError as exc:
        return _text(exc.localized(), 400)
    except jobs.JobLimitError as exc:
        return _text(exc.localized(), 429)
    if request.htmx:
        return render_run_all(request, app, access, job)
    context = designer_context(request, app, access)
    context["run_all"] = run_all_context(app, job)
    return render(request, DESIGNER, context)


def _text(message: str, status: int) -> HttpResponse:
    return HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")


@login_required
@require_GET
def run_all_status(request: HttpRequest, app_id: int, job_id: object) -> HttpResponse:
    """The Run-all fragment of one job (polled while it runs)."""
    app, access = selectors.app_for_user(request.user, app_id)
    return render_run_all(request, app, access, _job(request, app, job_id))


@login_required
@require_POST
def run_all_cancel(request: HttpRequest, app_id: int, job_id: object) -> HttpResponse:
    app, access = selectors.app_for_user(request.user, app_id)
    job = jobs.job_cancel(job=_job(request, app, job_id))
    return render_run_all(request, app, access, job)


# ---------------------------------------------------------------- Run live as a job (issue 21)


def _live_job(request: HttpRequest, app: AgentApp, agent_id: int, job_id: object) -> Job:
    job = _job(request, app, job_id)
    if job.kind != "live_run" or int(job.params.get("agent", 0)) != agent_id:
        raise Http404("No such live run of this agent.")
    return job


def live_job_context(job: Job) -> dict[str, Any]:
    """What the polling live fragment shows: the model's text so far, its calls with their
    tokens and cost, the totals."""
    # A turn's user words (``turn:N``, stored as its first call begins) before its calls.
    items = JobItem.objects.filter(
        Q(key__startswith="call:") | Q(key__startswith="turn:"), job=job
    ).order_by("position", "-key")
    lines: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for item in items:
        if item.key.startswith("turn:"):
            lines.append({"user": item.data.get("user", "")})
        else:
            calls.append(item.data)
            lines.append({"call": item.data, "number": len(calls)})
    model = str(job.params.get("model") or "")
    if not model and job.params.get("replay"):
        recorded = LiveRun.objects.filter(pk=job.params["replay"], app_id=job.app_id).first()
        model = recorded.model_name if recorded is not None else ""
    return {
        "job": job,
        "text": job.current,
        "calls": calls,
        "lines": lines,
        "tokens_in": sum(c.get("tokens_in", 0) for c in calls),
        "tokens_out": sum(c.get("tokens_out", 0) for c in calls),
        "cost": sum(float(c.get("cost") or 0) for c in calls),
        "priced": conversation.model_priced(model),
        "replay": bool(job.params.get("replay")),
        # Until the model's first text (or call) shows, the fragment asks more often: the
        # first streamed token is what the designer waits to see.
        "poll_ms": POLL_MS if job.current or calls else FIRST_TEXT_POLL_MS,
    }


def render_live_job(
    request: HttpRequest, app: AgentApp, access: Any, agent: Any, job: Job
) -> HttpResponse:
    """The live fragment while the job runs; the conversation panel with the run once done,
    drawn from what the job stored (``live_jobs.live_job_outcome``: nothing runs again)."""
    context: dict[str, Any] = {"app": app, "access": access, "agent": agent}
    if job.status in JOB_ACTIVE:
        context["live_job"] = live_job_context(job)
        return render(request, f"{DESIGNER}#live-job", context)
    params = {"scenario": str(job.params["scenario"]), "model": job.params.get("model") or ""}
    if job.params.get("replay"):
        params["replay"] = str(job.params["replay"])
    # A cancelled run keeps its result (its calls so far, recorded as cancelled).
    outcome = live_jobs.live_job_outcome(job)
    panel = conversation.build_conversation(app, agent, params, outcome=outcome)
    if outcome is None or job.status != JobStatus.SUCCEEDED:
        why = Message("Cancelled.") if job.status == JobStatus.CANCELLED else job.error_message
        stopped = Message("The live run stopped: %(why)s", why=why)
        panel.diagnostics.insert(0, error("live", stopped, "SC482"))
    context["conversation"] = panel
    return render(request, f"{DESIGNER}#conversation-panel", context)


@login_required
@require_GET
def live_job_status(
    request: HttpRequest, app_id: int, agent_id: int, live_job_id: object
) -> HttpResponse:
    app, agent, access = selectors.agent_for_user(
        request.user, app_id, agent_id, with_scenarios=True
    )
    return render_live_job(
        request, app, access, agent, _live_job(request, app, agent_id, live_job_id)
    )


@login_required
@require_POST
def live_job_cancel(
    request: HttpRequest, app_id: int, agent_id: int, live_job_id: object
) -> HttpResponse:
    app, agent, access = selectors.agent_for_user(
        request.user, app_id, agent_id, with_scenarios=True
    )
    job = jobs.job_cancel(job=_live_job(request, app, agent_id, live_job_id))
    return render_live_job(request, app, access, agent, job)
