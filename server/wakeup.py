"""An idle worker of the database queue wakes when a job is queued, instead of at its
next look at the queue (docs/operations/jobs.md, "Waking the workers").

django-tasks-db's worker looks at the queue, then sleeps ``--interval`` seconds when it
found nothing: a job queued meanwhile waited up to that long for a worker (about half of
it on average), which a live run's first streamed token paid on top of the model's own
time. Here every enqueue (Django's ``task_enqueued`` signal) wakes the idle workers:

- on PostgreSQL, with ``NOTIFY statecraft_jobs`` (sent at the commit): each worker
  LISTENs on a connection of its own and wakes on any machine that shares the database;
- otherwise (SQLite: one machine), with a datagram to each worker's Unix socket in
  ``JOBS_WAKE_DIR`` (default a folder per database under the system's temporary folder,
  mode 0700): a socket whose worker is gone is removed by the next sender.

RQ needs none of it: its workers block on Redis and take a job the moment it is pushed.
The interval stays as the fallback (a wake-up lost, another machine on SQLite): a worker
still looks at the queue at least that often. A wake-up for nothing costs one look.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import select
import socket
import tempfile
import uuid
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection, transaction

logger = logging.getLogger("agents.jobs")

CHANNEL = "statecraft_jobs"


def wake_dir() -> Path:
    """Where the workers of this database keep their wake-up sockets."""
    configured = getattr(settings, "JOBS_WAKE_DIR", "")
    if configured:
        return Path(configured)
    db = connection.settings_dict
    identity = f"{connection.vendor}|{db.get('NAME')}|{db.get('HOST') or ''}|{db.get('PORT') or ''}"
    digest = hashlib.sha256(identity.encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"statecraft-wake-{digest}"


def _postgres() -> bool:
    return connection.vendor == "postgresql"


def wake_workers(**kwargs: Any) -> None:
    """The ``task_enqueued`` receiver: wake the idle workers once the job is committed."""
    if getattr(settings, "TASKS_BACKEND", "") != "database":
        return
    transaction.on_commit(_send, robust=True)


def _send() -> None:
    try:
        if _postgres():
            with connection.cursor() as cursor:
                cursor.execute(f"NOTIFY {CHANNEL}")
            return
        folder = wake_dir()
        if not folder.is_dir():
            return
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sender:
            sender.setblocking(False)
            for path in folder.glob("*.sock"):
                try:
                    sender.sendto(b"job", str(path))
                except (ConnectionRefusedError, FileNotFoundError):
                    path.unlink(missing_ok=True)  # its worker is gone
                except OSError:  # its buffer is full: it has wake-ups waiting already
                    pass
    except Exception as exc:  # a wake-up lost: the worker's interval still finds the job
        logger.warning("could not wake the workers (%s); they find the job at their interval", exc)


class Waker:
    """A worker's side: `wait(seconds)` returns early when a job is queued."""

    def __init__(self) -> None:
        self.listener: Any = None
        self.sock: socket.socket | None = None
        self.path: Path | None = None
        if _postgres():
            import psycopg

            params = connection.get_connection_params()
            self.listener = psycopg.connect(**params, autocommit=True)
            self.listener.execute(f"LISTEN {CHANNEL}")
            return
        folder = wake_dir()
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.path = folder / f"{os.getpid()}-{uuid.uuid4().hex[:8]}.sock"
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(self.path))
        self.sock.setblocking(False)

    def fileno(self) -> int:
        return self.listener.fileno() if self.listener is not None else self.sock.fileno()

    def wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`; True when woken by a queued job."""
        ready, _, _ = select.select([self.fileno()], [], [], max(seconds, 0.0))
        if not ready:
            return False
        if self.listener is not None:
            for _ in self.listener.notifies(timeout=0):
                pass
        else:
            with contextlib.suppress(BlockingIOError):
                while self.sock.recv(64):
                    pass
        return True

    def close(self) -> None:
        if self.listener is not None:
            with contextlib.suppress(Exception):
                self.listener.close()
        if self.sock is not None:
            self.sock.close()
            if self.path is not None:
                self.path.unlink(missing_ok=True)


class WakeableTime:
    """What django-tasks-db's worker module sees as ``time``: its ``sleep`` between looks
    at the queue is the waker's (see `install`); anything else is the real module's."""

    def __init__(self, waker: Waker) -> None:
        import time

        self._time = time
        self.waker = waker

    def sleep(self, seconds: float) -> None:
        self.waker.wait(seconds)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._time, name)


def install(waker: Waker) -> None:
    """The database worker's sleep between looks at the queue becomes `waker`'s wait
    (django-tasks-db's loop calls ``time.sleep(interval)`` when it found no task)."""
    from django_tasks_db.management.commands import db_worker

    db_worker.time = WakeableTime(waker)  # type: ignore[attr-defined]
