"""Run a Statecraft scenario through Statecraft's simulation and through the exported ADK
package (``InMemoryRunner`` with a scripted ``BaseLlm`` playing the scenario's model calls),
and say what each gave: the state writes, the final state, the answers, the tool responses,
the instructions and the ``<state_update>`` lines each model call received.

Shared by the export's differential test and its evalset test.
"""

from __future__ import annotations

import asyncio
import copy
import importlib
import itertools
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from agents.core.adk.package import agent_names, package_name, to_adk_files
from agents.core.simulate import SimulationResult, same_value, simulate
from agents.core.spec import AppSpec, ExpectKind, ScenarioSpec, StepKind
from agents.sandbox import Limits, open_session
from agents.sandbox.code_runner import sandbox_runner

TRANSFER = "transfer_to_agent"
_LOADED = itertools.count(1)


def write_package(app: AppSpec, scenarios: tuple[ScenarioSpec, ...], where: Path) -> Path:
    files, _ = to_adk_files(app, scenarios)
    for path, data in files.items():
        target = where / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return where / package_name(app)


def load_package(app: AppSpec, scenarios: tuple[ScenarioSpec, ...], where: Path) -> Any:
    """The exported package, imported under a name of its own (the package uses only
    relative imports, so its folder may be renamed)."""
    folder = write_package(app, scenarios, where)
    unique = f"{folder.name}_{next(_LOADED)}"
    renamed = folder.with_name(unique)
    folder.rename(renamed)
    sys.path.insert(0, str(where))
    try:
        module = importlib.import_module(unique)
    finally:
        sys.path.remove(str(where))
    return module, renamed


# --------------------------------------------------------------------------- Statecraft


# The exported package sends the whole history (its README: Statecraft's simulated context
# window does not apply), so the simulation runs with a budget no scenario reaches: code's
# ``callback_context.events`` and the model's history then hold every event, as on ADK.
WHOLE_HISTORY = 10**9


def statecraft_run(app: AppSpec, scenario: ScenarioSpec, limits: Limits | None = None):
    scenario = replace(scenario, token_budget=max(scenario.token_budget, WHOLE_HISTORY))
    with open_session(**({"limits": limits} if limits else {})) as session:
        return simulate(app, scenario, run_code=sandbox_runner(session))


def statecraft_writes(result: SimulationResult) -> list[tuple[str, Any]]:
    return [
        (e.variable, e.value)
        for e in result.events
        if e.kind == "state_update" and e.source != "session"
    ]


# --------------------------------------------------------------------------- the script


@dataclass
class Turn:
    text: str
    variables: dict[str, Any]
    answers: list[tuple[Any, ...]]  # ("text", str) | ("call", name, args)


def script_turns(scenario: ScenarioSpec, names: dict[str, str]) -> list[Turn] | None:
    """The scenario's turns and the scripted model's answers (one per model call that
    reaches the model, as the simulation uses them: a ``before_model`` callback answering
    in the model's place uses none; past them the model answers ""); None when a step has no ADK counterpart (a mock, a callback
    step, steps before the first user message)."""
    turns: list[Turn] = []
    for step in scenario.steps:
        if step.kind is StepKind.USER:
            text = step.text or (f"<event>{step.event}</event>" if step.event else "")
            turns.append(Turn(text, dict(step.variables), []))
            continue
        if not turns or step.kind is StepKind.CALLBACK:
            return None
        answers = turns[-1].answers
        if step.kind is StepKind.AGENT:
            answers.append(("text", step.text))
        elif step.kind is StepKind.TOOL:
            answers.append(("call", step.tool, dict(step.args)))
        elif step.kind is StepKind.EXPECT and step.expectation is not None:
            expected = step.expectation
            if expected.kind is ExpectKind.MOCK:
                return None
            if expected.kind is ExpectKind.CALL and isinstance(expected.value, dict):
                answers.append(("call", expected.tool, dict(expected.value)))
            elif expected.kind is ExpectKind.AGENT:
                answers.append(("text", str(expected.value or "")))
            elif expected.kind is ExpectKind.TRANSFER:
                answers.append(("call", TRANSFER, {"agent_name": expected.agent}))
    for turn in turns:
        for n, answer in enumerate(turn.answers):
            if answer[0] == "call" and answer[1] == TRANSFER:
                target = answer[2].get("agent_name")
                turn.answers[n] = ("call", TRANSFER, {"agent_name": names.get(target, target)})
    return turns


# --------------------------------------------------------------------------- ADK


@dataclass
class AdkOutcome:
    writes: list[tuple[str, Any]] = field(default_factory=list)
    final_state: dict[str, Any] = field(default_factory=dict)
    instructions: list[str] = field(default_factory=list)
    calls_per_turn: list[int] = field(default_factory=list)
    model_updates: list[list[str]] = field(default_factory=list)  # per call that reached it
    # Per call that reached the model: its contents as (role, part kinds) — "call:<name>",
    # "response:<name>" or the text — in the order ADK's model received them.
    model_contents: list[list[tuple[str, tuple[str, ...]]]] = field(default_factory=list)
    agent_texts: list[str] = field(default_factory=list)
    tool_responses: list[Any] = field(default_factory=list)
    failed_turns: list[int] = field(default_factory=list)
    unscripted_calls: int = 0


def shape(content: Any) -> tuple[str, tuple[str, ...]]:
    """A genai content as (role, its parts' kinds: "call:<name>", "response:<name>", text)."""
    kinds = []
    for part in content.parts or ():
        if part.function_call is not None:
            kinds.append(f"call:{part.function_call.name}")
        elif part.function_response is not None:
            kinds.append(f"response:{part.function_response.name}")
        else:
            kinds.append(part.text or "")
    return (content.role or "", tuple(kinds))


def between_call_and_response(contents: list[tuple[str, tuple[str, ...]]]) -> list[str]:
    """Where `contents` (``shape``s) break the function-call protocol of Gemini and OpenAI:
    a content with function calls not followed at once by one with as many responses, or
    a response that does not follow a call. Empty: every call is followed by its
    responses, with nothing between them."""
    problems = []
    for i, (role, kinds) in enumerate(contents):
        calls = sum(k.startswith("call:") for k in kinds) if role == "model" else 0
        after = contents[i + 1][1] if i + 1 < len(contents) else ()
        responses = sum(k.startswith("response:") for k in after)
        if calls and i + 1 < len(contents) and responses != calls:
            problems.append(f"content {i + 1} {kinds} is followed by {after}")
        before = contents[i - 1] if i else ("", ())
        answered = sum(k.startswith("call:") for k in before[1]) if before[0] == "model" else 0
        if any(k.startswith("response:") for k in kinds) and not answered:
            problems.append(f"content {i + 1} {kinds} follows {before[1]}, not a call")
    return problems


def _agents(agent: Any) -> list[Any]:
    return [agent, *(a for child in agent.sub_agents for a in _agents(child))]


def adk_run(app: AppSpec, scenario: ScenarioSpec, where: Path) -> AdkOutcome | None:
    from google.adk.events import Event
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    names = agent_names(app)
    turns = script_turns(scenario, names)
    if turns is None:
        return None
    module, _ = load_package(app, (), where)
    root = module.agent.root_agent
    outcome = AdkOutcome()
    current = [0]
    reached: list[int] = []  # per turn, the model calls that reached the model

    class ScriptedLlm(BaseLlm):
        async def generate_content_async(self, llm_request, stream=False):  # type: ignore[override]
            outcome.model_updates.append(
                [
                    p.text
                    for c in llm_request.contents
                    for p in c.parts or ()
                    if p.text and p.text.startswith("<state_update>")
                ]
            )
            outcome.model_contents.append([shape(c) for c in llm_request.contents])
            # The turn's next scripted answer: one per call that reaches the model (a
            # before_model callback answering in its place does not use one up).
            k = reached[current[0]]
            reached[current[0]] += 1
            answers = turns[current[0]].answers
            if k < len(answers):
                answer = answers[k]
            else:
                outcome.unscripted_calls += 1
                answer = ("text", "")
            if answer[0] == "call":
                part = types.Part.from_function_call(name=answer[1], args=dict(answer[2]))
            else:
                part = types.Part.from_text(text=answer[1])
            yield LlmResponse(content=types.Content(role="model", parts=[part]))

    def count(callback_context, llm_request):
        outcome.calls_per_turn[current[0]] += 1
        instruction = llm_request.config.system_instruction
        outcome.instructions.append(str(instruction or ""))
        return None

    model = ScriptedLlm(model="scripted")
    for agent in _agents(root):
        agent.model = model
        agent.before_model_callback = [count, agent.before_model_callback]

    app_name = "exported"
    runner = InMemoryRunner(agent=root, app_name=app_name)
    declared = {v.name for v in app.variables}
    initial = dict(scenario.session.values)
    if scenario.session.channel != "web":
        initial["_statecraft_channel"] = scenario.session.channel
    if scenario.session.modality != "text":
        initial["_statecraft_modality"] = scenario.session.modality
    start = names.get(scenario.agent, root.name)

    async def run() -> None:
        session = await runner.session_service.create_session(
            app_name=app_name, user_id="u", state=copy.deepcopy(initial)
        )
        if start != root.name:
            # Every conversation starts at the root: this one after it transferred.
            call = types.Part.from_function_call(name=TRANSFER, args={"agent_name": start})
            for author, content in (
                (root.name, types.Content(role="model", parts=[call])),
                (start, None),
            ):
                event = Event(invocation_id="setup", author=author, content=content)
                await runner.session_service.append_event(session, event)
        running = {**app.default_values(), **initial}
        for number, turn in enumerate(turns):
            current[0] = number
            outcome.calls_per_turn.append(0)
            reached.append(0)
            message = types.Content(role="user", parts=[types.Part(text=turn.text)])
            try:
                async for event in runner.run_async(
                    user_id="u",
                    session_id=session.id,
                    new_message=message,
                    state_delta=copy.deepcopy(turn.variables) or None,
                ):
                    for name, value in (event.actions.state_delta or {}).items():
                        if name in declared and not same_value(running.get(name), value):
                            value = copy.deepcopy(value)
                            if event.author != "user":
                                outcome.writes.append((name, value))
                            running[name] = value
                    for part in (event.content.parts if event.content else None) or ():
                        if part.text and event.author != "user" and not event.partial:
                            outcome.agent_texts.append(part.text)
                        if part.function_response is not None:
                            outcome.tool_responses.append(part.function_response.response)
            except Exception:  # the runtime lets the code's exception end the invocation
                if os.environ.get("HARNESS_DEBUG"):
                    raise
                outcome.failed_turns.append(number)
        final = await runner.session_service.get_session(
            app_name=app_name, user_id="u", session_id=session.id
        )
        outcome.final_state = dict(final.state)

    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, run()).result()
    return outcome


# --------------------------------------------------------------------------- comparing


def collapsed(writes: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """Consecutive writes of one variable count once (the last): ADK keeps one value per
    variable in an event's state delta (README of the package, "What differs")."""
    out: list[tuple[str, Any]] = []
    for name, value in writes:
        if out and out[-1][0] == name:
            out[-1] = (name, value)
        else:
            out.append((name, value))
    return out


def collapsed_updates(texts: list[str]) -> list[str]:
    """``<state_update>`` lines with consecutive ones of one variable counted once (the
    last), as ``collapsed`` does for writes."""
    named = [(text.removeprefix("<state_update>").split(":", 1)[0], text) for text in texts]
    return [text for name, text in collapsed(named)]


def visible_state(state: dict[str, Any]) -> dict[str, Any]:
    """The app's state (not the keys code keeps privately, ``_...``); no value = absent."""
    return {k: v for k, v in state.items() if not k.startswith("_") and v is not None}


def calls_per_turn(result: SimulationResult, turns: int) -> list[int]:
    counts = [0] * turns
    for call in result.model_calls:
        if 0 <= call.turn < turns:
            counts[call.turn] += 1
    return counts


def _same(value: Any) -> Any:
    return value


def differences(ours: SimulationResult, theirs: AdkOutcome, normalize: Any = _same) -> list[str]:
    """What differs between the two runs (empty: they agree). `normalize` maps every value
    and text of both runs before they are compared (to set aside what an app does at
    random)."""
    out = []
    our_writes = normalize(collapsed(statecraft_writes(ours)))
    their_writes = normalize(collapsed(theirs.writes))
    if our_writes != their_writes:
        out.append(f"writes: {our_writes} != {their_writes}")
    a = normalize(visible_state(ours.final_state))
    b = normalize(visible_state(theirs.final_state))
    if a != b:
        keys = sorted(k for k in a.keys() | b.keys() if not same_value(a.get(k), b.get(k)))
        out.append(f"final state differs in {keys}")
    texts = normalize([e.text for e in ours.events if e.kind == "agent"])
    adk_texts = normalize([t for t in theirs.agent_texts if t])
    if [t for t in texts if t] != adk_texts:
        out.append(f"answers: {texts} != {adk_texts}")
    responses = [
        e.value if isinstance(e.value, dict) else {"result": e.value}
        for e in ours.events
        if e.kind == "tool_response"
    ]
    if normalize(responses) != normalize(theirs.tool_responses):
        out.append("tool responses differ")
    if len(ours.model_calls) == len(theirs.instructions):
        for call, text in zip(ours.model_calls, theirs.instructions, strict=True):
            if not text.startswith(call.instructions):
                out.append(f"instructions of model call {call.index} differ")
                break
    reached = [c for c in ours.model_calls if c.replaced_by != "before_model_callback"]
    if len(reached) == len(theirs.model_updates):
        for call, adk_updates in zip(reached, theirs.model_updates, strict=True):
            updates = [
                ours.events[i].text for i in call.history if ours.events[i].kind == "state_update"
            ]
            if normalize(collapsed_updates(updates)) != normalize(collapsed_updates(adk_updates)):
                out.append(f"<state_update>s of model call {call.index} differ")
                break
    for number, contents in enumerate(theirs.model_contents):
        broken = between_call_and_response(contents)
        if broken:
            out.append(f"ADK's model call {number} breaks call/response: {broken[0]}")
            break
    ended = sorted({e.turn for e in ours.events if e.error and e.error.code == "SC410"})
    if ended != theirs.failed_turns:
        out.append(f"turns ended by an exception: {ended} != {theirs.failed_turns}")
    return out
