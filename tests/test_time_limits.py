"""Verdicts never depend on the machine's load (issue 30): the limits that can cut a run
count CPU where they mean work, and a run a limit stopped says so as its own status.

The load is reproduced deterministically: a limit the run reaches at once (as a loaded
machine reaches a wall-clock limit), or code that waits (wall time passing with no work,
which is what load does to a run)."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.core.management.base import CommandError

from agents import services
from agents.core.evaluate import evaluate
from agents.models import Scenario, Tool
from agents.sandbox import Limits, host
from agents.sandbox import code_runner as memo
from agents.services import evaluation
from agents.services import sandbox_door as bounds
from tests.cx_corpus import cx_corpus  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db

# Waits 0.3 s per call and does almost no work: the wall clock passes, the CPU does not.
WAITING_TOOL = (
    "import time\n"
    "def LookupBalance(account_id=''):\n"
    "    time.sleep(0.3)\n"
    "    return {'balance': 100}\n"
)


@pytest.fixture(autouse=True)
def no_memo():
    cache.clear()
    memo.clear_cache()


def waiting_scenario(bank, calls: int) -> Scenario:
    tool = bank.tools.get()
    services.tool_update(tool=tool, python_code=WAITING_TOOL)
    agent = bank.agents.get()
    lines = ["user: hi"]
    for i in range(calls):
        lines.append(f'expect call: LookupBalance {{"account_id": "{i}"}}')
    lines.append('expect response: LookupBalance {"balance": 100}')
    return services.scenario_save(agent=agent, name="Waits", steps_script="\n".join(lines))


def run(bank, scenario: Scenario):
    agent = scenario.agent
    return evaluation.scenario_run(app=bank, agent=agent, scenario=scenario)


def test_a_run_stopped_by_the_time_limit_is_stopped_never_failed(bank, settings):
    # A CPU limit every run reaches at its first call: as a wall-clock limit on a loaded
    # machine cut bella_notte's goldens (issue 30). Before: every check "failed".
    settings.SIMULATION_MAX_SECONDS = 1e-9
    scenario = waiting_scenario(bank, 2)
    done = run(bank, scenario)
    statuses = {r.status for r in done.evaluation.results}
    assert done.evaluation.status == "stopped" and statuses == {"stopped"}
    assert done.evaluation.stopped == 3 and done.evaluation.failed == 0
    assert done.result.stopped_turn == 0
    first = done.evaluation.results[0].message
    assert first.startswith("Stopped: the simulation reached its time limit of 1e-09 s of CPU")
    assert any(d.code == "SC472" for d in done.result.diagnostics)


def test_the_wall_clock_backstop_stops_the_run_and_says_so(bank, settings):
    settings.SIMULATION_MAX_WALL_SECONDS = 0
    done = run(bank, waiting_scenario(bank, 2))
    assert done.evaluation.status == "stopped" and done.evaluation.failed == 0
    assert "wall-clock limit of 0 s" in done.evaluation.results[0].message


def test_waiting_does_not_count_against_the_cpu_limit(bank, settings):
    # 5 calls of 0.3 s each: 1.5 s of wall clock and next to no CPU. With the old wall-clock
    # cap of 1 s the fifth call was refused and the golden failed; counted as CPU it passes.
    settings.SIMULATION_MAX_SECONDS = 1
    done = run(bank, waiting_scenario(bank, 5))
    assert done.evaluation.status == "passed", [r.message for r in done.evaluation.results]
    assert done.result.stopped == ""


def test_a_call_killed_at_its_wall_clock_limit_is_a_stop_not_a_failure(bank, user):
    # The sandbox's own per-call wall clock (a backstop for code that waits): reached here by
    # a call that sleeps past it, as a loaded machine would make a slow call reach it.
    tool = Tool.objects.get(app=bank, name="LookupBalance")
    services.tool_update(
        tool=tool,
        python_code="import time\ndef LookupBalance(account_id=''):\n    time.sleep(30)\n",
    )
    scenario = services.scenario_save(
        agent=bank.agents.get(),
        name="Sleeps",
        steps_script='user: hi\nexpect call: LookupBalance {"account_id": "1"}',
    )
    session = host.SandboxSession(limits=Limits(wall_time_s=0.05, cpu_time_s=2))
    with session, bounds.batch_runner(session=session) as runner:
        spec = scenario.to_spec(app_id=f"apps/{bank.pk}")
        result = runner.simulate(bank.to_spec(), spec)
    assert result.stopped == "a sandbox call reached its wall-clock limit"
    checked = evaluate(spec, result, bank.to_spec())
    assert checked.status == "stopped" and checked.failed == 0
    # A stop is the machine's: never remembered as what the code does.
    assert memo.cache_bytes() == 0


def test_code_that_loops_is_still_the_codes_failure(bank):
    # The call's own limit counts CPU: an endless loop fails the call, on any machine.
    tool = Tool.objects.get(app=bank, name="LookupBalance")
    services.tool_update(
        tool=tool, python_code="def LookupBalance(account_id=''):\n    while True:\n        pass\n"
    )
    scenario = services.scenario_save(
        agent=bank.agents.get(),
        name="Loops",
        steps_script='user: hi\nexpect call: LookupBalance {"account_id": "1"}',
    )
    session = host.SandboxSession(limits=Limits(wall_time_s=60, cpu_time_s=1))
    with session, bounds.batch_runner(session=session) as runner:
        spec = scenario.to_spec(app_id=f"apps/{bank.pk}")
        result = runner.simulate(bank.to_spec(), spec)
    checked = evaluate(spec, result, bank.to_spec())
    assert checked.status == "failed" and result.stopped == ""
    assert "CPU time limit exceeded" in checked.results[0].message


def test_the_command_reports_stopped_goldens_as_stop_with_exit_status_3(tmp_path, bank, settings):
    settings.SIMULATION_MAX_SECONDS = 1e-9
    waiting_scenario(bank, 1)
    out = io.StringIO()
    junit = tmp_path / "report.xml"
    with pytest.raises(CommandError) as raised:
        call_command("evaluate", str(bank.pk), "--junit", str(junit), stdout=out)
    assert raised.value.returncode == 3
    text = out.getvalue()
    assert "STOP  Bank demo / banking_agent / Waits" in text
    assert "0 failed" in text and "stopped by a time limit" in text
    root = ET.parse(junit).getroot()
    assert root.get("failures") == "0" and int(root.get("errors")) >= 1
    error = root.find(".//testcase[@name='Waits']/error")
    assert error is not None and error.get("type") == "Stopped"


def test_bella_notte_under_a_limit_it_reaches_is_stopped_not_failed(
    user,
    cx_corpus,  # noqa: F811
    settings,
):
    """bella_notte's offline Run all gave 2 passed / 2 failed or 3 passed / 1 failed on a
    loaded machine: its longest goldens reached SIMULATION_MAX_SECONDS, a wall-clock limit.
    A limit the run reaches now stops it, and no golden fails for it."""
    from agents.core.cx.app import zip_bytes
    from agents.services import exchange
    from tests.cx_tree import folder_files

    files = folder_files(cx_corpus / "examples" / "bella_notte")
    app, _, _ = exchange.app_import_file(owner=user, data=zip_bytes(files))
    Scenario.objects.filter(agent__app=app).update(now="2026-06-01T12:00:00")
    settings.SIMULATION_MAX_SECONDS = 1e-9
    out = io.StringIO()
    with pytest.raises(CommandError) as raised:
        call_command("evaluate", str(app.pk), stdout=out)
    text = out.getvalue()
    assert raised.value.returncode == 3, text
    assert "FAIL  " not in text
    assert "0 passed, 0 failed" in text and "28 stopped by a time limit" in text
