"""`manage.py evaluate` of Google's bella_notte, cold, as CI runs it (README, "Jobs").

Run on purpose (not part of the test suite):

    .venv/bin/python bench/evaluate_bench.py [--repeats 3] [--jobs 1,2]

Imports bella_notte (28 goldens, from the CX corpus cache, tests/cx_corpus.py) into a
throwaway SQLite database, then times ``manage.py evaluate <app>`` in a fresh process for
each ``--jobs`` value (cold: a new process, no memo, the sandbox started from nothing).
Beside it, a fixed reference measured in the same run: a pure-Python loop of 3 million
multiplications, so the figures can be read as ratios on a loaded or faster machine.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def reference_ms() -> float:
    started = time.perf_counter()
    sum(i * i for i in range(3_000_000))
    return (time.perf_counter() - started) * 1000


def _children_cpu_ms() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--jobs", default="1,2")
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="statecraft-bench-")
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{workdir}/bench.sqlite3",
        "DJANGO_SETTINGS_MODULE": "tests.settings",
    }
    os.environ.update(env)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from agents.core.cx.app import zip_bytes
    from agents.demo import ensure_demo_user
    from agents.models import Scenario
    from agents.services import exchange
    from tests.cx_corpus import cx_corpus_root
    from tests.cx_tree import folder_files

    user = ensure_demo_user()
    files = folder_files(cx_corpus_root() / "examples" / "bella_notte")
    app, _, _ = exchange.app_import_file(owner=user, data=zip_bytes(files))
    Scenario.objects.filter(agent__app=app).update(now="2026-06-01T12:00:00")
    print(f"bella_notte: {Scenario.objects.filter(agent__app=app).count()} scenarios")
    for jobs in args.jobs.split(","):
        times, refs, cpus = [], [], []
        for _ in range(args.repeats):
            refs.append(reference_ms())
            cpu_before = _children_cpu_ms()
            started = time.perf_counter()
            subprocess.run(
                [sys.executable, "manage.py", "evaluate", str(app.pk), "--jobs", jobs],
                cwd=ROOT,
                env=env,
                capture_output=True,
                check=False,
            )
            times.append((time.perf_counter() - started) * 1000)
            cpus.append(_children_cpu_ms() - cpu_before)
        t, r = statistics.median(times), statistics.median(refs)
        runs = ", ".join(f"{x:.0f}" for x in times)
        print(
            f"evaluate --jobs {jobs}: {t:.0f} ms  (reference loop {r:.0f} ms; ratio {t / r:.1f})"
            f"  runs {runs} ms; best {min(times) / r:.1f}x; CPU (the command and the"
            f" children it reaped; the jail's processes die with it, mostly uncounted)"
            f" {statistics.median(cpus):.0f} ms; load {os.getloadavg()[0]:.1f}"
        )


if __name__ == "__main__":
    main()
