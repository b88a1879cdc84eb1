"""CX callbacks around model calls, through the real sandbox: what they receive and return.

A ``before_model_callback`` or ``after_model_callback`` written as CX code (its globals,
``LlmResponse.from_parts``, ``callback_context.get_last_user_input()``, ``.events``) runs in
the jail; the ``LlmResponse`` it returns crosses the boundary as JSON and replaces the
scripted answer: its text is the agent's message, its function call runs the tool.
"""

from __future__ import annotations

from agents.core.simulate import simulate
from agents.core.spec import (
    AgentSpec,
    AppSpec,
    CallbackKind,
    CallbackSpec,
    ScenarioSpec,
    SessionSpec,
    StepKind,
    StepSpec,
    ToolKind,
    ToolSpec,
    VariableSpec,
    VariableType,
)
from agents.sandbox import open_session
from agents.sandbox.code_runner import sandbox_runner

GREETING = """
def before_model_callback(callback_context: CallbackContext, llm_request: LlmRequest):
    for part in callback_context.get_last_user_input():
        if part.text == "<event>session start</event>":
            return LlmResponse.from_parts(parts=[Part.from_text(text="Hi, I am your assistant.")])
    if callback_context.state.get("trigger") == "escalate":
        callback_context.state["trigger"] = ""
        return LlmResponse.from_parts(parts=[
            Part.from_text(text="Let me connect you."),
            Part.from_function_call(name="record", args={"reason": "asked"}),
        ])
    callback_context.state["seen"] = llm_request.config.system_instruction
    return None
"""

FAREWELL = """
def after_model_callback(callback_context: CallbackContext, llm_response: LlmResponse):
    calls = [p for p in llm_response.content.parts if p.has_function_call("record")]
    texts = [p.text_or_transcript() for p in llm_response.content.parts if p.text]
    if not calls or texts:
        return None
    for event in reversed(callback_context.events):
        if event.is_user():
            break
        if event.is_agent() and any(p.text for p in event.parts()):
            return None
    return LlmResponse.from_parts(parts=[Part.from_text(text="Goodbye!")] + llm_response.content.parts)
"""

RECORD = '''
def record(reason: str = "") -> dict:
    """Record why the session is escalated."""
    context.state["reason"] = reason
    return {"status": "success"}
'''


def app() -> AppSpec:
    text = VariableType.TEXT
    agent = AgentSpec(
        name="Support",
        instructions="Help the caller. Status: {{trigger}}.",
        tools=("record",),
        callbacks=(
            CallbackSpec(CallbackKind.BEFORE_MODEL, GREETING, 0),
            CallbackSpec(CallbackKind.AFTER_MODEL, FAREWELL, 0),
        ),
        is_root=True,
    )
    return AppSpec(
        name="support",
        variables=tuple(
            VariableSpec(name, text, default="" if name == "trigger" else None)
            for name in ("trigger", "seen", "reason")
        ),
        tools=(ToolSpec("record", ToolKind.PYTHON, python_code=RECORD),),
        agents=(agent,),
    )


def steps(*lines: tuple[str, str]) -> tuple[StepSpec, ...]:
    out = []
    for kind, value in lines:
        if kind == "tool":
            out.append(StepSpec(StepKind.TOOL, tool=value, args={"reason": "scripted"}))
        else:
            out.append(StepSpec(StepKind(kind), text=value))
    return tuple(out)


def run(*lines: tuple[str, str], values: dict | None = None):
    scenario = ScenarioSpec(
        name="s", agent="Support", steps=steps(*lines), session=SessionSpec(values=values or {})
    )
    with open_session() as session:
        return simulate(app(), scenario, run_code=sandbox_runner(session, memoise=False))


def test_a_before_model_llm_response_crosses_the_boundary_and_replaces_the_text() -> None:
    result = run(("user", "<event>session start</event>"), ("agent", "scripted hello"))
    # The callback answered with text in the model's place: ADK's turn ends with it, the
    # scripted answer is not used (a note).
    assert [d.code for d in result.diagnostics] == ["SC420"]
    agent = [e.text for e in result.events if e.kind == "agent"]
    assert agent == ["Hi, I am your assistant."]
    assert result.model_calls[0].replaced_by == "before_model_callback"


def test_a_function_call_in_the_callback_answer_runs_the_tool_in_the_sandbox() -> None:
    result = run(("user", "a human please"), ("agent", "scripted"), values={"trigger": "escalate"})
    assert [d.code for d in result.diagnostics] == []
    assert [e.kind for e in result.events if e.kind != "callback"] == [
        "state_update",  # the session value
        "user",
        "state_update",  # the callback clears the trigger
        "agent",
        "tool_call",
        "state_update",  # the tool records the reason
        "tool_response",
        "state_update",  # ADK calls the model again: before_model notes the instructions
        "agent",  # and the model gives the scripted answer, which the callback did not use
    ]
    assert [e.text for e in result.events if e.kind == "agent"][-1] == "scripted"
    assert result.final_state["reason"] == "asked"
    assert result.final_state["trigger"] == ""


def test_the_callback_sees_the_instructions_compiled_for_this_call() -> None:
    result = run(("user", "hello"), ("agent", "Hello!"), values={"trigger": "calm"})
    assert result.final_state["seen"] == "Help the caller. Status: calm."


def test_an_after_model_llm_response_replaces_the_answer_and_keeps_the_call() -> None:
    # The scripted answer is a bare function call; the after_model callback prepends text.
    result = run(("user", "bye"), ("tool", "record"))
    assert [d.code for d in result.diagnostics] == []
    assert [e.kind for e in result.events if e.kind not in ("callback", "state_update")] == [
        "user",
        "agent",
        "tool_call",
        "tool_response",
        "agent",  # ADK calls the model again after the response: past the script, ""
    ]
    assert next(e.text for e in result.events if e.kind == "agent") == "Goodbye!"
    assert result.model_calls[0].replaced_by == "after_model_callback"
    assert result.final_state["reason"] == "scripted"


def test_a_tool_called_from_a_callback_is_recorded_and_its_failure_names_its_line() -> None:
    calling = """
def before_agent_callback(callback_context):
    tools.record({"reason": callback_context.state.get("trigger") or "none"})
    return None
"""
    spec = app()
    root = spec.agents[0]
    spec = AppSpec(
        name=spec.name,
        variables=spec.variables,
        tools=spec.tools,
        agents=(
            AgentSpec(
                name=root.name,
                tools=root.tools,
                callbacks=(CallbackSpec(CallbackKind.BEFORE_AGENT, calling, 0),),
                is_root=True,
            ),
        ),
    )
    scenario = ScenarioSpec(name="s", agent="Support", steps=steps(("user", "hi")))
    with open_session() as session:
        result = simulate(spec, scenario, run_code=sandbox_runner(session, memoise=False))
    (ran,) = [e for e in result.events if e.kind == "callback"]
    assert ran.label == "before_agent_callback ran (called tools.record)"
    assert result.final_state["reason"] == "none"
    # The called tool fails on its own line (4 of RECORD): the callback's error says which
    # tool and where, besides the callback's own line.
    broken = RECORD.replace('    context.state["reason"] = reason', "    return 1 / 0")
    spec = AppSpec(
        name=spec.name,
        variables=spec.variables,
        tools=(ToolSpec("record", ToolKind.PYTHON, python_code=broken),),
        agents=spec.agents,
    )
    with open_session() as session:
        result = simulate(spec, scenario, run_code=sandbox_runner(session, memoise=False))
    (error,) = [d for d in result.diagnostics if d.code == "SC410"]
    assert "ZeroDivisionError" in error.message
    assert "(line 3)" in error.message and "(in tool record, line 4)" in error.message
