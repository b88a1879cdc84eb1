"""Operations that survive faults (issue 32), against real services: a redis-server of the
test's own (tests/redis_server.py) stopped mid-traffic, the database queue and RQ losing a
job's entry, a database connection killed under a worker's claim (PostgreSQL).

No mocked client and no sleep: an outage is a real process stopped, a lost entry a real
key deleted, a database error a real backend terminated (`pg_terminate_backend`)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from agents.models import Job, JobStatus, WorkerHeartbeat
from agents.services import jobs
from tests.workers import redis_queue

pytestmark = pytest.mark.django_db


def _on_postgres() -> bool:
    return connection.vendor == "postgresql"


def _redis_cache(settings, url: str) -> None:
    """The production settings with CACHE_URL=<url> (designer/settings.py)."""
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    settings.CACHES = {
        "default": {
            "BACKEND": "server.cache.ForgivingRedisCache",
            "LOCATION": url,
            "OPTIONS": {
                "socket_connect_timeout": 1.0,
                "socket_timeout": 2.0,
                "retry": Retry(NoBackoff(), 1),
            },
        }
    }
    settings.SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"
    settings.RATE_LIMIT_STORE = "cache"


# ---------------------------------------------------------------- health


def test_healthz_reports_each_dependency_and_the_workers_seen(client, user):
    body = client.get("/healthz").json()
    assert body["workers"] == {"seen": 0, "last_heartbeat": None}
    assert body["status"] == "degraded"  # no worker: queued work would wait
    jobs.worker_beat("host-a:1", queue="database")
    body = client.get("/healthz").json()
    assert body["status"] == "ok" and body["workers"]["seen"] == 1
    assert body["workers"]["last_heartbeat"]
    # A worker that said it stopped, or whose heartbeat is old, is not counted.
    jobs.worker_beat("host-a:1", stopped=True)
    WorkerHeartbeat.objects.create(
        worker="host-b:2",
        started_at=timezone.now() - timezone.timedelta(hours=1),
        seen_at=timezone.now() - timezone.timedelta(minutes=5),
    )
    assert client.get("/healthz").json()["workers"]["seen"] == 0


def test_redis_stopped_mid_traffic_no_500_and_healthz_says_what_is_down(
    settings, redis_server, user, shop
):
    _redis_cache(settings, redis_server.url(0))
    browser = Client(raise_request_exception=False)
    browser.force_login(user)
    n = {"i": 0}

    def traffic() -> dict[str, int]:
        n["i"] += 1
        return {
            "app list": browser.get(reverse("app-list")).status_code,
            "designer": browser.get(reverse("app-designer", args=[shop.pk])).status_code,
            "api list": browser.get("/api/apps/").status_code,
            "api write": browser.post(
                f"/api/apps/{shop.pk}/variables/",
                {"name": f"v_{n['i']}", "type": "number", "default": 1},
                content_type="application/json",
            ).status_code,
        }

    assert traffic() == {"app list": 200, "designer": 200, "api list": 200, "api write": 201}
    health = browser.get("/healthz").json()
    assert health["cache"] == "ok"

    redis_server.stop()
    for _ in range(3):
        assert traffic() == {"app list": 200, "designer": 200, "api list": 200, "api write": 201}
    response = browser.get("/healthz")
    assert response.status_code == 200  # the app serves: degraded, not down
    assert response.json()["cache"] == "unavailable"
    assert response.json()["status"] == "degraded"
    # The session was read from its database row; signing in still works.
    fresh = Client(raise_request_exception=False)
    signin = fresh.post(reverse("login"), {"username": "ada", "password": "pw-ada-123456"})
    assert signin.status_code == 302
    assert fresh.get(reverse("app-list")).status_code == 200

    redis_server.start()
    from django.core.cache import cache

    cache._down_until = 0.0  # the retry interval's clock, moved on (no sleep)
    assert browser.get("/healthz").json()["cache"] == "ok"
    assert traffic()["app list"] == 200


def test_rate_limits_count_in_the_database_while_redis_is_away(settings, redis_server, user):
    from agents.models import RateLimitCount
    from server import ratelimit

    _redis_cache(settings, redis_server.url(0))
    settings.RATE_LIMITS = {**settings.RATE_LIMITS, "api-user": "2/h"}
    assert ratelimit.hit("api-user", "u:1").allowed
    assert not RateLimitCount.objects.exists()  # counted in Redis
    redis_server.stop()
    first = ratelimit.hit("api-user", "u:2")
    second = ratelimit.hit("api-user", "u:2")
    third = ratelimit.hit("api-user", "u:2")
    assert (first.allowed, second.allowed, third.allowed) == (True, True, False)
    assert RateLimitCount.objects.count() == 1  # neither open nor closed: still counted
    assert not ratelimit.peek("api-user", "u:2").allowed


def test_the_queue_down_answers_503_and_the_submitted_job_waits_for_the_reaper(
    settings, redis_server, user, bank, django_capture_on_commit_callbacks
):
    """RQ's Redis away: /healthz answers 503 (work would be accepted and never run); a job
    submitted meanwhile is kept queued (no 500), and the reaper enqueues it once Redis is
    back."""
    with redis_queue(settings, redis_server.url(3)):
        settings.JOBS_REQUEUE_SECONDS = 0
        redis_server.stop()
        client = Client(raise_request_exception=False)
        client.force_login(user)
        response = client.get("/healthz")
        assert response.status_code == 503
        assert response.json()["queue"] == "unavailable"
        with django_capture_on_commit_callbacks(execute=True):
            posted = client.post(reverse("api:app-evaluate", args=[bank.pk]))
        assert posted.status_code == 202, posted.content
        job = Job.objects.get()
        assert job.status == JobStatus.QUEUED and job.task_id == ""
        assert jobs.jobs_reap() == []  # the queue is away: logged, tried next round
        redis_server.start()
        assert [j.pk for j in jobs.jobs_reap()] == [job.pk]
        job.refresh_from_db()
        assert job.task_id and jobs._queue_has(job.task_id)


# ---------------------------------------------------------------- JSON errors


def test_api_errors_are_json_never_the_html_page(settings, user, monkeypatch):
    from agents.api import views

    settings.DEBUG = False
    client = Client(raise_request_exception=False)
    client.force_login(user)
    missing = client.get("/api/apps/not-a-number/")
    assert missing.status_code == 404
    assert missing["Content-Type"].startswith("application/json")
    assert missing.json() == {"detail": "Not found."}

    def broken(self, request, *args, **kwargs):
        raise RuntimeError("/srv/statecraft/internal path")

    monkeypatch.setattr(views.AppViewSet, "list", broken)
    failed = client.get("/api/apps/")
    assert failed.status_code == 500
    assert failed.json() == {"detail": "Server error."}
    assert b"/srv/statecraft" not in failed.content
    page = client.get("/no-such-page/")
    assert page.status_code == 404 and page["Content-Type"].startswith("text/html")


# ---------------------------------------------------------------- the reaper


def test_a_queued_job_whose_database_queue_entry_is_gone_is_enqueued_again(
    settings, user, bank, django_capture_on_commit_callbacks
):
    from django_tasks_db.models import DBTaskResult

    settings.JOBS_REQUEUE_SECONDS = 60
    with django_capture_on_commit_callbacks(execute=True):
        job = jobs.job_submit(kind="evaluate_app", owner=user, app=bank)
    job.refresh_from_db()
    assert job.task_id and jobs._queue_has(job.task_id)
    assert jobs.jobs_reap() == []  # its entry is there: waiting in line is not lost
    DBTaskResult.objects.filter(pk=job.task_id).delete()
    assert jobs.jobs_reap() == []  # not before JOBS_REQUEUE_SECONDS
    Job.objects.filter(pk=job.pk).update(queued_at=timezone.now() - timezone.timedelta(hours=1))
    assert [j.pk for j in jobs.jobs_reap()] == [job.pk]
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED and jobs._queue_has(job.task_id)
    assert jobs.jobs_reap() == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.xdist_group("workers")
def test_a_queued_job_whose_rq_entry_is_deleted_runs_after_the_reapers_interval(
    settings, redis_server, workers, user, bank
):
    import redis

    url = redis_server.url(5)
    with redis_queue(settings, url):
        job = jobs.job_submit(kind="evaluate_app", owner=user, app=bank)
        job.refresh_from_db()
        assert job.task_id
        redis.Redis.from_url(url).flushdb()  # Redis restarted without its data
        assert not jobs._queue_has(job.task_id)
        worker = workers(TASKS_BACKEND="rq", REDIS_URL=url, JOBS_REQUEUE_SECONDS="1")
        worker.wait_for(f"requeued job {job.pk}")
        worker.wait_for(f"job {job.pk} (evaluate_app) succeeded")
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED and job.attempts == 1


# ---------------------------------------------------------------- database errors


@pytest.mark.django_db(transaction=True)
def test_a_claim_failing_on_a_database_error_is_retried(settings, user, bank):
    if not _on_postgres():
        pytest.skip("terminates a PostgreSQL backend")
    import psycopg

    settings.JOBS_DB_RETRY_SECONDS = 10
    job = jobs.job_submit(kind="evaluate_app", owner=user, app=bank, enqueue=False)
    connection.ensure_connection()
    pid = connection.connection.info.backend_pid
    db = connection.settings_dict
    with psycopg.connect(
        host=db["HOST"],
        port=db["PORT"] or 5432,
        user=db["USER"],
        dbname=db["NAME"],
        autocommit=True,
    ) as admin:
        assert admin.execute("SELECT pg_terminate_backend(%s)", [pid]).fetchone()[0]
    # The worker's connection is dead: its claim fails on a database error, is retried on
    # a new connection, and the job runs.
    done = jobs.job_run(str(job.pk), worker="test:1")
    assert done is not None and done.status == JobStatus.SUCCEEDED and done.attempts == 1


def test_transient_errors_are_named_in_the_users_language_without_internals():
    from django.db import OperationalError
    from django.utils import translation

    from agents.i18n import localize
    from agents.models import Job, message_columns

    disk = OperationalError('could not extend file "pg_tblspc/16384/PG_16/1/2": No space left')
    assert jobs.transient_problem(disk) == jobs.PROBLEM_DISK
    assert jobs.transient_problem(ConnectionRefusedError(111, "refused")) == "connection"
    assert jobs.transient_problem(OperationalError("server closed the connection")) == "database"
    assert jobs.transient_problem(ValueError("a bug")) is None
    from agents.core.diagnostics import Message

    failed = Message(jobs._FAILED[jobs.PROBLEM_DISK], attempt=2, max_attempts=2)
    stored = Job(**message_columns("error", failed))
    assert "pg_tblspc" not in stored.error
    with translation.override("fr"):
        shown = localize(stored.error_message)
    assert shown != stored.error and "JOBS_MAX_ATTEMPTS" in shown


def test_run_all_says_when_queued_work_waits_with_no_worker(settings, signed_in, user, bank):
    settings.JOBS_PICKUP_SECONDS = 0
    job = jobs.job_submit(kind="evaluate_app", owner=user, app=bank, enqueue=False)
    fragment = signed_in.get(reverse("app-run-all-job", args=[bank.pk, job.pk]))
    text = fragment.content.decode()
    assert "no job worker is running" in text and "make worker" in text
    jobs.worker_beat("host:9", queue="database")
    text = signed_in.get(reverse("app-run-all-job", args=[bank.pk, job.pk])).content.decode()
    assert "every job worker is busy" in text


@pytest.mark.django_db(transaction=True)
def test_a_transient_error_retries_the_job_with_backoff_then_fails_naming_the_problem(
    settings, user, bank
):
    """A kind whose run meets a full disk (PostgreSQL's own words, with an internal path):
    the attempt ends, the job is queued again (the user reads what happened, in their
    language, without the path); past JOBS_MAX_ATTEMPTS it fails saying so."""
    from django.db import OperationalError
    from django.utils import translation

    from agents.i18n import localize

    settings.JOBS_RETRY_BACKOFF_SECONDS = 0
    settings.JOBS_MAX_ATTEMPTS = 2
    runs: list[int] = []

    def flaky(ctx):
        runs.append(ctx.job.attempts)
        if len(runs) < 3:
            raise OperationalError(
                'could not extend file "pg_tblspc/16384/PG_16/1/2": No space left on device'
            )
        return {"ok": True}

    jobs.register("flaky_test", run=flaky)
    try:
        job = jobs.job_submit(kind="flaky_test", owner=user, app=bank, enqueue=False)
        first = jobs.job_run(str(job.pk), worker="test:1")
        assert first.status == JobStatus.QUEUED and first.attempts == 1
        assert "disk was full" in first.error and "pg_tblspc" not in first.error
        with translation.override("de"):
            assert "Festplatte" in localize(first.error_message)
        second = jobs.job_run(str(job.pk), worker="test:1")
        assert second.status == JobStatus.FAILED and second.attempts == 2
        assert "JOBS_MAX_ATTEMPTS" in second.error and "pg_tblspc" not in second.error
        with translation.override("fr"):
            shown = jobs.job_data(second)["error"]
        assert "disque du serveur était plein" in shown
        # A new job retried once succeeds on its second attempt.
        again = jobs.job_submit(kind="flaky_test", owner=user, app=bank, enqueue=False)
        assert jobs.job_run(str(again.pk), worker="test:1").status == JobStatus.SUCCEEDED
    finally:
        jobs.KINDS.pop("flaky_test", None)


def test_a_query_fault_is_not_taken_for_an_outage():
    from django.db import OperationalError

    assert jobs.transient_problem(OperationalError("no such table: django_rq_dashboard")) is None
    assert jobs.transient_problem(OperationalError("database is locked")) == "database"


def test_options_huge_paging_numbers_and_the_admins_view_on_site_answer_no_500(
    settings, staff, bank
):
    settings.DEBUG = False
    client = Client(raise_request_exception=False)
    client.force_login(staff)
    for path in (
        f"/api/apps/{bank.pk}/evaluate",
        f"/api/apps/{bank.pk}/lint",
        "/api/apps/import",
        f"/api/apps/{bank.pk}/versions/1/restore",
    ):
        response = client.options(path)
        assert response.status_code == 200, (path, response.content)
    for query in ("limit=99999999999999999999", "offset=99999999999999999999", "limit=5000"):
        response = client.get(f"/api/apps/?{query}")
        assert response.status_code == 200, (query, response.content)
    # Content type 1 is django-rq's dashboard model, which has no table.
    from django.contrib.contenttypes.models import ContentType

    dashboard = ContentType.objects.get(app_label="django_rq", model="dashboard")
    assert client.get(f"/admin/r/{dashboard.pk}/1/").status_code == 404
    anonymous = Client(raise_request_exception=False)
    assert anonymous.get(f"/admin/r/{dashboard.pk}/1/").status_code == 302  # sign-in first
