"""A queued job wakes an idle worker of the database queue (server/wakeup.py; issue 31: a
live run's first streamed token no longer waits for the worker's next look at the queue).

The worker is started with an interval of an hour: a job it runs after its first look
at the queue was brought by the wake-up (LISTEN/NOTIFY on PostgreSQL, its local socket
otherwise). The test waits for what the worker prints, never for a time.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.urls import reverse
from rest_framework.test import APIClient

from server import wakeup

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.xdist_group("workers")]


@pytest.fixture
def api(user):
    client = APIClient()
    client.force_login(user)
    return client


def _scenario_evaluate(api, app) -> str:
    agent = app.agents.get()
    scenario = agent.scenarios.first()
    url = reverse("api:scenario-evaluate", args=[app.pk, agent.pk, scenario.pk])
    response = api.post(url)
    assert response.status_code == 202
    return response["Location"].rstrip("/").rsplit("/", 1)[-1]


def test_an_idle_worker_is_woken_by_each_queued_job(workers, api, bank):
    worker = workers(interval=3600)
    if connection.vendor != "postgresql":
        assert list(wakeup.wake_dir().glob("*.sock"))  # the worker's socket, to be woken by
    for _ in range(3):  # after each job the worker looks once, finds nothing, and sleeps
        job = _scenario_evaluate(api, bank)
        worker.wait_for(f"job {job} (evaluate_scenario) succeeded", timeout=120)


def test_a_wake_up_with_no_worker_listening_is_harmless(api, bank, tmp_path, settings):
    """A socket left by a worker that died is removed by the next sender; the job stays
    queued for the next worker."""
    if connection.vendor == "postgresql":
        pytest.skip("PostgreSQL wakes its workers by NOTIFY: no sockets")
    import socket

    settings.JOBS_WAKE_DIR = str(tmp_path)
    dead = tmp_path / "1-dead.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as gone:
        gone.bind(str(dead))  # bound, then closed: nobody reads it any more
    job = _scenario_evaluate(api, bank)
    assert not dead.exists()
    assert api.get(f"/api/jobs/{job}/").json()["status"] == "queued"
