"""Statecraft's runtime adapter: code written for CX Agent Studio runs on ADK unchanged.

Shipped inside an exported package (``<package>/statecraft_runtime/``) with the modules
beside it in ``shipped/`` (``context.py``: CX's context and the same-value rule;
``run_code.py``: tool and callback files run as CX runs them; ``answers.py``: model answers
and requests, CX's and ADK's; ``remote_tools.py``: MCP headers and names, OpenAPI session
parameters), next to a copy of Statecraft's instruction compiler (``compile.py`` and the
modules it needs) and of CX's callback objects (``cx_objects.py``). Standard library,
``google-adk`` and ``google-genai`` only: no Django, no Statecraft.

What it does (the package's README says what differs from CX):

- **Code**: each tool and callback file is executed as CX runs it, with CX's globals:
  ``context`` (the current tool or callback context), ``tools.<name>(...)`` (another Python
  tool of the app; ``.json()`` gives ``{"result": ...}``), ``LlmResponse``, ``Part``,
  ``Content``, ``FunctionCall``, ``FunctionResponse``, ``Blob``, ``GenerateContentConfig``,
  ``LlmRequest``, ``Tool``, ``CallbackContext``, ``ToolContext``.
- **Tools**: a Python tool becomes a ``FunctionTool`` with the function's own name,
  docstring and signature (less ``context``/``tool_context``/``callback_context``); an
  OpenAPI tool ADK's ``RestApiTool`` under the app's name, its ``x-ces-session-context``
  parameters filled from the session (``App.openapi_tool``); an MCP toolset's tool renamed
  as the app calls it (``Named``).
- **Callbacks**: one ADK callback per kind runs the app's callbacks of that kind in order
  until one returns a value (a non-None one for tool callbacks, a truthy one otherwise), as
  CX does; CX's signatures (``before_tool_callback(tool, input, callback_context)``…) and
  ADK's both work; a returned ``LlmResponse``/``Content``/``Part`` becomes ADK's.
- **Instructions**: an instruction provider compiles ``{{static}}`` and ``{% if %}`` from the
  session state before every model call; ``{dynamic}`` stays as written.
- **State updates**: before every model call the history the model receives is rebuilt from
  the session's events with one ``<state_update>name: value</state_update>`` user message
  per change of a declared variable, where the change happened (a function call's writes
  right after its response: nothing comes between a call and its response); model
  callbacks read it
  without those entries (the runtime's contents: the user's message last), and another
  agent's events are user text in ``<context>``, as Statecraft's simulation has them.
- **Defaults**: the first ``before_agent`` callback of a session writes the declared
  defaults of the variables the session does not set.
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from google.adk.models.llm_response import LlmResponse as AdkLlmResponse
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from . import cx_objects as cx
from .answers import _genai_content, apply_request, cx_request, response_parts
from .compile import compile_instructions
from .context import (
    _CURRENT,
    CHANNEL_KEY,
    CONTEXT_PARAMS,
    MODALITY_KEY,
    SESSION_KEY,
    CxContext,
    _plain,
    _relayed,
    same_value,
    state_update_text,
)
from .remote_tools import (
    PRIVATE_NETWORK_ENV,
    Named,
    _session_rest_api_tool,
    header_provider,
    session_parameters,
)
from .run_code import _callback_kwargs, _Code, _declared, _tool_kwargs, _with_context

# What the exported agent.py imports from here (``agents.core.adk.package``), and the rule
# the tests compare with the simulation's.
__all__ = ["App", "Named", "header_provider", "same_value"]


# --------------------------------------------------------------------------- the app


class App:
    """One exported app: where its files are, its declared variables and their defaults,
    and the Python tools ``tools.<name>(...)`` may call."""

    def __init__(self, folder: Path, variables_file: str = "variables.json") -> None:
        self.folder = Path(folder)
        declared = json.loads((self.folder / variables_file).read_text(encoding="utf-8"))
        self.declared = {v["name"] for v in declared}
        self.defaults = {v["name"]: v["default"] for v in declared if v["default"] is not None}
        self.codes: dict[str, _Code] = {}
        self.tool_proxy = _Tools(self)

    # ------------------------------------------------------------------ loading code

    def code(self, path: str, entry: str) -> _Code:
        """The function `entry` of the file, run as CX runs code (``_Code``)."""
        return _Code(self, path, entry)

    def load(self, path: str, entry: str) -> Callable[..., Any]:
        """The function `entry` of the file, executed once with CX's globals."""
        return self.code(path, entry).fresh()

    def call_tool(self, name: str, args: dict[str, Any]) -> Any:
        """``tools.<name>(args)``: the tool's function with the current context."""
        func = self.codes[name].current()
        context = _CURRENT.get()
        return func(**_tool_kwargs(func, args, context))

    # ------------------------------------------------------------------ tools

    def python_tool(self, name: str, path: str) -> FunctionTool:
        """The tool's ``FunctionTool``, declared from the file's source (its AST): the file
        runs at the first call, never at import (``_declared``)."""
        code = self.code(path, name)
        self.codes[name] = code
        func = _declared(code)
        signature = inspect.signature(func)
        params = [p for p in signature.parameters.values() if p.name not in CONTEXT_PARAMS]
        extra = inspect.Parameter(
            "tool_context", inspect.Parameter.KEYWORD_ONLY, annotation=ToolContext
        )
        at = next((i for i, p in enumerate(params) if p.kind is p.VAR_KEYWORD), len(params))
        params.insert(at, extra)

        def run(**kwargs: Any) -> Any:
            context = CxContext(kwargs.pop("tool_context"))

            def call() -> Any:
                now = code.current()
                return now(**_tool_kwargs(now, kwargs, context))

            return _with_context(context, call)

        functools.update_wrapper(run, func)
        run.__name__ = name
        run.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        run.__annotations__ = {
            k: v for k, v in getattr(func, "__annotations__", {}).items() if k not in CONTEXT_PARAMS
        }
        run.__annotations__["tool_context"] = ToolContext
        return FunctionTool(run)

    def fixed_tool(
        self,
        name: str,
        description: str,
        response: Any = None,
        state: dict | None = None,
        ends_session: bool = False,
    ) -> FunctionTool:
        """A tool without code: its mock (state writes, response), or a CX platform tool
        (``end_session``…) that answers ``{}``. `ends_session` (CX's ``end_session``):
        the invocation ends after the call, as CX ends the conversation — ADK calls the
        model no more (``end_invocation``)."""
        writes = dict(state or {})

        def run(tool_context: ToolContext, **kwargs: Any) -> Any:
            for key, value in writes.items():
                tool_context.state[key] = copy.deepcopy(value)
            if ends_session:
                tool_context._invocation_context.end_invocation = True
            return copy.deepcopy(response)

        run.__name__ = name
        run.__doc__ = description or name
        return FunctionTool(run)

    def openapi_tool(self, name: str, path: str) -> Any:
        """An OpenAPI tool as CX calls it: its one operation as ADK's ``RestApiTool`` named
        as the app names the tool (not ADK's snake_case of the operationId); the
        ``x-ces-session-context`` query and header parameters left out of what the model is
        shown and filled from the session at call time (left out when the value does not
        exist). ADK refuses private and loopback hosts unless the environment variable
        ``STATECRAFT_ADK_ALLOW_PRIVATE_NETWORK`` is ``1``."""
        from google.adk.tools.openapi_tool.openapi_spec_parser.openapi_spec_parser import (
            OpenApiSpecParser,
        )

        document = json.loads((self.folder / path).read_text(encoding="utf-8"))
        stripped, session = session_parameters(document)
        headers = [(n, "template", t) for n, where, t in session if where == "header"]
        options: dict[str, Any] = {}
        if headers:
            options["header_provider"] = header_provider(headers)
        if os.environ.get(PRIVATE_NETWORK_ENV) == "1":
            options["allow_private_network_access"] = True
        (operation, *_) = OpenApiSpecParser().parse(stripped)
        tool = _session_rest_api_tool().from_parsed_operation(operation, **options)
        tool.name = name
        tool.session_query = tuple((n, t) for n, where, t in session if where == "query")
        return tool

    # ------------------------------------------------------------------ instructions

    def instruction(self, path: str) -> Callable[[Any], str]:
        """An instruction provider: the agent's instructions compiled from the session
        state before each model call (``{dynamic}`` stays; ADK does not substitute it)."""
        text = (self.folder / path).read_text(encoding="utf-8")

        def provide(readonly_context: Any) -> str:
            state = dict(readonly_context.state)
            channel = state.get(CHANNEL_KEY) or "web"
            modality = state.get(MODALITY_KEY) or "text"
            return compile_instructions(text, state, channel=channel, modality=modality).text

        return provide

    # ------------------------------------------------------------------ the session

    def start_session(self, callback_context: Any) -> None:
        """Once per session: the declared defaults of the variables the session does not
        set, and which of the session's values differ from them (their state updates open
        the history)."""
        state = callback_context.state
        if SESSION_KEY in state:
            return
        given = {
            name: value
            for name, value in state.to_dict().items()
            if name in self.declared and not same_value(value, self.defaults.get(name))
        }
        for name, value in self.defaults.items():
            if name not in state:
                state[name] = copy.deepcopy(value)
        state[SESSION_KEY] = given

    def history(
        self, session: Any, agent: str = "", *, state_updates: bool = True
    ) -> list[types.Content]:
        """The contents the model receives: the session's events, each preceded by a
        ``<state_update>`` per declared variable its state delta changed — a function
        response event followed by them (the writes of the call: nothing may come between
        a function call and its response). Without
        `state_updates`, the runtime's contents a model callback reads as
        ``llm_request.contents`` (messages, calls and responses: the user's message is the
        last content of a turn's first call, as CX code reads it). For the agent `agent`,
        another agent's message, call or response is user text in ``<context>`` (as
        Statecraft's simulation relays it, the marker CX code such as Bella Notte's
        filters)."""
        running = copy.deepcopy(self.defaults)
        out: list[types.Content] = []

        def update(name: str, value: Any) -> None:
            if name not in self.declared or same_value(running.get(name), value):
                return
            if value is None:
                running.pop(name, None)
            else:
                running[name] = value
            if state_updates:
                text = state_update_text(name, value)
                out.append(types.Content(role="user", parts=[types.Part(text=text)]))

        events = list(getattr(session, "events", None) or ())
        # A call that never got a response (its tool raised and ended the invocation) is
        # left out, as ADK's contents leave it out (`drop_orphaned_function_calls`): the
        # model's protocol refuses a call without its response.
        answered = {
            part.function_response.id
            for event in events
            for part in ((event.content.parts if event.content else None) or ())
            if part.function_response is not None
        }
        for event in events:
            given = (event.actions.state_delta or {}).get(SESSION_KEY)
            if isinstance(given, dict):
                for name, value in given.items():
                    update(name, value)
                break
        for event in events:
            delta = event.actions.state_delta or {}
            content = event.content
            if content is None or not content.parts or event.partial:
                for name, value in delta.items():
                    update(name, value)
                continue
            own = not (agent and event.author not in ("user", agent))
            # The writes of a function call (its tool callbacks, the tool: ADK commits them
            # with the function response event) come right after the response: a function
            # call turn is followed at once by its responses, as Gemini and OpenAI require
            # and ADK's contents have it; any other event's writes come before it.
            after = own and any(p.function_response is not None for p in content.parts)
            if not after:
                for name, value in delta.items():
                    update(name, value)
            if not own:
                for part in content.parts:
                    text = _relayed(event.author, part)
                    if text is not None:
                        relayed = types.Part(text=f"<context>{text}</context>")
                        out.append(types.Content(role="user", parts=[relayed]))
                continue
            copied = content.model_copy(deep=True)
            copied.role = copied.role or ("user" if event.author == "user" else "model")
            copied.parts = [
                part
                for part in copied.parts or ()
                if part.function_call is None
                or not part.function_call.id
                or part.function_call.id in answered
            ]
            if not copied.parts:
                continue
            for part in copied.parts:
                if part.function_call is not None:
                    part.function_call.id = None
                if part.function_response is not None:
                    part.function_response.id = None
            out.append(copied)
            if after:
                for name, value in delta.items():
                    update(name, value)
        return out

    # ------------------------------------------------------------------ callbacks

    def callbacks(self, kind: str, paths: list[str]) -> Callable | None:
        """One ADK callback running the app's callbacks of `kind` in order (CX's chain)."""
        entry = f"{kind}_callback"
        funcs = [self.code(path, entry) for path in paths]
        stops: Callable[[Any], bool] = (lambda v: v is not None) if kind.endswith("_tool") else bool

        def chain(context: CxContext, given: dict[str, Any]) -> tuple[bool, Any]:
            for code in funcs:

                def call(code: _Code = code) -> Any:
                    func = code.current()
                    return func(**_callback_kwargs(func, given, context))

                value = _with_context(context, call)
                value = cx.to_plain(value)
                if stops(value):
                    return True, value
            return False, None

        if kind in ("before_agent", "after_agent"):

            def agent_callback(callback_context: Any) -> types.Content | None:
                if kind == "before_agent":
                    self.start_session(callback_context)
                returned, value = chain(CxContext(callback_context), {})
                parts = response_parts(value) if returned else None
                return _genai_content(parts) if parts is not None else None

            return agent_callback if funcs or kind == "before_agent" else None

        if kind == "before_model":

            def before_model(callback_context: Any, llm_request: Any) -> AdkLlmResponse | None:
                session = callback_context.session
                agent = callback_context.agent_name
                if not funcs:
                    llm_request.contents = self.history(session, agent)
                    return None
                # The callbacks read the runtime's contents; the model the history with
                # the state updates (a callback's edits of the contents do not reach the
                # model, as in Statecraft's simulation: `apply_request`).
                llm_request.contents = self.history(session, agent, state_updates=False)
                request = cx_request(llm_request)
                returned, value = chain(CxContext(callback_context), {"llm_request": request})
                llm_request.contents = self.history(session, agent)
                apply_request(request, llm_request)
                parts = response_parts(value) if returned else None
                if parts is None:
                    return None
                return AdkLlmResponse(content=_genai_content(parts))

            return before_model

        if not funcs:
            return None

        if kind == "after_model":

            def after_model(callback_context: Any, llm_response: Any) -> AdkLlmResponse | None:
                content = _plain(llm_response.content) if llm_response.content else {}
                response = cx.LlmResponse(content=cx.content_from(content))
                returned, value = chain(CxContext(callback_context), {"llm_response": response})
                parts = response_parts(value) if returned else None
                if parts is None:
                    return None
                return AdkLlmResponse(content=_genai_content(parts))

            return after_model

        def tool_callback(tool: Any, args: dict[str, Any], tool_context: Any, **rest: Any) -> Any:
            given = {"tool": cx.Tool(name=tool.name, description=""), "args": args, **rest}
            returned, value = chain(CxContext(tool_context), given)
            return value if returned else None

        return tool_callback


class _Tools:
    """``tools.<name>(args)``: another Python tool of the app, with the current context."""

    def __init__(self, app: App) -> None:
        self._app = app

    def __getattr__(self, name: str) -> Callable[..., cx.ToolResponse]:
        if name.startswith("_") or name not in self._app.codes:
            raise AttributeError(f"the app has no Python tool named {name!r}")

        def call(args: dict[str, Any] | None = None, **kwargs: Any) -> cx.ToolResponse:
            arguments = dict(args or {})
            arguments.update(kwargs)
            return cx.ToolResponse(self._app.call_tool(name, arguments))

        return call

    def __repr__(self) -> str:
        return f"<tools: {', '.join(sorted(self._app.codes))}>"
