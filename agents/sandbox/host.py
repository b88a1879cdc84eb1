"""Parent side of the sandbox: starts the child, feeds it, bounds it, reads its answer.

No Django import here: the module is used from Django views but does not depend on them.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import selectors
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from agents.sandbox import jail
from agents.sandbox.answers import (
    MAX_STDERR_BYTES,
    UntrustedAnswer,
    crash_error,
    loads_answer,
    result_from_raw,
)
from agents.sandbox.limits import (
    Kind,
    Limits,
    SandboxCall,
    SandboxError,
    SandboxResult,
    check_call,
    check_tools,
    failed,
)
from agents.sandbox.oneshot import CHILD_ENV, CHILD_FLAGS, RUNNER, exited, reap, shutdown
from agents.sandbox.protocol import MAX_HEADER_BYTES, frame

__all__ = [
    "RUNNER",
    "Limits",
    "SandboxCall",
    "SandboxError",
    "SandboxResult",
    "SandboxSession",
    "open_session",
    "run_code",
    "run_many",
    "tools_digest",
]

# A session child must be ready (Python started, RestrictedPython imported) within this.
SESSION_START_TIMEOUT_S = 5.0
# The session child kills a call process at its wall-clock limit + CALL_KILL_GRACE_S; the
# host kills the whole session child if no answer comes HOST_GRACE_S after that.
CALL_KILL_GRACE_S = 0.5
HOST_GRACE_S = 1.0
DEFAULT_LIMITS = Limits()
# How many sets of tools a session child keeps by digest (runner.TOOLS_MAX).
TOOLS_HELD_MAX = 4


def run_code(
    code: str,
    *,
    entry: str,
    kind: Kind,
    args: Mapping[str, Any] | None = None,
    state: Mapping[str, Any] | None = None,
    variables_declared: Sequence[str] | None = None,
    limits: Limits = DEFAULT_LIMITS,
    context_values: Mapping[str, Any] | None = None,
    tools: Mapping[str, str] | None = None,
) -> SandboxResult:
    """Run one tool or callback in a fresh sandboxed process.

    *entry* is the function to call: the tool name for a tool, the callback function name
    (``before_model_callback``...) for a callback.  *tools* maps the app's Python tools to
    their code, for ``tools.<name>(...)``.  Never raises for anything the code does.
    """
    with open_session(limits=limits, context_values=context_values) as session:
        return session.run(
            code,
            entry=entry,
            kind=kind,
            args=dict(args or {}),
            state=state,
            variables_declared=variables_declared,
            tools=tools,
        )


def run_many(
    calls: Sequence[SandboxCall],
    *,
    state: Mapping[str, Any] | None = None,
    variables_declared: Sequence[str] | None = None,
    limits: Limits = DEFAULT_LIMITS,
    context_values: Mapping[str, Any] | None = None,
) -> list[SandboxResult]:
    """Run several calls one after the other in one sandbox session, threading the state.

    The state each call leaves is the state the next one starts from (a failed call keeps
    the writes it made before failing; a call refused or killed leaves it unchanged).  Each
    call has its own limits and runs in its own process, as in :func:`open_session`.
    """
    results: list[SandboxResult] = []
    current = dict(state or {})
    with open_session(limits=limits, context_values=context_values) as session:
        for call in calls:
            result = session.run(
                call.code,
                entry=call.entry,
                kind=call.kind,
                args=call.args,
                state=current,
                variables_declared=variables_declared,
            )
            results.append(result)
            current = result.state
    return results


def open_session(
    *, limits: Limits = DEFAULT_LIMITS, context_values: Mapping[str, Any] | None = None
) -> SandboxSession:
    """A warm sandbox for many sequential calls; use it as a context manager.

    ::

        with open_session() as session:
            result = session.run(code, entry="t", kind="tool", args={}, state=state)

    The child process starts at the first :meth:`SandboxSession.run` (none if no call is
    made) and is killed when the block ends.
    """
    return SandboxSession(limits=limits, context_values=context_values)


class SandboxSession:
    """One sandboxed *session child* serving calls one at a time (see ``runner.py``).

    The session child is set up once (Python started, RestrictedPython and the allowed
    modules imported, network namespace entered, chrooted) and forks a fresh *call process*
    for each :meth:`run`: the call process drops to ``nobody`` and gets its own resource
    limits, so every call starts from the same pristine image and nothing it does survives
    it.  Each call starts from the ``state`` it is given (the caller's state is
    authoritative).

    Per call: wall clock (``limits.wall_time_s``: a timer in the call process raises at the
    user's line; the session child kills it at the limit + ``CALL_KILL_GRACE_S`` if the code
    swallows that), CPU (``RLIMIT_CPU`` counted from zero in the call process), memory
    (``RLIMIT_AS``), answer size, printed text, no fork, no file writes.  Per session: the
    host kills the whole session child if an answer does not come by the limit + both
    graces, or if it misbehaves (dies, malformed frame, too large); that call reports the
    error and the next :meth:`run` starts a new child transparently.

    Not for concurrent use: calls are serialised by a lock.
    """

    def __init__(
        self,
        *,
        limits: Limits = DEFAULT_LIMITS,
        context_values: Mapping[str, Any] | None = None,
        script: Path = RUNNER,
        use_jail: bool = True,
    ) -> None:
        self.limits = limits
        self.use_jail = use_jail
        self.context_values = dict(context_values or {})
        self.starts = 0  # session children started (restarts included)
        self._script = Path(script)
        self._proc: subprocess.Popen[bytes] | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self._stderr = bytearray()
        self._lock = threading.Lock()
        self._closed = False
        # Digests of the tools the running session child holds (runner.TOOLS).
        self._tools_held: list[str] = []
        # CPU seconds the session's processes used for its calls, as the kernel counted
        # them (each call process's, reaped by the session child, and the session child's
        # own): what a simulation's time cap counts, where the wall clock would count the
        # machine's load.
        self.cpu_seconds = 0.0
        self._child_cpu = 0.0  # the running session child's own CPU, as last reported

    def __enter__(self) -> SandboxSession:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        """The session child's pid while it runs (for tests and diagnostics)."""
        proc = self._proc
        return proc.pid if proc is not None and not exited(proc) else None

    def close(self) -> None:
        """Kill the session child and reap it; later calls are refused."""
        with self._lock:
            self._closed = True
            self._stop()

    def run(
        self,
        code: str,
        *,
        entry: str,
        kind: Kind,
        args: Mapping[str, Any] | None = None,
        state: Mapping[str, Any] | None = None,
        variables_declared: Sequence[str] | None = None,
        context_values: Mapping[str, Any] | None = None,
        tools: Mapping[str, str] | None = None,
        state_back: bool = True,
    ) -> SandboxResult:
        """Run one tool or callback, as :func:`run_code` does, in this session.

        *tools* maps the app's Python tools to their code: ``tools.<name>(args)`` in the
        code runs that tool in the same call process (CX's way for one tool to use another).

        *context_values* are merged over the session's.  With ``state_back=False`` the
        answer does not carry the whole state after the call (the simulation reads the
        writes, in-place changes included, and never that copy): the result's ``state``
        is then the state given.  Never raises for anything the code does.
        """
        started = time.perf_counter()
        given = dict(state or {})
        error = check_call(code, entry) or check_tools(tools)
        if error is not None:
            return failed(error, given, started)
        request: dict[str, Any] = {
            "code": code,
            "entry": entry,
            "kind": kind,
            "args": dict(args or {}),
            "state": given,
            "declared": list(variables_declared) if variables_declared is not None else None,
            "context_values": {**self.context_values, **(context_values or {})},
            "tools": dict(tools or {}),
        }
        if not state_back:
            request["state_back"] = False
        # The app's tools are the same for every call of a run (bella_notte's are ~175 KB):
        # sent once per session child, then by their digest (the child keeps them).
        digest = tools_digest(request["tools"]) if request["tools"] else ""

        with self._lock:
            if self._closed:
                return failed(
                    SandboxError("invalid_request", "the sandbox session is closed"),
                    given,
                    started,
                )
            if self._proc is None or exited(self._proc):
                self._stop()  # reap a child that died between calls: not this call's fault
                error = self._start()
                if error is not None:
                    return failed(error, given, started)
            if digest:
                request["tools_digest"] = digest
                if digest in self._tools_held:
                    request["tools"], request["tools_ref"] = None, True
            try:
                body = _dumps(request)
            except (TypeError, ValueError) as exc:
                error = SandboxError("invalid_request", f"arguments or state are not JSON: {exc}")
                return failed(error, given, started)
            del request
            self._stderr.clear()
            deadline = time.monotonic() + self.limits.wall_time_s + CALL_KILL_GRACE_S + HOST_GRACE_S
            header, answer, error = self._roundtrip(frame(body), deadline)
            if error is not None:
                self._stop()
                return failed(error, given, started)
            if digest and digest not in self._tools_held:
                # As the child does (runner.resolve_tools): the oldest goes first.
                if len(self._tools_held) >= TOOLS_HELD_MAX:
                    del self._tools_held[0]
                self._tools_held.append(digest)
            assert header is not None
            self._count_cpu(header)
            stderr = bytes(self._stderr)

        if header.get("timed_out"):
            error = SandboxError(
                "timeout", "time limit exceeded (the code did not stop and was killed)"
            )
            return failed(error, given, started)
        if header.get("too_large"):
            error = SandboxError(
                "output_too_large",
                f"the sandbox answer is larger than {self.limits.max_output_bytes} bytes",
            )
            return failed(error, given, started)
        try:
            raw, plain = loads_answer(answer)
            if not isinstance(raw, dict):
                raise ValueError("not an object")
        except UntrustedAnswer as exc:
            return failed(SandboxError("internal", str(exc)), given, started)
        except ValueError:
            status = header.get("status")
            return failed(
                crash_error(status if isinstance(status, int) else None, stderr),
                given,
                started,
            )
        return result_from_raw(raw, given, started, plain=plain)

    # -- the child process

    def _start(self) -> SandboxError | None:
        workdir = tempfile.mkdtemp(prefix="statecraft-sandbox-")
        rp_path = _restrictedpython_path()
        # bubblewrap when it works here (see jail.py), else the home-made layer of runner.py.
        command = (
            jail.jail_command(self._script, [f"{rp_path}/RestrictedPython"], os.getpid())
            if self.use_jail
            else None
        )
        argv = command.argv if command else [sys.executable, *CHILD_FLAGS, str(self._script)]
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=dict(CHILD_ENV),
                cwd=workdir,
                close_fds=True,
                pass_fds=command.pass_fds if command else (),
                start_new_session=True,  # own process group: killpg reaches everything
            )
        except OSError as exc:
            shutil.rmtree(workdir, ignore_errors=True)
            return SandboxError("internal", f"could not start the sandbox: {exc}")
        finally:
            for fd in command.pass_fds if command else ():
                os.close(fd)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            assert stream is not None
            os.set_blocking(stream.fileno(), False)
        self._proc = proc
        # Kills the child if the session is garbage-collected (or at exit) without close().
        self._finalizer = weakref.finalize(self, shutdown, proc, workdir)
        self.starts += 1
        self._child_cpu = 0.0
        call_filter = jail.call_filter()
        hello: dict[str, Any] = {
            "rp_path": rp_path,
            "limits": self.limits.as_json(),
            "filter": call_filter.hex() if call_filter else "",
        }
        if command is not None:
            hello["jail"] = list(command.protections)
            hello["rp_path"] = jail.PACKAGES_DIR
            # Unique per live session: the host pid of its bubblewrap process.
            hello["sandbox_uid"] = (
                jail.SANDBOX_UID_BASE + proc.pid if command.sandbox_uid is not None else None
            )
        _, _, error = self._roundtrip(
            frame(_dumps(hello)), time.monotonic() + SESSION_START_TIMEOUT_S
        )
        if error is not None:
            self._stop()
            return SandboxError("internal", f"the sandbox did not start: {error.message}")
        return None

    def _stop(self) -> None:
        self._tools_held = []
        if self._finalizer is not None:
            self._finalizer()  # kills the process group, reaps, removes the work dir
        self._finalizer = None
        self._proc = None

    def _count_cpu(self, header: dict[str, Any]) -> None:
        call, child = header.get("cpu_s"), header.get("session_cpu_s")
        if isinstance(call, float | int) and 0 <= call < 1e6:
            self.cpu_seconds += call
        if isinstance(child, float | int) and 0 <= child < 1e6:
            self.cpu_seconds += max(0.0, child - self._child_cpu)
            self._child_cpu = child

    def _roundtrip(
        self, request: bytes, deadline: float
    ) -> tuple[dict[str, Any] | None, bytes, SandboxError | None]:
        """Send one frame, read one frame back, draining stderr; all bounded."""
        proc = self._proc
        assert proc is not None and proc.stdin and proc.stdout and proc.stderr
        max_body = self.limits.max_output_bytes + 64 * 1024
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        sel.register(proc.stderr, selectors.EVENT_READ)
        sel.register(proc.stdin, selectors.EVENT_WRITE)
        view = memoryview(request)
        buf = bytearray()
        header: dict[str, Any] | None = None
        body_start = need = 0
        try:
            while True:
                if header is None:
                    newline = buf.find(b"\n")
                    if newline >= 0:
                        try:
                            header = json.loads(buf[:newline])
                            size = header["size"]
                            if not isinstance(size, int) or not 0 <= size <= max_body:
                                raise ValueError(size)
                        except (ValueError, KeyError, TypeError):
                            return (
                                None,
                                b"",
                                SandboxError("internal", "the sandbox sent a malformed answer"),
                            )
                        body_start = newline + 1
                        need = body_start + size
                    elif len(buf) > MAX_HEADER_BYTES:
                        return (
                            None,
                            b"",
                            SandboxError("internal", "the sandbox sent a malformed answer"),
                        )
                if header is not None and len(buf) >= need:
                    if len(buf) > need or view:
                        return (
                            None,
                            b"",
                            SandboxError("internal", "the sandbox answered out of turn"),
                        )
                    return header, bytes(buf[body_start:need]), None
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None, b"", SandboxError("timeout", "time limit exceeded")
                for key, _ in sel.select(timeout=remaining):
                    if key.fileobj is proc.stdin:
                        try:
                            written = os.write(key.fd, view[:65536])
                        except BrokenPipeError:  # the child died: its stdout says how
                            written = len(view)
                        view = view[written:]
                        if not view:
                            sel.unregister(proc.stdin)
                        continue
                    try:
                        chunk = os.read(key.fd, 65536)
                    except BlockingIOError:  # pragma: no cover
                        continue
                    if key.fileobj is proc.stderr:
                        if not chunk:
                            sel.unregister(proc.stderr)
                        self._stderr += chunk
                        del self._stderr[:-MAX_STDERR_BYTES]
                        continue
                    if not chunk:  # the child is gone
                        returncode = reap(proc, max(0.05, deadline - time.monotonic()))
                        return None, b"", crash_error(returncode, bytes(self._stderr))
                    buf += chunk
                    if header is not None and len(buf) > need:
                        return (
                            None,
                            b"",
                            SandboxError("internal", "the sandbox answered out of turn"),
                        )
        finally:
            sel.close()
            view.release()


# --------------------------------------------------------------------------- internals


@cache
def _restrictedpython_path() -> str:
    spec = importlib.util.find_spec("RestrictedPython")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("RestrictedPython is not installed")
    return str(Path(next(iter(spec.submodule_search_locations))).parent)


_DIGESTS: dict[tuple[tuple[str, Any], ...], str] = {}


def tools_digest(tools: Mapping[str, Any]) -> str:
    """The digest of an app's tools (name -> code), remembered for the last few sets: the
    same strings come with every call of a run, so hashing their tuple is cheap where
    serialising 175 KB again is not."""
    key = tuple(sorted(tools.items()))
    try:
        digest = _DIGESTS.get(key)
    except TypeError:  # a value that cannot be hashed: not remembered
        return hashlib.sha256(_dumps(dict(key))).hexdigest()
    if digest is None:
        digest = hashlib.sha256(_dumps(dict(key))).hexdigest()
        if len(_DIGESTS) >= 16:
            _DIGESTS.pop(next(iter(_DIGESTS)))
        _DIGESTS[key] = digest
    return digest


def _dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
