"""The one door to the sandbox (docs/architecture.md): every batch entry point (evaluate-all,
the version diff, the jobs of both) runs its simulations on the runner the simulation
service lends, so the caps and the required protections apply to each of them.

tests/test_layering.py checks the other half: no other module imports agents.sandbox.
"""

from __future__ import annotations

import pytest

from agents import services
from agents.services import evaluation, jobs, sandbox_door, versions

pytestmark = pytest.mark.django_db
TOOL = "def LookupBalance(account_id=''):\n    return {'balance': 1}\n"


@pytest.fixture
def many_calls(bank, user):
    """The bank demo with a scenario of 5 tool calls, and a version of it."""
    services.tool_update(tool=bank.tools.get(), python_code=TOOL)
    agent = bank.agents.get()
    script = "\n".join(f'tool: LookupBalance {{"account_id": "{i}"}}' for i in range(5))
    services.scenario_save(agent=agent, name="Five calls", steps_script=script)
    versions.version_create(app=bank, user=user, name="v1")
    return bank


def _evaluate_all(app, user):
    return [run.result.diagnostics for run in evaluation.app_evaluate(app=app, actor=user)]


def _diff(app, user):
    before = versions.diff_side(app, versions.version_for_app(app, number=1))
    diff = versions.app_diff(app, before, versions.diff_side(app, None))
    return [(s.errors_before, s.errors_after) for s in diff.scenarios]


def _job(kind, params):
    def run(app, user):
        job = jobs.job_submit(kind=kind, owner=user, app=app, params=params, enqueue=False)
        return jobs.job_run(str(job.pk)).result

    return run


ENTRY_POINTS = {
    "evaluate-all": _evaluate_all,
    "version diff": _diff,
    "evaluate job": _job("evaluate_app", {}),
    "version diff job": _job("version_diff", {"before": 1, "after": None}),
}


@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=list(ENTRY_POINTS))
def test_every_batch_entry_point_applies_the_code_call_cap(entry, many_calls, user, settings):
    settings.SIMULATION_MAX_CODE_CALLS = 2
    out = repr(ENTRY_POINTS[entry](many_calls, user))
    assert "The simulation was stopped: the simulation reached its cap of 2 code calls" in out


@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=list(ENTRY_POINTS))
def test_every_batch_entry_point_refuses_code_without_a_required_protection(
    entry, many_calls, user, settings, monkeypatch
):
    monkeypatch.setattr(sandbox_door, "missing_protections", lambda: {"seccomp": "not here"})
    settings.SANDBOX_REQUIRED_PROTECTIONS = ["seccomp"]
    out = repr(ENTRY_POINTS[entry](many_calls, user))  # SC471's message
    assert "Python code is not run: " in out
    assert "SANDBOX_REQUIRED_PROTECTIONS requires: seccomp (not here)" in out
