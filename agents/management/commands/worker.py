"""manage.py worker: run jobs in the foreground (docs/operations/jobs.md); `make worker` calls it.

The worker of the configured backend (``TASKS_BACKEND``): the database queue's
``db_worker`` loop, or an RQ worker on Redis (``REDIS_URL``) that runs each job in its own
process (`agents.rq_worker.WarmWorker`); either keeps warm sandbox sessions between jobs.
Before taking work, and then every half ``JOBS_STALE_SECONDS``, it recovers jobs whose
worker died (`jobs_recover`: queued again, or failed with the reason). Run as many as you
like, on as many machines as share the database (and the Redis): a job is claimed by
exactly one.
"""

from __future__ import annotations

import signal
import threading

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser
from django.db import close_old_connections, connection, connections

from agents.services import jobs, sandbox_door


class Command(BaseCommand):
    help = "Run a worker for jobs (Run all, evaluate, version diffs) in the foreground."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--batch", action="store_true", help="run the queued jobs, then exit")
        parser.add_argument(
            "--interval",
            type=float,
            default=0.2,
            help="seconds between looks at an empty database queue (default 0.2)",
        )

    def _recover(self) -> None:
        touched = jobs.jobs_recover()
        for job in touched:
            self.stdout.write(f"recovered job {job.pk} ({job.kind}) left by {job.worker}")

    def handle(self, *args: object, **options: object) -> None:
        # Warm sandbox sessions kept between jobs, one user's at a time each
        # (docs/operations/jobs.md).
        sandbox_door.use_session_pool(int(getattr(settings, "SANDBOX_POOL_SIZE", 2)))
        self._recover()
        stop = threading.Event()
        every = max(float(jobs.setting("JOBS_STALE_SECONDS")) / 2, 1.0)

        def keep_recovering() -> None:
            while not stop.wait(every):
                try:
                    self._recover()
                finally:
                    close_old_connections()
                    connection.close()

        threading.Thread(target=keep_recovering, name="jobs-recover", daemon=True).start()
        backend = settings.TASKS_BACKEND
        self.stdout.write(f"worker {jobs.this_worker()} on the {backend} queue", ending="\n")
        self.stdout.flush()
        connections.close_all()  # each job opens its own (agents.rq_worker, db_worker)
        try:
            if backend == "rq":
                # Jobs in this process, not a forked horse each: the pool stays warm.
                rq_args = ["default", "--job-class", "django_tasks_rq.backend.Job"]
                rq_args += ["--worker-class", "agents.rq_worker.WarmWorker"]
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
