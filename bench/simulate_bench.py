"""Time `simulate` on a 50-turn scenario: Python tools in the real sandbox, and with a fake.

Rows: the real sandbox with a process per code call (``run_code``), the real sandbox with
one warm session for the whole simulation (``open_session``: one process started, a fork
per call), and a fake runner computing the same effects in Python.

Run: .venv/bin/python bench/simulate_bench.py [--turns 50] [--repeats 20]
Prints total and per-turn milliseconds, and peak RSS of this process and of the sandbox
children (``resource.getrusage``). Not a test: timings depend on the machine.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.core.simulate import CodeCall, CodeResult, simulate
from agents.core.spec import (
    AgentSpec,
    AppSpec,
    CallbackKind,
    CallbackSpec,
    ScenarioSpec,
    StepKind,
    StepSpec,
    ToolKind,
    ToolSpec,
    VariableSpec,
    VariableType,
)

LOOKUP_BALANCE = '''
def LookupBalance(account_id):
    """Look up the balance of an account."""
    balance = 1000 + 10 * len(account_id) + context.state.get("lookups", 0)
    context.state["current_account_balance"] = balance
    context.state["lookups"] = context.state.get("lookups", 0) + 1
    return {"account_id": account_id, "balance": balance, "currency": "EUR"}
'''
ADD_NOTE = '''
def AddNote(text):
    """Remember a note about the customer."""
    notes = list(context.state.get("notes", []))
    notes.append(text)
    context.state["notes"] = notes[-5:]
    return {"saved": True, "count": len(notes)}
'''
BEFORE_MODEL = """
def before_model_callback(callback_context):
    callback_context.state["model_calls"] = callback_context.state.get("model_calls", 0) + 1
"""
INSTRUCTIONS = (
    "You are a banking assistant for {{bank_name}}.\n"
    "If the user asks for their balance, call the {@TOOL: LookupBalance}.\n"
    "Always share the {current_account_balance} with the user.\n"
    "Use {@TOOL: AddNote} to remember what matters; notes so far: {notes}.\n"
)


def build(turns: int) -> tuple[AppSpec, ScenarioSpec]:
    T = VariableType
    app = AppSpec(
        name="bank",
        variables=(
            VariableSpec("bank_name", T.TEXT, default="Statecraft Bank"),
            VariableSpec("current_account_balance", T.NUMBER),
            VariableSpec("lookups", T.NUMBER, default=0),
            VariableSpec("notes", T.LIST, item_type=T.TEXT, default=[]),
            VariableSpec("model_calls", T.NUMBER, default=0),
        ),
        tools=(
            ToolSpec("LookupBalance", ToolKind.PYTHON, python_code=LOOKUP_BALANCE),
            ToolSpec("AddNote", ToolKind.PYTHON, python_code=ADD_NOTE),
        ),
        agents=(
            AgentSpec(
                "Banker",
                instructions=INSTRUCTIONS,
                tools=("LookupBalance", "AddNote"),
                callbacks=(CallbackSpec(CallbackKind.BEFORE_MODEL, BEFORE_MODEL),),
                is_root=True,
            ),
        ),
    )
    steps: list[StepSpec] = []
    for turn in range(turns):
        steps.append(StepSpec(StepKind.USER, text=f"Turn {turn}: what is my balance now?"))
        if turn % 2 == 0:
            steps.append(
                StepSpec(StepKind.TOOL, tool="LookupBalance", args={"account_id": f"A-{turn}"})
            )
        else:
            steps.append(StepSpec(StepKind.TOOL, tool="AddNote", args={"text": f"asked {turn}"}))
        steps.append(StepSpec(StepKind.AGENT, text=f"Here you go (turn {turn})."))
    scenario = ScenarioSpec("bench", "Banker", steps=tuple(steps), token_budget=1500)
    return app, scenario


def sandbox_runner(session: Any = None) -> Any:
    """A runner through the sandbox, not memoised: every call really runs."""
    from agents.sandbox.code_runner import sandbox_runner as runner

    return runner(session, memoise=False)


def fake_runner(call: CodeCall) -> CodeResult:
    """The same effects as the code above, computed in Python (no process, no exec)."""
    state = call.state
    if call.entry == "LookupBalance":
        balance = 1000 + 10 * len(call.args["account_id"]) + state.get("lookups", 0)
        writes = (
            ("current_account_balance", balance),
            ("lookups", state.get("lookups", 0) + 1),
        )
        value: Any = {"account_id": call.args["account_id"], "balance": balance, "currency": "EUR"}
    elif call.entry == "AddNote":
        notes = [*state.get("notes", []), call.args["text"]]
        writes = (("notes", notes[-5:]),)
        value = {"saved": True, "count": len(notes)}
    else:
        writes = (("model_calls", state.get("model_calls", 0) + 1),)
        value = None
    return CodeResult(True, value, writes, (), None, None)


def reference_ms() -> float:
    """A fixed reference measured in the same run (as bench/evaluate_bench.py's): a
    pure-Python loop of 3 million multiplications, so figures read as ratios."""
    started = time.perf_counter()
    sum(i * i for i in range(3_000_000))
    return (time.perf_counter() - started) * 1000


def peak_rss_mb(who: int) -> float:
    # ru_maxrss is in KiB on Linux.
    return resource.getrusage(who).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=20)
    options = parser.parse_args()
    app, scenario = build(options.turns)

    refs = [reference_ms()]
    fake_times: list[float] = []
    for _ in range(options.repeats):
        started = time.perf_counter()
        fake = simulate(app, scenario, run_code=fake_runner)
        fake_times.append((time.perf_counter() - started) * 1000)
    assert not fake.diagnostics or all(d.code == "SC413" for d in fake.diagnostics)

    runner = sandbox_runner()
    started = time.perf_counter()
    real = simulate(app, scenario, run_code=runner)
    real_ms = (time.perf_counter() - started) * 1000
    errors = [d for d in real.diagnostics if d.code != "SC413"]
    if errors:
        print("sandbox errors:", *(d.message for d in errors[:3]), sep="\n  ")
    same = real.final_state == fake.final_state and [e.text for e in real.events] == [
        e.text for e in fake.events
    ]

    from agents.sandbox.host import open_session

    session_times: list[float] = []
    for _ in range(max(1, options.repeats // 4)):
        started = time.perf_counter()
        with open_session() as session:  # one session per simulate() call, as in the app
            warm = simulate(app, scenario, run_code=sandbox_runner(session))
        session_times.append((time.perf_counter() - started) * 1000)
    warm_errors = [d for d in warm.diagnostics if d.code != "SC413"]
    if warm_errors:
        print("session errors:", *(d.message for d in warm_errors[:3]), sep="\n  ")
    same_warm = warm.final_state == fake.final_state and [e.text for e in warm.events] == [
        e.text for e in fake.events
    ]
    warm_ms = statistics.median(session_times)
    refs.append(reference_ms())
    ref = statistics.median(refs)

    turns = len(real.turns)
    code_calls = sum(1 for s in scenario.steps if s.kind is StepKind.TOOL) + sum(
        1 for s in scenario.steps if s.kind is StepKind.AGENT
    )
    best, median = min(fake_times), statistics.median(fake_times)
    print(f"scenario: {turns} turns, {len(scenario.steps)} steps, {code_calls} code calls")
    print(
        f"  events {len(real.events)}, final window {len(real.turns[-1].model_input)} events, "
        f"{sum(d.code == 'SC413' for d in real.diagnostics)} forget warnings"
    )
    rows = [
        ("real sandbox, process per call", real_ms, "1 run"),
        ("real sandbox, one session", warm_ms, f"median of {len(session_times)}, start incl."),
        ("fake runner", median, f"median of {options.repeats}, best {best:.2f}"),
    ]
    for label, total, note in rows:
        print(
            f"{label:<31}: total {total:8.1f} ms  per turn {total / turns:6.2f} ms  "
            f"per code call {total / code_calls:6.2f} ms  ÷ reference {total / ref:7.3f}  ({note})"
        )
    print(f"reference loop (3 M multiplications): {ref:.0f} ms, median of {len(refs)}")
    print(f"real and fake runs give the same history and state: {same}")
    print(f"session and fake runs give the same history and state: {same_warm}")
    print(f"peak RSS: this process {peak_rss_mb(resource.RUSAGE_SELF):.1f} MB, ", end="")
    # A child's ru_maxrss counts the pages it shared with this process between fork and
    # exec, so it is an upper bound that cannot go below the parent's size at the fork.
    print(f"largest sandbox child {peak_rss_mb(resource.RUSAGE_CHILDREN):.1f} MB (fork incl.)")


if __name__ == "__main__":
    main()
