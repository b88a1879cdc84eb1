"""Per turn: Statecraft's simulate (every code call in the sandbox) beside ADK's InMemoryRunner.

Run on purpose (not part of the test suite; needs the ``adk`` extra):

    .venv/bin/python bench/adk_turn_bench.py [--turns 20] [--repeats 5]

One scripted scenario, the differential test's way (tests/adk/test_differential.py): each
turn a user message, a tool call (``ping`` or ``set_tier``, Python tools writing state) and
a text answer, with a ``before_model`` and an ``after_tool`` callback appending to a list.
Statecraft runs it through ``simulate`` with one sandbox session started beforehand (its
start is not counted; no memo, so every call really runs: a fresh forked, locked-down
process per tool and callback call); ADK runs the same tools and callbacks as plain Python
on ``InMemoryRunner`` with a scripted ``BaseLlm``. Prints the median per-turn time of each,
their ratio, and a fixed reference loop (to read the figures on a loaded machine); then
where Statecraft's turn goes, per turn (medians): the engine (the time outside the code
calls), the code calls (wall time, from the runner's call to its result), and of the
latter this process's own CPU (encoding the request, reading the answer), so the rest is
the sandbox's processes and the wait for them.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agents.core.simulate import simulate  # noqa: E402
from agents.core.spec import (  # noqa: E402
    CallbackKind,
    ScenarioSpec,
    SessionSpec,
    StepKind,
    StepSpec,
)
from agents.sandbox import open_session  # noqa: E402
from agents.sandbox.code_runner import sandbox_runner  # noqa: E402
from tests.adk.test_differential import (  # noqa: E402
    LOG,
    PING,
    SET_TIER,
    TIER,
    Scenario,
    adk_run,
    log,
    statecraft_app,
)


def reference_ms() -> float:
    started = time.perf_counter()
    sum(i * i for i in range(3_000_000))
    return (time.perf_counter() - started) * 1000


def scenario(turns: int) -> Scenario:
    script = []
    for number in range(turns):
        call = (
            ("call", "ping", {})
            if number % 2
            else ("call", "set_tier", {"tier": ("gold", "silver")[number % 4 // 2]})
        )
        script.append((f"turn {number}", [call, ("text", f"done {number}")]))
    return Scenario(
        "bench",
        (LOG, TIER),
        "You serve a {{tier}} customer.",
        script,
        tools={"ping": PING, "set_tier": SET_TIER},
        callbacks={
            CallbackKind.BEFORE_MODEL: [log("before_model")],
            CallbackKind.AFTER_TOOL: [log("after_tool")],
        },
    )


def statecraft_spec(bench: Scenario) -> ScenarioSpec:
    steps: list[StepSpec] = []
    for text, answers in bench.turns:
        steps.append(StepSpec(StepKind.USER, text=text))
        for answer in answers:
            if answer[0] == "call":
                steps.append(StepSpec(StepKind.TOOL, tool=answer[1], args=dict(answer[2])))
            else:
                steps.append(StepSpec(StepKind.AGENT, text=answer[1]))
    return ScenarioSpec(
        name=bench.name, agent="support", steps=tuple(steps), session=SessionSpec(values={})
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # ADK warns of the scripted model's missing token counts
    bench = scenario(args.turns)
    app, spec = statecraft_app(bench), statecraft_spec(bench)
    ours, theirs, refs = [], [], []
    adk_run(bench)  # ADK's imports and first-run costs, not counted
    with open_session() as session:
        session.run("def t():\n    return 1\n", entry="t", kind="tool")  # started
        sandboxed = sandbox_runner(session, memoise=False)
        calls = []
        in_calls = [0.0, 0.0]  # wall, this process's CPU

        def run(call):
            calls.append(call.entry)
            started, cpu = time.perf_counter(), time.process_time()
            try:
                return sandboxed(call)
            finally:
                in_calls[0] += time.perf_counter() - started
                in_calls[1] += time.process_time() - cpu

        engine, calls_wall, calls_cpu = [], [], []
        for _ in range(args.repeats):
            refs.append(reference_ms())
            in_calls[:] = [0.0, 0.0]
            started = time.perf_counter()
            result = simulate(app, spec, run_code=run)
            took = time.perf_counter() - started
            ours.append(took * 1000 / args.turns)
            engine.append((took - in_calls[0]) * 1000 / args.turns)
            calls_wall.append(in_calls[0] * 1000 / args.turns)
            calls_cpu.append(in_calls[1] * 1000 / args.turns)
            started = time.perf_counter()
            outcome = adk_run(bench)
            theirs.append((time.perf_counter() - started) * 1000 / args.turns)
    assert result.final_state.get("log") == outcome.final_state.get("log"), "the runs differ"
    code_calls = len(calls) / args.repeats
    a, b, r = statistics.median(ours), statistics.median(theirs), statistics.median(refs)
    print(
        f"{args.turns} turns, ~{code_calls / args.turns:.1f} code calls a turn, "
        f"median of {args.repeats}: Statecraft {a:.1f} ms/turn, ADK InMemoryRunner "
        f"{b:.1f} ms/turn, ratio {a / b:.1f}x (reference loop {r:.0f} ms)"
    )
    print(
        f"Statecraft's turn: engine {statistics.median(engine):.2f} ms, code calls "
        f"{statistics.median(calls_wall):.2f} ms (of which this process's CPU "
        f"{statistics.median(calls_cpu):.2f} ms)"
    )


if __name__ == "__main__":
    main()
