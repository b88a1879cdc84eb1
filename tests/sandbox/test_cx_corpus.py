"""CX's own Python runs in the sandbox unchanged: every tool and callback of Bella Notte.

The app is ``examples/bella_notte`` of Google's ``cxas-scrapi`` sdist (see
``tests/cx_corpus.py``): three agents with before/after agent, model and tool callbacks,
and tools from one-line setters to a 1,800-line slot-filling engine that callbacks call
through ``tools.<name>(...)``.  Each file runs as written, with plausible arguments.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from agents.sandbox import Limits, open_session
from tests.cx_corpus import cx_corpus  # noqa: F401 - the fixture

LIMITS = Limits(wall_time_s=10, cpu_time_s=10)
# Plausible values for the tools' parameters, by name.
SAMPLES = {
    "party_size": 4,
    "preferred_date": "2030-06-14",
    "selected_time": "19:30",
    "time": "19:30",
    "guest_name": "Ada Lovelace",
    "name": "Ada Lovelace",
    "special_requests": "none",
    "large_party_phone": "555-0100",
    "phone": "555-0100",
    "items": "2 margherita, 1 tiramisu",
    "flow": "reservation",
    "date": "2030-06-14",
    "pickup_time": "18:45",
    "contact_phone": "555-0100",
    "takeout_items": "2 margherita, 1 tiramisu",
}
KINDS = ("before_agent", "after_agent", "before_model", "after_model", "before_tool", "after_tool")


def app_dir(root: Path) -> Path:
    return root / "examples" / "bella_notte"


def tool_codes(root: Path) -> dict[str, str]:
    tools = app_dir(root) / "tools"
    return {
        path.parent.parent.name: path.read_text()
        for path in sorted(tools.glob("*/python_function/python_code.py"))
    }


def initial_state(root: Path) -> dict:
    app = json.loads((app_dir(root) / "app.json").read_text())
    state = {v["name"]: v["schema"].get("default") for v in app["variableDeclarations"]}
    state["_active_config_id"] = "bella_notte"
    return state


def plausible_arguments(code: str, entry: str, root: Path, codes: dict[str, str]) -> dict:
    func = next(
        n for n in ast.parse(code).body if isinstance(n, ast.FunctionDef) and n.name == entry
    )
    required = func.args.args[: len(func.args.args) - len(func.args.defaults)]
    args = {}
    for arg in required:
        if arg.arg == "input_data":
            args["input_data"] = None  # built by a driver, see engine_inputs
        else:
            args[arg.arg] = SAMPLES[arg.arg]
    return args


def engine_inputs(entry: str) -> str:
    """The input_data of the two engine tools, built in the sandbox from the DAG tool."""
    if entry == "validate_dag_config":
        return "{'raw_config': tools.bella_notte_dag({}).json()['result'], 'available_tools': []}"
    return (
        "{'raw_config': tools.bella_notte_dag({}).json()['result'], 'sm': {}, "
        "'last_user_text': 'A table for four on Friday', 'event_data': {}, "
        "'config_id': 'bella_notte'}"
    )


def test_every_tool_runs_unchanged(cx_corpus):  # noqa: F811
    codes = tool_codes(cx_corpus)
    assert len(codes) == 18
    state = initial_state(cx_corpus)
    failures = {}
    with open_session(limits=LIMITS) as session:
        for name, code in codes.items():
            args = plausible_arguments(code, name, cx_corpus, codes)
            if "input_data" in args:
                # The engines take a config that another tool builds: call them the way
                # the callbacks do, through tools.<name>(...), from a two-line driver.
                driver = (
                    f"def drive():\n"
                    f"    return tools.{name}({{'input_data': {engine_inputs(name)}}}).json()\n"
                )
                result = session.run(driver, entry="drive", kind="tool", state=state, tools=codes)
            else:
                result = session.run(
                    code, entry=name, kind="tool", args=args, state=state, tools=codes
                )
            if not result.ok:
                failures[name] = str(result.error)
            else:
                assert result.return_value is not None, name
    assert failures == {}


@pytest.mark.parametrize("agent", ["Bella_Notte_Host", "Reservation_Agent", "Takeout_Agent"])
def test_every_callback_runs_unchanged(cx_corpus, agent):  # noqa: F811
    codes = tool_codes(cx_corpus)
    state = initial_state(cx_corpus)
    folder = app_dir(cx_corpus) / "agents" / agent
    files = sorted(folder.glob("*_callbacks/*/python_code.py"))
    assert files
    failures = {}
    ran = []
    with open_session(
        limits=LIMITS, context_values={"agent_name": agent, "session_id": "s-1"}
    ) as session:
        for kind in KINDS:  # in the order a turn runs them, threading the state
            for path in files:
                if not path.parent.parent.name.startswith(kind + "_"):
                    continue
                args = {}
                if kind.endswith("_tool"):
                    args = {"tool": "set_guest_info", "args": {"guest_name": "Ada"}}
                    if kind == "after_tool":
                        args["tool_response"] = {"result": {"stored": True, "value": "Ada"}}
                if kind == "after_model":
                    args = {"llm_response": "Sure, for how many guests?"}
                result = session.run(
                    path.read_text(),
                    entry=f"{kind}_callback",
                    kind="callback",
                    args=args,
                    state=state,
                    tools=codes,
                )
                ran.append(kind)
                if result.ok:
                    state = result.state
                else:
                    failures[f"{kind} ({path.parent.parent.name})"] = str(result.error)
    assert failures == {}
    assert ran
