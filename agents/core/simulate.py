"""Simulate a scripted conversation: state, history, context window and HTTP requests (SPEC §4).

``simulate(app, scenario, run_code=...)`` is pure and deterministic: the same input gives
the same output (no clock, no randomness). Python code never runs here: the Django layer
injects a ``CodeRunner`` that wraps the sandbox (the core must not import it). Problems
are ``Diagnostic`` values (codes in ``CODES``), never exceptions.

How a session runs
------------------
- **State** starts from the declared defaults, overridden by the session values. A session
  value for an undeclared variable, or one that does not fit its type, is reported and
  ignored. A session value that differs from the default is an update made through the
  API before the conversation, so it produces a ``<state_update>`` at the start of turn 0
  (source ``session``); defaults produce none.
- **Instructions** are compiled once, with the values at session start and the session's
  channel and modality: static values never change during a session.
- **Turns**: a turn starts at each USER step; steps before the first USER step form turn 0.
  ``before_agent`` callbacks run at the start of each turn (after the user message),
  ``after_agent`` callbacks after its last step.
- **AGENT** steps are model turns: ``before_model`` callbacks, the scripted text,
  ``after_model`` callbacks. The agent itself never writes state.
- **TOOL** steps, in this order: the ``tool_call`` event; ``before_tool`` callbacks (a
  callback that returns a value other than None skips the tool, and that value is the
  response, as in ADK); the tool itself (its mock if ``use_mocks`` or it has no code, else
  its Python code through ``run_code``; an OpenAPI/MCP tool without a mock responds
  ``null``); ``after_tool`` callbacks (a return value other than None replaces the
  response, as in ADK); then the ``tool_response`` event with the final response. Every
  ``<state_update>`` appears at the moment of its write, so the tool's updates come before
  its response. OpenAPI and MCP calls also record the HTTP request they would send
  (``agents.core.http``), built with the state at call time.
- **CALLBACK** steps run every callback of the given kind, in ``order``, with the step's
  ``args`` as keyword arguments.
- Callbacks receive, as keyword arguments: ``before_tool`` → ``tool``, ``args``;
  ``after_tool`` → ``tool``, ``args``, ``tool_response``; the others nothing (a declared
  parameter that is not supplied gets None in the sandbox). Their entry point is
  ``<kind>_callback`` (``before_model_callback``…).

Writes
------
Each write is checked in order: an undeclared variable, or a value that does not fit the
type/schema (``validate_value``), is a step error and that write is not applied; the other
writes of the step still are. A write that leaves the value unchanged adds nothing; two
writes to one variable in one step give one event per actual change, in write order
(``x = 2`` then ``x = 1`` from 1 gives ``x: 2`` then ``x: 1``). Numbers compare by value
(``3 == 3.0``), booleans never equal numbers, objects compare regardless of key order.
Writing ``None`` or removing a variable (``del``, ``pop``, ``remove_variable``) leaves it
without a value; if it had one, the update renders as ``<state_update>name: null</state_update>``.

A failing tool or callback (exception, timeout, memory, forbidden construct…) is a step
error with its message and line; **none of its writes are applied** (ADK commits a call's
state delta only with its successful result) and, for a tool, there is no response and its
``after_tool`` callbacks do not run. The simulation then goes on with the next callback or
step.

Events and the context window
-----------------------------
Events the model sees: ``user``, ``agent``, ``tool_call`` (text
``{"functionCall": {"name": …, "args": {…}}}``), ``tool_response`` (text
``{"functionResponse": {"name": …, "response": {…}}}``, a non-object response wrapped as
``{"result": value}`` as ADK does) and ``state_update``. ``callback`` and ``error`` events are
for the designer only: their ``text`` is empty, ``tokens`` 0, and they are never part of the
model input (``label`` describes every event in words).

After each turn the model input is the instructions (always kept) plus the newest
model-visible events whose estimated tokens (``agents.core.tokens``) fit in
``token_budget - instruction_tokens``; the window is a contiguous suffix, so once an event
drops out it never comes back. When the latest ``<state_update>`` of a variable that the
compiled instructions reference dynamically (``{name}``) is outside the window, the turn
warns once (SC413) that the agent may forget it.

``TurnResult.builtins`` holds the ``$context`` values as at the end of the turn:
``$context.session_id``, ``turn_index``, ``app_id`` (the session's, else the app name),
``project_id``, ``project_number``, ``location``, ``variables`` (the whole state object) and
one ``$context.variables.<name>`` per variable that has a value.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from agents.core.compile import compile_instructions
from agents.core.diagnostics import Diagnostic, Severity
from agents.core.http import CODES as HTTP_CODES
from agents.core.http import HttpRequest, mcp_request, openapi_request
from agents.core.render import render_value
from agents.core.spec import (
    AgentSpec,
    AppSpec,
    CallbackKind,
    CallbackSpec,
    ScenarioSpec,
    StepKind,
    StepSpec,
    ToolKind,
    ToolSpec,
    VariableSpec,
)
from agents.core.tokens import estimate_tokens
from agents.core.types import validate_value

__all__ = [
    "CODES",
    "CodeCall",
    "CodeResult",
    "CodeRunner",
    "Event",
    "EventKind",
    "HttpRequest",
    "SimulationResult",
    "TurnResult",
    "simulate",
]

CODES: dict[str, str] = {
    "SC401": "The scenario's agent does not exist in the app.",
    "SC402": "A session value is given for a variable the app does not declare: ignored.",
    "SC403": "A session value does not fit its variable's type or schema: ignored.",
    "SC404": "A step calls a tool the app does not have.",
    "SC405": "A step calls a tool that is not attached to the agent.",
    "SC406": "A Python tool or callback cannot run: code execution is not available (add a mock).",
    "SC407": "An OpenAPI/MCP tool without a mock: its response is unknown (null).",
    "SC408": "A tool or callback wrote a variable that is not declared: the write is ignored.",
    "SC409": "A tool or callback wrote a value that does not fit the variable: write ignored.",
    "SC410": "Tool or callback code failed (exception, timeout, memory…): its writes are ignored.",
    "SC411": "A Python tool has neither code nor a mock.",
    "SC412": "A CALLBACK step names no callback kind, or the agent has no callback of that kind.",
    "SC413": "The last state update of a dynamically referenced variable left the context window.",
    "SC414": "The instructions alone exceed the token budget: no history fits.",
    **HTTP_CODES,
}

EventKind = Literal[
    "user", "agent", "tool_call", "tool_response", "state_update", "callback", "error"
]
MODEL_VISIBLE: frozenset[str] = frozenset(
    {"user", "agent", "tool_call", "tool_response", "state_update"}
)


# --------------------------------------------------------------------------- code runner


@dataclass(frozen=True)
class CodeCall:
    """One tool or callback to run. `entry` is the function to call (tool name, or
    ``<kind>_callback``); `state` the current values (a copy); `context_values` the
    built-ins (``session_id``, ``turn_index``…) the sandbox exposes on ``context``."""

    code: str
    entry: str
    kind: Literal["tool", "callback"]
    args: dict[str, Any]
    state: dict[str, Any]
    filename: str
    context_values: dict[str, Any] = field(default_factory=dict)
    # The app's Python tools by name, for CX's ``tools.<name>(...)`` inside the code.
    tools: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CodeResult:
    """What the code did: writes in order (a removal is ``(name, None)`` and is listed in
    `removed`), its return value, or the error message and 1-based line."""

    ok: bool
    return_value: Any
    writes: tuple[tuple[str, Any], ...]
    removed: tuple[str, ...]
    error: str | None
    error_line: int | None
    stdout: str = ""


CodeRunner = Callable[[CodeCall], CodeResult]


# --------------------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class Event:
    """One entry of the history.

    `text` is exactly what the model sees (empty for ``callback`` and ``error`` events,
    which it never sees); `label` says it in words for the timeline. `source` is the tool
    or callback (``session`` for session values); `variable`/`value` the variable and new
    value of a ``state_update`` (the arguments of a ``tool_call``, the response of a
    ``tool_response``, the return value of a ``callback``). `step` is the index of the
    scenario step that produced it; `dropped_at_turn` the turn after which it left the
    context window (None: still in it at the end).
    """

    index: int
    turn: int
    kind: EventKind
    text: str
    tokens: int
    source: str = ""
    variable: str | None = None
    value: Any = None
    error: Diagnostic | None = None
    label: str = ""
    step: int | None = None
    dropped_at_turn: int | None = None

    @property
    def model_visible(self) -> bool:
        return self.kind in MODEL_VISIBLE


@dataclass(frozen=True, slots=True)
class TurnResult:
    index: int
    events: tuple[int, ...]
    state_after: dict[str, Any]
    changed: tuple[str, ...]
    builtins: dict[str, Any]
    model_input: tuple[int, ...]
    tokens_used: int
    dropped: tuple[int, ...]
    warnings: tuple[Diagnostic, ...]
    http: tuple[HttpRequest, ...]


@dataclass(frozen=True, slots=True)
class SimulationResult:
    """`diagnostics` holds every simulation problem in order (step errors, warnings);
    `instruction_diagnostics` those of compiling the instructions."""

    instructions: str
    instruction_tokens: int
    turns: tuple[TurnResult, ...]
    events: tuple[Event, ...]
    final_state: dict[str, Any]
    diagnostics: tuple[Diagnostic, ...]
    instruction_diagnostics: tuple[Diagnostic, ...] = ()

    def model_input_text(self, turn: int) -> str:
        """Instructions and the visible history of `turn`, one event per line."""
        texts = [self.events[i].text for i in self.turns[turn].model_input]
        return "\n".join([self.instructions, *texts])


# --------------------------------------------------------------------------- helpers


def same_value(a: Any, b: Any) -> bool:
    """Whether writing `b` over `a` changes nothing (see the module docstring)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            return True
        return a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(same_value(a[key], b[key]) for key in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except Exception:
        return False


def state_update_text(name: str, value: Any) -> str:
    return f"<state_update>{name}: {render_value(value)}</state_update>"


def _ordered(callbacks: tuple[CallbackSpec, ...], kind: CallbackKind) -> list[CallbackSpec]:
    return sorted((c for c in callbacks if c.kind == kind), key=lambda c: c.order)


_ERROR, _WARNING, _INFO = Severity.ERROR, Severity.WARNING, Severity.INFO


@dataclass(slots=True)
class _Writer:
    """Who writes: `source` for events, `label` for messages."""

    source: str
    label: str
    subject: str


# --------------------------------------------------------------------------- the run


class _Run:
    def __init__(
        self, app: AppSpec, scenario: ScenarioSpec, agent: AgentSpec, runner: CodeRunner | None
    ):
        self.app = app
        self.scenario = scenario
        self.session = scenario.session
        self.agent = agent
        self.run_code: CodeRunner | None = runner
        self.variables: dict[str, VariableSpec] = {v.name: v for v in app.variables}
        self.schemas = {s.name: s.schema for s in app.schemas}
        self.tool_codes = {t.name: t.python_code for t in app.tools if t.python_code}
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

    # ----------------------------------------------------------------- setup

    def start_session(self) -> None:
        self.state = dict(self.app.default_values())
        for name, value in self.session.values.items():
            variable = self.variables.get(name)
            if variable is None:
                self.diagnostics.append(
                    Diagnostic(
                        "SC402",
                        _WARNING,
                        f"The session sets {name}, which is not declared: ignored.",
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
                        _ERROR,
                        f"The session value of {name} does not fit its type: "
                        + "; ".join(p.message for p in problems)
                        + " (ignored).",
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

    # ----------------------------------------------------------------- events

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
        severity: Severity = _ERROR,
    ) -> None:
        where = f"steps.{self.step_index}" if self.step_index is not None else None
        diagnostic = Diagnostic(code, severity, message, field=where, subject=subject)
        self.diagnostics.append(diagnostic)
        self.add_event("error", source=source, error=diagnostic, label=message)

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

    # ----------------------------------------------------------------- writes

    def apply_writes(
        self, writer: _Writer, writes: tuple[tuple[str, Any], ...], removed: tuple[str, ...]
    ) -> None:
        for name, value in writes:
            variable = self.variables.get(name)
            if variable is None:
                self.step_error(
                    "SC408",
                    f"{writer.label} wrote {name}, which is not declared: the write is ignored.",
                    source=writer.source,
                    subject=writer.subject,
                )
                continue
            if value is not None:
                problems = validate_value(
                    value, variable, self.schemas, field=f"steps.{self.step_index}"
                )
                if problems:
                    self.step_error(
                        "SC409",
                        f"{writer.label} wrote {render_value(value)[:80]} to {name}, which does "
                        "not fit: "
                        + "; ".join(p.message for p in problems)
                        + " (the write is ignored).",
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
                state_update_text(name, value),
                source=writer.source,
                variable=name,
                value=value,
            )

    def call_code(self, writer: _Writer, call: CodeCall) -> CodeResult | None:
        """Run code through the injected runner; None (and a step error) when it failed."""
        if self.run_code is None:
            self.step_error(
                "SC406",
                f"{writer.label}: code execution is not available; add a mock.",
                source=writer.source,
                subject=writer.subject,
            )
            return None
        try:
            result = self.run_code(call)
        except Exception as exc:  # the injected runner itself must not crash the page
            result = CodeResult(False, None, (), (), f"the code runner failed: {exc}", None)
        if not result.ok:
            where = f" (line {result.error_line})" if result.error_line else ""
            self.step_error(
                "SC410",
                f"{writer.label} failed{where}: {result.error or 'unknown error'}",
                source=writer.source,
                subject=writer.subject,
            )
            return None
        self.apply_writes(writer, tuple(result.writes), tuple(result.removed))
        return result

    # ----------------------------------------------------------------- callbacks

    def run_callbacks(self, kind: CallbackKind, args: Mapping[str, Any]) -> tuple[bool, Any]:
        """Run the agent's callbacks of `kind` in order: (whether one returned a value, it)."""
        callbacks = _ordered(self.agent.callbacks, kind)
        returned: tuple[bool, Any] = (False, None)
        entry = f"{kind.value}_callback"
        for position, callback in enumerate(callbacks, start=1):
            if not callback.code.strip():
                continue  # an empty callback does nothing
            source = entry if len(callbacks) == 1 else f"{entry} #{position}"
            writer = _Writer(source, f"the {source} of {self.agent.name}", source)
            result_event = self.add_event(
                "callback", source=source, label=f"{source} ran", value=None
            )
            call = CodeCall(
                code=callback.code,
                entry=entry,
                kind="callback",
                args=copy.deepcopy(dict(args)),
                state=copy.deepcopy(self.state),
                filename=f"<callback:{entry}>",
                context_values=self.context_values(),
                tools=self.tool_codes,
            )
            result = self.call_code(writer, call)
            if result is not None and result.return_value is not None:
                self.events[result_event.index] = replace(
                    result_event,
                    value=result.return_value,
                    label=f"{source} ran and returned {render_value(result.return_value)[:80]}",
                )
                if not returned[0]:
                    returned = (True, result.return_value)
        return returned

    # ----------------------------------------------------------------- steps

    def start_turn(self, first_step: StepSpec) -> None:
        self.turn += 1
        self.turn_start_event = len(self.events)
        self.turn_start_state = dict(self.state)
        self.turn_http = []
        if self.turn == 0:
            for name, value in self.session_updates:
                self.add_event(
                    "state_update",
                    state_update_text(name, value),
                    source="session",
                    variable=name,
                    value=value,
                )
        if first_step.kind is StepKind.USER:
            self.add_event("user", first_step.text)
        self.run_callbacks(CallbackKind.BEFORE_AGENT, {})

    def run_step(self, step: StepSpec) -> None:
        kind = step.kind
        if kind is StepKind.USER:
            self.add_event("user", step.text)
        elif kind is StepKind.AGENT:
            self.run_callbacks(CallbackKind.BEFORE_MODEL, {})
            self.add_event("agent", step.text, source=self.agent.name)
            self.run_callbacks(CallbackKind.AFTER_MODEL, {})
        elif kind is StepKind.TOOL:
            self.run_tool_step(step)
        elif kind is StepKind.CALLBACK:
            callback_kind = step.callback
            if callback_kind is None or not any(
                c.kind == callback_kind for c in self.agent.callbacks
            ):
                what = f"no {callback_kind.value} callback" if callback_kind else "no callback kind"
                self.step_error(
                    "SC412",
                    f"This callback step has {what}"
                    + (f" on {self.agent.name}." if callback_kind else "."),
                    source=callback_kind.value if callback_kind else "",
                    subject=self.agent.name,
                    severity=_WARNING,
                )
                return
            self.run_callbacks(callback_kind, step.args)

    def run_tool_step(self, step: StepSpec) -> None:
        name = step.tool
        tool = self.app.tool(name)
        if tool is None:
            self.step_error(
                "SC404",
                f"The tool {name or '(none)'} does not exist in this app.",
                source=name,
                subject=name,
            )
            return
        if name not in self.agent.tools:
            self.step_error(
                "SC405",
                f"agent {self.agent.name} may not call tool {name}: it is not attached.",
                source=name,
                subject=name,
            )
            return
        args = dict(step.args)
        self.add_event(
            "tool_call",
            render_value({"functionCall": {"name": name, "args": args}}),
            source=name,
            value=args,
            label=f"{name}({render_value(args)})",
        )
        skipped, response = self.run_callbacks(
            CallbackKind.BEFORE_TOOL, {"tool": name, "args": args}
        )
        if not skipped:
            ok, response = self.run_tool(tool, args)
            if not ok:
                return
        replaced, new_response = self.run_callbacks(
            CallbackKind.AFTER_TOOL, {"tool": name, "args": args, "tool_response": response}
        )
        if replaced:
            response = new_response
        wrapped = response if isinstance(response, dict) else {"result": response}
        self.add_event(
            "tool_response",
            render_value({"functionResponse": {"name": name, "response": wrapped}}),
            source=name,
            value=response,
            label=f"{name} → {render_value(response)}",
        )

    def run_tool(self, tool: ToolSpec, args: dict[str, Any]) -> tuple[bool, Any]:
        """Run the tool itself: (ok, response)."""
        name = tool.name
        writer = _Writer(name, f"tool {name}", name)
        if tool.kind is ToolKind.OPENAPI:
            request, problems = openapi_request(tool, args, self.http_context())
            self.record_http(request, problems)
        elif tool.kind is ToolKind.MCP:
            self.mcp_calls += 1
            request, problems = mcp_request(
                tool, args, self.http_context(), request_id=self.mcp_calls
            )
            self.record_http(request, problems)
        has_code = tool.kind is ToolKind.PYTHON and bool((tool.python_code or "").strip())
        mock = tool.mock
        if mock is not None and (self.scenario.use_mocks or not has_code):
            writes = tuple((key, copy.deepcopy(value)) for key, value in mock.state.items())
            self.apply_writes(writer, writes, ())
            return True, copy.deepcopy(mock.response)
        if tool.kind is ToolKind.PYTHON:
            if not has_code:
                self.step_error(
                    "SC411",
                    f"tool {name} has no code and no mock: add one of them.",
                    source=name,
                    subject=name,
                )
                return False, None
            call = CodeCall(
                code=tool.python_code,
                entry=name,
                kind="tool",
                args=copy.deepcopy(args),
                state=copy.deepcopy(self.state),
                filename=f"<tool:{name}>",
                context_values=self.context_values(),
                tools=self.tool_codes,
            )
            result = self.call_code(writer, call)
            if result is None:
                return False, None
            return True, result.return_value
        if tool.kind is ToolKind.PLATFORM:
            return True, {}  # CX runs it (end_session, customize_response): an empty result
        self.diagnostics.append(
            Diagnostic(
                "SC407",
                _INFO,
                f"tool {name} has no mock: response unknown (null).",
                field=f"steps.{self.step_index}",
                subject=name,
            )
        )
        return True, None

    def record_http(self, request: HttpRequest | None, problems: tuple[Diagnostic, ...]) -> None:
        if request is not None:
            self.turn_http.append(request)
        for problem in problems:
            self.diagnostics.append(
                replace(problem, field=problem.field or f"steps.{self.step_index}")
            )

    # ----------------------------------------------------------------- turn end

    def end_turn(self) -> None:
        self.step_index = None
        self.run_callbacks(CallbackKind.AFTER_AGENT, {})
        turn = self.turn
        # Slide the window: add this turn's events, drop the oldest until it fits.
        for event in self.events[self.turn_start_event :]:
            self.window_tokens += event.tokens
        dropped: list[int] = []
        while self.window_start < len(self.events) and self.window_tokens > self.available:
            event = self.events[self.window_start]
            if event.model_visible:
                self.dropped_at[event.index] = turn
                dropped.append(event.index)
            self.window_tokens -= event.tokens
            self.window_start += 1
        warnings: list[Diagnostic] = []
        if self.available < 0 and not self.budget_warned:
            self.budget_warned = True
            warnings.append(
                Diagnostic(
                    "SC414",
                    _WARNING,
                    f"The instructions alone take about {self.instruction_tokens} tokens, "
                    f"more than the budget of {self.scenario.token_budget}: "
                    "no history fits in the context window.",
                    field="token_budget",
                    subject=self.agent.name,
                )
            )
        for name in self.dynamic:
            last = self.last_update.get(name)
            if last is None or last >= self.window_start or (name, last) in self.warned:
                continue
            self.warned.add((name, last))
            warnings.append(
                Diagnostic(
                    "SC413",
                    _WARNING,
                    f"the agent may forget {name}: its last state update dropped out of "
                    f"the context window at turn {turn}",
                    subject=name,
                )
            )
        self.diagnostics.extend(warnings)
        visible = tuple(
            i for i in range(self.window_start, len(self.events)) if self.events[i].model_visible
        )
        changed: list[str] = []
        seen: set[str] = set()
        for event in self.events[self.turn_start_event :]:
            name = event.variable
            if event.kind != "state_update" or name is None or name in seen:
                continue
            seen.add(name)
            if not same_value(self.turn_start_state.get(name), self.state.get(name)):
                changed.append(name)
        self.turns.append(
            TurnResult(
                index=turn,
                events=tuple(range(self.turn_start_event, len(self.events))),
                state_after=copy.deepcopy(self.state),
                changed=tuple(changed),
                builtins=self.builtins(),
                model_input=visible,
                tokens_used=self.instruction_tokens + self.window_tokens,
                dropped=tuple(dropped),
                warnings=tuple(warnings),
                http=tuple(self.turn_http),
            )
        )

    def builtins(self) -> dict[str, Any]:
        values = {f"$context.{key}": value for key, value in self.context_values().items()}
        values["$context.variables"] = copy.deepcopy(self.state)
        for name, value in self.state.items():
            values[f"$context.variables.{name}"] = copy.deepcopy(value)
        return values

    # ----------------------------------------------------------------- whole session

    def run(self) -> SimulationResult:
        self.start_session()
        compiled = compile_instructions(
            self.agent.instructions,
            self.state,
            channel=self.session.channel,
            modality=self.session.modality,
        )
        instructions = compiled.text
        self.instruction_tokens = estimate_tokens(instructions)
        self.available = self.scenario.token_budget - self.instruction_tokens
        self.dynamic = tuple(
            dict.fromkeys(
                span.name.split(".")[0] for span in compiled.spans if span.kind == "dynamic"
            )
        )
        for index, step in enumerate(self.scenario.steps):
            if self.turn < 0 or step.kind is StepKind.USER:
                if self.turn >= 0:
                    self.end_turn()
                self.step_index = index
                self.start_turn(step)
                if step.kind is StepKind.USER:
                    continue
            self.step_index = index
            self.run_step(step)
        if self.turn >= 0:
            self.end_turn()
        events = tuple(
            replace(event, dropped_at_turn=self.dropped_at[event.index])
            if event.index in self.dropped_at
            else event
            for event in self.events
        )
        return SimulationResult(
            instructions=instructions,
            instruction_tokens=self.instruction_tokens,
            turns=tuple(self.turns),
            events=events,
            final_state=copy.deepcopy(self.state),
            diagnostics=tuple(self.diagnostics),
            instruction_diagnostics=tuple(compiled.diagnostics),
        )


def simulate(
    app: AppSpec, scenario: ScenarioSpec, *, run_code: CodeRunner | None = None
) -> SimulationResult:
    """Run `scenario` against `app` (see the module docstring). Never raises for its input.

    `run_code` runs tool and callback code (the Django layer passes a sandbox adapter);
    without it, a Python tool with code but no mock is a step error.
    """
    agent = app.agent(scenario.agent)
    if agent is None:
        diagnostic = Diagnostic(
            "SC401",
            _ERROR,
            f"The scenario {scenario.name} talks to the agent {scenario.agent}, which does "
            "not exist in this app.",
            field="agent",
            subject=scenario.agent,
        )
        return SimulationResult("", 0, (), (), {}, (diagnostic,))
    return _Run(app, scenario, agent, run_code).run()
