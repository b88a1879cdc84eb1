"""The language layer's policy: what user code may import, name, define and call.

The modules handed out (each a read-only :class:`SandboxModule`), the builtins added and
withheld, the dunders a class may define, RestrictedPython's transformer as the sandbox
extends it (:func:`build_policy`), and the small stand-ins user code gets (metaclass,
logger, safe formatter).  The run-time guards that apply it are in ``guards.py``.
Loaded in the session child beside ``runner.py``; RestrictedPython is imported lazily.
"""

from __future__ import annotations

import ast
import operator

import call_context
from call_context import ForbiddenOperation

# Modules user code may import; each is handed out as a read-only namespace holding the
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
        call_context.SINK.write(f"{self.LEVELS.get(level, level)} {self.name}: {text}\n")

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
