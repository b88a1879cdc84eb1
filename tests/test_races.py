"""Two editors at once, for real: two database connections in two threads (PostgreSQL).

Each race starts both saves behind a barrier, so they really overlap; the row locks
(`select_for_update`) and versions must then refuse the stale one and lose nothing.
SQLite serialises whole transactions, so these run on PostgreSQL (CI's second pass).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from django.db import connection, connections

from agents import services
from agents.models import Agent, Scenario, Variable

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="row locks need PostgreSQL (CI's second pass)"
    ),
]


def race(*saves: Callable[[], object]) -> list[object]:
    """Run the saves at the same moment in threads; each result or the exception it raised."""
    barrier = threading.Barrier(len(saves))
    results: list[object] = [None] * len(saves)

    def run(index: int, save: Callable[[], object]) -> None:
        try:
            barrier.wait(timeout=10)
            results[index] = save()
        except Exception as exc:  # the refusal is the result under test
            results[index] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i, s)) for i, s in enumerate(saves)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return results


def _one_refused(results: list[object]) -> None:
    refused = [r for r in results if isinstance(r, services.StaleObjectError)]
    saved = [r for r in results if not isinstance(r, Exception)]
    assert len(refused) == 1 and len(saved) == 1, results


def test_two_editors_save_the_same_variable(user, other_user, shop):
    variable = shop.variables.get(name="business_rules")
    version = variable.version
    results = race(
        lambda: services.variable_update(
            variable=variable, description="first", expected_version=version, actor=user
        ),
        lambda: services.variable_update(
            variable=variable, description="second", expected_version=version, actor=other_user
        ),
    )
    _one_refused(results)
    saved = next(r for r in results if isinstance(r, Variable))
    assert Variable.objects.get(pk=variable.pk).description == saved.description
    assert Variable.objects.get(pk=variable.pk).version == version + 1


def test_two_editors_save_the_same_instructions(user, other_user, shop):
    agent = shop.agents.get()
    base = agent.instructions_hash
    results = race(
        lambda: services.agent_save_instructions(
            agent=agent, instructions="A's text", base_hash=base, actor=user
        ),
        lambda: services.agent_save_instructions(
            agent=agent, instructions="B's text", base_hash=base, actor=other_user
        ),
    )
    _one_refused(results)
    saved = next(r for r in results if isinstance(r, Agent))
    assert Agent.objects.get(pk=agent.pk).instructions == saved.instructions


def test_two_editors_save_the_same_scenario(user, other_user, shop):
    scenario = Scenario.objects.get(agent__app=shop)
    version = scenario.version
    results = race(
        lambda: services.scenario_save(
            agent=scenario.agent,
            scenario=scenario,
            expected_version=version,
            token_budget=111,
            actor=user,
        ),
        lambda: services.scenario_save(
            agent=scenario.agent,
            scenario=scenario,
            expected_version=version,
            token_budget=222,
            actor=other_user,
        ),
    )
    _one_refused(results)
    saved = next(r for r in results if isinstance(r, Scenario))
    assert Scenario.objects.get(pk=scenario.pk).token_budget == saved.token_budget
    assert Scenario.objects.get(pk=scenario.pk).steps.exists()  # a PATCH keeps the steps


def test_two_editors_attach_tools_to_the_same_agent(user, other_user, bank):
    agent = bank.agents.get()
    before = set(agent.tools.values_list("name", flat=True))
    results = race(
        lambda: services.tool_create(app=bank, name="FromA", attach_to=agent, actor=user),
        lambda: services.tool_create(app=bank, name="FromB", attach_to=agent, actor=other_user),
    )
    assert not [r for r in results if isinstance(r, Exception)], results
    assert set(agent.tools.values_list("name", flat=True)) == before | {"FromA", "FromB"}


def test_two_editors_create_the_same_variable_name(user, other_user, shop):
    results = race(
        lambda: services.variable_create(app=shop, name="twin", type="text", actor=user),
        lambda: services.variable_create(app=shop, name="twin", type="text", actor=other_user),
    )
    refused = [r for r in results if isinstance(r, services.ServiceError)]
    assert len(refused) == 1 and "name" in refused[0].field_errors()
    assert Variable.objects.filter(app=shop, name="twin").count() == 1
