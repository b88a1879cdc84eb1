"""What the user's code sees of its call: ``context``, its state, printed output, JSON values.

Loaded in the session child beside ``runner.py`` (a top-level module there: the jail shows
this directory as ``/sandbox``); standard library only.  Also holds the exceptions the
language layer raises, so that the runner can classify them.
"""

from __future__ import annotations

MAX_JSON_DEPTH = 64
MAX_INT_BITS = 1024

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


STATE_KEY_MAX_LENGTH = 256


def state_key(name):
    """*name* as a key of the session state: an exact ``str`` of 1 to 256 characters, no
    control character, not a ``__dunder`` (``__proto__``). The host checks the same rule
    on every write it is answered (agents/sandbox/answers.py)."""
    name = exact_name(name)
    if (
        not name
        or len(name) > STATE_KEY_MAX_LENGTH
        or name.startswith("__")
        or any(ch < " " or ch == "\x7f" for ch in name)
    ):
        raise ValueError(
            f"{name[:60]!r} is not a state key: 1 to {STATE_KEY_MAX_LENGTH} characters, "
            "no control characters, not starting with '__'"
        )
    return name


class _NoCopy:
    """What the context's objects share: they hold the recorder, so none is copied or
    pickled as itself (`copy.deepcopy(state, memo)` kept every original it walked in
    ``memo[id(memo)]``, the recorder among them). State copies as a plain dict instead."""

    __slots__ = ()

    def __reduce_ex__(self, protocol):
        raise TypeError(f"{type(self).__name__} objects cannot be copied or pickled")

    def __reduce__(self):
        raise TypeError(f"{type(self).__name__} objects cannot be copied or pickled")

    def __copy__(self):
        raise TypeError(f"{type(self).__name__} objects cannot be copied")

    def __deepcopy__(self, memo):
        raise TypeError(f"{type(self).__name__} objects cannot be copied")

    def __replace__(self, **changes):
        raise TypeError(f"{type(self).__name__} objects cannot be replaced")


class NotSerializable(TypeError):
    """A value written to state (or returned) is not JSON-serializable."""


# ------------------------------------------------------------------------ JSON checking


class _NotPlain(Exception):
    """Internal: not made of exact JSON types only (:func:`_plain_copy`)."""


def _plain_copy(value, depth):
    """The copy :func:`to_json_value` makes, for a value made only of the exact built-in
    types (no subclass, no CX object) within the limits; raises :class:`_NotPlain` for
    anything else, with no message built on the way (the common case, ~40% of a call's
    time when every element's path was formatted)."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return value
    if kind is dict:
        if depth >= MAX_JSON_DEPTH:
            raise _NotPlain
        out = {}
        for k, v in value.items():
            if type(k) is not str:
                raise _NotPlain
            out[k] = _plain_copy(v, depth + 1)
        return out
    if kind is list or kind is tuple:
        if depth >= MAX_JSON_DEPTH:
            raise _NotPlain
        return [_plain_copy(v, depth + 1) for v in value]
    if kind is int:
        if value.bit_length() > MAX_INT_BITS:
            raise _NotPlain
        return value
    if kind is float:
        if value != value or value in (float("inf"), float("-inf")):
            raise _NotPlain
        return value
    raise _NotPlain


def to_json_value(value, path="value", depth=0):
    """Return a plain-JSON deep copy of *value* or raise :class:`NotSerializable`.

    Accepted: None, bool, int, finite float, str, list/tuple, dict with str keys.
    """
    try:
        return _plain_copy(value, depth)
    except (_NotPlain, RecursionError):
        return _checked_copy(value, path, depth)


def _checked_copy(value, path, depth):
    """:func:`to_json_value` the long way: subclasses through the base methods, CX
    objects through ``to_json``, and the path of what is wrong in the message."""
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
        return [_checked_copy(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(items)]
    if isinstance(value, dict):
        out = {}
        for k, v in dict.items(value):
            if not isinstance(k, str):
                raise NotSerializable(f"{path} has a key that is not a string")
            key = str.__str__(k)
            out[key] = _checked_copy(v, f"{path}[{key!r}]", depth + 1)
        return out
    if CX_TYPES and isinstance(value, CX_TYPES):
        return to_json_value(value.to_json(), path, depth + 1)
    raise NotSerializable(
        f"{path} is of type {type(value).__name__}, which is not JSON-serializable"
    )


# ------------------------------------------------------------------------ the context


class State(_NoCopy):
    """``context.state`` / ``context.variables``: a dict-like view that records writes.

    `copy.copy` / `copy.deepcopy` give a plain dict of the values (never a State, never
    the recorder behind it); pickling is refused."""

    _guarded_writes = True  # RestrictedPython's write guard lets item assignment through
    __slots__ = ("_data", "_recorder")  # and no attribute can be added or replaced

    def __init__(self, data, recorder):
        self._data = data
        self._recorder = recorder

    def __copy__(self):
        return dict(self._data)

    def __deepcopy__(self, memo):
        import copy

        # A new memo: the caller's never holds (nor keeps alive) anything of this object.
        return copy.deepcopy(dict(self._data), {})

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


class Recorder(_NoCopy):
    """Applies writes to the live state and records them in order."""

    __slots__ = ("data", "removed", "writes")

    def __init__(self, data):
        self.data = data
        self.writes = []  # [name, json value]
        self.removed = []  # names whose write was a removal (in order)

    def set(self, name, value):
        name = state_key(name)
        snapshot = to_json_value(value, f"the value written to {name!r}")
        self.data[name] = value
        self.writes.append([name, snapshot])

    def remove(self, name):
        name = state_key(name)
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


class Context(_NoCopy):
    """The global ``context`` (also passed as ``callback_context`` / ``tool_context``).
    Not copied or pickled (it holds the state); `copy.deepcopy(context.state)` gives the
    values."""

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
