"""The simulation: events, state updates, turns, built-ins, HTTP requests and the context window."""

from __future__ import annotations

import ast
import inspect
import json
import traceback
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from agents.core.diagnostics import Severity
from agents.core.http import mcp_request, openapi_request
from agents.core.simulate import (
    CODES,
    CodeCall,
    CodeResult,
    SimulationResult,
    simulate,
)
from agents.core.spec import (
    AgentSpec,
    AppSpec,
    CallbackKind,
    CallbackSpec,
    ScenarioSpec,
    SchemaSpec,
    SessionSpec,
    StepKind,
    StepSpec,
    ToolKind,
    ToolMock,
    ToolSpec,
    VariableSpec,
    VariableType,
)
from agents.core.tokens import estimate_tokens

T = VariableType
CORE = Path(__file__).resolve().parents[2] / "agents" / "core"

# The seeds' example (001/000, "Dynamic variables"): the instructions word for word.
BANKING_INSTRUCTIONS = (
    "If the user asks for their balance, call the {@TOOL: LookupBalance}.\n"
    "The tool will update the {current_account_balance} variable.\n"
    "Always share the {current_account_balance} with the user.\n"
)
LOOKUP_BALANCE = '''
def LookupBalance(account_id="main"):
    """Look up the balance of the user's account."""
    context.state["current_account_balance"] = 1250
    return {"balance": 1250, "currency": "EUR"}
'''


# --------------------------------------------------------------------------- a fake runner


class _FakeState(dict):
    """Records writes in order, like the sandbox's ``context.state``."""

    def __init__(self, data: dict[str, Any], writes: list[tuple[str, Any]], removed: list[str]):
        super().__init__(data)
        self.writes, self.removed = writes, removed

    def __setitem__(self, name: str, value: Any) -> None:
        super().__setitem__(name, value)
        self.writes.append((name, value))

    def __delitem__(self, name: str) -> None:
        super().__delitem__(name)
        self.writes.append((name, None))
        self.removed.append(name)


class _FakeContext:
    def __init__(self, state: _FakeState, values: dict[str, Any]):
        self.state = self.variables = state
        for key, value in values.items():
            setattr(self, key, value)


class FakeRunner:
    """Runs trusted test code in-process, with the sandbox's calling convention."""

    def __init__(self) -> None:
        self.calls: list[CodeCall] = []

    def __call__(self, call: CodeCall) -> CodeResult:
        self.calls.append(call)
        writes: list[tuple[str, Any]] = []
        removed: list[str] = []
        context = _FakeContext(_FakeState(call.state, writes, removed), call.context_values)
        namespace: dict[str, Any] = {"context": context}
        try:
            exec(compile(call.code, call.filename, "exec"), namespace)
            function = namespace[call.entry]
            kwargs = dict(call.args)
            if call.kind == "callback":
                accepted = inspect.signature(function).parameters
                if not any(p.kind is p.VAR_KEYWORD for p in accepted.values()):
                    kwargs = {k: v for k, v in kwargs.items() if k in accepted}
                if "callback_context" in accepted:
                    kwargs["callback_context"] = context
            value = function(**kwargs)
        except Exception as exc:
            line = next(
                (
                    frame.lineno
                    for frame in reversed(traceback.extract_tb(exc.__traceback__))
                    if frame.filename == call.filename
                ),
                None,
            )
            return CodeResult(
                False, None, tuple(writes), tuple(removed), f"{type(exc).__name__}: {exc}", line
            )
        return CodeResult(True, value, tuple(writes), tuple(removed), None, None)


def tool_code(name: str, body: str, params: str = "") -> ToolSpec:
    lines = "\n".join("    " + line for line in body.strip().splitlines())
    return ToolSpec(name, ToolKind.PYTHON, python_code=f"def {name}({params}):\n{lines}\n")


def callback(kind: CallbackKind, body: str, order: int = 0) -> CallbackSpec:
    lines = "\n".join("    " + line for line in body.strip().splitlines())
    code = f"def {kind.value}_callback(callback_context=None, **kwargs):\n{lines}\n"
    return CallbackSpec(kind, code, order)


def user(text: str) -> StepSpec:
    return StepSpec(StepKind.USER, text=text)


def agent_says(text: str) -> StepSpec:
    return StepSpec(StepKind.AGENT, text=text)


def call(tool: str, **args: Any) -> StepSpec:
    return StepSpec(StepKind.TOOL, tool=tool, args=args)


def make_app(
    *,
    variables: tuple[VariableSpec, ...] = (),
    tools: tuple[ToolSpec, ...] = (),
    instructions: str = "",
    callbacks: tuple[CallbackSpec, ...] = (),
    attached: tuple[str, ...] | None = None,
) -> AppSpec:
    agent = AgentSpec(
        name="Banker",
        instructions=instructions,
        tools=tuple(t.name for t in tools) if attached is None else attached,
        callbacks=callbacks,
        is_root=True,
    )
    return AppSpec(name="bank", variables=variables, tools=tools, agents=(agent,))


def run(
    app: AppSpec,
    *steps: StepSpec,
    runner: Callable[[CodeCall], CodeResult] | None = None,
    **scenario: Any,
) -> SimulationResult:
    return simulate(
        app,
        ScenarioSpec(name="s", agent="Banker", steps=steps, **scenario),
        run_code=runner if runner is not None else FakeRunner(),
    )


def kinds(result: SimulationResult) -> list[str]:
    return [event.kind for event in result.events]


def codes(result: SimulationResult) -> list[str]:
    return [d.code for d in result.diagnostics]


BALANCE = VariableSpec("current_account_balance", T.NUMBER, description="Balance in EUR")


def banking_app(**kwargs: Any) -> AppSpec:
    tool = ToolSpec("LookupBalance", ToolKind.PYTHON, python_code=LOOKUP_BALANCE)
    return make_app(
        variables=(BALANCE,), tools=(tool,), instructions=BANKING_INSTRUCTIONS, **kwargs
    )


# --------------------------------------------------------------------------- the seeds' example


def test_seed_banking_scenario_balance_lookup_then_answer() -> None:
    result = run(
        banking_app(),
        user("What is my balance?"),
        call("LookupBalance", account_id="main"),
        agent_says("Your balance is 1250 EUR."),
    )

    assert result.diagnostics == ()
    assert kinds(result) == ["user", "tool_call", "state_update", "tool_response", "agent"]
    update = result.events[2]
    assert update.text == "<state_update>current_account_balance: 1250</state_update>"
    assert (update.variable, update.value, update.source) == (
        "current_account_balance",
        1250,
        "LookupBalance",
    )
    assert json.loads(result.events[1].text) == {
        "functionCall": {"name": "LookupBalance", "args": {"account_id": "main"}}
    }
    assert json.loads(result.events[3].text) == {
        "functionResponse": {
            "name": "LookupBalance",
            "response": {"balance": 1250, "currency": "EUR"},
        }
    }
    assert result.events[4].text == "Your balance is 1250 EUR."
    # Dynamic references stay as written; nothing is substituted into the prompt.
    assert result.instructions == BANKING_INSTRUCTIONS
    assert result.final_state == {"current_account_balance": 1250}
    (turn,) = result.turns
    assert turn.changed == ("current_account_balance",)
    assert turn.state_after == {"current_account_balance": 1250}
    assert turn.model_input == (0, 1, 2, 3, 4)
    assert turn.tokens_used == result.instruction_tokens + sum(e.tokens for e in result.events)


def test_simulation_is_deterministic() -> None:
    steps = (user("balance?"), call("LookupBalance"), agent_says("1250"))
    first = run(banking_app(), *steps)
    second = run(banking_app(), *steps)
    assert first == second


# --------------------------------------------------------------------------- state updates


def test_writing_the_same_value_again_adds_no_event() -> None:
    tool = tool_code(
        "Same",
        """
context.state["n"] = 5
context.state["n"] = 5.0
context.state["flag"] = True
return None
""",
    )
    app = make_app(
        variables=(VariableSpec("n", T.NUMBER, default=5), VariableSpec("flag", T.BOOLEAN)),
        tools=(tool,),
    )
    result = run(app, user("hi"), call("Same"))
    updates = [e.text for e in result.events if e.kind == "state_update"]
    assert updates == ["<state_update>flag: true</state_update>"]
    assert result.turns[0].changed == ("flag",)


def test_two_writes_to_one_variable_give_one_event_per_change_in_write_order() -> None:
    tool = tool_code(
        "Flip",
        """
context.state["n"] = 2
context.state["other"] = "x"
context.state["n"] = 1
""",
    )
    app = make_app(
        variables=(VariableSpec("n", T.NUMBER, default=1), VariableSpec("other", T.TEXT)),
        tools=(tool,),
    )
    result = run(app, user("go"), call("Flip"))
    assert [e.text for e in result.events if e.kind == "state_update"] == [
        "<state_update>n: 2</state_update>",
        "<state_update>other: x</state_update>",
        "<state_update>n: 1</state_update>",
    ]
    # n ends where it started: only `other` is highlighted as changed.
    assert result.turns[0].changed == ("other",)


def test_removing_a_variable_renders_null_and_leaves_it_without_value() -> None:
    tool = tool_code("Forget", 'del context.state["token"]')
    app = make_app(variables=(VariableSpec("token", T.TEXT, default="abc"),), tools=(tool,))
    result = run(app, user("forget me"), call("Forget"))
    (update,) = [e for e in result.events if e.kind == "state_update"]
    assert update.text == "<state_update>token: null</state_update>"
    assert update.value is None
    assert result.final_state == {}


def test_object_values_render_as_json() -> None:
    tool = tool_code("SetCustomer", 'context.state["customer"] = {"name": "Zoé", "vip": True}')
    base = make_app(
        variables=(VariableSpec("customer", T.OBJECT, schema="Customer"),), tools=(tool,)
    )
    schema = SchemaSpec("Customer", {"type": "object", "properties": {"name": {"type": "string"}}})
    app = AppSpec(
        name=base.name,
        variables=base.variables,
        schemas=(schema,),
        tools=base.tools,
        agents=base.agents,
    )
    result = run(app, user("hi"), call("SetCustomer"))
    assert result.diagnostics == ()
    assert (
        result.events[2].text
        == '<state_update>customer: {"name": "Zoé", "vip": true}</state_update>'
    )


# --------------------------------------------------------------------------- write errors


def test_type_error_on_write_is_a_step_error_and_the_write_is_not_applied() -> None:
    tool = tool_code(
        "BadBalance",
        """
context.state["current_account_balance"] = "abc"
context.state["note"] = "kept"
return "done"
""",
    )
    app = make_app(variables=(BALANCE, VariableSpec("note", T.TEXT)), tools=(tool,))
    result = run(app, user("balance?"), call("BadBalance"), agent_says("ok"))

    assert kinds(result) == ["user", "tool_call", "error", "state_update", "tool_response", "agent"]
    error = result.events[2].error
    assert error is not None and error.code == "SC409" and error.severity is Severity.ERROR
    assert "BadBalance" in error.message
    assert "current_account_balance" in error.message
    assert "is not a number" in error.message
    assert error.field == "steps.1"
    assert result.events[2].text == "" and result.events[2].tokens == 0
    assert result.final_state == {"note": "kept"}
    assert result.diagnostics == (error,)


def test_code_writing_an_undeclared_variable_keeps_it_in_the_state_with_a_note() -> None:
    # CX code keeps private keys in the session state (Bella Notte's `_active_config_id`);
    # the runtime keeps them, the model is not shown them.
    tool = tool_code(
        "Sneaky", 'context.state["secret"] = context.state.get("secret", 0) + 1\nreturn 1'
    )
    app = make_app(variables=(BALANCE,), tools=(tool,))
    result = run(app, user("hi"), call("Sneaky"), user("again"), call("Sneaky"))
    (note,) = result.diagnostics  # once per writer and name
    # The runtime's normal state (issue 18.6): a note in the timeline, never an error.
    assert note.code == "SC408" and note.severity is Severity.INFO
    assert "Sneaky" in note.message and "secret" in note.message
    assert "keeps secret in the session state" in note.message
    assert result.final_state == {"secret": 2}
    assert "state_update" not in kinds(result) and "error" not in kinds(result)
    assert kinds(result).count("note") == 1
    assert kinds(result).count("tool_response") == 2  # the calls themselves succeeded


def test_a_tool_that_raises_ends_the_turn_as_in_the_runtime_and_the_next_turn_runs() -> None:
    tool = tool_code(
        "Broken",
        """
context.state["current_account_balance"] = 10
raise ValueError("backend down")
""",
    )
    after_agent = callback(CallbackKind.AFTER_AGENT, 'context.state["note"] = "after"')
    app = make_app(
        variables=(BALANCE, VariableSpec("note", T.TEXT)), tools=(tool,), callbacks=(after_agent,)
    )
    result = run(
        app, user("hi"), call("Broken"), agent_says("sorry"), user("again"), agent_says("ok")
    )
    error, ended = result.diagnostics
    assert error.code == "SC410"
    assert "Broken" in error.message and "backend down" in error.message
    assert "line 3" in error.message and "the turn ends here" in error.message
    # The rest of the turn (the agent's answer, after_agent) does not run, as in ADK, where
    # the exception ends the invocation; it is said once, with what was skipped.
    assert ended.code == "SC415" and "1 later step and the after_agent" in ended.message
    turn0 = [result.events[i].kind for i in result.turns[0].events]
    assert turn0 == ["user", "tool_call", "error"]
    # A failed call changes nothing and has no response; the next turn runs normally.
    turn1 = [result.events[i].kind for i in result.turns[1].events]
    assert turn1 == ["user", "agent", "callback", "state_update"]
    assert result.final_state == {"note": "after"}


def test_runner_that_raises_is_a_step_error_not_a_crash() -> None:
    def exploding(call: CodeCall) -> CodeResult:
        raise RuntimeError("sandbox unavailable")

    result = run(banking_app(), user("hi"), call("LookupBalance"), runner=exploding)
    # The code did not run: the simulation's failure, not the code's, so the turn goes on.
    assert codes(result) == ["SC410"]
    assert "sandbox unavailable" in result.diagnostics[0].message


def test_without_a_code_runner_python_tools_need_a_mock() -> None:
    result = simulate(
        banking_app(),
        ScenarioSpec(name="s", agent="Banker", steps=(user("hi"), call("LookupBalance"))),
    )
    (error,) = result.diagnostics
    assert error.code == "SC406"
    assert "code execution is not available; add a mock" in error.message


# --------------------------------------------------------------------------- tools


def test_tool_not_attached_to_the_agent() -> None:
    result = run(banking_app(attached=()), user("hi"), call("LookupBalance"))
    (error,) = result.diagnostics
    assert error.code == "SC405"
    assert "agent Banker may not call tool LookupBalance" in error.message
    assert kinds(result) == ["user", "error"]


def test_unknown_tool() -> None:
    result = run(banking_app(), user("hi"), call("Nope"))
    assert codes(result) == ["SC404"]


def test_mock_is_used_when_asked_even_if_the_tool_has_code() -> None:
    runner = FakeRunner()
    tool = ToolSpec(
        "LookupBalance",
        ToolKind.PYTHON,
        python_code=LOOKUP_BALANCE,
        mock=ToolMock(state={"current_account_balance": 99}, response={"balance": 99}),
    )
    app = make_app(variables=(BALANCE,), tools=(tool,))
    result = run(app, user("hi"), call("LookupBalance"), runner=runner, use_mocks=True)
    assert runner.calls == []
    assert result.events[2].text == "<state_update>current_account_balance: 99</state_update>"
    assert result.events[3].value == {"balance": 99}
    assert result.final_state == {"current_account_balance": 99}


def test_mock_is_used_for_a_tool_without_code_and_its_writes_are_checked() -> None:
    tool = ToolSpec(
        "Api",
        ToolKind.OPENAPI,
        openapi={"paths": {"/x": {"get": {}}}},
        mock=ToolMock(state={"current_account_balance": "lots", "ghost": 1}, response=[1, 2]),
    )
    app = make_app(variables=(BALANCE,), tools=(tool,))
    result = run(app, user("hi"), call("Api"))
    assert codes(result) == ["SC409", "SC408"]
    # A non-object response is wrapped as ADK does.
    response = next(e for e in reversed(result.events) if e.kind == "tool_response")
    assert json.loads(response.text)["functionResponse"]["response"] == {"result": [1, 2]}


def test_openapi_tool_without_mock_responds_null_with_an_info() -> None:
    tool = ToolSpec("Api", ToolKind.OPENAPI, openapi={"paths": {"/x": {"get": {}}}})
    result = run(make_app(tools=(tool,)), user("hi"), call("Api"))
    (info,) = result.diagnostics
    assert (info.code, info.severity) == ("SC407", Severity.INFO)
    assert "no mock: response unknown" in info.message
    response = next(e for e in reversed(result.events) if e.kind == "tool_response")
    assert response.value is None


def test_python_tool_without_code_or_mock() -> None:
    tool = ToolSpec("Empty", ToolKind.PYTHON)
    result = run(make_app(tools=(tool,)), user("hi"), call("Empty"))
    assert codes(result) == ["SC411"]


# --------------------------------------------------------------------------- callbacks


def test_callbacks_run_in_order_around_turns_models_and_tools() -> None:
    log = VariableSpec("log", T.LIST, item_type=T.TEXT, default=[])

    def appending(kind: CallbackKind, mark: str, order: int = 0) -> CallbackSpec:
        body = f'context.state["log"] = context.state["log"] + ["{mark}"]'
        return callback(kind, body, order)

    callbacks = (
        appending(CallbackKind.BEFORE_TOOL, "before_tool#2", order=2),
        appending(CallbackKind.BEFORE_TOOL, "before_tool#1", order=1),
        appending(CallbackKind.AFTER_TOOL, "after_tool"),
        appending(CallbackKind.BEFORE_MODEL, "before_model"),
        appending(CallbackKind.AFTER_MODEL, "after_model"),
        appending(CallbackKind.BEFORE_AGENT, "before_agent"),
        appending(CallbackKind.AFTER_AGENT, "after_agent"),
    )
    tool = tool_code("Ping", 'context.state["log"] = context.state["log"] + ["tool"]')
    app = make_app(variables=(log,), tools=(tool,), callbacks=callbacks)
    result = run(app, user("hi"), call("Ping"), agent_says("pong"), user("bye"))

    assert result.diagnostics == ()
    # Every model call, also the one whose answer is the tool call, runs before_model and
    # after_model around it; then the tool runs (ADK's order).
    assert result.turns[0].state_after["log"] == [
        "before_agent",
        "before_model",
        "after_model",
        "before_tool#1",
        "before_tool#2",
        "tool",
        "after_tool",
        "before_model",
        "after_model",
        "after_agent",
    ]
    assert result.final_state["log"][-2:] == ["before_agent", "after_agent"]
    sources = [e.source for e in result.events if e.kind == "callback"][:5]
    assert sources == [
        "before_agent_callback",
        "before_model_callback",
        "after_model_callback",
        "before_tool_callback #1",
        "before_tool_callback #2",
    ]
    # Callback runs are shown to the designer, never to the model.
    for event in result.events:
        if event.kind == "callback":
            assert event.tokens == 0 and event.index not in result.turns[-1].model_input
    # Each state update follows the callback that made it; the response comes last.
    turn0 = [result.events[i].kind for i in result.turns[0].events]
    assert turn0 == [
        "user",
        *["callback", "state_update"],  # before_agent
        *["callback", "state_update"] * 2,  # before_model, after_model
        "tool_call",
        *["callback", "state_update"] * 2,  # before_tool #1, #2
        "state_update",  # the tool
        *["callback", "state_update"],  # after_tool
        "tool_response",
        *["callback", "state_update"] * 2,  # before_model, after_model
        "agent",  # the answer comes after after_model, which may replace it
        *["callback", "state_update"],  # after_agent
    ]
    assert [(m.turn, m.scripted) for m in result.model_calls] == [
        (0, ({"function_call": {"name": "Ping", "args": {}}},)),
        (0, ({"text": "pong"},)),
    ]


def test_before_tool_callback_return_value_replaces_the_call() -> None:
    runner = FakeRunner()
    cb = callback(CallbackKind.BEFORE_TOOL, 'return {"cached": True}')
    app = banking_app(callbacks=(cb,))
    result = run(app, user("hi"), call("LookupBalance"), runner=runner)
    assert [c.kind for c in runner.calls] == ["callback"]
    response = next(e for e in reversed(result.events) if e.kind == "tool_response")
    assert response.value == {"cached": True}
    assert result.final_state == {}


def test_callback_step_runs_the_callbacks_of_its_kind_with_the_step_args() -> None:
    cb = callback(
        CallbackKind.AFTER_MODEL, 'context.state["note"] = kwargs.get("llm_response", "none")'
    )
    app = make_app(variables=(VariableSpec("note", T.TEXT),), callbacks=(cb,))
    step = StepSpec(
        StepKind.CALLBACK, callback=CallbackKind.AFTER_MODEL, args={"llm_response": "hello"}
    )
    result = run(app, user("hi"), step)
    assert result.final_state == {"note": "hello"}
    missing = run(app, user("hi"), StepSpec(StepKind.CALLBACK, callback=CallbackKind.BEFORE_TOOL))
    assert codes(missing) == ["SC412"]


# --------------------------------------------------------------------------- turns and built-ins


def test_turn_index_counts_from_zero_and_first_turn_may_start_without_user() -> None:
    runner = FakeRunner()
    tool = tool_code("Count", 'context.state["seen"] = context.turn_index')
    app = make_app(variables=(VariableSpec("seen", T.NUMBER),), tools=(tool,))
    result = run(
        app,
        call("Count"),  # the agent opens the conversation: still turn 0
        user("one"),
        call("Count"),
        user("two"),
        agent_says("hi"),
        call("Count"),
        runner=runner,
    )
    assert [t.index for t in result.turns] == [0, 1, 2]
    assert [t.builtins["$context.turn_index"] for t in result.turns] == [0, 1, 2]
    assert [c.context_values["turn_index"] for c in runner.calls] == [0, 1, 2]
    assert [t.state_after["seen"] for t in result.turns] == [0, 1, 2]
    # Each event knows its turn; the second turn's events start at the user message.
    assert result.events[result.turns[1].events[0]].text == "one"
    assert all(result.events[i].turn == t.index for t in result.turns for i in t.events)
    # Turn 0 sets `seen` for the first time: it is highlighted as changed.
    assert result.turns[0].changed == ("seen",)


def test_builtins_hold_the_session_ids_and_the_variables_as_an_object() -> None:
    variables = (
        VariableSpec("customer_name", T.TEXT),
        VariableSpec("tier", T.TEXT, default="gold"),
        VariableSpec("limits", T.LIST, item_type=T.NUMBER, default=[1, 2]),
    )
    session = SessionSpec(
        values={"customer_name": "Ana", "undeclared": 1},
        session_id="sess-42",
        app_id="app-7",
        project_id="proj",
        project_number="99",
        location="europe-west1",
    )
    result = run(make_app(variables=variables), user("hi"), session=session)
    builtins = result.turns[0].builtins
    assert builtins["$context.variables"] == {
        "tier": "gold",
        "limits": [1, 2],
        "customer_name": "Ana",
    }
    assert builtins["$context.variables.customer_name"] == "Ana"
    assert builtins["$context.session_id"] == "sess-42"
    assert builtins["$context.app_id"] == "app-7"
    assert builtins["$context.project_id"] == "proj"
    assert builtins["$context.project_number"] == "99"
    assert builtins["$context.location"] == "europe-west1"
    assert codes(result) == ["SC402"]
    # The API-set session value is an update the model sees; defaults are not.
    assert [e.text for e in result.events] == [
        "<state_update>customer_name: Ana</state_update>",
        "hi",
    ]


def test_static_values_are_compiled_from_the_current_state_before_each_model_call() -> None:
    variables = (VariableSpec("tier", T.TEXT, default="silver"), VariableSpec("n", T.NUMBER))
    tool = tool_code("Upgrade", 'context.state["tier"] = "gold"\ncontext.state["n"] = 1')
    instructions = "Tier: {{tier}}.{% if tier == 'gold' %} Offer the lounge.{% endif %} N: {n}"
    app = make_app(variables=variables, tools=(tool,), instructions=instructions)
    result = run(
        app,
        user("upgrade"),
        call("Upgrade"),
        agent_says("Done."),
        user("thanks"),
        agent_says("Welcome."),
        session=SessionSpec(values={"tier": "bronze"}),
    )
    # The session start's compile stays available; each model call compiles again.
    assert result.instructions == "Tier: bronze. N: {n}"
    calls = result.model_calls
    assert [c.instructions for c in calls] == [
        "Tier: bronze. N: {n}",
        "Tier: gold. Offer the lounge. N: {n}",
        "Tier: gold. Offer the lounge. N: {n}",
    ]
    # What changed since the previous model call: static values only (n is dynamic).
    assert [c.changed for c in calls] == [(), ("tier",), ()]
    assert [c.instruction_tokens for c in calls] == [estimate_tokens(c.instructions) for c in calls]
    # The answer of the second call carries the note the timeline shows.
    done = next(e for e in result.events if e.text == "Done.")
    assert done.model_call == 1 and done.instructions_changed == ("tier",)
    assert next(e for e in result.events if e.kind == "tool_call").instructions_changed == ()
    # The model input of a turn starts with the instructions of its last model call.
    assert result.turns[0].instructions == "Tier: gold. Offer the lounge. N: {n}"
    assert result.model_input_text(0).startswith("Tier: gold. Offer the lounge.")
    # Each call records the history it received: the second one saw the tool's round trip.
    assert [result.events[i].kind for i in calls[1].history] == [
        "state_update",  # the session value
        "user",
        "tool_call",
        "state_update",
        "state_update",
        "tool_response",
    ]


def model_response(*parts: dict[str, Any]) -> str:
    """Callback code returning an LlmResponse as the sandbox hands it over (its JSON)."""
    return "return " + repr({"content": {"role": "model", "parts": list(parts)}})


def test_before_model_returning_a_response_replaces_the_answer_and_skips_the_model() -> None:
    runner = FakeRunner()
    before = callback(CallbackKind.BEFORE_MODEL, model_response({"text": "Fixed greeting."}))
    after = callback(CallbackKind.AFTER_MODEL, 'context.state["note"] = "after ran"')
    app = make_app(
        variables=(BALANCE, VariableSpec("note", T.TEXT)),
        tools=banking_app().tools,
        instructions=BANKING_INSTRUCTIONS,
        callbacks=(before, after),
    )
    result = run(app, user("hi"), call("LookupBalance"), runner=runner)
    # The scripted tool call never happens: the callback's text is the answer, and the
    # after_model callbacks do not run (ADK returns before calling the model).
    assert [e.kind for e in result.events] == ["user", "callback", "agent"]
    assert result.events[-1].text == "Fixed greeting."
    assert "answer from the before_model_callback" in result.events[-1].label
    (model_call,) = result.model_calls
    assert model_call.replaced_by == "before_model_callback"
    assert model_call.answer == ({"text": "Fixed greeting."},)
    assert model_call.scripted == ({"function_call": {"name": "LookupBalance", "args": {}}},)
    assert result.final_state == {}
    # The callback received the request: the history and the compiled instructions.
    request = runner.calls[0].args["llm_request"]
    assert request["contents"] == [{"role": "user", "parts": [{"text": "hi"}]}]
    assert request["config"]["system_instruction"] == BANKING_INSTRUCTIONS
    events = runner.calls[0].context_values["events"]
    assert events == [{"author": "user", "content": {"role": "user", "parts": [{"text": "hi"}]}}]


def test_a_callback_answer_with_a_function_call_runs_the_tool() -> None:
    before = callback(
        CallbackKind.BEFORE_MODEL,
        "if context.state.get('current_account_balance') is None:\n"
        "    "
        + model_response(
            {"text": "Let me look."},
            {"function_call": {"name": "LookupBalance", "args": {"account_id": "x"}}},
        ),
    )
    app = banking_app(callbacks=(before,))
    # The callback answered in the model's place: the scripted answer is still to come, so
    # it is the answer of the model call ADK makes after the function response.
    result = run(app, user("balance?"), agent_says("1250"))
    assert kinds(result) == [
        "user",
        "callback",
        "agent",
        "tool_call",
        "state_update",
        "tool_response",
        "callback",
        "agent",
    ]
    assert result.events[2].text == "Let me look."
    assert result.events[3].value == {"account_id": "x"}
    assert "call from the before_model_callback" in result.events[3].label
    assert result.final_state == {"current_account_balance": 1250}
    # The second model call: the callback returned None, the scripted text stands.
    assert result.events[-1].text == "1250" and result.model_calls[1].replaced_by == ""


def test_after_model_returning_a_response_replaces_the_answer() -> None:
    runner = FakeRunner()
    after = callback(
        CallbackKind.AFTER_MODEL,
        "parts = kwargs['llm_response']['content']['parts']\n"
        "if parts[0].get('text') == 'Bye':\n"
        "    " + model_response({"text": "Goodbye, and thank you!"}),
    )
    app = make_app(callbacks=(after,))
    result = run(app, user("bye"), agent_says("Bye"), agent_says("Still here"), runner=runner)
    texts = [e.text for e in result.events if e.kind == "agent"]
    assert texts == ["Goodbye, and thank you!", "Still here"]
    assert [c.replaced_by for c in result.model_calls] == ["after_model_callback", ""]
    assert runner.calls[0].args["llm_response"] == {
        "content": {"role": "model", "parts": [{"text": "Bye"}]}
    }


def test_the_first_model_callback_that_returns_a_response_wins_the_rest_do_not_run() -> None:
    first = callback(CallbackKind.BEFORE_MODEL, model_response({"text": "first"}), order=1)
    second = callback(CallbackKind.BEFORE_MODEL, 'context.state["note"] = "ran"', order=2)
    app = make_app(variables=(VariableSpec("note", T.TEXT),), callbacks=(first, second))
    result = run(app, user("hi"), agent_says("scripted"))
    assert [e.text for e in result.events if e.kind == "agent"] == ["first"]
    assert result.final_state == {}


def test_unknown_agent() -> None:
    result = simulate(banking_app(), ScenarioSpec(name="s", agent="Nobody", steps=(user("hi"),)))
    assert codes(result) == ["SC401"] and result.turns == ()


# --------------------------------------------------------------------------- HTTP


def test_mcp_header_left_out_when_variable_has_no_value_and_no_default() -> None:
    variables = (
        VariableSpec("auth_token", T.TEXT),  # no default, never set
        VariableSpec("customer_id", T.TEXT, default="C-1"),
    )
    tool = ToolSpec(
        "Crm",
        ToolKind.MCP,
        mcp_url="https://mcp.example.com/mcp",
        mcp_headers=(
            ("Authorization", "$context.variables.auth_token"),
            ("X-Customer", "$context.variables.customer_id"),
            ("X-Session", "$context.session_id"),
            ("X-Static", "literal-value"),
            ("X-All", "$context.variables"),
        ),
    )
    app = make_app(variables=variables, tools=(tool,))
    result = run(
        app,
        user("hi"),
        call("Crm", query="balance"),
        call("Crm", query="again"),
        session=SessionSpec(session_id="s-9"),
    )
    first, second = result.turns[0].http
    assert first.method == "POST" and first.url == "https://mcp.example.com/mcp"
    assert first.headers == (
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("X-Customer", "C-1"),
        ("X-Session", "s-9"),
        ("X-Static", "literal-value"),
        ("X-All", '{"customer_id": "C-1"}'),
    )
    assert first.header("authorization") is None
    assert json.loads(first.body or "") == {
        "jsonrpc": "2.0",
        "method": "tools/call",
        "params": {"name": "Crm", "arguments": {"query": "balance"}},
        "id": 1,
    }
    assert json.loads(second.body or "")["id"] == 2


def test_mcp_header_present_once_the_variable_is_set() -> None:
    tool = ToolSpec(
        "Crm",
        ToolKind.MCP,
        mcp_url="https://mcp.example.com/mcp",
        mcp_headers=(("Authorization", "Bearer $context.variables.auth_token"),),
    )
    request, problems = mcp_request(tool, {}, {"variables": {"auth_token": "t0k"}})
    assert request.header("Authorization") == "Bearer t0k" and problems == ()
    request, _ = mcp_request(tool, {}, {"variables": {}})
    assert request.header("Authorization") is None


OPENAPI_DOC = {
    "openapi": "3.0.3",
    "info": {"title": "Accounts", "version": "1"},
    "servers": [
        {"url": "https://api.example.com/{version}", "variables": {"version": {"default": "v2"}}}
    ],
    "paths": {
        "/accounts/{account_id}/balance": {
            "get": {
                "operationId": "getBalance",
                "parameters": [
                    {"name": "account_id", "in": "path", "required": True},
                    {"name": "currency", "in": "query"},
                    {
                        "name": "session",
                        "in": "query",
                        "x-ces-session-context": "$context.session_id",
                    },
                    {"name": "turn", "in": "query", "x-ces-session-context": "$context.turn_index"},
                    {
                        "name": "X-Customer",
                        "in": "header",
                        "x-ces-session-context": "$context.variables.customer_id",
                    },
                    {"$ref": "#/components/parameters/Project"},
                ],
            }
        }
    },
    "components": {
        "parameters": {
            "Project": {
                "name": "X-Project",
                "in": "header",
                "x-ces-session-context": "$context.project_id",
            }
        }
    },
}


def test_openapi_query_param_with_session_context_is_filled() -> None:
    tool = ToolSpec("GetBalance", ToolKind.OPENAPI, openapi=OPENAPI_DOC)
    app = make_app(variables=(VariableSpec("customer_id", T.TEXT, default="C 7"),), tools=(tool,))
    result = run(
        app,
        user("hi"),
        user("balance please"),
        # The model tries to pass `session` itself: the runtime's value wins.
        call("GetBalance", account_id="A/1", currency="EUR", session="forged"),
        session=SessionSpec(session_id="sess-1", project_id="proj-x"),
    )
    assert codes(result) == ["SC407"]  # no mock: the response is unknown
    (request,) = result.turns[1].http
    assert request.method == "GET"
    assert request.url == (
        "https://api.example.com/v2/accounts/A%2F1/balance?currency=EUR&session=sess-1&turn=1"
    )
    assert request.headers == (("X-Customer", "C 7"), ("X-Project", "proj-x"))
    assert request.body is None
    assert result.turns[0].http == ()


def test_openapi_body_and_missing_path_parameter() -> None:
    document = {
        "servers": [{"url": "https://api.example.com/"}],
        "paths": {
            "/transfers/{id}": {
                "post": {
                    "parameters": [{"name": "id", "in": "path"}],
                    "requestBody": {
                        "content": {"application/json": {"schema": {"type": "object"}}}
                    },
                }
            }
        },
    }
    tool = ToolSpec("Transfer", ToolKind.OPENAPI, openapi=document)
    request, problems = openapi_request(tool, {"amount": 5, "to": "Zoé"}, {})
    assert request is not None
    assert request.url == "https://api.example.com/transfers/{id}"
    assert [p.code for p in problems] == ["SC431"]
    assert request.headers == (("Content-Type", "application/json"),)
    assert json.loads(request.body or "") == {"amount": 5, "to": "Zoé"}


# --------------------------------------------------------------------------- context window


def test_tokens_are_a_documented_estimate() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("a") == 1
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("€€") == 2  # 6 UTF-8 bytes
    assert "ceil" in (estimate_tokens.__doc__ or "")


def test_oldest_events_drop_out_instructions_stay_and_forgetting_is_warned() -> None:
    app = banking_app()
    filler = "x" * 200  # 50 tokens per message
    result = run(
        app,
        user("What is my balance?"),
        call("LookupBalance"),
        agent_says("Your balance is 1250 EUR."),
        user(filler),
        agent_says(filler),
        user(filler),
        agent_says(filler),
        user(filler),
        agent_says(filler),
        token_budget=result_budget(app, 240),
    )
    instructions_tokens = result.instruction_tokens
    assert instructions_tokens == estimate_tokens(BANKING_INSTRUCTIONS)
    for turn in result.turns:
        visible = sum(result.events[i].tokens for i in turn.model_input)
        assert turn.tokens_used == instructions_tokens + visible
        assert turn.tokens_used <= result_budget(app, 240)
        # The window is the newest events: a contiguous suffix of the history.
        last = max(turn.events)
        assert turn.model_input == tuple(range(last - len(turn.model_input) + 1, last + 1))

    # Turn 0 fits entirely; later the oldest events drop out, the instructions never do.
    assert result.turns[0].dropped == ()
    dropped = [i for turn in result.turns for i in turn.dropped]
    assert dropped == sorted(dropped) and dropped[0] == 0
    update = next(e for e in result.events if e.kind == "state_update")
    assert update.dropped_at_turn is not None
    forget_turn = update.dropped_at_turn
    (warning,) = result.turns[forget_turn].warnings
    assert warning.code == "SC413" and warning.severity is Severity.WARNING
    assert warning.message == (
        "the agent may forget current_account_balance: its last state update dropped out of "
        f"the context window at turn {forget_turn}"
    )
    assert codes(result).count("SC413") == 1  # warned once, not every later turn
    assert result.model_input_text(forget_turn).startswith(BANKING_INSTRUCTIONS)


def result_budget(app: AppSpec, history_tokens: int) -> int:
    return estimate_tokens(app.agents[0].instructions) + history_tokens


def test_only_dynamically_referenced_variables_are_warned_about() -> None:
    app = banking_app()
    filler = "y" * 400  # 100 tokens
    result = run(
        app,
        user("balance?"),
        call("LookupBalance"),
        user(filler),
        user(filler),
        token_budget=result_budget(app, 210),
    )
    assert codes(result) == ["SC413"]
    # Variables referenced only statically, or not at all, are never warned about.
    quiet = run(
        make_app(variables=(BALANCE,), tools=banking_app().tools, instructions="Hi."),
        user("balance?"),
        call("LookupBalance"),
        user(filler),
        user(filler),
        token_budget=result_budget(app, 210),
    )
    assert "SC413" not in codes(quiet)


def test_instructions_over_budget_warns_once() -> None:
    result = run(banking_app(), user("a"), user("b"), token_budget=5)
    assert codes(result) == ["SC414"]
    assert all(turn.model_input == () for turn in result.turns)


# --------------------------------------------------------------------------- the house rules


@pytest.mark.parametrize("module", ["simulate.py", "tokens.py", "http.py"])
def test_core_modules_import_only_stdlib_and_core(module: str) -> None:
    tree = ast.parse((CORE / module).read_text())
    imported = {
        (node.module or "") if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    for name in imported:
        assert not name.startswith(("django", "agents.sandbox")), name
        assert name.startswith(("agents.core", "__future__")) or name.split(".")[0] in {
            "collections",
            "copy",
            "dataclasses",
            "json",
            "math",
            "re",
            "typing",
            "urllib",
        }, name


def test_codes_are_documented_and_in_the_sc4xx_range() -> None:
    assert all(code.startswith("SC4") and len(code) == 5 for code in CODES)
    result = run(banking_app(attached=()), user("hi"), call("LookupBalance"))
    assert all(d.code in CODES for d in result.diagnostics)


# --------------------------------------------------------------------------- the real sandbox


def test_real_sandbox_runs_the_banking_tool() -> None:
    """The only test that starts a process: the sandbox adapter end to end."""
    from agents.sandbox.code_runner import sandbox_runner as make_runner

    sandbox_runner = make_runner(memoise=False)

    result = run(
        banking_app(),
        user("What is my balance?"),
        call("LookupBalance"),
        agent_says("1250 EUR"),
        runner=sandbox_runner,
    )
    assert result.diagnostics == ()
    assert result.events[2].text == "<state_update>current_account_balance: 1250</state_update>"
    assert result.events[3].value == {"balance": 1250, "currency": "EUR"}


def test_writes_of_a_tool_call_whose_tool_raises_are_undone_as_in_the_runtime() -> None:
    # ADK commits before_tool's writes with the function response; the tool raised, so there
    # is none: the callback's write is undone and shown as such, never to the model.
    before = callback(CallbackKind.BEFORE_TOOL, 'context.state["note"] = "calling"')
    model = callback(CallbackKind.BEFORE_MODEL, 'context.state["n"] = 1')
    tool = tool_code("Broken", 'raise ValueError("down")')
    app = make_app(
        variables=(VariableSpec("note", T.TEXT), VariableSpec("n", T.NUMBER)),
        tools=(tool,),
        callbacks=(before, model),
    )
    result = run(app, user("hi"), call("Broken"))
    # The model call's own writes stand: its answer (the call) exists.
    assert result.final_state == {"n": 1}
    undone = [e for e in result.events if "undone" in e.label]
    assert len(undone) == 1 and undone[0].kind == "error" and undone[0].tokens == 0
    assert "note: calling" in undone[0].label
    assert all(
        result.events[i].kind != "state_update" or result.events[i].variable == "n"
        for i in result.turns[0].model_input
    )


def test_before_agent_content_answers_and_ends_the_turn_after_agent_content_is_added() -> None:
    closed = callback(
        CallbackKind.BEFORE_AGENT,
        "if context.state.get('note') == 'closed':\n"
        "    return {'role': 'model', 'parts': [{'text': 'We are closed.'}]}",
    )
    after = callback(
        CallbackKind.AFTER_AGENT,
        "context.state['note'] = 'closed'\n"
        "return {'role': 'model', 'parts': [{'text': 'Anything else?'}]}",
    )
    app = make_app(variables=(VariableSpec("note", T.TEXT),), callbacks=(closed, after))
    result = run(app, user("hi"), agent_says("Hello."), user("more"), agent_says("never"))
    texts = [e.text for e in result.events if e.kind == "agent"]
    assert texts == ["Hello.", "Anything else?", "We are closed."]
    # The second turn: no model call, no after_agent (its write would repeat nothing anyway).
    assert [c.turn for c in result.model_calls] == [0]
    assert codes(result) == ["SC416"]


# --------------------------------------------------------------------------- transfers


def _log(kind: CallbackKind, who: str) -> CallbackSpec:
    return callback(kind, f"context.state['log'] = context.state.get('log', []) + ['{who}']")


def transfer_app() -> AppSpec:
    """A host with two peers: the reservation agent has book (and the host has none)."""
    book = tool_code("book", 'context.state["booked"] = True\nreturn {"ok": True}')
    log = VariableSpec("log", T.LIST, item_type=T.TEXT, default=[])
    booked = VariableSpec("booked", T.BOOLEAN, default=False)
    host = AgentSpec(
        "Host",
        instructions="You greet.",
        children=("Reservations", "Menu"),
        is_root=True,
        callbacks=(
            _log(CallbackKind.BEFORE_AGENT, "host in"),
            _log(CallbackKind.AFTER_AGENT, "host out"),
        ),
    )
    reservations = AgentSpec(
        "Reservations",
        instructions="You book tables. Booked: {{booked}}.",
        tools=("book",),
        callbacks=(
            _log(CallbackKind.BEFORE_AGENT, "res in"),
            _log(CallbackKind.AFTER_AGENT, "res out"),
        ),
    )
    return AppSpec(
        name="bistro",
        variables=(log, booked),
        tools=(book,),
        agents=(host, reservations, AgentSpec("Menu", instructions="You read the menu.")),
    )


def transfer_to(agent: str) -> StepSpec:
    return StepSpec(StepKind.TOOL, tool="transfer_to_agent", args={"agent_name": agent})


def test_a_transfer_hands_the_session_to_the_sub_agent_with_its_tools_instructions_callbacks():
    result = simulate(
        transfer_app(),
        ScenarioSpec(
            name="s",
            agent="Host",
            steps=(
                user("a table for 2"),
                transfer_to("Reservations"),
                call("book"),
                agent_says("Booked."),
                user("thanks"),
                agent_says("You're welcome."),
            ),
        ),
        run_code=FakeRunner(),
    )
    assert codes(result) == []
    turn0 = [result.events[i] for i in result.turns[0].events]
    assert [(e.kind, e.source) for e in turn0 if e.kind != "state_update"] == [
        ("user", ""),
        ("callback", "before_agent_callback"),
        ("tool_call", "transfer_to_agent"),
        ("tool_response", "transfer_to_agent"),
        ("transfer", "Reservations"),
        ("callback", "before_agent_callback"),
        ("tool_call", "book"),
        ("tool_response", "book"),
        ("agent", "Reservations"),
        ("callback", "after_agent_callback"),
    ]
    transfer = next(e for e in turn0 if e.kind == "transfer")
    assert transfer.value == {"from": "Host", "to": "Reservations"}
    assert not transfer.model_visible
    assert result.turns[0].state_after["log"] == ["host in", "res in", "res out"]
    # The sub-agent's instructions from the transfer on; the session stays with it.
    assert [c.instructions for c in result.model_calls] == [
        "You greet.",
        "You book tables. Booked: false.",
        "You book tables. Booked: true.",
        "You book tables. Booked: true.",
    ]
    assert result.final_state["log"][3:] == ["res in", "res out"]


def test_a_transfer_to_an_agent_that_is_not_a_child_parent_or_peer_is_an_error():
    app = transfer_app()
    app = replace(app, agents=(*app.agents, AgentSpec("Stranger")))
    result = simulate(
        app,
        ScenarioSpec(
            name="s",
            agent="Reservations",
            steps=(user("x"), transfer_to("Stranger"), transfer_to("Ghost"), transfer_to("Menu")),
        ),
        run_code=FakeRunner(),
    )
    errors = [d for d in result.diagnostics if d.code == "SC417"]
    assert [d.message for d in errors] == [
        "agent Reservations cannot transfer to Stranger: it is not a sub-agent, the parent or "
        "a peer of it.",
        "agent Reservations cannot transfer to Ghost: the app has no such agent.",
    ]
    # A peer is allowed (ADK: peers unless disallowed).
    assert [e.value for e in result.events if e.kind == "transfer"] == [
        {"from": "Reservations", "to": "Menu"}
    ]


def test_expect_transfer_is_the_model_calling_transfer_to_agent_and_its_check():
    from agents.core.evaluate import evaluate
    from agents.core.script import parse_script

    parsed = parse_script(
        "user: table\nexpect transfer: Reservations\nexpect call: book {}\n"
        'expect state: {"booked": true}\nexpect no calls\n'
        "user: again\nexpect transfer: Stranger\n"
    )
    scenario = ScenarioSpec(name="s", agent="Host", steps=parsed.steps)
    app = transfer_app()
    result = simulate(app, scenario, run_code=FakeRunner())
    evaluation = evaluate(scenario, result, app)
    assert [r.status for r in evaluation.results] == [
        "passed",
        "passed",
        "passed",
        "failed",  # book was called in the turn; the transfer itself is not a tool call
        "failed",
    ]
    assert evaluation.results[0].message == "Host transferred to Reservations."
    assert "cannot transfer to Stranger" in evaluation.results[4].message


def test_a_callback_changing_llm_request_in_place_does_not_change_what_the_next_call_sees() -> None:
    # The request carries the history (the tool call's arguments, the tool's response):
    # a runner that changes it in place must not reach the run's events or the next call.
    before = callback(
        CallbackKind.BEFORE_MODEL,
        "request = kwargs['llm_request']\n"
        "for content in request['contents']:\n"
        "    for part in content['parts']:\n"
        "        if 'function_call' in part:\n"
        "            part['function_call']['args']['account_id'] = 'CHANGED'\n"
        "        if 'function_response' in part:\n"
        "            part['function_response']['response']['changed'] = True\n"
        "request['contents'].append({'role': 'user', 'parts': [{'text': 'added'}]})\n"
        "request['config']['system_instruction'] = 'changed'",
    )
    fake = FakeRunner()
    seen: list[str] = []

    def recording(code_call: CodeCall) -> CodeResult:
        if code_call.kind == "callback":
            seen.append(json.dumps(code_call.args["llm_request"], sort_keys=True))
        return fake(code_call)

    app = banking_app(callbacks=(before,))
    result = run(
        app, user("hi"), call("LookupBalance", account_id="A"), agent_says("ok"), runner=recording
    )
    response = next(e.value for e in result.events if e.kind == "tool_response")
    assert "changed" not in response
    second = json.loads(seen[1])
    assert second == {
        "contents": [
            {"role": "user", "parts": [{"text": "hi"}]},
            {
                "role": "model",
                "parts": [
                    {"function_call": {"name": "LookupBalance", "args": {"account_id": "A"}}}
                ],
            },
            {
                "role": "user",
                "parts": [
                    {
                        "function_response": {
                            "name": "LookupBalance",
                            "response": response,
                        }
                    }
                ],
            },
        ],
        "config": {"system_instruction": BANKING_INSTRUCTIONS},
    }
