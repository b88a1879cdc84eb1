"""Scenarios as ADK evalsets, and ADK evalsets back as scenarios. Pure Python.

An evalset (``google.adk.evaluation.eval_set.EvalSet``, written with its snake_case field
names) holds one eval case per scenario with expectations:

- one ``Invocation`` per turn (a turn starts at each ``user:`` step): ``user_content`` the
  user's text (an event input as ``<event>name</event>``, as the simulation shows it);
  ``intermediate_data.tool_uses`` the turn's expected tool calls in order (``tool:`` steps,
  ``expect call`` with arguments, ``expect transfer`` as ADK's ``transfer_to_agent``);
  ``intermediate_data.tool_responses`` the ``expect response`` values;
  ``final_response`` the turn's last scripted reply (``agent:`` or ``expect agent:``);
- ``session_input.state``: the scenario's session values (and the first turn's input
  variables), plus the channel and modality when they are not web/text;
- ``final_session_state``: the variables the ``expect state`` lines list, merged in order.

``test_config.json`` holds the criteria ADK has for Statecraft's rules: the expected calls
must happen in order with their arguments, other calls allowed (Statecraft's and CX's
``extraToolCallBehavior: ALLOW``): ``tool_trajectory_avg_score`` 1.0 with ``IN_ORDER``.
Statecraft judges replies only with a model (*needs a model*), so no response criterion is
set; add ``final_response_match_v2`` (a judge model) to judge them.

What an evalset has no place for is reported: a ``mock:`` step, a ``callback:`` step, input
variables after the first turn, an ``expect call`` whose arguments the model chooses (ADK's
trajectory compares arguments exactly), ``expect no calls`` (the trajectory of the turn is
then empty), a scenario that starts at a sub-agent (ADK's eval starts at the root).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, NoReturn

from agents.core import codes, limits, rules
from agents.core.adk.names import agent_names, identifier
from agents.core.diagnostics import Diagnostic, Message, Severity
from agents.core.form_text import json_error_message
from agents.core.spec import (
    AppSpec,
    ExpectationSpec,
    ExpectKind,
    ScenarioSpec,
    SessionSpec,
    StepKind,
    StepSpec,
)

CODES: dict[str, str] = codes.section("adk_evalsets")

TRANSFER_TOOL = "transfer_to_agent"
CHANNEL_KEY = "_statecraft_channel"
MODALITY_KEY = "_statecraft_modality"
USER_ID = "user"
TEST_CONFIG = {
    "criteria": {
        "tool_trajectory_avg_score": {"threshold": 1.0, "match_type": "IN_ORDER"},
    }
}
_EVENT = re.compile(r"^<event>(.*)</event>$", re.S)


def _json_bytes(value: Any) -> bytes:
    return (json.dumps(value, ensure_ascii=False, indent=2) + "\n").encode("utf-8")


def _slug(name: str) -> str:

    return identifier(name, lower=True)


def _note(code: str, severity: Severity, scenario: str, message: str) -> Diagnostic:
    return Diagnostic(
        code,
        severity,
        Message("scenario %(scenario)s: %(message)s", scenario=scenario, message=message),
        field="scenarios",
    )


def has_expectations(scenario: ScenarioSpec) -> bool:
    return any(s.kind is StepKind.EXPECT and s.expectation is not None for s in scenario.steps)


def to_evalset(
    app: AppSpec, scenario: ScenarioSpec, package: str, names: Mapping[str, str]
) -> tuple[dict[str, Any], list[Diagnostic]]:
    """The evalset of one scenario (a dict in the shape of ADK's ``EvalSet``)."""
    found: list[Diagnostic] = []
    name = scenario.name
    slug = _slug(name)
    state = dict(scenario.session.values)
    if scenario.session.channel != "web":
        state[CHANNEL_KEY] = scenario.session.channel
    if scenario.session.modality != "text":
        state[MODALITY_KEY] = scenario.session.modality
    root = next((a for a in app.agents if a.is_root), None)
    if root is not None and scenario.agent != root.name:
        found.append(
            _note(
                "SC650",
                Severity.INFO,
                name,
                Message(
                    "it talks to %(agent)s, a sub-agent; ADK's eval starts every "
                    "conversation at the root agent (%(name)s).",
                    agent=scenario.agent,
                    name=root.name,
                ),
            )
        )
    turns: list[dict[str, Any]] = []
    expected_state: dict[str, Any] = {}
    current: dict[str, Any] | None = None
    skipped_before = False
    # The turn as the designer numbers it (evaluate.step_turns): from 0, the steps before
    # the first user: step being turn 0 of their own.
    turn = -1
    for step in scenario.steps:
        if turn < 0 or step.kind is StepKind.USER:
            turn += 1
        if step.kind is StepKind.USER:
            text = step.text or (f"<event>{step.event}</event>" if step.event else "")
            if step.variables:
                if not turns:
                    state.update(step.variables)
                else:
                    found.append(
                        _note(
                            "SC651",
                            Severity.WARNING,
                            name,
                            Message(
                                "turn %(turns_count)s sets input variables; an ADK invocation "
                                "has no place for them (only the first turn's go to the "
                                "session).",
                                turns_count=turn,
                            ),
                        )
                    )
            current = {"text": text, "calls": [], "responses": [], "reply": None}
            turns.append(current)
            continue
        if current is None:
            skipped_before = True
            continue
        if step.kind is StepKind.TOOL:
            current["calls"].append(_call(step.tool, dict(step.args), names))
        elif step.kind is StepKind.AGENT:
            current["reply"] = step.text
        elif step.kind is StepKind.CALLBACK:
            found.append(
                _note(
                    "SC652",
                    Severity.INFO,
                    name,
                    Message(
                        "a callback: step has no place in an evalset (ADK runs callbacks itself)."
                    ),
                )
            )
        elif step.kind is StepKind.EXPECT and step.expectation is not None:
            expected = step.expectation
            if expected.kind is ExpectKind.CALL:
                if isinstance(expected.value, dict):
                    current["calls"].append(_call(expected.tool, dict(expected.value), names))
                else:
                    found.append(
                        _note(
                            "SC653",
                            Severity.INFO,
                            name,
                            Message(
                                "expect call: %(tool)s leaves the arguments to the model; "
                                "ADK's trajectory compares arguments exactly, so it is left "
                                "out.",
                                tool=expected.tool,
                            ),
                        )
                    )
            elif expected.kind is ExpectKind.TRANSFER:
                current["calls"].append(_call(TRANSFER_TOOL, {"agent_name": expected.agent}, names))
            elif expected.kind is ExpectKind.RESPONSE:
                response = expected.value
                if not isinstance(response, dict):
                    response = {"result": response}
                current["responses"].append({"name": expected.tool, "response": response})
            elif expected.kind is ExpectKind.STATE and isinstance(expected.value, dict):
                expected_state.update(expected.value)
            elif expected.kind is ExpectKind.AGENT:
                current["reply"] = str(expected.value or "")
            elif expected.kind is ExpectKind.MOCK:
                found.append(
                    _note(
                        "SC654",
                        Severity.WARNING,
                        name,
                        Message(
                            "mock: %(tool)s has no place in an evalset; under ADK the tool runs.",
                            tool=expected.tool,
                        ),
                    )
                )
            elif expected.kind is ExpectKind.NO_CALLS:
                # The turn's expected trajectory stays empty: IN_ORDER cannot refuse a call.
                found.append(
                    _note(
                        "SC656",
                        Severity.INFO,
                        name,
                        Message(
                            "turn %(turns_count)s expects no calls; ADK's trajectory "
                            "criterion (IN_ORDER) allows other calls, so the evalset "
                            "cannot check it.",
                            turns_count=turn,
                        ),
                    )
                )
    if skipped_before:
        found.append(
            _note(
                "SC655",
                Severity.WARNING,
                name,
                Message("steps before the first user: step have no invocation in an evalset."),
            )
        )
    conversation = []
    for number, turn in enumerate(turns):
        invocation: dict[str, Any] = {
            "invocation_id": f"{slug}-{number + 1}",
            "user_content": {"role": "user", "parts": [{"text": turn["text"]}]},
        }
        if turn["reply"] is not None:
            invocation["final_response"] = {"role": "model", "parts": [{"text": turn["reply"]}]}
        invocation["intermediate_data"] = {
            "tool_uses": turn["calls"],
            "tool_responses": turn["responses"],
            "intermediate_responses": [],
        }
        conversation.append(invocation)
    case = {
        "eval_id": slug,
        "conversation": conversation,
        "session_input": {"app_name": package, "user_id": USER_ID, "state": state},
        "final_session_state": expected_state,
    }
    evalset = {
        "eval_set_id": slug,
        "name": name,
        "description": f"Statecraft scenario {name!r} of agent {scenario.agent}",
        "eval_cases": [case],
    }
    return evalset, found


def _call(tool: str, args: dict[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    if tool == TRANSFER_TOOL and isinstance(args.get("agent_name"), str):
        args = {**args, "agent_name": names.get(args["agent_name"], args["agent_name"])}
    return {"name": tool, "args": args}


def evalset_files(
    app: AppSpec, scenarios: tuple[ScenarioSpec, ...], package: str, names: Mapping[str, str]
) -> tuple[dict[str, bytes], list[Diagnostic]]:
    """``<name>.evalset.json`` per scenario with expectations, and ``test_config.json``."""
    files: dict[str, bytes] = {}
    found: list[Diagnostic] = []
    taken: set[str] = set()
    for scenario in scenarios:
        if not has_expectations(scenario):
            continue
        evalset, problems = to_evalset(app, scenario, package, names)
        found.extend(problems)
        base = evalset["eval_set_id"]
        slug, n = base, 2
        while slug in taken:
            slug, n = f"{base}_{n}", n + 1
        taken.add(slug)
        evalset["eval_set_id"] = slug
        files[f"{slug}.evalset.json"] = _json_bytes(evalset)
    if files:
        files["test_config.json"] = _json_bytes(TEST_CONFIG)
    return files, found


# --------------------------------------------------------------------------- import


def _texts(content: Any) -> str:
    if not isinstance(content, Mapping):
        return ""
    parts = content.get("parts")
    return "".join(
        p["text"] for p in parts or () if isinstance(p, Mapping) and isinstance(p.get("text"), str)
    )


def _get(data: Mapping[str, Any], snake: str) -> Any:
    """A field by its snake_case or camelCase name (ADK reads both)."""
    if snake in data:
        return data[snake]
    head, *rest = snake.split("_")
    return data.get(head + "".join(word.title() for word in rest))


def scenarios_from_evalset(
    data: bytes | str, app: AppSpec, filename: str = "evalset.json"
) -> tuple[list[ScenarioSpec], tuple[Diagnostic, ...]]:
    """ADK eval cases as scenarios of the app's root agent: per invocation a ``user:`` step,
    an ``expect call`` per tool use (``transfer_to_agent`` as ``expect transfer``), an
    ``expect response`` per tool response, the final response as ``expect agent``; the
    session state as session values (channel and modality from Statecraft's keys); the
    expected final state as an ``expect state`` of the last turn."""
    problems: list[Diagnostic] = []

    def error(field: str, message: str) -> tuple[list[ScenarioSpec], tuple[Diagnostic, ...]]:
        problems.append(
            Diagnostic(
                "SC660",
                Severity.ERROR,
                Message(
                    "%(filename)s: %(field)s: %(message)s",
                    filename=filename,
                    field=field,
                    message=message,
                ),
                field=field,
            )
        )
        return [], tuple(problems)

    try:
        doc = json.loads(data)
    except json.JSONDecodeError as exc:
        message = Message(
            "not valid JSON (%(problem)s); export the evalset again",
            problem=json_error_message(exc),
        )
        return error("(file)", message)
    except (ValueError, UnicodeDecodeError) as exc:
        return error("(file)", Message("not JSON (%(exc)s); export the evalset again", exc=exc))
    except RecursionError:
        return error("(file)", limits.too_deep_message())
    if not isinstance(doc, Mapping) or not isinstance(_get(doc, "eval_cases"), list):
        return error("eval_cases", Message("an ADK evalset holds a list eval_cases"))
    root = next((a for a in app.agents if a.is_root), app.agents[0] if app.agents else None)
    if root is None:
        return error("(app)", Message("the app has no agent to hold the scenarios"))

    back = {adk: display for display, adk in agent_names(app).items()}
    declared = {v.name for v in app.variables}
    context = {"filename": filename, "app": app, "root": root, "back": back, "declared": declared}
    out: list[ScenarioSpec] = []
    for number, case in enumerate(_get(doc, "eval_cases")):
        where = f"eval_cases[{number}]"
        try:
            scenario = _case_scenario(case, where, number, doc, problems, error, **context)
        except _BadCase:
            continue  # its problem is listed; the next cases are read for theirs
        if scenario is not None and (deep := limits.scenario_too_deep(scenario)):
            error(f"{where} ({deep})", limits.too_deep_message())
        elif scenario is not None:
            out.append(scenario)
    return ([] if any(p.severity is Severity.ERROR for p in problems) else out), tuple(problems)


class _BadCase(Exception):
    """An eval case that cannot be read (its problem is already listed)."""


def _case_scenario(
    case: Any,
    where: str,
    number: int,
    doc: Mapping[str, Any],
    problems: list[Diagnostic],
    error: Any,
    *,
    filename: str,
    app: AppSpec,
    root: Any,
    back: Mapping[str, str],
    declared: set[str],
) -> ScenarioSpec | None:
    """One eval case as a scenario (None: it is not imported, with a note); `_BadCase`
    when it cannot be read, after `error` listed why."""

    def bad(field: str, message: str) -> NoReturn:
        error(field, message)
        raise _BadCase

    if not isinstance(case, Mapping):
        bad(where, Message("an eval case is an object"))
    name = str(_get(case, "eval_id") or _get(doc, "name") or f"eval case {number + 1}")
    conversation = _get(case, "conversation")
    if not isinstance(conversation, list):
        problems.append(
            Diagnostic(
                "SC661",
                Severity.WARNING,
                Message(
                    "%(filename)s: %(where)s: %(name)s has no static conversation "
                    "(a conversation scenario needs a user simulator): not "
                    "imported.",
                    filename=filename,
                    where=where,
                    name=name,
                ),
                field=f"{where}.conversation",
            )
        )
        return None
    session = _get(case, "session_input") or {}
    state = dict(_get(session, "state") or {}) if isinstance(session, Mapping) else {}
    channel = str(state.pop(CHANNEL_KEY, "web"))
    modality = str(state.pop(MODALITY_KEY, "text"))
    values = {}
    for key, value in state.items():
        if key in declared:
            values[key] = value
        elif not key.startswith("_"):
            problems.append(
                Diagnostic(
                    "SC662",
                    Severity.WARNING,
                    Message(
                        "%(filename)s: %(where)s.session_input.state.%(key)s: the app "
                        "declares no variable %(key)s: left out.",
                        filename=filename,
                        where=where,
                        key=key,
                    ),
                    field=f"{where}.session_input.state.{key}",
                )
            )
    # What a scenario may hold, checked here for every case (the save would stop at the first).
    state_field = f"{where}.session_input.state"
    for d in (
        *rules.channel_problems(channel, f"{state_field}.{CHANNEL_KEY}"),
        *rules.modality_problems(modality, f"{state_field}.{MODALITY_KEY}"),
        *(
            replace(d, field=f"{state_field}.{d.subject}")
            for d in rules.session_values_problems(values, app, state_field)
        ),
    ):
        problems.append(
            replace(
                d,
                message=Message(
                    "%(filename)s: %(field)s: %(message)s",
                    filename=filename,
                    field=d.field,
                    message=d.message,
                ),
            )
        )
    steps: list[StepSpec] = []
    for turn, invocation in enumerate(conversation):
        at = f"{where}.conversation[{turn}]"
        if not isinstance(invocation, Mapping):
            bad(at, Message("an invocation is an object"))
        text = _texts(_get(invocation, "user_content"))
        event = _EVENT.match(text)
        if event:
            steps.append(StepSpec(StepKind.USER, event=event.group(1)))
        else:
            steps.append(StepSpec(StepKind.USER, text=text))
        data_ = _get(invocation, "intermediate_data") or {}
        uses = _get(data_, "tool_uses") or [] if isinstance(data_, Mapping) else []
        for call in uses:
            if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
                bad(f"{at}.intermediate_data.tool_uses", Message("a tool use has a name"))
            args = call.get("args") if isinstance(call.get("args"), Mapping) else {}
            if call["name"] == TRANSFER_TOOL:
                target = str(args.get("agent_name", ""))
                expectation = ExpectationSpec(ExpectKind.TRANSFER, agent=back.get(target, target))
            else:
                expectation = ExpectationSpec(ExpectKind.CALL, tool=call["name"], value=dict(args))
            steps.append(StepSpec(StepKind.EXPECT, expectation=expectation))
        responses = _get(data_, "tool_responses") or [] if isinstance(data_, Mapping) else []
        for response in responses:
            if isinstance(response, Mapping) and isinstance(response.get("name"), str):
                value = response.get("response")
                steps.append(
                    StepSpec(
                        StepKind.EXPECT,
                        expectation=ExpectationSpec(
                            ExpectKind.RESPONSE, tool=response["name"], value=value
                        ),
                    )
                )
        final = _get(invocation, "final_response")
        if final is not None:
            reply = ExpectationSpec(ExpectKind.AGENT, value=_texts(final))
            steps.append(StepSpec(StepKind.EXPECT, expectation=reply))
    # A call of a tool the agents do not have would only fail when the scenario runs.
    for d in rules.scenario_tool_problems(steps, app, root.name):
        problems.append(
            replace(
                d,
                field=f"{where}.conversation",
                message=Message(
                    "%(filename)s: %(where)s (%(name)s): %(message)s",
                    filename=filename,
                    where=where,
                    name=name,
                    message=d.message,
                ),
            )
        )
    final_state = _get(case, "final_session_state")
    if isinstance(final_state, Mapping) and final_state and steps:
        wanted = {k: v for k, v in final_state.items() if k in declared}
        if wanted:
            steps.append(
                StepSpec(
                    StepKind.EXPECT,
                    expectation=ExpectationSpec(ExpectKind.STATE, value=wanted),
                )
            )
    return ScenarioSpec(
        name=name[:200],
        agent=root.name,
        steps=tuple(steps),
        session=SessionSpec(values=values, channel=channel, modality=modality),
    )
