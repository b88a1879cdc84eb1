"""Start a live run or a replay (a job), and read a finished one: the one use case the
designer, the API and the management commands call.

``live_run_submit`` refuses before it writes anything, in this order:

1. **rights**: a live run spends the operator's model key, a replay runs the app's code on
   its behalf: the actor needs edit rights on the app (`LiveNotAllowed`; the system, a
   management command, acts as None);
2. **the model** (``resolve_model``: ``ModelNotConfigured``), or for a replay **the
   recording** (a live run of this app);
3. **the scenario**: one of the agent's, by its id; an unknown or missing id is refused,
   never taken to mean the first scenario (a replay: the recording's scenario);
4. **the instructions**: text equal to the saved instructions (line ends aside) counts as
   none, so the run is recorded (`normalised_instructions`);
5. then, in one transaction: the actor's unfinished live run of the same agent is
   cancelled (superseded) and the ``live_run`` job submitted (over
   ``JOBS_MAX_ACTIVE_PER_USER``: ``JobLimitError``, and nothing is cancelled).

``live_job_outcome(job)`` is what the page and the API show of a finished job: read from
what the job stored (the timeline, the evaluation, the calls), never run again.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from agents.core.diagnostics import Message
from agents.core.run_data import evaluation_from_data, result_from_data
from agents.core.spec import ScenarioSpec
from agents.i18n import localized_data
from agents.models import JOB_ACTIVE, Agent, AgentApp, Job, JobItem, LiveRun
from agents.services import jobs
from agents.services.common import Actor, ServiceError, error
from agents.services.live_models import live_rights_check, resolve_model
from agents.services.live_replays import recording_of
from agents.services.live_runs import LiveOutcome

__all__ = ["RUN_ITEM", "live_job_outcome", "live_run_submit", "normalised_instructions"]

RUN_ITEM = "run"  # the live_run job's item that holds the run as the page draws it


def normalised_instructions(agent: Agent, instructions: str | None) -> str | None:
    """Unsaved `instructions` for a run of `agent`, or None when they are the saved text
    (line ends aside): a run of the saved instructions is recorded, a try-out is not."""
    if instructions is not None and instructions.replace("\r\n", "\n") == agent.instructions:
        return None
    return instructions


def _scenario_of(agent: Agent, scenario_id: Any) -> Any:
    text = str(scenario_id if scenario_id is not None else "").strip()
    scenario = next((s for s in agent.scenarios.all() if str(s.pk) == text), None)
    if scenario is None:
        if not text:
            message = Message("Pick the scenario to run.")
        else:
            message = Message(
                "The agent %(agent)s has no scenario %(id)s: pick one of its scenarios.",
                agent=agent.display_name,
                id=text,
            )
        raise ServiceError([error("scenario", message)])
    return scenario


def live_run_submit(
    *,
    app: AgentApp,
    agent: Agent,
    actor: Actor,
    scenario_id: Any = None,
    model: str | None = None,
    replay: LiveRun | int | None = None,
    instructions: str | None = None,
    use_mocks: bool | None = None,
    enqueue: bool = True,
) -> Job:
    """Start a live run of one scenario of `agent` (with `model`, or the app's default), or
    a replay of the recorded run `replay`, as a ``live_run`` job (see the module docstring).
    For a replay `scenario_id` may be left out (the recording's scenario). `enqueue` False:
    the caller runs the job itself (``manage.py evaluate``: ``jobs.job_run``)."""
    live_rights_check(actor=actor, app=app)
    recorded: LiveRun | None = None
    if replay is not None:
        recorded = (
            replay
            if isinstance(replay, LiveRun)
            else LiveRun.objects.filter(pk=replay, app=app).first()
        )
        if recorded is None or recorded.app_id != app.pk:
            raise ServiceError(
                [error("replay", Message("That live run no longer exists."), "SC482")]
            )
        recorded = recording_of(recorded)
        if scenario_id in (None, "") and recorded.scenario_id is not None:
            scenario_id = recorded.scenario_id
    else:
        model = resolve_model(app, model or None, agent_cx=agent.cx)[0].name
    scenario = _scenario_of(agent, scenario_id)
    if recorded is not None and recorded.scenario_id not in (None, scenario.pk):
        raise ServiceError(
            [
                error(
                    "replay",
                    Message(
                        "That live run is not a run of the scenario %(name)s.", name=scenario.name
                    ),
                    "SC482",
                )
            ]
        )
    params = {
        "agent": agent.pk,
        "scenario": scenario.pk,
        "model": "" if recorded is not None else model,
        "replay": recorded.pk if recorded is not None else None,
        "instructions": normalised_instructions(agent, instructions),
        "use_mocks": use_mocks,
    }
    with transaction.atomic():
        user = actor if actor is not None and actor.pk else None
        if user is not None:
            for old in Job.objects.filter(
                owner=user, app=app, kind="live_run", status__in=JOB_ACTIVE
            ):
                if int(old.params.get("agent", 0)) == agent.pk:
                    jobs.job_cancel(job=old)
        return jobs.job_submit(
            kind="live_run", owner=actor, app=app, params=params, enqueue=enqueue
        )


def live_job_outcome(job: Job) -> LiveOutcome | None:
    """A finished ``live_run`` job's run as the job stored it (None when it stored none:
    it failed before the run ended, or it is not finished)."""
    result = job.result if isinstance(job.result, dict) else {}
    stored = JobItem.objects.filter(job=job, key=RUN_ITEM).values_list("data", flat=True).first()
    if job.status in JOB_ACTIVE or not stored or "calls" not in result:
        return None
    budget = {"token_budget": int(stored["token_budget"])} if stored.get("token_budget") else {}
    spec = ScenarioSpec(
        name=str(stored.get("scenario_name", "")),
        agent=str(stored.get("agent_name", "")),
        use_mocks=bool(stored.get("use_mocks")),
        **budget,
    )
    run_id = result.get("live_run")
    return LiveOutcome(
        run=LiveRun.objects.filter(pk=run_id).first() if run_id else None,
        spec=spec,
        result=result_from_data(stored["simulation"]),
        evaluation=evaluation_from_data(stored["evaluation"]),
        calls=result["calls"],
        drift=localized_data(result["drift"]),  # what changed, in the reader's language
        model=result["model"],
        error=result["error"],
    )
