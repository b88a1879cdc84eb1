"""Issue #9's acceptance, end to end: three simulations built to hold a worker (40 slow
tool steps each) run at once under gunicorn; each ends at its time cap with a message,
and /healthz keeps answering meanwhile (no wall-clock assertion: the times are the bench's).
Runs bench/healthz_under_load.py (real gunicorn, real sandbox, real HTTP) and reads what it
measured."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.xdist_group("gunicorn")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_three_worker_holding_simulations_end_at_their_cap_and_healthz_answers():
    env = {**os.environ, "PORT": str(_free_port()), "SIMULATION_MAX_SECONDS": "4"}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    env.pop("DATABASE_URL", None)
    # Its own process group: whatever happens (a timeout included), the bench and the
    # gunicorn it started are stopped together.
    bench = subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / "healthz_under_load.py")],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = bench.communicate(timeout=240)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(bench.pid, signal.SIGKILL)
        bench.wait()
    done = subprocess.CompletedProcess(bench.args, bench.returncode, stdout, stderr)
    assert done.returncode == 0, done.stderr[-2000:]
    runs = re.findall(
        r"simulation: ([\d.]+) s, stopped at its cap with a message: (\w+)", done.stdout
    )
    assert len(runs) == 3, done.stdout
    # Each stopped at its 4 s cap with the cap's message (without the cap, 40 slow steps
    # outlast gunicorn's 30 s worker timeout and the answer is an error page, not this).
    assert [capped for _, capped in runs] == ["True"] * 3, runs
    # /healthz answered 200 on every poll made while the three ran (the bench fails on any
    # other answer); how long each took is the bench's figure, not an assertion here.
    polls = int(re.search(r"/healthz: (\d+) polls during the runs", done.stdout).group(1))
    assert polls >= 1, done.stdout
