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
- **Turns**: a turn starts at each USER step; steps before the first USER step form turn 0.
  ``before_agent`` callbacks run at the start of each turn (after the user message),
  ``after_agent`` callbacks after its last step. As in ADK, content a ``before_agent``
  callback returns is the agent's message and ends the turn (no model call, no
  ``after_agent``; SC416 when steps were skipped); content an ``after_agent`` callback
  returns is added as the agent's message.
- **Model calls**: every AGENT step and every TOOL step is one answer of the scripted
  model (``scripted_answer``), used by the next model call that reaches the model; ADK's
  loop calls the model again after every answer with a function call, so a
  ``before_model`` callback answering in the model's place does not use the scripted answer
  up (after its function call runs, the model is called again; after its text alone, ADK's
  turn is over and the turn's later scripted answers are not used, SC420), and a turn
  whose script ends on a function call gets one more model call past the script, replying
  "" (``finish_model_loop``; at most MAX_UNSCRIPTED_CALLS, then SC419). The model itself
  answers in ``model_answer`` (the scripted answer offline; the hook a live model
  replaces). Each model call, as ADK makes it (``model_call``): the request is built
  first — the instructions **compiled from the state as it is just before this call**
  (static ``{{x}}`` and ``{% if %}`` with the session's channel and modality; the seeds:
  "compiled into the prompt before the model call"; ADK re-renders them for every call)
  and the history; then ``before_model`` callbacks (``llm_request`` with ``contents`` —
  the runtime's: messages, calls and responses without the state updates, so the user's
  message is the last content as CX code reads it; another agent's events as
  ``<context>`` user text — and ``config.system_instruction``); then the model, whose
  answer is the step's script (AGENT: its text; TOOL: a function call with
  its arguments); then ``after_model`` callbacks (``llm_response``). A ``before_model``
  callback that returns a response (an ``LlmResponse``, ``Content`` or ``Part``, as JSON)
  replaces the answer: the model is not called and the ``after_model`` callbacks do not
  run; an ``after_model`` callback that returns one replaces the answer. The answer's
  parts then happen in order: text is an ``agent`` event, a function call runs the tool
  (below). Each call is recorded as a ``ModelCall``: its compiled instructions, the static
  variables whose value changed since the previous call (also on the answer's first event,
  ``Event.instructions_changed``, for the timeline), the scripted and the final answer,
  who replaced it, and the events it received. The agent itself never writes state.
- **Function calls** (a TOOL step's, or a callback's answer), in this order: the
  ``tool_call`` event; ``before_tool`` callbacks (a value other than None skips the tool and
  is the response); the tool itself (its mock if ``use_mocks`` or it has no code, else its
  Python code through ``run_code``; an OpenAPI/MCP/platform tool without a mock responds
  ``null``); ``after_tool`` callbacks (a value other than None replaces the response); then
  the ``tool_response`` event with the final response. A tool the app does not have
  (SC404) or the agent may not call (SC405) is reported and not run; ``transfer_to_agent``
  is every agent's (below). Every
  ``<state_update>`` appears at the moment of its write, so the tool's updates come before
  its response. OpenAPI and MCP calls also record the HTTP request they would send
  (``agents.core.http``), built with the state at call time.
- **Transfers** (ADK's, which CX's ``agentTransfer`` is): a function call
  ``transfer_to_agent {"agent_name": X}`` (a TOOL step, ``expect transfer: X``, which is
  the scripted model making that call, or a callback's answer) runs like a tool call
  (``tool_call`` event, the current agent's ``before_tool``/``after_tool`` callbacks, the
  response ``{"result": null}``), then hands the session over to X: a ``transfer`` event
  (designer-only), X's ``before_agent`` callbacks at once (as ADK starts the sub-agent in
  the same invocation; content they return answers and ends the turn), and from then on
  X's instructions, tools and callbacks; the state is shared and the session stays with X
  in the next turns. At the end of the turn only X's ``after_agent`` callbacks run (ADK's
  runner: the agent that transferred does not run its own; ``tests/adk`` checks it). ADK's rule for
  the target: a sub-agent of the current agent, its parent or a peer (another sub-agent
  of the parent); anything else (or an unknown agent) is an SC417 step error naming both
  agents, and the session stays where it was.
- **Callbacks of one kind** run in ``order`` until one returns a value (ADK: a non-None
  value for tool callbacks, a truthy one for model and agent callbacks); the rest do not
  run.
- **CALLBACK** steps run the callbacks of the given kind that way, with the step's
  ``args`` as keyword arguments.
- A **USER** step may set session variables (CX's ``userInput.variables``): they are
  applied at the start of its turn, before the user message and the ``before_agent``
  callbacks, as writes of the source ``session`` (checked like any write). An event input
  (``userInput.event``) without text shows as the user message ``<event>name</event>``.
- **EXPECT** steps (golden expectations, checked by ``agents.core.evaluate``) do nothing
  here, except: ``expect call`` with arguments is the scripted model calling the tool (a
  TOOL step); ``expect agent`` is the scripted reply (an AGENT step); ``expect
  transfer: X`` is the scripted model calling ``transfer_to_agent`` (a transfer); ``mock``
  makes the next call of its tool (this turn or later) answer the given response without running
  the tool's mock or code (its before/after tool callbacks still run).
- **Live runs** (``simulate(..., model=strategy)``, ``agents.core.model``): the USER
  steps drive the turns and, in each turn a user input started, the model is called
  (``live_turn``) until it answers without a function call, a call fails (SC421) or the
  code ends the turn; each call is a ``model_call`` whose answer comes from the strategy
  (``ask_model``: a ``ModelRequest`` with the compiled instructions, the window's
  contents and the agent's function declarations) after the ``before_model`` callbacks.
  Scripted AGENT/TOOL steps and expectations do not act (``agents.core.live`` checks
  them against what the model did); ``mock`` steps still do. A call of a tool the agent
  does not have (SC404/SC405) ends the turn, as ADK raises.
- Callbacks receive, as keyword arguments: ``before_tool`` → ``tool``, ``args``;
  ``after_tool`` → ``tool``, ``args``, ``tool_response``; ``before_model`` →
  ``llm_request``; ``after_model`` → ``llm_response``; the agent callbacks nothing (a
  declared parameter that is not supplied gets None in the sandbox). Their entry point is
  ``<kind>_callback`` (``before_model_callback``…). Code's ``context`` (``CodeCall
  .context_values``) holds the built-ins, ``agent_name`` and ``events``: the session's
  events in the window as CX events (``{"author", "content"}``; the session of a scenario
  that starts at a sub-agent begins with the root agent's ``transfer_to_agent`` call, as
  every conversation starts at the root).

The session clock
-----------------
``SessionSpec.now`` (an ISO date-time; "" = the real clock) is what tool and callback code
reads as now: ``CodeCall.now``, which the sandbox turns into ``datetime.date.today()``,
``datetime.datetime.now()``/``today()``/``utcnow()`` and ``time.time()`` (without an
offset the clock is UTC; it stands still during a call). A value that is not an ISO
date-time is reported (SC418) and the code reads the real clock. Goldens compare dates
with today, so a golden written for a day runs with that day as its clock.

Writes
------
Each write is checked in order: a value that does not fit the type/schema
(``validate_value``) is a step error and that write is not applied; the other writes of
the step still are. A variable the app does not declare: code's write is **kept** in the
session state (CX code keeps private keys there, as the runtime does) but never shown to
the model, with one SC408 note per writer and name (a ``note`` event: the runtime's normal
state, never an error); a mock's is an error and ignored.
A write that leaves the value unchanged adds nothing; two writes to one variable in one
step give one event per actual change, in write order (``x = 2`` then ``x = 1`` from 1
gives ``x: 2`` then ``x: 1``). Numbers compare by value (``3 == 3.0``), booleans never
equal numbers, objects compare regardless of key order. Writing ``None`` or removing a
variable (``del``, ``pop``, ``remove_variable``) leaves it without a value; if it had one,
the update renders as ``<state_update>name: null</state_update>``.

Tool or callback code that fails (exception, timeout, memory, forbidden construct…) is a
step error (SC410) with its message and line; **none of its writes are applied**, and, as
in the runtime, where the exception ends the invocation, **the turn ends there**: no later
callback, step or ``after_agent`` callback of the turn runs (SC415 says what was skipped);
the next USER step starts a new turn. ADK commits the writes of a model call (its model
callbacks) and of a tool call (``before_tool``, the tool, ``after_tool``) only with that
call's event, so the writes of the call's earlier callbacks are undone too (their updates
become designer-only ``error`` notes). Code that did not run at all (a cap, the runner
failing: ``CodeResult.ran`` false) is a step error that does not end the turn.

Events and the context window
-----------------------------
Events the model sees: ``user``, ``agent``, ``tool_call`` (text
``{"functionCall": {"name": …, "args": {…}}}``), ``tool_response`` (text
``{"functionResponse": {"name": …, "response": {…}}}``, a non-object response wrapped as
``{"result": value}`` as ADK does) and ``state_update``. ``callback``, ``error`` and
``note`` events are for the designer only: their ``text`` is empty, ``tokens`` 0, and they
are never part of the model input (``label`` describes every event in words).

After each turn the model input is the instructions of the turn's last model call (always
kept; ``TurnResult.instructions``) plus the newest model-visible events whose estimated
tokens (``agents.core.tokens``) fit in ``token_budget - instruction_tokens``; the window
is a contiguous suffix, so once an event drops out it never comes back. When the latest
``<state_update>`` of a variable that the compiled instructions reference dynamically
(``{name}``) is outside the window, the turn warns once (SC413) that the agent may forget
it.

``TurnResult.builtins`` holds the ``$context`` values as at the end of the turn:
``$context.session_id``, ``turn_index``, ``app_id`` (the session's, else the app name),
``project_id``, ``project_number``, ``location``, ``variables`` (the whole state object) and
one ``$context.variables.<name>`` per variable that has a value.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from agents.core import codes
from agents.core.code_analysis import function_parameters
from agents.core.compile import compile_instructions
from agents.core.diagnostics import Diagnostic, Message, Severity
from agents.core.http import CODES as HTTP_CODES
from agents.core.http import HttpRequest, mcp_request, openapi_request
from agents.core.model import ModelAnswer, ModelRequest, ModelStrategy, function_declarations
from agents.core.model import transfer_note as _transfer_note
from agents.core.parse import TokenKind, parse
from agents.core.render import render_value
from agents.core.spec import (
    AgentSpec,
    AppSpec,
    CallbackKind,
    CallbackSpec,
    ExpectKind,
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
    "ModelCall",
    "SimulationResult",
    "TurnResult",
    "simulate",
]

CODES: dict[str, str] = {
    **codes.section("simulate"),
    **HTTP_CODES,
}


def _joined(messages: Any) -> str:
    """Messages joined with "; ", each kept a `Message` (rendered in the reader's language)."""
    items = list(messages)
    if not items:
        return ""
    joined = items[0]
    for item in items[1:]:
        joined = Message("%(first)s; %(rest)s", first=joined, rest=item)
    return joined


EventKind = Literal[
    "user",
    "agent",
    "tool_call",
    "tool_response",
    "state_update",
    "callback",
    "transfer",
    "error",
    "note",
]
TRANSFER_TOOL = "transfer_to_agent"  # ADK's function for a transfer (CX's agentTransfer)
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
    # The session clock (ISO date-time) the code's ``datetime``/``time`` read; "" = real.
    now: str = ""


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
    # False when the code was not run at all (a cap, the runner itself failing): the
    # failure is the simulation's, so it does not end the turn as a raise does.
    ran: bool = True
    # The app's tools the code called through CX's ``tools.<name>(...)``: (name, returned).
    tool_calls: tuple[tuple[str, bool], ...] = ()
    # A callback's ``args`` (a tool call's arguments) as the code left them, when it changed
    # them in place (ADK hands the same dict to before_tool, the tool and after_tool).
    args: dict[str, Any] | None = None


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
    # The model call whose answer this event is (``agent``, ``tool_call``), an index into
    # `SimulationResult.model_calls`, and the static variables whose value in the
    # instructions changed since the previous model call (set on the answer's first event).
    model_call: int | None = None
    instructions_changed: tuple[str, ...] = ()
    # The agent whose message, call or response this is (another agent's reaches the
    # current one as context: `_content_of`).
    author: str = ""

    @property
    def model_visible(self) -> bool:
        return self.kind in MODEL_VISIBLE


@dataclass(frozen=True, slots=True)
class ModelCall:
    """One call of the model (an AGENT or TOOL step, as ADK calls it).

    `instructions` is what the model received as instructions: compiled from the state just
    before the call (``before_model`` callbacks run after it, as in ADK, where the request
    is built first); `changed` names the static variables (``{{x}}`` and ``{% if %}``
    conditions) whose value differs from the previous model call's, so the compiled text
    may differ (empty for the first call). `scripted` is the scenario's answer as parts
    (``{"text": …}`` or ``{"function_call": {"name": …, "args": …}}``), `answer` the parts
    the turn went on with, and `replaced_by` the callback that replaced the scripted answer
    (``before_model_callback``: the model was not called; ``after_model_callback``; or "").
    `history` holds the indexes of the events the model received with the instructions.
    """

    index: int
    turn: int
    step: int | None
    instructions: str
    instruction_tokens: int
    changed: tuple[str, ...]
    scripted: tuple[dict[str, Any], ...]
    answer: tuple[dict[str, Any], ...]
    replaced_by: str
    history: tuple[int, ...]
    # True for a call of ADK's loop the script has no answer for: the last answer had a
    # function call and the turn's scripted answers were used up (the reply is "").
    unscripted: bool = False


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
    # The instructions of the turn's last model call (the session start's without one).
    instructions: str = ""


@dataclass(frozen=True, slots=True)
class SimulationResult:
    """`instructions` are compiled with the values at session start (each model call
    compiles them again: `model_calls`); `diagnostics` holds every simulation problem in
    order (step errors, warnings); `instruction_diagnostics` those of compiling the
    instructions at session start."""

    instructions: str
    instruction_tokens: int
    turns: tuple[TurnResult, ...]
    events: tuple[Event, ...]
    final_state: dict[str, Any]
    diagnostics: tuple[Diagnostic, ...]
    instruction_diagnostics: tuple[Diagnostic, ...] = ()
    model_calls: tuple[ModelCall, ...] = ()

    def model_input_text(self, turn: int) -> str:
        """The turn's last instructions and its visible history, one event per line."""
        texts = [self.events[i].text for i in self.turns[turn].model_input]
        return "\n".join([self.turns[turn].instructions or self.instructions, *texts])


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


_NOW_RE = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})(?:[T ]([01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:\.\d{1,6})?)?)?"
    r"(?:Z|[+-](?:[01]\d|2[0-3]):?[0-5]\d)?"
)


def valid_now(text: str) -> bool:
    """Whether `text` is a session clock: an ISO 8601 date-time (a date alone is midnight;
    an offset or ``Z`` optional), as the sandbox's ``datetime.fromisoformat`` reads it."""
    found = _NOW_RE.fullmatch(text)
    if found is None:
        return False
    year, month, day = (int(found.group(i)) for i in (1, 2, 3))
    days = [31, 29 if year % 4 == 0 and (year % 100 or year % 400 == 0) else 28, 31, 30, 31]
    days += [30, 31, 31, 30, 31, 30, 31]
    return 1 <= month <= 12 and 1 <= day <= days[month - 1]


def state_update_text(name: str, value: Any) -> str:
    return f"<state_update>{name}: {render_value(value)}</state_update>"


def _ordered(callbacks: tuple[CallbackSpec, ...], kind: CallbackKind) -> list[CallbackSpec]:
    return sorted((c for c in callbacks if c.kind == kind), key=lambda c: c.order)


_ERROR, _WARNING, _INFO = Severity.ERROR, Severity.WARNING, Severity.INFO
_TOOL_CALLBACKS = frozenset({CallbackKind.BEFORE_TOOL, CallbackKind.AFTER_TOOL})
_AUTHORED = frozenset({"agent", "tool_call", "tool_response"})
# At most this many history contents are handed to a model callback (the newest).
_MAX_CONTENTS = 200
# ADK's loop calls the model again after every answer with a function call; past the
# script, at most this many calls per turn (then SC419). ADK's own cap is 500 per run.
MAX_UNSCRIPTED_CALLS = 20


def _stops_on_none(value: Any) -> bool:
    return value is not None


def _static_names(instructions: str) -> tuple[str, ...]:
    """The variables whose value the compiled instructions hold: ``{{x}}`` and the
    variables of ``{% if %}`` conditions (root names, in order of appearance)."""
    names: list[str] = []
    for token in parse(instructions).tokens:
        if token.kind is TokenKind.STATIC and token.path:
            names.append(token.path[0])
        elif token.condition is not None:
            names.extend(path[0] for path in token.condition.references if path)
    return tuple(dict.fromkeys(names))


def no_parameter_arguments(app: AppSpec, tool_name: str) -> dict[str, Any] | None:
    """``{}`` for a tool the model calls with nothing to choose (a Python tool whose
    function takes no parameter but the context, like Bella Notte's ``confirm_pending()``),
    else None: a golden's call without ``args`` of such a tool runs offline with ``{}``."""
    tool = app.tool(tool_name)
    if tool is None or tool.kind is not ToolKind.PYTHON or not tool.python_code.strip():
        return None
    return {} if function_parameters(tool.python_code, tool.name) == () else None


def _relayed(event: Event) -> str:
    """Another agent's message, call or response as the current agent reads it (ADK's
    ``_present_other_agent_message``: user text naming the agent)."""
    value = render_value(event.value if isinstance(event.value, dict) else {"result": event.value})
    if event.kind == "agent":
        return f"[{event.author}] said: {event.text}"
    if event.kind == "tool_call":
        return f"[{event.author}] called tool `{event.source}` with parameters: {value}"
    return f"[{event.author}] `{event.source}` tool returned result: {value}"


def _content_of(event: Event, agent: str = "") -> dict[str, Any] | None:
    """A model-visible event as a Gemini/CX content (state updates are user text). For the
    agent `agent`, another agent's message, call or response is user text in ``<context>``
    (as ADK relays it; the marker is what CX code such as bella_notte's filters)."""
    if agent and event.author and event.author != agent and event.kind in _AUTHORED:
        return {"role": "user", "parts": [{"text": f"<context>{_relayed(event)}</context>"}]}
    if event.kind == "user" or event.kind == "state_update":
        return {"role": "user", "parts": [{"text": event.text}]}
    if event.kind == "agent":
        return {"role": "model", "parts": [{"text": event.text}]}
    if event.kind == "tool_call":
        call = {"name": event.source, "args": event.value if isinstance(event.value, dict) else {}}
        return {"role": "model", "parts": [{"function_call": call}]}
    if event.kind == "tool_response":
        response = event.value if isinstance(event.value, dict) else {"result": event.value}
        return {
            "role": "user",
            "parts": [{"function_response": {"name": event.source, "response": response}}],
        }
    return None


def _cx_events(events: list[Event], agent: str) -> list[dict[str, Any]]:
    """The history as CX session events (``callback_context.events``): the user's messages
    (author ``user``), the agent's messages, calls and responses (author: the agent, as in
    ADK). State updates are not session events."""
    out: list[dict[str, Any]] = []
    for event in events:
        content = _content_of(event) if event.kind != "state_update" else None
        if content is not None:
            author = "user" if event.kind == "user" else event.author or agent
            out.append({"author": author, "content": content})
    return out


def response_parts(value: Any) -> tuple[dict[str, Any], ...] | None:
    """The parts of a model answer a callback returned (an ``LlmResponse``, ``Content`` or
    ``Part`` as JSON); None when the value is not an answer (Bella Notte's callbacks return
    ``{"decision": "OK"}``: the model is called)."""
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("content"), dict):
        value = value["content"]
    if isinstance(value.get("parts"), list):
        parts = value["parts"]
    elif "text" in value or "function_call" in value:
        parts = [value]
    else:
        return None
    out: list[dict[str, Any]] = []
    for part in parts:
        if not isinstance(part, dict):
            continue
        call = part.get("function_call")
        if isinstance(call, dict) and isinstance(call.get("name"), str):
            args = call.get("args")
            out.append(
                {
                    "function_call": {
                        "name": call["name"],
                        "args": args if isinstance(args, dict) else {},
                    }
                }
            )
        elif isinstance(part.get("text"), str):
            out.append({"text": part["text"]})
    return tuple(out)


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _copy_tree(value: Any) -> Any:
    """A private copy of a JSON-like value (dicts, lists, tuples of scalars), as
    ``copy.deepcopy`` makes it but without its memo: the requests handed to each callback
    carry the whole history, and ``deepcopy``'s bookkeeping made `simulate` quadratic in
    cost per node (README, "Benchmarks"). Anything else falls back to ``deepcopy``."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict:
        return {key: _copy_tree(item) for key, item in value.items()}
    if kind is list:
        return [_copy_tree(item) for item in value]
    if kind is tuple:
        return tuple(_copy_tree(item) for item in value)
    return copy.deepcopy(value)


@dataclass(slots=True)
class _Writer:
    """Who writes: `source` for events, `label` for messages."""

    source: str
    label: str
    subject: str


# --------------------------------------------------------------------------- the run


class _Run:
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
        self.static_names = _static_names(agent.instructions)
        self.static_seen: dict[str, Any] | None = None  # static values at the last call
        self.latest_instructions = ""
        # Set when tool or callback code raised: the rest of the turn does not run.
        self.turn_ended: str | None = None
        # Set when a before_agent callback answered: the rest of the turn does not run.
        self.turn_answered: str | None = None
        self.undeclared_warned: set[tuple[str, str]] = set()
        self.skipped_steps = 0
        # ADK's loop: the last model call's answer had a function call, so the model is
        # called again (the next scripted answer, or one past the script at the turn end).
        self.loop_pending = False
        # Set when a before_model callback answered with text alone: ADK's loop ends there,
        # so the turn's later scripted answers are not used (counted in `unused_answers`).
        self.model_done: str | None = None
        self.unused_answers = 0

    # ----------------------------------------------------------------- setup

    def start_session(self) -> None:
        self.state = dict(self.app.default_values())
        if self.session.now:
            if valid_now(self.session.now):
                self.now = self.session.now
            else:
                self.diagnostics.append(
                    Diagnostic(
                        "SC418",
                        _WARNING,
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
                        _WARNING,
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
            author=self.agent.name if kind in _AUTHORED else "",
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

    def note(self, code: str, message: str, *, source: str, subject: str | None) -> None:
        """Something the runtime does not stop for, told in the timeline (a ``note`` event,
        designer-only) and as an INFO diagnostic: never an error."""
        where = f"steps.{self.step_index}" if self.step_index is not None else None
        diagnostic = Diagnostic(code, _INFO, message, field=where, subject=subject)
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

    def code_context(self) -> dict[str, Any]:
        """What code's ``context`` holds: the built-ins, the agent's name and the session's
        events so far (CX's ``callback_context.events``, the newest of the window)."""
        window = self.events[self.window_start :][-_MAX_CONTENTS:]
        events = _cx_events(window, self.agent.name)
        root = next((a for a in self.app.agents if a.is_root), None)
        if root is not None and root.name != self.start_agent.name:
            # Every conversation starts at the root agent: a scenario of a sub-agent starts
            # after the root transferred to it, as the runtime's events show.
            call = {"name": TRANSFER_TOOL, "args": {"agent_name": self.start_agent.name}}
            content = {"role": "model", "parts": [{"function_call": call}]}
            events.insert(0, {"author": root.name, "content": content})
        return {**self.context_values(), "agent_name": self.agent.name, "events": events}

    def code_tools(self) -> dict[str, str]:
        """What CX's ``tools.<name>(...)`` reaches from code: each Python tool's code, and
        for every other tool (an OpenAPI or MCP toolset's operation, an OpenAPI or MCP
        tool) a function answering what the simulation answers for it — the next golden
        ``mock`` of it, else its mock's response, else null (no request is sent offline)."""
        tools = dict(self.tool_codes)
        for tool in self.app.tools:
            if tool.name in tools or tool.kind is ToolKind.PYTHON:
                continue
            if tool.name in self.step_mocks:
                answer = self.step_mocks[tool.name]
            elif tool.mock is not None:
                answer = tool.mock.response
            elif tool.kind is ToolKind.PLATFORM:
                answer = {}
            else:
                answer = None
            text = json.dumps(json.dumps(answer, default=str))
            tools[tool.name] = (
                f"import json\n\n\ndef {tool.name}(**arguments):\n    return json.loads({text})\n"
            )
        return tools

    def used_code_mocks(self, result: CodeResult) -> None:
        """A golden ``mock`` answers the next call of its tool, a call from code too."""
        for name, returned in result.tool_calls:
            tool = self.app.tool(name)
            if returned and tool is not None and tool.kind is not ToolKind.PYTHON:
                self.step_mocks.pop(name, None)

    def http_context(self) -> dict[str, Any]:
        return {**self.context_values(), "variables": self.state}

    # ----------------------------------------------------------------- writes

    def apply_writes(
        self,
        writer: _Writer,
        writes: tuple[tuple[str, Any], ...],
        removed: tuple[str, ...],
        *,
        keep_undeclared: bool = False,
    ) -> None:
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
                    value, variable, self.schemas, field=f"steps.{self.step_index}"
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
                            problems=_joined(p.message for p in problems),
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
                Message(
                    "%(label)s: code execution is not available; add a mock.", label=writer.label
                ),
                source=writer.source,
                subject=writer.subject,
            )
            return None
        try:
            result = self.run_code(call)
        except Exception as exc:  # the injected runner itself must not crash the page
            result = CodeResult(
                False, None, (), (), f"the code runner failed: {exc}", None, ran=False
            )
        if not result.ok:
            where = Message(" (line %(line)s)", line=result.error_line) if result.error_line else ""
            ends = Message("; the turn ends here, as in the runtime") if result.ran else ""
            self.step_error(
                "SC410",
                Message(
                    "%(label)s failed%(where)s: %(value)s%(ends)s",
                    label=writer.label,
                    where=where,
                    value=result.error or "unknown error",
                    ends=ends,
                ),
                source=writer.source,
                subject=writer.subject,
            )
            if result.ran:
                # ADK lets the exception end the invocation: no later step, callback or
                # after_agent callback of this turn runs.
                self.turn_ended = writer.label
            return None
        self.apply_writes(writer, tuple(result.writes), tuple(result.removed), keep_undeclared=True)
        return result

    # ----------------------------------------------------------------- callbacks

    def run_callbacks(self, kind: CallbackKind, args: Mapping[str, Any]) -> tuple[bool, Any]:
        """Run the agent's callbacks of `kind` in order until one returns a value (ADK's
        pipeline: a non-None value for tool callbacks, a truthy one for the others); return
        (whether one did, the value). Stops when code raised (`turn_ended`)."""
        callbacks = _ordered(self.agent.callbacks, kind)
        entry = f"{kind.value}_callback"
        stops = _stops_on_none if kind in _TOOL_CALLBACKS else bool
        for position, callback in enumerate(callbacks, start=1):
            if self.turn_ended is not None:
                break
            if not callback.code.strip():
                continue  # an empty callback does nothing
            source = entry if len(callbacks) == 1 else f"{entry} #{position}"
            writer = _Writer(
                source,
                Message("the %(source)s of %(agent)s", source=source, agent=self.agent.name),
                source,
            )
            result_event = self.add_event(
                "callback",
                source=source,
                label=Message("%(source)s ran", source=source),
                value=None,
            )
            call = CodeCall(
                code=callback.code,
                entry=entry,
                kind="callback",
                args=_copy_tree(dict(args)),
                state=_copy_tree(self.state),
                filename=f"<callback:{entry}>",
                context_values=self.code_context(),
                tools=self.code_tools(),
                now=self.now,
            )
            result = self.call_code(writer, call)
            if result is not None:
                self.used_code_mocks(result)
            given = args.get("args")
            if result is not None and result.args is not None and isinstance(given, dict):
                # ADK hands the same dict to the tool callbacks and the tool: a change made
                # in place (`input["id"] = …`) reaches the later callbacks and the tool.
                given.clear()
                given.update(_copy_tree(result.args))
            if result is not None and result.tool_calls:
                called = ", ".join(dict.fromkeys(f"tools.{name}" for name, _ in result.tool_calls))
                label = Message("%(source)s ran (called %(called)s)", source=source, called=called)
                result_event = replace(result_event, label=label)
                self.events[result_event.index] = result_event
            if result is not None and result.return_value is not None:
                self.events[result_event.index] = replace(
                    result_event,
                    value=result.return_value,
                    label=Message(
                        "%(label)s and returned %(value)s",
                        label=result_event.label,
                        value=render_value(result.return_value)[:80],
                    ),
                )
                if stops(result.return_value):
                    return True, result.return_value
        return False, None

    # ----------------------------------------------------------------- steps

    def start_turn(self, first_step: StepSpec) -> None:
        self.turn += 1
        self.turn_ended = None
        self.turn_answered = None
        self.skipped_steps = 0
        self.loop_pending = False
        self.model_done = None
        self.unused_answers = 0
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
            if first_step.variables:
                writer = _Writer("session", Message("the session input"), "session")
                writes = tuple((k, _copy_tree(v)) for k, v in first_step.variables.items())
                self.apply_writes(writer, writes, ())
            if first_step.text or first_step.event:
                self.add_event("user", first_step.text or f"<event>{first_step.event}</event>")
        returned, value = self.run_callbacks(CallbackKind.BEFORE_AGENT, {})
        parts = response_parts(value) if returned else None
        if parts is not None and self.turn_ended is None:
            # ADK: content from before_agent is the agent's answer and ends the invocation;
            # the model is not called and after_agent does not run.
            self.agent_says(parts, "before_agent_callback")
            self.turn_answered = "before_agent_callback"

    def run_step(self, step: StepSpec) -> None:
        kind = step.kind
        if (self.turn_ended or self.turn_answered) is not None and kind is not StepKind.USER:
            self.skipped_steps += 1
            return
        if kind is StepKind.USER:
            self.add_event("user", step.text)
        elif kind is StepKind.AGENT:
            self.scripted_answer(({"text": step.text},))
        elif kind is StepKind.TOOL:
            self.scripted_answer(({"function_call": {"name": step.tool, "args": dict(step.args)}},))
        elif kind is StepKind.EXPECT and step.expectation is not None:
            expected = step.expectation
            if expected.kind is ExpectKind.CALL:
                args = expected.value
                if not isinstance(args, dict):
                    # No arguments listed: run it when the tool has nothing to choose.
                    args = no_parameter_arguments(self.app, expected.tool)
                if args is not None:
                    self.run_step(StepSpec(StepKind.TOOL, tool=expected.tool, args=args))
            elif expected.kind is ExpectKind.AGENT:
                self.scripted_answer(({"text": str(expected.value or "")},))
            elif expected.kind is ExpectKind.TRANSFER:
                call = {"name": TRANSFER_TOOL, "args": {"agent_name": expected.agent}}
                self.scripted_answer(({"function_call": call},))
            elif expected.kind is ExpectKind.MOCK:
                self.step_mocks[expected.tool] = _copy_tree(expected.value)
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

    # ----------------------------------------------------------------- model calls

    def begin_scope(self) -> tuple[int, dict[str, Any]]:
        """Where the writes of a model call or a tool call start: ADK commits them with the
        call's event (the model's answer, the tool's response), so all or none."""
        return len(self.events), _copy_tree(self.state)

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

    def compile_now(self) -> tuple[str, tuple[str, ...]]:
        """The instructions compiled from the current state, and the static variables whose
        value changed since the previous model call."""
        compiled = compile_instructions(
            self.agent.instructions,
            self.state,
            channel=self.session.channel,
            modality=self.session.modality,
        )
        values = {name: _copy_tree(self.state.get(name)) for name in self.static_names}
        changed: tuple[str, ...] = ()
        if self.static_seen is not None:
            changed = tuple(
                name
                for name in self.static_names
                if not same_value(self.static_seen.get(name), values[name])
            )
        self.static_seen = values
        self.latest_instructions = compiled.text
        return compiled.text, changed

    def model_contents(self, *, state_updates: bool = True) -> list[dict[str, Any]]:
        """The history of the window so far as CX/Gemini contents (``{"role": "user" |
        "model", "parts": [...]}``). What the *model* reads has the ``<state_update>``
        entries where the writes happened (the seeds); what the *callbacks* get as
        ``llm_request.contents`` (``state_updates=False``) is the runtime's contents —
        messages, function calls and responses — so the user's message is the last content
        of a turn's first call, as real CX code reads it (``contents[-1]``)."""
        contents: list[dict[str, Any]] = []
        for event in self.events[self.window_start :][-_MAX_CONTENTS:]:
            if event.kind == "state_update" and not state_updates:
                continue
            content = _content_of(event, self.agent.name)
            if content is not None:
                contents.append(content)
        return contents

    def model_answer(
        self, request: dict[str, Any], scripted: tuple[dict[str, Any], ...]
    ) -> tuple[dict[str, Any], ...]:
        """The model's answer to `request` (``contents`` with the state updates the model
        reads, ``config.system_instruction``): offline, the scenario's scripted answer. The
        one place a live model answers instead."""
        return scripted

    def scripted_answer(self, scripted: tuple[dict[str, Any], ...]) -> None:
        """The scripted model's next answer (an AGENT or TOOL step, ``expect call`` with
        arguments, ``expect agent``, ``expect transfer``). It is used by the first model call
        that reaches the model: a ``before_model`` callback answering in the model's place
        does not use it up. When that callback's answer has a function call, the call runs
        and ADK's loop calls the model again (this answer still to come, after a transfer by
        the new agent); when it is text alone, ADK's turn ends with it, and this and the
        turn's later scripted answers are not used (SC420)."""
        if self.model_done is not None:
            self.unused_answers += 1
            return
        for _ in range(MAX_UNSCRIPTED_CALLS):
            reached_model = self.model_call(scripted)
            if reached_model or self.turn_ended is not None or self.turn_answered is not None:
                return
            if not self.loop_pending:
                self.model_done = "before_model_callback"
                self.unused_answers += 1
                return
        self.loop_stopped()

    def loop_stopped(self) -> None:
        self.loop_pending = False
        self.diagnostics.append(
            Diagnostic(
                "SC419",
                _WARNING,
                Message(
                    "turn %(turn)s: the model was called %(max_unscripted_calls)s "
                    "times in a row and every answer had a function call; the "
                    "loop stops here.",
                    turn=self.turn,
                    max_unscripted_calls=MAX_UNSCRIPTED_CALLS,
                ),
                subject=self.agent.name,
            )
        )

    def live_turn(self, user_step: int | None) -> None:
        """A live run's turn (ADK's loop): call the model until it answers without a
        function call, a call fails, or the code ends the turn. Only a turn started by a
        user input calls the model. The caps are the strategy's (``agents.core.live``)."""
        if self.model is None or user_step is None:
            return
        self.step_index = user_step
        while self.turn_ended is None and self.turn_answered is None:
            before = len(self.model_calls)
            self.model_call(None)
            if len(self.model_calls) == before:
                break
            calls = [
                p["function_call"]
                for p in self.model_calls[-1].answer
                if isinstance(p.get("function_call"), dict)
            ]
            if not calls:
                break
            # A tool the agent does not have (SC404/SC405, reported by the call) ends the
            # turn, as ADK raises for a function it cannot find.
            if any(
                c.get("name") != TRANSFER_TOOL and c.get("name") not in self.agent.tools
                for c in calls
            ):
                break

    def ask_model(self, index: int, instructions: str, contents: list[dict[str, Any]]) -> Any:
        """A live run's answer for model call `index` (a ``ModelAnswer``)."""
        assert self.model is not None
        note = _transfer_note(self.app, self.agent)
        request = ModelRequest(
            index=index,
            turn=self.turn,
            agent=self.agent.name,
            system_instruction=f"{instructions}\n\n{note}" if note else instructions,
            contents=tuple(_copy_tree(contents)),
            tools=function_declarations(self.app, self.agent),
        )
        try:
            answer = self.model(request)
        except Exception as exc:  # a strategy must answer; this keeps the run alive
            answer = ModelAnswer(
                error="bad_answer",
                message=Message("%(name)s: %(exc)s", name=type(exc).__name__, exc=exc),
            )
        if answer.error:
            self.step_error(
                "SC421",
                Message(
                    "model call %(index)s failed (%(error)s): %(message)s",
                    index=index + 1,
                    error=answer.error,
                    message=answer.message,
                ),
                source="model",
                subject=self.agent.name,
            )
            self.turn_ended = "the model call"
        return answer

    def model_call(
        self, scripted: tuple[dict[str, Any], ...] | None, *, unscripted: bool = False
    ) -> bool:
        """One model call, as ADK makes it: the request (instructions compiled from the
        current state, the history), ``before_model`` callbacks (a returned response
        replaces the model's answer and the ``after_model`` callbacks do not run), the
        model (the scripted answer), ``after_model`` callbacks (a returned response
        replaces the answer); then the answer's parts: text is the agent's message, a
        function call runs the tool. Returns whether the model itself was asked (False when
        a ``before_model`` callback answered in its place). `scripted` None: a live run,
        the model answers (``ask_model``) after the ``before_model`` callbacks, when they
        did not."""
        instructions, changed = self.compile_now()
        index = len(self.model_calls)
        history = tuple(
            i for i in range(self.window_start, len(self.events)) if self.events[i].model_visible
        )
        contents = self.model_contents(state_updates=False)
        request = {"contents": contents, "config": {"system_instruction": instructions}}
        answer, replaced_by = scripted or (), ""
        scope = self.begin_scope()
        returned, value = self.run_callbacks(CallbackKind.BEFORE_MODEL, {"llm_request": request})
        parts = response_parts(value) if returned else None
        if parts is not None:
            answer, replaced_by = parts, "before_model_callback"
        elif self.turn_ended is None:
            model_request = {
                "contents": self.model_contents(),
                "config": {"system_instruction": request["config"]["system_instruction"]},
            }
            if scripted is None:
                scripted = answer = self.ask_model(
                    index, instructions, model_request["contents"]
                ).parts
            else:
                answer = self.model_answer(model_request, scripted)
        if parts is None and self.turn_ended is None:
            response = {"content": {"role": "model", "parts": [dict(p) for p in answer]}}
            returned, value = self.run_callbacks(
                CallbackKind.AFTER_MODEL, {"llm_response": response}
            )
            parts = response_parts(value) if returned else None
            if parts is not None:
                answer, replaced_by = parts, "after_model_callback"
        self.model_calls.append(
            ModelCall(
                index=index,
                turn=self.turn,
                step=self.step_index,
                instructions=instructions,
                instruction_tokens=estimate_tokens(instructions),
                changed=changed,
                scripted=scripted or (),
                answer=answer,
                replaced_by=replaced_by,
                history=history,
                unscripted=unscripted,
            )
        )
        self.loop_pending = False
        reached_model = replaced_by != "before_model_callback"
        if self.turn_ended is not None:
            self.roll_back(scope, "the model call")
            return reached_model
        note = changed
        # ADK yields the answer (its text) before it runs the answer's function calls.
        texts = [p for p in answer if not isinstance(p.get("function_call"), dict)]
        calls = [p for p in answer if isinstance(p.get("function_call"), dict)]
        ran_calls = False
        for part in texts + calls:
            if self.turn_ended is not None:
                break
            call = part.get("function_call")
            if isinstance(call, dict):
                name = call.get("name")
                args = call.get("args")
                ran_calls = (
                    self.run_function_call(
                        name if isinstance(name, str) else "",
                        dict(args) if isinstance(args, dict) else {},
                        model_call=index,
                        instructions_changed=note,
                        replaced_by=replaced_by,
                    )
                    or ran_calls
                )
                note = ()
            elif isinstance(part.get("text"), str):
                label = part["text"]
                if replaced_by:
                    label = f"{label}  (answer from the {replaced_by})"
                elif unscripted:
                    label = f"{label}  (the model's reply after the function responses: not "
                    "in the script)"
                self.add_event(
                    "agent",
                    part["text"],
                    source=self.agent.name,
                    label=label,
                    model_call=index,
                    instructions_changed=note,
                )
                note = ()
        # ADK calls the model again after the function responses (`scripted_answer`,
        # `finish_model_loop`); a call that could not be made (SC404/405/417) ends it.
        self.loop_pending = ran_calls and self.turn_ended is None
        return reached_model

    def agent_says(self, parts: tuple[dict[str, Any], ...], source: str) -> None:
        """The text parts of an agent callback's content, as the agent's messages."""
        for part in parts:
            if isinstance(part.get("text"), str):
                self.add_event(
                    "agent",
                    part["text"],
                    source=self.agent.name,
                    label=Message(
                        "%(text)s  (answer from the %(source)s)", text=part["text"], source=source
                    ),
                )

    def run_function_call(
        self,
        name: str,
        args: dict[str, Any],
        *,
        model_call: int | None = None,
        instructions_changed: tuple[str, ...] = (),
        replaced_by: str = "",
    ) -> bool:
        """A function call of the model's answer: the call event, ``before_tool``
        callbacks, the tool, ``after_tool`` callbacks, the response event. Whether it got
        a response (False: not made, or failed)."""
        tool = self.app.tool(name)
        target: AgentSpec | None = None
        if tool is None and name == TRANSFER_TOOL:
            target = self.transfer_target(args)
            if target is None:
                return False
        elif tool is None:
            self.step_error(
                "SC404",
                Message("The tool %(value)s does not exist in this app.", value=name or "(none)"),
                source=name,
                subject=name,
            )
            return False
        if tool is not None and name not in self.agent.tools:
            self.step_error(
                "SC405",
                Message(
                    "agent %(agent)s may not call tool %(tool)s: it is not attached.",
                    agent=self.agent.name,
                    tool=name,
                ),
                source=name,
                subject=name,
            )
            return False
        label = f"{name}({render_value(args)})"
        if replaced_by:
            label = f"{label}  (call from the {replaced_by})"
        self.add_event(
            "tool_call",
            render_value({"functionCall": {"name": name, "args": args}}),
            source=name,
            value=_copy_tree(args),  # the call as the model made it
            label=label,
            model_call=model_call,
            instructions_changed=instructions_changed,
        )
        scope = self.begin_scope()
        skipped, response = self.run_callbacks(
            CallbackKind.BEFORE_TOOL, {"tool": name, "args": args}
        )
        if self.turn_ended is not None:
            self.roll_back(scope, f"the call of {name}")
            return False
        if not skipped and tool is None:
            response = None  # ADK's transfer_to_agent returns nothing: {"result": null}
        elif not skipped:
            ok, response = self.run_tool(tool, args)
            if self.turn_ended is not None:
                self.roll_back(scope, f"the call of {name}")
                return False
            if not ok:
                return False
        replaced, new_response = self.run_callbacks(
            CallbackKind.AFTER_TOOL, {"tool": name, "args": args, "tool_response": response}
        )
        if self.turn_ended is not None:
            self.roll_back(scope, f"the call of {name}")
            return False
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
        if target is not None and not skipped:
            self.transfer(target)
        return True

    def transfer_target(self, args: dict[str, Any]) -> AgentSpec | None:
        """The agent a ``transfer_to_agent`` call hands over to, if ADK allows it: a
        sub-agent of the current agent, its parent or a peer (another sub-agent of the
        parent). Otherwise an SC417 step error naming both agents, and None."""
        current = self.agent
        wanted = args.get("agent_name")
        wanted = wanted if isinstance(wanted, str) else ""
        target = self.app.agent(wanted)
        parent = next((a for a in self.app.agents if current.name in a.children), None)
        allowed = set(current.children)
        if parent is not None:
            allowed |= {parent.name, *parent.children}
        allowed.discard(current.name)
        if target is None:
            problem = "the app has no such agent"
        elif target.name not in allowed:
            problem = "it is not a sub-agent, the parent or a peer of it"
        else:
            return target
        self.step_error(
            "SC417",
            Message(
                "agent %(name)s cannot transfer to %(value)s: %(problem)s.",
                name=current.name,
                value=wanted or "(no agent)",
                problem=problem,
            ),
            source=TRANSFER_TOOL,
            subject=current.name,
        )
        return None

    def transfer(self, target: AgentSpec) -> None:
        """ADK's transfer: after the call's response, the target agent runs in the same
        invocation (its before_agent callbacks now, its instructions, tools and callbacks
        from now on; the state is shared) and the session stays with it."""
        self.add_event(
            "transfer",
            source=target.name,
            value={"from": self.agent.name, "to": target.name},
            label=Message(
                "%(agent)s transferred to %(target)s", agent=self.agent.name, target=target.name
            ),
        )
        self.agent = target
        self.static_names = _static_names(target.instructions)
        compiled = compile_instructions(
            target.instructions,
            self.state,
            channel=self.session.channel,
            modality=self.session.modality,
        )
        self.dynamic = tuple(
            dict.fromkeys(
                [
                    *self.dynamic,
                    *(s.name.split(".")[0] for s in compiled.spans if s.kind == "dynamic"),
                ]
            )
        )
        returned, value = self.run_callbacks(CallbackKind.BEFORE_AGENT, {})
        parts = response_parts(value) if returned else None
        if parts is not None and self.turn_ended is None:
            self.agent_says(parts, "before_agent_callback")
            self.turn_answered = "before_agent_callback"

    def run_tool(self, tool: ToolSpec, args: dict[str, Any]) -> tuple[bool, Any]:
        """Run the tool itself: (ok, response)."""
        name = tool.name
        writer = _Writer(name, Message("tool %(name)s", name=name), name)
        if tool.kind is ToolKind.OPENAPI:
            request, problems = openapi_request(tool, args, self.http_context())
            self.record_http(request, problems)
        elif tool.kind is ToolKind.MCP:
            self.mcp_calls += 1
            request, problems = mcp_request(
                tool, args, self.http_context(), request_id=self.mcp_calls
            )
            self.record_http(request, problems)
        if name in self.step_mocks:
            return True, self.step_mocks.pop(name)
        has_code = tool.kind is ToolKind.PYTHON and bool((tool.python_code or "").strip())
        mock = tool.mock
        if mock is not None and (self.scenario.use_mocks or not has_code):
            writes = tuple((key, _copy_tree(value)) for key, value in mock.state.items())
            self.apply_writes(writer, writes, ())
            return True, _copy_tree(mock.response)
        if tool.kind is ToolKind.PYTHON:
            if not has_code:
                self.step_error(
                    "SC411",
                    Message("tool %(name)s has no code and no mock: add one of them.", name=name),
                    source=name,
                    subject=name,
                )
                return False, None
            call = CodeCall(
                code=tool.python_code,
                entry=name,
                kind="tool",
                args=_copy_tree(args),
                state=_copy_tree(self.state),
                filename=f"<tool:{name}>",
                context_values=self.code_context(),
                tools=self.code_tools(),
                now=self.now,
            )
            result = self.call_code(writer, call)
            if result is None:
                return False, None
            self.used_code_mocks(result)
            return True, result.return_value
        if tool.kind is ToolKind.PLATFORM:
            return True, {}  # CX runs it (end_session, customize_response): an empty result
        self.diagnostics.append(
            Diagnostic(
                "SC407",
                _INFO,
                Message("tool %(name)s has no mock: response unknown (null).", name=name),
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

    def finish_model_loop(self) -> None:
        """ADK's loop at the end of a turn's script: while the last answer had a function
        call (a scripted call, or a callback's answer), the model is called again — its
        ``before_model`` callbacks, then the model, whose reply past the script is empty
        text — until an answer has no function call (at most MAX_UNSCRIPTED_CALLS)."""
        calls = 0
        while self.loop_pending and self.turn_ended is None and self.turn_answered is None:
            if calls >= MAX_UNSCRIPTED_CALLS:
                self.loop_stopped()
                break
            calls += 1
            self.model_call(({"text": ""},), unscripted=True)

    def end_turn(self) -> None:
        self.step_index = None  # the end of the turn (the timeline puts it after the steps)
        self.finish_model_loop()
        if self.model_done is not None and self.unused_answers:
            self.diagnostics.append(
                Diagnostic(
                    "SC420",
                    _INFO,
                    Message(
                        "The %(model_done)s answered turn %(turn)s with text in the "
                        "model's place: ADK's turn ends with that answer, so "
                        "%(unused_answers)s scripted model answer(s) of the turn were "
                        "not used.",
                        model_done=self.model_done,
                        turn=self.turn,
                        unused_answers=self.unused_answers,
                    ),
                    subject=self.agent.name,
                )
            )
        if self.turn_answered is not None:
            if self.skipped_steps:
                self.diagnostics.append(
                    Diagnostic(
                        "SC416",
                        _INFO,
                        Message(
                            "The %(turn_answered)s answered in turn %(turn)s: its "
                            "%(skipped_steps)s later step(s) and the after_agent "
                            "callbacks did not run (the runtime ends the turn with that "
                            "answer).",
                            turn_answered=self.turn_answered,
                            turn=self.turn,
                            skipped_steps=self.skipped_steps,
                        ),
                        subject=self.agent.name,
                    )
                )
        elif self.turn_ended is None:
            # After a transfer, only the agent that ends the turn runs its after_agent
            # callbacks (ADK's runner: the agent that transferred does not).
            returned, value = self.run_callbacks(CallbackKind.AFTER_AGENT, {})
            parts = response_parts(value) if returned else None
            if parts is not None and self.turn_ended is None:
                self.agent_says(parts, "after_agent_callback")  # ADK adds it as an event
        else:
            skipped = f" {self.skipped_steps} later step(s) and" if self.skipped_steps else ""
            self.diagnostics.append(
                Diagnostic(
                    "SC415",
                    _INFO,
                    Message(
                        "%(turn_ended)s raised in turn %(turn)s:%(skipped)s the "
                        "after_agent callbacks of that turn did not run (the runtime "
                        "ends the turn).",
                        turn_ended=self.turn_ended,
                        turn=self.turn,
                        skipped=skipped,
                    ),
                    subject=self.agent.name,
                )
            )
        turn = self.turn
        # The instructions of the turn's last model call count against the budget.
        self.instruction_tokens = estimate_tokens(self.latest_instructions)
        self.available = self.scenario.token_budget - self.instruction_tokens
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
                    Message(
                        "The instructions alone take about %(instruction_tokens)s "
                        "tokens, more than the budget of %(token_budget)s: no history "
                        "fits in the context window.",
                        instruction_tokens=self.instruction_tokens,
                        token_budget=self.scenario.token_budget,
                    ),
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
                    Message(
                        "the agent may forget %(name)s: its last state update dropped "
                        "out of the context window at turn %(turn)s",
                        name=name,
                        turn=turn,
                    ),
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
                state_after=_copy_tree(self.state),
                changed=tuple(changed),
                builtins=self.builtins(),
                model_input=visible,
                tokens_used=self.instruction_tokens + self.window_tokens,
                dropped=tuple(dropped),
                warnings=tuple(warnings),
                http=tuple(self.turn_http),
                instructions=self.latest_instructions,
            )
        )

    def builtins(self) -> dict[str, Any]:
        values = {f"$context.{key}": value for key, value in self.context_values().items()}
        values["$context.variables"] = _copy_tree(self.state)
        for name, value in self.state.items():
            values[f"$context.variables.{name}"] = _copy_tree(value)
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
        self.latest_instructions = instructions
        self.instruction_tokens = estimate_tokens(instructions)
        self.available = self.scenario.token_budget - self.instruction_tokens
        self.dynamic = tuple(
            dict.fromkeys(
                span.name.split(".")[0] for span in compiled.spans if span.kind == "dynamic"
            )
        )
        live_step: int | None = None  # a live run: the USER step of the turn
        for index, step in enumerate(self.scenario.steps):
            if self.turn < 0 or step.kind is StepKind.USER:
                if self.turn >= 0:
                    self.live_turn(live_step)
                    self.end_turn()
                self.step_index = index
                live_step = index if step.kind is StepKind.USER else None
                self.start_turn(step)
                if step.kind is StepKind.USER:
                    continue
            self.step_index = index
            if self.model is None:
                self.run_step(step)
            elif step.expectation is not None and step.expectation.kind is ExpectKind.MOCK:
                # Live: scripted calls and replies are expectations (agents.core.live);
                # only mocks act, before the model's calls of the turn.
                self.step_mocks[step.expectation.tool] = _copy_tree(step.expectation.value)
        if self.turn >= 0:
            self.live_turn(live_step)
            self.end_turn()
        events = tuple(
            replace(event, dropped_at_turn=self.dropped_at[event.index])
            if event.index in self.dropped_at
            else event
            for event in self.events
        )
        return SimulationResult(
            instructions=instructions,
            instruction_tokens=estimate_tokens(instructions),
            turns=tuple(self.turns),
            events=events,
            final_state=_copy_tree(self.state),
            diagnostics=tuple(self.diagnostics),
            instruction_diagnostics=tuple(compiled.diagnostics),
            model_calls=tuple(self.model_calls),
        )


def simulate(
    app: AppSpec,
    scenario: ScenarioSpec,
    *,
    run_code: CodeRunner | None = None,
    model: ModelStrategy | None = None,
) -> SimulationResult:
    """Run `scenario` against `app` (see the module docstring). Never raises for its input.

    `run_code` runs tool and callback code (the Django layer passes a sandbox adapter);
    without it, a Python tool with code but no mock is a step error. `model` makes it a
    live run: the model answers every model call (``agents.core.model``; see ``live_turn``).
    """
    agent = app.agent(scenario.agent)
    if agent is None:
        diagnostic = Diagnostic(
            "SC401",
            _ERROR,
            Message(
                "The scenario %(name)s talks to the agent %(agent)s, which "
                "does not exist in this app.",
                name=scenario.name,
                agent=scenario.agent,
            ),
            field="agent",
            subject=scenario.agent,
        )
        return SimulationResult("", 0, (), (), {}, (diagnostic,))
    return _Run(app, scenario, agent, run_code, model).run()
