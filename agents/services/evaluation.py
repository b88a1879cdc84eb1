"""Evaluate scenarios (golden expectations): one scenario, or every scenario of an app.

The one use case behind the designer's badges and "Run all", the API's evaluate endpoints
and ``manage.py evaluate``: simulate the scenario (``simulate_scenario``: the real sandbox,
bounded), check its expectations (``agents.core.evaluate``) and store the outcome as the
scenario's last result (when, who, passed/failed).

Runs are memoised in Django's cache by what decides their outcome: the app's revision
(every write bumps it), the scenario and its version, the unsaved instructions and the
mocks choice. Re-running while nothing changed costs no simulation; after an edit only the
changed inputs run again, and the sandbox memoises each code call by its input too.
Storing a result is not a change to the app: it bumps no revision and leaves no audit
record (the result row names who ran it and when).
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from agents import selectors
from agents.core import rules
from agents.core.diagnostics import Message
from agents.core.evaluate import ScenarioEvaluation, allows_extra_calls, evaluate
from agents.core.explain import explain_failures, listed_calls
from agents.core.simulate import SimulationResult
from agents.core.spec import ScenarioSpec
from agents.i18n import with_i18n
from agents.models import (
    JOB_ACTIVE,
    Agent,
    AgentApp,
    EvaluationRun,
    Job,
    Scenario,
    ScenarioResult,
)
from agents.services import jobs
from agents.services.common import Actor, ServiceError, error, on_field
from agents.services.live_models import checked_judge, live_rights_check, resolve_model
from agents.services.sandbox_door import (
    SLOTS,
    BoundedRunner,
    batch_runner,
    sibling_runner,
    simulate_bounded,
    simulate_scenario,
    with_instructions,
)

MEMO_SECONDS = 3600
# A run cut by a bound (a cap, a missing protection) is not what the scenario does: not kept.
_NOT_MEMOISED = {"SC470", "SC471", "SC472"}


@dataclass(frozen=True)
class ScenarioRun:
    scenario: Scenario
    agent: Agent
    spec: ScenarioSpec
    result: SimulationResult
    evaluation: ScenarioEvaluation
    memoised: bool = False
    live: Any = None  # the LiveOutcome of a live run (agents.services.live_runs)


def _memo_key(
    app: AgentApp, scenario: Scenario, instructions: str | None, use_mocks: bool | None
) -> str:
    text = hashlib.sha256((instructions or "").encode("utf-8")).hexdigest()[:16]
    parts = (
        app.pk,
        app.revision,
        app.created_at.timestamp(),
        scenario.pk,
        scenario.version,
        "-" if instructions is None else text,
        use_mocks,
    )
    return "statecraft:evaluation:" + ":".join(str(p) for p in parts)


def scenario_run(
    *,
    app: AgentApp,
    agent: Agent,
    scenario: Scenario,
    instructions: str | None = None,
    use_mocks: bool | None = None,
    runner: BoundedRunner | None = None,
    model: str | None = None,
    actor: Actor = None,
    should_stop: Callable[[], str] | None = None,
) -> ScenarioRun:
    """Simulate `scenario` and check its expectations (memoised; nothing is stored).
    `runner` is a batch's bounded sandbox (`sandbox_door.batch_runner`). With `model`, the
    scenario runs live against it for `actor` (``agents.services.live_runs.run_live``:
    recorded as a live run, never memoised)."""
    if model:
        from agents.services.live_runs import run_live

        outcome = run_live(
            app=app,
            agent=agent,
            scenario=scenario,
            model=model,
            actor=actor,
            instructions=instructions,
            use_mocks=use_mocks,
            runner=runner,
            should_stop=should_stop,
        )
        return ScenarioRun(
            scenario, agent, outcome.spec, outcome.result, outcome.evaluation, live=outcome
        )
    key = _memo_key(app, scenario, instructions, use_mocks)
    hit = cache.get(key)
    if hit is not None:
        spec, result, evaluation = hit
        return ScenarioRun(scenario, agent, spec, result, evaluation, memoised=True)
    spec, result = simulate_scenario(
        app=app,
        agent=agent,
        scenario=scenario,
        instructions=instructions,
        use_mocks=use_mocks,
        runner=runner,
    )
    # The app-level carry (app.json) says whether goldens list only some calls.
    allow = allows_extra_calls(selectors.app_cx_settings(app), spec)
    app_spec = selectors.app_spec(app)
    evaluation = evaluate(spec, result, app_spec, extra_calls_allowed=allow)
    if allow and evaluation.failed:
        evaluation = _explain_failures(
            app, agent, app_spec, spec, result, evaluation, instructions, runner
        )
    if not any(d.code in _NOT_MEMOISED for d in result.diagnostics):
        cache.set(key, (spec, result, evaluation), timeout=MEMO_SECONDS)
    return ScenarioRun(scenario, agent, spec, result, evaluation)


def _explain_failures(
    app: AgentApp,
    agent: Agent,
    app_spec: Any,
    spec: ScenarioSpec,
    result: SimulationResult,
    evaluation: ScenarioEvaluation,
    instructions: str | None,
    runner: BoundedRunner | None,
) -> ScenarioEvaluation:
    """A golden that lists only some calls and failed offline: which failures a call it
    leaves out explains (``agents.core.explain.explain_failures``), trying the calls the
    app's goldens list, on the batch's sandbox or one of its own."""
    simulated = with_instructions(app_spec, agent.display_name, instructions)
    examples = _app_listed_calls(app)
    width = max(1, int(jobs.setting("EVALUATION_EXPLAIN_AT_ONCE")))

    def explain(on: BoundedRunner) -> ScenarioEvaluation:
        # Trials at once (`EVALUATION_EXPLAIN_AT_ONCE`): the first on `on`, each other on a
        # sibling runner in a thread of its own; started at the first batch of two.
        with contextlib.ExitStack() as stack:
            siblings: list[BoundedRunner] = []
            pool: list[ThreadPoolExecutor] = []

            def many(specs: list[ScenarioSpec]) -> list[SimulationResult]:
                if not pool:
                    pool.append(stack.enter_context(ThreadPoolExecutor(width - 1)))
                    siblings.extend(
                        stack.enter_context(sibling_runner(on)) for _ in range(width - 1)
                    )
                others = [
                    pool[0].submit(simulate_bounded, simulated, s, runner=r)
                    for s, r in zip(specs[1:], siblings, strict=False)
                ]
                first = simulate_bounded(simulated, specs[0], runner=on)
                return [first, *(f.result() for f in others)]

            return explain_failures(
                simulated,
                spec,
                result,
                evaluation,
                lambda s: simulate_bounded(simulated, s, runner=on),
                examples=examples,
                extra_calls_allowed=True,
                resimulate_many=many,
                trials_at_once=width,
            )

    if runner is not None:
        return explain(runner)
    with SLOTS.hold(), batch_runner() as own:
        return explain(own)


# The calls an app's goldens list (`listed_calls`), by what decides them: the app's
# revision (every write bumps it) and each scenario's version. A Run all asks once per
# golden it explains; building every scenario's spec each time cost more than the lookup.
_LISTED: dict[tuple[Any, ...], tuple[Any, ...]] = {}
_LISTED_MAX = 16
_LISTED_LOCK = threading.Lock()


def _app_listed_calls(app: AgentApp) -> tuple[Any, ...]:
    others = Scenario.objects.filter(agent__app=app).order_by("pk")
    key = (
        app.pk,
        app.revision,
        app.created_at.timestamp(),
        tuple(others.values_list("pk", "version")),
    )
    found = _LISTED.get(key)
    if found is None:
        found = listed_calls(
            s.to_spec(app_id=f"apps/{app.pk}") for s in others.select_related("agent")
        )
        with _LISTED_LOCK:  # `evaluate --jobs N` runs its jobs in threads
            while len(_LISTED) >= _LISTED_MAX:
                _LISTED.pop(next(iter(_LISTED)))
            _LISTED[key] = found
    return found


@transaction.atomic
def scenario_result_record(
    *, scenario: Scenario, evaluation: ScenarioEvaluation, app_revision: int, actor: Actor
) -> ScenarioResult:
    """Store `evaluation` as the scenario's last result."""
    result, _ = ScenarioResult.objects.update_or_create(
        scenario=scenario,
        defaults={
            "status": evaluation.status,
            "passed": evaluation.passed,
            "failed": evaluation.failed,
            "needs_model": evaluation.needs_model,
            "results": [asdict(r) for r in evaluation.results],
            "app_revision": app_revision,
            "ran_by": actor if actor is not None and actor.pk else None,
            "ran_by_name": actor.get_username() if actor is not None and actor.pk else "",
            "ran_at": timezone.now(),
        },
    )
    return result


def scenario_evaluate(
    *,
    app: AgentApp,
    agent: Agent,
    scenario: Scenario,
    actor: Actor,
    instructions: str | None = None,
    use_mocks: bool | None = None,
    model: str | None = None,
) -> ScenarioRun:
    """Run one scenario's expectations and store the outcome as its last result (unsaved
    `instructions` are a try-out: nothing is stored for them). With `model`, live."""
    run = scenario_run(
        app=app,
        agent=agent,
        scenario=scenario,
        instructions=instructions,
        use_mocks=use_mocks,
        model=model,
        actor=actor,
    )
    if instructions is None:
        scenario_result_record(
            scenario=scenario, evaluation=run.evaluation, app_revision=app.revision, actor=actor
        )
    return run


def app_scenarios(app: AgentApp) -> tuple[AgentApp, list[tuple[Agent, Scenario]]]:
    """The app loaded with everything, and its scenarios in run order (agents in order,
    scenarios by name)."""
    loaded = selectors.app_with_everything(app.pk).get()
    return loaded, [(each, s) for each in loaded.agents.all() for s in each.scenarios.all()]


def app_scenario_ids(app: AgentApp) -> list[int]:
    """The ids of `app_scenarios`'s scenarios, in its order, from one small query (no row of
    the app loaded: a Run all's plan needs only them)."""
    return list(
        Scenario.objects.filter(agent__app=app)
        .order_by("-agent__is_root", "agent__display_name", "agent__id", "name", "pk")
        .values_list("pk", flat=True)
    )


def app_evaluate(
    *,
    app: AgentApp,
    actor: Actor,
    record: bool = True,
    agent: Agent | None = None,
    instructions: str | None = None,
    model: str | None = None,
    runner: BoundedRunner | None = None,
) -> list[ScenarioRun]:
    """Run every scenario of the app (its agents in order, scenarios by name). With `agent`
    and `instructions`, that agent's unsaved instructions are used (and nothing stored).
    With `model`, every scenario runs live against that model (recorded as live runs).

    The designer and the API run this as a job (`agents.services.jobs`, kind
    ``evaluate_app``), which reports progress scenario by scenario."""
    if model:
        resolve_model(app, model)  # an unknown model fails before anything runs
    loaded, pairs = app_scenarios(app)
    runs: list[ScenarioRun] = []
    # One warm sandbox for the whole run (started at the first code call, if any): every
    # call still gets a fresh process; the caps count per scenario.
    with batch_runner() if runner is None else contextlib.nullcontext(runner) as bounded:
        for each, scenario in pairs:
            text = instructions if agent is not None and each.pk == agent.pk else None
            run = scenario_run(
                app=loaded,
                agent=each,
                scenario=scenario,
                instructions=text,
                runner=bounded,
                model=model,
                actor=actor,
            )
            if record and text is None:
                scenario_result_record(
                    scenario=scenario,
                    evaluation=run.evaluation,
                    app_revision=loaded.revision,
                    actor=actor,
                )
            runs.append(run)
    return runs


@dataclass(frozen=True)
class Summary:
    passed: int
    failed: int
    needs_model: int
    no_expectations: int
    stopped: int = 0  # a time limit stopped the run: not judged (neither passed nor failed)

    @property
    def ok(self) -> bool:
        return self.failed == 0


def summarise(runs: list[ScenarioRun]) -> Summary:
    return _summary([run.evaluation.status for run in runs])


def _summary(statuses: list[str]) -> Summary:
    return Summary(
        passed=statuses.count("passed"),
        failed=statuses.count("failed"),
        needs_model=statuses.count("needs_model"),
        no_expectations=statuses.count("none"),
        stopped=statuses.count("stopped"),
    )


def run_data(run: ScenarioRun) -> dict:
    """One scenario's outcome as JSON: what the API's evaluate returns per scenario."""
    evaluation = run.evaluation
    return {
        "scenario": run.scenario.pk,
        "name": run.scenario.name,
        "agent": run.agent.pk,
        "agent_name": run.agent.display_name,
        "status": evaluation.status,
        "passed": evaluation.passed,
        "failed": evaluation.failed,
        "needs_model": evaluation.needs_model,
        "stopped": evaluation.stopped,
        "results": [with_i18n(asdict(r), "message", "differences") for r in evaluation.results],
        "diagnostics": [with_i18n(d.to_dict(), "message") for d in run.result.diagnostics],
        **({"live": live_figures(run.live)} if run.live is not None else {}),
    }


def user_scenario_data(done: Any) -> dict:
    """A CX evaluation of the scenario kind run live (``live.UserScenarioOutcome``) as one
    outcome of an evaluate job: a simulated user's conversation, its expectations and the
    judge's verdicts with their reasons (results of kind ``rubric``)."""
    evaluation = done.evaluation
    outcome = done.outcome
    return {
        "scenario": None,
        "kind": "simulated_user",
        "name": done.name,
        "file": done.path,
        "agent": None,
        "agent_name": outcome.spec.agent,
        "status": evaluation.status,
        "passed": evaluation.passed,
        "failed": evaluation.failed,
        "needs_model": 0,
        "turns": done.turns,
        "ended_by": done.ended_by,
        "results": [with_i18n(asdict(r), "message", "differences") for r in evaluation.results],
        "diagnostics": [with_i18n(d.to_dict(), "message") for d in outcome.result.diagnostics],
        "live": live_figures(outcome),
    }


def live_figures(live: Any) -> dict:
    """A live run's figures (``live_runs.LiveOutcome``): model, calls, tokens, cost."""
    tokens_in, tokens_out = live.tokens
    return {
        "run": live.run.pk if live.run is not None else None,
        "model": live.model,
        "model_calls": len(live.calls),
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "cost": round(live.cost, 6),
        "error": live.error,
    }


def summary_data(scenarios: list[dict]) -> dict:
    """`ok` and the counts over scenario outcomes (`run_data` dicts)."""
    summary = _summary([s["status"] for s in scenarios])
    return {"ok": summary.ok, "summary": asdict(summary), "scenarios": scenarios}


def run_all_submit(
    *,
    app: AgentApp,
    actor: Actor,
    model: str | None = None,
    judge: str | None = None,
    scenarios: list[int] | None = None,
    user_scenarios: bool = True,
    enqueue: bool = True,
    models: list[str] | None = None,
    versions: list[str] | None = None,
    repeat: int = 1,
    threshold: float = 1.0,
) -> Job:
    """Run all: every scenario of the app as an ``evaluate_app`` job, offline, or live with
    `model` (and `judge`, the model that judges the rubrics of the CX evaluations of the
    scenario kind; None: the run's model). The one use case of the designer's Run all, the
    API's evaluate and ``manage.py evaluate``.

    Refusals come first and change nothing: a live run needs edit rights
    (``LiveNotAllowed``), a configured model and judge (``ModelNotConfigured``; a judge
    without a model too). Then, in one transaction, the actor's unfinished Run all of the
    app is cancelled (superseded) and the job submitted (``JobLimitError`` over
    ``JOBS_MAX_ACTIVE_PER_USER``: nothing is cancelled).

    ``manage.py evaluate`` splits the app into jobs it runs itself: `scenarios` (their ids)
    each, `user_scenarios` (the live CX evaluations of the scenario kind) in one of them,
    `enqueue` False."""
    # A model named twice is one column (as a version named twice), not twice the calls.
    models = list(dict.fromkeys(m for m in (models or []) if m))
    if model and model not in models:
        models.insert(0, model)
    model = models[0] if models else None
    if models or judge:
        live_rights_check(actor=actor, app=app)
    for name in models:
        resolve_model(app, name, field="models" if len(models) > 1 else "model")
    judge = checked_judge(app, model, judge)
    params: dict[str, Any] = {"model": model} if model else {}
    if judge:
        params["judge"] = judge
    params.update(experiment_params(app, models, versions, repeat, threshold))
    if not enqueue:
        params["enqueue_pieces"] = False  # manage.py evaluate runs the pieces itself
    if scenarios is not None:
        params["scenarios"] = list(scenarios)
        params["user_scenarios"] = user_scenarios
    user = actor if actor is not None and actor.pk else None
    with transaction.atomic():
        if user is not None:
            unfinished = Job.objects.filter(
                owner=user, app=app, kind="evaluate_app", status__in=JOB_ACTIVE
            )
            for old in unfinished:
                jobs.job_cancel(job=old)
        job = jobs.job_submit(
            kind="evaluate_app", owner=actor, app=app, params=params, enqueue=enqueue
        )
        if scenarios is None:  # a whole Run all: a row of the app's history from now on
            EvaluationRun.objects.get_or_create(job=job, defaults=run_fields(job))
        return job


def max_repeat() -> int:
    """How many times an evaluation run may repeat each golden (``EVALUATION_MAX_REPEAT``)."""
    return int(settings.EVALUATION_MAX_REPEAT)


def run_fields(job: Job) -> dict[str, Any]:
    """What the history row of a Run all (``EvaluationRun``) says of it before it ran:
    its models ('' scripted), versions ('' the working copy), repetitions, threshold."""
    params = job.params
    return {
        "app_id": job.app_id,
        "owner_id": job.owner_id,
        "status": job.status,
        "app_revision": int(params.get("app_revision") or 0),
        "models_used": list(params.get("models") or [params.get("model") or ""]),
        "versions": [str(v) for v in (params.get("versions") or [""])],
        "repeat": max(1, int(params.get("repeat") or 1)),
        "threshold": float(params.get("threshold", 1.0)),
    }


def experiment_params(
    app: AgentApp,
    models: list[str],
    versions: list[str] | None,
    repeat: int,
    threshold: float,
) -> dict[str, Any]:
    """A Run all's experiment (``evaluation_runs``): the models (more than one), the
    versions (numbers or labels; "" or "current" the working copy), the repetitions and the
    pass threshold, each checked with an error naming the field and the fix."""
    from agents.services import versions as versions_service

    params: dict[str, Any] = {}
    if len(models) > 1:
        params["models"] = models
    wanted = [str(v).strip() for v in (versions or []) if str(v).strip()]
    wanted = ["" if v.lower() in rules.WORKING_COPY_NAMES else v for v in wanted]
    for version in wanted:
        if version:
            try:
                if version.isdigit():
                    versions_service.version_for_app(app, number=int(version))
                else:
                    versions_service.version_for_app(app, label=version)
            except ServiceError as exc:  # the request's field is `versions`
                raise ServiceError(on_field(exc.diagnostics, "versions")) from exc
    if wanted and wanted != [""]:
        params["versions"] = list(dict.fromkeys(wanted))
    top = max_repeat()
    if not isinstance(repeat, int) or isinstance(repeat, bool) or not 1 <= repeat <= top:
        raise ServiceError(
            [
                error(
                    "repeat",
                    Message(
                        "repeat must be a whole number from 1 to %(top)s "
                        "(EVALUATION_MAX_REPEAT), not %(value)s.",
                        top=top,
                        value=repeat,
                    ),
                )
            ]
        )
    if repeat > 1:
        params["repeat"] = repeat
    if not isinstance(threshold, int | float) or not 0 <= float(threshold) <= 1:
        raise ServiceError(
            [
                error(
                    "threshold",
                    Message(
                        "threshold is the pass rate a golden needs, from 0 to 1 (0.8: 4 runs "
                        "in 5), not %(value)s.",
                        value=threshold,
                    ),
                )
            ]
        )
    if float(threshold) != 1.0:
        params["threshold"] = float(threshold)
    return params


def scenario_evaluate_submit(
    *, app: AgentApp, scenario: Scenario, actor: Actor, model: str | None = None
) -> Job:
    """One scenario's expectations as an ``evaluate_scenario`` job (its outcome stored as
    its last result), offline or live with `model`: the refusals of `run_all_submit`
    first (edit rights and a configured model for a live run)."""
    params: dict[str, Any] = {"scenario": scenario.pk}
    if model:
        live_rights_check(actor=actor, app=app)
        resolve_model(app, model)
        params["model"] = model
    return jobs.job_submit(kind="evaluate_scenario", owner=actor, app=app, params=params)
