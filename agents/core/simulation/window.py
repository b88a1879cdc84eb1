"""The history as the model and code see it: events as Gemini/CX contents, another agent's
events relayed as context, code's ``context.events``, and the context window that slides at
the end of each turn.
"""

from __future__ import annotations

from typing import Any

from agents.core.diagnostics import Diagnostic, Message, Severity
from agents.core.render import render_value
from agents.core.simulation.results import TRANSFER_TOOL, Event
from agents.core.simulation.state import RunState
from agents.core.simulation.values import AUTHORED, MAX_CONTENTS
from agents.core.spec import ScenarioSpec
from agents.core.tokens import estimate_tokens


def relayed(event: Event) -> str:
    """Another agent's message, call or response as the current agent reads it (ADK's
    ``_present_other_agent_message``: user text naming the agent)."""
    value = render_value(event.value if isinstance(event.value, dict) else {"result": event.value})
    if event.kind == "agent":
        return f"[{event.author}] said: {event.text}"
    if event.kind == "tool_call":
        return f"[{event.author}] called tool `{event.source}` with parameters: {value}"
    return f"[{event.author}] `{event.source}` tool returned result: {value}"


def content_of(event: Event, agent: str = "") -> dict[str, Any] | None:
    """A model-visible event as a Gemini/CX content (state updates are user text). For the
    agent `agent`, another agent's message, call or response is user text in ``<context>``
    (as ADK relays it; the marker is what CX code such as bella_notte's filters)."""
    if agent and event.author and event.author != agent and event.kind in AUTHORED:
        return {"role": "user", "parts": [{"text": f"<context>{relayed(event)}</context>"}]}
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


def _count(content: dict[str, Any], key: str) -> int:
    return sum(1 for p in content.get("parts") or () if key in p)


def function_call_order(
    contents: list[dict[str, Any]], updates: list[bool]
) -> list[dict[str, Any]]:
    """`contents` with the state updates (``updates[i]``: content i is a
    ``<state_update>``) that sit between a function call and its response (the writes the
    call made) moved right after the response:
    a function call turn is followed at once by its function responses (Gemini answers 400
    otherwise, OpenAI too for a ``tool`` message that does not follow its call), and ADK's
    contents put an event found between a call and its response after the response
    (``rearrange_events_for_async_function_responses_in_history``). A call that never got
    a response (its tool raised and ended the turn) is left out, as ADK leaves it out
    (``drop_orphaned_function_calls``: both protocols refuse a call without its
    response), and what waited after it goes at the next content; so is a response whose
    call the context window dropped."""
    out: list[dict[str, Any]] = []
    held: list[dict[str, Any]] = []
    waiting = 0  # function calls of the last call turn still without a response
    call_at = -1  # where that call turn is in `out`
    for content, update in zip(contents, updates, strict=True):
        calls = _count(content, "function_call") if content.get("role") == "model" else 0
        responses = _count(content, "function_response")
        if waiting and update:
            held.append(content)
            continue
        if waiting and responses:
            out.append(content)
            waiting = max(0, waiting - responses)
            if not waiting:
                out.extend(held)
                held.clear()
            continue
        if waiting and 0 <= call_at < len(out):
            # The call turn got no response: its calls leave, any text of it stays.
            kept = [p for p in out[call_at].get("parts") or () if "function_call" not in p]
            if kept:
                out[call_at] = {**out[call_at], "parts": kept}
            else:
                del out[call_at]
        out.extend(held)
        held.clear()
        if responses:
            # A response whose call is not before it (the context window dropped the
            # call): left out, as ADK leaves it out (`drop_orphaned_function_responses`).
            kept = [p for p in content.get("parts") or () if "function_response" not in p]
            if not kept:
                continue
            content = {**content, "parts": kept}
        call_at = len(out) if calls else -1
        out.append(content)
        waiting = calls
    out.extend(held)
    return out


def cx_events(events: list[Event], agent: str) -> list[dict[str, Any]]:
    """The history as CX session events (``callback_context.events``): the user's messages
    (author ``user``), the agent's messages, calls and responses (author: the agent, as in
    ADK). State updates are not session events."""
    out: list[dict[str, Any]] = []
    for event in events:
        content = content_of(event) if event.kind != "state_update" else None
        if content is not None:
            author = "user" if event.kind == "user" else event.author or agent
            out.append({"author": author, "content": content})
    return out


DEFAULT_TOKEN_BUDGET = ScenarioSpec.__dataclass_fields__["token_budget"].default


class Window(RunState):
    """The history window of a run."""

    def model_contents(self, *, state_updates: bool = True) -> list[dict[str, Any]]:
        """The history of the window so far as CX/Gemini contents (``{"role": "user" |
        "model", "parts": [...]}``). What the *model* reads has the ``<state_update>``
        entries where the writes happened (the seeds), except that a function call is
        always followed by its response at once, as both wire protocols require and ADK's
        contents do: the updates written during a call (its ``before_tool``/``after_tool``
        callbacks, the tool) come right after its response (``function_call_order``). What
        the *callbacks* get as ``llm_request.contents`` (``state_updates=False``) is the
        runtime's contents — messages, function calls and responses — so the user's message
        is the last content of a turn's first call, as real CX code reads it
        (``contents[-1]``)."""
        contents: list[dict[str, Any]] = []
        updates: list[bool] = []
        window = self.events[self.window_start :]
        if not self.whole_history:
            window = window[-MAX_CONTENTS:]
        # ADK's contents: the function calls of one answer are one model content, their
        # responses one content after it (the model call's index -> where they are).
        calls_at: dict[int, int] = {}
        responses_at: dict[int, int] = {}
        group: int | None = None  # the answer the last function call came from
        for event in window:
            if event.kind == "state_update" and not state_updates:
                continue
            content = content_of(event, self.agent.name)
            if content is None:
                continue
            if event.kind == "tool_call" and _count(content, "function_call"):
                group = event.model_call
                if group is not None and group in calls_at:
                    contents[calls_at[group]]["parts"].extend(content["parts"])
                    continue
                if group is not None:
                    calls_at[group] = len(contents)
            elif event.kind == "tool_response" and group is not None:
                if group in responses_at:
                    contents[responses_at[group]]["parts"].extend(content["parts"])
                    continue
                responses_at[group] = len(contents)
            contents.append(content)
            updates.append(event.kind == "state_update")
        return function_call_order(contents, updates)

    @property
    def whole_history(self) -> bool:
        """A live run sends the whole conversation, as ADK and CX do: no token window
        unless the scenario sets a budget of its own (not the default), no cut at
        ``MAX_CONTENTS``. Offline, the window slides at the scenario's budget."""
        return self.model is not None and self.scenario.token_budget == DEFAULT_TOKEN_BUDGET

    def code_context(self) -> dict[str, Any]:
        """What code's ``context`` holds: the built-ins, the agent's name and the session's
        events so far (CX's ``callback_context.events``, the newest of the window)."""
        window = self.events[self.window_start :][-MAX_CONTENTS:]
        events = cx_events(window, self.agent.name)
        root = next((a for a in self.app.agents if a.is_root), None)
        if root is not None and root.name != self.start_agent.name:
            # Every conversation starts at the root agent: a scenario of a sub-agent starts
            # after the root transferred to it, as the runtime's events show.
            call = {"name": TRANSFER_TOOL, "args": {"agent_name": self.start_agent.name}}
            content = {"role": "model", "parts": [{"function_call": call}]}
            events.insert(0, {"author": root.name, "content": content})
        return {**self.context_values(), "agent_name": self.agent.name, "events": events}

    def slide_window(self, turn: int) -> tuple[list[int], list[Diagnostic]]:
        """At the end of `turn`: the instructions of its last model call count against the
        budget; the window takes the turn's events and drops the oldest until it fits.
        Returns the events dropped and the turn's warnings (SC414 once: no history fits;
        SC413: a dynamically referenced variable's last update left the window)."""
        # The instructions of the turn's last model call count against the budget.
        self.instruction_tokens = estimate_tokens(self.latest_instructions)
        self.available = self.scenario.token_budget - self.instruction_tokens
        # Slide the window: add this turn's events, drop the oldest until it fits.
        for event in self.events[self.turn_start_event :]:
            self.window_tokens += event.tokens
        dropped: list[int] = []
        while (
            not self.whole_history
            and self.window_start < len(self.events)
            and self.window_tokens > self.available
        ):
            event = self.events[self.window_start]
            if event.model_visible:
                self.dropped_at[event.index] = turn
                dropped.append(event.index)
            self.window_tokens -= event.tokens
            self.window_start += 1
        warnings: list[Diagnostic] = []
        if self.available < 0 and not self.budget_warned and not self.whole_history:
            self.budget_warned = True
            warnings.append(
                Diagnostic(
                    "SC414",
                    Severity.WARNING,
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
                    Severity.WARNING,
                    Message(
                        "the agent may forget %(name)s: its last state update dropped "
                        "out of the context window at turn %(turn)s",
                        name=name,
                        turn=turn,
                    ),
                    subject=name,
                )
            )
        return dropped, warnings
