"""manage.py worker: run jobs in the foreground (docs/operations/jobs.md); `make worker` calls it.

The worker of the configured backend (``TASKS_BACKEND``): the database queue's
``db_worker`` loop, or an RQ worker on Redis (``REDIS_URL``) that runs each job in its own
process (`server.rq_worker.WarmWorker`); either keeps warm sandbox sessions between jobs.
Before taking work, and then in a loop of its own, it writes its heartbeat
(`WorkerHeartbeat`, every ``JOBS_HEARTBEAT_SECONDS``: `/healthz` and the admin show the
workers seen), recovers jobs whose worker died (`jobs_recover`: queued again, or failed
with the reason) and enqueues again queued jobs whose queue entry is gone (`jobs_reap`,
after ``JOBS_REQUEUE_SECONDS``). The loop survives a database or Redis outage: each round's
error is logged and the next round tries again. Run as many as you like, on as many
machines as share the database (and the Redis): a job is claimed by exactly one. An idle
database-queue worker is woken when a job is queued (`server.wakeup`), so a job starts at
once rather than at the worker's next look at the queue.
"""

from __future__ import annotations

import logging
import signal
import threading
import time

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser
from django.db import close_old_connections, connection, connections

from agents.llm import registry
from agents.services import jobs, sandbox_door
from server import wakeup

logger = logging.getLogger("agents.jobs")


class Command(BaseCommand):
    help = "Run a worker for jobs (Run all, evaluate, version diffs) in the foreground."
    # The checks of what a worker uses, not the URL configuration's: importing every view
    # and the API's schema was ~2.5 s of CPU at each worker's start, spent while its first
    # jobs ran (a job that needs a URL imports it then).
    requires_system_checks = ["models", "sandbox", "translation", "caches"]

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--batch", action="store_true", help="run the queued jobs, then exit")
        parser.add_argument(
            "--interval",
            type=float,
            default=0.2,
            help="seconds between looks at an empty database queue when no queued job "
            "woke the worker (default 0.2)",
        )

    def _recover(self) -> None:
        touched = jobs.jobs_recover()
        for job in touched:
            self.stdout.write(f"recovered job {job.pk} ({job.kind}) left by {job.worker}")

    def _reap(self) -> None:
        for job in jobs.jobs_reap():
            self.stdout.write(f"requeued job {job.pk} ({job.kind}): its queue entry was gone")

    def _round(self, name: str, queue: str, clock: dict[str, float]) -> None:
        """One round of the keeper loop: the heartbeat always; recovery and the reaper when
        their interval has passed. An error (the database or Redis away) is logged; the
        next round tries again, so the loop never dies of an outage."""
        now = time.monotonic()
        beat = float(jobs.setting("JOBS_HEARTBEAT_SECONDS"))
        steps = [("heartbeat", lambda: jobs.worker_beat(name, queue=queue), beat)]
        every = max(float(jobs.setting("JOBS_STALE_SECONDS")) / 2, 1.0)
        steps.append(("recover", self._recover, every))
        requeue = max(min(float(jobs.setting("JOBS_REQUEUE_SECONDS")) / 2, every), 0.5)
        steps.append(("reap", self._reap, requeue))
        # Heartbeat rows of workers gone for a week (one row per worker process ever
        # started), once an hour.
        steps.append(("forget", jobs.forget_old_workers, 3600.0))
        for step, action, interval in steps:
            if now - clock.get(step, float("-inf")) < interval:
                continue
            try:
                action()
                clock[step] = now
            except Exception as exc:
                logger.warning("worker %s: %s failed (%s); tried again next round", name, step, exc)
            finally:
                close_old_connections()
                connection.close()

    def handle(self, *args: object, **options: object) -> None:
        # Warm sandbox sessions kept between jobs, one user's at a time each
        # (docs/operations/jobs.md).
        sandbox_door.use_session_pool(int(jobs.setting("SANDBOX_POOL_SIZE")))
        # The model SDKs imported while the worker starts, not by its first live job.
        threading.Thread(target=registry.warm_sdks, name="warm-sdks", daemon=True).start()
        name, queue = jobs.this_worker(), settings.TASKS_BACKEND
        clock: dict[str, float] = {}
        self._round(name, queue, clock)
        stop = threading.Event()
        tick = min(max(float(jobs.setting("JOBS_HEARTBEAT_SECONDS")), 0.2), 1.0)

        def keep_going() -> None:
            while not stop.wait(tick):
                self._round(name, queue, clock)

        threading.Thread(target=keep_going, name="jobs-keeper", daemon=True).start()
        backend = settings.TASKS_BACKEND
        waker: wakeup.Waker | None = None
        if backend != "rq":
            # A queued job wakes it at once (LISTEN/NOTIFY on PostgreSQL, a local socket
            # otherwise; listening before it says it is up); the interval is the fallback.
            try:
                waker = wakeup.Waker()
                wakeup.install(waker)
            except Exception as exc:  # the database away: it looks at its interval only
                logger.warning("worker %s: no wake-ups (%s); looks every interval", name, exc)
        self.stdout.write(f"worker {jobs.this_worker()} on the {backend} queue", ending="\n")
        self.stdout.flush()
        connections.close_all()  # each job opens its own (server.rq_worker, db_worker)
        try:
            if backend == "rq":
                # Jobs in this process, not a forked horse each: the pool stays warm.
                rq_args = ["default", "--job-class", "django_tasks_rq.backend.Job"]
                rq_args += ["--worker-class", "server.rq_worker.WarmWorker"]
                # A retry after a transient error is deferred: the scheduler moves it back
                # to the queue when its time comes.
                rq_args.append("--with-scheduler")
                if options["batch"]:
                    rq_args.append("--burst")
                call_command("rqworker", *rq_args)
            else:
                db_args = [
                    "--queue-name=default",
                    f"--interval={options['interval']}",
                    "--no-reload",
                    "--no-startup-delay",
                ]
                if options["batch"]:
                    db_args.append("--batch")
                # SIGTERM/SIGINT: the db worker finishes the job it runs, then exits.
                signal.signal(signal.SIGTERM, signal.default_int_handler)
                call_command("db_worker", *db_args, verbosity=int(options["verbosity"]))
        finally:
            stop.set()
            if waker is not None:
                waker.close()
            try:
                jobs.worker_beat(name, queue=queue, stopped=True)
            except Exception as exc:  # the database is away: the row ages out instead
                logger.warning("worker %s: could not record its stop (%s)", name, exc)
