"""The conversation panel's view-model: a scenario's scripted simulation, or a finished live
run or replay as its job stored it, shaped for the template (the timeline's turns, events,
expectations and request changes; the live run's figures and drift).

The scripted simulation is the services' (``services.scenario_run``: the one door to the
sandbox, bounded); a live run is never started here (``live_jobs.live_run_submit``).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext_lazy as _

from agents import i18n, selectors, services
from agents.core.evaluate import ExpectationResult, ScenarioEvaluation
from agents.core.render import render_value
from agents.core.simulate import ModelCall, SimulationResult
from agents.llm.endpoints import price_of
from agents.models import Agent, AgentApp, LiveRun, Scenario
from agents.services import live_models, live_pins, live_runs
from agents.services.common import ServiceError


@dataclass
class StateRow:
    name: str
    value: str
    changed: bool


_BADGE = {
    "passed": _("✓ passed"),
    "failed": _("✗ failed"),
    "needs_model": _("? needs a model"),
    "stopped": _("⏱ stopped: time limit"),
}


def _pretty(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, indent=2)
    except (TypeError, ValueError):
        return render_value(value)


@dataclass
class ExpectView:
    """An expectation's outcome at its step of the timeline (an item among the events)."""

    result: ExpectationResult
    kind: str = "expect"
    index: int | None = None
    tokens: int = 0

    @property
    def step(self) -> int:
        return self.result.step

    @property
    def status(self) -> str:
        return self.result.status

    @property
    def badge(self) -> str:
        return _BADGE[self.result.status]

    @property
    def expected_text(self) -> str:
        return _pretty(self.result.expected)

    @property
    def actual_text(self) -> str:
        return _pretty(self.result.actual)


def _state_text(value: Any) -> str:
    """A state table's value in the reader's form (`Oui`, `1,5`: `i18n.shown_value`); an
    unset one as the prompt writes it (`null`)."""
    return render_value(value) if value is None else i18n.shown_value(value)


def _interleave(events: list[Any], expectations: list[ExpectationResult]) -> list[Any]:
    """The turn's events with each expectation placed at its step (after the events the
    steps before it produced)."""
    pending = sorted(expectations, key=lambda r: r.step)
    items: list[Any] = []
    for event in events:
        while pending and event.step is not None and pending[0].step < event.step:
            items.append(ExpectView(pending.pop(0)))
        if event.step is None:  # after_agent callbacks: the end of the turn
            items.extend(ExpectView(r) for r in pending)
            pending = []
        items.append(event)
    items.extend(ExpectView(r) for r in pending)
    return items


# What a callback's change to the system instruction shows at most (the designer opens it;
# a directive of a few KB is cut, never dumped whole into the timeline).
CHANGE_PREVIEW_CHARS = 60
CHANGE_DETAIL_CHARS = 4000


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


@dataclass
class RequestChangeView:
    """What the ``before_model`` callbacks changed in one model call's request, as ADK's
    model receives it (`ModelCall.sent_instructions`, `ModelCall.hidden_tools`): an item of
    the timeline just before the call's answer. `how` is ``appended``, ``prepended`` or
    ``changed`` ("" when the system instruction is unchanged); `detail` the appended text
    or a unified diff of the two, cut at `CHANGE_DETAIL_CHARS`; `preview` its first line."""

    call: int
    step: int | None
    how: str = ""
    detail: str = ""
    preview: str = ""
    added: int = 0
    removed: int = 0
    hidden_tools: tuple[str, ...] = ()
    kind: str = "request"
    index: int | None = None
    tokens: int = 0

    @property
    def number(self) -> int:
        return self.call + 1


def request_change(call: ModelCall) -> RequestChangeView | None:
    """The change a model call's ``before_model`` callbacks made to its request; None when
    they made none, or answered in the model's place (the model was not called)."""
    if call.replaced_by == "before_model_callback":
        return None
    if not call.sent_instructions and not call.hidden_tools:
        return None
    view = RequestChangeView(call=call.index, step=call.step, hidden_tools=call.hidden_tools)
    if call.sent_instructions:
        before, after = call.instructions, call.sent_instructions
        if after.startswith(before):
            view.how, text = "appended", after[len(before) :]
        elif after.endswith(before):
            view.how, text = "prepended", after[: len(after) - len(before)]
        else:
            lines = list(
                difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=1)
            )[2:]  # no ---/+++ header: both are the system instruction
            view.how, text = "changed", "\n".join(lines)
            view.added = sum(1 for line in lines if line.startswith("+"))
            view.removed = sum(1 for line in lines if line.startswith("-"))
        text = text.strip("\n")
        view.detail = _cut(text, CHANGE_DETAIL_CHARS)
        # The preview: the first line it added (of the diff: the first "+" line).
        shown = text.splitlines()
        if view.how == "changed":
            shown = [line[1:] for line in shown if line.startswith("+")]
        first = next((line.strip() for line in shown if line.strip()), "")
        view.preview = _cut(first, CHANGE_PREVIEW_CHARS)
    return view


def _with_request_changes(events: list[Any], changes: list[RequestChangeView]) -> list[Any]:
    """The turn's events with each model call's request change placed just before the call's
    answer (before the SC422 notes about it), or at the end of its step without one."""
    items = list(events)
    for change in changes:
        at = next(
            (i for i, e in enumerate(items) if getattr(e, "model_call", None) == change.call),
            None,
        )
        if at is None:  # no answer event (the turn ended): after the step's last event
            at = len(items)
            for i, e in enumerate(items):
                if e.step is not None and change.step is not None and e.step > change.step:
                    at = i
                    break
        while at > 0 and _is_hidden_call_note(items[at - 1]):
            at -= 1
        items.insert(at, change)
    return items


def _is_hidden_call_note(event: Any) -> bool:
    error = getattr(event, "error", None)
    return getattr(event, "kind", "") == "note" and getattr(error, "code", "") == "SC422"


@dataclass
class TurnView:
    index: int
    events: list[Any]
    state: list[StateRow]
    builtins: dict[str, str]
    http: list[Any]
    warnings: list[Any]
    tokens_used: int
    budget: int
    dropped: set[int]

    @property
    def meter_percent(self) -> int:
        return min(100, round(100 * self.tokens_used / self.budget)) if self.budget else 0


class LiveEvent:
    """An event of a live run, with its model call's tokens and cost for the timeline."""

    def __init__(
        self, event: Any, call: Mapping[str, Any] | None, drift: Mapping[str, Any] | None = None
    ):
        self._event = event
        # A replay's drift at this model call (on its first event): what changed in the
        # request, field path first; `first_drift` marks where the replay first drifted.
        self.drift_changes = list((drift or {}).get("changes") or ())
        self.first_drift = False
        answer = (call or {}).get("answer") or {}
        self.call_tokens = (
            f"{answer.get('tokens_in', 0)}+{answer.get('tokens_out', 0)} tok"
            if call is not None
            else ""
        )
        # A number: the template formats it (`cost_estimate`), as the run's totals.
        self.call_cost = float(answer.get("cost") or 0) if call is not None else None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._event, name)


@dataclass
class LiveView:
    """What the panel shows of a live run or a replay."""

    run: LiveRun | None
    model: str
    mode: str
    calls: int
    tokens_in: int
    tokens_out: int
    cost: float
    error: str
    drift: list[dict[str, Any]]
    priced: bool | None = None  # the endpoint has a price (None: not configured any more)
    recorded: LiveRun | None = None  # a replay's recording (the run it replayed)
    drift_groups: list[DriftGroup] = field(default_factory=list)


@dataclass
class DriftGroup:
    """One change of a replay's request and the calls it drifted at ("calls 1-20")."""

    changes: tuple[str, ...]
    calls: list[int] = field(default_factory=list)  # 1-based
    turns: list[int] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.calls)

    @property
    def call_ranges(self) -> str:
        return _ranges(self.calls)

    @property
    def turn_count(self) -> int:
        return len(self.turns)

    @property
    def turn_ranges(self) -> str:
        return _ranges(self.turns)


def _ranges(numbers: list[int]) -> str:
    """``1-5, 8, 10-12`` (with an en dash) of sorted distinct `numbers`."""
    spans: list[list[int]] = []
    for n in sorted(set(numbers)):
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ", ".join(str(a) if a == b else f"{a}\u2013{b}" for a, b in spans)


def drift_groups(drift: list[dict[str, Any]]) -> list[DriftGroup]:
    """A replay's drift with identical changes told once: a 20-call run whose instructions
    changed drifts at every call with the same change (20 lines before)."""
    groups: dict[tuple[str, ...], DriftGroup] = {}
    for d in drift:
        changes = tuple(str(c) for c in d.get("changes") or ())
        group = groups.setdefault(changes, DriftGroup(changes))
        group.calls.append(int(d.get("call", 0)) + 1)
        turn = int(d.get("turn", -1))
        if turn >= 0 and turn not in group.turns:
            group.turns.append(turn)
    return list(groups.values())


def model_priced(name: str) -> bool | None:
    """Whether the configured endpoint `name` has a price (``price_of``); None when it is
    not configured (any more) or the configuration cannot be read."""
    if not name:
        return None
    try:
        endpoint = live_models.endpoints().get(name)
    except ServiceError:
        return None
    return None if endpoint is None else price_of(endpoint) is not None


@dataclass
class Conversation:
    scenarios: list[Scenario]
    scenario: Scenario | None
    result: SimulationResult | None = None
    turns: list[TurnView] = field(default_factory=list)
    diagnostics: list[Any] = field(default_factory=list)
    use_mocks: bool = False
    budget: int = 0
    evaluation: ScenarioEvaluation | None = None
    models: list[dict[str, Any]] = field(default_factory=list)
    model: str = ""  # the picker's choice ("" = scripted)
    judge: str = ""  # the judge picker's (a live Run all's rubrics; "" = the run's model)
    default_model: str = ""  # the app's default model (AppModelDefault), "" for none
    judged: bool = False  # whether a live Run all judges rubrics here (the judge picker shows)
    live: LiveView | None = None
    last_live: LiveRun | None = None
    last_live_priced: bool | None = None
    replayable: LiveRun | None = None
    pin: live_pins.PinnedRecording | None = None  # the recording replays use, and how chosen
    recordings: list[LiveRun] = field(default_factory=list)  # live runs to pin from


def _recording(run: LiveRun | None, params: Mapping[str, Any]) -> LiveRun | None:
    """The live run a replay replayed: the stored replay's ``replay_of``, else (a try-out of
    unsaved instructions is not stored) the run the panel asked to replay."""
    if run is not None and run.replay_of_id is not None:
        return run.replay_of
    replay = str(params.get("replay", "") or "")
    if not replay.isdigit():
        return None
    recorded = LiveRun.objects.filter(pk=int(replay)).first()
    if recorded is not None and recorded.mode == "replay" and recorded.replay_of_id:
        return recorded.replay_of  # a replay of a replay replays the recording
    return recorded


def mocks_choice(params: Mapping[str, Any], scenario_id: Any = None) -> bool | None:
    """The mocks checkbox, when it was shown for the scenario (`scenario_id`, else the one
    asked for; a hidden "off" precedes it, so unticking it is a choice too); None keeps the
    scenario's own setting."""
    shown = str(params.get("mocks_for", "") or "")
    wanted = scenario_id if scenario_id is not None else params.get("scenario", "")
    if not shown or shown != str(wanted or ""):
        return None
    # The hidden "off" and the ticked box both arrive, in an order the browser chooses.
    given = params.getlist("use_mocks") if hasattr(params, "getlist") else [params.get("use_mocks")]
    return any(value in ("on", "true", "1") for value in given)


def build_conversation(
    app: AgentApp,
    agent: Agent,
    params: Mapping[str, Any],
    outcome: live_runs.LiveOutcome | None = None,
) -> Conversation:
    """The panel: the scripted simulation of the scenario asked for (or the agent's first),
    or `outcome`, a finished live job's run as the job stored it
    (``live_jobs.live_job_outcome``). It never calls a model: a live run or a replay is a
    job (``live_jobs.live_run_submit``)."""
    scenarios = list(agent.scenarios.all())
    wanted = str(params.get("scenario", "") or "")
    scenario = next((s for s in scenarios if str(s.pk) == wanted), None) or next(
        iter(scenarios), None
    )
    conversation = Conversation(scenarios=scenarios, scenario=scenario)
    conversation.models = live_models.model_names()
    conversation.model = str(params.get("model", "") or "")
    conversation.judge = str(params.get("judge", "") or "")
    if conversation.models:  # no model configured: no default to mark, no query
        conversation.default_model = live_models.app_model_default(app)
        conversation.judged = selectors.app_has_rubrics(app)
    if scenario is None:
        return conversation
    calls: list[dict[str, Any]] = []
    if outcome is not None:
        scenario_spec, result, evaluation = outcome.spec, outcome.result, outcome.evaluation
        calls = outcome.calls
        tokens_in, tokens_out = outcome.tokens
        conversation.live = LiveView(
            run=outcome.run,
            model=outcome.model,
            mode=outcome.run.mode
            if outcome.run is not None
            else ("replay" if params.get("replay") else "live"),
            calls=len(outcome.calls),
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            cost=outcome.cost,
            error=outcome.error,
            drift=outcome.drift,
            priced=model_priced(outcome.model),
            drift_groups=drift_groups(outcome.drift),
        )
        if conversation.live.mode == "replay":
            conversation.live.recorded = _recording(outcome.run, params)
    else:
        run = services.scenario_run(
            app=app,
            agent=agent,
            scenario=scenario,
            instructions=params.get("instructions"),
            use_mocks=mocks_choice(params, scenario.pk),
        )
        scenario_spec, result, evaluation = run.spec, run.result, run.evaluation
    conversation.last_live = (
        LiveRun.objects.filter(scenario=scenario, mode="live")
        .order_by("-created_at", "-id")
        .first()
    )
    if conversation.last_live is not None:
        conversation.last_live_priced = model_priced(conversation.last_live.model_name)
        # Replay replays the pinned recording: the designer's pin, else the latest
        # successful live run, never a failed run.
        conversation.pin = live_pins.pinned_recording(scenario)
        conversation.replayable = conversation.pin.run if conversation.pin else None
        conversation.recordings = live_pins.scenario_recordings(scenario)
    conversation.evaluation = evaluation
    use_mocks = scenario_spec.use_mocks
    conversation.result = result
    conversation.use_mocks = use_mocks
    conversation.budget = scenario_spec.token_budget
    conversation.diagnostics += list(result.diagnostics)
    events: Any = result.events
    if outcome is not None:
        shown: set[int] = set()  # a call's tokens and cost on its first event only
        drifts = {int(d.get("call", -1)): d for d in outcome.drift if int(d.get("turn", 0)) >= 0}
        live_events = []
        for e in result.events:
            call, drift = None, None
            if e.model_call is not None and e.model_call < len(calls) and e.model_call not in shown:
                shown.add(e.model_call)
                call = calls[e.model_call]
                drift = drifts.get(e.model_call)
            live_events.append(LiveEvent(e, call, drift))
        marked = next((e for e in live_events if e.drift_changes), None)
        if marked is not None:
            marked.first_drift = True
        events = live_events
    changes: dict[int, list[RequestChangeView]] = {}
    for call in result.model_calls:
        change = request_change(call)
        if change is not None:
            changes.setdefault(call.turn, []).append(change)
    for turn in result.turns:
        conversation.turns.append(
            TurnView(
                index=turn.index,
                events=_interleave(
                    _with_request_changes(
                        [events[i] for i in turn.events], changes.get(turn.index, [])
                    ),
                    [r for r in evaluation.results if r.turn == turn.index],
                ),
                state=[
                    StateRow(k, _state_text(v), k in turn.changed)
                    for k, v in turn.state_after.items()
                ],
                builtins={k: _state_text(v) for k, v in turn.builtins.items()},
                http=list(turn.http),
                warnings=list(turn.warnings),
                tokens_used=turn.tokens_used,
                budget=scenario_spec.token_budget,
                dropped=set(turn.dropped),
            )
        )
    return conversation
