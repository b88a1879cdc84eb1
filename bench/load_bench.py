"""Throughput of the live preview and the designer page under load, relative to /healthz.

Run on purpose (not part of the test suite), from the project root:

    .venv/bin/python bench/load_bench.py [--seconds 5] [--rounds 3] [--connections 4]

It creates a PostgreSQL database (`$BENCH_DATABASE_URL`, default
postgres://postgres@127.0.0.1:5432/statecraft_bench; dropped and made anew), migrates
it, loads the demo apps, starts gunicorn with 2 workers on loopback with production
settings, signs in as the demo user, and sends keep-alive requests from a few
connections for a fixed time per endpoint, in interleaved rounds so that every
endpoint sees the same machine. It prints requests per second of each endpoint and
its ratio to /healthz (the same server answering its cheapest request): the ratio is
what compares two versions of the code fairly on a noisy machine.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlencode, urlparse

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/statecraft_bench"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _recreate_database(url: str) -> None:
    import psycopg

    parsed = urlparse(url)
    name = parsed.path.lstrip("/")
    admin = parsed._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def _manage(env: dict[str, str], *args: str) -> str:
    return subprocess.run(
        [PYTHON, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True, text=True
    ).stdout


class Session:
    """A signed-in keep-alive HTTP connection."""

    def __init__(self, port: int, cookies: str = "") -> None:
        self.port = port
        self.cookies = cookies
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def request(self, method: str, path: str, body: str | None = None, headers=None):
        headers = {"Cookie": self.cookies, "Host": "127.0.0.1", **(headers or {})}
        self.conn.request(method, path, body=body, headers=headers)
        response = self.conn.getresponse()
        data = response.read()
        return response, data


def _sign_in(port: int) -> str:
    session = Session(port)
    response, data = session.request("GET", "/accounts/login/")
    csrf = re.search(r"csrftoken=([^;]+)", response.getheader("Set-Cookie")).group(1)
    token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', data).group(1).decode()
    body = urlencode(
        {"username": "demo", "password": "statecraft-demo", "csrfmiddlewaretoken": token}
    )
    session.cookies = f"csrftoken={csrf}"
    response, _ = session.request(
        "POST",
        "/accounts/login/",
        body,
        {"Content-Type": "application/x-www-form-urlencoded", "Referer": "http://127.0.0.1/"},
    )
    cookies = [c.split(";")[0] for c in response.headers.get_all("Set-Cookie") or []]
    assert any(c.startswith("sessionid=") for c in cookies), "sign-in failed"
    return "; ".join([f"csrftoken={csrf}", *[c for c in cookies if c.startswith("sessionid")]])


def _load(port: int, cookies: str, path: str, headers: dict, seconds: float, connections: int):
    """Requests answered per second by `connections` keep-alive clients for `seconds`."""
    counts = [0] * connections
    errors = [0] * connections
    stop = time.perf_counter() + seconds

    def client(i: int) -> None:
        session = Session(port, cookies)
        while time.perf_counter() < stop:
            response, _ = session.request("GET", path, headers=headers)
            if response.status == 200:
                counts[i] += 1
            else:
                errors[i] += 1

    threads = [threading.Thread(target=client, args=(i,)) for i in range(connections)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    if sum(errors):
        raise RuntimeError(f"{path}: {sum(errors)} answers were not 200")
    return sum(counts) / elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    database = os.environ.get("BENCH_DATABASE_URL", DEFAULT_DB)
    _recreate_database(database)
    port = _free_port()
    env = {
        **os.environ,
        "DATABASE_URL": database,
        "DEBUG": "false",
        "SECRET_KEY": "bench-only-not-secret",
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_SSL_REDIRECT": "false",
        "LOG_LEVEL": "WARNING",
        "DJANGO_SETTINGS_MODULE": "designer.settings",
        # Measure the work, not the per-user rate limits (README, Web security).
        "RATE_LIMITS": "preview=10000000/m,simulate=10000000/m",
    }
    _manage(env, "migrate", "--no-input")
    _manage(env, "collectstatic", "--no-input")
    _manage(env, "load_demo")
    ids = json.loads(
        _manage(
            env,
            "shell",
            "-c",
            "import json; from agents.models import AgentApp; "
            "a = AgentApp.objects.get(name='Bank demo'); "
            "print(json.dumps([a.pk, a.agents.get(is_root=True).pk]))",
        )
        .strip()
        .splitlines()[-1]
    )
    app_id, agent_id = ids
    server = subprocess.Popen(
        [
            PYTHON,
            "-m",
            "gunicorn",
            "designer.wsgi",
            "--workers",
            str(args.workers),
            "--bind",
            f"127.0.0.1:{port}",
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
    )
    try:
        deadline = time.time() + 30
        while True:
            try:
                Session(port).request("GET", "/healthz")
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.1)
        cookies = _sign_in(port)
        hx = {"HX-Request": "true"}
        endpoints = {
            "/healthz": ("/healthz", {}),
            "preview (htmx fragment)": (f"/apps/{app_id}/agents/{agent_id}/preview", hx),
            "designer page": (f"/apps/{app_id}/?agent={agent_id}", {}),
        }
        for path, headers in endpoints.values():  # warm: caches, sandbox memo, connections
            _load(port, cookies, path, headers, 1, args.connections)
        rates: dict[str, list[float]] = {name: [] for name in endpoints}
        for _ in range(args.rounds):
            for name, (path, headers) in endpoints.items():
                rates[name].append(
                    _load(port, cookies, path, headers, args.seconds, args.connections)
                )
    finally:
        server.terminate()
        server.wait(timeout=30)
    health = statistics.median(rates["/healthz"])
    print(
        f"gunicorn {args.workers} workers, PostgreSQL, {args.connections} keep-alive "
        f"connections, {args.rounds} rounds of {args.seconds:g} s per endpoint (median)"
    )
    print(f"{'endpoint':28} {'req/s':>8} {'of /healthz':>12}")
    for name, values in rates.items():
        rate = statistics.median(values)
        print(f"{name:28} {rate:8.0f} {100 * rate / health:11.1f}%")


if __name__ == "__main__":
    main()
