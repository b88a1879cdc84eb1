"""Parent side of the sandbox: starts the child, feeds it, bounds it, reads its answer.

No Django import here: the module is used from Django views but does not depend on them.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal

RUNNER = Path(__file__).with_name("runner.py")
CHILD_ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"}
# Time the child needs to start Python and import RestrictedPython; the parent's hard
# deadline is the wall-clock limit plus this, the child's own timer is the limit itself.
STARTUP_GRACE_S = 1.0
MAX_CODE_CHARS = 200_000
MAX_STDERR_BYTES = 16 * 1024

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
) -> SandboxResult:
    """Run one tool or callback in a fresh sandboxed process.

    *entry* is the function to call: the tool name for a tool, the callback function name
    (``before_model_callback``...) for a callback.  Never raises for anything the code does.
    """
    return run_many(
        [SandboxCall(code=code, entry=entry, kind=kind, args=dict(args or {}))],
        state=state,
        variables_declared=variables_declared,
        limits=limits,
        context_values=context_values,
    )[0]


def run_many(
    calls: Sequence[SandboxCall],
    *,
    state: Mapping[str, Any] | None = None,
    variables_declared: Sequence[str] | None = None,
    limits: Limits = Limits(),
    context_values: Mapping[str, Any] | None = None,
) -> list[SandboxResult]:
    """Run several calls one after the other in ONE sandboxed process (the warm path).

    Each call has its own wall-clock budget; the CPU limit is the sum of the calls'.  The
    state each call leaves is the state the next one starts from (a failed call keeps the
    writes it made before failing).  If the process has to be killed (timeout, crash), the
    calls not yet answered all get that error.
    """
    calls = list(calls)
    if not calls:
        return []
    state = dict(state or {})
    started = time.perf_counter()

    for call in calls:
        if not call.entry.isidentifier() or call.entry.startswith("_"):
            error = SandboxError("invalid_request", f"{call.entry!r} is not a function name")
            return [_failed(error, state, started) for _ in calls]
        if len(call.code) > MAX_CODE_CHARS:
            error = SandboxError(
                "invalid_request", f"the code is longer than {MAX_CODE_CHARS} characters"
            )
            return [_failed(error, state, started) for _ in calls]

    try:
        request = json.dumps(
            {
                "rp_path": _restrictedpython_path(),
                "state": state,
                "declared": list(variables_declared) if variables_declared is not None else None,
                "context_values": dict(context_values or {}),
                "limits": limits.as_json(),
                "calls": [
                    {"code": c.code, "entry": c.entry, "kind": c.kind, "args": dict(c.args)}
                    for c in calls
                ],
            },
            ensure_ascii=False,
            allow_nan=False,
        ).encode("utf-8")
    except (TypeError, ValueError) as exc:
        error = SandboxError("invalid_request", f"arguments or state are not JSON: {exc}")
        return [_failed(error, state, started) for _ in calls]

    deadline = limits.wall_time_s * len(calls) + STARTUP_GRACE_S
    outcome = _run_child(request, deadline, limits.max_output_bytes + 64 * 1024)
    duration_ms = round((time.perf_counter() - started) * 1000, 3)

    if outcome.error is not None:
        return [_failed(outcome.error, state, started) for _ in calls]
    try:
        answer = json.loads(outcome.stdout)
        raw_results = answer["results"]
        protections = tuple(answer.get("protections") or ())
    except (ValueError, KeyError, TypeError):
        error = SandboxError(
            "internal", "the sandbox returned an unreadable answer" + _tail(outcome.stderr)
        )
        return [_failed(error, state, started) for _ in calls]

    results: list[SandboxResult] = []
    previous_state = state
    for raw in raw_results:
        err = raw.get("error")
        new_state = raw.get("state")
        if new_state is None:
            new_state = previous_state
        result = SandboxResult(
            ok=bool(raw.get("ok")) and err is None,
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
            duration_ms=duration_ms,
            protections=protections,
            state=new_state,
            undeclared=tuple(raw.get("undeclared") or ()),
            stdout_truncated=bool(raw.get("stdout_truncated")),
            run_ms=raw.get("duration_ms"),
        )
        results.append(result)
        previous_state = new_state
    while len(results) < len(calls):  # pragma: no cover - the child answers every call
        results.append(_failed(SandboxError("internal", "no answer for this call"), state, started))
    return results


# --------------------------------------------------------------------------- internals


@cache
def _restrictedpython_path() -> str:
    spec = importlib.util.find_spec("RestrictedPython")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("RestrictedPython is not installed")
    return str(Path(next(iter(spec.submodule_search_locations))).parent)


def _failed(error: SandboxError, state: dict[str, Any], started: float) -> SandboxResult:
    return SandboxResult(
        ok=False,
        error=error,
        state=dict(state),
        duration_ms=round((time.perf_counter() - started) * 1000, 3),
    )


def _tail(stderr: bytes) -> str:
    text = stderr.decode("utf-8", "replace").strip()
    return f": {text[-500:]}" if text else ""


@dataclass
class _Outcome:
    stdout: bytes = b""
    stderr: bytes = b""
    error: SandboxError | None = None


def _run_child(
    request: bytes, deadline_s: float, max_stdout: int, script: Path = RUNNER
) -> _Outcome:
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


def _kill(proc: subprocess.Popen[bytes]) -> None:
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
    try:
        returncode = proc.wait(timeout=max(0.05, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        returncode = None
    if out:
        return _Outcome(bytes(out), bytes(err))
    return _Outcome(bytes(out), bytes(err), _crash_error(returncode, bytes(err)))


def _crash_error(returncode: int | None, stderr: bytes) -> SandboxError:
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
