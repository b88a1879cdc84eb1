"""CX's end_session ends the invocation in the ADK export too (issue 30): the before_model
callback that answers a trigger with transfer_call + end_session finishes the turn on
ADK's runner after one model call, as in the simulation — never a loop."""

from __future__ import annotations

import pytest

from agents.core.script import parse_script
from agents.core.spec import (
    AgentSpec,
    AppSpec,
    CallbackKind,
    CallbackSpec,
    ScenarioSpec,
    ToolKind,
    ToolSpec,
    VariableSpec,
    VariableType,
)
from tests.adk.export_harness import adk_run, statecraft_run
from tests.test_end_session import TRANSFER_CALL, TRIGGER

pytestmark = [pytest.mark.adk]
pytest.importorskip("google.adk", reason="google-adk is in the dev extra")


def test_end_session_ends_the_turn_on_adk_as_in_the_simulation(tmp_path):
    app = AppSpec(
        name="handover",
        variables=(VariableSpec("queue", VariableType.TEXT),),
        tools=(
            ToolSpec("transfer_call", ToolKind.PYTHON, python_code=TRANSFER_CALL),
            ToolSpec("end_session", ToolKind.PLATFORM),
        ),
        agents=(
            AgentSpec(
                "root",
                instructions="Help.",
                is_root=True,
                tools=("transfer_call", "end_session"),
                callbacks=(CallbackSpec(CallbackKind.BEFORE_MODEL, TRIGGER),),
            ),
        ),
    )
    scenario = ScenarioSpec(
        name="s",
        agent="root",
        steps=parse_script("user: I want a human\nagent: (never asked)\n").steps,
    )
    ours = statecraft_run(app, scenario)
    assert len(ours.model_calls) == 1
    theirs = adk_run(app, scenario, tmp_path)
    assert theirs is not None and not theirs.failed_turns
    assert theirs.calls_per_turn == [1]  # the callback answered once; no second model call
    assert {"transferred": True} in theirs.tool_responses
    assert theirs.final_state["queue"] == "care"
