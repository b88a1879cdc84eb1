"""What an app may hold: the one rule set, used by the services, the import and lint.

Each rule is a function that returns diagnostics (never raises) with `field` naming
the field relative to its object (``name``, ``python_code``…); callers that check a
whole app (the import) prefix the object's path. Limits, choices and defaults are
defined here once; the models, forms, services and formats read them from here.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from agents.core.diagnostics import Diagnostic, Severity
from agents.core.spec import AppSpec
from agents.core.types import validate_value

__all__ = [
    "APP_NAME_MAX_LENGTH",
    "CHANNELS",
    "CODES",
    "DISPLAY_NAME_MAX_LENGTH",
    "MAX_ID",
    "MODALITIES",
    "NAME_MAX_LENGTH",
    "NAME_PATTERN",
    "SCENARIO_DEFAULTS",
    "app_name_problems",
    "channel_problems",
    "display_name_problems",
    "modality_problems",
    "name_problems",
    "parse_python",
    "python_problems",
    "scenario_name_problems",
    "session_values_problems",
    "token_budget_problems",
]

CODES: dict[str, str] = {
    "SC001": "A field has a value the object cannot be saved with.",
    "SC002": "Someone else saved the object since you opened it (no lost update).",
    "SC003": "A name is missing, too long or has characters a name cannot have.",
    "SC004": "A name is already used in this app.",
    "SC005": "An unknown variable type, tool kind or callback kind.",
    "SC006": "A custom object has no schema, or a schema of another app.",
    "SC007": "Python code of a tool or callback does not parse.",
    "SC008": "A JSON field has the wrong shape (object expected).",
    "SC009": "A scenario setting is out of range (budget, channel, modality).",
    "SC010": "A scenario sets a variable the app does not declare.",
}

# Names of variables, schemas and tools (CX Agent Studio's rule for Python identifiers).
NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
NAME_MAX_LENGTH = 64
APP_NAME_MAX_LENGTH = 200
DISPLAY_NAME_MAX_LENGTH = 200  # agents
SCENARIO_NAME_MAX_LENGTH = 200
URL_MAX_LENGTH = 200
CHANNELS = ("web", "api", "telephony")
MODALITIES = ("text", "voice")
SCENARIO_DEFAULTS: Mapping[str, Any] = {
    "channel": "web",
    "modality": "text",
    "session_id": "session-1",
    "project_id": "my-project",
    "project_number": "123456789",
    "location": "us-central1",
    "token_budget": 8000,
    "use_mocks": False,
}
MAX_ID = 2**63 - 1  # the largest primary key a database can hold (PostgreSQL bigint)

_NAME_RE = re.compile(NAME_PATTERN)
E = Severity.ERROR


def _error(code: str, field: str, message: str, subject: str | None = None) -> Diagnostic:
    return Diagnostic(code, E, message, field=field, subject=subject)


def name_problems(name: str, field: str = "name", subject: str | None = None) -> list[Diagnostic]:
    """A variable, schema or tool name: required, at most 64 characters, an identifier."""
    if not name:
        return [_error("SC003", field, "Name is required.", subject)]
    if len(name) > NAME_MAX_LENGTH:
        message = f"Name is too long: at most {NAME_MAX_LENGTH} characters."
        return [_error("SC003", field, message, subject)]
    if not _NAME_RE.match(name):
        message = (
            f"'{name}' is not a valid name: use letters, digits and underscores, "
            "not starting with a digit (for example customer_name)."
        )
        return [_error("SC003", field, message, subject)]
    return []


def app_name_problems(name: str, field: str = "name") -> list[Diagnostic]:
    name = name.strip()
    if not name:
        return [_error("SC003", field, "Give the app a name.")]
    if len(name) > APP_NAME_MAX_LENGTH:
        message = f"The app's name is too long: at most {APP_NAME_MAX_LENGTH} characters."
        return [_error("SC003", field, message)]
    return []


def display_name_problems(name: str, field: str = "display_name") -> list[Diagnostic]:
    """An agent's display name: what `{@AGENT: …}` names, so no braces."""
    name = name.strip()
    if not name:
        return [_error("SC003", field, "Give the agent a display name.")]
    if len(name) > DISPLAY_NAME_MAX_LENGTH:
        message = f"The display name is too long: at most {DISPLAY_NAME_MAX_LENGTH} characters."
        return [_error("SC003", field, message, name)]
    if "{" in name or "}" in name:
        return [_error("SC003", field, "A display name cannot contain braces { }.", name)]
    return []


def parse_python(code: str) -> ast.Module | Diagnostic:
    """The module `code` parses to, or why it cannot be read (never raises).

    Deeply nested code makes CPython's parser raise RecursionError or MemoryError
    rather than SyntaxError; a NUL byte raises ValueError. Each is a problem with the
    code, not a crash of whoever asked.
    """
    try:
        return ast.parse(code)
    except SyntaxError as exc:
        message = f"Line {exc.lineno}: {exc.msg}. Fix the Python syntax."
        return Diagnostic("SC007", E, message, line=exc.lineno, column=exc.offset)
    except (RecursionError, MemoryError):
        message = "The code is nested too deeply to be read; flatten it (fewer nested levels)."
        return Diagnostic("SC007", E, message)
    except ValueError as exc:
        return Diagnostic("SC007", E, f"The code cannot be read: {exc}.")


def python_problems(
    code: str, field: str, *, required: bool = False, subject: str | None = None
) -> list[Diagnostic]:
    """Python code of a tool or callback: it must parse (and exist, when `required`)."""
    if not code.strip():
        if required:
            return [_error("SC007", field, "The callback needs Python code.", subject)]
        return []
    parsed = parse_python(code)
    if isinstance(parsed, Diagnostic):
        return [replace(parsed, field=field, subject=subject)]
    return []


def channel_problems(channel: str, field: str = "channel") -> list[Diagnostic]:
    if channel in CHANNELS:
        return []
    return [_error("SC009", field, f"Channel must be one of {', '.join(CHANNELS)}.")]


def modality_problems(modality: str, field: str = "modality") -> list[Diagnostic]:
    if modality in MODALITIES:
        return []
    return [_error("SC009", field, f"Modality must be one of {', '.join(MODALITIES)}.")]


def token_budget_problems(budget: Any, field: str = "token_budget") -> list[Diagnostic]:
    if isinstance(budget, int) and not isinstance(budget, bool) and 1 <= budget <= MAX_ID:
        return []
    return [_error("SC009", field, "The context window needs at least 1 token.")]


def scenario_name_problems(name: str, field: str = "name") -> list[Diagnostic]:
    name = name.strip()
    if not name:
        return [_error("SC003", field, "Give the scenario a name.")]
    if len(name) > SCENARIO_NAME_MAX_LENGTH:
        message = f"The scenario's name is too long: at most {SCENARIO_NAME_MAX_LENGTH} characters."
        return [_error("SC003", field, message)]
    return []


def duplicates(names: Iterable[str], *, fold: bool = False) -> list[str]:
    """Names that appear more than once (case-insensitively with `fold`), in order."""
    seen: set[str] = set()
    repeated: list[str] = []
    for name in names:
        key = name.casefold() if fold else name
        if key in seen and name not in repeated:
            repeated.append(name)
        seen.add(key)
    return repeated


def session_values_problems(
    values: Any, app: AppSpec, field: str = "session_values"
) -> list[Diagnostic]:
    """Session values of a scenario or a preview: one JSON object of declared variables, each
    value fitting its variable's type or schema. Each problem's `subject` is the variable."""
    if not isinstance(values, dict):
        message = 'Session values are one JSON object: {"name": value}.'
        return [_error("SC008", field, message)]
    schemas = {s.name: s.schema for s in app.schemas}
    problems: list[Diagnostic] = []
    for name, value in values.items():
        variable = app.variable(name)
        if variable is None:
            message = f"'{name}' is not a declared variable."
            problems.append(_error("SC010", field, message, subject=name))
            continue
        for d in validate_value(value, variable, schemas, field=field):
            if d.severity is E:
                problems.append(replace(d, field=field, subject=name))
    return problems
