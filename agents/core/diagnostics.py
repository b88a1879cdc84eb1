"""Diagnostics: the one way the core reports a problem (never by raising)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType

from agents.core.codes import REGISTRY


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class Message(str):
    """A message in English that keeps its template and parameters.

    It *is* the English text (a ``str``: compared, joined, sliced and stored as before), and
    it carries the ``%(name)s`` template it was made from and the values filled in, so an
    adapter can render it in the reader's language: translate the template (the template is
    the catalog's msgid, marked for extraction by this class's name), then fill in the same
    parameters (`render`). A parameter may itself be a `Message` (rendered the same way).
    The core never translates: it has no idea of a language.
    """

    template: str
    params: Mapping[str, object]

    def __new__(cls, template: str, /, **params: object) -> Message:
        self = super().__new__(cls, template % params)
        self.template = template
        self.params = MappingProxyType(dict(params))
        return self

    def __reduce__(self) -> tuple[object, ...]:
        return _message, (self.template, dict(self.params))


def _message(template: str, params: dict[str, object]) -> Message:
    return Message(template, **params)


def message_data(message: str) -> object:
    """A message as JSON data that `message_from_data` reads back as the same `Message`
    (its template and parameters), so a stored report can be shown in any language."""
    if not isinstance(message, Message):
        return str(message)
    return {
        "template": message.template,
        "params": {
            k: message_data(v) if isinstance(v, str) else v for k, v in message.params.items()
        },
    }


def message_from_data(data: object, english: str = "") -> str:
    """The message `message_data` wrote (plain text stays text; anything else: `english`)."""
    if isinstance(data, str):
        return data
    if isinstance(data, dict) and isinstance(data.get("template"), str):
        params = data.get("params")
        params = params if isinstance(params, dict) else {}
        try:
            return Message(
                data["template"],
                **{
                    k: message_from_data(v, "") if isinstance(v, dict | str) else v
                    for k, v in params.items()
                },
            )
        except (KeyError, ValueError, TypeError):
            return english
    return english


def render(message: str, translate: Callable[[str], str]) -> str:
    """`message` in the language of `translate` (a gettext): its template translated, then
    its parameters filled in. A plain ``str`` is returned as it is; a translation whose
    placeholders do not fit the parameters falls back to the English text."""
    if not isinstance(message, Message):
        return str(message)
    params = {
        name: render(value, translate) if isinstance(value, Message) else value
        for name, value in message.params.items()
    }
    try:
        return translate(message.template) % params
    except (KeyError, ValueError, TypeError):
        return str(message)


_PLACEHOLDER = re.compile(r"%\((\w+)\)s|%%")


def strip_prefix(message: str, prefix: str) -> str:
    """`message` without a leading `prefix` (``"file: "``), keeping it a `Message` when it
    is one: the template loses the leading pieces that rendered the prefix."""
    if not prefix or not message.startswith(prefix):
        return message
    if not isinstance(message, Message):
        return message.removeprefix(prefix)
    pieces: list[tuple[str, str]] = []  # (template piece, its English)
    position = 0
    for match in _PLACEHOLDER.finditer(message.template):
        literal = message.template[position : match.start()]
        if literal:
            pieces.append((literal, literal))
        name = match.group(1)
        pieces.append((match.group(0), "%" if name is None else str(message.params[name])))
        position = match.end()
    if position < len(message.template):
        rest = message.template[position:]
        pieces.append((rest, rest))
    needed = prefix
    for index, (piece, english) in enumerate(pieces):
        if english.startswith(needed) and piece == english:  # a literal: split it
            tail = piece[len(needed) :]
            template = tail + "".join(p for p, _ in pieces[index + 1 :])
            break
        if needed.startswith(english):
            needed = needed[len(english) :]
            if not needed:
                template = "".join(p for p, _ in pieces[index + 1 :])
                break
            continue
        return message.removeprefix(prefix)  # the prefix ends inside a parameter
    else:
        return message.removeprefix(prefix)
    used = set(_PLACEHOLDER.findall(template)) - {""}
    return Message(template, **{k: v for k, v in message.params.items() if k in used})


class UnregisteredCode(ValueError):
    """A diagnostic was built with a code the registry (agents/core/codes.py) lacks."""


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """A problem a designer can act on.

    `code` is stable (documented in docs/reference/diagnostics.md); `line`/`column` are 1-based
    positions in the instructions when the problem is in text, `start`/`end`
    the character offsets of the offending span; `field` names the field a
    problem concerns when it is not in the instructions
    (e.g. ``variables.customer.default``); `subject` names the object
    (agent display name, variable, tool) the diagnostic belongs to; `reference` is the
    name a problem is about when it is not the subject (the undeclared variable that
    `{{x}}` names), so a page can act on it without reading the message.

    `code` must be in the registry (`agents.core.codes`): an unregistered code is refused
    here, at construction, so no code can be emitted undocumented. `message` is English; when
    it is a `Message` the diagnostic also carries its `template` and `params`, which the
    adapters render in the reader's language (`render`).
    """

    code: str
    severity: Severity
    message: str
    line: int | None = None
    column: int | None = None
    start: int | None = None
    end: int | None = None
    field: str | None = None
    subject: str | None = None
    reference: str | None = None

    def __post_init__(self) -> None:
        if self.code not in REGISTRY:
            raise UnregisteredCode(
                f"{self.code!r} is not a registered diagnostic code: add it, with its meaning, "
                "to agents/core/codes.py (and docs/reference/diagnostics.md)"
            )

    @property
    def template(self) -> str | None:
        """The message's template (the catalog's msgid), or None for a plain message."""
        return self.message.template if isinstance(self.message, Message) else None

    @property
    def params(self) -> Mapping[str, object]:
        return self.message.params if isinstance(self.message, Message) else MappingProxyType({})

    def localized(self, translate: Callable[[str], str]) -> str:
        """The message in the language of `translate` (see `render`)."""
        return render(self.message, translate)

    def to_dict(self, translate: Callable[[str], str] | None = None) -> dict[str, object]:
        """The diagnostic as JSON data; `translate` renders the message in a language."""
        return {
            "code": self.code,
            "severity": str(self.severity),
            "message": self.message if translate is None else render(self.message, translate),
            "line": self.line,
            "column": self.column,
            "start": self.start,
            "end": self.end,
            "field": self.field,
            "subject": self.subject,
            "reference": self.reference,
        }


def has_errors(diagnostics: tuple[Diagnostic, ...] | list[Diagnostic]) -> bool:
    return any(d.severity is Severity.ERROR for d in diagnostics)


def line_column(text: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of a character offset in `text`."""
    line = text.count("\n", 0, offset) + 1
    last_newline = text.rfind("\n", 0, offset)
    return line, offset - last_newline
