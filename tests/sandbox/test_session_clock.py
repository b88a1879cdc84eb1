"""The session clock: sandboxed code reads the scenario's ``now`` instead of the real clock
(CX tools compare dates with today; goldens are written for one day)."""

from __future__ import annotations

from agents.core.simulate import CodeCall, simulate
from agents.core.spec import (
    AgentSpec,
    AppSpec,
    ScenarioSpec,
    SessionSpec,
    StepKind,
    StepSpec,
    ToolKind,
    ToolSpec,
)
from agents.sandbox.code_runner import sandbox_runner

CLOCK = '''
import datetime
import time
from datetime import date


def clock():
    """What the code sees as now."""
    return {
        "today": date.today().isoformat(),
        "now": datetime.datetime.now().isoformat(),
        "utc": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "time": time.time(),
        "past": datetime.datetime.strptime("2026-06-17", "%Y-%m-%d").date() < date.today(),
    }
'''


def call(now: str) -> dict:
    run = sandbox_runner(memoise=False)
    result = run(
        CodeCall(code=CLOCK, entry="clock", kind="tool", args={}, state={}, filename="<t>", now=now)
    )
    assert result.ok, result.error
    return result.return_value


def test_code_reads_the_session_clock_through_datetime_and_time() -> None:
    assert call("2026-06-01T12:00:00") == {
        "today": "2026-06-01",
        "now": "2026-06-01T12:00:00",
        "utc": "2026-06-01T12:00:00+00:00",  # without an offset, the clock is UTC
        "time": 1780315200.0,
        "past": False,
    }
    shifted = call("2026-06-01T23:30:00+02:00")
    assert shifted["today"] == "2026-06-01" and shifted["utc"] == "2026-06-01T21:30:00+00:00"


def test_without_a_session_clock_the_code_reads_the_real_clock() -> None:
    import datetime

    assert call("")["today"] == datetime.date.today().isoformat()


def test_the_scenario_session_now_reaches_the_tools_and_a_bad_one_is_reported() -> None:
    app = AppSpec(
        name="clock",
        tools=(ToolSpec("clock", ToolKind.PYTHON, python_code=CLOCK),),
        agents=(AgentSpec("A", tools=("clock",), is_root=True),),
    )
    steps = (StepSpec(StepKind.USER, text="hi"), StepSpec(StepKind.TOOL, tool="clock"))

    def today(now: str) -> tuple[str, list[str]]:
        scenario = ScenarioSpec("s", "A", steps=steps, session=SessionSpec(now=now))
        result = simulate(app, scenario, run_code=sandbox_runner())
        response = next(e.value for e in result.events if e.kind == "tool_response")
        return response["today"], [d.code for d in result.diagnostics]

    assert today("2026-07-04T09:00:00") == ("2026-07-04", [])
    real, codes = today("next tuesday")
    assert real == __import__("datetime").date.today().isoformat() and codes == ["SC418"]


# A value changed in place is a write (Bella Notte's confirm_pending), found by the same
# call process: kept here with the other per-call behaviour of the sandbox child.
CONFIRM = '''
def confirm_pending():
    """Commit the pending slots."""
    sm = context.state["sm"]
    sm["filled"].update(sm["pending"])
    sm["pending"] = {}
    context.state["count"] = 1
    return {"stored": True}
'''


def test_a_value_changed_in_place_is_written_after_the_codes_own_writes() -> None:
    run = sandbox_runner(memoise=False)
    state = {"sm": {"filled": {"a": 1}, "pending": {"b": 2}}, "other": {"x": 1}}
    result = run(
        CodeCall(
            code=CONFIRM,
            entry="confirm_pending",
            kind="tool",
            args={},
            state=state,
            filename="<tool:confirm_pending>",
        )
    )
    assert result.ok, result.error
    assert result.writes == (
        ("count", 1),
        ("sm", {"filled": {"a": 1, "b": 2}, "pending": {}}),
    )
