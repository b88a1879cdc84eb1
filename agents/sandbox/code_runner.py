"""The simulation's code runner backed by the sandbox: the one bridge between the two.

`agents.core.simulate` takes any `CodeRunner`; this is the real one. Results are
memoised on a call's full input (code, entry, arguments, state, context), so
re-simulating while a designer types starts no process at all; code that reads the
clock sees the time of its first run (or the session clock, ``CodeCall.now``, part of the
key).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
from collections import OrderedDict

from agents.core.diagnostics import Message
from agents.core.simulate import CodeCall, CodeResult, CodeRunner
from agents.sandbox import host
from agents.sandbox.clock import CLOCK_KEY  # the session child takes it out of the context values

logger = logging.getLogger("agents.sandbox")

CACHE_SIZE = 512
# The memo cache holds at most this many bytes of keys and results (JSON-measured); one
# entry larger than an eighth of it is not kept at all.
CACHE_MAX_BYTES = 16 * 1024 * 1024
_RESULTS: OrderedDict[str, tuple[CodeResult, int]] = OrderedDict()
# Simulations of one process run in threads (a Run all's pieces, the explanation search's
# trials): the memo's reads and writes hold this.
_RESULTS_LOCK = threading.Lock()
_cache_bytes = 0


def clear_cache() -> None:
    global _cache_bytes
    with _RESULTS_LOCK:
        _RESULTS.clear()
        _cache_bytes = 0


def cache_bytes() -> int:
    return _cache_bytes


def _remember(key: str, outcome: CodeResult) -> None:
    global _cache_bytes
    size = len(key) + len(
        json.dumps(
            [outcome.return_value, outcome.writes, outcome.error, outcome.stdout], default=str
        )
    )
    if size > CACHE_MAX_BYTES // 8:
        return
    with _RESULTS_LOCK:
        previous = _RESULTS.pop(key, None)
        if previous is not None:
            _cache_bytes -= previous[1]
        _RESULTS[key] = (outcome, size)
        _cache_bytes += size
        while _RESULTS and (len(_RESULTS) > CACHE_SIZE or _cache_bytes > CACHE_MAX_BYTES):
            _, (_, evicted) = _RESULTS.popitem(last=False)
            _cache_bytes -= evicted


def _one_line(text: str) -> str:
    """Control characters (newline, carriage return, terminal escapes) shown as escapes."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


# What a failed call says, as a `Message` the pages render in the reader's language: the
# kind of failure and the sandbox's own words about a limit. What the code itself raised
# (`NameError: name 'x' is not defined`, or a refusal of the sandbox the code could catch)
# is the program's output and stays as Python wrote it.
_KINDS = {
    "exception": Message("exception"),
    "timeout": Message("timeout"),
    "memory": Message("memory"),
    "output_too_large": Message("output_too_large"),
    "forbidden": Message("forbidden"),
    "syntax": Message("syntax"),
    "serialization": Message("serialization"),
    "entry_not_found": Message("entry_not_found"),
    "invalid_request": Message("invalid_request"),
    "internal": Message("internal"),
}
_LIMITS = {
    "time limit exceeded": Message("time limit exceeded"),
    "CPU time limit exceeded": Message("CPU time limit exceeded"),
    "time limit exceeded (the code did not stop and was killed)": Message(
        "time limit exceeded (the code did not stop and was killed)"
    ),
}
_TOO_LARGE = re.compile(r"the sandbox answer is larger than (\d+) bytes")
_KILLED = "the sandbox process was killed (memory or CPU limit)"
_NO_ENTRY = re.compile(r"the code does not define a function named (.+)")


def error_message(kind: str, message: str) -> str:
    """`kind: message` as the designer reads it (the English unchanged)."""
    words: str = _LIMITS.get(message, message)
    if match := _TOO_LARGE.fullmatch(message):
        words = Message("the sandbox answer is larger than %(bytes)s bytes", bytes=match[1])
    elif match := _NO_ENTRY.fullmatch(message):
        words = Message("the code does not define a function named %(name)s", name=match[1])
    elif message.startswith(_KILLED):
        words = Message(
            "the sandbox process was killed (memory or CPU limit)%(rest)s",
            rest=message[len(_KILLED) :],
        )
    return Message("%(kind)s: %(message)s", kind=_KINDS.get(kind, kind), message=words)


# The sandbox's words when it killed a call at its wall-clock limit, or the host stopped
# waiting for the session child: a loaded machine can reach them with code that would finish.
_WALL_CLOCK = frozenset(
    {"time limit exceeded", "time limit exceeded (the code did not stop and was killed)"}
)


def wall_clock_stop(error: host.SandboxError | None) -> str:
    """Why a call's failure is a time stop rather than the code's doing (the wall-clock
    kill, `_WALL_CLOCK`); "" otherwise. The CPU limit the code reaches (``SandboxTimeout:
    CPU time limit exceeded``, raised at its line) is the code's own: an error, the same on
    any machine."""
    if error is None or error.kind != "timeout" or error.message not in _WALL_CLOCK:
        return ""
    return Message("a sandbox call reached its wall-clock limit")


def to_code_result(result: host.SandboxResult) -> CodeResult:
    error = result.error
    if error is not None and error.kind == "internal":
        # Not the user's code failing: the sandbox could not start or answer. An operator's
        # problem (missing bubblewrap, a killed child, a host limit).
        # The message may carry text from the child (its answer, its stderr): one quoted
        # string, so it cannot start a line of its own in the server's log.
        logger.error("sandbox failure: %s", _one_line(error.message))
    return CodeResult(
        ok=result.ok,
        return_value=result.return_value,
        writes=result.writes,
        removed=result.removed,
        error=error_message(error.kind, error.message) if error else None,
        error_line=error.line if error else None,
        stdout=result.stdout,
        # The sandbox failing is not the code raising: the simulation's turn goes on.
        ran=error is None or error.kind != "internal",
        tool_calls=result.tool_calls,
        args=result.args,
        request=result.request,
        stopped=wall_clock_stop(error),
        plain=result.plain,
    )


def sandbox_runner(
    session: host.SandboxSession | None = None, *, memoise: bool = True
) -> CodeRunner:
    """Run each call in `session` (one warm sandbox per simulation: a fresh locked-down
    process per call) or, without one, in a sandbox process of its own. Never raises."""

    def run(call: CodeCall) -> CodeResult:
        key = ""
        if memoise:
            # The input's JSON in the engine's own order (the run is deterministic: the
            # same input comes in the same order; sorting every key of a 50 KB state at
            # every call cost more than the calls it saved), kept as its digest.
            text = json.dumps(
                [
                    call.code,
                    call.entry,
                    call.kind,
                    call.args,
                    call.state,
                    call.context_values,
                    call.now,
                    # The app's tools, by digest: the key stays small.
                    host.tools_digest(call.tools) if call.tools else "",
                ],
                default=str,
            )
            key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
            del text
            with _RESULTS_LOCK:
                cached = _RESULTS.get(key)
                if cached is not None:
                    _RESULTS.move_to_end(key)
            if cached is not None:
                return cached[0]
        context_values = (
            {**call.context_values, CLOCK_KEY: call.now} if call.now else call.context_values
        )
        if session is not None:
            # The simulation reads the writes, never the state after the call: not sent back.
            answer = session.run(
                call.code,
                entry=call.entry,
                kind=call.kind,
                args=call.args,
                state=call.state,
                context_values=context_values,
                tools=call.tools,
                state_back=False,
            )
        else:
            answer = host.run_code(
                call.code,
                entry=call.entry,
                kind=call.kind,
                args=call.args,
                state=call.state,
                context_values=context_values,
                tools=call.tools,
            )
        outcome = to_code_result(answer)
        if memoise and not outcome.stopped:  # a stop is the machine's, not the code's
            _remember(key, outcome)
        return outcome

    run.reads_only = True  # type: ignore[attr-defined]  # the call is sent as JSON, never changed
    return run
