"""Parent side of the sandbox: starts the child, feeds it, bounds it, reads its answer.

No Django import here: the module is used from Django views but does not depend on them.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal

from agents.sandbox import jail

RUNNER = Path(__file__).with_name("runner.py")
CHILD_ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"}
# A session child must be ready (Python started, RestrictedPython imported) within this.
SESSION_START_TIMEOUT_S = 5.0
# The session child kills a call process at its wall-clock limit + CALL_KILL_GRACE_S; the
# host kills the whole session child if no answer comes HOST_GRACE_S after that.
CALL_KILL_GRACE_S = 0.5
HOST_GRACE_S = 1.0
MAX_HEADER_BYTES = 4096
MAX_CODE_CHARS = 200_000
MAX_TOOLS_CHARS = 2_000_000  # all the app's tools, for tools.<name>(...)
MAX_STDERR_BYTES = 16 * 1024
# How many sets of tools a session child keeps by digest (runner.TOOLS_MAX).
TOOLS_HELD_MAX = 4
# Values the child sends back are JSON of at most this depth (the child refuses deeper
# values itself; the host does not rely on it).
MAX_ANSWER_DEPTH = 80

Kind = Literal["tool", "callback"]
ErrorKind = Literal[
    "exception",  # the user code raised
    "timeout",  # wall-clock or CPU limit
    "memory",  # memory limit (MemoryError or killed)
    "output_too_large",  # return value / writes / answer above max_output_bytes
    "forbidden",  # import, attribute or construct the sandbox refuses
    "syntax",  # the code does not parse
    "serialization",  # a written or returned value is not JSON
    "entry_not_found",  # no function named `entry`
    "invalid_request",  # refused before starting a process (e.g. code too long)
    "internal",  # the sandbox itself failed (child crashed, bad answer)
]


@dataclass(frozen=True)
class Limits:
    wall_time_s: float = 2.0
    cpu_time_s: int = 2
    memory_bytes: int = 256 * 1024 * 1024
    max_output_bytes: int = 1024 * 1024
    max_print_chars: int = 64 * 1024
    max_open_files: int = 16

    def as_json(self) -> dict[str, Any]:
        return {
            "wall_time_s": self.wall_time_s,
            "cpu_time_s": self.cpu_time_s,
            "memory_bytes": self.memory_bytes,
            "max_output_bytes": self.max_output_bytes,
            "max_print_chars": self.max_print_chars,
            "max_open_files": self.max_open_files,
        }


@dataclass(frozen=True)
class SandboxError:
    kind: ErrorKind
    message: str
    line: int | None = None  # line in the user code, when known
    traceback: str = ""  # user-code frames only

    def __str__(self) -> str:
        where = f" (line {self.line})" if self.line else ""
        return f"{self.kind}{where}: {self.message}"


@dataclass(frozen=True)
class SandboxResult:
    ok: bool
    return_value: Any = None
    # Every write in order, as (name, value); a removal is (name, None) and its name is
    # also listed in `removed`.
    writes: tuple[tuple[str, Any], ...] = ()
    removed: tuple[str, ...] = ()
    stdout: str = ""
    error: SandboxError | None = None
    duration_ms: float = 0.0  # whole call as seen by the parent (process start included)
    protections: tuple[str, ...] = ()
    state: dict[str, Any] = field(default_factory=dict)  # state after the call
    undeclared: tuple[str, ...] = ()  # written names not in variables_declared
    stdout_truncated: bool = False
    run_ms: float | None = None  # time spent in the user code, measured in the child
    # The app's tools the code called through ``tools.<name>(...)``, in order, and whether
    # each returned (False: it raised).
    tool_calls: tuple[tuple[str, bool], ...] = ()
    # A callback's ``args`` (the tool call's arguments) after the call, when it changed them
    # in place; None otherwise.
    args: dict[str, Any] | None = None


@dataclass(frozen=True)
class SandboxCall:
    code: str
    entry: str
    kind: Kind = "tool"
    args: Mapping[str, Any] = field(default_factory=dict)


def run_code(
    code: str,
    *,
    entry: str,
    kind: Kind,
    args: Mapping[str, Any] | None = None,
    state: Mapping[str, Any] | None = None,
    variables_declared: Sequence[str] | None = None,
    limits: Limits = Limits(),
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
    limits: Limits = Limits(),
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
    *, limits: Limits = Limits(), context_values: Mapping[str, Any] | None = None
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
        limits: Limits = Limits(),
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

    def __enter__(self) -> SandboxSession:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        """The session child's pid while it runs (for tests and diagnostics)."""
        proc = self._proc
        return proc.pid if proc is not None and not _exited(proc) else None

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
    ) -> SandboxResult:
        """Run one tool or callback, as :func:`run_code` does, in this session.

        *tools* maps the app's Python tools to their code: ``tools.<name>(args)`` in the
        code runs that tool in the same call process (CX's way for one tool to use another).

        *context_values* are merged over the session's.  Never raises for anything the code
        does.
        """
        started = time.perf_counter()
        given = dict(state or {})
        error = _check_call(code, entry) or _check_tools(tools)
        if error is not None:
            return _failed(error, given, started)
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
        # The app's tools are the same for every call of a run (bella_notte's are ~175 KB):
        # sent once per session child, then by their digest (the child keeps them).
        digest = tools_digest(request["tools"]) if request["tools"] else ""

        with self._lock:
            if self._closed:
                return _failed(
                    SandboxError("invalid_request", "the sandbox session is closed"),
                    given,
                    started,
                )
            if self._proc is None or _exited(self._proc):
                self._stop()  # reap a child that died between calls: not this call's fault
                error = self._start()
                if error is not None:
                    return _failed(error, given, started)
            if digest:
                request["tools_digest"] = digest
                if digest in self._tools_held:
                    request["tools"], request["tools_ref"] = None, True
            try:
                body = _dumps(request)
            except (TypeError, ValueError) as exc:
                error = SandboxError("invalid_request", f"arguments or state are not JSON: {exc}")
                return _failed(error, given, started)
            del request
            self._stderr.clear()
            deadline = time.monotonic() + self.limits.wall_time_s + CALL_KILL_GRACE_S + HOST_GRACE_S
            header, answer, error = self._roundtrip(_frame(body), deadline)
            if error is not None:
                self._stop()
                return _failed(error, given, started)
            if digest and digest not in self._tools_held:
                # As the child does (runner.resolve_tools): the oldest goes first.
                if len(self._tools_held) >= TOOLS_HELD_MAX:
                    del self._tools_held[0]
                self._tools_held.append(digest)
            assert header is not None
            stderr = bytes(self._stderr)

        if header.get("timed_out"):
            error = SandboxError(
                "timeout", "time limit exceeded (the code did not stop and was killed)"
            )
            return _failed(error, given, started)
        if header.get("too_large"):
            error = SandboxError(
                "output_too_large",
                f"the sandbox answer is larger than {self.limits.max_output_bytes} bytes",
            )
            return _failed(error, given, started)
        try:
            raw = _loads_untrusted(answer)
            if not isinstance(raw, dict):
                raise ValueError("not an object")
        except UntrustedAnswer as exc:
            return _failed(SandboxError("internal", str(exc)), given, started)
        except ValueError:
            status = header.get("status")
            return _failed(
                _crash_error(status if isinstance(status, int) else None, stderr),
                given,
                started,
            )
        return _result_from_raw(raw, given, started)

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
        argv = command.argv if command else [sys.executable, "-I", "-S", "-B", str(self._script)]
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
        self._finalizer = weakref.finalize(self, _shutdown, proc, workdir)
        self.starts += 1
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
            _frame(_dumps(hello)), time.monotonic() + SESSION_START_TIMEOUT_S
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
                        returncode = _reap(proc, max(0.05, deadline - time.monotonic()))
                        return None, b"", _crash_error(returncode, bytes(self._stderr))
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


def _check_call(code: str, entry: str) -> SandboxError | None:
    if not isinstance(entry, str) or not entry.isidentifier() or entry.startswith("_"):
        return SandboxError("invalid_request", f"{entry!r} is not a function name")
    if not isinstance(code, str):
        return SandboxError("invalid_request", "the code is not text")
    if len(code) > MAX_CODE_CHARS:
        return SandboxError(
            "invalid_request", f"the code is longer than {MAX_CODE_CHARS} characters"
        )
    return None


def _check_tools(tools: Mapping[str, str] | None) -> SandboxError | None:
    if not tools:
        return None
    if not all(type(k) is str and type(v) is str for k, v in tools.items()):
        return SandboxError("invalid_request", "tools must map tool names to their code")
    if sum(len(v) for v in tools.values()) > MAX_TOOLS_CHARS:
        return SandboxError(
            "invalid_request", f"the app's tool code is longer than {MAX_TOOLS_CHARS} characters"
        )
    return None


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


def _frame(body: bytes) -> bytes:
    return b'{"size": %d}\n' % len(body) + body


def _shutdown(proc: subprocess.Popen[bytes], workdir: str) -> None:
    _kill(proc)
    shutil.rmtree(workdir, ignore_errors=True)


class UntrustedAnswer(ValueError):
    """The child answered with JSON the host refuses (NaN, too deep, odd shapes)."""


def _refuse_constant(name: str) -> Any:
    raise UntrustedAnswer(f"the sandbox answered {name}, which JSON cannot hold")


def _loads_untrusted(data: bytes) -> Any:
    """Parse the child's answer: no NaN/Infinity, at most MAX_ANSWER_DEPTH levels deep."""
    depth = 0
    for byte in data:  # bytes iterate as ints; strings cannot hide a bracket: JSON escapes
        if byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > MAX_ANSWER_DEPTH:
                raise UntrustedAnswer("the sandbox answer is nested too deeply")
        elif byte in (0x5D, 0x7D):
            depth -= 1
    try:
        return json.loads(data, parse_constant=_refuse_constant)
    except RecursionError as exc:  # pragma: no cover - the depth scan comes first
        raise UntrustedAnswer("the sandbox answer is nested too deeply") from exc


def _check_answer_shape(raw: dict[str, Any]) -> str | None:
    """What is wrong with the shape of a call's answer, or None."""
    writes = raw.get("writes") or []
    if not isinstance(writes, list) or not all(
        isinstance(w, list) and len(w) == 2 and isinstance(w[0], str) for w in writes
    ):
        return "writes"
    removed = raw.get("removed") or []
    if not isinstance(removed, list) or not all(isinstance(n, str) for n in removed):
        return "removed"
    if not isinstance(raw.get("stdout") or "", str):
        return "stdout"
    err = raw.get("error")
    if err is not None and not (
        isinstance(err, dict)
        and isinstance(err.get("kind", "internal"), str)
        and isinstance(err.get("message", ""), str)
        and isinstance(err.get("traceback", ""), str)
        and (err.get("line") is None or type(err.get("line")) is int)
    ):
        return "error"
    state = raw.get("state")
    if state is not None and not isinstance(state, dict):
        return "state"
    protections = raw.get("protections") or []
    if not isinstance(protections, list) or not all(isinstance(p, str) for p in protections):
        return "protections"
    tool_calls = raw.get("tool_calls") or []
    if not isinstance(tool_calls, list) or not all(
        isinstance(c, list) and len(c) == 2 and isinstance(c[0], str) and isinstance(c[1], bool)
        for c in tool_calls
    ):
        return "tool_calls"
    if raw.get("args") is not None and not isinstance(raw.get("args"), dict):
        return "args"
    return None


def _result_from_raw(raw: dict[str, Any], given: dict[str, Any], started: float) -> SandboxResult:
    wrong = _check_answer_shape(raw)
    if wrong is not None:
        error = SandboxError("internal", f"the sandbox answered an unexpected {wrong!r}")
        return _failed(error, given, started)
    err = raw.get("error")
    new_state = raw.get("state")
    if not isinstance(new_state, dict):
        new_state = given
    try:
        return SandboxResult(
            ok=raw.get("ok") is True and err is None,
            return_value=raw.get("return_value"),
            writes=tuple((w[0], w[1]) for w in raw.get("writes") or ()),
            removed=tuple(raw.get("removed") or ()),
            stdout=raw.get("stdout") or "",
            error=SandboxError(
                err.get("kind", "internal"),
                err.get("message", ""),
                err.get("line"),
                err.get("traceback", ""),
            )
            if err
            else None,
            duration_ms=round((time.perf_counter() - started) * 1000, 3),
            protections=tuple(raw.get("protections") or ()),
            state=new_state,
            undeclared=tuple(str(n) for n in raw.get("undeclared") or () if isinstance(n, str)),
            stdout_truncated=raw.get("stdout_truncated") is True,
            run_ms=raw.get("duration_ms") if isinstance(raw.get("duration_ms"), float) else None,
            tool_calls=tuple((c[0], c[1]) for c in raw.get("tool_calls") or ()),
            args=raw.get("args"),
        )
    except (AttributeError, IndexError, TypeError, KeyError):
        error = SandboxError("internal", "the sandbox returned an unreadable answer")
        return _failed(error, given, started)


def _failed(error: SandboxError, state: dict[str, Any], started: float) -> SandboxResult:
    return SandboxResult(
        ok=False,
        error=error,
        state=dict(state),
        duration_ms=round((time.perf_counter() - started) * 1000, 3),
    )


def _tail(stderr: bytes) -> str:
    """The end of what the child wrote on stderr, framed: code that escaped the language
    layer writes there, so it is quoted as one JSON string (newlines, carriage returns and
    terminal escapes shown as escapes), never copied raw into a message or a log line."""
    text = stderr.decode("utf-8", "replace").strip()
    return f"; the sandbox wrote on stderr: {json.dumps(text[-500:])}" if text else ""


@dataclass
class _Outcome:
    stdout: bytes = b""
    stderr: bytes = b""
    error: SandboxError | None = None


def _run_child(
    request: bytes, deadline_s: float, max_stdout: int, script: Path = RUNNER
) -> _Outcome:
    """One shot: run *script* as a session child is run (empty temp cwd, scrubbed
    environment, own process group), feed it *request*, read its output (bounded, with a
    deadline) until it exits.  The tests use it to probe the OS layer with scripts of their
    own."""
    workdir = tempfile.mkdtemp(prefix="statecraft-sandbox-")
    proc: subprocess.Popen[bytes] | None = None
    try:
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-B", str(script)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(CHILD_ENV),
            cwd=workdir,
            close_fds=True,
            start_new_session=True,  # own process group: killpg reaches everything
        )
        return _exchange(proc, request, time.monotonic() + deadline_s, max_stdout)
    except OSError as exc:
        return _Outcome(error=SandboxError("internal", f"could not start the sandbox: {exc}"))
    finally:
        if proc is not None:
            _kill(proc)
        shutil.rmtree(workdir, ignore_errors=True)


def _exited(proc: subprocess.Popen[bytes]) -> bool:
    """Whether the child has exited, *without* reaping it: until it is reaped its pid (and
    so its process group id) stays ours, and killing the group cannot reach anybody else."""
    if proc.returncode is not None:
        return True
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:  # pragma: no cover - reaped behind our back
        return True


def _reap(proc: subprocess.Popen[bytes], timeout: float) -> int | None:
    """Wait up to `timeout` for an exiting child, then kill what is left of its process
    group and reap it; its exit status, or None if it did not exit in time (`_kill` then
    does it). The group is killed before the reap: a reaped pid may be reused at once by
    another process (pid_max is 32,768 here), and killpg on it would kill that one."""
    deadline = time.monotonic() + timeout
    pause = 0.0005
    while not _exited(proc):
        if time.monotonic() >= deadline:
            return None
        time.sleep(pause)  # as Popen.wait(timeout) polls
        pause = min(pause * 2, 0.05)
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    return proc.wait()


def _kill(proc: subprocess.Popen[bytes]) -> None:
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


def _exchange(
    proc: subprocess.Popen[bytes], request: bytes, deadline: float, max_stdout: int
) -> _Outcome:
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
                return _Outcome(
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
                        return _Outcome(
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
    returncode = _reap(proc, max(0.05, deadline - time.monotonic()))
    if out:
        return _Outcome(bytes(out), bytes(err))
    return _Outcome(bytes(out), bytes(err), _crash_error(returncode, bytes(err)))


def _crash_error(returncode: int | None, stderr: bytes) -> SandboxError:
    if returncode is not None and 128 < returncode < 128 + 65:
        returncode = 128 - returncode  # bubblewrap exits with 128 + the child's signal
    if returncode is not None and returncode < 0:
        sig = -returncode
        if sig == signal.SIGXCPU:
            return SandboxError("timeout", "CPU time limit exceeded")
        if sig == signal.SIGKILL:
            return SandboxError(
                "memory", "the sandbox process was killed (memory or CPU limit)" + _tail(stderr)
            )
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else sig
        return SandboxError("internal", f"the sandbox process died with signal {name}")
    if b"MemoryError" in stderr:
        return SandboxError("memory", "MemoryError")
    return SandboxError(
        "internal", f"the sandbox process exited with status {returncode}" + _tail(stderr)
    )
