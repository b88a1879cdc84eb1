"""The runtime as CX runs it (issue 18): CX-style apps of our own, written the way public CX
apps are (a slot-filling ``before_model`` that reads the user's reply as
``llm_request.contents[-1]``, a ``before_tool`` that changes ``input`` in place, tools
called from code through ``tools.<name>()``, toolsets shipped as Terraform templates), each
imported from its CX files and run through the real sandbox.

One test per point of the issue; each fails on the code before it (the point's number is in
the test's name).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from agents.core.cx.app import read_cx_files, to_cx_files
from agents.core.evaluate import evaluate
from agents.core.explain import explain_failures, listed_calls
from agents.core.lint import lint_app
from agents.core.simulate import SimulationResult, simulate
from agents.core.spec import AppSpec, ScenarioSpec, ToolKind
from agents.sandbox import open_session, run_code
from agents.sandbox.code_runner import sandbox_runner

# --------------------------------------------------------------------------- the app

CONFIRM_CODE = '''
def confirm_pending(tool_context) -> dict:
    """Commit the pending booking. Call when the guest confirms."""
    booking = tool_context.state.get("booking", {})
    booking["confirmed"] = bool(booking.get("pending"))
    tool_context.state["booking"] = booking
    return {"committed": booking["confirmed"]}
'''

HOLD_CODE = '''
def hold_table(party_size: int, tool_context, proposal_id: str = "") -> dict:
    """Hold a table for the party."""
    booking = tool_context.state.get("booking", {})
    booking["pending"] = {"party_size": party_size, "proposal_id": proposal_id}
    tool_context.state["booking"] = booking
    return {"held": True, "proposal_id": proposal_id}
'''

# The slot-filling pattern of Google's bella_notte: the user's reply is the last content.
HOST_BEFORE_MODEL = """
from typing import Optional


def before_model_callback(
    callback_context: CallbackContext, llm_request: LlmRequest
) -> Optional[LlmResponse]:
    booking = callback_context.state.get("booking", {})
    last = llm_request.contents[-1] if llm_request.contents else None
    text = ""
    if last is not None and last.role == "user":
        text = (last.parts[0].text or "").strip().lower()
    callback_context.state["_heard"] = callback_context.state.get("_heard", []) + [text]
    if booking.get("pending") and not booking.get("confirmed") and text == "yes":
        # Deterministic auto-confirm: the engine answers with the call, not the model.
        return LlmResponse.from_parts(
            parts=[Part.from_function_call(name="confirm_pending", args={})]
        )
    if booking.get("confirmed") and not booking.get("announced"):
        booking["announced"] = True
        callback_context.state["booking"] = booking
        return LlmResponse.from_parts(parts=[Part.from_text(text="Your table is booked.")])
    return None
"""

# A turn counter the model reads as a state update, written before every model call.
HOST_BEFORE_AGENT = """
def before_agent_callback(callback_context):
    callback_context.state["turns"] = callback_context.state.get("turns", 0) + 1
    return None
"""

# CX's signature; the arguments are changed in place, as public CX apps do.
HOST_BEFORE_TOOL = """
def before_tool_callback(tool, input, callback_context):
    if tool.name == "hold_table" and not input.get("proposal_id"):
        input["proposal_id"] = "P-" + str(input["party_size"])
    return None
"""

# An OpenAPI toolset's operation and the app's own tool, both called from code.
LOOKUP_CODE = '''
from __future__ import annotations


def lookup_guest(phone: str, tool_context) -> Guest:
    """Look the guest up in the CRM."""
    found = tools.crm_getGuest({"phone": phone}).json()["result"]
    tool_context.state["guest_name"] = found.get("name", "") if found else ""
    return {"name": tool_context.state["guest_name"]}


class Guest:  # the annotation names it before it exists: fine with the future import
    pass
'''

CRM_OPENAPI = {
    "openapi": "3.0.0",
    "info": {"title": "CRM", "version": "1"},
    "servers": [{"url": "https://crm.example.com"}],
    "paths": {
        "/guests": {
            "get": {
                "operationId": "getGuest",
                "parameters": [
                    {"name": "phone", "in": "query", "required": True, "schema": {"type": "string"}}
                ],
                "responses": {"200": {"description": "the guest"}},
            }
        }
    },
}

# Published as a Terraform template: the server address is a placeholder.
MENU_TEMPLATE = """displayName: menu
mcpToolset:
  serverAddress: ${menu_server_url}/mcp
  customHeaders:
    X-Api-Key: ${menu_api_key}
"""


def app_files() -> dict[str, bytes]:
    def dump(value: Any) -> bytes:
        return json.dumps(value, indent=2).encode()

    variable = {"schema": {"type": "OBJECT", "default": {}}}
    files: dict[str, Any] = {
        "app.json": {
            "displayName": "Trattoria",
            "rootAgent": "Host",
            "variableDeclarations": [
                {"name": "booking", "description": "The booking.", **variable},
                {
                    "name": "turns",
                    "description": "Turns so far.",
                    "schema": {"type": "INTEGER", "default": 0},
                },
                {
                    "name": "guest_name",
                    "description": "The guest's name.",
                    "schema": {"type": "STRING", "default": ""},
                },
            ],
        },
        "agents/Host/Host.json": {
            "displayName": "Host",
            "instruction": "agents/Host/instruction.txt",
            "tools": ["hold_table", "confirm_pending", "lookup_guest"],
            "toolsets": [
                {"toolset": "crm", "toolIds": ["getGuest"]},
                {"toolset": "menu", "toolIds": ["list_dishes"]},
            ],
            "childAgents": ["Desk"],
            "beforeAgentCallbacks": [{"pythonCode": "agents/Host/before_agent/python_code.py"}],
            "beforeModelCallbacks": [{"pythonCode": "agents/Host/before_model/python_code.py"}],
            "beforeToolCallbacks": [{"pythonCode": "agents/Host/before_tool/python_code.py"}],
        },
        "agents/Host/instruction.txt": "You take bookings. Turn {turns}.",
        "agents/Host/before_agent/python_code.py": HOST_BEFORE_AGENT,
        "agents/Host/before_model/python_code.py": HOST_BEFORE_MODEL,
        "agents/Host/before_tool/python_code.py": HOST_BEFORE_TOOL,
        "agents/Desk/Desk.json": {
            "displayName": "Desk",
            "instruction": "You answer questions.",
            "tools": ["hold_table"],
        },
        "toolsets/crm/crm.json": {
            "displayName": "crm",
            "openApiToolset": {"openApiSchema": json.dumps(CRM_OPENAPI)},
        },
        "toolsets/menu/menu.yaml.tftpl": MENU_TEMPLATE,
    }
    for name, code, description in (
        ("confirm_pending", CONFIRM_CODE, "Commit the pending booking."),
        ("hold_table", HOLD_CODE, "Hold a table."),
        ("lookup_guest", LOOKUP_CODE, "Look the guest up."),
    ):
        files[f"tools/{name}/{name}.json"] = {
            "displayName": name,
            "pythonFunction": {
                "name": name,
                "pythonCode": f"tools/{name}/python_function/python_code.py",
                "description": description,
            },
        }
        files[f"tools/{name}/python_function/python_code.py"] = code
    return {
        path: value.encode() if isinstance(value, str) else dump(value)
        for path, value in files.items()
    }


def golden(name: str, turns: list[list[dict[str, Any]]]) -> tuple[str, bytes]:
    folder = name.replace(" ", "_")
    data = {
        "displayName": name,
        "golden": {"turns": [{"steps": steps} for steps in turns]},
    }
    return f"evaluations/{folder}/{folder}.json", json.dumps(data).encode()


def imported(*goldens: tuple[str, bytes]) -> tuple[AppSpec, tuple[ScenarioSpec, ...], tuple]:
    files = {**app_files(), **dict(goldens)}
    app, scenarios, found = read_cx_files(files)
    assert app is not None, [d.message for d in found]
    return app, scenarios, found


def run(app: AppSpec, scenario: ScenarioSpec) -> SimulationResult:
    with open_session() as session:
        return simulate(app, scenario, run_code=sandbox_runner(session, memoise=False))


def user(text: str) -> dict[str, Any]:
    return {"userInput": {"text": text}}


def call(tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    expected: dict[str, Any] = {"tool": tool}
    if args is not None:
        expected["args"] = args
    return {"expectation": {"toolCall": expected}}


def state(values: dict[str, Any]) -> dict[str, Any]:
    return {"expectation": {"updatedVariables": values}}


BOOKING = golden(
    "Book and confirm",
    [
        [user("a table for 4"), call("hold_table", {"party_size": 4})],
        [user("yes"), state({"booking": {"confirmed": True, "announced": True}})],
    ],
)


# --------------------------------------------------------------------------- the points


def test_1_callbacks_read_the_users_reply_as_the_last_content() -> None:
    """before_agent writes `turns` (a <state_update> the model reads) before the model call;
    the callback still finds "yes" as contents[-1] and confirms."""
    app, (scenario,), _ = imported(BOOKING)
    result = run(app, scenario)
    # Each model call's last content: the user's message, then the function response.
    assert result.final_state["_heard"] == ["a table for 4", "", "yes", ""]
    assert result.final_state["booking"]["confirmed"] is True
    # What the model reads still has the state update after the user's message.
    second = next(c for c in result.model_calls if c.turn == 1)
    texts = [result.events[i].text for i in second.history]
    assert texts[-2:] == ["yes", "<state_update>turns: 2</state_update>"]


def test_2_a_callbacks_function_call_on_the_last_step_is_followed_by_another_model_call() -> None:
    """Turn 1 has only the model's reply: before_model answers it with confirm_pending; ADK
    calls the model again, and before_model announces the booking."""
    app, (scenario,), _ = imported(BOOKING)
    result = run(app, scenario)
    evaluation = evaluate(scenario, result)
    assert evaluation.status == "passed", [(r.line, r.message) for r in evaluation.results]
    turn1 = [c for c in result.model_calls if c.turn == 1]
    assert [c.replaced_by for c in turn1] == ["before_model_callback", "before_model_callback"]
    agent_texts = [e.text for e in result.events if e.kind == "agent" and e.turn == 1]
    assert agent_texts == ["Your table is booked."]


def test_3_a_call_without_args_of_a_tool_without_parameters_runs() -> None:
    app, (scenario,), _ = imported(
        golden(
            "Confirm by hand",
            [
                [user("a table for 2"), call("hold_table", {"party_size": 2})],
                [
                    user("yes please"),
                    call("confirm_pending"),
                    state({"booking": {"confirmed": True}}),
                ],
            ],
        )
    )
    result = run(app, scenario)
    evaluation = evaluate(scenario, result)
    statuses = [(r.kind, r.status) for r in evaluation.results]
    assert statuses == [("call", "passed"), ("call", "passed"), ("state", "passed")]


def test_4_a_before_tool_change_of_the_arguments_in_place_reaches_the_tool() -> None:
    app, (scenario,), _ = imported(BOOKING)
    result = run(app, scenario)
    response = next(
        e for e in result.events if e.kind == "tool_response" and e.source == "hold_table"
    )
    assert response.value == {"held": True, "proposal_id": "P-4"}
    # The call itself is shown as the model made it.
    made = next(e for e in result.events if e.kind == "tool_call" and e.source == "hold_table")
    assert made.value == {"party_size": 4}


def test_5_goldens_start_at_the_root_agent_and_the_import_says_so() -> None:
    # Only Desk and Host have hold_table; the golden calls nothing else: CX starts at Host.
    _app, (scenario,), found = imported(
        golden("Desk question", [[user("a table for 3"), call("hold_table", {"party_size": 3})]])
    )
    assert scenario.agent == "Host"
    note = next(d for d in found if d.code == "SC610")
    assert "start at the root agent Host" in note.message


def test_6_undeclared_keys_code_writes_are_notes_in_the_timeline_and_in_lint() -> None:
    app, (scenario,), _ = imported(BOOKING)
    result = run(app, scenario)
    notes = [e for e in result.events if e.kind == "note"]
    assert [e.error.code for e in notes] == ["SC408"] and "_heard" in notes[0].label
    assert not [e for e in result.events if e.kind == "error"]
    lint = [d for d in lint_app(app) if d.code == "SC340"]
    assert lint and {d.severity.value for d in lint} == {"info"}


def test_7_future_annotations_run_in_the_sandbox() -> None:
    code = (
        "from __future__ import annotations\n\n"
        "def shape(order: Order) -> Shape:\n    return {'ok': True}\n\n"
        "class Order:\n    pass\n\nclass Shape:\n    pass\n"
    )
    result = run_code(code, entry="shape", kind="tool", args={"order": 1})
    assert result.ok, result.error
    assert result.return_value == {"ok": True}


def test_7_a_toolset_operation_is_callable_from_code_with_the_goldens_mock() -> None:
    app, (scenario,), _ = imported(
        golden(
            "Known guest",
            [
                [
                    user("it's 555-0100"),
                    {
                        "expectation": {
                            "mockToolResponse": {
                                "toolsetTool": {"toolset": "crm", "toolId": "getGuest"},
                                "response": {"name": "Ada"},
                            }
                        }
                    },
                    call("lookup_guest", {"phone": "555-0100"}),
                    state({"guest_name": "Ada"}),
                ]
            ],
        )
    )
    assert app.tool("crm_getGuest") is not None
    result = run(app, scenario)
    assert [e.label for e in result.events if e.kind == "error"] == []
    assert evaluate(scenario, result).status == "passed"


def test_7_an_mcp_toolset_tool_answers_the_goldens_mock_and_shows_its_request() -> None:
    app, (scenario,), _ = imported(
        golden(
            "Menu",
            [
                [
                    user("what is on the menu?"),
                    {
                        "expectation": {
                            "mockToolResponse": {
                                "toolsetTool": {"toolset": "menu", "toolId": "list_dishes"},
                                "response": {"dishes": ["risotto"]},
                            }
                        }
                    },
                    {
                        "expectation": {
                            "toolCall": {
                                "toolsetTool": {"toolset": "menu", "toolId": "list_dishes"},
                                "args": {},
                            }
                        }
                    },
                    {
                        "expectation": {
                            "toolResponse": {
                                "toolsetTool": {"toolset": "menu", "toolId": "list_dishes"},
                                "response": {"dishes": ["risotto"]},
                            }
                        }
                    },
                ]
            ],
        )
    )
    tool = app.tool("menu_list_dishes")
    assert tool is not None and tool.kind is ToolKind.MCP
    result = run(app, scenario)
    evaluation = evaluate(scenario, result)
    assert evaluation.status == "passed", [(r.line, r.message) for r in evaluation.results]
    (request,) = result.turns[0].http
    assert request.url == "${menu_server_url}/mcp"
    assert json.loads(request.body)["params"]["name"] == "list_dishes"
    assert ("X-Api-Key", "${menu_api_key}") in request.headers


def test_8_a_terraform_template_toolset_imports_with_a_warning_and_exports_as_it_came() -> None:
    files = app_files()
    app, scenarios, found = read_cx_files(files)
    assert app is not None
    assert not [d for d in found if d.code == "SC608"]  # "no toolset 'menu' in the ZIP"
    warning = next(d for d in found if d.code == "SC611")
    assert warning.severity.value == "warning"
    assert "${menu_server_url}" in warning.message and "${menu_api_key}" in warning.message
    assert "templatefile" in warning.message
    exported, _ = to_cx_files(app, scenarios)
    assert exported["toolsets/menu/menu.yaml.tftpl"] == files["toolsets/menu/menu.yaml.tftpl"]


@pytest.mark.parametrize("path", sorted(p for p in app_files() if p.endswith(".py")))
def test_every_code_file_of_the_app_compiles_in_the_sandbox(path: str) -> None:
    """The files use what public CX code uses (future annotations, CX's globals)."""
    code = app_files()[path].decode()
    entry = path.split("/")[1] if path.startswith("tools/") else ""
    if not entry:
        kind = path.split("/")[2]
        entry = f"{kind}_callback"
    result = run_code(code, entry=entry, kind="tool" if path.startswith("tools/") else "callback")
    assert result.error is None or result.error.kind not in ("forbidden", "syntax"), result.error


# ------------------------------------------------ 9: the calls a golden leaves out, honestly

# Bella Notte's routing, in small: the root's model calls `route`, its after_tool keeps the
# target in a private key, its next before_model hands over; the sub-agent's before_agent
# sets its desk up. A golden listing only some calls (ALLOW) may leave `route` out.
ROUTE_CODE = '''
def route(flow: str) -> dict:
    """Send the guest to the right desk: flow is 'booking'."""
    return {"target": "Booking" if flow == "booking" else ""}
'''
ROUTE_AFTER_TOOL = """
def after_tool_callback(tool, tool_input, callback_context, tool_response):
    if tool.name != "route":
        return None
    result = tool_response.get("result", tool_response)
    if result.get("target"):
        callback_context.state["_pending_transfer"] = result["target"]
    return None
"""
ROUTE_BEFORE_MODEL = """
def before_model_callback(callback_context, llm_request):
    target = callback_context.state.pop("_pending_transfer", "")
    if target:
        return LlmResponse.from_parts(parts=[Part.from_agent_transfer(agent=target)])
    return None
"""
DESK_BEFORE_AGENT = """
def before_agent_callback(callback_context):
    desk = callback_context.state.get("desk", {})
    desk.setdefault("status", "open")
    callback_context.state["desk"] = desk
    return None
"""
SEAT_CODE = '''
def seat(party_size: int, tool_context) -> dict:
    """Seat the party."""
    desk = tool_context.state.get("desk", {})
    desk["seated"] = party_size
    tool_context.state["desk"] = desk
    return {"seated": party_size}
'''


def routing_files(*goldens: tuple[str, bytes]) -> dict[str, bytes]:
    """The CX files of the routing app and `goldens` (what an export ZIP holds)."""

    def dump(value: Any) -> bytes:
        return value.encode() if isinstance(value, str) else json.dumps(value).encode()

    files: dict[str, Any] = {
        "app.json": {
            "displayName": "Front desk",
            "rootAgent": "Front",
            "variableDeclarations": [
                {"name": "desk", "description": "The desk.", "schema": {"type": "OBJECT"}}
            ],
            "evaluationMetricsThresholds": {
                "goldenEvaluationMetricsThresholds": {
                    "toolMatchingSettings": {"extraToolCallBehavior": "ALLOW"}
                }
            },
        },
        "agents/Front/Front.json": {
            "displayName": "Front",
            "instruction": "agents/Front/instruction.txt",
            "tools": ["route"],
            "childAgents": ["Booking"],
            "afterToolCallbacks": [{"pythonCode": "agents/Front/after_tool/python_code.py"}],
            "beforeModelCallbacks": [{"pythonCode": "agents/Front/before_model/python_code.py"}],
        },
        "agents/Front/instruction.txt": "Call route with the guest's flow.",
        "agents/Front/after_tool/python_code.py": ROUTE_AFTER_TOOL,
        "agents/Front/before_model/python_code.py": ROUTE_BEFORE_MODEL,
        "agents/Booking/Booking.json": {
            "displayName": "Booking",
            "instruction": "agents/Booking/instruction.txt",
            "tools": ["seat"],
            "beforeAgentCallbacks": [{"pythonCode": "agents/Booking/before_agent/python_code.py"}],
        },
        "agents/Booking/instruction.txt": "Seat the party with seat.",
        "agents/Booking/before_agent/python_code.py": DESK_BEFORE_AGENT,
    }
    for name, code in (("route", ROUTE_CODE), ("seat", SEAT_CODE)):
        files[f"tools/{name}/{name}.json"] = {
            "displayName": name,
            "pythonFunction": {
                "name": name,
                "pythonCode": f"tools/{name}/python_function/python_code.py",
                "description": f"The {name} tool.",
            },
        }
        files[f"tools/{name}/python_function/python_code.py"] = code
    return {**{k: dump(v) for k, v in files.items()}, **dict(goldens)}


def routing_app(*goldens: tuple[str, bytes]) -> tuple[AppSpec, tuple[ScenarioSpec, ...]]:
    app, scenarios, found = read_cx_files(routing_files(*goldens))
    assert app is not None, [d.message for d in found]
    return app, scenarios


ROUTED = golden(
    "Routed",
    [
        [
            user("a table, please"),
            call("route", {"flow": "booking"}),
            state({"desk": {"status": "open"}}),
        ]
    ],
)
UNROUTED = golden("Unrouted", [[user("I'd like to book"), state({"desk": {"status": "open"}})]])
WRONG = golden(
    "Wrong count",
    [
        [
            user("a table for two"),
            call("route", {"flow": "booking"}),
            call("seat", {"party_size": 2}),
            state({"desk": {"seated": 3}}),
        ]
    ],
)


def explained(app: AppSpec, scenarios: tuple[ScenarioSpec, ...]) -> dict[str, Any]:
    examples = listed_calls(scenarios)
    out = {}
    with open_session() as session:
        runner = sandbox_runner(session)

        def resimulate(scenario: ScenarioSpec) -> SimulationResult:
            return simulate(app, scenario, run_code=runner)

        for scenario in scenarios:
            result = resimulate(scenario)
            evaluation = evaluate(scenario, result, app)
            out[scenario.name] = explain_failures(
                app, scenario, result, evaluation, resimulate, examples=examples
            )
    return out


def test_9_a_check_a_left_out_call_explains_needs_a_model_and_says_which_call() -> None:
    """Offline the scripted model makes only the listed calls: "Unrouted" leaves `route` out,
    so the desk its sub-agent sets up is not there. Before, that was a failure; the routing
    "Routed" lists, first in turn 0, makes the check pass, so it is the model's to decide."""
    app, scenarios = routing_app(ROUTED, UNROUTED)
    by_name = {s.name: s for s in scenarios}
    plain = evaluate(by_name["Unrouted"], run(app, by_name["Unrouted"]), app)
    assert plain.status == "failed"  # what evaluate alone can tell
    outcomes = explained(app, scenarios)
    assert outcomes["Routed"].status == "passed"
    unrouted = outcomes["Unrouted"]
    assert unrouted.status == "needs_model"
    (check,) = unrouted.results
    assert check.status == "needs_model" and check.left_to_model
    assert check.message.startswith(
        "A live model may make the calls this golden leaves out: offline, with route "
        '{"flow": "booking"} in turn 0 (the golden “Routed” lists it)'
    )
    assert "Offline without it: The state at the end of turn 0 differs." in check.message
    assert check.differences  # the offline differences are still shown


def test_9_a_wrong_value_after_the_listed_calls_stays_a_failure() -> None:
    """No call the goldens list makes "Wrong count" pass (the tool seats 2, it expects 3):
    a defect, never called model-dependent."""
    app, scenarios = routing_app(
        ROUTED, WRONG, golden("Three", [[user("3"), call("seat", {"party_size": 3})]])
    )
    outcomes = explained(app, scenarios)
    wrong = outcomes["Wrong count"]
    assert wrong.status == "failed"
    assert [r.status for r in wrong.results] == ["passed", "passed", "failed"]
    assert not any(r.left_to_model for r in wrong.results)


def test_9_without_allow_a_failure_stays_a_failure() -> None:
    """A golden that lists every call (no ``ALLOW``): nothing is left out, nothing explained."""
    app, scenarios = routing_app(ROUTED, UNROUTED)
    app_json = {k: v for k, v in app.cx["app"].items() if k != "evaluationMetricsThresholds"}
    app = replace(app, cx={**app.cx, "app": app_json})
    assert explained(app, scenarios)["Unrouted"].status == "failed"


def test_a_scripted_call_of_a_tool_the_callback_hid_runs_with_a_note() -> None:
    """Bella Notte's host hides transfer_to_agent from its model (the engine hands over);
    a golden that lists the transfer is run offline by the scripted model anyway, as ADK's
    tool table still has the tool: the simulation says a live model would not be offered it."""
    hiding = ROUTE_BEFORE_MODEL.replace(
        "    target = ", '    llm_request.config.hide_tool("route")\n    target = '
    )
    files = routing_files(ROUTED)
    files["agents/Front/before_model/python_code.py"] = hiding.encode()
    app, scenarios, _ = read_cx_files(files)
    assert app is not None
    (scenario,) = scenarios
    result = run(app, scenario)
    first = result.model_calls[0]
    assert first.hidden_tools == ("route",)
    (note,) = [d for d in result.diagnostics if d.code == "SC422"]
    assert note.severity.value == "info"
    assert "the before_model callback of Front hid route" in note.message
    # The call ran (as ADK's would) and the golden still passes offline.
    assert evaluate(scenario, result, app).status == "passed"
