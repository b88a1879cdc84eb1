"""Statecraft's runtime adapter: code written for CX Agent Studio runs on ADK unchanged.

Shipped inside an exported package (``<package>/statecraft_runtime/``), next to a copy of
Statecraft's instruction compiler (``compile.py`` and the modules it needs) and of CX's
callback objects (``cx_objects.py``). Standard library, ``google-adk`` and ``google-genai``
only: no Django, no Statecraft.

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

import ast
import builtins
import contextvars
import copy
import functools
import inspect
import json
import math
import os
import re
import sys
import types as types_module
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from google.adk.models.llm_response import LlmResponse as AdkLlmResponse
from google.adk.tools.base_toolset import BaseToolset
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from . import cx_objects as cx
from .compile import compile_instructions
from .render import render_value

CONTEXT_PARAMS = ("context", "tool_context", "callback_context")
# Session keys the adapter keeps (never shown to the model).
SESSION_KEY = "_statecraft_session"  # the session's values that differ from the defaults
CHANNEL_KEY = "_statecraft_channel"
MODALITY_KEY = "_statecraft_modality"

_CURRENT: contextvars.ContextVar[CxContext | None] = contextvars.ContextVar(
    "statecraft_cx_context", default=None
)


# The types whose == is the same-value rule (the simulation's values._EXACT).
_EXACT = frozenset({str, int, bool, type(None)})


def same_value(a: Any, b: Any) -> bool:
    """Whether writing `b` over `a` changes nothing (Statecraft's rule)."""
    if a is b:  # a value is the same as itself (NaN too: two NaNs are the same value)
        return True
    kind = type(a)
    if kind is dict and type(b) is dict:  # the JSON types first: no ABC check per node
        if a.keys() != b.keys():
            return False
        for key in a:  # noqa: SIM110 - a loop: no generator frame per node
            if not same_value(a[key], b[key]):
                return False
        return True
    if kind is type(b) and kind in _EXACT:
        return a == b
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


# --------------------------------------------------------------------------- CX's context


class CxState:
    """``context.state`` / ``context.variables`` over ADK's state: CX's dict-like view
    (``del``, ``pop`` and ``remove_variable`` leave the variable without a value: None)."""

    def __init__(self, state: Any) -> None:
        self._state = state

    def __getitem__(self, name: str) -> Any:
        return self._state[name]

    def __setitem__(self, name: str, value: Any) -> None:
        self._state[name] = value

    def __delitem__(self, name: str) -> None:
        if name not in self._state:
            raise KeyError(name)
        self._state[name] = None

    def __contains__(self, name: object) -> bool:
        return name in self._state

    def __iter__(self):
        return iter(list(self._state.to_dict()))

    def __len__(self) -> int:
        return len(self._state.to_dict())

    def __repr__(self) -> str:
        return f"State({self._state.to_dict()!r})"

    def get(self, name: str, default: Any = None) -> Any:
        return self._state.get(name, default)

    def keys(self) -> list[str]:
        return list(self._state.to_dict().keys())

    def values(self) -> list[Any]:
        return list(self._state.to_dict().values())

    def items(self) -> list[tuple[str, Any]]:
        return list(self._state.to_dict().items())

    def to_dict(self) -> dict[str, Any]:
        return self._state.to_dict()

    def update(self, other: Any = (), **kwargs: Any) -> None:
        for name, value in dict(other, **kwargs).items():
            self._state[name] = value

    def setdefault(self, name: str, default: Any = None) -> Any:
        if name not in self._state:
            self._state[name] = default
        return self._state[name]

    def pop(self, name: str, *default: Any) -> Any:
        if name not in self._state:
            if default:
                return default[0]
            raise KeyError(name)
        value = self._state[name]
        self._state[name] = None
        return value


def _plain(value: Any) -> Any:
    """A genai/ADK pydantic object as JSON (snake_case keys), anything else as is."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json", exclude_none=True)
    return value


def _relayed(author: str, part: Any) -> str | None:
    """Another agent's message, call or response as the current agent reads it (ADK's
    ``[agent] said: …``; Statecraft's simulation words it the same way); None for a part
    with nothing to say (an inline payload)."""
    if part.text:
        return f"[{author}] said: {part.text}"
    call = part.function_call
    if call is not None:
        return (
            f"[{author}] called tool `{call.name}` with parameters: {render_value(call.args or {})}"
        )
    response = part.function_response
    if response is not None:
        value = response.response if isinstance(response.response, dict) else {"result": None}
        return f"[{author}] `{response.name}` tool returned result: {render_value(value)}"
    return None


def _cx_events(session: Any) -> list[cx.Event]:
    out = []
    for number, event in enumerate(getattr(session, "events", None) or ()):
        content = getattr(event, "content", None)
        if content is None or not content.parts or getattr(event, "partial", False):
            continue
        author = event.author
        role = "user" if author == "user" else "model"
        out.append(
            cx.Event(
                id=event.id or f"e-{number}",
                author=author,
                invocation_id=event.invocation_id,
                content=cx.content_from(_plain(content), role),
            )
        )
    return out


class CxContext:
    """The global ``context`` (also passed as ``callback_context`` / ``tool_context``):
    CX's context over ADK's ``ToolContext``/``CallbackContext`` (anything else is ADK's)."""

    def __init__(self, adk_context: Any) -> None:
        self._adk = adk_context
        self.state = CxState(adk_context.state)
        self.variables = self.state
        self.agent_name = getattr(adk_context, "agent_name", "")
        self.invocation_id = getattr(adk_context, "invocation_id", "")
        session = getattr(adk_context, "session", None)
        self.session_id = getattr(session, "id", "")
        self.app_id = getattr(session, "app_name", "")
        self.events = _cx_events(session)
        user = getattr(adk_context, "user_content", None)
        self.user_content = cx.content_from(_plain(user), "user") if user is not None else None
        self.function_call_id = getattr(adk_context, "function_call_id", None)
        self.language_code = ""
        self.streaming_stage = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._adk, name)

    def get_last_user_input(self) -> list[cx.Part]:
        return cx.last_parts(self.events, True)

    def get_last_agent_output(self) -> list[cx.Part]:
        return cx.last_parts(self.events, False)

    def parts(self) -> list[cx.Part]:
        return [part for event in self.events for part in event.parts()]

    def get_variable(self, name: str, default: Any = None) -> Any:
        return self.state.get(name, default)

    def set_variable(self, name: str, value: Any) -> None:
        self.state[name] = value

    def remove_variable(self, name: str) -> None:
        self.state[name] = None

    def __repr__(self) -> str:
        return "<context>"


class _ContextProxy:
    """The module-level ``context`` of tool and callback code: the context of the call that
    is running now."""

    def _current(self) -> CxContext:
        current = _CURRENT.get()
        if current is None:
            raise RuntimeError("`context` is only available while a tool or callback runs")
        return current

    def __getattr__(self, name: str) -> Any:
        return getattr(self._current(), name)

    def __repr__(self) -> str:
        return "<context>"


CONTEXT = _ContextProxy()
# The files executed for the call that is running (each call runs the code afresh).
_LOADED: contextvars.ContextVar[dict[str, Callable[..., Any]] | None] = contextvars.ContextVar(
    "statecraft_loaded", default=None
)


class _Code:
    """A tool or callback file, compiled once and executed afresh for every call (with
    CX's globals, in a module of its own), as CX and Statecraft's sandbox run code: module
    globals do not outlive the call; a tool called through ``tools.<name>()`` during the
    call is executed once for that call."""

    def __init__(self, app: App, path: str, entry: str) -> None:
        self.app = app
        self.path = path
        self.entry = entry
        self.file = app.folder / path
        self.compiled = compile(self.file.read_text(encoding="utf-8"), str(self.file), "exec")

    def fresh(self) -> Callable[..., Any]:
        # A module of its own (dataclasses look the module up by name).
        name = "statecraft_code." + self.path.removesuffix(".py").replace("/", ".")
        module = types_module.ModuleType(name)
        sys.modules[name] = module
        namespace = module.__dict__
        namespace.update(
            {
                "__file__": str(self.file),
                "context": CONTEXT,
                "tools": self.app.tool_proxy,
                **cx.GLOBALS,
                "CallbackContext": CxContext,
                "ToolContext": CxContext,
            }
        )
        exec(self.compiled, namespace)
        func = namespace.get(self.entry)
        if not callable(func):
            raise NameError(f"{self.path} defines no function {self.entry!r}")
        return func

    def current(self) -> Callable[..., Any]:
        loaded = _LOADED.get()
        if loaded is None:
            return self.fresh()
        if self.path not in loaded:
            loaded[self.path] = self.fresh()
        return loaded[self.path]


# The names an annotation may use when the tool is declared without running its file.
_ANNOTATION_NAMES: dict[str, Any] = {
    **{n: getattr(builtins, n) for n in dir(builtins) if isinstance(getattr(builtins, n), type)},
    **{n: getattr(typing, n) for n in typing.__all__},
    "typing": typing,
    "None": None,
}
_ANNOTATION_NODES = (
    ast.Expression,
    ast.Name,
    ast.Load,
    ast.Attribute,
    ast.Subscript,
    ast.Tuple,
    ast.List,
    ast.Constant,
    ast.BinOp,
    ast.BitOr,
)


def _annotation(node: ast.expr | None) -> Any:
    """An annotation's value from its source, without running the file: builtin types and
    ``typing``'s names combined by ``[]``, ``|`` and constants; anything else (a class the
    file defines, a call) is left out (``inspect.Parameter.empty``)."""
    if node is None:
        return inspect.Parameter.empty
    if isinstance(node, ast.Constant) and isinstance(node.value, str):  # "int" (postponed)
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return inspect.Parameter.empty
    tree = ast.Expression(body=node)
    for part in ast.walk(tree):
        if not isinstance(part, _ANNOTATION_NODES):
            return inspect.Parameter.empty
        if isinstance(part, ast.Attribute) and part.attr.startswith("_"):
            return inspect.Parameter.empty
        if isinstance(part, ast.Name) and part.id not in _ANNOTATION_NAMES:
            return inspect.Parameter.empty
        if isinstance(part, ast.BinOp) and not isinstance(part.op, ast.BitOr):
            return inspect.Parameter.empty
    try:
        return eval(compile(tree, "<annotation>", "eval"), {"__builtins__": {}}, _ANNOTATION_NAMES)
    except Exception:  # an annotation that does not evaluate is left out
        return inspect.Parameter.empty


def _default(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None  # not a literal: the declaration says only that the parameter is optional


def _declared(code: _Code) -> Callable[..., Any]:
    """A stand-in of the file's function `code.entry` for ADK's declaration, read from the
    file's AST without running it: the same name, docstring, parameters, literal defaults
    and plain annotations (the file itself runs at each call, as the README says)."""
    tree = ast.parse(code.file.read_text(encoding="utf-8"), str(code.file))
    found = [
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == code.entry
    ]
    if not found:
        raise NameError(f"{code.path} defines no function {code.entry!r}")
    node = found[-1]  # the last definition wins, as when the file runs
    doc = ast.get_docstring(node, clean=False)
    # The def alone (no decorators, defaults or annotations: nothing of the file runs) gives
    # the function's own name, parameter kinds and docstring (as the compiler cleans it).
    args = node.args
    bare = ast.arguments(
        posonlyargs=[ast.arg(a.arg) for a in args.posonlyargs],
        args=[ast.arg(a.arg) for a in args.args],
        vararg=ast.arg(args.vararg.arg) if args.vararg else None,
        kwonlyargs=[ast.arg(a.arg) for a in args.kwonlyargs],
        kw_defaults=[None for _ in args.kwonlyargs],
        kwarg=ast.arg(args.kwarg.arg) if args.kwarg else None,
        defaults=[],
    )
    body: list[ast.stmt] = [ast.Expr(ast.Constant(doc))] if doc is not None else []
    stub = ast.Module(
        body=[ast.FunctionDef(node.name, bare, [*body, ast.Pass()], [], None, None, [])],
        type_ignores=[],
    )
    namespace: dict[str, Any] = {"__name__": "statecraft_code." + code.path.removesuffix(".py")}
    exec(compile(ast.fix_missing_locations(stub), str(code.file), "exec"), namespace)
    func = namespace[node.name]
    positional = [*args.posonlyargs, *args.args]
    defaults = dict(zip([a.arg for a in positional[::-1]], args.defaults[::-1], strict=False))
    params = []
    kinds = (
        [(a, inspect.Parameter.POSITIONAL_ONLY) for a in args.posonlyargs]
        + [(a, inspect.Parameter.POSITIONAL_OR_KEYWORD) for a in args.args]
        + ([(args.vararg, inspect.Parameter.VAR_POSITIONAL)] if args.vararg else [])
        + [(a, inspect.Parameter.KEYWORD_ONLY) for a in args.kwonlyargs]
        + ([(args.kwarg, inspect.Parameter.VAR_KEYWORD)] if args.kwarg else [])
    )
    kw_defaults = {a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)}
    annotations: dict[str, Any] = {}
    for arg, kind in kinds:
        default_node = (
            defaults.get(arg.arg)
            if kind is not inspect.Parameter.KEYWORD_ONLY
            else (kw_defaults.get(arg.arg))
        )
        default = inspect.Parameter.empty if default_node is None else _default(default_node)
        annotation = _annotation(arg.annotation)
        if annotation is not inspect.Parameter.empty:
            annotations[arg.arg] = annotation
        params.append(inspect.Parameter(arg.arg, kind, default=default, annotation=annotation))
    returns = _annotation(node.returns)
    if returns is not inspect.Parameter.empty:
        annotations["return"] = returns
    func.__signature__ = inspect.Signature(params, return_annotation=returns)
    func.__annotations__ = annotations
    return func


def _detach(state: Any) -> None:
    """Give the code its own copies of the session's dicts and lists: ADK's session state
    holds the very objects of the events' state deltas, so a change in place would also
    rewrite the history (the ``<state_update>`` the model was shown). Not a write."""
    value = getattr(state, "_value", None)
    delta = getattr(state, "_delta", None)
    if not isinstance(value, dict) or not isinstance(delta, dict):
        return
    for name, item in list(value.items()):
        if isinstance(item, dict | list) and name not in delta:
            value[name] = copy.deepcopy(item)


def _with_context(context: CxContext, run: Callable[[], Any]) -> Any:
    """Run code with `context` as its ``context``. A value the code changed in place (``sm =
    context.state["sm"]; sm["filled"].update(...)``) is written back after it returns, as
    CX's runtime (and Statecraft) count it: the state holds the same object."""
    state = context.state._state
    _detach(state)
    before = copy.deepcopy(state.to_dict())
    outer = _CURRENT.get() is None
    token = _CURRENT.set(context)
    loaded = _LOADED.set({}) if outer else None
    try:
        value = run()
    finally:
        _CURRENT.reset(token)
        if loaded is not None:
            _LOADED.reset(loaded)
    for name, now in state.to_dict().items():
        if name in before and not same_value(before[name], now):
            state[name] = now
    return value


# --------------------------------------------------------------------------- arguments


def _callback_kwargs(
    func: Callable[..., Any], given: dict[str, Any], context: CxContext
) -> dict[str, Any]:
    """CX's and ADK's callback signatures from ADK's arguments (as Statecraft's sandbox
    passes them): ``input``/``tool_input`` are the tool's arguments, ``tool`` a ``Tool`` with
    ``.name``; parameters the call does not supply get None."""
    params = list(inspect.signature(func).parameters.values())
    names = [p.name for p in params]
    accepts_any = any(p.kind is p.VAR_KEYWORD for p in params)
    out = dict(given)
    for name in ("tool_context", "callback_context"):
        if name in names:
            out[name] = context
    for alias in ("input", "tool_input"):
        if alias in names and alias not in out:
            # The very dict ADK hands the tool (also when empty): a change in place reaches it.
            args = given.get("args")
            out[alias] = args if args is not None else {}
    if not accepts_any:
        out = {k: v for k, v in out.items() if k in names}
    for p in params:
        if p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            out.setdefault(p.name, None)
    return out


def _tool_kwargs(func: Callable[..., Any], args: dict[str, Any], context: CxContext) -> dict:
    kwargs = dict(args)
    names = inspect.signature(func).parameters
    for name in CONTEXT_PARAMS:
        if name in names and name not in kwargs:
            kwargs[name] = context
    return kwargs


# --------------------------------------------------------------------------- answers


def response_parts(value: Any) -> list[dict[str, Any]] | None:
    """The parts of a model answer code returned (an ``LlmResponse``, ``Content`` or
    ``Part``, CX's or ADK's); None when the value is not an answer."""
    value = cx.to_plain(_plain(value))
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
            out.append({"function_call": {"name": call["name"], "args": args or {}}})
        elif isinstance(part.get("text"), str):
            out.append({"text": part["text"]})
    return out


def _genai_content(parts: list[dict[str, Any]]) -> types.Content:
    made = []
    for part in parts:
        call = part.get("function_call")
        if call is not None:
            made.append(types.Part(function_call=types.FunctionCall(**call)))
        else:
            made.append(types.Part(text=part["text"]))
    return types.Content(role="model", parts=made)


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


_REFERENCE = re.compile(r"\{?\$context\.([A-Za-z_][A-Za-z0-9_.]*)\}?")


def fill_context(template: str, readonly_context: Any) -> str | None:
    """`template` with its ``$context`` references filled from the session
    (``$context.variables.<name>``, ``$context.session_id``, ``$context.app_id``); None when
    one has no value (the header or parameter is then left out, as in CX)."""
    given = readonly_context.state  # a mapping (ReadonlyContext) or ADK's State (ToolContext)
    state = given.to_dict() if hasattr(given, "to_dict") else dict(given)
    session = getattr(readonly_context, "session", None)
    known = {"session_id": getattr(session, "id", ""), "app_id": getattr(session, "app_name", "")}
    missing = False

    def fill(match: re.Match[str]) -> str:
        nonlocal missing
        path = match.group(1).split(".")
        found: Any = state if path[0] == "variables" else known
        for key in path[1:] if path[0] == "variables" else path:
            found = found.get(key) if isinstance(found, dict) else None
        if found is None:
            missing = True
            return ""
        return found if isinstance(found, str) else render_value(found)

    text = _REFERENCE.sub(fill, template)
    return None if missing else text


def header_provider(headers: list[tuple[str, str, str]]) -> Callable[[Any], dict[str, str]]:
    """An MCP toolset's headers at call time: a ``template`` with ``$context`` references
    filled from the session (`fill_context`), an ``env`` value from that environment
    variable. A header without a value is left out."""

    def provide(readonly_context: Any) -> dict[str, str]:
        out: dict[str, str] = {}
        for name, kind, value in headers:
            if kind == "env":
                if os.environ.get(value):
                    out[name] = os.environ[value]
                continue
            text = fill_context(value, readonly_context)
            if text is not None:
                out[name] = text
        return out

    return provide


class Named(BaseToolset):
    """A toolset's tools under the names the app calls them (CX's: an MCP server's tool
    ``get_menu`` of the toolset ``crm`` is ``crm_get_menu``): only the tools `names` maps,
    each a copy renamed, as ADK's own ``tool_name_prefix`` does."""

    def __init__(self, inner: BaseToolset, names: Mapping[str, str]) -> None:
        super().__init__()
        self.inner = inner
        self.names = dict(names)

    async def get_tools(self, readonly_context: Any = None) -> list[Any]:
        out = []
        for tool in await self.inner.get_tools(readonly_context):
            if tool.name in self.names:
                renamed = copy.copy(tool)
                renamed.name = self.names[tool.name]
                out.append(renamed)
        return out

    async def close(self) -> None:
        await self.inner.close()


# --------------------------------------------------------------------------- OpenAPI

SESSION_CONTEXT = "x-ces-session-context"
PRIVATE_NETWORK_ENV = "STATECRAFT_ADK_ALLOW_PRIVATE_NETWORK"
_HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_SESSION_QUERY: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar(
    "statecraft_session_query", default=None
)


def _local(document: Any, node: Any) -> Any:
    """A parameter, its local ``$ref`` (``#/components/parameters/…``) followed."""
    for _ in range(16):
        ref = node.get("$ref") if isinstance(node, dict) else None
        if not isinstance(ref, str) or not ref.startswith("#/"):
            return node
        target: Any = document
        for key in ref[2:].split("/"):
            key = key.replace("~1", "/").replace("~0", "~")
            target = target.get(key) if isinstance(target, dict) else None
        node = target if isinstance(target, dict) else {}
    return {}


def session_parameters(document: Any) -> tuple[Any, list[tuple[str, str, str]]]:
    """A copy of an OpenAPI document without the query and header parameters that carry
    ``x-ces-session-context`` (the runtime fills them from the session; the model never
    sees them), and those parameters as (name, "query" | "header", template)."""
    document = copy.deepcopy(document)
    found: list[tuple[str, str, str]] = []
    paths = document.get("paths") if isinstance(document, dict) else None

    def strip(owner: Any) -> None:
        parameters = owner.get("parameters") if isinstance(owner, dict) else None
        if not isinstance(parameters, list):
            return
        kept = []
        for parameter in parameters:
            resolved = _local(document, parameter)
            where = resolved.get("in") if isinstance(resolved, dict) else None
            if (
                isinstance(resolved, dict)
                and SESSION_CONTEXT in resolved
                and where
                in (
                    "query",
                    "header",
                )
            ):
                found.append((str(resolved.get("name")), where, str(resolved[SESSION_CONTEXT])))
            else:
                kept.append(parameter)
        owner["parameters"] = kept

    for item in paths.values() if isinstance(paths, dict) else ():
        strip(item)
        for method, operation in item.items() if isinstance(item, dict) else ():
            if str(method).lower() in _HTTP_METHODS:
                strip(operation)
    return document, found


@functools.cache
def _session_rest_api_tool() -> type:
    """ADK's ``RestApiTool`` (what its ``OpenAPIToolset`` makes of an operation) with the
    session-context query parameters added to the request (imported when an app has an
    OpenAPI tool: the parser needs fastapi's models)."""
    from google.adk.tools.openapi_tool.openapi_spec_parser.rest_api_tool import RestApiTool

    class SessionRestApiTool(RestApiTool):
        session_query: tuple[tuple[str, str], ...] = ()

        async def run_async(self, *, args: dict[str, Any], tool_context: Any) -> Any:
            query = {}
            for name, template in self.session_query:
                value = fill_context(template, tool_context)
                if value is not None:
                    query[name] = value
            token = _SESSION_QUERY.set(query)
            try:
                return await super().run_async(args=args, tool_context=tool_context)
            finally:
                _SESSION_QUERY.reset(token)

        def _prepare_request_params(self, parameters: Any, kwargs: Any) -> dict[str, Any]:
            request = super()._prepare_request_params(parameters, kwargs)
            query = _SESSION_QUERY.get()
            if query:
                request.setdefault("params", {}).update(query)
            return request

    return SessionRestApiTool


def cx_request(llm_request: Any) -> cx.LlmRequest:
    """CX's ``LlmRequest`` for a model callback: the history and the system instruction."""
    instruction = llm_request.config.system_instruction if llm_request.config else None
    if not isinstance(instruction, str) and instruction is not None:
        instruction = "".join(p.text or "" for p in getattr(instruction, "parts", None) or ())
    return cx.LlmRequest(
        model=llm_request.model,
        contents=[cx.content_from(_plain(c), "user") for c in llm_request.contents],
        config=cx.GenerateContentConfig(system_instruction=instruction),
    )


def apply_request(request: cx.LlmRequest, llm_request: Any) -> None:
    """What a model callback changed in CX's request, back into ADK's: the system
    instruction, and the tools it hid (``config.hide_tool``) leave the declarations the
    model is shown (a call of one still runs, as in Statecraft's simulation)."""
    if llm_request.config is None:
        return
    wanted = request.config.system_instruction
    current = llm_request.config.system_instruction
    if isinstance(wanted, str) and wanted != current:
        llm_request.config.system_instruction = wanted
    hidden = set(request.config.excluded_tools or ())
    if hidden:
        for tool in llm_request.config.tools or ():
            declarations = getattr(tool, "function_declarations", None)
            if declarations:
                tool.function_declarations = [d for d in declarations if d.name not in hidden]


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
