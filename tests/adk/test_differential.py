"""The same scenarios through Statecraft's simulation and through ADK's real runner.

CX Agent Studio runs on the Agent Development Kit, so ADK's ``Runner`` is the reference for
the order of model calls and callbacks, what a callback's return value does, when the
instructions are compiled, and which state writes a failure keeps. Each scenario here is
one app (variables, instructions with ``{{x}}``, tools and callbacks as Python source) and
turns (a user message, then the model's answers: text or function calls). It runs:

- in Statecraft: ``simulate`` with the real sandbox (the code runs as CX code does);
- in ADK: an ``LlmAgent`` whose model is ``ScriptedLlm`` (a ``BaseLlm`` returning the
  scenario's answers, by model-call number), on ``InMemoryRunner`` /
  ``InMemorySessionService``, offline; the same source is executed in-process with CX's
  callback globals (``LlmResponse.from_parts``, ``Part``) mapped to ADK's types.

Compared: the sequence of state writes (a write that leaves the value unchanged adds
nothing in Statecraft, and ADK keeps one value per variable per event, so consecutive
writes of one variable count once), the final state, the instructions each model call
received, the agent's messages and the tool responses. The only differences allowed are
CX's own, listed in the README ("CX and ADK"): no scenario here uses a dynamic ``{x}``
reference or ``{% if %}``.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pytest

from agents.core.simulate import SimulationResult, same_value, simulate
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
from tests import optional

pytestmark = [pytest.mark.adk, pytest.mark.xdist_group("adk")]

adk = optional.need("google.adk", "google-adk")

T = VariableType


@dataclass
class Scenario:
    name: str
    variables: tuple[VariableSpec, ...]
    instructions: str
    # (user text, answers); an answer is ("text", str) or ("call", tool name, args)
    turns: list[tuple[str, list[tuple[Any, ...]]]]
    tools: dict[str, str] = field(default_factory=dict)
    callbacks: dict[CallbackKind, list[str]] = field(default_factory=dict)
    session: dict[str, Any] = field(default_factory=dict)


def log(kind: str) -> str:
    """A callback appending its name to the `log` list."""
    params = {
        "before_agent": "callback_context",
        "after_agent": "callback_context",
        "before_model": "callback_context, llm_request",
        "after_model": "callback_context, llm_response",
        "before_tool": "tool, args, tool_context",
        "after_tool": "tool, args, tool_context, tool_response",
    }[kind]
    context = "tool_context" if kind.endswith("_tool") else "callback_context"
    return (
        f"def {kind}_callback({params}):\n"
        f"    {context}.state['log'] = {context}.state.get('log', []) + ['{kind}']\n"
        "    return None\n"
    )


SET_TIER = '''
def set_tier(tier: str, tool_context) -> dict:
    """Set the customer's tier."""
    tool_context.state["tier"] = tier
    return {"tier": tier}
'''
PING = '''
def ping(tool_context) -> dict:
    """Ping."""
    tool_context.state["log"] = tool_context.state.get("log", []) + ["tool"]
    return {"pong": True}
'''
BROKEN = '''
def lookup(account: str, tool_context) -> dict:
    """Look an account up."""
    tool_context.state["tier"] = "written before the failure"
    raise ValueError("backend down")
'''
LOG = VariableSpec("log", T.LIST, item_type=T.TEXT, default=[])
HEARD = VariableSpec("heard", T.TEXT, default="")
TIER = VariableSpec("tier", T.TEXT, default="silver")
NOTE = VariableSpec("note", T.TEXT, default="")

SCENARIOS = [
    Scenario(
        "a static value a tool updates shows in the next model call's instructions",
        (TIER,),
        "You serve a {{tier}} customer.",
        [
            ("Upgrade me", [("call", "set_tier", {"tier": "gold"}), ("text", "Done.")]),
            ("Thanks", [("text", "Welcome, gold customer.")]),
        ],
        tools={"set_tier": SET_TIER},
        session={"tier": "bronze"},
    ),
    Scenario(
        "callbacks run around every model call and tool call, in ADK's order",
        (LOG, TIER),
        "Tier: {{tier}}.",
        [
            ("hi", [("call", "ping", {}), ("text", "pong")]),
            ("again", [("text", "still here")]),
        ],
        tools={"ping": PING},
        callbacks={kind: [log(kind.value)] for kind in CallbackKind},
    ),
    Scenario(
        "a before_model response replaces the answer; the model and after_model do not run",
        (LOG, NOTE),
        "Be brief.",
        [
            ("<event>session start</event>", [("text", "scripted greeting")]),
            ("hi", [("text", "Hello!")]),
        ],
        callbacks={
            CallbackKind.BEFORE_MODEL: [
                "def before_model_callback(callback_context, llm_request):\n"
                "    if callback_context.state.get('note') == '':\n"
                "        callback_context.state['note'] = 'greeted'\n"
                "        return LlmResponse.from_parts(parts=[Part.from_text(text='Welcome!')])\n"
                "    return None\n"
            ],
            CallbackKind.AFTER_MODEL: [log("after_model")],
        },
    ),
    Scenario(
        "an after_model response replaces the model's answer",
        (NOTE,),
        "Be brief.",
        [("bye", [("text", "Bye")]), ("one more", [("text", "Sure")])],
        callbacks={
            CallbackKind.AFTER_MODEL: [
                "def after_model_callback(callback_context, llm_response):\n"
                "    text = llm_response.content.parts[0].text\n"
                "    callback_context.state['note'] = 'saw ' + text\n"
                "    if text == 'Bye':\n"
                "        return LlmResponse.from_parts(parts=[Part.from_text(text='Goodbye!')])\n"
                "    return None\n"
            ]
        },
    ),
    Scenario(
        "a callback's function call runs the tool, then the model is called again",
        (TIER, NOTE),
        "Tier: {{tier}}.",
        # The callback answers in the model's place: the scripted answer is the model's
        # answer to the next call, after the function response.
        [("make me gold", [("text", "You are gold now.")])],
        tools={"set_tier": SET_TIER},
        callbacks={
            CallbackKind.BEFORE_MODEL: [
                "def before_model_callback(callback_context, llm_request):\n"
                "    if callback_context.state.get('tier') != 'gold':\n"
                "        return LlmResponse.from_parts(parts=[\n"
                "            Part.from_function_call(name='set_tier', args={'tier': 'gold'}),\n"
                "            Part.from_text(text='One moment.')])\n"
                "    return None\n"
            ]
        },
    ),
    Scenario(
        "before_tool's return skips the tool; after_tool's return replaces the response",
        (TIER, NOTE),
        "Tier: {{tier}}.",
        [
            ("cached", [("call", "set_tier", {"tier": "cached"}), ("text", "ok")]),
            ("real", [("call", "set_tier", {"tier": "gold"}), ("text", "ok")]),
        ],
        tools={"set_tier": SET_TIER},
        callbacks={
            CallbackKind.BEFORE_TOOL: [
                "def before_tool_callback(tool, args, tool_context):\n"
                "    if args.get('tier') == 'cached':\n"
                "        tool_context.state['note'] = 'skipped ' + tool.name\n"
                "        return {'tier': 'from cache'}\n"
                "    return None\n"
            ],
            CallbackKind.AFTER_TOOL: [
                "def after_tool_callback(tool, args, tool_context, tool_response):\n"
                "    if tool_response.get('tier') == 'gold':\n"
                "        return {'tier': 'gold', 'checked': True}\n"
                "    return None\n"
            ],
        },
    ),
    Scenario(
        "a tool that raises ends the turn and its call's writes are undone; the next turn runs",
        (TIER, NOTE, LOG),
        "Tier: {{tier}}.",
        [
            ("look me up", [("call", "lookup", {"account": "a-1"}), ("text", "never said")]),
            ("hello?", [("text", "Sorry about that.")]),
        ],
        tools={"lookup": BROKEN},
        callbacks={
            CallbackKind.BEFORE_TOOL: [
                "def before_tool_callback(tool, args, tool_context):\n"
                "    tool_context.state['note'] = 'about to call ' + tool.name\n"
                "    return None\n"
            ],
            CallbackKind.BEFORE_MODEL: [log("before_model")],
            CallbackKind.AFTER_AGENT: [log("after_agent")],
        },
    ),
    Scenario(
        "before_agent content answers and ends the turn; after_agent content is added",
        (NOTE, LOG),
        "Be brief.",
        [("hi", [("text", "Hello.")]), ("more", [("text", "never said")])],
        callbacks={
            CallbackKind.BEFORE_AGENT: [
                "def before_agent_callback(callback_context):\n"
                "    if callback_context.state.get('note') == 'closed':\n"
                "        return Content(parts=[Part.from_text(text='We are closed.')], role='model')\n"
                "    return None\n"
            ],
            CallbackKind.AFTER_AGENT: [
                "def after_agent_callback(callback_context):\n"
                "    callback_context.state['note'] = 'closed'\n"
                "    return Content(parts=[Part.from_text(text='Anything else?')], role='model')\n"
            ],
            CallbackKind.BEFORE_MODEL: [log("before_model")],
        },
    ),
    Scenario(
        "the first model callback that answers wins; later ones do not run",
        (NOTE, LOG),
        "Be brief.",
        [("hi", [("text", "scripted")])],
        callbacks={
            CallbackKind.BEFORE_MODEL: [
                "def before_model_callback(callback_context, llm_request):\n"
                "    callback_context.state['note'] = 'first'\n"
                "    return LlmResponse.from_parts(parts=[Part.from_text(text='From the first.')])\n",
                log("before_model"),
            ]
        },
    ),
    Scenario(
        "callbacks get the runtime's contents: the user's message is the last one (issue 18.1)",
        (NOTE, HEARD, LOG),
        "Be brief.",
        [("table for two", [("text", "Sure.")]), ("at eight", [("text", "Noted.")])],
        callbacks={
            CallbackKind.BEFORE_AGENT: [
                # A write before the model call: a <state_update> in what the model reads.
                "def before_agent_callback(callback_context):\n"
                "    callback_context.state['note'] = 'turn ' + str(len(callback_context.state.get('log', [])))\n"
                "    return None\n"
            ],
            CallbackKind.BEFORE_MODEL: [
                "def before_model_callback(callback_context, llm_request):\n"
                "    last = llm_request.contents[-1]\n"
                "    text = last.parts[0].text if last.role == 'user' else '(not the user)'\n"
                "    callback_context.state['heard'] = text\n"
                "    callback_context.state['log'] = callback_context.state.get('log', []) + [text]\n"
                "    return None\n"
            ],
        },
    ),
    Scenario(
        "the model is called until an answer has no function call (issue 18.2)",
        (TIER, LOG),
        "Tier: {{tier}}.",
        [
            # A callback answers the turn's only scripted call with a function call: the tool
            # runs, then the model is called again and gives the scripted reply.
            ("upgrade me", [("text", "You are gold.")]),
            # The script ends on a function call: ADK calls the model once more.
            ("ping", [("call", "ping", {})]),
        ],
        tools={"set_tier": SET_TIER, "ping": PING},
        callbacks={
            CallbackKind.BEFORE_MODEL: [
                "def before_model_callback(callback_context, llm_request):\n"
                "    callback_context.state['log'] = callback_context.state.get('log', []) + ['model']\n"
                "    if callback_context.state.get('tier') != 'gold':\n"
                "        return LlmResponse.from_parts(parts=[\n"
                "            Part.from_function_call(name='set_tier', args={'tier': 'gold'})])\n"
                "    return None\n"
            ]
        },
    ),
    Scenario(
        "the model gets the system instruction a before_model callback changed (issue 18)",
        (TIER, LOG),
        "Tier: {{tier}}.",
        [
            ("upgrade me", [("call", "set_tier", {"tier": "gold"}), ("text", "Done.")]),
            ("thanks", [("text", "Bye.")]),
        ],
        tools={"set_tier": SET_TIER},
        callbacks={
            CallbackKind.BEFORE_MODEL: [
                # Bella Notte's engine appends the turn's directive to the system instruction.
                "def before_model_callback(callback_context, llm_request):\n"
                "    log = callback_context.state.get('log', []) + ['model']\n"
                "    callback_context.state['log'] = log\n"
                "    si = llm_request.config.system_instruction or ''\n"
                "    llm_request.config.system_instruction = (\n"
                "        si + '\\n<directive>step ' + str(len(log)) + '</directive>')\n"
                "    return None\n"
            ]
        },
    ),
    Scenario(
        "a before_tool callback that changes the arguments in place reaches the tool (18.4)",
        (TIER, NOTE),
        "Tier: {{tier}}.",
        [("gold please", [("call", "set_tier", {"tier": "gold"}), ("text", "ok")])],
        tools={"set_tier": SET_TIER},
        callbacks={
            CallbackKind.BEFORE_TOOL: [
                "def before_tool_callback(tool, args, tool_context):\n"
                "    args['tier'] = args['tier'].upper()\n"
                "    return None\n"
            ],
            CallbackKind.AFTER_TOOL: [
                "def after_tool_callback(tool, args, tool_context, tool_response):\n"
                "    tool_context.state['note'] = 'after_tool saw ' + args['tier']\n"
                "    return None\n"
            ],
        },
    ),
]


# --------------------------------------------------------------------------- Statecraft


def statecraft_app(scenario: Scenario) -> AppSpec:
    callbacks = tuple(
        CallbackSpec(kind, code, order)
        for kind, codes in scenario.callbacks.items()
        for order, code in enumerate(codes)
    )
    agent = AgentSpec(
        name="support",
        instructions=scenario.instructions,
        tools=tuple(scenario.tools),
        callbacks=callbacks,
        is_root=True,
    )
    tools = tuple(
        ToolSpec(name, ToolKind.PYTHON, python_code=code) for name, code in scenario.tools.items()
    )
    return AppSpec(name="diff", variables=scenario.variables, tools=tools, agents=(agent,))


def statecraft_run(scenario: Scenario) -> SimulationResult:
    steps: list[StepSpec] = []
    for text, answers in scenario.turns:
        steps.append(StepSpec(StepKind.USER, text=text))
        for answer in answers:
            if answer[0] == "call":
                steps.append(StepSpec(StepKind.TOOL, tool=answer[1], args=dict(answer[2])))
            else:
                steps.append(StepSpec(StepKind.AGENT, text=answer[1]))
    spec = ScenarioSpec(
        name=scenario.name,
        agent="support",
        steps=tuple(steps),
        session=SessionSpec(values=dict(scenario.session)),
    )
    with open_session() as session:
        return simulate(statecraft_app(scenario), spec, run_code=sandbox_runner(session))


# --------------------------------------------------------------------------- ADK


@dataclass
class AdkOutcome:
    writes: list[tuple[str, Any]]
    final_state: dict[str, Any]
    instructions: list[str]
    # What the model received, for each call that reached it: (the index of the call among
    # `instructions`, its system instruction after the app's callbacks).
    received: list[tuple[int, str]]
    agent_texts: list[str]
    tool_responses: list[Any]
    failed_turns: list[int]


def adk_run(scenario: Scenario) -> AdkOutcome:
    from google.adk.agents import LlmAgent
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    class CxLlmResponse:
        """CX's ``LlmResponse.from_parts`` over ADK's LlmResponse."""

        @staticmethod
        def from_parts(parts: list[types.Part]) -> LlmResponse:
            return LlmResponse(content=types.Content(role="model", parts=list(parts)))

    # The k-th time the model itself is asked in turn t it gives the k-th answer of that
    # turn (a callback answering in its place uses none); past the script it replies with
    # empty text (a turn that ends early, on a tool that raises, leaves the rest unused, as
    # Statecraft skips its steps).
    turn: list[int] = [0]
    asked: list[int] = []  # the turn of each call that reached the model
    instructions: list[str] = []
    received: list[tuple[int, str]] = []

    class ScriptedLlm(BaseLlm):
        """The scenario's next answer (a callback may have answered instead)."""

        async def generate_content_async(self, llm_request, stream=False):  # type: ignore[override]
            received.append(
                (len(instructions) - 1, str(llm_request.config.system_instruction or ""))
            )
            number = turn[0]
            k = asked.count(number)
            asked.append(number)
            answers = scenario.turns[number][1]
            answer = answers[k] if k < len(answers) else ("text", "")
            if answer[0] == "call":
                part = types.Part.from_function_call(name=answer[1], args=dict(answer[2]))
            else:
                part = types.Part.from_text(text=answer[1])
            yield LlmResponse(content=types.Content(role="model", parts=[part]))

    def count_call(callback_context, llm_request):
        instructions.append(str(llm_request.config.system_instruction or ""))
        return None

    def load(code: str, entry: str):
        namespace: dict[str, Any] = {
            "LlmResponse": CxLlmResponse,
            "Part": types.Part,
            "Content": types.Content,
        }
        exec(compile(code, f"<{entry}>", "exec"), namespace)
        return namespace[entry]

    callbacks = {
        kind: [load(code, f"{kind.value}_callback") for code in codes]
        for kind, codes in scenario.callbacks.items()
    }
    agent = LlmAgent(
        name="support",
        model=ScriptedLlm(model="scripted"),
        instruction=scenario.instructions,
        tools=[load(code, name) for name, code in scenario.tools.items()],
        before_agent_callback=callbacks.get(CallbackKind.BEFORE_AGENT) or None,
        after_agent_callback=callbacks.get(CallbackKind.AFTER_AGENT) or None,
        before_model_callback=[count_call, *callbacks.get(CallbackKind.BEFORE_MODEL, [])],
        after_model_callback=callbacks.get(CallbackKind.AFTER_MODEL) or None,
        before_tool_callback=callbacks.get(CallbackKind.BEFORE_TOOL) or None,
        after_tool_callback=callbacks.get(CallbackKind.AFTER_TOOL) or None,
    )
    runner = InMemoryRunner(agent=agent, app_name="diff")
    initial = {v.name: v.default for v in scenario.variables if v.default is not None}
    initial.update(scenario.session)
    outcome = AdkOutcome([], {}, instructions, received, [], [], [])

    async def run() -> None:
        session = await runner.session_service.create_session(
            app_name="diff", user_id="u", state=dict(initial)
        )
        state = dict(initial)
        for number, (text, _) in enumerate(scenario.turns):
            turn[0] = number
            message = types.Content(role="user", parts=[types.Part(text=text)])
            try:
                async for event in runner.run_async(
                    user_id="u", session_id=session.id, new_message=message
                ):
                    for name, value in (event.actions.state_delta or {}).items():
                        if not same_value(state.get(name), value):
                            outcome.writes.append((name, value))
                            state[name] = value
                    for part in (event.content.parts if event.content else None) or ():
                        if part.text and event.author == "support" and not event.partial:
                            outcome.agent_texts.append(part.text)
                        if part.function_response is not None:
                            outcome.tool_responses.append(part.function_response.response)
            except Exception:  # the runtime lets the tool's exception end the invocation
                outcome.failed_turns.append(number)
        final = await runner.session_service.get_session(
            app_name="diff", user_id="u", session_id=session.id
        )
        outcome.final_state = dict(final.state)

    # A thread of its own: an xdist worker may already run an event loop in this thread
    # (Playwright's sync API does, for the browser tests sharing the worker).
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, run()).result()
    return outcome


# --------------------------------------------------------------------------- comparing


def collapsed(writes: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """Consecutive writes of one variable count once (the last): ADK keeps one value per
    variable in an event's state delta."""
    out: list[tuple[str, Any]] = []
    for name, value in writes:
        if out and out[-1][0] == name:
            out[-1] = (name, value)
        else:
            out.append((name, value))
    return out


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_statecraft_and_adk_agree(scenario: Scenario) -> None:
    ours = statecraft_run(scenario)
    theirs = adk_run(scenario)
    # Only the notes of a turn that ends early (a raise, a callback's answer) may appear.
    allowed = ("SC410", "SC415", "SC416", "SC420")
    assert [d.code for d in ours.diagnostics if d.code not in allowed] == []

    our_writes = [
        (e.variable, e.value)
        for e in ours.events
        if e.kind == "state_update" and e.source != "session"
    ]
    assert collapsed(our_writes) == collapsed(theirs.writes)
    assert ours.final_state == {
        k: v for k, v in theirs.final_state.items() if not k.startswith("_")
    }
    # Every model call received the instructions compiled from the state of that moment
    # (ADK appends its own line about the agent's name).
    assert len(ours.model_calls) == len(theirs.instructions)
    for call, adk_instructions in zip(ours.model_calls, theirs.instructions, strict=True):
        assert adk_instructions.startswith(call.instructions), (call.index, adk_instructions)
    # What reached the model: the same calls, each with the system instruction as the app's
    # before_model callbacks left it (what they appended, on top of ADK's own text).
    reached = [c for c in ours.model_calls if c.replaced_by != "before_model_callback"]
    assert [c.index for c in reached] == [i for i, _ in theirs.received]
    for call, (i, text) in zip(reached, theirs.received, strict=True):
        sent = call.sent_instructions or call.instructions
        assert sent.startswith(call.instructions)
        assert text == theirs.instructions[i] + sent[len(call.instructions) :], (call.index, text)
    assert [e.text for e in ours.events if e.kind == "agent" and e.text] == theirs.agent_texts
    responses = [
        e.value if isinstance(e.value, dict) else {"result": e.value}
        for e in ours.events
        if e.kind == "tool_response"
    ]
    assert responses == theirs.tool_responses
    # A tool that raises ends the same turns.
    ended = sorted({e.turn for e in ours.events if e.error and e.error.code == "SC410"})
    assert ended == theirs.failed_turns


def test_the_differential_harness_sees_a_difference() -> None:
    """The comparison can fail: a scenario whose ADK side writes once more is caught."""
    scenario = SCENARIOS[0]
    theirs = adk_run(scenario)
    ours = statecraft_run(scenario)
    our_writes = [
        (e.variable, e.value)
        for e in ours.events
        if e.kind == "state_update" and e.source != "session"
    ]
    assert collapsed(our_writes) == collapsed(theirs.writes) == [("tier", "gold")]
    assert [c.instructions for c in ours.model_calls] == [
        "You serve a bronze customer.",
        "You serve a gold customer.",
        "You serve a gold customer.",
    ]
    assert collapsed([*our_writes, ("tier", "platinum")]) != collapsed(theirs.writes)


# --------------------------------------------------------------------------- transfers


def _log_agent(who: str, kind: str) -> str:
    return (
        f"def {kind}_callback(callback_context):\n"
        f"    callback_context.state['log'] = callback_context.state.get('log', []) + "
        f"['{who} {kind}']\n"
        "    return None\n"
    )


TRANSFER_ANSWERS = [
    # (agent, answer) of each model call, in order: turn 0, then turn 1.
    ("host", ("call", "transfer_to_agent", {"agent_name": "desk"})),
    ("desk", ("call", "ping", {})),
    ("desk", ("text", "Booked.")),
    ("desk", ("text", "Still me.")),
]


def test_a_transfer_runs_the_sub_agent_as_adk_does() -> None:
    """The host transfers to desk: desk's before_agent runs at once, its instructions and
    tools from then on, only desk's after_agent at the end of the turn (not the host's), and
    the next turn stays with desk. Compared: the callbacks' log (the final state) and the
    instructions of each model call, less the transfer note ADK appends (README, "CX and
    ADK")."""
    from google.adk.agents import LlmAgent
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    kinds = ("before_agent", "after_agent")
    instructions: list[str] = []

    class ScriptedLlm(BaseLlm):
        async def generate_content_async(self, llm_request, stream=False):  # type: ignore[override]
            instructions.append(str(llm_request.config.system_instruction or ""))
            _, answer = TRANSFER_ANSWERS[len(instructions) - 1]
            if answer[0] == "call":
                part = types.Part.from_function_call(name=answer[1], args=dict(answer[2]))
            else:
                part = types.Part.from_text(text=answer[1])
            yield LlmResponse(content=types.Content(role="model", parts=[part]))

    def load(code: str, entry: str):
        namespace: dict[str, Any] = {}
        exec(compile(code, f"<{entry}>", "exec"), namespace)
        return namespace[entry]

    def adk_agent(name: str, instruction: str, **kwargs: Any) -> Any:
        return LlmAgent(
            name=name,
            model=ScriptedLlm(model="scripted"),
            instruction=instruction,
            before_agent_callback=load(_log_agent(name, "before_agent"), "before_agent_callback"),
            after_agent_callback=load(_log_agent(name, "after_agent"), "after_agent_callback"),
            **kwargs,
        )

    desk = adk_agent("desk", "You book.", tools=[load(PING, "ping")])
    host = adk_agent("host", "You greet.", sub_agents=[desk])
    runner = InMemoryRunner(agent=host, app_name="diff")
    final: dict[str, Any] = {}

    async def run() -> None:
        session = await runner.session_service.create_session(
            app_name="diff", user_id="u", state={"log": []}
        )
        for text in ("a table", "thanks"):
            message = types.Content(role="user", parts=[types.Part(text=text)])
            async for _ in runner.run_async(
                user_id="u", session_id=session.id, new_message=message
            ):
                pass
        got = await runner.session_service.get_session(
            app_name="diff", user_id="u", session_id=session.id
        )
        final.update(got.state)

    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, run()).result()

    def agent_spec(name: str, instruction: str, **kwargs: Any) -> AgentSpec:
        callbacks = tuple(
            CallbackSpec(CallbackKind(kind), _log_agent(name, kind), 0) for kind in kinds
        )
        return AgentSpec(name, instructions=instruction, callbacks=callbacks, **kwargs)

    app = AppSpec(
        name="diff",
        variables=(LOG,),
        tools=(ToolSpec("ping", ToolKind.PYTHON, python_code=PING),),
        agents=(
            agent_spec("host", "You greet.", children=("desk",), is_root=True),
            agent_spec("desk", "You book.", tools=("ping",)),
        ),
    )
    steps: list[StepSpec] = [StepSpec(StepKind.USER, text="a table")]
    for number, (_, answer) in enumerate(TRANSFER_ANSWERS):
        if number == 3:
            steps.append(StepSpec(StepKind.USER, text="thanks"))
        if answer[0] == "call":
            steps.append(StepSpec(StepKind.TOOL, tool=answer[1], args=dict(answer[2])))
        else:
            steps.append(StepSpec(StepKind.AGENT, text=answer[1]))
    scenario = ScenarioSpec(name="transfer", agent="host", steps=tuple(steps))
    with open_session() as session:
        ours = simulate(app, scenario, run_code=sandbox_runner(session))
    assert [d.code for d in ours.diagnostics] == []
    assert ours.final_state["log"] == final["log"]
    assert [c.instructions for c in ours.model_calls] == [
        text.split("\n\nYou are an agent.")[0].split("\n\nYou are an agent")[0]
        for text in instructions
    ]
