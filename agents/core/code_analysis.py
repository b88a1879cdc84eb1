"""Static analysis of tool and callback code: which variables it reads and writes (never runs it).

Python code is parsed with ``ast`` only. A state access is recognised on the
ADK context objects (``context``, ``callback_context``, ``tool_context``), on
their ``.state`` / ``.variables`` mappings, and on local aliases of those
(``state = context.state``):

- writes: ``ctx.state["x"] = v`` (also ``+=``, annotated and chained
  assignments, tuple unpacking), ``ctx.state.update({"x": v}, y=w)``,
  ``ctx.state.setdefault("x", v)``, ``ctx.set_variable("x", v)``;
- removals: ``del ctx.state["x"]``, ``ctx.state.pop("x")``,
  ``ctx.remove_variable("x")``;
- reads: ``ctx.state["x"]``, ``ctx.state.get("x")``, ``"x" in ctx.state``,
  ``ctx.get_variable("x")``.

A key that is not a string literal (nor a module-level string constant) gives
an access whose ``name`` is ``None``: the linter says it cannot check it.

``context_refs`` finds ``$context.…`` built-in references in the strings of
OpenAPI and MCP tools.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from agents.core.diagnostics import Diagnostic, Message, Severity

__all__ = [
    "BUILTIN_CONTEXT_NAMES",
    "CONTEXT_OBJECT_NAMES",
    "CodeAnalysis",
    "ContextRef",
    "StateRead",
    "StateWrite",
    "analyze_code",
    "context_refs",
    "function_parameters",
]

CONTEXT_OBJECT_NAMES = frozenset({"context", "callback_context", "tool_context"})
_STATE_ATTRIBUTES = frozenset({"state", "variables"})

# `$context.<name>` built-ins (SPEC seeds, "Variables de contexte de session intégrées").
BUILTIN_CONTEXT_NAMES = frozenset(
    {"project_id", "project_number", "location", "app_id", "session_id", "turn_index"}
)

SYNTAX_ERROR_CODE = "SC351"

# What `value_kind` can be: the VariableType values, plus "null" for None.
KIND_NUMBER = "number"
KIND_TEXT = "text"
KIND_BOOLEAN = "boolean"
KIND_OBJECT = "object"
KIND_LIST = "list"
KIND_NULL = "null"


class _NoValue:
    """Marks a write whose value is not a literal (``StateWrite.value`` is meaningless)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_VALUE"

    def __bool__(self) -> bool:
        return False


NO_VALUE: Any = _NoValue()


@dataclass(frozen=True, slots=True)
class StateWrite:
    """One place where code changes a variable.

    `name` is None when the key is computed; `line`/`column` are 1-based (column
    in characters). `value_kind` is the statically known kind of the value
    (``number``, ``text``, ``boolean``, ``object``, ``list``, ``null``) or None.
    `value` is the value itself when it is a literal (``literal`` is then True).
    """

    name: str | None
    line: int
    column: int
    value_kind: str | None = None
    removal: bool = False
    augmented: bool = False
    literal: bool = False
    value: Any = NO_VALUE


@dataclass(frozen=True, slots=True)
class StateRead:
    name: str | None
    line: int
    column: int


@dataclass(frozen=True, slots=True)
class CodeAnalysis:
    writes: tuple[StateWrite, ...] = ()
    reads: tuple[StateRead, ...] = ()
    functions: tuple[str, ...] = ()
    docstrings: tuple[tuple[str, str], ...] = ()
    syntax_error: Diagnostic | None = None

    def docstring_of(self, name: str) -> str | None:
        """The docstring of the top-level function `name`, or None (no such function / none)."""
        for function, docstring in self.docstrings:
            if function == name:
                return docstring or None
        return None

    @property
    def written_names(self) -> frozenset[str]:
        return frozenset(w.name for w in self.writes if w.name is not None and not w.removal)

    @property
    def read_names(self) -> frozenset[str]:
        return frozenset(r.name for r in self.reads if r.name is not None)


# ---------------------------------------------------------------------------
# Python code


def analyze_code(code: str, *, filename: str = "<tool>") -> CodeAnalysis:
    """What `code` does with variables. Never raises, never executes anything.

    Results are cached by code text: the live preview asks again on every keystroke.
    """
    if not isinstance(code, str):
        code = str(code)
    return _analyze_cached(code, filename)


@lru_cache(maxsize=512)
def _analyze_cached(code: str, filename: str) -> CodeAnalysis:
    try:
        tree = ast.parse(code, filename=filename)
    except SyntaxError as error:
        return CodeAnalysis(syntax_error=_syntax_diagnostic(error, code))
    except (ValueError, RecursionError, MemoryError) as error:  # null bytes, absurd nesting
        message = Message(
            "The code cannot be read: %(value)s.", value=error or type(error).__name__
        )
        return CodeAnalysis(
            syntax_error=Diagnostic(SYNTAX_ERROR_CODE, Severity.ERROR, message, line=1, column=1)
        )
    try:
        return _Analyzer(code, tree).run()
    except RecursionError:  # a pathologically deep expression; treat as "nothing known"
        return CodeAnalysis()


@lru_cache(maxsize=256)
def function_parameters(code: str, entry: str) -> tuple[str, ...] | None:
    """The parameters a model fills in for the top-level function `entry` of `code` (those
    other than the context ADK and CX pass: ``tool_context``, ``context``,
    ``callback_context``), or None when the code does not parse or has no such function.
    ``*args``/``**kwargs`` count as a parameter (the model may send anything)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == entry:
            args = node.args
            names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
            names += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
            return tuple(n for n in names if n not in CONTEXT_OBJECT_NAMES)
    return None


def _syntax_diagnostic(error: SyntaxError, code: str) -> Diagnostic:
    line = error.lineno or 1
    column = error.offset or 1
    reason = error.msg or "invalid syntax"
    source_line = code.splitlines()[line - 1] if 0 < line <= len(code.splitlines()) else ""
    shown = f": `{source_line.strip()[:80]}`" if source_line.strip() else ""
    message = Message(
        "Python syntax error on line %(line)s (%(reason)s)%(shown)s.",
        line=line,
        reason=reason,
        shown=shown,
    )
    return Diagnostic(SYNTAX_ERROR_CODE, Severity.ERROR, message, line=line, column=column)


class _Analyzer:
    def __init__(self, code: str, tree: ast.Module) -> None:
        self.lines = code.splitlines()
        self.tree = tree
        self.writes: list[StateWrite] = []
        self.reads: list[StateRead] = []
        self.handled: set[int] = set()  # ids of subscript nodes already recorded as writes
        self.constants = self._module_constants()
        self.aliases = self._state_aliases()

    # -- setup

    def _module_constants(self) -> dict[str, str]:
        """Module-level ``NAME = "text"`` assignments, so ``state[NAME]`` can be resolved."""
        constants: dict[str, str] = {}
        reassigned: set[str] = set()
        for statement in self.tree.body:
            if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
                target, value = statement.targets[0], statement.value
            elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
                target, value = statement.target, statement.value
            else:
                continue
            if not isinstance(target, ast.Name):
                continue
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                if target.id in constants:
                    reassigned.add(target.id)
                constants[target.id] = value.value
            else:
                reassigned.add(target.id)
        return {name: value for name, value in constants.items() if name not in reassigned}

    def _state_aliases(self) -> frozenset[str]:
        """Names bound anywhere to ``<context>.state`` (flow-insensitive)."""
        aliases: set[str] = set()
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Assign):
                value = node.value
                targets = node.targets
            elif isinstance(node, ast.AnnAssign | ast.NamedExpr) and node.value is not None:
                value = node.value
                targets = [node.target]
            else:
                continue
            if _is_direct_state(value):
                aliases.update(t.id for t in targets if isinstance(t, ast.Name))
        return frozenset(aliases - CONTEXT_OBJECT_NAMES)

    # -- helpers

    def is_state(self, node: ast.expr) -> bool:
        """Whether `node` is a variable mapping: ``context.state`` or an alias of it."""
        if _is_direct_state(node):
            return True
        return isinstance(node, ast.Name) and node.id in self.aliases

    def key_name(self, node: ast.expr) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            return self.constants.get(node.id)
        return None

    def position(self, node: ast.AST) -> tuple[int, int]:
        line = getattr(node, "lineno", 1) or 1
        offset = getattr(node, "col_offset", 0) or 0
        if 0 < line <= len(self.lines):
            column = len(self.lines[line - 1].encode("utf-8")[:offset].decode("utf-8", "replace"))
        else:
            column = offset
        return line, column + 1

    def write(
        self,
        at: ast.AST,
        key: ast.expr | None,
        value: ast.expr | None,
        *,
        removal: bool = False,
        augmented: bool = False,
        kind: str | None = None,
        name: str | None = None,
    ) -> None:
        line, column = self.position(at)
        if key is not None:
            name = self.key_name(key)
        literal, literal_value = False, NO_VALUE
        if value is not None and not removal:
            kind = _value_kind(value)
            if not augmented:
                literal, literal_value = _literal(value)
        self.writes.append(
            StateWrite(name, line, column, kind, removal, augmented, literal, literal_value)
        )

    def read(self, at: ast.AST, key: ast.expr | None, *, name: str | None = None) -> None:
        line, column = self.position(at)
        if key is not None:
            name = self.key_name(key)
        self.reads.append(StateRead(name, line, column))

    # -- the walk

    def run(self) -> CodeAnalysis:
        # Assignments first, so their subscripts are known as writes with a value.
        nodes = list(ast.walk(self.tree))
        for node in nodes:
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    self._assign(target, node.value)
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                self._assign(node.target, node.value)
            elif isinstance(node, ast.AugAssign):
                self._augmented(node)
        for node in nodes:
            if isinstance(node, ast.Subscript) and self.is_state(node.value):
                self._subscript(node)
            elif isinstance(node, ast.Call):
                self._call(node)
            elif isinstance(node, ast.Compare):
                self._membership(node)
        self.writes.sort(key=lambda w: (w.line, w.column))
        self.reads.sort(key=lambda r: (r.line, r.column))
        functions: list[str] = []
        docstrings: list[tuple[str, str]] = []
        for statement in self.tree.body:
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
                functions.append(statement.name)
                docstrings.append((statement.name, ast.get_docstring(statement) or ""))
        return CodeAnalysis(
            writes=tuple(self.writes),
            reads=tuple(self.reads),
            functions=tuple(functions),
            docstrings=tuple(docstrings),
        )

    def _assign(self, target: ast.expr, value: ast.expr | None) -> None:
        if isinstance(target, ast.Subscript) and self.is_state(target.value):
            self.handled.add(id(target))
            self.write(target, target.slice, value)
        elif isinstance(target, ast.Subscript | ast.Attribute):
            # `context.state["order"]["total"] = 3` changes the variable `order` in place.
            inner = target.value
            while isinstance(inner, ast.Subscript | ast.Attribute) and not (
                isinstance(inner, ast.Subscript) and self.is_state(inner.value)
            ):
                inner = inner.value
            if isinstance(inner, ast.Subscript) and self.is_state(inner.value):
                self.write(inner, inner.slice, None)
        elif isinstance(target, ast.Tuple | ast.List):
            values: list[ast.expr | None]
            if (
                isinstance(value, ast.Tuple | ast.List)
                and len(value.elts) == len(target.elts)
                and not any(isinstance(e, ast.Starred) for e in target.elts + value.elts)
            ):
                values = list(value.elts)
            else:
                values = [None] * len(target.elts)
            for element, element_value in zip(target.elts, values, strict=True):
                inner = element.value if isinstance(element, ast.Starred) else element
                self._assign(inner, element_value)

    def _augmented(self, node: ast.AugAssign) -> None:
        target = node.target
        if not (isinstance(target, ast.Subscript) and self.is_state(target.value)):
            return
        self.handled.add(id(target))
        value_kind = _value_kind(node.value)
        kind = None
        if value_kind == KIND_NUMBER and isinstance(node.op, _ARITHMETIC):
            kind = KIND_NUMBER
        elif isinstance(node.op, ast.Add) and value_kind in (KIND_TEXT, KIND_LIST):
            kind = value_kind
        elif isinstance(node.op, ast.BitOr) and value_kind == KIND_OBJECT:
            kind = KIND_OBJECT
        line, column = self.position(target)
        name = self.key_name(target.slice)
        self.reads.append(StateRead(name, line, column))
        self.writes.append(StateWrite(name, line, column, kind, augmented=True))

    def _subscript(self, node: ast.Subscript) -> None:
        if id(node) in self.handled:
            return
        if isinstance(node.ctx, ast.Load):
            self.read(node, node.slice)
        elif isinstance(node.ctx, ast.Del):
            self.write(node, node.slice, None, removal=True)
        else:  # a store we did not see the value of (for-loop target, with ... as)
            self.write(node, node.slice, None)

    def _call(self, node: ast.Call) -> None:
        function = node.func
        if not isinstance(function, ast.Attribute):
            return
        method = function.attr
        owner = function.value
        args = node.args
        if self.is_state(owner):
            if method == "get" and args:
                self.read(node, args[0])
            elif method == "update":
                self._update(node)
            elif method == "setdefault" and args:
                self.read(node, args[0])
                self.write(node, args[0], args[1] if len(args) > 1 else ast.Constant(None))
            elif method == "pop" and args:
                self.read(node, args[0])
                self.write(node, args[0], None, removal=True)
            elif method in ("clear", "popitem"):
                self.write(node, None, None, removal=True)
            return
        if not (isinstance(owner, ast.Name) and owner.id in CONTEXT_OBJECT_NAMES):
            return
        key = args[0] if args else _keyword(node, "name")
        if method == "set_variable":
            value = args[1] if len(args) > 1 else _keyword(node, "value")
            if key is not None:
                self.write(node, key, value)
        elif method == "remove_variable" and key is not None:
            self.write(node, key, None, removal=True)
        elif method == "get_variable" and key is not None:
            self.read(node, key)

    def _update(self, node: ast.Call) -> None:
        for argument in node.args:
            if isinstance(argument, ast.Dict):
                for key, value in zip(argument.keys, argument.values, strict=True):
                    if key is None:  # `**other` inside the literal
                        self.write(node, None, None)
                    else:
                        self.write(key, key, value)
            else:
                self.write(node, None, None)
        for keyword in node.keywords:
            if keyword.arg is None:
                self.write(node, None, None)
            else:
                self.write(keyword, None, keyword.value, name=keyword.arg)

    def _membership(self, node: ast.Compare) -> None:
        left = node.left
        for operator, right in zip(node.ops, node.comparators, strict=True):
            if isinstance(operator, ast.In | ast.NotIn) and self.is_state(right):
                self.read(left, left)
            left = right


_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)


def _is_direct_state(node: ast.expr | None) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr in _STATE_ATTRIBUTES
        and isinstance(node.value, ast.Name)
        and node.value.id in CONTEXT_OBJECT_NAMES
    )


def _keyword(node: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in node.keywords if k.arg == name), None)


def _literal(node: ast.expr) -> tuple[bool, Any]:
    """``(True, value)`` when `node` is a literal of JSON-like data (tuples become lists)."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, NO_VALUE
    try:
        return True, _json_like(value)
    except (TypeError, RecursionError):
        return False, NO_VALUE


def _json_like(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return [_json_like(item) for item in value]
    if isinstance(value, dict):
        return {key: _json_like(item) for key, item in value.items()}
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise TypeError(type(value).__name__)  # sets, bytes, complex: not a variable value


_CALL_KINDS = {
    "str": KIND_TEXT,
    "repr": KIND_TEXT,
    "format": KIND_TEXT,
    "int": KIND_NUMBER,
    "float": KIND_NUMBER,
    "len": KIND_NUMBER,
    "round": KIND_NUMBER,
    "abs": KIND_NUMBER,
    "sum": KIND_NUMBER,
    "bool": KIND_BOOLEAN,
    "isinstance": KIND_BOOLEAN,
    "any": KIND_BOOLEAN,
    "all": KIND_BOOLEAN,
    "dict": KIND_OBJECT,
    "list": KIND_LIST,
    "sorted": KIND_LIST,
}
_STR_METHODS = frozenset(
    {
        "format",
        "join",
        "upper",
        "lower",
        "strip",
        "lstrip",
        "rstrip",
        "title",
        "capitalize",
        "replace",
        "casefold",
    }
)


def _value_kind(node: ast.expr | None, depth: int = 0) -> str | None:
    """The kind of value `node` evaluates to, when it is obvious without running anything."""
    if node is None or depth > 20:
        return None
    if isinstance(node, ast.Constant):
        value = node.value
        if value is None:
            return KIND_NULL
        if isinstance(value, bool):
            return KIND_BOOLEAN
        if isinstance(value, int | float):
            return KIND_NUMBER
        if isinstance(value, str):
            return KIND_TEXT
        return None
    if isinstance(node, ast.JoinedStr):
        return KIND_TEXT
    if isinstance(node, ast.Dict | ast.DictComp):
        return KIND_OBJECT
    if isinstance(node, ast.List | ast.ListComp | ast.Tuple):
        return KIND_LIST
    if isinstance(node, ast.Compare):
        return KIND_BOOLEAN
    if isinstance(node, ast.UnaryOp):
        if isinstance(node.op, ast.Not):
            return KIND_BOOLEAN
        inner = _value_kind(node.operand, depth + 1)
        return KIND_NUMBER if inner in (KIND_NUMBER, KIND_BOOLEAN) else None
    if isinstance(node, ast.BinOp):
        left = _value_kind(node.left, depth + 1)
        right = _value_kind(node.right, depth + 1)
        if isinstance(node.op, ast.Mod) and left == KIND_TEXT:
            return KIND_TEXT
        if left == right == KIND_NUMBER and isinstance(node.op, _ARITHMETIC):
            return KIND_NUMBER
        if isinstance(node.op, ast.Add) and left == right and left in (KIND_TEXT, KIND_LIST):
            return left
        if isinstance(node.op, ast.BitOr) and left == right == KIND_OBJECT:
            return KIND_OBJECT
        return None
    if isinstance(node, ast.IfExp | ast.BoolOp):
        branches = [node.body, node.orelse] if isinstance(node, ast.IfExp) else node.values
        kinds = {_value_kind(b, depth + 1) for b in branches}
        return kinds.pop() if len(kinds) == 1 else None
    if isinstance(node, ast.Call):
        function = node.func
        if isinstance(function, ast.Name):
            return _CALL_KINDS.get(function.id)
        if (
            isinstance(function, ast.Attribute)
            and function.attr in _STR_METHODS
            and _value_kind(function.value, depth + 1) == KIND_TEXT
        ):
            return KIND_TEXT
    return None


# ---------------------------------------------------------------------------
# `$context` references in OpenAPI / MCP tools

_CONTEXT_REF = re.compile(r"\$context(?![A-Za-z0-9_])((?:\.[A-Za-z0-9_]+)*)", re.ASCII)


@dataclass(frozen=True, slots=True)
class ContextRef:
    """A ``$context…`` reference found in a string; `start`/`end` are offsets in it.

    `path` is what follows ``$context`` (``("variables", "customer_id")``).
    """

    raw: str
    start: int
    end: int
    path: tuple[str, ...]

    @property
    def builtin(self) -> str | None:
        """The built-in name (``session_id``), when this is a plain built-in."""
        if len(self.path) == 1 and self.path[0] in BUILTIN_CONTEXT_NAMES:
            return self.path[0]
        return None

    @property
    def all_variables(self) -> bool:
        """``$context.variables``: every variable value, as one object."""
        return self.path == ("variables",)

    @property
    def variable(self) -> str | None:
        """The variable of ``$context.variables.<name>``, else None."""
        if len(self.path) >= 2 and self.path[0] == "variables":
            return self.path[1]
        return None

    @property
    def valid_name(self) -> bool:
        """Whether the part after ``$context`` is a name the runtime provides
        (the variable itself is checked by the linter)."""
        return bool(self.builtin or self.all_variables or self.variable)


def context_refs(text: str) -> list[ContextRef]:
    """Every ``$context…`` reference in `text`, in order."""
    if not isinstance(text, str) or "$context" not in text:
        return []
    found: list[ContextRef] = []
    for match in _CONTEXT_REF.finditer(text):
        rest = match.group(1)
        path = tuple(rest[1:].split(".")) if rest else ()
        found.append(ContextRef(match.group(0), match.start(), match.end(), path))
    return found
