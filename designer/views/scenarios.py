"""Scenarios and the simulated conversation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST
from django_htmx.http import reswap, retarget

from agents import selectors, services
from agents.core.diagnostics import Diagnostic, Message
from agents.i18n import localize
from agents.models import Agent, AgentApp, LiveRun, Scenario
from agents.services import jobs, live_goldens, live_jobs, live_models, live_pins
from agents.services.common import error
from designer.forms import ScenarioForm
from designer.views import conversation
from designer.views import jobs as job_views
from designer.views import preview as preview_builder
from designer.views.common import DESIGNER, agent_of, inline_form, loaded_app, stale_edit
from server.ratelimit import rate_limited


def _conversation(
    request: HttpRequest,
    app: AgentApp,
    access: selectors.Access,
    agent: Agent,
    params: Any,
    *,
    keep_editor: bool = True,
    editor: dict[str, Any] | None = None,
    refusal: list[Diagnostic] | None = None,
) -> HttpResponse:
    """The conversation fragment. An open scenario editor inside it survives a
    re-simulation (`hx-preserve`: the designer's unsaved edits) unless the scenario shown
    changed or the editor's own save asked for the fresh panel (`keep_editor=False`).
    `refusal`: why a live run was not started, shown first."""
    shown = str(params.get("mocks_for", "") or "")
    picked = str(params.get("scenario", "") or "")
    panel = conversation.build_conversation(app, agent, params)
    panel.diagnostics[:0] = refusal or []
    context = {
        "app": app,
        "access": access,
        "agent": agent,
        "conversation": panel,
        "keep_editor": keep_editor and (not picked or picked == shown),
        "editor": editor,
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
        params = preview_builder.with_edit_applied(agent, params)
    except preview_builder.StaleEdit:
        return stale_edit()
    replay = str(params.get("replay", "") or "")
    if request.method == "POST" and params.get("make_default"):
        # The picker's model (or Scripted: none) becomes the app's default model: the one
        # the API's, the command's and the pipeline's live runs use when they name none.
        if not access.can_edit:
            return HttpResponse(_("You may view this app but not change it."), status=403)
        try:
            live_models.app_model_set(app=app, model=str(params.get("model", "") or ""))
        except services.ServiceError as exc:
            return HttpResponse(exc.localized(), status=400)
    elif request.method == "POST" and (
        replay or params.get("rerecord") or (params.get("live") and params.get("model"))
    ):
        # Run live, Replay, Re-record live (with the recording's model, whatever the picker
        # says): a job; the answer is its polling fragment. A GET never starts one.
        rerecord = str(params.get("rerecord", "") or "")
        try:
            job = live_jobs.live_run_submit(
                app=app,
                agent=agent,
                actor=request.user,
                scenario_id=params.get("scenario"),
                model=rerecord or str(params.get("model", "") or ""),
                replay=replay or None,
                instructions=params.get("instructions"),
                use_mocks=conversation.mocks_choice(params),
            )
        except live_models.LiveNotAllowed as exc:
            return HttpResponse(exc.localized(), status=403)
        except jobs.JobLimitError as exc:
            return HttpResponse(exc.localized(), status=429)
        except services.ServiceError as exc:
            refusal = list(exc.diagnostics)
            if rerecord and isinstance(exc, live_models.ModelNotConfigured):
                refusal = [
                    error(
                        "model",
                        Message(
                            "The recording's model %(model)s is no longer configured: pick "
                            "a model and press Run live to record the run again.",
                            model=rerecord,
                        ),
                        "SC482",
                    )
                ]
            return _conversation(request, app, access, agent, params, refusal=refusal)
        return job_views.render_live_job(request, app, access, agent, job)
    return _conversation(request, app, access, agent, params)


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
    base = (
        _("%(name)s (golden from live run %(run)s)") % {"name": run.scenario_name, "run": run.pk}
    )[:100]
    try:
        scenario = live_goldens.live_run_save_golden(run=run, actor=request.user, name=base)
    except services.ServiceError as exc:
        return HttpResponse("; ".join(localize(d.message) for d in exc.diagnostics), status=400)
    app, agent, access = selectors.agent_for_user(
        request.user, app_id, agent_id, with_scenarios=True
    )
    response = _conversation(request, app, access, agent, {"scenario": str(scenario.pk)})
    response["HX-Trigger"] = "scenarios-changed"
    return response


@login_required
@require_POST
def scenario_pin(
    request: HttpRequest, app_id: int, agent_id: int, scenario_id: int
) -> HttpResponse:
    """Pin the live run `pinned_run` (empty: unpin) as the recording the scenario's replays
    use (``live_pins.scenario_pin_run``); the conversation shows the scenario again."""
    app, agent, access = selectors.agent_for_user(
        request.user, app_id, agent_id, with_scenarios=True
    )
    if not access.can_edit:
        return HttpResponse(_("You may view this app but not change it."), status=403)
    scenario = agent.scenarios.filter(pk=scenario_id).first()
    if scenario is None:
        return HttpResponse(_("No such scenario."), status=404)
    wanted = str(request.POST.get("pinned_run", "") or "").strip()
    params = {"scenario": str(scenario.pk)}
    try:
        live_pins.scenario_pin_run(scenario=scenario, run=wanted or None, actor=request.user)
    except services.ServiceError as exc:
        return _conversation(request, app, access, agent, params, refusal=list(exc.diagnostics))
    app, agent, access = selectors.agent_for_user(
        request.user, app_id, agent_id, with_scenarios=True
    )
    return _conversation(request, app, access, agent, params)


@login_required
@require_http_methods(["GET", "POST"])
def scenario_new(request: HttpRequest, app_id: int, agent_id: int) -> HttpResponse:
    app, _access = loaded_app(request, app_id, edit=True)
    agent = agent_of(app, agent_id)
    if agent is None:
        return HttpResponse(_("No such agent."), status=404)

    def save(data: dict[str, Any]) -> HttpResponse:
        fields = {k: v for k, v in data.items() if k != "version"}
        scenario = services.scenario_save(actor=request.user, agent=agent, **fields)
        return _after_scenario_save(request, app, agent, scenario.pk, scenario.warnings)

    number = agent.scenarios.count() + 1
    initial = {
        "name": _("Scenario %(number)s") % {"number": number},
        "steps_script": "user: " + _("Hello!") + "\n",
    }
    return inline_form(
        request,
        fragment="scenario-form",
        context={"app": app, "agent": agent, "scenario": None},
        blank=lambda: ScenarioForm(app=app, initial=initial),
        bound=lambda data: ScenarioForm(data, app=app),
        save=save,
    )


@login_required
@require_http_methods(["GET", "POST"])
def scenario_edit(
    request: HttpRequest, app_id: int, agent_id: int, scenario_id: int
) -> HttpResponse:
    app, _access = loaded_app(request, app_id, edit=True)
    agent = agent_of(app, agent_id)
    scenario = (
        next((s for s in agent.scenarios.all() if s.pk == scenario_id), None) if agent else None
    )
    if scenario is None:
        return HttpResponse(_("No such scenario."), status=404)

    def save(data: dict[str, Any]) -> HttpResponse:
        fields = {k: v for k, v in data.items() if k != "version"}
        saved = services.scenario_save(
            actor=request.user,
            agent=agent,
            scenario=scenario,
            expected_version=data["version"],
            **fields,
        )
        return _after_scenario_save(request, app, agent, scenario.pk, saved.warnings)

    return inline_form(
        request,
        fragment="scenario-form",
        context={"app": app, "agent": agent, "scenario": scenario},
        blank=lambda: ScenarioForm(instance=scenario, app=app),
        bound=lambda data: ScenarioForm(data, instance=scenario, app=app),
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
    app, access = loaded_app(request, app_id)
    agent = agent_of(app, agent_id)
    if not request.htmx:
        return redirect(f"{reverse('app-designer', args=[app.pk])}?agent={agent_id}")
    return _conversation(request, app, access, agent, {}, keep_editor=False)


def _after_scenario_save(
    request: HttpRequest,
    app: AgentApp,
    agent: Agent,
    scenario_id: int,
    warnings: Sequence[Diagnostic] = (),
) -> HttpResponse:
    """The fresh conversation panel; with `warnings` (SC012: a step names a tool no agent
    has) the editor stays open on the saved scenario, each warning under its field."""
    if not request.htmx:
        return redirect(
            f"{reverse('app-designer', args=[app.pk])}?agent={agent.pk}&scenario={scenario_id}"
        )
    app, access = loaded_app(request, app.pk)
    agent = agent_of(app, agent.pk)
    editor = None
    if warnings:
        saved = Scenario.objects.get(pk=scenario_id, agent=agent)
        by_field: dict[str, list[str]] = {}
        for d in warnings:
            by_field.setdefault(d.field or "", []).append(localize(d.message))
        editor = {
            "scenario": saved,
            "form": ScenarioForm(instance=saved, app=app),
            "field_warnings": by_field,
        }
    response = _conversation(
        request,
        app,
        access,
        agent,
        {"scenario": str(scenario_id)},
        keep_editor=False,
        editor=editor,
    )
    retarget(response, "#conversation-panel")
    reswap(response, "outerHTML")
    return response
