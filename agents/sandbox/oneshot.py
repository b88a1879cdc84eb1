"""Starting and stopping a child process, and the one-shot run of a script.

:data:`RUNNER` is the session child's script (``runner.py``, beside the modules it loads);
:func:`run_child` runs a script once as a session child is run (empty temp cwd, scrubbed
environment, own process group) and reads its whole output; the tests use it to probe the
OS layer with scripts of their own.  :func:`kill` and :func:`shutdown` end a child and
everything it started.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from agents.sandbox.answers import MAX_STDERR_BYTES, crash_error
from agents.sandbox.limits import SandboxError

RUNNER = Path(__file__).with_name("runner.py")
# Every file the session child loads from RUNNER's directory (the jail shows that directory
# as /sandbox): a copy of the runner elsewhere needs them all beside it.
CHILD_FILES = (
    *("runner.py", "call_context.py", "policy.py", "guards.py", "process.py"),
    *("protocol.py", "clock.py", "chance.py", "cx_objects.py"),
)
# The child's environment, whole (nothing of the server's). PYTHONHASHSEED fixes how
# Python salts `hash()` of text: the order a set of strings iterates in (CX code builds
# lists and dicts from sets) and `hash()` itself are then the same in every session child,
# on every machine, so a replay of an unchanged app gives what its live run gave
# (docs/designer/replay.md). The salt only guards against flooding a dict with colliding
# keys, which the call's CPU and wall-time caps bound anyway.
CHILD_ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "PYTHONHASHSEED": "0"}
# The interpreter's flags: ``-I`` (isolated) would ignore PYTHONHASHSEED, so its parts
# that matter are given one by one: no script directory and no user site on sys.path
# (``-P``, ``-s``), no site module (``-S``), no .pyc written (``-B``). The environment is
# the child's own (CHILD_ENV), so ignoring PYTHON* variables (``-E``) adds nothing.
CHILD_FLAGS = ("-P", "-s", "-S", "-B")


def shutdown(proc: subprocess.Popen[bytes], workdir: str) -> None:
    kill(proc)
    shutil.rmtree(workdir, ignore_errors=True)


@dataclass
class Outcome:
    stdout: bytes = b""
    stderr: bytes = b""
    error: SandboxError | None = None


def run_child(request: bytes, deadline_s: float, max_stdout: int, script: Path = RUNNER) -> Outcome:
    """One shot: run *script* as a session child is run (empty temp cwd, scrubbed
    environment, own process group), feed it *request*, read its output (bounded, with a
    deadline) until it exits."""
    workdir = tempfile.mkdtemp(prefix="statecraft-sandbox-")
    proc: subprocess.Popen[bytes] | None = None
    try:
        proc = subprocess.Popen(
            [sys.executable, *CHILD_FLAGS, str(script)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(CHILD_ENV),
            cwd=workdir,
            close_fds=True,
            start_new_session=True,  # own process group: killpg reaches everything
        )
        return exchange(proc, request, time.monotonic() + deadline_s, max_stdout)
    except OSError as exc:
        return Outcome(error=SandboxError("internal", f"could not start the sandbox: {exc}"))
    finally:
        if proc is not None:
            kill(proc)
        shutil.rmtree(workdir, ignore_errors=True)


def exited(proc: subprocess.Popen[bytes]) -> bool:
    """Whether the child has exited, *without* reaping it: until it is reaped its pid (and
    so its process group id) stays ours, and killing the group cannot reach anybody else."""
    if proc.returncode is not None:
        return True
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:  # pragma: no cover - reaped behind our back
        return True


def reap(proc: subprocess.Popen[bytes], timeout: float) -> int | None:
    """Wait up to `timeout` for an exiting child, then kill what is left of its process
    group and reap it; its exit status, or None if it did not exit in time (`kill` then
    does it). The group is killed before the reap: a reaped pid may be reused at once by
    another process (pid_max is 32,768 here), and killpg on it would kill that one."""
    deadline = time.monotonic() + timeout
    pause = 0.0005
    while not exited(proc):
        if time.monotonic() >= deadline:
            return None
        time.sleep(pause)  # as Popen.wait(timeout) polls
        pause = min(pause * 2, 0.05)
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    return proc.wait()


def kill(proc: subprocess.Popen[bytes]) -> None:
    # Only while the child is not reaped: then its pid cannot have been reused.
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        try:
            if stream is not None:
                stream.close()
        except OSError:
            pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:  # pragma: no cover
        proc.kill()


def exchange(
    proc: subprocess.Popen[bytes], request: bytes, deadline: float, max_stdout: int
) -> Outcome:
    assert proc.stdin and proc.stdout and proc.stderr
    sel = selectors.DefaultSelector()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        os.set_blocking(stream.fileno(), False)
    sel.register(proc.stdin, selectors.EVENT_WRITE)
    sel.register(proc.stdout, selectors.EVENT_READ)
    sel.register(proc.stderr, selectors.EVENT_READ)
    out = bytearray()
    err = bytearray()
    view = memoryview(request)
    open_readers = 2
    try:
        while open_readers:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return Outcome(
                    bytes(out), bytes(err), SandboxError("timeout", "time limit exceeded")
                )
            for key, _ in sel.select(timeout=remaining):
                if key.fileobj is proc.stdin:
                    try:
                        written = os.write(proc.stdin.fileno(), view[:65536])
                    except BrokenPipeError:
                        written = len(view)
                    view = view[written:]
                    if not view:
                        sel.unregister(proc.stdin)
                        proc.stdin.close()
                    continue
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                    open_readers -= 1
                    continue
                if key.fileobj is proc.stdout:
                    out += chunk
                    if len(out) > max_stdout:
                        return Outcome(
                            error=SandboxError(
                                "output_too_large",
                                f"the sandbox answer is larger than {max_stdout} bytes",
                            )
                        )
                elif len(err) < MAX_STDERR_BYTES:
                    err += chunk[: MAX_STDERR_BYTES - len(err)]
    finally:
        sel.close()
        view.release()
    # Both pipes closed: the child is exiting.  Reap it (bounded) to read its status.
    returncode = reap(proc, max(0.05, deadline - time.monotonic()))
    if out:
        return Outcome(bytes(out), bytes(err))
    return Outcome(bytes(out), bytes(err), crash_error(returncode, bytes(err)))
