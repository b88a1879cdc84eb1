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
  ``<state_update>`` event is added at the moment of its write (the timeline shows the
  tool's updates before its response), but what the model reads puts the updates written
  during a function call right after its response (``Window.model_contents``): nothing
  comes between a function call and its response, as Gemini and OpenAI require. OpenAPI
  and MCP calls also record the HTTP request they would send (``agents.core.http``),
  built with the state at call time.
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

Where the code is
-----------------
This module holds the rules above and the entry point; the run is built in
``agents.core.simulation`` as layers, each a subclass of the one before:
``state.RunState`` (the state, the event timeline, writes and all-or-none scopes),
``window.Window`` (contents, ``context.events``, the window's slide), ``callbacks.Callbacks``
(the code runner, callbacks of a kind), ``calls.FunctionCalls`` (tool calls, transfers),
``model_calls.ModelCalls`` (model calls and ADK's loop) and ``run.Run`` (turns, the
session). ``results`` holds what a run produces, ``values`` the small pure helpers.
"""

from __future__ import annotations

from agents.core import limits
from agents.core.diagnostics import Diagnostic, Message, Severity
from agents.core.http import HttpRequest
from agents.core.model import ModelStrategy
from agents.core.simulation.results import (
    CODES,
    MODEL_VISIBLE,
    TRANSFER_TOOL,
    CodeCall,
    CodeResult,
    CodeRunner,
    Event,
    EventKind,
    ModelCall,
    SimulationResult,
    TurnResult,
)
from agents.core.simulation.run import Run
from agents.core.simulation.values import (
    MAX_UNSCRIPTED_CALLS,
    no_parameter_arguments,
    response_parts,
    same_value,
    state_update_text,
    valid_now,
)
from agents.core.spec import AppSpec, ScenarioSpec

__all__ = [
    "CODES",
    "MAX_UNSCRIPTED_CALLS",
    "MODEL_VISIBLE",
    "TRANSFER_TOOL",
    "CodeCall",
    "CodeResult",
    "CodeRunner",
    "Event",
    "EventKind",
    "HttpRequest",
    "ModelCall",
    "SimulationResult",
    "TurnResult",
    "no_parameter_arguments",
    "response_parts",
    "same_value",
    "simulate",
    "state_update_text",
    "valid_now",
]


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
            Severity.ERROR,
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
    deep = limits.scenario_too_deep(scenario)
    if deep is not None:  # saved before the limit: the run would exhaust the recursion
        return SimulationResult(
            "", 0, (), (), {}, (limits.scenario_too_deep_error(scenario, deep),)
        )
    return Run(app, scenario, agent, run_code, model).run()
