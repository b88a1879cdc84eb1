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

import hashlib
from dataclasses import asdict, dataclass
from typing import Any

from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from agents import selectors
from agents.core.evaluate import ScenarioEvaluation, allows_extra_calls, evaluate
from agents.core.simulate import SimulationResult
from agents.core.spec import ScenarioSpec
from agents.models import Agent, AgentApp, Scenario, ScenarioResult
from agents.sandbox import host
from agents.sandbox.host import SandboxSession
from agents.services.common import Actor
from agents.services.simulation import simulate_scenario

MEMO_SECONDS = 3600


@dataclass(frozen=True)
class ScenarioRun:
    scenario: Scenario
    agent: Agent
    spec: ScenarioSpec
    result: SimulationResult
    evaluation: ScenarioEvaluation
    memoised: bool = False
    live: Any = None  # the LiveOutcome of a live run (agents.services.live)


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
    session: SandboxSession | None = None,
) -> ScenarioRun:
    """Simulate `scenario` and check its expectations (memoised; nothing is stored)."""
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
        session=session,
    )
    # The app-level carry (app.json) says whether goldens list only some calls.
    allow = allows_extra_calls(selectors.app_cx_settings(app), spec)
    evaluation = evaluate(spec, result, selectors.app_spec(app), extra_calls_allowed=allow)
    cache.set(key, (spec, result, evaluation), timeout=MEMO_SECONDS)
    return ScenarioRun(scenario, agent, spec, result, evaluation)


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


def live_scenario_run(
    *,
    app: AgentApp,
    agent: Agent,
    scenario: Scenario,
    model: str,
    actor: Actor,
    instructions: str | None = None,
    use_mocks: bool | None = None,
    session: SandboxSession | None = None,
) -> ScenarioRun:
    """The scenario run live with `model` (``agents.services.live.run_live``; recorded)."""
    from agents.services.live import run_live

    outcome = run_live(
        app=app,
        agent=agent,
        scenario=scenario,
        model=model,
        actor=actor,
        instructions=instructions,
        use_mocks=use_mocks,
        session=session,
    )
    return ScenarioRun(
        scenario, agent, outcome.spec, outcome.result, outcome.evaluation, live=outcome
    )


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
    if model:
        run = live_scenario_run(
            app=app,
            agent=agent,
            scenario=scenario,
            model=model,
            actor=actor,
            instructions=instructions,
            use_mocks=use_mocks,
        )
    else:
        run = scenario_run(
            app=app, agent=agent, scenario=scenario, instructions=instructions, use_mocks=use_mocks
        )
    if instructions is None:
        scenario_result_record(
            scenario=scenario, evaluation=run.evaluation, app_revision=app.revision, actor=actor
        )
    return run


def app_evaluate(
    *,
    app: AgentApp,
    actor: Actor,
    record: bool = True,
    agent: Agent | None = None,
    instructions: str | None = None,
    model: str | None = None,
) -> list[ScenarioRun]:
    """Run every scenario of the app (its agents in order, scenarios by name). With `agent`
    and `instructions`, that agent's unsaved instructions are used (and nothing stored).
    With `model`, every scenario runs live against that model (recorded as live runs)."""
    if model:
        from agents.services.live_models import resolve_model

        resolve_model(app, model)  # an unknown model fails before anything runs
    loaded = selectors.app_with_everything(app.pk).get()
    runs: list[ScenarioRun] = []
    # One warm sandbox for the whole run (started at the first code call, if any): every
    # call still gets a fresh process; the caps count per scenario.
    with host.open_session() as session:
        for each in loaded.agents.all():
            text = instructions if agent is not None and each.pk == agent.pk else None
            for scenario in each.scenarios.all():
                if model:
                    run = live_scenario_run(
                        app=loaded,
                        agent=each,
                        scenario=scenario,
                        model=model,
                        actor=actor,
                        instructions=text,
                        session=session,
                    )
                else:
                    run = scenario_run(
                        app=loaded,
                        agent=each,
                        scenario=scenario,
                        instructions=text,
                        session=session,
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

    @property
    def ok(self) -> bool:
        return self.failed == 0


def summarise(runs: list[ScenarioRun]) -> Summary:
    statuses = [run.evaluation.status for run in runs]
    return Summary(
        passed=statuses.count("passed"),
        failed=statuses.count("failed"),
        needs_model=statuses.count("needs_model"),
        no_expectations=statuses.count("none"),
    )
