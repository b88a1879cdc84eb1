"""A real worker process for tests: `manage.py worker` on the test database, whose output
is read line by line with a deadline (the tests wait for what it says, never for a time)."""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent
# About 0.3 s of work per call, whatever the machine: it watches the clock.
SLOW_TOOL = (
    "import datetime\n"
    "def LookupBalance(account_id=''):\n"
    "    start = datetime.datetime.now()\n"
    "    while (datetime.datetime.now() - start).total_seconds() < 0.3:\n"
    "        pass\n"
    "    return {'balance': 1}\n"
)


def test_database_url() -> str:
    """`DATABASE_URL` of the database this test runs on (SQLite's file, or PostgreSQL's
    test database), for a process of its own."""
    db = connection.settings_dict
    if db["ENGINE"] == "django.db.backends.sqlite3":
        return f"sqlite:///{db['NAME']}"
    from urllib.parse import quote

    auth = quote(db.get("USER") or "")
    if db.get("PASSWORD"):
        auth += ":" + quote(db["PASSWORD"])
    host = db.get("HOST") or "localhost"
    port = f":{db['PORT']}" if db.get("PORT") else ""
    return f"postgres://{auth + '@' if auth else ''}{host}{port}/{db['NAME']}"


class Worker:
    """`manage.py worker` in its own process, on the test database."""

    def __init__(self, interval: float = 0.05, **env: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "manage.py", "worker", f"--interval={interval}"],
            cwd=ROOT,
            env={
                **os.environ,
                "DJANGO_SETTINGS_MODULE": "tests.settings",
                "DATABASE_URL": test_database_url(),
                "PYTHONUNBUFFERED": "1",
                **env,
            },
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            bufsize=0,
            start_new_session=True,
        )
        self.seen: list[str] = []
        self.cursor = 0  # lines before it were matched by an earlier wait
        self._partial = b""  # the start of a line not ended yet
        self._eof = False

    def wait_for_progress(self, job_id: object, total: int, timeout: float = 240) -> str:
        """The first line saying some of the job's `total` pieces are done: the pieces of a
        worker's threads may end together, so the count can go from 0 to 2 at once."""
        pattern = re.compile(rf"job {job_id}: [1-9][0-9]* of {total} done")
        while True:
            line = self.wait_for(f"job {job_id}: ", timeout)
            if pattern.search(line):
                return line

    def wait_for(self, text: str, timeout: float = 240) -> str:
        """The next line containing `text`; fails with all output at the deadline.

        The pipe is read with os.read into a buffer of our own: a buffered readline()
        after select() may swallow several lines at once, and select() then never says
        the later ones are there (it once made a worker look silent)."""
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while True:
                for i in range(self.cursor, len(self.seen)):
                    if text in self.seen[i]:
                        self.cursor = i + 1
                        return self.seen[i]
                self.cursor = len(self.seen)
                left = deadline - time.monotonic()
                if self._eof or left <= 0 or not sel.select(left):
                    break
                chunk = os.read(fd, 65536)
                if not chunk:
                    self._eof = True
                    chunk = b"\n" if self._partial else b""
                self._partial += chunk
                *lines, self._partial = self._partial.split(b"\n")
                self.seen += [line.decode(errors="replace") + "\n" for line in lines]
        said = "".join(self.seen) + self._partial.decode(errors="replace")
        raise AssertionError(f"no line with {text!r}; the worker said:\n{said}")

    def kill(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()
        self.proc.stdout.close()


def slow_app(bank, scenarios: int, calls: int = 1) -> int:
    """The bank demo with `scenarios` more scenarios of `calls` slow tool calls each (each
    call its own arguments: nothing is memoised); returns how many scenarios it has."""
    from agents import services

    services.tool_update(tool=bank.tools.get(), python_code=SLOW_TOOL)
    agent = bank.agents.get()
    for i in range(scenarios):
        services.scenario_save(
            agent=agent,
            name=f"Slow {i}",
            steps_script="user: hi\n"
            + "\n".join(f'tool: LookupBalance {{"account_id": "{i}-{c}"}}' for c in range(calls)),
        )
    return bank.agents.get().scenarios.count()


@contextlib.contextmanager
def redis_queue(settings, url: str) -> Iterator[None]:
    """This test process enqueues on the Redis at `url` (a db of the test's own, emptied
    before and after) as a web process with TASKS_BACKEND=rq does; skips without Redis.
    Start the worker with ``workers(TASKS_BACKEND="rq", REDIS_URL=url)``."""
    redis = pytest.importorskip("redis")
    client = redis.Redis.from_url(url)
    try:
        client.ping()
    except redis.exceptions.ConnectionError:
        pytest.skip(f"no Redis at {url}")
    client.flushdb()
    from django.tasks import task_backends

    settings.TASKS_BACKEND = "rq"
    settings.TASKS = {"default": {"BACKEND": "django_tasks_rq.RQBackend", "QUEUES": ["default"]}}
    settings.RQ_QUEUES = {"default": {"URL": url, "DEFAULT_TIMEOUT": 600}}
    _forget_backends(task_backends)
    try:
        yield
    finally:
        _forget_backends(task_backends)
        client.flushdb()


def _forget_backends(handler) -> None:
    """Forget the configured task backends (the TASKS setting changed)."""
    from asgiref.local import Local

    handler.__dict__.pop("settings", None)
    handler._settings = None
    handler._connections = Local(handler.thread_critical)
