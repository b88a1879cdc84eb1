"""Diagnostics: the one way the core reports a problem (never by raising)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """A problem a designer can act on.

    `code` is stable (documented in the README); `line`/`column` are 1-based
    positions in the instructions when the problem is in text, `start`/`end`
    the character offsets of the offending span; `field` names the field a
    problem concerns when it is not in the instructions
    (e.g. ``variables.customer.default``); `subject` names the object
    (agent display name, variable, tool) the diagnostic belongs to; `reference` is the
    name a problem is about when it is not the subject (the undeclared variable that
    `{{x}}` names), so a page can act on it without reading the message.
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

    def to_dict(self) -> dict[str, object]:
        return {
            "code": self.code,
            "severity": str(self.severity),
            "message": self.message,
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
