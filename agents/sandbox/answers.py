"""Reading a session child's answer: it comes from the process that ran untrusted code, so
the host parses it as untrusted (no NaN, bounded depth, every field's shape checked) and
turns it, or the way the child died, into a :class:`~agents.sandbox.limits.SandboxResult`.
"""

from __future__ import annotations

import json
import signal
import time
from array import array
from itertools import accumulate
from typing import Any

from agents.sandbox.limits import SandboxError, SandboxResult, failed

MAX_STDERR_BYTES = 16 * 1024
# Values the child sends back are JSON of at most this depth (the child refuses deeper
# values itself; the host does not rely on it).
MAX_ANSWER_DEPTH = 80


class UntrustedAnswer(ValueError):
    """The child answered with JSON the host refuses (NaN, too deep, odd shapes)."""


def refuse_constant(name: str) -> Any:
    raise UntrustedAnswer(f"the sandbox answered {name}, which JSON cannot hold")


# For the depth scan: "[" and "{" become +1, "]" and "}" -1 (as signed bytes), every other
# byte is dropped, so the scan runs in C (bytes.translate, accumulate, max), not byte by byte.
_BRACKET_STEPS = bytes(1 if b in b"[{" else 255 if b in b"]}" else 0 for b in range(256))
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def answer_depth(data: bytes) -> int:
    """The deepest nesting of brackets in *data*, counting every bracket, those inside
    strings too (as the byte-by-byte scan it replaces did)."""
    steps = array("b", data.translate(_BRACKET_STEPS, _NOT_BRACKETS))
    return max(accumulate(steps, initial=0))


def loads_answer(data: bytes) -> tuple[Any, bool]:
    """Parse the child's answer (no NaN/Infinity, at most MAX_ANSWER_DEPTH levels deep),
    and say whether its values hold no float: no number with a fraction or an exponent
    but its own ``duration_ms``. Then every value in it is JSON data of the exact types
    (what ``json.loads`` builds: dicts with text keys, lists, text, ints, booleans, None)
    with no float, which the simulation need not walk again to know
    (``CodeResult.plain``). Every float of the text is counted, so a child that lies
    (a float elsewhere) only makes the answer not plain."""
    if answer_depth(data) > MAX_ANSWER_DEPTH:
        raise UntrustedAnswer("the sandbox answer is nested too deeply")
    floats: list[str] = []

    def parse_float(text: str) -> float:
        floats.append(text)
        return float(text)

    try:
        value = json.loads(data, parse_constant=refuse_constant, parse_float=parse_float)
    except RecursionError as exc:  # pragma: no cover - the depth scan comes first
        raise UntrustedAnswer("the sandbox answer is nested too deeply") from exc
    timing = isinstance(value, dict) and type(value.get("duration_ms")) is float
    return value, len(floats) == (1 if timing else 0)


STATE_KEY_MAX_LENGTH = 256  # the sandbox's own rule (call_context.state_key)


def is_state_key(name: Any) -> bool:
    """The rule every key the sandbox writes obeys (call_context.state_key), checked again
    here: the host trusts no write the child's own checks might have been bypassed for."""
    return (
        isinstance(name, str)
        and 0 < len(name) <= STATE_KEY_MAX_LENGTH
        and not name.startswith("__")
        and not any(ch < " " or ch == "\x7f" for ch in name)
    )


def check_answer_shape(raw: dict[str, Any]) -> str | None:
    """What is wrong with the shape of a call's answer, or None."""
    writes = raw.get("writes") or []
    if not isinstance(writes, list) or not all(
        isinstance(w, list) and len(w) == 2 and is_state_key(w[0]) for w in writes
    ):
        return "writes"
    removed = raw.get("removed") or []
    if not isinstance(removed, list) or not all(is_state_key(n) for n in removed):
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
    request = raw.get("request")
    if request is not None and not (
        isinstance(request, dict)
        and isinstance(request.get("system_instruction", ""), str)
        and isinstance(request.get("hidden_tools", []), list)
        and all(isinstance(t, str) for t in request.get("hidden_tools", []))
    ):
        return "request"
    return None


def result_from_raw(
    raw: dict[str, Any], given: dict[str, Any], started: float, *, plain: bool = False
) -> SandboxResult:
    """The answer as a result; `plain`: the answer held no float (:func:`loads_answer`).
    An answer without ``state`` (the caller did not ask for it back) leaves `given`."""
    wrong = check_answer_shape(raw)
    if wrong is not None:
        error = SandboxError("internal", f"the sandbox answered an unexpected {wrong!r}")
        return failed(error, given, started)
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
            request=raw.get("request"),
            plain=plain,
        )
    except (AttributeError, IndexError, TypeError, KeyError):
        error = SandboxError("internal", "the sandbox returned an unreadable answer")
        return failed(error, given, started)


def tail(stderr: bytes) -> str:
    """The end of what the child wrote on stderr, framed: code that escaped the language
    layer writes there, so it is quoted as one JSON string (newlines, carriage returns and
    terminal escapes shown as escapes), never copied raw into a message or a log line."""
    text = stderr.decode("utf-8", "replace").strip()
    return f"; the sandbox wrote on stderr: {json.dumps(text[-500:])}" if text else ""


def crash_error(returncode: int | None, stderr: bytes) -> SandboxError:
    if returncode is not None and 128 < returncode < 128 + 65:
        returncode = 128 - returncode  # bubblewrap exits with 128 + the child's signal
    if returncode is not None and returncode < 0:
        sig = -returncode
        if sig == signal.SIGXCPU:
            return SandboxError("timeout", "CPU time limit exceeded")
        if sig == signal.SIGKILL:
            return SandboxError(
                "memory", "the sandbox process was killed (memory or CPU limit)" + tail(stderr)
            )
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else sig
        return SandboxError("internal", f"the sandbox process died with signal {name}")
    if b"MemoryError" in stderr:
        return SandboxError("memory", "MemoryError")
    return SandboxError(
        "internal", f"the sandbox process exited with status {returncode}" + tail(stderr)
    )
