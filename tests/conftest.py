"""Shared fixtures: users, a demo app, and a signed-in client."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

# CI replays the same examples every run (no flaky discovery on main); locally each run
# explores new ones. `database=None`: nothing written into the work tree.
settings.register_profile("ci", derandomize=True, database=None, deadline=None)
settings.register_profile("dev", database=None, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

# Playwright's sync API runs an event loop in the test thread; Django must allow ORM calls there.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture(autouse=True)
def _empty_cache():
    """Each test starts and ends with an empty cache: cached app specs (ids and revisions
    repeat after a rollback) and rate-limit counts (agents/ratelimit.py)."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user(username="ada", password="pw-ada-123456")


@pytest.fixture
def other_user(django_user_model):
    return django_user_model.objects.create_user(username="bob", password="pw-bob-123456")


@pytest.fixture
def staff(django_user_model):
    return django_user_model.objects.create_superuser(
        username="operator", password="pw-op-123456", email="op@example.com"
    )


@pytest.fixture
def signed_in(client, user):
    client.force_login(user)
    return client


@pytest.fixture
def demo_apps(user):
    from agents.demo import load_demo

    return load_demo(user)


@pytest.fixture
def bank(demo_apps):
    return next(a for a in demo_apps if a.name == "Bank demo")


@pytest.fixture
def shop(demo_apps):
    return next(a for a in demo_apps if a.name == "Shopping assistant")


@pytest.fixture
def run_jobs():
    """Run every queued job as a worker does (`jobs.job_run`), in the test's transaction."""

    def run() -> int:
        from agents.models import Job
        from agents.services.jobs import job_run

        queued = Job.objects.filter(status="queued").order_by("created_at")
        ids = [str(pk) for pk in queued.values_list("pk", flat=True)]
        for pk in ids:
            job_run(pk)
        return len(ids)

    return run


@pytest.fixture
def workers():
    """Start real worker processes on the test database (tests/workers.py); all are
    stopped at the end of the test."""
    from tests.workers import Worker

    started: list[Worker] = []

    def start(**env: str) -> Worker:
        worker = Worker(**env)
        started.append(worker)
        worker.wait_for("on the")
        worker.cursor = 0  # what it said while starting (a recovery) is still to be read
        return worker

    yield start
    for worker in started:
        worker.stop()
