"""Tool and callback files run as CX runs them (``_Code``: executed afresh for every call,
with CX's globals), a Python tool declared from its source without running it
(``_declared``), and the arguments CX's and ADK's signatures take. Part of the runtime
adapter (``runtime.py``).
"""

from __future__ import annotations

import ast
import builtins
import contextvars
import copy
import inspect
import sys
import types as types_module
import typing
from collections.abc import Callable
from typing import Any

from . import cx_objects as cx
from .context import _CURRENT, CONTEXT, CONTEXT_PARAMS, CxContext, same_value

_LOADED: contextvars.ContextVar[dict[str, Callable[..., Any]] | None] = contextvars.ContextVar(
    "statecraft_loaded", default=None
)


class _Code:
    """A tool or callback file, compiled once and executed afresh for every call (with
    CX's globals, in a module of its own), as CX and Statecraft's sandbox run code: module
    globals do not outlive the call; a tool called through ``tools.<name>()`` during the
    call is executed once for that call."""

    def __init__(self, app: Any, path: str, entry: str) -> None:
        # `app`: the runtime's App (its folder and its `tools` proxy); not imported, so the
        # runtime imports this module and never the other way round.
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
