"""CX evaluations of the *scenario* kind: a simulated user with a task, then rubrics.

CX (and ADK's ``ConversationScenario``) test an agent by letting a model play the user:
it gets the evaluation's ``task`` and ``userFacts`` and writes the user's messages until
its task is done or ``maxTurns``; then ``scenarioExpectations`` are checked and the
``rubrics`` judged by a judge model, with its reasons. This module is the pure part: the
requests for the user model and the judge, reading their answers, and checking the
expectations. The loop that runs the agent is the services' (``agents.services.live_runs``).

- The simulated user's request: a system instruction with the task and the facts, the
  conversation so far from the user's side (the agent's messages as ``user`` contents,
  its own as ``model``), no tools. It ends the conversation by answering ``END``
  (``USER_DONE``) or nothing.
- ``scenarioExpectations``: ``toolExpectation.expectedToolCall`` passes when some turn
  called the tool with arguments that match (``agents.core.evaluate.matches``);
  ``agentResponse`` when the agent's replies contain each chunk's text (case ignored).
- The judge: one request with the transcript and the numbered rubrics, asked for JSON
  ``{"rubrics": [{"index": 1, "passed": true, "reason": "…"}]}``; a rubric the answer
  does not judge fails with the reason "the judge did not judge it".
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agents.core.diagnostics import Message
from agents.core.evaluate import ExpectationResult, differences
from agents.core.model import ModelRequest
from agents.core.simulate import SimulationResult

USER_DONE = "END"
DEFAULT_MAX_TURNS = 8


@dataclass(frozen=True, slots=True)
class UserScenario:
    name: str
    path: str
    task: str
    rubrics: tuple[str, ...]
    expectations: tuple[dict[str, Any], ...]
    facts: tuple[tuple[str, str], ...]
    max_turns: int


def _tool_name(ref: Any) -> str:
    return ref.rstrip("/").rsplit("/", 1)[-1] if isinstance(ref, str) else ""


def read_scenario(data: Mapping[str, Any], path: str) -> UserScenario | None:
    scenario = data.get("scenario")
    if not isinstance(scenario, Mapping):
        return None
    facts = tuple(
        (str(f.get("name", "")), str(f.get("value", "")))
        for f in scenario.get("userFacts") or []
        if isinstance(f, Mapping)
    )
    turns = scenario.get("maxTurns")
    return UserScenario(
        name=str(data.get("displayName") or path.split("/")[1]),
        path=path,
        task=str(scenario.get("task") or ""),
        rubrics=tuple(str(r) for r in scenario.get("rubrics") or [] if str(r).strip()),
        expectations=tuple(
            e for e in scenario.get("scenarioExpectations") or [] if isinstance(e, Mapping)
        ),
        facts=facts,
        max_turns=int(turns) if isinstance(turns, int) and turns > 0 else DEFAULT_MAX_TURNS,
    )


def user_request(
    scenario: UserScenario, conversation: Sequence[tuple[str, str]], index: int
) -> ModelRequest:
    """The simulated user's next request; `conversation` is (who, text), who ``user`` or
    ``agent``."""
    facts = "".join(f"\n- {name}: {value}" for name, value in scenario.facts)
    system = (
        "You are playing a user who talks to a customer-facing agent. Stay in the role: "
        "write only the user's next message, short and natural, nothing else.\n"
        f"Your task: {scenario.task}"
        + (f"\nFacts you know:{facts}" if facts else "")
        + f"\nWhen your task is done, or the agent cannot help further, answer exactly "
        f"{USER_DONE}."
    )
    contents: list[dict[str, Any]] = []
    if not conversation or conversation[0][0] == "user":
        contents.append({"role": "user", "parts": [{"text": "(The agent is waiting for you.)"}]})
    for who, text in conversation:
        role = "model" if who == "user" else "user"
        contents.append({"role": role, "parts": [{"text": text}]})
    return ModelRequest(
        index=index,
        turn=len([c for c in conversation if c[0] == "user"]),
        agent="simulated user",
        system_instruction=system,
        contents=tuple(contents),
        tools=(),
    )


def user_message(text: str) -> str | None:
    """The simulated user's message, or None when it ended the conversation."""
    cleaned = text.strip()
    if not cleaned or cleaned.rstrip(".!").upper() == USER_DONE or cleaned.endswith(USER_DONE):
        return None
    return cleaned


def transcript(result: SimulationResult) -> list[tuple[str, str]]:
    return [
        ("user" if e.kind == "user" else "agent", e.text)
        for e in result.events
        if e.kind in ("user", "agent") and e.text
    ]


def check_expectations(scenario: UserScenario, result: SimulationResult) -> list[ExpectationResult]:
    out: list[ExpectationResult] = []
    calls = [e for e in result.events if e.kind == "tool_call"]
    replies = " ".join(e.text for e in result.events if e.kind == "agent").lower()
    for number, expectation in enumerate(scenario.expectations):
        tool = expectation.get("toolExpectation")
        response = expectation.get("agentResponse")
        if isinstance(tool, Mapping) and isinstance(tool.get("expectedToolCall"), Mapping):
            wanted = tool["expectedToolCall"]
            name = _tool_name(wanted.get("tool") or wanted.get("toolName"))
            args = wanted.get("args") if isinstance(wanted.get("args"), Mapping) else None
            line = f"expect call: {name}" + (f" {json.dumps(args)}" if args else "")
            same = [c for c in calls if c.source == name]
            hit = [c for c in same if args is None or not differences(args, c.value or {}, limit=1)]
            status = "passed" if hit else "failed"
            if hit:
                message = (
                    Message("The agent called %(tool)s with matching arguments.", tool=name)
                    if args
                    else Message("The agent called %(tool)s.", tool=name)
                )
            else:
                message = (
                    Message("The agent never called %(tool)s with these arguments.", tool=name)
                    if same
                    else Message("The agent never called %(tool)s.", tool=name)
                )
            actual = [c.value for c in same] or None
            out.append(
                ExpectationResult(number, -1, "call", line, "", status, message, args, actual)
            )
        elif isinstance(response, Mapping):
            chunks = [
                str(c.get("text"))
                for c in response.get("chunks") or []
                if isinstance(c, Mapping) and c.get("text")
            ]
            missing = [c for c in chunks if c.lower() not in replies]
            line = "expect agent: " + " ".join(chunks)
            status = "failed" if missing else "passed"
            message = (
                Message("The agent never said %(text)s.", text=repr(missing[0]))
                if missing
                else Message("The agent's replies contain the expected text.")
            )
            out.append(ExpectationResult(number, -1, "agent", line, "", status, message, chunks))
    return out


def judge_request(
    scenario: UserScenario, conversation: Sequence[tuple[str, str]], index: int
) -> ModelRequest:
    lines = "\n".join(f"{who.upper()}: {text}" for who, text in conversation)
    rubrics = "\n".join(f"{i}. {r}" for i, r in enumerate(scenario.rubrics, start=1))
    system = (
        "You judge a conversation between a user and an agent against rubrics. For each "
        "rubric decide whether the agent satisfied it, with a one-sentence reason citing "
        'the conversation. Answer only JSON: {"rubrics": [{"index": 1, "passed": true, '
        '"reason": "..."}]}.'
    )
    text = f"The user's task: {scenario.task}\n\nConversation:\n{lines}\n\nRubrics:\n{rubrics}"
    return ModelRequest(
        index=index,
        turn=0,
        agent="judge",
        system_instruction=system,
        contents=({"role": "user", "parts": [{"text": text}]},),
        tools=(),
        temperature=0.0,
    )


_JSON = re.compile(r"\{.*\}", re.DOTALL)


def read_verdicts(scenario: UserScenario, text: str, error: str = "") -> list[ExpectationResult]:
    verdicts: dict[int, tuple[bool, str]] = {}
    found = _JSON.search(text or "")
    if found:
        try:
            data = json.loads(found.group(0))
        except json.JSONDecodeError:
            data = {}
        for item in data.get("rubrics") or [] if isinstance(data, dict) else []:
            if isinstance(item, dict) and isinstance(item.get("index"), int):
                verdicts[item["index"]] = (item.get("passed") is True, str(item.get("reason", "")))
    out = []
    for number, rubric in enumerate(scenario.rubrics, start=1):
        passed, reason = verdicts.get(
            number,
            (
                False,
                Message("the judge could not be asked: %(error)s", error=error)
                if error
                else Message("the judge did not judge it"),
            ),
        )
        out.append(
            ExpectationResult(
                1000 + number,
                -1,
                "rubric",
                f"rubric {number}: {rubric}",
                "",
                "passed" if passed else "failed",
                reason or (Message("satisfied") if passed else Message("not satisfied")),
            )
        )
    return out
