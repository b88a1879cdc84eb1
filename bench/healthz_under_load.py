"""Three worker-holding simulations at once under gunicorn, while /healthz is polled.

Starts gunicorn (3 workers x 4 threads, as the README deploys it) on a throwaway SQLite
database with the demo data, gives the Bank demo's tool a slow body (0.5 s per call) and
a 40-step scenario, signs in as the demo user, starts three simulations at once and polls
/healthz every 100 ms until they end. Prints each simulation's time and the worst /healthz
latency. Run: .venv/bin/python bench/healthz_under_load.py  (not a test: it takes ~15 s)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.request

from web_server import PY, ROOT, sign_in, start_gunicorn, wait_until_up

PORT = int(os.environ.get("PORT", "8765"))
BASE = f"http://127.0.0.1:{PORT}"
SLOW = (
    "import datetime\n"
    "def LookupBalance(account_id=''):\n"
    "    start = datetime.datetime.now()\n"
    "    while (datetime.datetime.now() - start).total_seconds() < 0.5:\n"
    "        pass\n"
    "    return {'balance': 1}\n"
)
SETUP = f"""
from django.contrib.auth import get_user_model
from agents import services
from agents.models import AgentApp
app = AgentApp.objects.get(name="Bank demo")
services.tool_update(tool=app.tools.get(), python_code={SLOW!r})
agent = app.agents.get()
script = "\\n".join(f'tool: LookupBalance {{{{"account_id": "{{i}}"}}}}' for i in range(40))
scenario = services.scenario_save(agent=agent, name="Slow", steps_script=script)
print(app.pk, agent.pk, scenario.pk)
"""


def main() -> None:
    workdir = tempfile.mkdtemp(prefix="statecraft-healthz-")
    env = {
        **os.environ,
        "DEBUG": "true",
        "DATABASE_URL": f"sqlite:///{workdir}/db.sqlite3",
        "RATE_LIMITS": "simulate=100000/m",
        # The three may land on one gunicorn worker; the per-process cap (2 by default,
        # docs/designer/sandbox.md, SIMULATION_MAX_CONCURRENT) would refuse the third with
        # a 429. This bench
        # is about the time cap and /healthz, so it lets three run in one process.
        "SIMULATION_MAX_CONCURRENT": os.environ.get("SIMULATION_MAX_CONCURRENT", "3"),
    }
    manage = [PY, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "--no-input"], env=env, check=True, capture_output=True)
    subprocess.run([*manage, "load_demo"], env=env, check=True, capture_output=True)
    ids = subprocess.run(
        [*manage, "shell", "-c", SETUP], env=env, check=True, capture_output=True, text=True
    ).stdout.split()
    app_id, agent_id, scenario_id = ids[-3:]
    server = start_gunicorn(env, PORT)
    try:
        wait_until_up(BASE, tries=100)
        opener, _ = sign_in(BASE)
        url = f"{BASE}/apps/{app_id}/agents/{agent_id}/simulate?scenario={scenario_id}"
        results: list[tuple[float, bool]] = []

        def simulate() -> None:
            started = time.monotonic()
            body = opener.open(url, timeout=60).read().decode()
            # The simulation's limits: its CPU time (SIMULATION_MAX_SECONDS) or its
            # wall-clock backstop (SIMULATION_MAX_WALL_SECONDS), each with its message.
            capped = "time limit of" in body or "wall-clock limit of" in body
            results.append((time.monotonic() - started, capped))

        runs = [threading.Thread(target=simulate) for _ in range(3)]
        for run in runs:
            run.start()
        worst = 0.0
        polls = 0
        while any(run.is_alive() for run in runs):
            started = time.monotonic()
            urllib.request.urlopen(f"{BASE}/healthz", timeout=30).read()
            worst = max(worst, time.monotonic() - started)
            polls += 1
            time.sleep(0.1)
        for run in runs:
            run.join()
        for seconds, capped in results:
            print(f"simulation: {seconds:.1f} s, stopped at its cap with a message: {capped}")
        print(f"/healthz: {polls} polls during the runs, worst {worst * 1000:.0f} ms")
    finally:
        server.terminate()
        server.wait(timeout=10)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
