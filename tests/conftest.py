"""Shared fixtures: users, a demo app, and a signed-in client."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

# CI replays the same examples every run (no flaky discovery on main); locally each run
# explores new ones. `database=None`: nothing written into the work tree.
settings.register_profile("ci", derandomize=True, database=None, deadline=None)
settings.register_profile("dev", database=None, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

# Playwright's sync API runs an event loop in the test thread; Django must allow ORM calls there.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
# The management commands speak the operator's language (LANGUAGE, LC_ALL, LANG…:
# agents/management/language.py); the tests read them in English whatever the machine's.
os.environ["LANGUAGE"] = "en"


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """Keep `--dist loadgroup` grouping (`make test`): pytest-xdist names a test's
    `xdist_group` by suffixing its node id on the workers (`...@group`), through
    `item._nodeid`; pytest 9.2 derives `nodeid` from `item._id`, so the suffix is lost
    and every group silently falls apart — the browser tests, ADK, the permission
    matrix's world and the production probe then run on both workers (pytest-xdist
    issue 1386). The same suffix, on `_id`; nothing happens where xdist's own works."""
    if not getattr(config.option, "loadgroup", False):
        return
    try:
        from _pytest.nodeid import NodeId
    except ImportError:  # an older pytest: xdist's own suffix takes effect
        return
    for item in items:
        names = {
            str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
            for mark in item.iter_markers("xdist_group")
        }
        nodeid = item.nodeid
        if not names or nodeid.rfind("@") > nodeid.rfind("]") or not hasattr(item, "_id"):
            continue
        item._id = NodeId.parse(f"{nodeid}@{'_'.join(sorted(names))}")


@pytest.fixture(autouse=True)
def _empty_cache():
    """Each test starts and ends with an empty cache: cached app specs (ids and revisions
    repeat after a rollback). Rate-limit counts are database rows (server/ratelimit.py):
    each test's transaction takes them away."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


@pytest.fixture(autouse=True)
def _no_language_left_active():
    """Each test starts and ends in LANGUAGE_CODE: a request through the test client
    activates its language in this thread (LocaleMiddleware) and nothing deactivates it, so
    a German request used to leave the next test's forms rendered in German."""
    from django.utils import translation

    translation.deactivate()
    yield
    translation.deactivate()


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


@pytest.fixture(scope="session")
def _migrated_sqlite(tmp_path_factory, worker_id) -> Path:
    """A SQLite file with every migration applied by `manage.py migrate` in a child
    process: made once per run (the xdist workers share it, under a file lock)."""
    base = tmp_path_factory.getbasetemp()
    shared = (base if worker_id == "master" else base.parent) / "migrated.sqlite3"
    with open(shared.with_suffix(".lock"), "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not shared.exists():
            part = shared.with_suffix(".part")
            env = {**os.environ, "DATABASE_URL": f"sqlite:///{part}"}
            subprocess.run(
                [sys.executable, "manage.py", "migrate", "-v0", "--settings=tests.settings"],
                cwd=Path(__file__).resolve().parent.parent,
                env=env,
                check=True,
                timeout=300,
            )
            part.rename(shared)
    return shared


@pytest.fixture
def migrated_sqlite_url(_migrated_sqlite, tmp_path) -> str:
    """`DATABASE_URL` of a migrated SQLite database of this test's own (a copy), for the
    commands the tests run as real processes."""
    path = tmp_path / "migrated.sqlite3"
    shutil.copyfile(_migrated_sqlite, path)
    return f"sqlite:///{path}"


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


@pytest.fixture
def server():
    """A model's wire protocol on loopback (tests/llm_server.py), closed after the test."""
    from tests.llm_server import ModelServer

    s = ModelServer()
    yield s
    s.close()


@pytest.fixture
def redis_server():
    """A redis-server of this test's own on a free port (tests/redis_server.py), stopped at
    the end whatever happens; `stop()`/`start()` make an outage."""
    from tests.redis_server import running_redis

    with running_redis() as server:
        yield server
