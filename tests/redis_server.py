"""A redis-server of the test's own: started on a free loopback port (no data saved),
stopped whatever happens; `stop()` and `start()` again on the same port make an outage.

It is ready when it says so on its output ("Ready to accept connections"), never after a
fixed wait."""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class RedisServer:
    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.proc: subprocess.Popen | None = None

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def start(self, timeout: float = 30) -> None:
        self.proc = subprocess.Popen(
            [
                *(REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1"),
                *("--save", "", "--appendonly", "no", "--loglevel", "notice"),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        said = b""
        fd = self.proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"Ready to accept connections" not in said:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    self.stop()
                    raise AssertionError(f"redis-server did not start: {said.decode()}")
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise AssertionError(f"redis-server exited: {said.decode()}")
                said += chunk
        # Its later output is not read: to /dev/null from here on would need a restart;
        # redis writes little at loglevel notice, far below a pipe's buffer.

    def stop(self) -> None:
        """Stop it (SIGKILL: an outage, not a clean shutdown); its data is gone."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.proc = None


@contextlib.contextmanager
def running_redis() -> Iterator[RedisServer]:
    if not os.path.exists(REDIS_SERVER):
        pytest.skip("redis-server is not installed")
    server = RedisServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()
