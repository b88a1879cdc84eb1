"""A simulation is a bounded job: caps, and the sandbox's required protections.

`simulate_bounded` is what the designer and the API call to simulate a scenario with the
real sandbox: it refuses to run code when the host lacks a protection listed in
``SANDBOX_REQUIRED_PROTECTIONS``, cuts a scenario at ``SIMULATION_MAX_STEPS`` steps, and
hands the core a code runner that stops after ``SIMULATION_MAX_CODE_CALLS`` calls or
``SIMULATION_MAX_SECONDS`` of wall time (every remaining tool or callback becomes a step
error saying so), so a simulation always ends well before gunicorn's worker timeout.
How often a user may simulate is the rate limiter's (`agents/ratelimit.py`, scope
``simulate``, shared by the designer and the API).
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import replace
from functools import cache

from django.conf import settings

from agents.core.diagnostics import Diagnostic, Message, Severity
from agents.core.model import ModelStrategy
from agents.core.simulate import CodeCall, CodeResult, CodeRunner, SimulationResult, simulate
from agents.core.spec import AppSpec, ScenarioSpec
from agents.sandbox import host, jail
from agents.sandbox.code_runner import sandbox_runner

DEFAULTS = {
    "SIMULATION_MAX_STEPS": 300,
    "SIMULATION_MAX_CODE_CALLS": 300,
    "SIMULATION_MAX_SECONDS": 10.0,
}


def limit(name: str) -> float:
    return getattr(settings, name, DEFAULTS[name])


@cache
def missing_protections() -> dict[str, str]:
    """The protections this host cannot give, with the reason (checked once per process)."""
    return {name: why for name, why in jail.available_protections().items() if why}


def refused_protections() -> dict[str, str]:
    """Required protections (``SANDBOX_REQUIRED_PROTECTIONS``) that this host lacks."""
    required = getattr(settings, "SANDBOX_REQUIRED_PROTECTIONS", ())
    missing = missing_protections()
    return {name: missing[name] for name in required if name in missing}


def bounded_runner(
    session: host.SandboxSession, *, max_calls: int, deadline: float
) -> tuple[CodeRunner, list[str]]:
    """The sandbox runner, refusing every call after *max_calls* or past *deadline*
    (``time.monotonic()``). The list receives the reason the first refused call gave."""
    run = sandbox_runner(session)
    calls = 0
    stopped: list[str] = []

    def bounded(call: CodeCall) -> CodeResult:
        nonlocal calls
        reason = ""
        if calls >= max_calls:
            reason = f"the simulation reached its cap of {max_calls} code calls"
        elif time.monotonic() >= deadline:
            reason = f"the simulation reached its time cap of {limit('SIMULATION_MAX_SECONDS')} s"
        if reason:
            if not stopped:
                stopped.append(reason)
            return CodeResult(False, None, (), (), f"not run: {reason}", None, ran=False)
        calls += 1
        return run(call)

    return bounded, stopped


def simulate_bounded(
    app: AppSpec,
    scenario: ScenarioSpec,
    *,
    session: host.SandboxSession | None = None,
    model: ModelStrategy | None = None,
    max_seconds: float | None = None,
) -> SimulationResult:
    """Simulate *scenario* with the real sandbox, within the caps of the settings.

    `session` lets several simulations of one run (every scenario of an app) share one warm
    sandbox: each code call still runs in a fresh process forked for it, and the caps
    still count per simulation. `model` makes it a live run (``agents.services.live``),
    whose time cap `max_seconds` replaces ``SIMULATION_MAX_SECONDS``: the model's answers
    take far longer than code does."""
    refused = refused_protections()
    notes: list[Diagnostic] = []
    max_steps = int(limit("SIMULATION_MAX_STEPS"))
    if len(scenario.steps) > max_steps:
        notes.append(
            Diagnostic(
                "SC470",
                Severity.ERROR,
                Message(
                    "The scenario has %(steps_count)s steps; only the first "
                    "%(max_steps)s are simulated (SIMULATION_MAX_STEPS). Split it "
                    "into shorter scenarios.",
                    steps_count=len(scenario.steps),
                    max_steps=max_steps,
                ),
                field="steps",
                subject=scenario.name,
            )
        )
        scenario = replace(scenario, steps=scenario.steps[:max_steps])
    if refused:
        names = ", ".join(f"{name} ({why})" for name, why in refused.items())
        notes.append(
            Diagnostic(
                "SC471",
                Severity.ERROR,
                Message(
                    "Python code is not run: this server's sandbox lacks "
                    "protections that SANDBOX_REQUIRED_PROTECTIONS requires: "
                    "%(names)s. Tick mocks, or ask the operator to install them "
                    "(README, The sandbox).",
                    names=names,
                ),
                subject=scenario.name,
            )
        )
        result = simulate(app, scenario, run_code=None, model=model)
    else:
        seconds = max_seconds if max_seconds is not None else limit("SIMULATION_MAX_SECONDS")
        deadline = time.monotonic() + float(seconds)
        with contextlib.nullcontext(session) if session else host.open_session() as warm:
            runner, stopped = bounded_runner(
                warm, max_calls=int(limit("SIMULATION_MAX_CODE_CALLS")), deadline=deadline
            )
            result = simulate(app, scenario, run_code=runner, model=model)
        if stopped:
            notes.append(
                Diagnostic(
                    "SC472",
                    Severity.ERROR,
                    Message(
                        "The simulation was stopped: %(stopped)s; later tools and "
                        "callbacks were not run. Shorten the scenario or make the "
                        "code faster.",
                        stopped=stopped[0],
                    ),
                    subject=scenario.name,
                )
            )
    if not notes:
        return result
    return replace(result, diagnostics=(*notes, *result.diagnostics))
