"""The run's state and its event timeline: the session's values, the events as they happen,
step errors and notes, the writes of tools, callbacks and the session, and the all-or-none
scope of a model or tool call.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from agents.core.diagnostics import Diagnostic, Message, Severity
from agents.core.http import HttpRequest
from agents.core.model import ModelStrategy
from agents.core.render import render_value
from agents.core.simulation.results import (
    MODEL_VISIBLE,
    CodeRunner,
    Event,
    EventKind,
    ModelCall,
    TurnResult,
)
from agents.core.simulation.values import (
    AUTHORED,
    Writer,
    joined,
    same_value,
    state_update_text,
    static_names_of,
    valid_now,
)
from agents.core.spec import AgentSpec, AppSpec, ScenarioSpec, ToolKind, VariableSpec
from agents.core.tokens import estimate_tokens
from agents.core.types import validate_value


class RunState:
    """What a run knows; the other parts of the run (window, callbacks, function calls,
    model calls, turns) are the subclasses that build on it, in that order."""

    def __init__(
        self,
        app: AppSpec,
        scenario: ScenarioSpec,
        agent: AgentSpec,
        runner: CodeRunner | None,
        model: ModelStrategy | None = None,
    ):
        self.app = app
        # A live run: the model answers each model call (None: the script does).
        self.model = model
        # A live run ended by a model error that no later turn can outlive (auth, quota,
        # config) or by a cancel: the error's name; the later turns are not run.
        self.live_stopped = ""
        self.scenario = scenario
        self.session = scenario.session
        self.agent = agent
        self.start_agent = agent
        self.run_code: CodeRunner | None = runner
        self.variables: dict[str, VariableSpec] = {v.name: v for v in app.variables}
        self.schemas = {s.name: s.schema for s in app.schemas}
        self.tool_codes = {
            t.name: t.python_code
            for t in app.tools
            if t.kind is ToolKind.PYTHON and t.python_code.strip()
        }
        self.state: dict[str, Any] = {}
        self.events: list[Event] = []
        self.diagnostics: list[Diagnostic] = []
        self.turns: list[TurnResult] = []
        self.turn = -1
        self.turn_start_event = 0
        self.turn_start_state: dict[str, Any] = {}
        self.turn_http: list[HttpRequest] = []
        self.step_index: int | None = None
        self.mcp_calls = 0
        self.session_updates: list[tuple[str, Any]] = []
        self.step_mocks: dict[str, Any] = {}  # tool name -> the response of its next call
        # Context window: events[window_start:] is the visible suffix, `window_tokens` its size.
        self.window_start = 0
        self.window_tokens = 0
        self.dropped_at: dict[int, int] = {}
        self.last_update: dict[str, int] = {}
        self.warned: set[tuple[str, int]] = set()
        self.budget_warned = False
        self.dynamic: tuple[str, ...] = ()
        self.instruction_tokens = 0
        self.available = 0
        self.app_id = self.session.app_id or app.name
        self.now = ""  # the session clock, once checked (start_session)
        # Model calls: each compiles the instructions from the state of that moment.
        self.model_calls: list[ModelCall] = []
        self.static_names = static_names_of(agent.instructions)
        self.static_seen: dict[str, Any] | None = None  # static values at the last call
        self.latest_instructions = ""
        # Set when tool or callback code raised: the rest of the turn does not run.
        self.turn_ended: str | None = None
        # (turn, reason) of the first call a bound stopped (``CodeResult.stopped``).
        self.stopped: tuple[int, str] | None = None
        # Set when a before_agent callback answered: the rest of the turn does not run.
        self.turn_answered: str | None = None
        # The turn in which CX's end_session ran: the model is not called again, the rest
        # of that turn's steps and the later turns do not run (CX ends the conversation).
        self.session_ended: int | None = None
        self.skipped_after_end = 0
        self.turns_after_end = 0
        self.undeclared_warned: set[tuple[str, str]] = set()
        self.skipped_steps = 0
        # ADK's loop: the last model call's answer had a function call, so the model is
        # called again (the next scripted answer, or one past the script at the turn end).
        self.loop_pending = False
        # ADK runs every function call of one answer with the calling agent's tools, then
        # transfers (the merged response's ``transfer_to_agent``): the target waits here.
        self.transfer_after_calls: AgentSpec | None = None
        # Set when a before_model callback answered with text alone: ADK's loop ends there,
        # so the turn's later scripted answers are not used (counted in `unused_answers`).
        self.model_done: str | None = None
        self.unused_answers = 0

    def start_session(self) -> None:
        self.state = dict(self.app.default_values())
        if self.session.now:
            if valid_now(self.session.now):
                self.now = self.session.now
            else:
                self.diagnostics.append(
                    Diagnostic(
                        "SC418",
                        Severity.WARNING,
                        Message(
                            "The session clock %(now)s is not an ISO date-time (like "
                            "2026-06-01T12:00:00): the code reads the real clock.",
                            now=repr(self.session.now),
                        ),
                        field="session.now",
                    )
                )
        for name, value in self.session.values.items():
            variable = self.variables.get(name)
            if variable is None:
                self.diagnostics.append(
                    Diagnostic(
                        "SC402",
                        Severity.WARNING,
                        Message(
                            "The session sets %(name)s, which is not declared: ignored.", name=name
                        ),
                        field=f"session.values.{name}",
                        subject=name,
                    )
                )
                continue
            problems = validate_value(value, variable, self.schemas, field=f"session.values.{name}")
            if problems:
                self.diagnostics.append(
                    Diagnostic(
                        "SC403",
                        Severity.ERROR,
                        Message(
                            "The session value of %(name)s does not fit its type: "
                            "%(problems)s (ignored).",
                            name=name,
                            problems=joined(p.message for p in problems),
                        ),
                        field=f"session.values.{name}",
                        subject=name,
                    )
                )
                continue
            before = self.state.get(name)
            if value is None:
                self.state.pop(name, None)
            else:
                self.state[name] = value
            if not same_value(before, value):
                self.session_updates.append((name, value))

    def add_event(
        self,
        kind: EventKind,
        text: str = "",
        *,
        source: str = "",
        variable: str | None = None,
        value: Any = None,
        error: Diagnostic | None = None,
        label: str = "",
        model_call: int | None = None,
        instructions_changed: tuple[str, ...] = (),
    ) -> Event:
        event = Event(
            index=len(self.events),
            turn=self.turn,
            kind=kind,
            text=text,
            tokens=estimate_tokens(text) if kind in MODEL_VISIBLE else 0,
            source=source,
            variable=variable,
            value=value,
            error=error,
            label=label or text,
            step=self.step_index,
            model_call=model_call,
            instructions_changed=instructions_changed,
            author=self.agent.name if kind in AUTHORED else "",
        )
        self.events.append(event)
        if kind == "state_update" and variable is not None:
            self.last_update[variable] = event.index
        return event

    def step_error(
        self,
        code: str,
        message: str,
        *,
        source: str,
        subject: str | None,
        severity: Severity = Severity.ERROR,
    ) -> None:
        where = f"steps.{self.step_index}" if self.step_index is not None else None
        diagnostic = Diagnostic(code, severity, message, field=where, subject=subject)
        self.diagnostics.append(diagnostic)
        self.add_event("error", source=source, error=diagnostic, label=message)

    def note(self, code: str, message: str, *, source: str, subject: str | None) -> None:
        """Something the runtime does not stop for, told in the timeline (a ``note`` event,
        designer-only) and as an INFO diagnostic: never an error."""
        where = f"steps.{self.step_index}" if self.step_index is not None else None
        diagnostic = Diagnostic(code, Severity.INFO, message, field=where, subject=subject)
        self.diagnostics.append(diagnostic)
        self.add_event("note", source=source, error=diagnostic, label=message)

    def context_values(self) -> dict[str, Any]:
        return {
            "session_id": self.session.session_id,
            "turn_index": max(self.turn, 0),
            "app_id": self.app_id,
            "project_id": self.session.project_id,
            "project_number": self.session.project_number,
            "location": self.session.location,
        }

    def http_context(self) -> dict[str, Any]:
        return {**self.context_values(), "variables": self.state}

    def builtins(self) -> dict[str, Any]:
        """The ``$context`` values as they are now. The state's values are never changed in
        place (`begin_scope`), so they are shared, not copied: three deep copies of a 50 KB
        state at every turn's end were a tenth of an offline Run all's engine."""
        values = {f"$context.{key}": value for key, value in self.context_values().items()}
        values["$context.variables"] = dict(self.state)
        for name, value in self.state.items():
            values[f"$context.variables.{name}"] = value
        return values

    def apply_writes(
        self,
        writer: Writer,
        writes: tuple[tuple[str, Any], ...],
        removed: tuple[str, ...],
        *,
        keep_undeclared: bool = False,
        plain: bool = False,
    ) -> None:
        """Apply `writes` (and report each). `plain`: the runner vouches the values are
        JSON data of the exact types without a float (``CodeResult.plain``): the walks
        that would find nothing are skipped, the outcome is the same."""
        for name, value in writes:
            variable = self.variables.get(name)
            if variable is None and keep_undeclared:
                # CX code keeps its own keys in the session state (Bella Notte's
                # `_active_config_id`): the runtime keeps them, so does the simulation; the
                # model is not shown them. Reported once per writer and name.
                if (writer.source, name) not in self.undeclared_warned:
                    self.undeclared_warned.add((writer.source, name))
                    self.note(
                        "SC408",
                        Message(
                            "%(label)s keeps %(name)s in the session state (no variable "
                            "declares it: the runtime's normal state for code's own keys; "
                            "the model is not shown it and it is not exported — declare "
                            "it to make it a variable).",
                            label=writer.label,
                            name=name,
                        ),
                        source=writer.source,
                        subject=writer.subject,
                    )
                if value is None:
                    self.state.pop(name, None)
                else:
                    self.state[name] = value
                continue
            if variable is None:
                self.step_error(
                    "SC408",
                    Message(
                        "%(label)s wrote %(name)s, which is not declared: the write is ignored.",
                        label=writer.label,
                        name=name,
                    ),
                    source=writer.source,
                    subject=writer.subject,
                )
                continue
            if value is not None:
                problems = validate_value(
                    value, variable, self.schemas, field=f"steps.{self.step_index}", plain=plain
                )
                if problems:
                    self.step_error(
                        "SC409",
                        Message(
                            "%(label)s wrote %(value)s to %(name)s, which does not fit: "
                            "%(problems)s (the write is ignored).",
                            label=writer.label,
                            value=render_value(value)[:80],
                            name=name,
                            problems=joined(p.message for p in problems),
                        ),
                        source=writer.source,
                        subject=writer.subject,
                    )
                    continue
            before = self.state.get(name)
            if same_value(before, value):
                continue
            if value is None:
                del self.state[name]
            else:
                self.state[name] = value
            self.add_event(
                "state_update",
                state_update_text(name, value, plain=plain),
                source=writer.source,
                variable=name,
                value=value,
            )

    def begin_scope(self) -> tuple[int, dict[str, Any]]:
        """Where the writes of a model call or a tool call start: ADK commits them with the
        call's event (the model's answer, the tool's response), so all or none.

        The state's values are never changed in place (a write replaces a value; code gets
        a copy unless its runner only reads, ``code_input``; `turn_start_state` relies on
        the same), so the dict is copied, not each value: the deep copy of a 50 KB state
        at every model and tool call was pure cost."""
        return len(self.events), dict(self.state)

    def roll_back(self, scope: tuple[int, dict[str, Any]], what: str) -> None:
        """Code raised inside `what`: its event never exists in the runtime, so the writes
        made since `scope` (by callbacks that had succeeded) are undone and their updates
        become notes the model never sees."""
        start, state = scope
        self.state = state
        for event in self.events[start:]:
            if event.kind == "state_update":
                self.events[event.index] = replace(
                    event,
                    kind="error",
                    text="",
                    tokens=0,
                    label=Message(
                        "%(label)s — undone: code raised in %(what)s, whose writes the "
                        "runtime commits only with its result",
                        label=event.label,
                        what=what,
                    ),
                )
        self.last_update = {}
        for event in self.events:
            if event.kind == "state_update" and event.variable is not None:
                self.last_update[event.variable] = event.index
