"""The worker's warm sandbox pool (docs/operations/jobs.md): a session is reused warm by the same
user's next job, never by another user's, and nothing planted by one user's code is seen
by the next run of another user's app."""

from __future__ import annotations

import pytest

from agents import services
from agents.models import Job
from agents.services import jobs, sandbox_door
from tests.workers import redis_queue

pytestmark = pytest.mark.django_db
REDIS_URL = "redis://127.0.0.1:6379/9"  # a db of this module's own

PLANT = (
    "import math, json, functools\n"
    "def LookupBalance(account_id=''):\n"
    "    planted = []\n"
    "    for module in (math, json, functools):\n"
    "        try:\n"
    "            module.statecraft_marker = 'from ada'\n"
    "            planted.append(module.__name__)\n"
    "        except Exception:\n"
    "            pass\n"
    "    return {'planted': planted}\n"
)
LOOK = (
    "import math, json, functools\n"
    "def LookupBalance(account_id=''):\n"
    "    seen = [getattr(m, 'statecraft_marker', None) for m in (math, json, functools)]\n"
    "    return {'seen': [s for s in seen if s]}\n"
)


@pytest.fixture
def pool():
    made = sandbox_door.use_session_pool(2)
    yield made
    sandbox_door.use_session_pool(0)


def _app(owner, code: str, expect: str = ""):
    from agents.demo import load_demo

    bank = next(a for a in load_demo(owner) if a.name == "Bank demo")
    services.tool_update(tool=bank.tools.get(), python_code=code)
    services.scenario_save(
        agent=bank.agents.get(),
        name="Probe",
        steps_script='user: hi\ntool: LookupBalance {"account_id": "x"}' + expect,
    )
    return bank


def _run(owner, app):
    job = jobs.job_submit(kind="evaluate_app", owner=owner, app=app, enqueue=False)
    return jobs.job_run(str(job.pk))


def _returned(job, scenario="Probe"):
    (probe,) = [s for s in job.result["scenarios"] if s["name"] == scenario]
    return probe


def test_another_users_run_gets_a_fresh_session_and_sees_no_marker(pool, user, other_user):
    ada_app = _app(user, PLANT)
    _run(user, ada_app)
    _run(user, ada_app)
    # Each golden is a piece (a job of its own, one after another here): every piece after
    # ada's first took her warm session.
    ada_pieces = Job.objects.filter(parent__isnull=False).count()
    assert (pool.started, pool.reused) == (1, ada_pieces - 1)
    bob_app = _app(other_user, LOOK, '\nexpect response: LookupBalance {"seen": []}')
    bob = _run(other_user, bob_app)
    bob_pieces = Job.objects.filter(parent__isnull=False).count() - ada_pieces
    # bob never gets ada's session: his first piece starts one, his others reuse his.
    assert (pool.started, pool.reused) == (2, ada_pieces - 1 + bob_pieces - 1)
    probe = _returned(bob)
    # Bob's tool, run in the pool right after ada's, found none of her markers.
    assert (probe["status"], probe["passed"]) == ("passed", 1), probe["results"]


@pytest.fixture
def rq_queue(settings):
    with redis_queue(settings, REDIS_URL):
        yield


@pytest.mark.django_db(transaction=True)
@pytest.mark.xdist_group("workers")
def test_an_rq_worker_keeps_a_users_session_warm_and_never_lends_it(
    rq_queue, workers, user, other_user
):
    """A real RQ worker on Redis (`manage.py worker`, TASKS_BACKEND=rq): ada's two jobs in
    a row run on one session, bob's job gets a new one and sees none of ada's markers."""
    worker = workers(TASKS_BACKEND="rq", REDIS_URL=REDIS_URL)
    ada_app = _app(user, PLANT)
    first = jobs.job_submit(kind="evaluate_app", owner=user, app=ada_app)
    worker.wait_for(f"started a new session for user:{user.pk} (1 started, 0 reused)")
    worker.wait_for(f"job {first.pk} (evaluate_app) succeeded")
    # The same code saved again: a new revision, so the job runs it (no memo) on the
    # session her first job left warm.
    services.tool_update(tool=ada_app.tools.get(), python_code=PLANT + "\n")
    second = jobs.job_submit(kind="evaluate_app", owner=user, app=ada_app)
    worker.wait_for(f"reused a warm session for user:{user.pk}")
    worker.wait_for(f"job {second.pk} (evaluate_app) succeeded")
    bob_app = _app(other_user, LOOK, '\nexpect response: LookupBalance {"seen": []}')
    bob = jobs.job_submit(kind="evaluate_app", owner=other_user, app=bob_app)
    worker.wait_for(f"started a new session for user:{other_user.pk}")
    worker.wait_for(f"job {bob.pk} (evaluate_app) succeeded")
    bob.refresh_from_db()
    probe = _returned(bob)
    assert (probe["status"], probe["passed"]) == ("passed", 1), probe["results"]
    # bob's pieces may reuse his own warm session, never ada's: his probe saw no marker.
