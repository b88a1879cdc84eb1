"""Run all as a job on the designer page: submit, the progress fragment, cancel.

"Run all" answers at once with the job's progress fragment; while the job is queued or
running the fragment asks for itself again every half second (htmx polling; README,
"Jobs": why polling rather than server-sent events), so the bar moves, the results fill
in as scenarios finish, and the Cancel button stops the job. The work is a worker's
(`agents.services.jobs`, kind ``evaluate_app``); no request waits for it.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from agents import selectors
from agents.core.diagnostics import Message
from agents.i18n import localize
from agents.models import JOB_ACTIVE, AgentApp, Job, JobItem, JobStatus, LiveRun
from agents.ratelimit import rate_limited
from agents.services import jobs, live_models
from agents.services.common import ServiceError, error
from designer.views.common import loaded_app
from designer.views.page import designer_context
from designer.views.run_all import POLL_MS, run_all_context

DESIGNER = "agents/app_designer.html"


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
    """Submit Run all (a newer one supersedes this user's unfinished one for the app); the
    progress fragment, or the designer page with it without JavaScript."""
    app, access = loaded_app(request, app_id)
    for old in Job.objects.filter(
        owner=request.user, app=app, kind="evaluate_app", status__in=JOB_ACTIVE
    ):
        jobs.job_cancel(job=old)
    # The conversation panel's model picker: a model runs every scenario live (issue 21).
    # Its judge picker: the model that judges the rubrics of a live run ("": the run's own);
    # a scripted Run all judges nothing, so the picker's value goes only with a model.
    model = str(request.POST.get("model", "") or "")
    judge = str(request.POST.get("judge", "") or "") if model else ""
    params: dict[str, str] = {}
    if model and not access.can_edit:  # a live Run all spends the operator's model key
        return HttpResponse(
            live_models.LIVE_NEEDS_EDIT, status=403, content_type="text/plain; charset=utf-8"
        )
    if model:
        try:
            live_models.resolve_model(app, model)
            params["model"] = model
            if live_models.checked_judge(app, model, judge):
                params["judge"] = judge
        except ServiceError as exc:
            message = " ".join(localize(d.message) for d in exc.diagnostics)
            return HttpResponse(message, status=400, content_type="text/plain; charset=utf-8")
    try:
        job = jobs.job_submit(kind="evaluate_app", owner=request.user, app=app, params=params)
    except jobs.JobLimitError as exc:
        return HttpResponse(exc.localized(), status=429, content_type="text/plain; charset=utf-8")
    if request.htmx:
        return render_run_all(request, app, access, job)
    context = designer_context(request, app, access)
    context["run_all"] = run_all_context(app, job)
    return render(request, DESIGNER, context)


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
    from designer.simulation import model_priced

    calls = [item.data for item in JobItem.objects.filter(job=job).order_by("position")]
    model = str(job.params.get("model") or "")
    if not model and job.params.get("replay"):
        recorded = LiveRun.objects.filter(pk=job.params["replay"], app_id=job.app_id).first()
        model = recorded.model_name if recorded is not None else ""
    return {
        "job": job,
        "text": job.current,
        "calls": calls,
        "tokens_in": sum(c.get("tokens_in", 0) for c in calls),
        "tokens_out": sum(c.get("tokens_out", 0) for c in calls),
        "cost": sum(float(c.get("cost") or 0) for c in calls),
        "priced": model_priced(model),
        "replay": bool(job.params.get("replay")),
        "poll_ms": POLL_MS,
    }


def render_live_job(
    request: HttpRequest, app: AgentApp, access: Any, agent: Any, job: Job
) -> HttpResponse:
    """The live fragment while the job runs; the conversation panel with the run once done."""
    from designer import simulation

    context: dict[str, Any] = {"app": app, "access": access, "agent": agent}
    if job.status in JOB_ACTIVE:
        context["live_job"] = live_job_context(job)
        return render(request, f"{DESIGNER}#live-job", context)
    params = {"scenario": str(job.params["scenario"]), "model": job.params.get("model") or ""}
    if job.params.get("replay"):
        params["replay"] = str(job.params["replay"])
    outcome = None
    finished_run = job.status in (JobStatus.SUCCEEDED, JobStatus.CANCELLED)
    if finished_run and isinstance(job.result, dict) and "calls" in job.result:
        # A cancelled run keeps its result (its calls so far, recorded as cancelled).
        outcome = simulation.job_outcome(job)
    conversation = simulation.build_conversation(app, agent, params, request.user, outcome=outcome)
    if outcome is None or job.status == JobStatus.CANCELLED:
        why = Message("Cancelled.") if job.status == JobStatus.CANCELLED else job.error
        stopped = Message("The live run stopped: %(why)s", why=why)
        conversation.diagnostics.insert(0, error("live", stopped, "SC482"))
    context["conversation"] = conversation
    return render(request, f"{DESIGNER}#conversation-panel", context)


def submit_live(
    request: HttpRequest, app: AgentApp, access: Any, agent: Any, params: Any
) -> HttpResponse:
    """Run live / Replay / Re-record: submit a ``live_run`` job (a newer one supersedes this
    user's unfinished one for the agent) and answer at once with the polling fragment."""
    from designer import simulation

    scenarios = list(agent.scenarios.all())
    wanted = str(params.get("scenario", "") or "")
    scenario = next((s for s in scenarios if str(s.pk) == wanted), None) or next(
        iter(scenarios), None
    )
    if scenario is None:
        return HttpResponse(_("Add a scenario first."), status=400)
    job_params = simulation.live_job_params(agent, scenario.pk, params)
    for old in Job.objects.filter(
        owner=request.user, app=app, kind="live_run", status__in=JOB_ACTIVE
    ):
        if int(old.params.get("agent", 0)) == agent.pk:
            jobs.job_cancel(job=old)
    try:
        job = jobs.job_submit(kind="live_run", owner=request.user, app=app, params=job_params)
    except jobs.JobLimitError as exc:
        return HttpResponse(exc.localized(), status=429, content_type="text/plain; charset=utf-8")
    return render_live_job(request, app, access, agent, job)


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
