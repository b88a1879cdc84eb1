"""CI: the README's first command on a runtime-only install, as a newcomer runs it.

Starts `make run` with its own virtualenv (the runtime set of uv.lock, no test extra), its own
SQLite database and a free port, in its own process group; waits for /healthz; signs in as the
demo user; opens the designer page of a demo app; then stops the server and the worker by the
process group's id. It fails on a missing runtime dependency (the server or the worker does not
start), on a warning printed by the install, or on the reloader's banner printed twice.
Standard library only: it runs with whatever python3 the machine has.
"""

from __future__ import annotations

import contextlib
import http.cookiejar
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
START_TIMEOUT_S = 600  # a first install on a cold cache, then migrate and the demo


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def fail(message: str, log: Path) -> None:
    print(f"smoke: FAILED: {message}", file=sys.stderr)
    print(f"--- the end of `make run`'s output ({log}):", file=sys.stderr)
    print("\n".join(log.read_text(errors="replace").splitlines()[-60:]), file=sys.stderr)
    raise SystemExit(1)


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="statecraft-smoke-"))
    venv, log = work / "venv", work / "make-run.log"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{work / 'db.sqlite3'}",
        "PYTHONUNBUFFERED": "1",
    }
    for name in ("CACHE_URL", "REDIS_URL", "TASKS_BACKEND", "VIRTUAL_ENV"):
        env.pop(name, None)
    print(f"smoke: make run VENV={venv} PORT={port} (runtime dependencies only)")
    with log.open("wb") as out:
        server = subprocess.Popen(
            ["make", "--no-print-directory", "run", f"VENV={venv}", f"PORT={port}"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stopped as one below
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if server.poll() is not None:
                fail(f"`make run` ended with status {server.returncode}", log)
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=5) as answer:
                    if answer.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                fail(f"/healthz did not answer within {START_TIMEOUT_S} s", log)
            time.sleep(1)
        print("smoke: /healthz answers")

        installed = subprocess.run(
            [str(venv / "bin" / "python"), "-c", "import pytest"], capture_output=True
        )
        if installed.returncode == 0:
            fail("the runtime-only venv holds pytest: the test extra was installed", log)

        jar = http.cookiejar.CookieJar()
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        with opener.open(f"{base}/accounts/login/") as page:
            page.read()
        csrf = next(c.value for c in jar if c.name == "csrftoken")
        form = urllib.parse.urlencode(
            {"username": "demo", "password": "statecraft-demo", "csrfmiddlewaretoken": csrf}
        ).encode()
        request = urllib.request.Request(
            f"{base}/accounts/login/", data=form, headers={"Referer": f"{base}/accounts/login/"}
        )
        with opener.open(request) as answer:
            apps_page = answer.read().decode()
        if "sessionid" not in {c.name for c in jar}:
            fail("signing in as the demo user gave no session", log)
        match = re.search(r'href="(/apps/\d+/)"', apps_page)
        if not match:
            fail("the app list after signing in links no app", log)
        with opener.open(base + match.group(1)) as answer:
            designer = answer.read().decode()
        if answer.status != 200 or 'id="variable-list"' not in designer:
            fail(f"the designer page {match.group(1)} did not show the demo app", log)
        print(f"smoke: signed in as demo and opened the designer at {match.group(1)}")
        # The help links' target: the documentation site `make run` built, served at /docs/
        # (French under /docs/fr/).
        for path, needle in (("/docs/", "Statecraft"), ("/docs/fr/designer/", 'lang="fr"')):
            try:
                with opener.open(base + path) as answer:
                    page = answer.read().decode()
            except urllib.error.HTTPError as error:
                fail(f"{path} answered {error.code}: the documentation site was not built", log)
            if needle not in page:
                fail(f"{path} did not serve the documentation site", log)
        print("smoke: /docs/ serves the documentation site, in French at /docs/fr/ too")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
    output = log.read_text(errors="replace")
    noise = [
        line
        for line in output.splitlines()
        if re.search(r"\bwarning\b|DEPRECATION|setuptools", line, re.IGNORECASE)
    ]
    if noise:
        fail("`make run` printed warnings:\n  " + "\n  ".join(noise[:10]), log)
    if output.count("Watching for file changes") > 1:
        fail("`make run` printed the reloader's banner more than once", log)
    print("smoke: passed; the server and the worker were stopped by their process group")


if __name__ == "__main__":
    main()
