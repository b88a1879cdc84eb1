"""Health check and favicon."""

from __future__ import annotations

import functools
import logging
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.templatetags.static import static
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

logger = logging.getLogger(__name__)


def _database() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception:  # any database failure means "not healthy"
        # The error text (host names, users) goes to the log, never to the caller.
        logger.exception("healthz: the database check failed")
        return "unavailable"
    return "ok"


def _cache() -> str:
    """ "ok" / "unavailable" for a shared cache (Redis); "local" for a per-process one."""
    ping = getattr(cache, "ping", None)
    if ping is None:
        return "local"
    try:
        ping()
    except Exception:
        logger.warning("healthz: the cache (Redis) does not answer", exc_info=True)
        return "unavailable"
    return "ok"


@functools.cache
def _queue_client(url: str) -> Any:
    import redis

    # Seconds, not redis-py's retries with backoff: a health check answers fast.
    return redis.Redis.from_url(url, socket_connect_timeout=1.0, socket_timeout=1.0, retry=None)


def _queue(database: str) -> str:
    """The job queue: RQ's Redis pinged; the database queue is as well as the database."""
    backend = settings.TASKS_BACKEND
    if backend == "immediate":
        return "immediate"
    if backend != "rq":
        return database
    url = settings.RQ_QUEUES["default"]["URL"]
    try:
        _queue_client(url).ping()
    except Exception:
        logger.warning("healthz: the queue's Redis does not answer", exc_info=True)
        return "unavailable"
    return "ok"


def _workers() -> dict[str, Any]:
    from agents.services import jobs

    seen = jobs.workers_seen()
    last = max((w.seen_at for w in seen), default=None)
    return {"seen": len(seen), "last_heartbeat": last.isoformat() if last else None}


@never_cache
@require_safe
def healthz(request: HttpRequest) -> HttpResponse:
    """For load balancers and operators (docs/operations/health-and-backups.md): the
    database, the cache, the job queue, and the job workers seen in the last minute.
    503 when the app cannot serve: the database or the configured queue is down. A cache
    away or no worker seen is "degraded" (200): pages still answer. A handful of cheap
    calls (SELECT 1, two Redis PINGs, one indexed query), never a job or a page. HEAD
    answers as GET does, without the body (balancers that probe with HEAD)."""
    database = _database()
    body: dict[str, Any] = {
        "status": "ok",
        "database": database,
        "cache": _cache(),
        "queue": _queue(database),
    }
    if database == "ok" and body["queue"] != "immediate":
        try:
            body["workers"] = _workers()
        except Exception:
            logger.exception("healthz: reading the workers' heartbeats failed")
            body["workers"] = {"seen": 0, "last_heartbeat": None}
    if database != "ok" or body["queue"] == "unavailable":
        body["status"] = "error"
        return JsonResponse(body, status=503)
    if body["cache"] == "unavailable" or body.get("workers", {"seen": 1})["seen"] == 0:
        body["status"] = "degraded"
    return JsonResponse(body)


@require_safe
def favicon(request: HttpRequest) -> HttpResponse:
    """/favicon.ico, which browsers ask for whatever the page links: the SVG icon (resolved
    per request, so the static manifest is read only once it exists)."""
    return redirect(static("favicon.svg"), permanent=True)
