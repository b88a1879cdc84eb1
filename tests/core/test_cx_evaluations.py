"""CX golden evaluations ↔ scenarios, checked against the official ces_v1beta types."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from agents.core.cx.app import read_cx_files, to_cx_files
from agents.core.cx.evaluations import (
    evaluation_to_scenario,
    needs_model_evaluations,
    scenario_to_evaluation,
)
from agents.core.script import format_script, parse_script
from agents.core.spec import AgentSpec, AppSpec, ScenarioSpec, StepKind, ToolKind, ToolSpec
from tests import optional
from tests.cx_corpus import cx_corpus  # noqa: F401 - the fixture
from tests.cx_tree import folder_files

SCRIPT = """variables: {"event_data": {"party_size": 4}}
event: welcome
user: I'd like a table
tool: set_party {"party_size": 4}
mock [Check_Mock]: find_times {"times": ["18:00"]}
expect call [Check_Called]: set_party {"party_size": 6.0}
expect call: find_times
expect response: find_times {"times": ["18:00"]}
expect state [Check_Pending]: {"sm": {"pending": {"party_size": 6}}}
expect transfer: Takeout Agent
expect agent: Welcome to Bella Notte!
user: thanks
expect no calls
agent:"""


def _app() -> AppSpec:
    tools = (ToolSpec("set_party", ToolKind.PYTHON), ToolSpec("find_times", ToolKind.PYTHON))
    return AppSpec(
        name="Bella",
        tools=tools,
        agents=(
            AgentSpec(
                "Host",
                tools=("set_party", "find_times"),
                children=("Takeout Agent",),
                is_root=True,
            ),
            AgentSpec("Takeout Agent"),
        ),
    )


def _strict(data: dict):
    return optional.ces_v1beta().Evaluation.from_json(json.dumps(data), ignore_unknown_fields=False)


def test_a_scenario_exports_as_an_evaluation_the_official_type_parses_strictly():
    steps = parse_script(SCRIPT).steps
    scenario = ScenarioSpec(name="Golden: table for six", agent="Host", steps=steps)
    data = scenario_to_evaluation(_app(), scenario)
    parsed = _strict(data)
    assert parsed.display_name == "Golden: table for six"
    first, second = parsed.golden.turns
    kinds = [
        next(k for k in ("user_input", "agent_transfer", "expectation") if k in step)
        for step in first.steps
    ]
    assert kinds == ["user_input"] * 3 + ["expectation"] * 8
    expectations = [s.expectation for s in first.steps[3:]]
    assert expectations[0].tool_call.tool == "set_party"
    assert dict(expectations[0].tool_call.args) == {"party_size": 4}
    assert expectations[1].mock_tool_response.tool == "find_times"
    assert expectations[1].note == "Check_Mock"
    assert "args" not in data["golden"]["turns"][0]["steps"][6]["expectation"]["toolCall"]
    assert expectations[4].tool_response.tool == "find_times"
    assert expectations[5].updated_variables["sm"]["pending"]["party_size"] == 6
    assert expectations[6].agent_transfer.target_agent == "Takeout_Agent"
    assert expectations[7].agent_response.chunks[0].text == "Welcome to Bella Notte!"
    assert second.steps[1].expectation.no_tool_calls is True


def test_an_exported_golden_imports_back_as_the_same_steps():
    steps = parse_script(SCRIPT.replace('tool: set_party {"party_size": 4}\n', "")).steps
    scenario = ScenarioSpec(name="g", agent="Host", steps=steps)
    data = scenario_to_evaluation(_app(), scenario)
    back, problems = evaluation_to_scenario(_app(), data, "evaluations/g/g.json")
    assert problems == ()
    assert back is not None and back.agent == "Host"
    # Each turn ends with the model's reply (an empty agent step), as CX's turns do.
    assert format_script(back.steps) == format_script(steps).replace(
        "expect agent: Welcome to Bella Notte!\nuser: thanks",
        "expect agent: Welcome to Bella Notte!\nuser: thanks",
    )
    assert back.steps == steps


def test_the_evaluations_create_time_is_the_scenarios_session_clock():
    steps = parse_script("user: hi\nexpect no calls\n").steps
    data = scenario_to_evaluation(_app(), ScenarioSpec(name="g", agent="Host", steps=steps))
    back, _ = evaluation_to_scenario(_app(), data, "evaluations/g/g.json")
    assert back is not None and back.session.now == ""  # none: the real clock
    data["createTime"] = "2026-06-01T10:11:12.123456789Z"
    back, _ = evaluation_to_scenario(_app(), data, "evaluations/g/g.json")
    assert back is not None and back.session.now == "2026-06-01T10:11:12.123456Z"


def test_a_whole_app_export_writes_evaluations_and_the_import_reads_them(tmp_path):
    steps = parse_script('user: hi\nexpect call: set_party {"party_size": 2}\nagent:').steps
    scenario = ScenarioSpec(name="Party of two", agent="Host", steps=steps)
    files, notes = to_cx_files(_app(), [scenario])
    data = json.loads(files["evaluations/Party_of_two/Party_of_two.json"])
    _strict(data)
    app, scenarios, _ = read_cx_files(files)
    assert app is not None and [s.name for s in scenarios] == ["Party of two"]
    assert scenarios[0].steps == steps
    assert not any("scenarios have no CX" in d.message for d in notes)


@pytest.fixture
def bella(cx_corpus):  # noqa: F811
    return cx_corpus / "examples" / "bella_notte"


def test_bella_notte_goldens_import_and_export_unchanged_as_the_originals(bella):
    files = folder_files(bella)
    app, scenarios, _ = read_cx_files(files)
    assert app is not None
    goldens = sorted(p for p in files if p.startswith("evaluations/"))
    assert len(goldens) == 33
    assert len(scenarios) == 28  # the other 5 are of the scenario kind: they need a model
    assert [name for name, _ in needs_model_evaluations(app)] == [
        "Scenario - Full Booking Flow (Simulated User)",
        "Scenario - Large Party Rejection",
        "Steer Back - Confused User Recovery",
        "Steer Back - Invalid Input Recovery",
        "Steer Back - Off-Topic Recovery",
    ]
    exported, _ = to_cx_files(app, scenarios)
    for path in goldens:
        original = json.loads(files[path])
        again = json.loads(exported[path])
        assert again == original, path
        _strict(again)
    # A golden whose steps changed keeps the rest of its original JSON.
    first = scenarios[0]
    changed = replace(first, steps=(*first.steps, *parse_script("expect no calls").steps))
    data = scenario_to_evaluation(app, changed)
    original = json.loads(files[f"evaluations/{first.cx['folder']}/{first.cx['folder']}.json"])
    assert {k: v for k, v in data.items() if k != "golden"} == {
        k: v for k, v in original.items() if k != "golden"
    }
    assert data["golden"]["evaluationExpectations"] == original["golden"]["evaluationExpectations"]
    assert data["golden"]["turns"][-1]["steps"][-1] == {"expectation": {"noToolCalls": True}}
    _strict(data)
    script = format_script(first.steps)
    assert "expect call [Check_SetPartySize_Called_6]: set_reservation_basics" in script
    assert first.steps[0].kind is StepKind.USER


def test_an_evaluation_of_the_scenario_kind_is_noted_in_the_same_words_read_either_way():
    """SC607 for a simulated-user evaluation: the ZIP's import and one evaluation read
    alone say the same thing (one definition, one catalog entry)."""
    path = "evaluations/sim/sim.json"
    data = {"displayName": "Sim", "scenario": {"task": "book a table", "rubrics": []}}
    files, _ = to_cx_files(_app(), ())
    _, _, found = read_cx_files({**files, path: json.dumps(data).encode()})
    _, alone = evaluation_to_scenario(_app(), data, path)
    in_zip = [d for d in found if d.code == "SC607" and path in (d.subject or "")]
    assert [d.message for d in in_zip] == [d.message for d in alone]
