"""The simulation's code runner backed by the sandbox: the one bridge between the two.

`agents.core.simulate` takes any `CodeRunner`; this is the real one. Results are
memoised on a call's full input (code, entry, arguments, state, context), so
re-simulating while a designer types starts no process at all; code that reads the
clock sees the time of its first run.
"""

from __future__ import annotations

import json
from collections import OrderedDict

from agents.core.simulate import CodeCall, CodeResult, CodeRunner
from agents.sandbox import host

CACHE_SIZE = 512
_RESULTS: OrderedDict[str, CodeResult] = OrderedDict()


def clear_cache() -> None:
    _RESULTS.clear()


def to_code_result(result: host.SandboxResult) -> CodeResult:
    error = result.error
    return CodeResult(
        ok=result.ok,
        return_value=result.return_value,
        writes=result.writes,
        removed=result.removed,
        error=f"{error.kind}: {error.message}" if error else None,
        error_line=error.line if error else None,
        stdout=result.stdout,
    )


def sandbox_runner(
    session: host.SandboxSession | None = None, *, memoise: bool = True
) -> CodeRunner:
    """Run each call in `session` (one warm sandbox per simulation: a fresh locked-down
    process per call) or, without one, in a sandbox process of its own. Never raises."""

    def run(call: CodeCall) -> CodeResult:
        key = ""
        if memoise:
            key = json.dumps(
                [call.code, call.entry, call.kind, call.args, call.state, call.context_values],
                sort_keys=True,
                default=str,
            )
            cached = _RESULTS.get(key)
            if cached is not None:
                _RESULTS.move_to_end(key)
                return cached
        execute = session.run if session is not None else host.run_code
        outcome = to_code_result(
            execute(
                call.code,
                entry=call.entry,
                kind=call.kind,
                args=call.args,
                state=call.state,
                context_values=call.context_values,
            )
        )
        if memoise:
            _RESULTS[key] = outcome
            if len(_RESULTS) > CACHE_SIZE:
                _RESULTS.popitem(last=False)
        return outcome

    return run
