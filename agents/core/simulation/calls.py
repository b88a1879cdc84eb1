"""Function calls of the model's answers: the call and response events around the tool
callbacks, the tool itself (mock, code, HTTP request), and transfers between agents.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from agents.core.compile import compile_instructions
from agents.core.diagnostics import Diagnostic, Message, Severity
from agents.core.http import HttpRequest, mcp_request, openapi_request
from agents.core.render import render_value
from agents.core.rules import END_SESSION
from agents.core.simulation.callbacks import Callbacks
from agents.core.simulation.results import TRANSFER_TOOL, CodeCall
from agents.core.simulation.values import Writer, copy_tree, response_parts, static_names_of
from agents.core.spec import AgentSpec, CallbackKind, ToolKind, ToolSpec


class FunctionCalls(Callbacks):
    """A run's tool calls and transfers."""

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
        owners = [a.name for a in self.app.agents if name in a.tools] if tool else []
        if tool is not None and name not in self.agent.tools and self.model is None and owners:
            # A scripted call (a golden's toolCall in a turn the root agent answers): CX
            # never offers the tool to this agent's model, which would transfer to the
            # agent that has it first. Not an error of the app: the script leaves the
            # routing to the model (a live run shows it).
            self.step_error(
                "SC405",
                Message(
                    "tool %(tool)s is not attached to agent %(agent)s (%(owners)s has it): "
                    "in CX its model would transfer to %(owner)s before calling it; the "
                    "scripted call is skipped (a live run shows the routing).",
                    agent=self.agent.name,
                    tool=name,
                    owners=", ".join(owners),
                    owner=owners[0],
                ),
                source=name,
                subject=name,
                severity=Severity.WARNING,
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
            value=copy_tree(args),  # the call as the model made it
            label=label,
            model_call=model_call,
            instructions_changed=instructions_changed,
        )
        scope = self.begin_scope()
        skipped, response = self.run_callbacks(
            CallbackKind.BEFORE_TOOL, {"tool": name, "args": args}
        )
        if self.turn_ended is not None:
            self.roll_back(scope, Message("the call of %(name)s", name=name))
            return False
        if not skipped and tool is None:
            response = None  # ADK's transfer_to_agent returns nothing: {"result": null}
        elif not skipped:
            ok, response = self.run_tool(tool, args)
            if self.turn_ended is not None:
                self.roll_back(scope, Message("the call of %(name)s", name=name))
                return False
            if not ok:
                return False
        replaced, new_response = self.run_callbacks(
            CallbackKind.AFTER_TOOL, {"tool": name, "args": args, "tool_response": response}
        )
        if self.turn_ended is not None:
            self.roll_back(scope, Message("the call of %(name)s", name=name))
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
            self.transfer_after_calls = target  # after the answer's other calls, as ADK
        ends = tool is not None and tool.kind is ToolKind.PLATFORM and name == END_SESSION
        if ends and not skipped and self.session_ended is None:
            self.session_ended = self.turn  # CX ends the conversation after this call
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
        self.static_names = static_names_of(target.instructions)
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
        writer = Writer(name, Message("tool %(name)s", name=name), name)
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
            writes = tuple((key, copy_tree(value)) for key, value in mock.state.items())
            self.apply_writes(writer, writes, ())
            return True, copy_tree(mock.response)
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
                args=self.code_input(args),
                state=self.code_input(self.state),
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
                Severity.INFO,
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
