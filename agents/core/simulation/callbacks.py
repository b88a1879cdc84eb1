"""Running code: the injected code runner for tools and callbacks, CX's ``tools.<name>()`` from
code, and the callbacks of one kind in order until one returns a value.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from agents.core.diagnostics import Message
from agents.core.render import render_value
from agents.core.simulation.results import CodeCall, CodeResult
from agents.core.simulation.values import (
    TOOL_CALLBACKS,
    Writer,
    copy_tree,
    ordered_callbacks,
    stops_on_none,
)
from agents.core.simulation.window import Window
from agents.core.spec import CallbackKind, ToolKind


class Callbacks(Window):
    """Tool and callback code of a run."""

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

    def code_input(self, value: Any) -> Any:
        """What a code call receives of the run's `value`: a private copy, since a runner may
        change what it is given, unless the runner says it only reads (``reads_only``: the
        sandbox's sends it as JSON), where the copy of a 50 KB state at every call was the
        engine's largest cost (docs/benchmarks/evaluate.md)."""
        if getattr(self.run_code, "reads_only", False):
            return value
        return copy_tree(value)

    def used_code_mocks(self, result: CodeResult) -> None:
        """A golden ``mock`` answers the next call of its tool, a call from code too."""
        for name, returned in result.tool_calls:
            tool = self.app.tool(name)
            if returned and tool is not None and tool.kind is not ToolKind.PYTHON:
                self.step_mocks.pop(name, None)

    def call_code(self, writer: Writer, call: CodeCall) -> CodeResult | None:
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
        if result.stopped and self.stopped is None:
            self.stopped = (max(self.turn, 0), result.stopped)
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
        self.apply_writes(
            writer,
            tuple(result.writes),
            tuple(result.removed),
            keep_undeclared=True,
            plain=result.plain,
        )
        return result

    def run_callbacks(self, kind: CallbackKind, args: Mapping[str, Any]) -> tuple[bool, Any]:
        """Run the agent's callbacks of `kind` in order until one returns a value (ADK's
        pipeline: a non-None value for tool callbacks, a truthy one for the others); return
        (whether one did, the value). Stops when code raised (`turn_ended`)."""
        callbacks = ordered_callbacks(self.agent.callbacks, kind)
        entry = f"{kind.value}_callback"
        stops = stops_on_none if kind in TOOL_CALLBACKS else bool
        for position, callback in enumerate(callbacks, start=1):
            if self.turn_ended is not None:
                break
            if not callback.code.strip():
                continue  # an empty callback does nothing
            source = entry if len(callbacks) == 1 else f"{entry} #{position}"
            writer = Writer(
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
                args=self.code_input(dict(args)),
                state=self.code_input(self.state),
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
                given.update(copy_tree(result.args))
            request = args.get("llm_request")
            if result is not None and result.request and isinstance(request, dict):
                # ADK hands the same LlmRequest to the model callbacks and the model: a
                # callback's new system instruction and hidden tools reach both.
                config = request.setdefault("config", {})
                if isinstance(result.request.get("system_instruction"), str):
                    config["system_instruction"] = result.request["system_instruction"]
                hidden = list(config.get("hidden_tools") or ())
                for name in result.request.get("hidden_tools") or ():
                    if name not in hidden:
                        hidden.append(name)
                config["hidden_tools"] = hidden
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
