"""Check a scenario's expectations (CX golden evaluations) against what its simulation did.

``evaluate(scenario, result)`` reads the ``SimulationResult`` of ``simulate`` and reports
each EXPECT step of the scenario as passed, failed (expected vs actual, with the
differences in words) or needing a model. Pure and deterministic, like the simulation.

When an expectation is checked
------------------------------
As CX does, an expectation belongs to its turn (a turn starts at each user input) and is
checked against the whole turn: ``expect state`` against the state at the end of the turn,
``expect response`` against the tool's last response in the turn, ``expect no calls``
against every tool call of the turn. Where it sits in the turn only matters for the
timeline.

- ``expect state: {...}`` — each listed variable must match its value at the end of the
  turn (``null`` means "has no value"); ``expect state: {}`` means no variable changed
  during the turn.
- ``expect call: Tool {args}`` — the scripted model makes this call (the tool's real code
  and callbacks run): passed when it ran without error, failed with the error otherwise
  (unknown tool, not attached, exception, not run). Without arguments the model chooses
  them: needs a model, and the tool is not run offline — unless the tool takes no
  parameter (nothing to choose: it runs with ``{}``, ``simulate.no_parameter_arguments``).
- ``expect response: Tool {...}`` — the response of the tool's last call in the turn
  (a response that is not an object is compared as ``{"result": value}``, as ADK wraps it).
- ``expect no calls`` — no tool call in the turn (a transfer is not a tool call).
- ``expect transfer: Agent`` — the scripted model calls ``transfer_to_agent`` (the
  simulation hands the session over to the agent): passed when the transfer happened,
  failed with the reason otherwise (no such agent, not one the agent may hand over to).
- ``expect agent: text`` — what the model replies can only be judged by a model: needs a
  model (the scripted reply still runs, with its model callbacks).

The matching rule (``matches``)
-------------------------------
Google's goldens list only what they care about, so: an object matches when every key it
lists is present and matches recursively (other keys are ignored) — so ``{}`` lists nothing
and matches any object, as Google's own goldens need (bella_notte expects ``sm.filled: {}``
right after its routing callback has written ``sm.filled.active_flow``); a list matches a
list of the same length, item by item (with the same rule inside); numbers compare by value
(``4`` equals ``4.0``), booleans are not numbers; anything else must be equal.

A scenario passes when it has expectations, none failed and at least one passed; it fails
when one failed; it needs a model when all of them need one, or when a golden that lists
only some calls (``extraToolCallBehavior: ALLOW``) failed offline only where the calls it
leaves out decide (``ExpectationResult.left_to_model``: "a live model may make the calls
this golden leaves out" — a refused call of another agent's tool, or a check at or after a
turn whose call offline does not make). ``agents.core.explain.explain_failures`` adds the
third kind of evidence: a left-out call (a tool the golden never lists, with arguments
another golden of the app lists) that, made first in an earlier turn, makes the failed
check pass offline.
Any other failure stays a failure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from agents.core.diagnostics import Message, Severity
from agents.core.render import render_value
from agents.core.script import format_expectation
from agents.core.simulate import TRANSFER_TOOL, SimulationResult
from agents.core.spec import AppSpec, ExpectKind, ScenarioSpec, StepKind

__all__ = [
    "ExpectationResult",
    "ScenarioEvaluation",
    "Status",
    "allows_extra_calls",
    "differences",
    "evaluate",
    "matches",
    "step_turns",
]

# ``stopped``: a bound (a time limit, a cap, a cancel) stopped the run at or before the
# check's turn (``SimulationResult.stopped``): not judged, never ``failed``.
Status = Literal["passed", "failed", "needs_model", "stopped"]
ScenarioStatus = Literal["passed", "failed", "needs_model", "stopped", "none"]

_MISSING = object()


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def matches(expected: Any, actual: Any) -> bool:
    """Whether `actual` satisfies `expected` (see the module docstring)."""
    return not differences(expected, actual, limit=1)


def differences(expected: Any, actual: Any, *, path: str = "", limit: int = 20) -> list[str]:
    """Where `actual` does not satisfy `expected`, one readable line each (at most `limit`)."""
    found: list[str] = []
    _diff(expected, actual, path, found, limit)
    return found


def _show(value: Any) -> str:
    if value is _MISSING:
        return Message("nothing (missing)")
    text = render_value(value) if not isinstance(value, str) else f'"{value}"'
    return text if len(text) <= 120 else text[:117] + "…"


def _diff(expected: Any, actual: Any, path: str, found: list[str], limit: int) -> None:
    if len(found) >= limit:
        return
    where = path or Message("the value")
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            found.append(
                Message(
                    "%(where)s: expected an object %(show)s, got %(show_2)s",
                    where=where,
                    show=_show(expected),
                    show_2=_show(actual),
                )
            )
            return
        for key, value in expected.items():
            sub = f"{path}.{key}" if path else str(key)
            if key not in actual:
                found.append(
                    Message(
                        "%(sub)s: expected %(show)s, got nothing (missing)",
                        sub=sub,
                        show=_show(value),
                    )
                )
            else:
                _diff(value, actual[key], sub, found, limit)
            if len(found) >= limit:
                return
        return
    if isinstance(expected, list | tuple):
        if not isinstance(actual, list | tuple):
            found.append(
                Message(
                    "%(where)s: expected a list %(show)s, got %(show_2)s",
                    where=where,
                    show=_show(expected),
                    show_2=_show(actual),
                )
            )
            return
        if len(expected) != len(actual):
            found.append(
                Message(
                    "%(where)s: expected %(expected_count)s items %(show)s, got "
                    "%(actual_count)s %(show_2)s",
                    where=where,
                    expected_count=len(expected),
                    show=_show(expected),
                    actual_count=len(actual),
                    show_2=_show(actual),
                )
            )
            return
        for i, (want, got) in enumerate(zip(expected, actual, strict=True)):
            _diff(want, got, f"{path}[{i}]", found, limit)
        return
    if _is_number(expected) and _is_number(actual):
        same = expected == actual
    elif isinstance(expected, bool) or isinstance(actual, bool):
        same = type(expected) is type(actual) and expected == actual
    else:
        same = type(expected) is type(actual) and expected == actual
    if not same:
        found.append(
            Message(
                "%(where)s: expected %(show)s, got %(show_2)s",
                where=where,
                show=_show(expected),
                show_2=_show(actual),
            )
        )


@dataclass(frozen=True, slots=True)
class ExpectationResult:
    """The outcome of one EXPECT step: `step` its index in the scenario, `turn` its turn.

    `expected`/`actual` are what was compared (JSON values), `differences` say where they
    differ, `message` says the outcome in words."""

    step: int
    turn: int
    kind: str
    line: str
    note: str
    status: Status
    message: str
    expected: Any = None
    actual: Any = None
    differences: tuple[str, ...] = ()
    # True when offline it failed but the golden leaves the calls that decide it to the model
    # (``extraToolCallBehavior: ALLOW``): status ``needs_model``, "a live model may make the
    # calls this golden leaves out"; the scenario then needs a model, it does not pass.
    left_to_model: bool = False


@dataclass(frozen=True, slots=True)
class ScenarioEvaluation:
    results: tuple[ExpectationResult, ...] = ()
    status: ScenarioStatus = "none"
    passed: int = 0
    failed: int = 0
    needs_model: int = 0
    notes: tuple[str, ...] = field(default=())
    stopped: int = 0


def step_turns(scenario: ScenarioSpec) -> list[int]:
    """The turn of each step, by the simulation's rule (a USER step starts a turn; steps
    before the first one are turn 0)."""
    turns: list[int] = []
    turn = -1
    for step in scenario.steps:
        if turn < 0 or step.kind is StepKind.USER:
            turn += 1
        turns.append(turn)
    return turns


def _evaluation(
    results: list[ExpectationResult], notes: tuple[str, ...] = ()
) -> ScenarioEvaluation:
    """The scenario's evaluation of these results: its status and its counts."""
    return ScenarioEvaluation(
        results=tuple(results),
        status=_status(results),
        passed=sum(r.status == "passed" for r in results),
        failed=sum(r.status == "failed" for r in results),
        needs_model=sum(r.status == "needs_model" for r in results),
        notes=notes,
        stopped=sum(r.status == "stopped" for r in results),
    )


def _written_during(events: list[Any]) -> dict[str, list[Any]]:
    """Each variable's values as the turn's state updates wrote them, in order."""
    out: dict[str, list[Any]] = {}
    for event in events:
        if event.kind == "state_update" and event.variable is not None:
            out.setdefault(event.variable, []).append(event.value)
    return out


def _status(results: list[ExpectationResult]) -> ScenarioStatus:
    if not results:
        return "none"
    if any(r.status == "failed" for r in results):
        return "failed"  # before any stop: what the scenario does, on any machine
    if any(r.status == "stopped" for r in results):
        return "stopped"
    if any(r.left_to_model for r in results):
        return "needs_model"
    if any(r.kind == "call" and r.status == "needs_model" for r in results):
        # An expected call that was not made: the golden is never passed without it.
        return "needs_model"
    if any(r.status == "passed" for r in results):
        return "passed"
    return "needs_model"


def evaluate(
    scenario: ScenarioSpec,
    result: SimulationResult,
    app: AppSpec | None = None,
    *,
    extra_calls_allowed: bool | None = None,
) -> ScenarioEvaluation:
    """Each expectation of `scenario` checked against `result` (its simulation). With `app`,
    a golden that lists only some calls (`extra_calls_allowed`; None: read from the app's
    and the evaluation's CX carry, `allows_extra_calls`) reports the failures the calls it
    leaves out decide as needing a model (see the module docstring)."""
    turns = step_turns(scenario)
    results: list[ExpectationResult] = []
    for index, step in enumerate(scenario.steps):
        expected = step.expectation
        if step.kind is not StepKind.EXPECT or expected is None:
            continue
        if expected.kind is ExpectKind.MOCK:
            continue
        turn = turns[index]
        line = format_expectation(expected)

        def outcome(
            status: Status,
            message: str,
            want: Any = None,
            got: Any = None,
            diffs: tuple[str, ...] = (),
            *,
            index: int = index,
            turn: int = turn,
            line: str = line,
            kind: str = expected.kind.value,
            note: str = expected.note,
        ) -> None:
            results.append(
                ExpectationResult(index, turn, kind, line, note, status, message, want, got, diffs)
            )

        if result.stopped_turn is not None and turn >= result.stopped_turn:
            outcome(
                "stopped",
                Message(
                    "Stopped: %(reason)s in turn %(turn)s; this check was not judged.",
                    reason=result.stopped,
                    turn=result.stopped_turn,
                ),
                expected.value,
            )
            continue
        if turn >= len(result.turns):
            outcome(
                "failed", Message("This turn was not simulated (see the simulation's problems).")
            )
            continue
        turn_result = result.turns[turn]
        events = [result.events[i] for i in turn_result.events]
        kind = expected.kind
        if kind is ExpectKind.AGENT:
            outcome(
                "needs_model",
                Message(
                    "What the agent replies depends on the model: run this golden "
                    "in CX Agent Studio to check it."
                ),
                expected.value,
            )
        elif kind is ExpectKind.CALL:
            own = [e for e in events if e.step == index]
            if expected.value is None and not any(e.kind == "tool_call" for e in own):
                outcome(
                    "needs_model",
                    Message(
                        "The golden leaves the arguments of %(tool)s to the model: "
                        "the call is not run offline.",
                        tool=expected.tool,
                    ),
                )
                continue
            # Notes the runtime would not stop for (an undeclared key kept, a value undone by
            # a later failure is an error) do not fail the call; errors do, and a scripted
            # call skipped for a tool another agent has (SC405, a warning: the routing is
            # the model's, `_left_to_the_model`).
            errors = [
                e
                for e in own
                if e.kind == "error"
                and (
                    e.error is None or e.error.severity is Severity.ERROR or e.error.code == "SC405"
                )
            ]
            answered = any(e.kind == "tool_response" for e in own)
            if errors:
                outcome(
                    "failed",
                    Message(
                        "The call of %(tool)s failed: %(label)s",
                        tool=expected.tool,
                        label=errors[0].label,
                    ),
                    expected.value,
                    None,
                    tuple(e.label for e in errors),
                )
            elif not answered:
                outcome(
                    "failed",
                    Message("%(tool)s did not answer.", tool=expected.tool),
                    expected.value,
                )
            else:
                outcome(
                    "passed",
                    Message("%(tool)s was called and answered.", tool=expected.tool),
                    expected.value,
                )
        elif kind is ExpectKind.STATE:
            want = expected.value if isinstance(expected.value, dict) else {}
            state = turn_result.state_after
            if not want:
                changed = list(turn_result.changed)
                if changed:
                    got = {name: state.get(name) for name in changed}
                    outcome(
                        "failed",
                        Message(
                            "Expected no variable to change in this turn; %(changed)s changed.",
                            changed=", ".join(changed),
                        ),
                        {},
                        got,
                        tuple(f"{name}: changed to {_show(got[name])}" for name in changed),
                    )
                else:
                    outcome("passed", Message("No variable changed in this turn."), {}, {})
                continue
            got = {name: state.get(name) for name in want}
            diffs: list[str] = []
            during = _written_during(events)
            for name, value in want.items():
                if value is not None and any(
                    not differences(value, written, limit=1) for written in during.get(name, ())
                ):
                    # CX compares updatedVariables with the values the turn wrote: a value
                    # written during the turn matches even if later code moved it on.
                    got[name] = next(w for w in during[name] if not differences(value, w, limit=1))
                    continue
                if value is None:
                    if state.get(name) is not None:
                        diffs.append(
                            Message(
                                "%(name)s: expected no value, got %(show)s",
                                name=name,
                                show=_show(state[name]),
                            )
                        )
                elif name not in state:
                    diffs.append(
                        Message(
                            "%(name)s: expected %(show)s, got no value",
                            name=name,
                            show=_show(value),
                        )
                    )
                else:
                    diffs.extend(differences(value, state[name], path=name))
            if diffs:
                outcome(
                    "failed",
                    Message("The state at the end of turn %(turn)s differs.", turn=turn),
                    want,
                    got,
                    tuple(diffs),
                )
            else:
                outcome(
                    "passed",
                    Message("The state at the end of turn %(turn)s matches.", turn=turn),
                    want,
                    got,
                )
        elif kind is ExpectKind.RESPONSE:
            responses = [
                e.value for e in events if e.kind == "tool_response" and e.source == expected.tool
            ]
            if not responses:
                outcome(
                    "failed",
                    Message(
                        "%(tool)s gave no response in turn %(turn)s.", tool=expected.tool, turn=turn
                    ),
                    expected.value,
                )
                continue
            got = responses[-1]
            compared = (
                got
                if isinstance(got, dict) or not isinstance(expected.value, dict)
                else {"result": got}
            )
            diffs = differences(expected.value, compared, path="response")
            if diffs:
                outcome(
                    "failed",
                    Message("The response of %(tool)s differs.", tool=expected.tool),
                    expected.value,
                    got,
                    tuple(diffs),
                )
            else:
                outcome(
                    "passed",
                    Message("The response of %(tool)s matches.", tool=expected.tool),
                    expected.value,
                    got,
                )
        elif kind is ExpectKind.NO_CALLS:
            calls = [e.label for e in events if e.kind == "tool_call" and e.source != TRANSFER_TOOL]
            if calls:
                outcome(
                    "failed",
                    Message(
                        "Expected no tool call in turn %(turn)s; got %(calls_count)s.",
                        turn=turn,
                        calls_count=len(calls),
                    ),
                    [],
                    calls,
                    tuple(f"called {label}" for label in calls),
                )
            else:
                outcome(
                    "passed", Message("No tool was called in turn %(turn)s.", turn=turn), [], []
                )
        elif kind is ExpectKind.TRANSFER:
            own = [e for e in events if e.step == index]
            done = [
                e
                for e in own
                if e.kind == "transfer"
                and isinstance(e.value, dict)
                and e.value.get("to") == expected.agent
            ]
            errors = [e for e in own if e.kind == "error"]
            if done:
                outcome(
                    "passed",
                    Message(
                        "%(get)s transferred to %(agent)s.",
                        get=done[0].value.get("from"),
                        agent=expected.agent,
                    ),
                    expected.agent,
                    expected.agent,
                )
            else:
                outcome(
                    "failed",
                    Message(
                        "No transfer to %(agent)s: %(why)s",
                        agent=expected.agent,
                        why=errors[0].label,
                    )
                    if errors
                    else Message("No transfer to %(agent)s.", agent=expected.agent),
                    expected.agent,
                    None,
                    tuple(e.label for e in errors),
                )
    if extra_calls_allowed is None:
        extra_calls_allowed = app is not None and allows_extra_calls(app, scenario)
    if app is not None and extra_calls_allowed:
        results = _left_to_the_model(app, scenario, results)
    return _evaluation(results)


def allows_extra_calls(app: AppSpec, scenario: ScenarioSpec) -> bool:
    """Whether the golden lists only some of the calls (CX's ``toolMatchingSettings.
    extraToolCallBehavior: ALLOW``, the app's or the evaluation's own)."""
    found = []
    for owner in (app.cx.get("app"), (scenario.cx or {}).get("evaluation")):
        thresholds = owner.get("evaluationMetricsThresholds") if isinstance(owner, dict) else None
        golden = (
            thresholds.get("goldenEvaluationMetricsThresholds")
            if isinstance(thresholds, dict)
            else None
        )
        settings = golden.get("toolMatchingSettings") if isinstance(golden, dict) else None
        if isinstance(settings, dict) and settings.get("extraToolCallBehavior"):
            found.append(settings["extraToolCallBehavior"])
    return bool(found) and found[-1] == "ALLOW"


_UNLISTED = "A live model may make the calls this golden leaves out: "


def _left_to_the_model(
    app: AppSpec, scenario: ScenarioSpec, results: list[ExpectationResult]
) -> list[ExpectationResult]:
    """A golden that lists only some calls, run offline, makes only the listed ones. A
    failure is then the model's to decide (needs a model, said so), not a defect, when:

    - an expected call was refused because the agent at that moment does not have the tool
      while another agent has it: the routing there is a call the golden leaves out;
    - a check comes at or after a turn where such a call, or a call whose arguments the
      golden leaves to the model, was not made offline.

    Every other failure stays failed (a tool raising, a wrong value after listed calls)."""
    out: list[ExpectationResult] = []
    left_at: int | None = None  # the first turn with a call the golden leaves to the model
    for r in results:
        expected = scenario.steps[r.step].expectation
        tool = expected.tool if expected is not None and r.kind == "call" else ""
        owners = [a.name for a in app.agents if tool and tool in a.tools]
        if r.kind == "call" and r.status == "needs_model":
            left_at = r.turn if left_at is None else left_at
        elif r.status == "failed" and r.kind == "call" and owners and "not attached" in r.message:
            left_at = r.turn if left_at is None else left_at
            r = replace(
                r,
                status="needs_model",
                left_to_model=True,
                message=Message(
                    "%(unlisted)s%(tool)s is a tool of %(owners)s; the golden "
                    "leaves the routing there to the model, so offline the call "
                    "is refused (%(message)s)",
                    unlisted=_UNLISTED,
                    tool=tool,
                    owners=", ".join(owners),
                    message=r.message,
                ),
            )
        elif r.status == "failed" and r.kind != "call" and left_at is not None:
            r = replace(
                r,
                status="needs_model",
                left_to_model=True,
                message=Message(
                    "%(unlisted)sturn %(left_at)s has a call offline does not "
                    "make, so the state from there on is the model's to decide. "
                    "Offline: %(message)s",
                    unlisted=_UNLISTED,
                    left_at=left_at,
                    message=r.message,
                ),
            )
        out.append(r)
    return out
