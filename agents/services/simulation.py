"""Simulate a scenario: one function for the designer's conversation and the API.

The core simulates (pure, deterministic); this function picks the spec (the cached
app, with the agent's unsaved instructions when given), applies the caller's mocks
choice, and hands the core a code runner that goes through the sandbox.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from agents import selectors
from agents.core.simulate import SimulationResult
from agents.core.spec import AppSpec, ScenarioSpec
from agents.models import Agent, AgentApp, Scenario
from agents.sandbox.host import SandboxSession
from agents.services.bounds import simulate_bounded

logger = logging.getLogger("agents.simulation")


def with_instructions(spec: AppSpec, agent_name: str, instructions: str | None) -> AppSpec:
    """The app with one agent's instructions replaced by unsaved text (None: as saved)."""
    if instructions is None:
        return spec
    return replace(
        spec,
        agents=tuple(
            replace(a, instructions=instructions) if a.name == agent_name else a
            for a in spec.agents
        ),
    )


def simulate_scenario(
    *,
    app: AgentApp,
    agent: Agent,
    scenario: Scenario,
    instructions: str | None = None,
    use_mocks: bool | None = None,
    session: SandboxSession | None = None,
) -> tuple[ScenarioSpec, SimulationResult]:
    """Run `scenario` against the app (with `instructions` for `agent` when given).

    `use_mocks` None keeps the scenario's own setting; True or False overrides it both
    ways. The simulation is a bounded job (`agents.services.bounds`).
    """
    spec = with_instructions(selectors.app_spec(app), agent.display_name, instructions)
    scenario_spec = scenario.to_spec(app_id=f"apps/{app.pk}")
    if use_mocks is not None:
        scenario_spec = replace(scenario_spec, use_mocks=use_mocks)
    # One warm sandbox for this simulation only, bounded in steps, calls and time.
    return scenario_spec, simulate_bounded(spec, scenario_spec, session=session)
