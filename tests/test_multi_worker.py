"""Two gunicorn workers, no Redis: a session and every counter are the same on both.

A real gunicorn (`--workers 2`, sync workers) serves the app on loopback from a fresh SQLite
database. Which worker answers is made certain, not left to chance: a connection that has
sent nothing yet holds one worker (a sync worker reads its request before accepting
another), so a request sent meanwhile on a new connection is served by the other worker;
the held connection then sends its own request to the first. Gunicorn's access log names the
worker (its pid) of every request, and the test checks the two differ.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth.hashers import make_password
from django.utils import timezone

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
GUNICORN = Path(PYTHON).with_name("gunicorn")
PASSWORD = "pw-ada-123456"

pytestmark = [
    pytest.mark.skipif(not GUNICORN.exists(), reason="gunicorn is not installed"),
    # One worker runs the module, so each server (database, redis) starts once.
    pytest.mark.xdist_group("multi-worker"),
]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _listening_socket() -> socket.socket:
    """Bound and listening before gunicorn starts: early connections wait in the backlog
    (no polling for the server to come up); gunicorn's workers accept from it (fd://)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.set_inheritable(True)
    return listener


class Server:
    """gunicorn on loopback, and a minimal HTTP/1.0 client that pins requests to workers."""

    def __init__(self, tmp: Path, migrated: Path, extra_env: dict[str, str]) -> None:
        self.listener = _listening_socket()
        self.port = self.listener.getsockname()[1]
        self.access_log = tmp / "access.log"
        self.env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "tests.settings",
            "DATABASE_URL": f"sqlite:///{tmp / 'db.sqlite3'}",
            "ALLOWED_HOSTS": "127.0.0.1",
            "CACHE_URL": "",
            **extra_env,
        }
        # A copy of the run's migrated database (tests/conftest.py), and ada written into it
        # with the password hash the server's settings check.
        database = tmp / "db.sqlite3"
        shutil.copyfile(migrated, database)
        with sqlite3.connect(database) as db:
            db.execute(
                "INSERT INTO auth_user (password, is_superuser, username, first_name, last_name,"
                " email, is_staff, is_active, date_joined) VALUES (?, 0, 'ada', '', '', '', 0, 1,"
                " ?)",
                (make_password(PASSWORD), timezone.now().isoformat()),
            )
        self.process = subprocess.Popen(
            [
                str(GUNICORN),
                "designer.wsgi",
                "--workers",
                "2",
                "--worker-class",
                "sync",
                "--bind",
                f"fd://{self.listener.fileno()}",
                "--access-logfile",
                str(self.access_log),
                "--access-logformat",
                "%(p)s %(m)s %(U)s %(s)s",
                "--timeout",
                "60",
            ],
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=[self.listener.fileno()],
        )
        # One request on each: both workers have booted (the requests wait in the backlog).
        # A set-up that fails (a timeout, a worker that never boots) stops what it started.
        try:
            self.on_both_workers("GET", "/accounts/login/")
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        stop(self.process)
        self.listener.close()

    # -------------------------------------------------------------- HTTP

    def _raw(self, method: str, path: str, cookies: dict[str, str], body: str = "") -> bytes:
        headers = [f"{method} {path} HTTP/1.0", f"Host: 127.0.0.1:{self.port}", "Connection: close"]
        if cookies:
            headers.append("Cookie: " + "; ".join(f"{k}={v}" for k, v in cookies.items()))
        if method == "POST":
            headers += [
                "Content-Type: application/x-www-form-urlencoded",
                f"Content-Length: {len(body.encode())}",
                f"Origin: http://127.0.0.1:{self.port}",
                f"Referer: http://127.0.0.1:{self.port}{path}",
            ]
        return ("\r\n".join(headers) + "\r\n\r\n" + body).encode()

    @staticmethod
    def _read(connection: socket.socket) -> Response:
        chunks = []
        while chunk := connection.recv(65536):
            chunks.append(chunk)
        return Response(b"".join(chunks))

    def request(self, method: str, path: str, cookies: dict[str, str], body: str = "") -> Response:
        with socket.create_connection(("127.0.0.1", self.port), timeout=30) as connection:
            connection.sendall(self._raw(method, path, cookies, body))
            return self._read(connection)

    def on_both_workers(
        self, method: str, path: str, cookies: dict[str, str] | None = None, body: str = ""
    ) -> list[Response]:
        """The same request once on each worker (see the module's docstring)."""
        cookies = cookies or {}
        before = len(self._log())
        with socket.create_connection(("127.0.0.1", self.port), timeout=30) as held:
            other = self.request(method, path, cookies, body)
            held.sendall(self._raw(method, path, cookies, body))
            first = self._read(held)
        pids = [line.split()[0] for line in self._log()[before:]]
        assert len(set(pids)) == 2, f"both requests went to one worker: {pids}"
        return [other, first]

    def _log(self) -> list[str]:
        # A sync worker writes (and flushes) the access line before it closes the
        # connection, and each response is read to the close: the line is there.
        return self.access_log.read_text().splitlines() if self.access_log.exists() else []


class Response:
    def __init__(self, raw: bytes) -> None:
        head, _, body = raw.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        self.status = int(lines[0].split()[1])
        self.headers = [tuple(line.split(": ", 1)) for line in lines[1:] if ": " in line]
        self.body = body.decode("utf-8", "replace")

    def header(self, name: str) -> str:
        return next((v for k, v in self.headers if k.lower() == name.lower()), "")

    def cookies(self) -> dict[str, str]:
        found = {}
        for key, value in self.headers:
            if key.lower() == "set-cookie":
                name, _, rest = value.partition("=")
                found[name] = rest.split(";", 1)[0]
        return found


REDIS_SERVER = "/usr/bin/redis-server"


@pytest.fixture(scope="module", params=["database", "redis"])
def server(request, tmp_path_factory, _migrated_sqlite):
    """No CACHE_URL (the deployment recipe, docs/operations/deployment.md: the database holds
    sessions and counts), and Redis."""
    tmp = tmp_path_factory.mktemp(f"two-workers-{request.param}")
    env = {"RATE_LIMITS": "api-anon=4/h,signin-account=5/15m"}
    redis = None
    if request.param == "redis":
        if not Path(REDIS_SERVER).exists():
            pytest.skip("redis-server is not installed")
        port = _free_port()
        redis = subprocess.Popen(
            [REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", ""],
            cwd=tmp,
            stdout=subprocess.DEVNULL,
        )
        env["CACHE_URL"] = f"redis://127.0.0.1:{port}/0"
    try:
        running = Server(tmp, _migrated_sqlite, env)
        try:
            yield running
        finally:
            running.close()
    finally:  # whatever happened above, the redis-server this fixture started is stopped
        if redis is not None:
            stop(redis)


def stop(process: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL after 30 s: a process a test started never outlives it."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def test_a_server_whose_set_up_fails_stops_its_gunicorn(tmp_path, _migrated_sqlite, monkeypatch):
    started: list[subprocess.Popen] = []

    def fail(self, *args, **kwargs):
        started.append(self.process)
        raise TimeoutError("the workers did not answer")

    monkeypatch.setattr(Server, "on_both_workers", fail)
    with pytest.raises(TimeoutError):
        Server(tmp_path, _migrated_sqlite, {})
    assert started and started[0].poll() is not None


def _csrf(server: Server) -> tuple[dict[str, str], str]:
    page = server.request("GET", "/accounts/login/", {})
    cookies = page.cookies()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.body).group(1)
    return cookies, token


def _sign_in(server: Server, username: str, password: str) -> tuple[Response, dict[str, str]]:
    cookies, token = _csrf(server)
    body = f"csrfmiddlewaretoken={token}&username={username}&password={password}"
    return server.request("POST", "/accounts/login/", cookies, body), cookies


def test_signing_out_ends_the_session_on_every_worker(server):
    response, cookies = _sign_in(server, "ada", PASSWORD)
    assert response.status == 302, response.body[:300]
    cookies = {**cookies, **response.cookies()}
    signed_in = server.on_both_workers("GET", "/", cookies)
    assert [r.status for r in signed_in] == [200, 200]  # each worker has read the session
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', signed_in[0].body).group(1)
    out = server.request("POST", "/accounts/logout/", cookies, f"csrfmiddlewaretoken={token}")
    assert out.status == 302
    after = server.on_both_workers("GET", "/", cookies)
    assert [(r.status, r.header("Location").split("?")[0]) for r in after] == [
        (302, "/accounts/login/")
    ] * 2


def test_failed_sign_ins_count_across_workers(server):
    answers = []
    for _ in range(3):  # six wrong passwords, three on each worker
        cookies, token = _csrf(server)
        body = f"csrfmiddlewaretoken={token}&username=guessed&password=wrong"
        answers += server.on_both_workers("POST", "/accounts/login/", cookies, body)
    refused = ["Too many failed sign-ins" in r.body for r in answers]
    assert refused == [False] * 5 + [True]


def test_anonymous_api_requests_count_across_workers(server):
    answers = []
    for _ in range(3):
        answers += server.on_both_workers("GET", "/api/apps/")
    assert [r.status for r in answers] == [401, 401, 401, 401, 429, 429]
