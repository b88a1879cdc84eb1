"""What a simulation produces: the code runner's call and result, the timeline's events, model
calls, turns and the whole result (SPEC §4; the rules are in ``agents.core.simulate``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from agents.core import codes
from agents.core.diagnostics import Diagnostic
from agents.core.http import CODES as HTTP_CODES
from agents.core.http import HttpRequest

CODES: dict[str, str] = {
    **codes.section("simulate"),
    **HTTP_CODES,
}


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
    # A model callback's changes to its ``llm_request``: ``system_instruction`` (the text the
    # model then receives) and ``hidden_tools`` (``config.hide_tool``); None when none.
    request: dict[str, Any] | None = None
    # Why a bound stopped the run at this call (a time limit, a cap, a cancel), when one
    # did: the call was not run or was cut, not by anything the code did, so what follows
    # is not the scenario's outcome (``SimulationResult.stopped``).
    stopped: str = ""
    # The runner vouches that every value here (writes, return value) is JSON data of the
    # exact types without a float (the sandbox's answer held none): the simulation then
    # skips the walks that would find nothing to say (``apply_writes``).
    plain: bool = False


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
    # current one as context: `content_of`).
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
    # What a before_model callback changed in the request, as ADK's model then receives it:
    # the system instruction ("" when unchanged: `instructions`) and the tools it hid
    # (``llm_request.config.hide_tool``: not declared to the model).
    sent_instructions: str = ""
    hidden_tools: tuple[str, ...] = ()


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
    # A bound (a time limit, a cap, a cancel) stopped the run in turn `stopped_turn`, for
    # the reason `stopped`: that turn and the later ones are not the scenario's outcome, so
    # their checks are not judged (``agents.core.evaluate``: status ``stopped``).
    stopped: str = ""
    stopped_turn: int | None = None

    def model_input_text(self, turn: int) -> str:
        """The turn's last instructions and its visible history, one event per line."""
        texts = [self.events[i].text for i in self.turns[turn].model_input]
        return "\n".join([self.turns[turn].instructions or self.instructions, *texts])
