"""A job's transient errors (docs/operations/jobs.md): what kind of passing problem an
exception is (the database or Redis away, a full disk, a lock timeout), the sentence the
user reads of it (never the raw error: host names, internal paths), and `db_retry`, which
retries the claim and the final write of a job on a database error. `jobs._after_transient`
queues the job again after a backoff, or fails it naming the problem."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable

from django.db import InterfaceError, OperationalError, connection
from django.utils.translation import gettext_noop

from agents.services.common import setting

logger = logging.getLogger("agents.jobs")

# What the user reads of a transient problem (the raw error, with its host names and paths,
# stays in the worker's log): one sentence per kind of problem, retried or failed.
PROBLEM_DATABASE, PROBLEM_QUEUE, PROBLEM_DISK, PROBLEM_LOCK = "database", "redis", "disk", "lock"
PROBLEM_CONNECTION = "connection"
_RETRIED = {
    PROBLEM_DATABASE: gettext_noop(
        "Attempt %(attempt)s stopped: the database was unavailable. Retried in %(seconds)s s."
    ),
    PROBLEM_QUEUE: gettext_noop(
        "Attempt %(attempt)s stopped: Redis was unavailable. Retried in %(seconds)s s."
    ),
    PROBLEM_DISK: gettext_noop(
        "Attempt %(attempt)s stopped: the server's disk was full. Retried in %(seconds)s s."
    ),
    PROBLEM_LOCK: gettext_noop(
        "Attempt %(attempt)s stopped: a database lock wait timed out. Retried in %(seconds)s s."
    ),
    PROBLEM_CONNECTION: gettext_noop(
        "Attempt %(attempt)s stopped: a service it needs was unreachable. Retried in %(seconds)s s."
    ),
}
_FAILED = {
    PROBLEM_DATABASE: gettext_noop(
        "The job failed: the database was unavailable on attempt %(attempt)s of "
        "%(max_attempts)s (JOBS_MAX_ATTEMPTS). The scenarios it finished are kept; run it "
        "again for the rest."
    ),
    PROBLEM_QUEUE: gettext_noop(
        "The job failed: Redis was unavailable on attempt %(attempt)s of %(max_attempts)s "
        "(JOBS_MAX_ATTEMPTS). The scenarios it finished are kept; run it again for the rest."
    ),
    PROBLEM_DISK: gettext_noop(
        "The job failed: the server's disk was full on attempt %(attempt)s of "
        "%(max_attempts)s (JOBS_MAX_ATTEMPTS). The scenarios it finished are kept; run it "
        "again for the rest."
    ),
    PROBLEM_LOCK: gettext_noop(
        "The job failed: a database lock wait timed out on attempt %(attempt)s of "
        "%(max_attempts)s (JOBS_MAX_ATTEMPTS). The scenarios it finished are kept; run it "
        "again for the rest."
    ),
    PROBLEM_CONNECTION: gettext_noop(
        "The job failed: a service it needs was unreachable on attempt %(attempt)s of "
        "%(max_attempts)s (JOBS_MAX_ATTEMPTS). The scenarios it finished are kept; run it "
        "again for the rest."
    ),
}
_DISK_FULL = ("no space left on device", "disk full", "could not extend file")
_LOCK_TIMEOUT = ("lock timeout", "lock_timeout", "canceling statement due to lock timeout")


def transient_problem(exc: BaseException) -> str | None:
    """What kind of transient problem `exc` is (one of the PROBLEM_* keys), or None when it
    is the job's own failure. Transient: the database or Redis unreachable or restarting, a
    full disk, a lock timeout, a deadlock, a refused connection (causes included)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        text = str(exc).lower()
        if (isinstance(exc, OSError) and exc.errno == 28) or any(w in text for w in _DISK_FULL):
            return PROBLEM_DISK
        if any(w in text for w in _LOCK_TIMEOUT) or "deadlock" in text:
            return PROBLEM_LOCK
        if isinstance(exc, InterfaceError) or (
            isinstance(exc, OperationalError) and _database_away(exc)
        ):
            return PROBLEM_DATABASE
        module = type(exc).__module__
        if module.startswith("redis"):
            return PROBLEM_QUEUE
        psycopg_error = module.startswith("psycopg") and type(exc).__name__ == "OperationalError"
        if psycopg_error and _database_away(exc):
            return PROBLEM_DATABASE
        if isinstance(exc, ConnectionError):
            return PROBLEM_CONNECTION
        exc = exc.__cause__ or exc.__context__
    return None


# SQLSTATE classes of a database that is away or busy, not of a wrong query: connection
# exceptions (08), insufficient resources (53: disk full, too many connections), operator
# intervention (57: shutting down, starting up, statement cancelled), transaction rollback
# (40: deadlock, serialization), lock not available (55P03).
_AWAY_CLASSES = ("08", "53", "57", "40")
# SQLite says what is wrong with the query in an OperationalError too: not transient.
_QUERY_FAULTS = ("no such table", "no such column", "has no column", "syntax error")


def _database_away(exc: BaseException) -> bool:
    cause = exc.__cause__ if exc.__cause__ is not None else exc
    code = getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None)
    if code:
        return code[:2] in _AWAY_CLASSES or code == "55P03"
    return not any(fault in str(exc).lower() for fault in _QUERY_FAULTS)


def db_retry[T](
    action: Callable[[], T], *, what: str = "", sleep: Callable[[float], None] = time.sleep
) -> T:
    """Run `action`; on a database error (connection lost, the database restarting) close
    the connection and try again with a backoff (0.2 s, doubling, at most 5 s apart) for
    up to ``JOBS_DB_RETRY_SECONDS``, then raise. Never inside a transaction (the whole
    transaction is lost with the connection): there it raises at once."""
    budget = float(setting("JOBS_DB_RETRY_SECONDS"))
    waited, delay = 0.0, 0.2
    while True:
        try:
            return action()
        except (OperationalError, InterfaceError) as exc:
            query_fault = isinstance(exc, OperationalError) and not _database_away(exc)
            if connection.in_atomic_block or waited >= budget or query_fault:
                raise
            logger.warning("%s: a database error (%s); retried in %.1f s", what or "db", exc, delay)
            with contextlib.suppress(Exception):
                connection.close()
            sleep(delay)
            waited += delay
            delay = min(delay * 2, 5.0)
