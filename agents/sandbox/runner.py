"""Child-process side of the sandbox: runs untrusted tool and callback code.

This file is executed as a *script* by :mod:`agents.sandbox.host`::

    python -I -S -B /path/to/runner.py

``-I`` ignores every ``PYTHON*`` environment variable and the user site, ``-S`` skips
``site`` (no ``.pth`` hooks, no site-packages), ``-B`` writes no byte code.  The parent passes
the directory that holds ``RestrictedPython`` in its first frame and the child appends that
single directory to ``sys.path``.  Nothing here imports Django or any other part of the project.

Protocol (a *session*): frames in both directions, each a one-line JSON header
``{"size": n, ...}`` then exactly *n* bytes of JSON body.

1. host -> child, once: ``{"rp_path": "...", "limits": {...}}``; the child imports everything
   the user code may need (nothing can be imported from disk later), enters new
   network/IPC/UTS namespaces and ``chroot``s into the empty working directory, then answers
   ``{"protections": [...]}``.  This *session child* never runs user code.
2. host -> child, per call: ``{"code", "entry", "kind", "args", "state", "declared",
   "context_values"}``.  The session child ``fork``s a *call process* that becomes ``nobody``,
   sets the resource limits (its CPU counters start at zero: the CPU limit is per call),
   runs the call under RestrictedPython and writes its result to a pipe, then exits.  The
   session child reads that pipe (bounded, killing the call process at the wall-clock limit
   + ``CALL_KILL_GRACE_S``), reaps it and answers with header ``{"size", "status",
   "timed_out", "too_large"}`` and the call's result as body::

       {"ok": ..., "return_value": ..., "writes": [[n, v]], "removed": [...], "state": {...},
        "stdout": "...", "stdout_truncated": bool, "undeclared": [...], "protections": [...],
        "error": null | {"kind", "message", "line", "traceback"}, "duration_ms": ...}

   Every call starts from a copy of the pristine session child, so nothing one call does
   (module state such as ``decimal.setcontext``, user classes, garbage with finalizers...)
   can reach a later call.
3. End of input: the session child exits.

See ``agents/sandbox/__init__.py`` for the whole security model.
"""

from __future__ import annotations

import ast
import functools
import json
import operator
import os
import resource
import select
import signal
import sys
import time
import types

USER_FILENAME_PREFIX = {"tool": "tool", "callback": "callback"}
NOBODY = 65534
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
MAX_JSON_DEPTH = 64
MAX_INT_BITS = 1024
MAX_HEADER_BYTES = 4096
# The session child kills a call process that outlives its wall-clock limit by this much
# (user code that swallows the timer's exception).
CALL_KILL_GRACE_S = 0.5

# Modules user code may import; each is handed out as a read-only namespace holding the
# module's public, non-module attributes (so ``json.decoder`` & co. are unreachable).
ALLOWED_MODULES = (
    *("json", "math", "re", "datetime", "decimal", "statistics", "string", "typing"),
    *("hashlib", "hmac", "base64", "uuid", "random", "itertools", "functools"),
    *("collections", "dataclasses", "enum", "time", "copy", "ast", "logging", "operator"),
)
# Names of allowed modules that are not handed out: they evaluate strings as code
# (typing.get_type_hints), reach attributes around the guard (operator.attrgetter,
# methodcaller), or read files (uuid.getnode and friends, fruitless in the jail anyway).
MODULE_EXCLUSIONS = {
    "typing": {"get_type_hints", "ForwardRef", "evaluate_forward_ref"},
    "operator": {"attrgetter", "methodcaller"},
    # singledispatch().register(f) evaluates f's string annotations with the real eval.
    "functools": {"singledispatchmethod", "singledispatch"},
    "collections": {"abc"},
    # The metaclass makes a class from a namespace given as data (its dunders unchecked).
    "enum": {"EnumType", "EnumMeta", "EnumDict"},
}
# Attribute names that are refused at run time on top of RestrictedPython's compile-time
# checks (names starting with "_" and the inspect attributes are refused as well).
EXTRA_BLOCKED_ATTRIBUTES = frozenset({"mro", "f_trace_lines", "f_trace_opcodes"})
# Dunder attributes user code may read (CX code prints ``type(x).__name__``).
READABLE_DUNDERS = frozenset({"__name__"})
# Dunders a class may define (RestrictedPython's ALLOWED_FUNC_NAMES: comparisons, __init__,
# __contains__), and those Python itself puts in a class body's namespace. Every way of
# making a class (a class statement, type(cls)(name, bases, namespace), dataclasses'
# make_dataclass) is held to this list.
DEFINABLE_DUNDERS = frozenset(
    {
        *("__init__", "__contains__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__"),
        *("__ge__", "__module__", "__qualname__", "__doc__", "__annotations__"),
        *("__classcell__", "__firstlineno__", "__static_attributes__", "__annotate__"),
        "__orig_bases__",
    }
)


def check_class_namespace(namespace, what="a class"):
    """Refuse a dunder the language layer does not let a class define (a class statement
    is checked when compiled; this covers the ways that take a namespace as data)."""
    for key in list(namespace):
        if type(key) is not str:
            raise ForbiddenOperation(f"{what} can only have text attribute names")
        if str.startswith(key, "__") and key not in DEFINABLE_DUNDERS:
            raise ForbiddenOperation(
                f"{what} cannot define {key!r} in the sandbox (only comparisons, __init__ "
                "and __contains__ may be defined)"
            )


# --------------------------------------------------------------------------- exceptions


class SandboxTimeout(BaseException):
    """Raised inside user code when the wall-clock or CPU budget is spent.

    A ``BaseException`` so that ``except Exception:`` in user code does not swallow it.
    """


class Forbidden:
    """Mixin marking an exception raised because user code tried something forbidden."""


class ForbiddenImport(Forbidden, ImportError):
    pass


class ForbiddenAttribute(Forbidden, AttributeError):
    pass


class ForbiddenOperation(Forbidden, NotImplementedError):
    pass


CX_TYPES = ()  # cx_objects.CxObject once loaded (see Sandbox)
CX_MODULE = []  # [cx_objects] once loaded


def exact_name(name, what="variable names"):
    """*name* as an exact ``str``: a subclass cannot fool a check with its own methods."""
    if not isinstance(name, str):
        raise TypeError(f"{what} are strings, not {type(name).__name__}")
    return str.__str__(name)


class NotSerializable(TypeError):
    """A value written to state (or returned) is not JSON-serializable."""


# ------------------------------------------------------------------------ JSON checking


def to_json_value(value, path="value", depth=0):
    """Return a plain-JSON deep copy of *value* or raise :class:`NotSerializable`.

    Accepted: None, bool, int, finite float, str, list/tuple, dict with str keys.
    """
    if depth > MAX_JSON_DEPTH:
        raise NotSerializable(f"{path} is nested too deeply (or contains itself)")
    # Built-in methods only (dict.items, str(), float()): a subclass defined by user code
    # must not get its own code run here.
    if value is None or isinstance(value, bool):
        return bool.__bool__(value) if value is not None else None
    if isinstance(value, str):
        return str.__str__(value)  # the base method: a subclass's __str__ never runs
    if isinstance(value, int):
        value = int.__int__(value)
        if value.bit_length() > MAX_INT_BITS:
            raise NotSerializable(f"{path} is an integer too large for JSON")
        return value
    if isinstance(value, float):
        value = float.__float__(value)
        if value != value or value in (float("inf"), float("-inf")):
            raise NotSerializable(f"{path} is {value!r}, which JSON cannot represent")
        return value
    if isinstance(value, (list, tuple)):
        items = list.__iter__(value) if isinstance(value, list) else tuple.__iter__(value)
        return [to_json_value(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(items)]
    if isinstance(value, dict):
        out = {}
        for k, v in dict.items(value):
            if not isinstance(k, str):
                raise NotSerializable(f"{path} has a key that is not a string")
            key = str.__str__(k)
            out[key] = to_json_value(v, f"{path}[{key!r}]", depth + 1)
        return out
    if CX_TYPES and isinstance(value, CX_TYPES):
        return to_json_value(value.to_json(), path, depth + 1)
    raise NotSerializable(
        f"{path} is of type {type(value).__name__}, which is not JSON-serializable"
    )


# ------------------------------------------------------------------------ the context


class State:
    """``context.state`` / ``context.variables``: a dict-like view that records writes."""

    _guarded_writes = True  # RestrictedPython's write guard lets item assignment through
    __slots__ = ("_data", "_recorder")  # and no attribute can be added or replaced

    def __init__(self, data, recorder):
        self._data = data
        self._recorder = recorder

    def __getitem__(self, name):
        return self._data[name]

    def __setitem__(self, name, value):
        self._recorder.set(name, value)

    def __delitem__(self, name):
        if name not in self._data:
            raise KeyError(name)
        self._recorder.remove(name)

    def __contains__(self, name):
        return name in self._data

    def __iter__(self):
        return iter(list(self._data))

    def __len__(self):
        return len(self._data)

    def __repr__(self):
        return f"State({self._data!r})"

    def get(self, name, default=None):
        return self._data.get(name, default)

    def keys(self):
        return list(self._data.keys())

    def values(self):
        return list(self._data.values())

    def items(self):
        return list(self._data.items())

    def to_dict(self):
        return dict(self._data)

    def update(self, other=(), **kwargs):
        for name, value in dict(other, **kwargs).items():
            self._recorder.set(name, value)

    def setdefault(self, name, default=None):
        if name not in self._data:
            self._recorder.set(name, default)
        return self._data[name]

    def pop(self, name, *default):
        if name not in self._data:
            if default:
                return default[0]
            raise KeyError(name)
        value = self._data[name]
        self._recorder.remove(name)
        return value


class Recorder:
    """Applies writes to the live state and records them in order."""

    def __init__(self, data):
        self.data = data
        self.writes = []  # [name, json value]
        self.removed = []  # names whose write was a removal (in order)

    def set(self, name, value):
        name = exact_name(name)
        snapshot = to_json_value(value, f"the value written to {name!r}")
        self.data[name] = value
        self.writes.append([name, snapshot])

    def remove(self, name):
        name = exact_name(name)
        self.data.pop(name, None)
        self.writes.append([name, None])
        self.removed.append(name)


CX_CONTEXT_DEFAULTS = {
    "user_content": None,
    "invocation_id": "",
    "agent_name": "",
    "events": list,
    "language_code": "",
    "streaming_stage": None,
    "function_call_id": None,
}


class Context:
    """The global ``context`` (also passed as ``callback_context`` / ``tool_context``)."""

    def __init__(self, state, values):
        self.state = state
        self.variables = state
        for key, value in values.items():
            if (
                type(key) is str
                and key.isidentifier()
                and not key.startswith("_")
                and not hasattr(self, key)
            ):
                setattr(self, key, value)
        # CX's CallbackContext fields the simulation does not model: present, empty.
        for key, default in CX_CONTEXT_DEFAULTS.items():
            if not hasattr(self, key):
                setattr(self, key, default() if callable(default) else default)
        # The history the simulation hands over becomes CX's Event objects.
        if CX_MODULE and self.events and isinstance(self.events[0], dict):
            self.events = CX_MODULE[0].events_from(self.events)
            if self.user_content is None:
                user = [e for e in self.events if e.is_user() and e.parts()]
                self.user_content = user[-1].content if user else None

    def get_last_user_input(self):
        return CX_MODULE[0].last_parts(self.events, True) if CX_MODULE else []

    def get_last_agent_output(self):
        return CX_MODULE[0].last_parts(self.events, False) if CX_MODULE else []

    def parts(self):
        return [part for event in self.events for part in event.parts()]

    def get_variable(self, name, default=None):
        return self.state.get(name, default)

    def set_variable(self, name, value):
        self.state[name] = value

    def remove_variable(self, name):
        self.state._recorder.remove(name)

    def __repr__(self):
        return "<context>"


# ----------------------------------------------------------------------- print capture


class PrintSink:
    """Everything a call prints, in order, capped at *limit* characters."""

    def __init__(self, limit):
        self.limit = limit
        self.parts = []
        self.size = 0
        self.truncated = False

    def write(self, text):
        room = self.limit - self.size
        if room <= 0:
            self.truncated = self.truncated or bool(text)
            return
        if len(text) > room:
            text = text[:room]
            self.truncated = True
        self.parts.append(text)
        self.size += len(text)

    def text(self):
        return "".join(self.parts)


SINK = PrintSink(64 * 1024)


class LimitedPrintCollector:
    """RestrictedPython ``_print_``: one per function; all write to the call's SINK."""

    def __init__(self, _getattr_=None):
        self._getattr_ = _getattr_

    def write(self, text):
        SINK.write(str(text) if not isinstance(text, str) else text)

    def __call__(self):  # the value of the name ``printed``
        return SINK.text()

    def _call_print(self, *objects, **kwargs):
        if kwargs.get("file") is None:
            kwargs["file"] = self
        else:
            self._getattr_(kwargs["file"], "write")
        print(*objects, **kwargs)


# ------------------------------------------------------------------------ modules


class SandboxModule:
    """What ``import json`` gives user code: a read-only copy of the public attributes."""

    def __init__(self, name, attributes):
        self.__dict__.update(attributes)
        object.__setattr__(self, "_SandboxModule__name", name)

    def __getattr__(self, attr):
        raise AttributeError(
            f"module {self.__name!r} has no attribute {attr!r} (or not in the sandbox)"
        )

    def __repr__(self):
        return f"<module {self.__name!r} (sandbox)>"


class SandboxMetaclass:
    """What ``type(SomeClass)`` gives user code: the metaclass's stand-in. Called with one
    argument it is ``type(x)``; three arguments go through the class checks (no dunder the
    language layer refuses); ``isinstance(C, type(int))`` and ``==`` answer as the metaclass."""

    __slots__ = ("_SandboxMetaclass__meta", "_SandboxMetaclass__sandbox")

    def __init__(self, meta, sandbox):
        object.__setattr__(self, "_SandboxMetaclass__meta", meta)
        object.__setattr__(self, "_SandboxMetaclass__sandbox", sandbox)

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs:
            return self.__sandbox.type_of(args[0])
        if self.__meta is not type:
            raise ForbiddenOperation(f"{self.__meta.__name__}(...) cannot be called in the sandbox")
        if len(args) != 3 or type(args[2]) is not dict:
            raise TypeError("type() takes 1 or 3 arguments (name, bases, namespace)")
        return self.__sandbox.make_class(*args, **kwargs)

    def __instancecheck__(self, obj):
        return isinstance(obj, self.__meta)

    def __eq__(self, other):
        return other is self.__meta or (
            type(other) is SandboxMetaclass and other.__meta is self.__meta
        )

    def __hash__(self):
        return hash(self.__meta)

    @property
    def __name__(self):
        return self.__meta.__name__

    def __repr__(self):
        return repr(self.__meta)


# Builtins added to RestrictedPython's safe set (it leaves them to Zope's guards; here memory
# and time are bounded by the OS, and no object they reach gives more than user code has).
EXTRA_BUILTINS = (
    *("all", "any", "ascii", "bin", "bytearray", "dict", "enumerate", "filter", "format"),
    *("frozenset", "iter", "list", "map", "max", "min", "next", "reversed", "set", "sorted"),
    *("sum", "tuple", "zip", "staticmethod", "classmethod", "property", "range"),
)

# Builtins deliberately withheld; using one is reported as "forbidden", not a NameError.
WITHHELD_BUILTINS = frozenset(
    {
        *("open", "input", "eval", "exec", "compile", "globals", "locals", "vars", "dir"),
        *("type", "object", "super", "memoryview", "help", "exit", "quit", "breakpoint"),
    }
)


# ------------------------------------------------------------------------ the policy


def build_policy():
    """Return a RestrictingNodeTransformer that also allows ``x[k] += v`` / ``o.a += v``."""
    from RestrictedPython.transformer import (
        INSPECT_ATTRIBUTES,
        IOPERATOR_TO_STR,
        RestrictingNodeTransformer,
        copy_locations,
    )

    class Policy(RestrictingNodeTransformer):
        def check_name(self, node, name, allow_magic_methods=False):
            # CX code names helpers `_helper`; `__name__` is read as in any module.  Names
            # RestrictedPython itself uses (`_getattr_`, `_print`...) stay refused: they
            # start with "_" and end with "_" or are listed.
            if name == "__name__" or is_private_name(name):
                return
            super().check_name(node, name, allow_magic_methods)

        def visit_Attribute(self, node):
            if node.attr == "__name__" and isinstance(node.ctx, ast.Load):
                node = self.node_contents_visit(node)
                new_node = ast.Call(
                    func=ast.Name("_getattr_", ast.Load()),
                    args=[node.value, ast.Constant(node.attr)],
                    keywords=[],
                )
                copy_locations(new_node, node)
                return new_node
            if is_private_name(node.attr):
                # `self._cache`: compiled as any attribute; the run-time guard allows it on
                # objects of classes the user code defined, and nowhere else.
                if isinstance(node.ctx, ast.Load):
                    node = self.node_contents_visit(node)
                    new_node = ast.Call(
                        func=ast.Name("_getattr_", ast.Load()),
                        args=[node.value, ast.Constant(node.attr)],
                        keywords=[],
                    )
                    copy_locations(new_node, node)
                    return new_node
                node = self.node_contents_visit(node)
                new_value = ast.Call(
                    func=ast.Name("_write_private_", ast.Load()), args=[node.value], keywords=[]
                )
                copy_locations(new_value, node.value)
                node.value = new_value
                return node
            return super().visit_Attribute(node)

        def visit_Call(self, node):
            # eval(...) is the sandbox's restricted eval (CX code evaluates small
            # expressions); exec(...) stays refused.
            if isinstance(node.func, ast.Name) and node.func.id == "eval":
                node.func.id = "restricted_eval"
            return super().visit_Call(node)

        def visit_AnnAssign(self, node):
            # `x: int = 3`: target, annotation and value are checked like any expression
            # (dataclasses need the annotations of a class body).
            return self.node_contents_visit(node)

        def visit_AugAssign(self, node):
            target = node.target
            if isinstance(target, ast.Subscript):
                call = ast.Call(
                    func=ast.Name("_inplaceitem_", ast.Load()),
                    args=[
                        self.visit(target.value),
                        self.visit(target.slice),
                        ast.Constant(IOPERATOR_TO_STR[type(node.op)]),
                        self.visit(node.value),
                    ],
                    keywords=[],
                )
            elif isinstance(target, ast.Attribute):
                if target.attr.startswith("_") or target.attr in INSPECT_ATTRIBUTES:
                    self.error(node, f'"{target.attr}" is an invalid attribute name.')
                    return node
                call = ast.Call(
                    func=ast.Name("_inplaceattr_", ast.Load()),
                    args=[
                        self.visit(target.value),
                        ast.Constant(target.attr),
                        ast.Constant(IOPERATOR_TO_STR[type(node.op)]),
                        self.visit(node.value),
                    ],
                    keywords=[],
                )
            else:
                return super().visit_AugAssign(node)
            new_node = ast.Expr(value=call)
            copy_locations(new_node, node)
            ast.fix_missing_locations(new_node)
            return new_node

    return Policy, INSPECT_ATTRIBUTES


def is_private_name(name):
    """``_helper``: one leading underscore, no trailing one (those are RestrictedPython's)."""
    return (
        type(name) is str
        and len(name) > 1
        and name[0] == "_"
        and name[1] != "_"
        and name[-1] != "_"
        and name != "_print"
    )


INPLACE_OPERATORS = {
    "+=": operator.iadd,
    "-=": operator.isub,
    "*=": operator.imul,
    "/=": operator.itruediv,
    "%=": operator.imod,
    "**=": operator.ipow,
    "<<=": operator.ilshift,
    ">>=": operator.irshift,
    "|=": operator.ior,
    "^=": operator.ixor,
    "&=": operator.iand,
    "//=": operator.ifloordiv,
    "@=": operator.imatmul,
}


# ------------------------------------------------------------------------ environment

CURRENT_CONTEXT = [None]  # the running call's context (eval() needs it for its globals)


class CompiledCode:
    """What the sandbox's ``compile()`` returns: opaque, accepted only by its ``eval()``."""

    __slots__ = ("code",)

    def __init__(self, code):
        self.code = code

    def __repr__(self):
        return "<compiled code>"


def make_safe_formatter(base, sandbox, cls=False):
    """``str.format`` / ``string.Formatter`` whose fields go through the attribute guard:
    ``"{0.__class__}".format(x)`` is refused like ``x.__class__``."""
    import _string

    class SafeFormatter(base):
        def get_field(self, field_name, args, kwargs):
            first, rest = _string.formatter_field_name_split(field_name)
            obj = self.get_value(first, args, kwargs)
            for is_attr, key in rest:
                obj = sandbox.guarded_getattr(obj, key) if is_attr else obj[key]
            return obj, first

        def bound(self, text, name):
            if name == "format":
                return lambda *args, **kwargs: self.vformat(text, args, kwargs)
            return lambda mapping: self.vformat(text, (), mapping)

    return SafeFormatter if cls else SafeFormatter()


class SandboxLogger:
    """``logging.getLogger(name)``: records go to the call's printed output."""

    LEVELS = {10: "DEBUG", 20: "INFO", 30: "WARNING", 40: "ERROR", 50: "CRITICAL"}

    def __init__(self, name):
        self.name = name
        self.level = 0

    def setLevel(self, level):
        self.level = level

    def isEnabledFor(self, level):
        return level >= self.level

    def log(self, level, msg, *args, **kwargs):
        if level < self.level:
            return
        text = str(msg) % args if args else str(msg)
        SINK.write(f"{self.LEVELS.get(level, level)} {self.name}: {text}\n")

    def debug(self, msg, *args, **kwargs):
        self.log(10, msg, *args)

    def info(self, msg, *args, **kwargs):
        self.log(20, msg, *args)

    def warning(self, msg, *args, **kwargs):
        self.log(30, msg, *args)

    warn = warning

    def error(self, msg, *args, **kwargs):
        self.log(40, msg, *args)

    exception = error

    def critical(self, msg, *args, **kwargs):
        self.log(50, msg, *args)


def logging_module_attributes():
    loggers = {}

    def get_logger(name=None):
        name = "root" if name is None else str(name)
        return loggers.setdefault(name, SandboxLogger(name))

    root = get_logger()
    return {
        **{"DEBUG": 10, "INFO": 20, "WARNING": 30, "WARN": 30, "ERROR": 40, "CRITICAL": 50},
        "getLogger": get_logger,
        "basicConfig": lambda **kwargs: None,
        "debug": root.debug,
        "info": root.info,
        "warning": root.warning,
        "error": root.error,
        "exception": root.exception,
        "critical": root.critical,
        "log": root.log,
    }


class Sandbox:
    """Everything user code can reach, built once per child (fresh globals per call)."""

    def __init__(self):
        import string

        from RestrictedPython import compile_restricted_eval, compile_restricted_exec
        from RestrictedPython.Guards import (
            full_write_guard,
            guarded_iter_unpack_sequence,
            guarded_unpack_sequence,
            safe_builtins,
        )

        global CX_TYPES
        import cx_objects

        self.cx = cx_objects
        CX_MODULE[:] = [cx_objects]
        CX_TYPES = (cx_objects.CxObject,)
        self.unpack_sequence = guarded_unpack_sequence
        self.iter_unpack_sequence = guarded_iter_unpack_sequence
        from RestrictedPython.Utilities import utility_builtins

        self.compile_restricted_exec = compile_restricted_exec
        self.compile_restricted_eval = compile_restricted_eval
        self.policy, inspect_attributes = build_policy()
        self.blocked_attributes = frozenset(inspect_attributes) | EXTRA_BLOCKED_ATTRIBUTES
        self.blocked_types = (
            types.ModuleType,
            types.FrameType,
            types.CodeType,
            types.TracebackType,
        )
        self.string_module = string
        self.full_write_guard = full_write_guard
        self.user_classes: set[type] = set()
        self.formatter = make_safe_formatter(string.Formatter, self)
        self.modules = {name: self._module_proxy(name) for name in ALLOWED_MODULES}
        self._check_enum_functional_api()
        # ``from __future__ import annotations`` (CX code has it): a compiler directive; the
        # statement itself imports the feature names, which hold nothing to reach.
        import __future__ as future

        self.modules["__future__"] = SandboxModule(
            "__future__", {n: getattr(future, n) for n in future.all_feature_names}
        )
        # Warm lazily imported helpers now: nothing can be imported once jailed.
        import _strptime  # noqa: F401 - used by datetime.strptime
        import encodings.idna  # noqa: F401 - str.encode("idna")
        import unicodedata  # noqa: F401 - used by "\N{...}" escapes at compile time

        builtins = dict(safe_builtins)
        builtins.update(utility_builtins)
        # Modules are imported, not builtins.
        for name in ("random", "whrandom", "string", "math"):
            builtins.pop(name, None)
        import builtins as real

        for name in EXTRA_BUILTINS:
            builtins[name] = getattr(real, name)
        builtins["getattr"] = self.guarded_getattr
        builtins["setattr"] = self.guarded_setattr
        builtins["delattr"] = self.guarded_delattr
        builtins["hasattr"] = self.guarded_hasattr
        builtins["__import__"] = self.guarded_import
        builtins["type"] = self.type_of
        builtins["eval"] = builtins["restricted_eval"] = self.restricted_eval
        builtins["compile"] = self.restricted_compile
        builtins["super"] = real.super  # zero-argument form in methods of user classes
        self.builtins = builtins
        # Warm the compiler (and the policy) once.
        self.compile_restricted_exec("x = 1", "<warmup>", policy=self.policy)

    # -- modules

    def _module_proxy(self, name):
        if name == "logging":
            return SandboxModule(name, logging_module_attributes())
        module = __import__(name)
        excluded = MODULE_EXCLUSIONS.get(name, set())
        public = {}
        # The module's declared API (__all__) when it has one: statistics, for instance,
        # also holds helpers it imported (namedtuple, itemgetter...).
        names = getattr(module, "__all__", None) or dir(module)
        if name == "ast":
            names = dir(module)  # node classes are not in ast.__all__ on every version
        for attr in names:
            if attr.startswith("_") or attr in excluded:
                continue
            value = getattr(module, attr, None)
            if value is None or isinstance(value, types.ModuleType):
                continue
            public[attr] = value
        if name == "string":
            public["Formatter"] = make_safe_formatter(module.Formatter, self, cls=True)
        if name == "functools":
            public["update_wrapper"] = self.update_wrapper
            public["wraps"] = self.wraps
        if name == "dataclasses":
            public["make_dataclass"] = self.make_dataclass
        return SandboxModule(name, public)

    @staticmethod
    def _check_enum_functional_api():
        """Enum("Name", names): each member name is a class attribute, so a name like
        "__str__" would define that dunder; held to the class rule (this child only)."""
        import enum

        create = enum.EnumType._create_

        def checked_create(cls, class_name, names, *args, **kwargs):
            if type(names) is str:
                members = str.split(str.replace(names, ",", " "))
            elif isinstance(names, dict):
                members = list(dict.keys(names))
            else:
                names = list(names)
                members = [n if type(n) is str else n[0] for n in names]
            for member in members:
                check_class_namespace({member: None}, "an Enum")
            return create(cls, class_name, names, *args, **kwargs)

        enum.EnumType._create_ = checked_create

    # -- library functions that would read or write attributes around the guard

    def is_user_function(self, obj):
        return type(obj) is types.FunctionType and obj.__globals__.get("_getattr_") == (
            self.guarded_getattr
        )

    def update_wrapper(
        self,
        wrapper,
        wrapped,
        assigned=functools.WRAPPER_ASSIGNMENTS,
        updated=functools.WRAPPER_UPDATES,
    ):
        """functools.update_wrapper with its standard attributes only, from and to the
        code's own functions and objects: it reads and writes with the real getattr and
        setattr (`assigned=("__globals__",)` would hand out a function's globals)."""
        if type(assigned) is not tuple or not set(assigned) <= set(functools.WRAPPER_ASSIGNMENTS):
            raise ForbiddenOperation("functools.update_wrapper copies only its standard attributes")
        if type(updated) is not tuple or not set(updated) <= set(functools.WRAPPER_UPDATES):
            raise ForbiddenOperation("functools.update_wrapper updates only __dict__")
        for obj, role in ((wrapper, "wrapper"), (wrapped, "wrapped")):
            if not (self.is_user_function(obj) or self.is_user_object(obj)):
                raise ForbiddenOperation(
                    f"functools.update_wrapper: the {role} must be a function or object "
                    "of your code"
                )
        return functools.update_wrapper(wrapper, wrapped, assigned, updated)

    def wraps(
        self, wrapped, assigned=functools.WRAPPER_ASSIGNMENTS, updated=functools.WRAPPER_UPDATES
    ):
        return functools.partial(
            self.update_wrapper, wrapped=wrapped, assigned=assigned, updated=updated
        )

    def make_dataclass(self, cls_name, fields, *args, namespace=None, **kwargs):
        """dataclasses.make_dataclass, held to the rule of a class statement: no dunder in
        its namespace or among its field names."""
        check_class_namespace(dict(namespace or {}), "make_dataclass")
        fields = list(fields)
        for field in fields:
            name = field if type(field) is str else (field[0] if type(field) is tuple else "")
            check_class_namespace({name: None} if type(name) is str else {None: None})
        import dataclasses

        cls = dataclasses.make_dataclass(cls_name, fields, *args, namespace=namespace, **kwargs)
        self.user_classes.add(cls)
        return cls

    def guarded_import(self, name, globals=None, locals=None, fromlist=(), level=0):
        if type(fromlist) is list and type(name) is str and name in sys.modules:
            # C code (PyImport_Import, e.g. datetime.strptime -> _strptime) imports through
            # the builtins of the calling frame, passing a *list*; it ignores the return
            # value and reads sys.modules itself.  User code cannot produce this call: the
            # import statement passes None or a tuple, and the name __import__ is refused.
            return None
        name = exact_name(name, "module names")
        if level != 0:
            raise ForbiddenImport("relative imports are not allowed in the sandbox")
        if name not in self.modules:
            allowed = ", ".join(sorted(ALLOWED_MODULES))
            raise ForbiddenImport(
                f"import of {name!r} is not allowed in the sandbox (allowed: {allowed})"
            )
        return self.modules[name]

    # -- builtins with a guard

    def type_of(self, obj, *rest):
        if rest:
            raise ForbiddenOperation("type() with three arguments is not available; use class")
        found = type(obj)
        if isinstance(found, type) and issubclass(found, type):
            # The type of a class is a metaclass (`type` itself for most): calling it with
            # three arguments would make a class around the checks. It is handed out as a
            # stand-in that answers isinstance, equality and __name__ like it.
            return SandboxMetaclass(found, self)
        return found

    def restricted_compile(self, source, filename="<string>", mode="eval", *args, **kwargs):
        """``compile`` through RestrictedPython; the result only ``eval``/``exec`` accept."""
        source = exact_name(source, "code")
        if mode not in ("eval", "exec"):
            raise ForbiddenOperation("compile() accepts mode 'eval' or 'exec' in the sandbox")
        compiler = self.compile_restricted_eval if mode == "eval" else self.compile_restricted_exec
        result = compiler(source, "<string>", policy=self.policy)
        if result.errors:
            first = result.errors[0]
            if "SyntaxError" in first or "invalid syntax" in first:
                raise SyntaxError(first)
            raise ForbiddenOperation("; ".join(result.errors))
        return CompiledCode(result.code)

    def restricted_eval(self, source, globals=None, locals=None):
        """``eval`` of RestrictedPython-compiled code with the sandbox's guards."""
        compiled = source if type(source) is CompiledCode else self.restricted_compile(source)
        namespace = self.globals_for("<string>", CURRENT_CONTEXT[0])
        if globals is not None:
            if not isinstance(globals, dict):
                raise TypeError("globals must be a dict")
            for key, value in dict.items(globals):
                if type(key) is str and not key.startswith("_"):
                    namespace[key] = value
        if locals is not None and not isinstance(locals, dict):
            raise TypeError("locals must be a dict")
        return eval(compiled.code, namespace, dict(locals) if locals else None)

    # -- attribute access

    def is_user_object(self, obj):
        return type(obj) in self.user_classes or (
            isinstance(obj, type) and obj in self.user_classes
        )

    def guarded_getattr(self, obj, name, *default):
        # type(name) is str: a str subclass could answer startswith/__eq__/__hash__ as it
        # likes; from here on only the exact text counts.
        name = exact_name(name, "attribute names")
        if (
            str.startswith(name, "_")
            and name not in READABLE_DUNDERS
            and not (is_private_name(name) and self.is_user_object(obj))
        ):
            raise ForbiddenAttribute(
                f'"{name}" is an invalid attribute name because it starts with "_"'
            )
        if name in self.blocked_attributes:
            raise ForbiddenAttribute(f'"{name}" is a restricted attribute in the sandbox')
        if name in ("format", "format_map"):
            if isinstance(obj, str):
                return self.formatter.bound(str.__str__(obj), name)
            if isinstance(obj, type) and issubclass(obj, str):
                raise ForbiddenOperation(
                    "str.format(text, ...) is not available; write text.format(...)"
                )
        try:
            value = getattr(obj, name)
        except AttributeError:
            if default:
                return default[0]
            raise
        if isinstance(value, self.blocked_types):
            raise ForbiddenAttribute(f'"{name}" leads to an object the sandbox does not expose')
        return value

    def guarded_hasattr(self, obj, name):
        try:
            self.guarded_getattr(obj, name)
        except AttributeError:
            return False
        return True

    # -- writes

    def _check_write_name(self, obj, name):
        name = exact_name(name, "attribute names")
        if str.startswith(name, "_") and not (is_private_name(name) and self.is_user_object(obj)):
            raise ForbiddenAttribute(
                f'"{name}" is an invalid attribute name because it starts with "_"'
            )
        return name

    def guarded_setattr(self, obj, name, value):
        name = self._check_write_name(obj, name)
        setattr(self.guarded_write(obj), name, value)

    def guarded_delattr(self, obj, name):
        name = self._check_write_name(obj, name)
        delattr(self.guarded_write(obj), name)

    def write_private(self, obj):
        """``obj._name = ...``: only on objects of classes the user code defined."""
        if self.is_user_object(obj):
            return obj
        raise ForbiddenAttribute(
            'attributes starting with "_" can only be set on objects of your own classes'
        )

    def guarded_write(self, obj):
        if type(obj) in self.user_classes or (isinstance(obj, type) and obj in self.user_classes):
            return obj
        return self.full_write_guard(obj)

    def make_class(self, name, bases, namespace, **kwargs):
        check_class_namespace(namespace)
        meta = type
        for base in bases:
            if isinstance(base, type) and issubclass(type(base), meta):
                meta = type(base)
        if meta is not type:
            # The class statement's namespace as the metaclass prepares it (an Enum needs
            # its own mapping), filled in the body's order.
            prepared = meta.__prepare__(name, bases, **kwargs)
            for key, value in namespace.items():
                prepared[key] = value
            namespace = prepared
        cls = meta(name, bases, namespace, **kwargs)
        self.user_classes.add(cls)
        return cls

    def inplace_item(self, obj, key, op, value):
        current = obj[key]
        self.guarded_write(obj)[key] = INPLACE_OPERATORS[op](current, value)

    def inplace_attr(self, obj, name, op, value):
        current = self.guarded_getattr(obj, name)
        setattr(self.guarded_write(obj), name, INPLACE_OPERATORS[op](current, value))

    def globals_for(self, filename, context):
        # dataclasses looks the class's module up in sys.modules: give it an empty one
        # (the call process is thrown away after the call).
        sys.modules.setdefault(filename, types.ModuleType(filename))
        return {
            "__builtins__": self.builtins,
            "__name__": filename,
            "__metaclass__": self.make_class,
            "_getattr_": self.guarded_getattr,
            "_getitem_": operator.getitem,
            "_getiter_": iter,
            "_write_": self.guarded_write,
            "_write_private_": self.write_private,
            "_inplacevar_": lambda op, x, y: INPLACE_OPERATORS[op](x, y),
            "_inplaceitem_": self.inplace_item,
            "_inplaceattr_": self.inplace_attr,
            "_unpack_sequence_": self.unpack_sequence,
            "_iter_unpack_sequence_": self.iter_unpack_sequence,
            "_apply_": lambda f, *a, **kw: f(*a, **kw),
            "_print_": LimitedPrintCollector,
            "context": context,
            **self.cx.GLOBALS,
            "CallbackContext": Context,
            "ToolContext": Context,
        }


# ------------------------------------------------------------------------ OS protections


def enter_jail():
    """Namespaces and chroot: done once per process (the session child, before any call)."""
    active = []
    # Network (and IPC, hostname) namespaces: a fresh network namespace has only a
    # loopback interface that is down, so no connection can be made, not even to localhost.
    netns = False
    flags = os.CLONE_NEWNET | os.CLONE_NEWIPC | os.CLONE_NEWUTS
    try:
        os.unshare(flags)
        netns = True
    except (OSError, AttributeError):
        try:  # unprivileged: a user namespace lets us create the others
            os.unshare(os.CLONE_NEWUSER | flags)
            netns = True
        except (OSError, AttributeError):
            pass
    if netns:
        active.append("netns")

    # Needs privileges (root, or the capabilities a new user namespace gives); without
    # them it simply fails and is not reported.
    try:
        os.chroot(".")  # the parent made cwd a fresh, empty, root-owned 0700 directory
        os.chdir("/")
        active.append("chroot")
    except OSError:
        pass
    return active


def drop_privileges(limits, n_calls=1, uid=NOBODY):
    """Become *uid* and set the resource limits: done in the process that runs user code.

    The CPU limit counts from the CPU time already used (plus up to 1 s of rounding), so in
    a freshly forked call process, whose counters start at zero, it applies to that call alone.
    """
    active = []
    is_root = os.geteuid() == 0
    if is_root:
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            active.append("uid_nobody" if uid == NOBODY else "unique_uid")
        except OSError:
            pass

    cpu_used = sum(resource.getrusage(resource.RUSAGE_SELF)[:2])
    cpu_soft = int(cpu_used + limits["cpu_time_s"] * n_calls + 1)
    rlimits = [
        ("rlimit_cpu", resource.RLIMIT_CPU, cpu_soft, cpu_soft + 1),
        ("rlimit_as", resource.RLIMIT_AS, limits["memory_bytes"], limits["memory_bytes"]),
        ("rlimit_fsize", resource.RLIMIT_FSIZE, 0, 0),
        (
            "rlimit_nofile",
            resource.RLIMIT_NOFILE,
            limits["max_open_files"],
            limits["max_open_files"],
        ),
        ("rlimit_core", resource.RLIMIT_CORE, 0, 0),
    ]
    if hasattr(resource, "RLIMIT_NPROC"):
        rlimits.append(("rlimit_nproc", resource.RLIMIT_NPROC, 0, 0))
    for label, which, soft, hard in rlimits:
        try:
            resource.setrlimit(which, (soft, hard))
        except (OSError, ValueError):
            continue
        # RLIMIT_NPROC is not enforced for (real) root, even inside a user namespace.
        if label == "rlimit_nproc" and is_root and len(active) == 0:
            continue
        active.append(label)
    return active


def prepare_seccomp(program):
    """Everything installing the call filter needs, built once in the session child (so a
    call process only makes two prctl calls); None without a filter."""
    if not program:
        return None
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = SockFprog(len(program) // 8, ctypes.addressof(buffer))
    return libc, ctypes.byref(fprog), buffer  # the buffer must outlive the pointer


def install_seccomp(prepared):
    """Install the call filter after ``no_new_privs``; the labels of what is in place."""
    if prepared is None:
        return []
    libc, fprog, _ = prepared
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return []
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, fprog, 0, 0) != 0:
        return ["no_new_privs"]
    return ["no_new_privs", "seccomp"]


# ------------------------------------------------------------------------ running a call


def _on_timeout(signum, frame):
    raise SandboxTimeout(
        "CPU time limit exceeded" if signum == signal.SIGXCPU else "time limit exceeded"
    )


def user_traceback(tb, filename, source_lines):
    """Return (line, text) for the frames of *tb* that belong to the user code."""
    frames = []
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename == filename:
            frames.append((tb.tb_lineno, code.co_name))
        tb = tb.tb_next
    if not frames:
        return None, ""
    out = ["Traceback (most recent call last):"]
    for lineno, name in frames[-20:]:
        out.append(f'  File "{filename}", line {lineno}, in {name}')
        if lineno and 0 < lineno <= len(source_lines):
            out.append("    " + source_lines[lineno - 1].strip())
    return frames[-1][0], "\n".join(out)


def innermost_tool_frame(tb, filename):
    """(tool name, line) of the innermost frame of *tb* in the code of another tool of the
    app (``<tool:name>``), when the failure happened there; else None."""
    found = None
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if type(name) is str and name.startswith("<tool:") and name != filename:
            found = (name[6:-1], tb.tb_lineno)
        elif name == filename:
            found = None
        tb = tb.tb_next
    return found


def describe(exc):
    if type(exc) is NameError and getattr(exc, "name", None) in WITHHELD_BUILTINS:
        return f"NameError: {exc.name!r} is not available in the sandbox"
    try:
        text = str(exc)
    except BaseException:  # user-defined __str__ may do anything
        text = ""
    name = type(exc).__name__
    return f"{name}: {text}" if text else name


def classify(exc):
    if isinstance(exc, SandboxTimeout):
        return "timeout"
    if isinstance(exc, MemoryError):
        return "memory"
    if isinstance(exc, Forbidden):
        return "forbidden"
    if isinstance(exc, NotSerializable):
        return "serialization"
    if type(exc) is NameError and getattr(exc, "name", None) in WITHHELD_BUILTINS:
        return "forbidden"
    return "exception"


def cx_callback_arguments(args, params, cx):
    """CX's and ADK's callback signatures from the simulation's arguments.

    CX: ``before_tool_callback(tool, input, callback_context)``,
    ``after_tool_callback(tool, input, callback_context, tool_response)``,
    ``before_model_callback(callback_context, llm_request)``,
    ``after_model_callback(callback_context, llm_response)``; ADK names the input ``args``
    (and some CX code ``tool_input``).  ``tool`` is a ``Tool`` with ``.name``.
    """
    out = dict(args)
    tool = args.get("tool")
    if "tool" in params and isinstance(tool, str):
        out["tool"] = cx.Tool(name=tool, description="")
    given = args.get("args")
    for alias in ("input", "tool_input"):
        if alias in params and alias not in args:
            # The same dict under every name: a change in place is seen by the host.
            out[alias] = given if isinstance(given, dict) else {}
    if "llm_request" in params and not isinstance(args.get("llm_request"), cx.LlmRequest):
        request = args.get("llm_request")
        request = request if isinstance(request, dict) else {}
        config = request.get("config") if isinstance(request.get("config"), dict) else {}
        out["llm_request"] = cx.LlmRequest(
            model=request.get("model"),
            contents=[cx.content_from(c, "user") for c in request.get("contents") or ()],
            config=cx.GenerateContentConfig(system_instruction=config.get("system_instruction")),
        )
    if "llm_response" in params and not isinstance(args.get("llm_response"), cx.LlmResponse):
        out["llm_response"] = cx.LlmResponse(content=cx.content_from(args.get("llm_response")))
    return out


def call_arguments(func, kind, args, context, cx=None):
    """Keyword arguments for *func*: tools get **args; callbacks get what they declare."""
    kwargs = dict(args)
    code = getattr(func, "__code__", None)
    if code is None:
        return kwargs
    params = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
    accepts_any = bool(code.co_flags & 0x08)  # CO_VARKEYWORDS
    for name in ("tool_context", "callback_context"):
        if name in params and name not in kwargs:
            kwargs[name] = context
    if kind == "callback" and cx is not None:
        kwargs = cx_callback_arguments(kwargs, params, cx)
    if kind == "callback":
        if not accepts_any:
            kwargs = {k: v for k, v in kwargs.items() if k in params}
        defaults = len(func.__defaults__ or ())
        required = params[: code.co_argcount - defaults]
        for name in required:
            kwargs.setdefault(name, None)
    return kwargs


def run_call(sandbox, call, state_data, declared, context_values, limits):
    kind = call.get("kind", "tool")
    entry = call["entry"]
    code_text = call["code"]
    filename = f"<{USER_FILENAME_PREFIX.get(kind, 'code')}:{entry}>"
    source_lines = code_text.splitlines()
    recorder = Recorder(state_data)
    state = State(state_data, recorder)
    context = Context(state, context_values)
    global SINK
    SINK = PrintSink(limits["max_print_chars"])
    result = {
        "ok": False,
        "return_value": None,
        "error": None,
        "tool_calls": [],
    }
    started = time.perf_counter()
    signal.setitimer(signal.ITIMER_REAL, limits["wall_time_s"])
    try:
        try:
            tree = ast.parse(code_text, filename, "exec")
        except SyntaxError as exc:
            result["error"] = {
                "kind": "syntax",
                "message": f"{type(exc).__name__}: {exc.msg}",
                "line": exc.lineno,
                "traceback": "",
            }
            raise _Done from None
        compiled = sandbox.compile_restricted_exec(tree, filename, policy=sandbox.policy)
        if compiled.errors:
            first = compiled.errors[0]
            line = None
            if first.startswith("Line "):
                head = first[5:].split(":", 1)[0]
                line = int(head) if head.isdigit() else None
            result["error"] = {
                "kind": "forbidden",
                "message": "; ".join(compiled.errors),
                "line": line,
                "traceback": "",
            }
            raise _Done
        namespace = sandbox.globals_for(filename, context)
        namespace["tools"] = sandbox.cx.Tools([], None)  # replaced before the entry is called
        exec(compiled.code, namespace)
        func = namespace.get(entry)
        if not callable(func):
            result["error"] = {
                "kind": "entry_not_found",
                "message": f"the code does not define a function named {entry!r}",
                "line": None,
                "traceback": "",
            }
            raise _Done
        CURRENT_CONTEXT[0] = context
        tool_codes = call.get("tools") or {}
        compiled_tools = {}
        nested = result["tool_calls"] = []  # [name, ok] of each tools.<name>(...) call

        def call_tool(name, arguments):
            record = [name, False]
            nested.append(record)
            value = run_tool(name, arguments)
            record[1] = True
            return value

        def run_tool(name, arguments):
            if name not in compiled_tools:
                result = sandbox.compile_restricted_exec(
                    tool_codes[name], f"<tool:{name}>", policy=sandbox.policy
                )
                if result.errors:
                    raise ForbiddenOperation(f"tool {name}: " + "; ".join(result.errors))
                tool_namespace = sandbox.globals_for(f"<tool:{name}>", context)
                tool_namespace["tools"] = namespace["tools"]
                exec(result.code, tool_namespace)
                compiled_tools[name] = tool_namespace.get(name)
            tool_func = compiled_tools[name]
            if not callable(tool_func):
                raise NameError(f"the code of tool {name!r} defines no function {name!r}")
            return tool_func(**call_arguments(tool_func, "tool", arguments, context))

        namespace["tools"] = sandbox.cx.Tools(
            [n for n in tool_codes if type(n) is str and type(tool_codes[n]) is str], call_tool
        )
        given_args = (call.get("args") or {}).get("args") if kind == "callback" else None
        before_args = _canonical(given_args) if isinstance(given_args, dict) else None
        value = func(**call_arguments(func, kind, call.get("args") or {}, context, sandbox.cx))
        signal.setitimer(signal.ITIMER_REAL, 0)
        try:
            result["return_value"] = to_json_value(value, "the return value")
            if before_args is not None and _canonical(given_args) != before_args:
                # A tool callback changed the call's arguments in place: ADK's tool gets them.
                result["args"] = to_json_value(given_args, "the tool arguments")
            result["ok"] = True
        except NotSerializable as exc:
            result["error"] = {
                "kind": "serialization",
                "message": str(exc),
                "line": None,
                "traceback": "",
            }
    except _Done:
        pass
    except BaseException as exc:
        signal.setitimer(signal.ITIMER_REAL, 0)
        line, trace = user_traceback(exc.__traceback__, filename, source_lines)
        message = describe(exc)
        inner = innermost_tool_frame(exc.__traceback__, filename)
        if inner is not None:
            # It failed inside another tool called through tools.<name>(...): say where.
            message = f"{message} (in tool {inner[0]}, line {inner[1]})"
        result["error"] = {
            "kind": classify(exc),
            "message": message,
            "line": line,
            "traceback": trace,
        }
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    result["duration_ms"] = round((time.perf_counter() - started) * 1000, 3)
    result["stdout"] = SINK.text()
    result["stdout_truncated"] = SINK.truncated
    result["writes"] = recorder.writes
    result["removed"] = recorder.removed
    written = [name for name, _ in recorder.writes]
    result["undeclared"] = (
        sorted({n for n in written if n not in declared}) if declared is not None else []
    )
    return result


class _Done(Exception):
    """Internal: stop processing a call whose error is already recorded."""


def final_state(state_data):
    out = {}
    for name, value in state_data.items():
        try:
            out[name] = to_json_value(value, name)
        except NotSerializable:
            out[name] = None
    return out


# ------------------------------------------------------------------------ the session


def read_frame(stream):
    """One ``{"size": n, ...}\\n`` header line and its *n*-byte body; None at end of input."""
    line = stream.readline(MAX_HEADER_BYTES)
    if not line:
        return None, None
    header = json.loads(line)
    body = stream.read(header["size"]) if header["size"] else b""
    if len(body) != header["size"]:
        return None, None
    return header, body


def write_frame(fd, body, **header):
    header["size"] = len(body)
    data = memoryview(json.dumps(header).encode("ascii") + b"\n" + body)
    while data:
        data = data[os.write(fd, data) :]


# The key of ``context_values`` that carries the session clock (an ISO date-time): taken
# out before the code's ``context`` is built.
CLOCK_KEY = "__session_now__"


def freeze_clock(sandbox, now):
    """Make the code's clock read `now` (an ISO date-time; without an offset, UTC):
    ``datetime.date.today()``, ``datetime.datetime.now()``/``today()``/``utcnow()``,
    ``time.time()``/``time_ns()``. Only the call process's module proxies change (it is a
    fork of its own), so the host and other calls keep the real clock. The clock stands
    still during the call: the simulation is deterministic."""
    import datetime as real

    moment = real.datetime.fromisoformat(now)
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=real.UTC)
    wall = moment.replace(tzinfo=None)  # the local time the session lives in
    stamp = aware.timestamp()

    class date(real.date):
        @classmethod
        def today(cls):
            return cls(wall.year, wall.month, wall.day)

    class datetime(real.datetime):
        @classmethod
        def now(cls, tz=None):
            value = wall if tz is None else aware.astimezone(tz)
            return cls(
                value.year, value.month, value.day, value.hour, value.minute, value.second,
                value.microsecond, tzinfo=value.tzinfo,
            )  # fmt: skip

        @classmethod
        def today(cls):
            return cls.now()

        @classmethod
        def utcnow(cls):
            return cls.now(real.UTC).replace(tzinfo=None)

    for cls in (date, datetime):
        cls.__module__ = "datetime"
    modules = sandbox.modules
    attributes = dict(modules["datetime"].__dict__)
    attributes.pop("_SandboxModule__name", None)
    attributes.update(date=date, datetime=datetime)
    modules["datetime"] = SandboxModule("datetime", attributes)
    attributes = dict(modules["time"].__dict__)
    attributes.pop("_SandboxModule__name", None)
    attributes.update(time=lambda: stamp, time_ns=lambda: int(stamp * 1_000_000_000))
    modules["time"] = SandboxModule("time", attributes)


def _canonical(value):
    return json.dumps(value, sort_keys=True, default=repr)


def add_in_place_writes(result, given):
    """A value the code changed in place (``sm = context.state["sm"]; sm["filled"].update(
    ...)``, as Bella Notte's tools do) is a write too: the runtime's state holds the same
    object, so the change persists there. Each such variable gets one write of its final
    value, after the code's own writes, when it differs from the value last written (or
    given)."""
    last = dict(given)
    for name, value in result["writes"]:
        last[name] = _canonical(value)
    removed = set(result["removed"])
    for name, value in result["state"].items():
        if name in last and name not in removed and last[name] != _canonical(value):
            result["writes"].append([name, value])


def call_result(sandbox, request, limits, protections):
    """Run one call (in the call process); return its answer as JSON bytes."""
    state_data = dict(request.get("state") or {})
    declared = request.get("declared")
    declared = set(declared) if declared is not None else None
    context_values = dict(request.get("context_values") or {})
    now = context_values.pop(CLOCK_KEY, None)
    if isinstance(now, str) and now:
        freeze_clock(sandbox, now)
    # The values as given, to find the ones the code changed in place (below).
    given = {name: _canonical(value) for name, value in state_data.items()}
    cap = limits["max_output_bytes"]
    try:
        result = run_call(sandbox, request, state_data, declared, context_values, limits)
        result["state"] = final_state(state_data)
        if result.get("ok"):
            add_in_place_writes(result, given)
        result["protections"] = protections
        # ensure_ascii (the default): a lone surrogate ("\ud800") in a user string must not
        # make the encoding fail.
        payload = json.dumps(result).encode("ascii")
    except BaseException as exc:
        result = failed_result(classify(exc), describe(exc))
        result["protections"] = protections
        payload = json.dumps(result).encode("ascii")
    if len(payload) > cap:
        # Too large to send back: no effects at all (the parent keeps the given state).
        result = failed_result(
            "output_too_large",
            f"the result is {len(payload)} bytes, more than the {cap} allowed",
            stdout=result["stdout"][:1000],
        )
        result["protections"] = protections
        payload = json.dumps(result).encode("ascii")
    return payload


def call_process(sandbox, request, limits, jail, result_fd, setup=None):
    """The forked call process: drop privileges, run the call, write the answer, exit.

    Never returns (``os._exit`` in ``finally``): an exception here must not fall back into
    the session loop of the parent process image.
    """
    try:
        os.dup2(result_fd, 1)  # the answer goes to the session child, not to the host
        os.close(result_fd)
        os.close(0)  # the next requests are none of this call's business
        signal.signal(signal.SIGALRM, _on_timeout)
        signal.signal(signal.SIGXCPU, _on_timeout)
        setup = setup or {}
        protections = [
            *jail,
            *drop_privileges(limits, uid=setup.get("uid") or NOBODY),
            *install_seccomp(setup.get("filter")),
            "restricted_python",
        ]
        payload = call_result(sandbox, request, limits, protections)
        view = memoryview(payload)
        while view:
            view = view[os.write(1, view) :]
    finally:
        os._exit(0)


def run_forked(sandbox, request, limits, jail, setup=None):
    """Fork a call process, read its answer (bounded, with a deadline), reap it."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the forked process
        os.close(read_fd)
        call_process(sandbox, request, limits, jail, write_fd, setup)
    os.close(write_fd)
    deadline = time.monotonic() + limits["wall_time_s"] + CALL_KILL_GRACE_S
    cap = limits["max_output_bytes"] + 64 * 1024
    chunks, size = [], 0
    timed_out = too_large = False
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([read_fd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(read_fd, 65536)
            if not chunk:
                break
            size += len(chunk)
            if size > cap:
                too_large = True
                break
            chunks.append(chunk)
    finally:
        os.close(read_fd)
    # At end of file the process is exiting (its answer is complete, or it crashed: its exit
    # status is already decided); otherwise it overran.  Either way it must be gone before
    # the next call, so kill and reap it.
    os.kill(pid, signal.SIGKILL)  # not reaped yet, so the pid cannot have been reused
    _, status = os.waitpid(pid, 0)
    body = b"" if (timed_out or too_large) else b"".join(chunks)
    header = {
        "status": os.waitstatus_to_exitcode(status),
        "timed_out": timed_out,
        "too_large": too_large,
    }
    return header, body


def main():
    """The session child: set up once, then fork one call process per request."""
    stdin = sys.stdin.buffer
    hello, body = read_frame(stdin)
    if hello is None:
        os._exit(0)
    hello = json.loads(body)
    rp_path = hello.get("rp_path")
    if rp_path:
        sys.path.append(rp_path)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # cx_objects.py
    limits = hello["limits"]

    import gc
    import warnings

    warnings.simplefilter("ignore")
    sandbox = Sandbox()
    setup = {
        "uid": hello.get("sandbox_uid"),
        "filter": prepare_seccomp(bytes.fromhex(hello.get("filter") or "")),
    }
    # Started by bubblewrap, the namespaces and the read-only root are already in place.
    jail = list(hello["jail"]) if hello.get("jail") is not None else enter_jail()
    gc.collect()
    gc.freeze()  # fewer copy-on-write pages touched in each forked call process
    write_frame(1, json.dumps({"protections": jail}).encode("ascii"))
    while True:
        header, body = read_frame(stdin)
        if header is None:  # the host closed the session
            os._exit(0)
        request = json.loads(body)
        del body
        answer_header, answer = run_forked(sandbox, request, limits, jail, setup)
        del request
        write_frame(1, answer, **answer_header)


def failed_result(kind, message, stdout=""):
    return {
        "ok": False,
        "return_value": None,
        "error": {"kind": kind, "message": message, "line": None, "traceback": ""},
        "writes": [],
        "removed": [],
        "stdout": stdout,
        "stdout_truncated": bool(stdout),
        "undeclared": [],
        "duration_ms": None,
    }


if __name__ == "__main__":
    main()
