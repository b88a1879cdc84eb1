"""The run-time guards of the language layer: the :class:`Sandbox` built once per session
child (modules, builtins, attribute and write guards, restricted ``eval``/``compile``) and
the globals each call's code runs with.  What they allow is ``policy.py``.
"""

from __future__ import annotations

import functools
import operator
import sys
import types

import call_context
from call_context import (
    Context,
    ForbiddenAttribute,
    ForbiddenImport,
    ForbiddenOperation,
    LimitedPrintCollector,
    exact_name,
)
from policy import (
    ALLOWED_MODULES,
    CURRENT_CONTEXT,
    EXTRA_BLOCKED_ATTRIBUTES,
    EXTRA_BUILTINS,
    INPLACE_OPERATORS,
    MODULE_EXCLUSIONS,
    READABLE_DUNDERS,
    CompiledCode,
    SandboxMetaclass,
    SandboxModule,
    build_policy,
    check_class_namespace,
    is_private_name,
    logging_module_attributes,
    make_safe_formatter,
)


class Sandbox:
    """Everything user code can reach, built once per child (fresh globals per call)."""

    def __init__(self):
        import string

        import cx_objects
        from RestrictedPython import compile_restricted_eval, compile_restricted_exec
        from RestrictedPython.Guards import (
            full_write_guard,
            guarded_iter_unpack_sequence,
            guarded_unpack_sequence,
            safe_builtins,
        )

        self.cx = cx_objects
        call_context.CX_MODULE[:] = [cx_objects]
        call_context.CX_TYPES = (cx_objects.CxObject,)
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
        # likes; from here on only the exact text counts. (An exact str is its own exact
        # text: the call is skipped for it, the guard's most frequent case.)
        if type(name) is not str:
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
