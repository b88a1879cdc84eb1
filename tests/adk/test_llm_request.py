"""A live request against ADK's ``LlmRequest`` for the same app and state (issue 30).

The same scenarios as ``test_differential``, run live on both sides: Statecraft's live loop
(``simulate(..., model=…)``) with a model strategy that records each ``ModelRequest`` it is
sent and answers the scenario's next answer of the turn, and ADK's ``InMemoryRunner`` with a
``BaseLlm`` that records each ``LlmRequest``. Compared, call by call: the system instruction
(ADK appends its own line naming the agent), the contents in order (role; text, function
call with its arguments, function response with its value) and the tool declarations (names
and parameters). The one difference allowed is CX's own: a tool's state update reaches the
model as a ``<state_update>`` text after the function response (docs/reference/
cx-adk-differences.md), which ADK does not send; it is left out of our side before comparing.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from agents.core.model import ModelAnswer, ModelRequest
from agents.core.simulate import simulate
from agents.core.spec import ScenarioSpec, SessionSpec, StepKind, StepSpec
from agents.sandbox import open_session
from agents.sandbox.code_runner import sandbox_runner
from tests import optional
from tests.adk.test_differential import (
    LOG,
    PING,
    SCENARIOS,
    SET_TIER,
    TIER,
    Scenario,
    statecraft_app,
)

pytestmark = [pytest.mark.adk, pytest.mark.xdist_group("adk")]

adk = optional.need("google.adk", "google-adk")

# The scenarios whose answers come from the model (a callback that answers in its place
# leaves the two sides' scripts aligned differently: test_differential covers those).
LIVE = [s for s in SCENARIOS if not s.callbacks] + [
    Scenario(
        "two calls in one answer, their responses, then text; a second turn",
        (LOG, TIER),
        "Tier: {{tier}}.",  # a list would render as JSON here, str() in ADK (documented)
        [
            (
                "upgrade and ping",
                [("calls", [("set_tier", {"tier": "gold"}), ("ping", {})]), ("text", "Both.")],
            ),
            ("and again", [("call", "ping", {}), ("text", "Pong.")]),
        ],
        tools={"set_tier": SET_TIER, "ping": PING},
    ),
    Scenario(
        "three turns of text around one call: the whole history each time",
        (TIER,),
        "You serve a {{tier}} customer.",
        [
            ("hello", [("text", "Hi.")]),
            ("make me platinum", [("call", "set_tier", {"tier": "platinum"}), ("text", "Ok.")]),
            ("what am I?", [("text", "Platinum.")]),
        ],
        tools={"set_tier": SET_TIER},
    ),
]


def _answer(scenario: Scenario, turn: int, k: int) -> tuple[Any, ...]:
    answers = scenario.turns[turn][1]
    return answers[k] if k < len(answers) else ("text", "")


def _part(part: dict[str, Any]) -> tuple[Any, ...] | None:
    if isinstance(part.get("text"), str):
        if part["text"].startswith("<state_update>"):
            return None  # CX's state update after a function response (see the docstring)
        return ("text", part["text"])
    if isinstance(part.get("function_call"), dict):
        call = part["function_call"]
        return ("call", call.get("name"), dict(call.get("args") or {}))
    if isinstance(part.get("function_response"), dict):
        response = part["function_response"]
        return ("response", response.get("name"), response.get("response"))
    return None


def _contents(contents: Any) -> list[tuple[str, list[tuple[Any, ...]]]]:
    """Contents as (role, parts), consecutive contents of one role merged (both protocols
    merge them on the wire), empty ones left out."""
    out: list[tuple[str, list[tuple[Any, ...]]]] = []
    for content in contents:
        parts = [p for p in map(_part, content.get("parts") or ()) if p is not None]
        if not parts:
            continue
        if out and out[-1][0] == content.get("role"):
            out[-1][1].extend(parts)
        else:
            out.append((content.get("role"), parts))
    return out


def _declarations(tools: Any) -> dict[str, list[str]]:
    return {
        d["name"]: sorted(
            (d.get("parameters") or d.get("parameters_json_schema") or {}).get("properties") or {}
        )
        for d in tools
        if d.get("name") != "transfer_to_agent"
    }


def statecraft_requests(scenario: Scenario) -> list[ModelRequest]:
    sent: list[ModelRequest] = []
    asked: list[int] = []

    def model(request: ModelRequest) -> ModelAnswer:
        sent.append(request)
        k = asked.count(request.turn)
        asked.append(request.turn)
        answer = _answer(scenario, request.turn, k)
        if answer[0] in ("call", "calls"):
            calls = answer[1] if answer[0] == "calls" else [answer[1:]]
            return ModelAnswer(
                parts=tuple({"function_call": {"name": n, "args": dict(a)}} for n, a in calls)
            )
        return ModelAnswer(parts=({"text": answer[1]},))

    spec = ScenarioSpec(
        name=scenario.name,
        agent="support",
        steps=tuple(StepSpec(StepKind.USER, text=text) for text, _ in scenario.turns),
        session=SessionSpec(values=dict(scenario.session)),
    )
    with open_session() as session:
        simulate(statecraft_app(scenario), spec, run_code=sandbox_runner(session), model=model)
    return sent


def adk_requests(scenario: Scenario) -> list[dict[str, Any]]:
    from google.adk.agents import LlmAgent
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    turn = [0]
    asked: list[int] = []
    received: list[dict[str, Any]] = []

    class RecordingLlm(BaseLlm):
        async def generate_content_async(self, llm_request, stream=False):  # type: ignore[override]
            contents = [c.model_dump(exclude_none=True) for c in llm_request.contents]
            tools = [
                d.model_dump(exclude_none=True)
                for tool in llm_request.config.tools or ()
                for d in tool.function_declarations or ()
            ]
            received.append(
                {
                    "system": str(llm_request.config.system_instruction or ""),
                    "contents": contents,
                    "tools": tools,
                }
            )
            k = asked.count(turn[0])
            asked.append(turn[0])
            answer = _answer(scenario, turn[0], k)
            if answer[0] in ("call", "calls"):
                calls = answer[1] if answer[0] == "calls" else [answer[1:]]
                parts = [types.Part.from_function_call(name=n, args=dict(a)) for n, a in calls]
            else:
                parts = [types.Part.from_text(text=answer[1])]
            yield LlmResponse(content=types.Content(role="model", parts=parts))

    def load(code: str, entry: str):
        namespace: dict[str, Any] = {}
        exec(compile(code, f"<{entry}>", "exec"), namespace)
        return namespace[entry]

    agent = LlmAgent(
        name="support",
        model=RecordingLlm(model="recording"),
        instruction=scenario.instructions,
        tools=[load(code, name) for name, code in scenario.tools.items()],
    )
    runner = InMemoryRunner(agent=agent, app_name="diff")
    initial = {v.name: v.default for v in scenario.variables if v.default is not None}
    initial.update(scenario.session)

    async def run() -> None:
        session = await runner.session_service.create_session(
            app_name="diff", user_id="u", state=dict(initial)
        )
        for number, (text, _) in enumerate(scenario.turns):
            turn[0] = number
            message = types.Content(role="user", parts=[types.Part(text=text)])
            try:
                async for _event in runner.run_async(
                    user_id="u", session_id=session.id, new_message=message
                ):
                    pass
            except Exception:  # a tool's exception ends the invocation, as in Statecraft
                pass

    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, run()).result()
    return received


@pytest.mark.parametrize("scenario", LIVE, ids=[s.name for s in LIVE])
def test_a_live_request_is_adks_llm_request(scenario: Scenario) -> None:
    ours = statecraft_requests(scenario)
    theirs = adk_requests(scenario)
    assert len(ours) == len(theirs)
    for number, (mine, adks) in enumerate(zip(ours, theirs, strict=True)):
        assert adks["system"].startswith(mine.system_instruction), number
        assert _contents(mine.contents) == _contents(
            [
                {
                    "role": c.get("role"),
                    "parts": [
                        {
                            "text": p.get("text"),
                            "function_call": p.get("function_call"),
                            "function_response": p.get("function_response"),
                        }
                        for p in c.get("parts") or ()
                    ],
                }
                for c in adks["contents"]
            ]
        ), number
        assert _declarations(mine.tools) == _declarations(adks["tools"]), number
