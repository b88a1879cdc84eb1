"""Live runs in the core: caps, recording, replay and the live goldens' matching rules.

Everything here is pure: the model is a ``ModelStrategy`` (``agents.core.model``), the
clock an injected callable. The services wrap an HTTP client (``agents.llm``) in these.

Caps (``Capped``)
-----------------
A live run stops at the first cap reached: ``max_calls`` model calls in the run,
``max_calls_per_turn`` in one turn (a model that never stops calling tools), ``max_tokens``
tokens in + out over the run, ``max_seconds`` of the injected clock since the run began.
The call that would pass a cap is not made: it answers the error ``cap`` naming the cap,
and the simulation ends that turn (SC421). With `should_stop` (a job's cancel hook) every
call first asks it: a reason answers the error ``cancelled`` without calling the model, and
the simulation ends the run there.

Recording and replay
--------------------
``Recorder`` keeps every call's request (as JSON), fingerprint and answer, in order.
``Replayer`` answers call *i* with the recording's answer *i* without any model; when the
request's fingerprint differs from the recorded one, it notes the drift (which call, what
changed: ``request_changes``) and still answers with the recording, so the replay goes on
and shows the consequences. A call past the end of the recording is the error ``replay``.

The live goldens (``evaluate_live``)
------------------------------------
CX's golden evaluation against a real model, per turn:

- ``expect call: Tool {args}`` and a scripted ``tool: Tool {args}`` step: the model called
  ``Tool`` in the turn with arguments that match (``agents.core.evaluate.matches``: every
  key the golden lists, recursively; other keys ignored), and the tool answered; without
  arguments any call of ``Tool`` passes.
- ``expect transfer: X`` (and a scripted ``transfer_to_agent``): the turn handed over to X.
- ``expect agent: text`` and a scripted ``agent: text`` step: the turn's reply is compared
  with the expected text by **similarity** (``similarity``: the F1 of their word
  multisets, case and punctuation ignored, passing at ``threshold``, 0.5 by default).
  Why not a judge model: a similarity is deterministic, free and offline, so a replay
  gives the same verdict in CI, and CX's own golden scores are a similarity too; a judge
  model is used where only judgement works (the scenario kind's rubrics).
- ``extra_tool_calls``: CX's ``extraToolCallBehavior``. ``ALLOW`` (the default) ignores
  calls the golden does not list; ``DISALLOW`` fails a turn with a call of a tool that no
  expectation or scripted step of that turn names.
- ``expect state``, ``expect response``, ``expect no calls``: as offline
  (``agents.core.evaluate``).
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from agents.core.defaults import DEFAULTS
from agents.core.diagnostics import Message, message_data
from agents.core.evaluate import (
    ExpectationResult,
    ScenarioEvaluation,
    differences,
    evaluate,
    step_turns,
)
from agents.core.model import (
    TRANSFER_TOOL,
    ModelAnswer,
    ModelRequest,
    ModelStrategy,
    answer_size,
    call_watch,
    fingerprint,
    request_changes,
)
from agents.core.script import format_expectation, format_script
from agents.core.simulate import SimulationResult
from agents.core.spec import ExpectKind, ScenarioSpec, StepKind

__all__ = [
    "Capped",
    "Caps",
    "Drift",
    "RecordedCall",
    "Recorder",
    "Replayer",
    "evaluate_live",
    "similarity",
]


# --------------------------------------------------------------------------- caps


@dataclass(frozen=True, slots=True)
class Caps:
    max_calls: int = DEFAULTS["LIVE_MAX_MODEL_CALLS"]
    max_calls_per_turn: int = DEFAULTS["LIVE_MAX_CALLS_PER_TURN"]
    max_tokens: int = DEFAULTS["LIVE_MAX_TOKENS"]
    max_seconds: float = DEFAULTS["LIVE_MAX_SECONDS"]


# How often a Cancel is asked while an answer streams in (a read of the job's row).
WATCH_CANCEL_SECONDS = 0.25


class Capped:
    """`model` within `caps`; `clock` returns seconds (``time.monotonic`` in production,
    a counter in tests)."""

    def __init__(
        self,
        model: ModelStrategy,
        caps: Caps,
        clock: Callable[[], float],
        should_stop: Callable[[], str] | None = None,
        wall: Callable[[], float] = time.monotonic,
    ):
        self.model = model
        self.caps = caps
        self.clock = clock
        # The clock the watch of an answer being read counts down on (`watch`).
        self.wall = wall
        # Asked before every model call (a job's cancel): a reason answers ``cancelled``
        # without calling the model, and the run ends there (RUN_ENDING_ERRORS).
        self.should_stop = should_stop
        self.cancelled = ""
        self.started = clock()
        self.calls = 0
        self.turn_calls: Counter[int] = Counter()
        self.tokens = 0
        self.stopped = ""
        self._watched = float("-inf")
        self.elapsed = 0.0
        self.deadline = float("inf")

    def refuse(self) -> str:
        caps = self.caps
        if self.calls >= caps.max_calls:
            return Message("the run reached its cap of %(count)s model calls", count=caps.max_calls)
        if self.tokens >= caps.max_tokens:
            return Message("the run reached its cap of %(count)s tokens", count=caps.max_tokens)
        self.elapsed = self.clock() - self.started
        if self.elapsed >= caps.max_seconds:
            return Message(
                "the run reached its time cap of %(seconds)s s", seconds=f"{caps.max_seconds:g}"
            )
        return ""

    def __call__(self, request: ModelRequest) -> ModelAnswer:
        why = self.cancelled or (self.should_stop() if self.should_stop is not None else "")
        if why:
            self.cancelled = why
            return ModelAnswer(error="cancelled", message=why)
        reason = self.refuse()
        if not reason and self.turn_calls[request.turn] >= self.caps.max_calls_per_turn:
            reason = Message(
                "the model called tools %(count)s times in turn %(turn)s without answering "
                "(cap of model calls per turn)",
                count=self.caps.max_calls_per_turn,
                turn=request.turn,
            )
        if reason:
            self.stopped = self.stopped or reason
            return ModelAnswer(error="cap", message=reason)
        self.calls += 1
        self.turn_calls[request.turn] += 1
        # While the answer is read: the time left of the run (on the injected clock, as
        # read by `refuse`), counted down on the machine's monotonic clock.
        self.deadline = self.wall() + self.caps.max_seconds - self.elapsed
        token = call_watch.set(self.watch)
        try:
            answer = self.model(request)
        finally:
            call_watch.reset(token)
        if answer.error == "cancelled":
            self.cancelled = self.cancelled or answer.message
        # The endpoint's reported usage, or a quarter of the answer's bytes when that is
        # more (a server that reports no or too few tokens still counts).
        self.tokens += answer.tokens_in + max(answer.tokens_out, answer_size(answer.parts) // 4)
        return answer

    def watch(self) -> tuple[str, str] | None:
        """Asked between the chunks of the answer being read (``call_watch``): the run's
        time cap as a ``timeout``, a Cancel (asked at most every ``WATCH_CANCEL_SECONDS``)
        as ``cancelled``; None to read on."""
        now = self.wall()
        if now >= self.deadline:
            return "timeout", Message(
                "the run reached its time cap of %(seconds)s s",
                seconds=f"{self.caps.max_seconds:g}",
            )
        if self.should_stop is not None and now - self._watched >= WATCH_CANCEL_SECONDS:
            self._watched = now
            why = self.should_stop()
            if why:
                self.cancelled = why
                return "cancelled", why
        return None


# --------------------------------------------------------------------------- record/replay


@dataclass(frozen=True, slots=True)
class RecordedCall:
    index: int
    turn: int
    fingerprint: str
    request: dict[str, Any]
    answer: dict[str, Any]

    def as_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "turn": self.turn,
            "fingerprint": self.fingerprint,
            "request": self.request,
            "answer": self.answer,
        }


class Recorder:
    """Every call of `model`, in order."""

    def __init__(self, model: ModelStrategy):
        self.model = model
        self.calls: list[RecordedCall] = []

    def __call__(self, request: ModelRequest) -> ModelAnswer:
        answer = self.model(request)
        self.calls.append(
            RecordedCall(
                index=len(self.calls),
                turn=request.turn,
                fingerprint=fingerprint(request),
                request=request.as_json(),
                answer=answer.as_json(),
            )
        )
        return answer


@dataclass(frozen=True, slots=True)
class Drift:
    call: int  # 0-based index of the model call
    turn: int
    changes: tuple[str, ...]

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"call": self.call, "turn": self.turn, "changes": list(self.changes)}
        if any(isinstance(c, Message) for c in self.changes):  # their templates, for a page
            data["i18n"] = {"changes": [message_data(c) for c in self.changes]}
        return data


class Replayer:
    """Answers from a recording (``RecordedCall.as_json`` items), noting drift."""

    def __init__(self, recording: Sequence[Mapping[str, Any]]):
        self.recording = list(recording)
        self.position = 0
        self.drift: list[Drift] = []

    def __call__(self, request: ModelRequest) -> ModelAnswer:
        index = self.position
        self.position += 1
        if index >= len(self.recording):
            self.drift.append(
                Drift(
                    index, request.turn, (Message("the run made more model calls than recorded"),)
                )
            )
            return ModelAnswer(
                error="replay",
                message=Message(
                    "the recording has %(count)s model calls; the replay asked for call "
                    "%(call)s: re-record it live",
                    count=len(self.recording),
                    call=index + 1,
                ),
            )
        recorded = self.recording[index]
        if recorded.get("fingerprint") != fingerprint(request):
            changes = request_changes(recorded.get("request") or {}, request.as_json())
            self.drift.append(
                Drift(index, request.turn, tuple(changes or [Message("the request differs")]))
            )
        return ModelAnswer.from_json(recorded.get("answer") or {})

    @property
    def unused(self) -> int:
        return max(0, len(self.recording) - self.position)


class Memo:
    """Answers of `model` memoised by request fingerprint: re-running a prefix of a
    conversation (the simulated user's next turn) calls the model only for new requests."""

    def __init__(self, model: ModelStrategy):
        self.model = model
        self.answers: dict[str, ModelAnswer] = {}

    def __call__(self, request: ModelRequest) -> ModelAnswer:
        key = f"{request.index}:{fingerprint(request)}"
        if key not in self.answers:
            self.answers[key] = self.model(request)
        return self.answers[key]


# --------------------------------------------------------------------------- matching

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def similarity(expected: str, actual: str) -> float:
    """The F1 of the two texts' word multisets (lower case, punctuation ignored): 1.0 for
    the same words, 0.0 for none in common."""
    a = Counter(w.lower() for w in _WORD.findall(expected))
    b = Counter(w.lower() for w in _WORD.findall(actual))
    if not a and not b:
        return 1.0
    common = sum((a & b).values())
    if not common:
        return 0.0
    precision = common / sum(b.values())
    recall = common / sum(a.values())
    return 2 * precision * recall / (precision + recall)


ExtraCalls = Literal["ALLOW", "DISALLOW"]


@dataclass(frozen=True, slots=True)
class _Wanted:
    step: int
    turn: int
    kind: str  # call | transfer | agent
    line: str
    note: str
    tool: str = ""
    args: Mapping[str, Any] | None = None
    text: str = ""


def _wanted(scenario: ScenarioSpec) -> list[_Wanted]:
    turns = step_turns(scenario)
    out: list[_Wanted] = []
    for index, step in enumerate(scenario.steps):
        turn = turns[index]
        if step.kind is StepKind.TOOL:
            line = format_script([step])  # as the script writes it (JSON, not a Python dict)
            if step.tool == TRANSFER_TOOL:
                name = str(step.args.get("agent_name", ""))
                out.append(_Wanted(index, turn, "transfer", line, "", tool=name))
            else:
                out.append(_Wanted(index, turn, "call", line, "", step.tool, dict(step.args)))
        elif step.kind is StepKind.AGENT:
            if not step.text.strip():
                continue  # the model's reply, whatever its text: a golden specifies none
            out.append(_Wanted(index, turn, "agent", f"agent: {step.text}", "", text=step.text))
        elif step.kind is StepKind.EXPECT and step.expectation is not None:
            e = step.expectation
            line = format_expectation(e)
            if e.kind is ExpectKind.CALL:
                args = e.value if isinstance(e.value, dict) else None
                out.append(_Wanted(index, turn, "call", line, e.note, e.tool, args))
            elif e.kind is ExpectKind.TRANSFER:
                out.append(_Wanted(index, turn, "transfer", line, e.note, tool=e.agent))
            elif e.kind is ExpectKind.AGENT:
                text = str(e.value or "")
                if not text.strip():
                    continue  # an empty agentResponse specifies no reply
                out.append(_Wanted(index, turn, "agent", line, e.note, text=text))
    return out


def evaluate_live(
    scenario: ScenarioSpec,
    result: SimulationResult,
    *,
    extra_tool_calls: ExtraCalls = "ALLOW",
    threshold: float = 0.5,
) -> ScenarioEvaluation:
    """The scenario's expectations and scripted steps checked against a live run."""
    offline = evaluate(scenario, result)
    kept = [r for r in offline.results if r.kind in ("state", "response", "no calls")]
    results: list[ExpectationResult] = list(kept)
    wanted = _wanted(scenario)
    for want in wanted:
        if want.turn >= len(result.turns):
            results.append(
                ExpectationResult(
                    want.step,
                    want.turn,
                    want.kind,
                    want.line,
                    want.note,
                    "failed",
                    Message("This turn was not run (see the run's problems)."),
                )
            )
            continue
        events = [result.events[i] for i in result.turns[want.turn].events]
        results.append(_check(want, events, threshold))
    if extra_tool_calls == "DISALLOW":
        listed: dict[int, set[str]] = {}
        for want in wanted:
            if want.kind == "call":
                listed.setdefault(want.turn, set()).add(want.tool)
        for turn in result.turns:
            events = [result.events[i] for i in turn.events]
            extra = [
                e.label
                for e in events
                if e.kind == "tool_call"
                and e.source != TRANSFER_TOOL
                and e.source not in listed.get(turn.index, set())
            ]
            if extra:
                results.append(
                    ExpectationResult(
                        -1,
                        turn.index,
                        "extra calls",
                        "extraToolCallBehavior: DISALLOW",
                        "",
                        "failed",
                        _extra_calls(len(extra), turn.index),
                        [],
                        extra,
                        tuple(Message("called %(label)s", label=label) for label in extra),
                    )
                )
    results.sort(key=lambda r: (r.turn, r.step if r.step >= 0 else 10**9))
    return replace(
        offline,
        results=tuple(results),
        status=(
            "none"
            if not results
            else "failed"
            if any(r.status == "failed" for r in results)
            else "passed"
        ),
        passed=sum(r.status == "passed" for r in results),
        failed=sum(r.status == "failed" for r in results),
        needs_model=0,
    )


def _extra_calls(count: int, turn: int) -> Message:
    if count == 1:
        return Message(
            "The model made 1 call the golden does not list in turn %(turn)s.", turn=turn
        )
    return Message(
        "The model made %(count)s calls the golden does not list in turn %(turn)s.",
        count=count,
        turn=turn,
    )


def _check(want: _Wanted, events: list[Any], threshold: float) -> ExpectationResult:
    def out(status: Any, message: str, expected: Any = None, actual: Any = None, diffs=()):
        return ExpectationResult(
            want.step,
            want.turn,
            want.kind,
            want.line,
            want.note,
            status,
            message,
            expected,
            actual,
            tuple(diffs),
        )

    if want.kind == "call":
        calls = [e for e in events if e.kind == "tool_call" and e.source == want.tool]
        answered = {e.source for e in events if e.kind == "tool_response"}
        if not calls:
            made = [e.label for e in events if e.kind == "tool_call"]
            return out(
                "failed",
                Message(
                    "The model did not call %(tool)s in turn %(turn)s.",
                    tool=want.tool,
                    turn=want.turn,
                ),
                want.args,
                made,
                [Message("called %(label)s", label=label) for label in made]
                or [Message("no tool was called")],
            )
        if want.args is not None:
            for call in calls:
                if not differences(want.args, call.value or {}, limit=1):
                    break
            else:
                diffs = differences(want.args, calls[-1].value or {}, path="args")
                return out(
                    "failed",
                    Message("The model called %(tool)s with other arguments.", tool=want.tool),
                    want.args,
                    calls[-1].value,
                    diffs,
                )
        if want.tool not in answered:
            return out(
                "failed",
                Message("%(tool)s was called but did not answer.", tool=want.tool),
                want.args,
            )
        return out(
            "passed",
            Message("The model called %(tool)s and it answered.", tool=want.tool),
            want.args,
            calls[-1].value,
        )
    if want.kind == "transfer":
        done = [
            e
            for e in events
            if e.kind == "transfer" and isinstance(e.value, dict) and e.value.get("to") == want.tool
        ]
        if done:
            return out(
                "passed",
                Message("The model transferred to %(agent)s.", agent=want.tool),
                want.tool,
                want.tool,
            )
        return out(
            "failed",
            Message("The model did not transfer to %(agent)s.", agent=want.tool),
            want.tool,
            None,
        )
    replies = [e.text for e in events if e.kind == "agent"]
    reply = "\n".join(replies)
    score = similarity(want.text, reply)
    if not replies:
        return out("failed", Message("The agent did not reply in this turn."), want.text, None)
    status = "passed" if score >= threshold else "failed"
    return out(
        status,
        Message(
            "The reply is %(score)s similar to the expected one (passes at %(threshold)s).",
            score=f"{score:.0%}",
            threshold=f"{threshold:.0%}",
        ),
        want.text,
        reply,
        ()
        if status == "passed"
        else (
            Message(
                "similarity %(score)s < %(threshold)s",
                score=f"{score:.2f}",
                threshold=f"{threshold:.2f}",
            ),
        ),
    )
