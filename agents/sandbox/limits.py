"""What a sandboxed call may use and what it gives back: :class:`Limits`,
:class:`SandboxCall`, :class:`SandboxResult`, :class:`SandboxError` and its kinds, and the
checks that refuse a request before any process starts.

No Django import here (nor anywhere in ``agents.sandbox``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

MAX_CODE_CHARS = 200_000
MAX_TOOLS_CHARS = 2_000_000  # all the app's tools, for tools.<name>(...)

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
    # The call's own stop counts CPU (a timer of min(wall_time_s, cpu_time_s) CPU seconds,
    # raised at the user's line, and RLIMIT_CPU); the wall clock is a backstop for code that
    # waits: the session child kills a call still running at wall_time_s + a grace, which
    # the simulation reports as a time stop, not as the code's failure.
    wall_time_s: float = 5.0
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
    # A model callback's ``llm_request`` changes (``system_instruction``, ``hidden_tools``)
    # when it made any; None otherwise.
    request: dict[str, Any] | None = None
    # The answer held no float: its values are JSON data of the exact types, float-free
    # (``answers.loads_answer``).
    plain: bool = False


@dataclass(frozen=True)
class SandboxCall:
    code: str
    entry: str
    kind: Kind = "tool"
    args: Mapping[str, Any] = field(default_factory=dict)


def check_call(code: str, entry: str) -> SandboxError | None:
    if not isinstance(entry, str) or not entry.isidentifier() or entry.startswith("_"):
        return SandboxError("invalid_request", f"{entry!r} is not a function name")
    if not isinstance(code, str):
        return SandboxError("invalid_request", "the code is not text")
    if len(code) > MAX_CODE_CHARS:
        return SandboxError(
            "invalid_request", f"the code is longer than {MAX_CODE_CHARS} characters"
        )
    return None


def check_tools(tools: Mapping[str, str] | None) -> SandboxError | None:
    if not tools:
        return None
    if not all(type(k) is str and type(v) is str for k, v in tools.items()):
        return SandboxError("invalid_request", "tools must map tool names to their code")
    if sum(len(v) for v in tools.values()) > MAX_TOOLS_CHARS:
        return SandboxError(
            "invalid_request", f"the app's tool code is longer than {MAX_TOOLS_CHARS} characters"
        )
    return None


def failed(error: SandboxError, state: dict[str, Any], started: float) -> SandboxResult:
    return SandboxResult(
        ok=False,
        error=error,
        state=dict(state),
        duration_ms=round((time.perf_counter() - started) * 1000, 3),
    )
