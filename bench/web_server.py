"""What the benches that drive a real web server share (bench/healthz_under_load.py,
bench/healthz_jobs_bench.py): gunicorn started as the README deploys it (3 workers x 4
threads, 30 s timeout), the wait for its /healthz, and a signed-in demo user.

Not a bench itself; the benches import it as a sibling module (`python bench/x.py`).
"""

from __future__ import annotations

import http.cookiejar
import os
import re
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


def start_gunicorn(env: dict[str, str], port: int) -> subprocess.Popen:
    """gunicorn on 127.0.0.1:`port` with `env`, as the README's deployment runs it; up once
    /healthz answers (`wait_until_up`)."""
    return subprocess.Popen(
        [
            *(PY, "-m", "gunicorn", "designer.wsgi", "--bind", f"127.0.0.1:{port}"),
            *("--workers", "3", "--threads", "4", "--timeout", "30"),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def env_for(workdir: str, extra: dict[str, str]) -> dict[str, str]:
    """The environment of a bench's server and workers: DEBUG, a throwaway SQLite in
    `workdir` unless DATABASE_URL names one, limits out of the way, and `extra`."""
    return {
        **os.environ,
        "DEBUG": "true",
        "DATABASE_URL": os.environ.get("DATABASE_URL", f"sqlite:///{workdir}/db.sqlite3"),
        "RATE_LIMITS": "simulate=100000/m",
        "JOBS_MAX_ACTIVE_PER_USER": "100",
        "DJANGO_SETTINGS_MODULE": "designer.settings",
        "PYTHONPATH": str(ROOT),
        **extra,
    }


def wait_until_up(base: str, tries: int = 200) -> None:
    """Poll `base`/healthz every 100 ms until it answers (at most `tries` times)."""
    for _ in range(tries):
        try:
            urllib.request.urlopen(f"{base}/healthz", timeout=1)
            return
        except OSError:
            time.sleep(0.1)


def sign_in(base: str) -> tuple[urllib.request.OpenerDirector, http.cookiejar.CookieJar]:
    """An opener signed in as the demo user (`load_demo`), and its cookie jar."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    page = opener.open(f"{base}/accounts/login/").read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    form = {"username": "demo", "password": "statecraft-demo", "csrfmiddlewaretoken": token}
    opener.open(f"{base}/accounts/login/", urllib.parse.urlencode(form).encode())
    return opener, jar
