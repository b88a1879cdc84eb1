"""/healthz while three Run-all jobs of bella_notte and 14 concurrent simulations run.

gunicorn (3 workers x 4 threads, as the README deploys it) and two `manage.py worker`
processes on the database given by DATABASE_URL (default: a throwaway SQLite; CI and
production: PostgreSQL) and the queue given by TASKS_BACKEND (database, or rq with
REDIS_URL). Imports bella_notte (the CX corpus cache, tests/cx_corpus.py), signs in as
the demo user, presses Run all three times (three jobs: the workers run them), starts 14
simulations of bella_notte scenarios at once in the designer, and polls /healthz every
50 ms until the simulations and the jobs end. Prints p50/p99/worst of /healthz, the
simulations' times and the jobs' times. Run on purpose: .venv/bin/python
bench/healthz_jobs_bench.py (not a test; ~1 minute on this machine).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request

from web_server import PY, ROOT, sign_in, start_gunicorn, wait_until_up

PORT = int(os.environ.get("PORT", "8766"))
BASE = f"http://127.0.0.1:{PORT}"
SETUP = """
from agents.services import exchange
from agents.core.cx.app import zip_bytes
from agents.demo import ensure_demo_user
from agents.models import Scenario
from tests.cx_corpus import cx_corpus_root
from tests.cx_tree import folder_files
user = ensure_demo_user()
files = folder_files(cx_corpus_root() / "examples" / "bella_notte")
app, _, _ = exchange.app_import_file(owner=user, data=zip_bytes(files))
Scenario.objects.filter(agent__app=app).update(now="2026-06-01T12:00:00")
pairs = [(s.agent_id, s.pk) for s in Scenario.objects.filter(agent__app=app).order_by("pk")]
print(app.pk, pairs[:14])
"""


def main() -> None:
    workdir = tempfile.mkdtemp(prefix="statecraft-healthz-jobs-")
    env = {
        **os.environ,
        "DEBUG": "true",
        "DATABASE_URL": os.environ.get("DATABASE_URL", f"sqlite:///{workdir}/db.sqlite3"),
        "RATE_LIMITS": "simulate=100000/m",
        "JOBS_MAX_ACTIVE_PER_USER": "100",
        "DJANGO_SETTINGS_MODULE": "designer.settings",
        "PYTHONPATH": str(ROOT),
    }
    manage = [PY, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "--no-input"], env=env, check=True, capture_output=True)
    subprocess.run([*manage, "load_demo"], env=env, check=True, capture_output=True)
    out = (
        subprocess.run(
            [*manage, "shell", "-c", SETUP], env=env, check=True, capture_output=True, text=True
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    app_id, _, rest = out.partition(" ")
    pairs = json.loads(rest.replace("(", "[").replace(")", "]"))
    procs = [start_gunicorn(env, PORT)]
    procs += [
        subprocess.Popen(
            [*manage, "worker"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(2)
    ]
    try:
        wait_until_up(BASE)
        opener, jar = sign_in(BASE)
        csrf = next(c.value for c in jar if c.name == "csrftoken")
        job_ids = []
        for _ in range(3):
            request = urllib.request.Request(
                f"{BASE}/api/apps/{app_id}/evaluate",
                data=b"",
                method="POST",
                headers={"X-CSRFToken": csrf, "Referer": BASE},
            )
            job_ids.append(json.loads(opener.open(request).read())["id"])
        sims: list[float] = []
        refused: list[float] = []  # 429: over SIMULATION_MAX_CONCURRENT in that process

        def simulate(agent_id: int, scenario_id: int) -> None:
            started = time.monotonic()
            try:
                opener.open(
                    f"{BASE}/apps/{app_id}/agents/{agent_id}/simulate?scenario={scenario_id}",
                    timeout=120,
                ).read()
            except urllib.error.HTTPError as error:
                if error.code != 429:
                    raise
                refused.append(time.monotonic() - started)
                return
            sims.append(time.monotonic() - started)

        runs = [threading.Thread(target=simulate, args=pair) for pair in pairs]
        started = time.monotonic()
        for run in runs:
            run.start()
        latencies: list[float] = []
        when: list[tuple[float, float]] = []  # (latency, seconds into the run)
        finished: dict[str, float] = {}
        while any(run.is_alive() for run in runs) or len(finished) < len(job_ids):
            t = time.monotonic()
            urllib.request.urlopen(f"{BASE}/healthz", timeout=60).read()
            latencies.append(time.monotonic() - t)
            when.append((latencies[-1], t - started))
            for job_id in job_ids:
                if job_id not in finished:
                    body = json.loads(opener.open(f"{BASE}/api/jobs/{job_id}/").read())
                    if body["status"] not in ("queued", "running"):
                        finished[job_id] = time.monotonic() - started
            time.sleep(0.05)
        latencies.sort()
        p99 = latencies[math.ceil(len(latencies) * 0.99) - 1]  # nearest rank
        print(
            f"simulations: {len(sims)} ran, median {statistics.median(sims):.1f} s, "
            f"worst {max(sims):.1f} s; {len(refused)} refused with 429"
            + (f" (answered in at most {max(refused) * 1000:.0f} ms)" if refused else "")
        )
        print(f"jobs: {', '.join(f'{s:.1f} s' for s in sorted(finished.values()))}")
        print(
            f"/healthz: {len(latencies)} polls, p50 {statistics.median(latencies) * 1000:.0f} ms, "
            f"p99 {p99 * 1000:.0f} ms, worst {latencies[-1] * 1000:.0f} ms"
        )
        slowest = sorted(when, reverse=True)[:3]
        print("slowest polls:", ", ".join(f"{s * 1000:.0f} ms at {at:.1f} s" for s, at in slowest))
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=30)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
