"""What an app may hold: the one rule set, used by the services, the import and lint.

Each rule is a function that returns diagnostics (never raises) with `field` naming
the field relative to its object (``name``, ``python_code``…); callers that check a
whole app (the import) prefix the object's path. Limits, choices and defaults are
defined here once; the models, forms, services and formats read them from here.
"""

from __future__ import annotations

import ast
import difflib
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from typing import Any

from agents.core import codes, limits
from agents.core.diagnostics import Diagnostic, Message, Severity
from agents.core.schemas import check_schema
from agents.core.script import format_script, parse_script
from agents.core.spec import (
    AppSpec,
    CallbackKind,
    ExpectKind,
    ScenarioSpec,
    SessionSpec,
    StepKind,
    StepSpec,
    ToolKind,
    VariableType,
)
from agents.core.types import validate_value

__all__ = [
    "APP_NAME_MAX_LENGTH",
    "AUDIT_ACTION_MAX_LENGTH",
    "AUDIT_OBJECT_TYPE_MAX_LENGTH",
    "CALLBACK_KIND_MAX_LENGTH",
    "CHANNELS",
    "CHANNEL_MAX_LENGTH",
    "CODES",
    "DISPLAY_NAME_MAX_LENGTH",
    "ENDPOINT_KIND_MAX_LENGTH",
    "END_SESSION",
    "EXPECTATION_NOTE_MAX_LENGTH",
    "JOB_CURRENT_MAX_LENGTH",
    "JOB_ITEM_KEY_MAX_LENGTH",
    "JOB_KIND_MAX_LENGTH",
    "JOB_STATUS_MAX_LENGTH",
    "LABEL_MAX_LENGTH",
    "LABEL_PATTERN",
    "LANGUAGE_CODE_MAX_LENGTH",
    "LIVE_RUN_MODE_MAX_LENGTH",
    "LOCATION_MAX_LENGTH",
    "MAX_ID",
    "MODALITIES",
    "MODALITY_MAX_LENGTH",
    "MODEL_ERROR_MAX_LENGTH",
    "MODEL_ID_MAX_LENGTH",
    "MODEL_MAX_CONCURRENT_DEFAULT",
    "MODEL_MAX_CONCURRENT_LIMIT",
    "MODEL_NAME_MAX_LENGTH",
    "MODEL_PER_MINUTE_LIMITS",
    "NAME_MAX_LENGTH",
    "NAME_PATTERN",
    "NAME_PATTERN_JSON",
    "NOW_MAX_LENGTH",
    "PLATFORM_TOOLS",
    "PROJECT_ID_MAX_LENGTH",
    "PROJECT_NUMBER_MAX_LENGTH",
    "RATE_LIMIT_KEY_MAX_LENGTH",
    "RESULT_STATUS_MAX_LENGTH",
    "SCENARIO_DEFAULTS",
    "SCENARIO_NAME_MAX_LENGTH",
    "SESSION_ID_MAX_LENGTH",
    "SHARE_ROLE_MAX_LENGTH",
    "STEP_EVENT_MAX_LENGTH",
    "STEP_KIND_MAX_LENGTH",
    "TASK_ID_MAX_LENGTH",
    "TOKEN_BUDGET_MAX",
    "TOOL_KIND_MAX_LENGTH",
    "TOOL_NAME_MAX_LENGTH",
    "URL_MAX_LENGTH",
    "USERNAME_MAX_LENGTH",
    "VARIABLE_TYPE_MAX_LENGTH",
    "VERSION_NAME_MAX_LENGTH",
    "WORKER_MAX_LENGTH",
    "app_name_problems",
    "channel_problems",
    "check_app",
    "display_name_problems",
    "modality_problems",
    "name_problems",
    "parse_python",
    "platform_tool_problem",
    "python_problems",
    "scenario_name_problems",
    "scenario_tool_problems",
    "session_values_problems",
    "step_tools",
    "token_budget_problems",
]

CODES: dict[str, str] = codes.section("rules")

# ---------------------------------------------------------------- Limits
# Every length and bound of what an app holds, once: the models' max_length, the forms'
# and the API's serializers' max_length/max_value, the native format's JSON Schema
# (maxLength/maximum, built from these) and the checks below all read them from here.

NAME_MAX_LENGTH = 64  # variables, schemas
# Tools: CX names a toolset's operation `<toolset>_<operationId>` (70 characters and more in
# published apps: code calls `tools.<name>`, instructions `{@TOOL: name}`); kept whole.
TOOL_NAME_MAX_LENGTH = 200
APP_NAME_MAX_LENGTH = 200
DISPLAY_NAME_MAX_LENGTH = 200  # agents
SCENARIO_NAME_MAX_LENGTH = 200
URL_MAX_LENGTH = 200  # an MCP tool's URL
# A scenario's session (SessionSpec's fields, as the scenario's columns hold them).
SESSION_ID_MAX_LENGTH = 100
PROJECT_ID_MAX_LENGTH = 100
PROJECT_NUMBER_MAX_LENGTH = 30
LOCATION_MAX_LENGTH = 50
NOW_MAX_LENGTH = 40  # the session clock, an ISO date-time
STEP_EVENT_MAX_LENGTH = 200  # a user input's event
EXPECTATION_NOTE_MAX_LENGTH = 500
# A scenario's context window in tokens: what every database's integer column holds
# (the scenario's PositiveIntegerField is a 32-bit integer on PostgreSQL).
TOKEN_BUDGET_MAX = 2**31 - 1
MODEL_NAME_MAX_LENGTH = 60  # a configured model endpoint's name (STATECRAFT_MODELS)
# A model endpoint's limits (agents.llm.limits): requests in flight at once per worker
# process (0: no limit), and the highest per-minute limits an operator may write.
MODEL_MAX_CONCURRENT_DEFAULT = 8
MODEL_MAX_CONCURRENT_LIMIT = 1000
MODEL_PER_MINUTE_LIMITS = {"requests_per_minute": 1_000_000, "tokens_per_minute": 1_000_000_000}
MAX_ID = 2**63 - 1  # the largest primary key a database can hold (PostgreSQL bigint)
LABEL_PATTERN = r"\A[a-z0-9][a-z0-9_.-]*\Z"  # a version label; the whole text (not "$": "v1\n")
LABEL_MAX_LENGTH = 64
# What names the working copy where a version is asked for (an experiment's columns, `manage.py
# evaluate --version`): no label takes one of these, nor a number (version 3's name).
WORKING_COPY_NAMES = ("current", "working", "working-copy")
VERSION_NAME_MAX_LENGTH = 200  # a saved version's name
JOB_KIND_MAX_LENGTH = 64
TASK_ID_MAX_LENGTH = 64  # the task queue's id of a job
RATE_LIMIT_KEY_MAX_LENGTH = 64  # a sha256 hex digest
# The columns around an app: who did it, what a choice column holds, the jobs' and the
# live runs' bookkeeping (the models read them from here too; a test keeps it so).
USERNAME_MAX_LENGTH = 150  # a user's name as history and results copy it (Django's)
LANGUAGE_CODE_MAX_LENGTH = 8  # a user's chosen language (settings.LANGUAGES)
AUDIT_ACTION_MAX_LENGTH = 40  # a history entry's action, e.g. variable.update
AUDIT_OBJECT_TYPE_MAX_LENGTH = 20  # its object type, e.g. variable
VARIABLE_TYPE_MAX_LENGTH = 10  # a variable's type and a list's item type
TOOL_KIND_MAX_LENGTH = 10
CALLBACK_KIND_MAX_LENGTH = 20  # a callback's kind, and a step's callback kind
SHARE_ROLE_MAX_LENGTH = 10
CHANNEL_MAX_LENGTH = 10  # a scenario's channel
MODALITY_MAX_LENGTH = 10  # a scenario's modality
STEP_KIND_MAX_LENGTH = 10
RESULT_STATUS_MAX_LENGTH = 12  # an evaluation's or a live run's status
JOB_STATUS_MAX_LENGTH = 12
JOB_CURRENT_MAX_LENGTH = 300  # what a job is doing now, as its progress shows it
JOB_ITEM_KEY_MAX_LENGTH = 100  # a piece of a job's work, stored once
WORKER_MAX_LENGTH = 200  # the worker running a job: host:pid
ENDPOINT_KIND_MAX_LENGTH = 10  # a model endpoint's provider kind
MODEL_ID_MAX_LENGTH = 200  # the provider's model id, like gemini-2.5-flash
LIVE_RUN_MODE_MAX_LENGTH = 8  # live or replay
MODEL_ERROR_MAX_LENGTH = 30  # a live run's named model error

# Names of variables, schemas and tools (CX Agent Studio's rule for Python identifiers).
# \A and \Z: the whole text, in Python's re, the regex package and PostgreSQL alike (a `$`
# lets Python accept "name\n"); NAME_PATTERN_JSON is the same rule in ECMA-262 (JSON Schema),
# where `$` is the end of the text.
NAME_PATTERN = r"\A[A-Za-z_][A-Za-z0-9_]*\Z"
NAME_PATTERN_JSON = r"^[A-Za-z_][A-Za-z0-9_]*$"
CHANNELS = ("web", "api", "telephony")
# Tools CX Agent Studio provides itself: never shipped as a folder of an export, listed by
# name in an agent's tools (cxas-scrapi's linter: LintContext.platform_tools). Their
# description and the arguments CX's runtime passes (callback_libs.Part.from_end_session,
# from_customized_response).
END_SESSION = "end_session"  # the platform tool that ends the conversation
PLATFORM_TOOLS: Mapping[str, str] = {
    "end_session": (
        "Ends the session (CX platform tool). Arguments: reason (text), session_escalated "
        "(yes/no: hand the customer to a human)."
    ),
    "customize_response": (
        "Sends a customised response (CX platform tool): content, and voice settings "
        "(disable_barge_in, enable_dtmf, dtmf_finish_digit, dtmf_endpointing_timeout)."
    ),
}
MODALITIES = ("text", "voice")
# A scenario's defaults are the core's own (SessionSpec, ScenarioSpec): models, forms,
# services and the API take them from here.
_SESSION = SessionSpec()
_SCENARIO = ScenarioSpec(name="", agent="")
SCENARIO_DEFAULTS: Mapping[str, Any] = {
    "channel": _SESSION.channel,
    "modality": _SESSION.modality,
    "session_id": _SESSION.session_id,
    "project_id": _SESSION.project_id,
    "project_number": _SESSION.project_number,
    "location": _SESSION.location,
    "now": _SESSION.now,
    "token_budget": _SCENARIO.token_budget,
    "use_mocks": _SCENARIO.use_mocks,
}

_NAME_RE = re.compile(NAME_PATTERN)
E, W = Severity.ERROR, Severity.WARNING


def _error(code: str, field: str, message: str, subject: str | None = None) -> Diagnostic:
    return Diagnostic(code, E, message, field=field, subject=subject)


def name_problems(
    name: str,
    field: str = "name",
    subject: str | None = None,
    max_length: int = NAME_MAX_LENGTH,
) -> list[Diagnostic]:
    """A variable, schema or tool name: required, at most `max_length` characters (64; a
    tool's ``TOOL_NAME_MAX_LENGTH``), an identifier."""
    if not name:
        return [_error("SC003", field, Message("Name is required."), subject)]
    if len(name) > max_length:
        message = Message(
            "Name is too long: at most %(name_max_length)s characters.",
            name_max_length=max_length,
        )
        return [_error("SC003", field, message, subject)]
    if not _NAME_RE.fullmatch(name):
        suggestion = suggested_name(name)
        if not suggestion:  # `名前`: no letter of it is a-z; `_` would be no help
            message = Message(
                "'%(name)s' is not a valid name: use unaccented letters a-z, digits and "
                "underscores, not starting with a digit.",
                name=name,
            )
            return [_error("SC003", field, message, subject)]
        message = Message(
            "'%(name)s' is not a valid name: use unaccented letters a-z, digits and "
            "underscores, not starting with a digit (for example %(suggestion)s).",
            name=name,
            suggestion=suggestion,
        )
        return [_error("SC003", field, message, subject)]
    return []


def suggested_name(given: str) -> str:
    """A valid name close to `given`: accents dropped (``prix_nuitée`` → ``prix_nuitee``),
    every other character a name cannot hold an ``_`` (runs as one), ``_`` before a digit;
    "" when no letter or digit of it is left (``名前``, an emoji): no fix worth offering."""
    plain = unicodedata.normalize("NFKD", given).encode("ascii", "ignore").decode()
    fixed = re.sub(r"[^A-Za-z0-9_]+", "_", plain).strip("_")
    if not re.search(r"[A-Za-z0-9]", fixed):
        return ""
    if fixed[0].isdigit():
        fixed = "_" + fixed
    return fixed[:NAME_MAX_LENGTH]


def _nul(text: str, field: str) -> list[Diagnostic]:
    """PostgreSQL cannot store (or even look up) text with a NUL character."""
    if "\x00" in text:
        return [
            _error("SC003", field, Message("The name contains a NUL character (\\x00); remove it."))
        ]
    return []


def app_name_problems(name: str, field: str = "name") -> list[Diagnostic]:
    name = name.strip()
    if "\x00" in name:
        return _nul(name, field)
    if not name:
        return [_error("SC003", field, Message("Give the app a name."))]
    if len(name) > APP_NAME_MAX_LENGTH:
        message = Message(
            "The app's name is too long: at most %(app_name_max_length)s characters.",
            app_name_max_length=APP_NAME_MAX_LENGTH,
        )
        return [_error("SC003", field, message)]
    return []


def display_name_problems(name: str, field: str = "display_name") -> list[Diagnostic]:
    """An agent's display name: what `{@AGENT: …}` names, so no braces."""
    name = name.strip()
    if "\x00" in name:
        return _nul(name, field)
    if not name:
        return [_error("SC003", field, Message("Give the agent a display name."))]
    if len(name) > DISPLAY_NAME_MAX_LENGTH:
        message = Message(
            "The display name is too long: at most %(display_name_max_length)s characters.",
            display_name_max_length=DISPLAY_NAME_MAX_LENGTH,
        )
        return [_error("SC003", field, message, name)]
    if "{" in name or "}" in name:
        return [_error("SC003", field, Message("A display name cannot contain braces { }."), name)]
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
        message = Message(
            "Line %(lineno)s: %(msg)s. Fix the Python syntax.", lineno=exc.lineno, msg=exc.msg
        )
        return Diagnostic("SC007", E, message, line=exc.lineno, column=exc.offset)
    except (RecursionError, MemoryError):
        message = Message(
            "The code is nested too deeply to be read; flatten it (fewer nested levels)."
        )
        return Diagnostic("SC007", E, message)
    except ValueError as exc:
        return Diagnostic("SC007", E, Message("The code cannot be read: %(exc)s.", exc=exc))


def platform_tool_problem(*, sentence: bool = False) -> str:
    """Why a platform tool's name is refused (`sentence`: capitalised, with a full stop)."""
    names = ", ".join(PLATFORM_TOOLS)
    if sentence:
        return Message(
            "A platform tool is one CX Agent Studio provides: %(names)s; name it so.", names=names
        )
    return Message(
        "a platform tool is one CX Agent Studio provides: %(names)s; name it so", names=names
    )


def python_problems(
    code: str, field: str, *, required: bool = False, subject: str | None = None
) -> list[Diagnostic]:
    """Python code of a tool or callback: it must parse (and exist, when `required`)."""
    if not code.strip():
        if required:
            return [_error("SC007", field, Message("The callback needs Python code."), subject)]
        return []
    parsed = parse_python(code)
    if isinstance(parsed, Diagnostic):
        return [replace(parsed, field=field, subject=subject)]
    return []


def channel_problems(channel: str, field: str = "channel") -> list[Diagnostic]:
    if channel in CHANNELS:
        return []
    return [
        _error(
            "SC009",
            field,
            Message("Channel must be one of %(channels)s.", channels=", ".join(CHANNELS)),
        )
    ]


def modality_problems(modality: str, field: str = "modality") -> list[Diagnostic]:
    if modality in MODALITIES:
        return []
    return [
        _error(
            "SC009",
            field,
            Message("Modality must be one of %(modalities)s.", modalities=", ".join(MODALITIES)),
        )
    ]


def now_problems(now: str, field: str = "now") -> list[Diagnostic]:
    """The session clock: empty (the real clock) or an ISO date-time."""
    from agents.core.simulation.values import valid_now

    if not now or valid_now(now):
        return []
    return [
        _error(
            "SC009",
            field,
            Message(
                "The clock must be an ISO date-time like 2026-06-01T12:00:00 "
                "(empty: the real clock)."
            ),
        )
    ]


def token_budget_problems(budget: Any, field: str = "token_budget") -> list[Diagnostic]:
    """A whole number of tokens from 1 to TOKEN_BUDGET_MAX."""
    if isinstance(budget, int) and not isinstance(budget, bool) and budget > TOKEN_BUDGET_MAX:
        message = Message(
            "The token budget is too large: at most %(token_budget_max)s tokens.",
            token_budget_max=TOKEN_BUDGET_MAX,
        )
        return [_error("SC009", field, message)]
    if isinstance(budget, int) and not isinstance(budget, bool) and budget >= 1:
        return []
    return [_error("SC009", field, Message("The context window needs at least 1 token."))]


def scenario_name_problems(name: str, field: str = "name") -> list[Diagnostic]:
    name = name.strip()
    if "\x00" in name:
        return _nul(name, field)
    if not name:
        return [_error("SC003", field, Message("Give the scenario a name."))]
    if len(name) > SCENARIO_NAME_MAX_LENGTH:
        message = Message(
            "The scenario's name is too long: at most %(scenario_name_max_length)s characters.",
            scenario_name_max_length=SCENARIO_NAME_MAX_LENGTH,
        )
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
        message = Message('Session values are one JSON object: {"name": value}.')
        return [_error("SC008", field, message)]
    if limits.json_too_deep(values):
        return [_error("SC008", field, limits.too_deep_message())]
    schemas = {s.name: s.schema for s in app.schemas}
    problems: list[Diagnostic] = []
    for name, value in values.items():
        variable = app.variable(name)
        if variable is None:
            message = Message("'%(name)s' is not a declared variable.", name=name)
            problems.append(_error("SC010", field, message, subject=name))
            continue
        for d in validate_value(value, variable, schemas, field=field):
            if d.severity is E:
                problems.append(replace(d, field=field, subject=name))
    return problems


# ---------------------------------------------------------------- a whole app at once


def _field_error(code: str, field: str, message: str, subject: str | None = None) -> Diagnostic:
    """A problem of a whole-app check: its message starts with the path it is about."""
    return Diagnostic(
        code,
        E,
        Message("%(field)s: %(message)s", field=field, message=message),
        field=field,
        subject=subject,
    )


def _at(
    diagnostics: Iterable[Diagnostic], field: str, subject: str | None = None
) -> Iterator[Diagnostic]:
    """The rule set's diagnostics about one field of the document, named by its path."""
    for d in diagnostics:
        yield replace(
            d,
            field=field,
            message=Message("%(field)s: %(message)s", field=field, message=d.message),
            subject=subject or d.subject,
        )


def check_app(app: AppSpec, scenarios: Iterable[ScenarioSpec] = ()) -> tuple[Diagnostic, ...]:
    """What would stop the app from being saved, found all at once (errors), plus warnings.

    These are the checks the services make one object at a time (names,
    uniqueness, schemas, defaults, Python syntax, links between agents,
    scenario settings); lint problems (an undeclared reference in the
    instructions...) are not import errors: the designer shows them.
    """
    found: list[Diagnostic] = []
    found.extend(_at(app_name_problems(app.name), "name"))
    found.extend(_check_schemas(app))
    found.extend(_check_variables(app))
    found.extend(_check_tools(app))
    found.extend(_check_agents(app))
    found.extend(_check_scenarios(app, list(scenarios)))
    return tuple(found)


def _check_schemas(app: AppSpec) -> Iterable[Diagnostic]:
    for repeated in duplicates(s.name for s in app.schemas):
        field = f"schemas.{repeated}"
        yield _field_error("SC506", field, Message("two schemas have this name"), repeated)
    for schema in app.schemas:
        yield from _at(name_problems(schema.name), f"schemas.{schema.name}.name", schema.name)
        for d in check_schema(schema.schema):
            inner = d.field if d.field and d.field != "#" else ""
            field = f"schemas.{schema.name}.json_schema{inner}"
            yield replace(
                d,
                field=field,
                message=Message("%(field)s: %(message)s", field=field, message=d.message),
                subject=schema.name,
            )


def _check_variables(app: AppSpec) -> Iterable[Diagnostic]:
    schemas = {s.name: s.schema for s in app.schemas}
    broken_schemas = {
        s.name for s in app.schemas if any(d.severity is E for d in check_schema(s.schema))
    }
    for repeated in duplicates(v.name for v in app.variables):
        yield _field_error(
            "SC506", f"variables.{repeated}", Message("two variables have this name"), repeated
        )
    for variable in app.variables:
        base = f"variables.{variable.name}"
        yield from _at(name_problems(variable.name), f"{base}.name", variable.name)
        if variable.type is VariableType.LIST and variable.item_type in (None, VariableType.LIST):
            yield _field_error(
                "SC005",
                f"{base}.item_type",
                Message("a list needs the type of its items: text, number, boolean or object"),
                variable.name,
            )
            continue
        if VariableType.OBJECT in (variable.type, variable.item_type):
            if not variable.schema:
                yield _field_error(
                    "SC507",
                    f"{base}.schema",
                    Message("a custom object needs a schema"),
                    variable.name,
                )
                continue
            if variable.schema not in schemas:
                yield _field_error(
                    "SC507",
                    f"{base}.schema",
                    Message("the app has no schema named '%(schema)s'", schema=variable.schema),
                    variable.name,
                )
                continue
            if variable.schema in broken_schemas:
                continue  # the schema's own errors are reported; its defaults cannot be checked
        for d in validate_value(variable.default, variable, schemas):
            yield replace(
                d, message=Message("%(field)s: %(message)s", field=d.field, message=d.message)
            )


def _check_tools(app: AppSpec) -> Iterable[Diagnostic]:
    for repeated in duplicates(t.name for t in app.tools):
        yield _field_error(
            "SC506", f"tools.{repeated}", Message("two tools have this name"), repeated
        )
    for tool in app.tools:
        base = f"tools.{tool.name}"
        yield from _at(
            name_problems(tool.name, max_length=TOOL_NAME_MAX_LENGTH), f"{base}.name", tool.name
        )
        if tool.kind is ToolKind.PYTHON:
            yield from _at(
                python_problems(tool.python_code, "python_code"),
                f"{base}.python_code",
                tool.name,
            )
        if tool.kind is ToolKind.PLATFORM and tool.name not in PLATFORM_TOOLS:
            yield _field_error("SC011", f"{base}.name", platform_tool_problem(), tool.name)
        if len(tool.mcp_url) > URL_MAX_LENGTH:
            message = Message(
                "at most %(url_max_length)s characters", url_max_length=URL_MAX_LENGTH
            )
            yield _field_error("SC001", f"{base}.mcp_url", message, tool.name)
        if tool.openapi is not None and not isinstance(tool.openapi, dict):
            yield _field_error(
                "SC008", f"{base}.openapi", Message("must be a JSON object"), tool.name
            )
        if tool.mock is not None and not isinstance(tool.mock.state, dict):
            yield _field_error(
                "SC008", f"{base}.mock.state", Message("must be a JSON object"), tool.name
            )


def _check_agents(app: AppSpec) -> Iterable[Diagnostic]:
    tools = {t.name for t in app.tools}
    agents = {a.name for a in app.agents}
    for repeated in duplicates((a.name.strip() for a in app.agents), fold=True):
        yield _field_error(
            "SC506", f"agents.{repeated}", Message("two agents have this display name"), repeated
        )
    roots = [a.name for a in app.agents if a.is_root]
    if len(roots) > 1:
        yield _field_error(
            "SC508",
            "agents",
            Message("only one agent can be the root, not %(roots)s", roots=", ".join(roots)),
        )
    elif app.agents and not roots:
        message = Message(
            "agents: no agent is the root; %(name)s becomes the root", name=app.agents[0].name
        )
        yield Diagnostic("SC508", W, message, field="agents")
    for agent in app.agents:
        base = f"agents.{agent.name}"
        yield from _at(display_name_problems(agent.name), f"{base}.name", agent.name)
        for tool in agent.tools:
            if tool not in tools:
                yield _field_error(
                    "SC507",
                    f"{base}.tools",
                    Message("the app has no tool named '%(tool)s'", tool=tool),
                    agent.name,
                )
        for child in agent.children:
            if child not in agents or child == agent.name:
                words = Message("an agent cannot be its own sub-agent")
                if child not in agents:
                    words = Message("the app has no agent named '%(child)s'", child=child)
                yield _field_error("SC507", f"{base}.children", words, agent.name)
        seen: set[tuple[CallbackKind, int]] = set()
        for i, callback in enumerate(agent.callbacks):
            field = f"{base}.callbacks[{i}]"
            if (callback.kind, callback.order) in seen:
                yield _field_error(
                    "SC506",
                    f"{field}.order",
                    Message(
                        "two %(value)s callbacks have the order %(order)s",
                        value=callback.kind.value,
                        order=callback.order,
                    ),
                    agent.name,
                )
            seen.add((callback.kind, callback.order))
            yield from _at(
                python_problems(callback.code, "code", required=True),
                f"{field}.code",
                agent.name,
            )
    cycle = sub_agent_cycle({a.name: a.children for a in app.agents})
    if cycle:
        yield _field_error(
            "SC507",
            f"agents.{cycle[0]}.children",
            Message("sub-agents form a cycle: %(cycle)s", cycle=" → ".join(cycle)),
        )


def sub_agent_cycle[T](children: Mapping[T, Iterable[T]]) -> list[T] | None:
    """A cycle of sub-agents (its path, the first agent again at the end), or None.

    `children` maps each agent (by name, or by id for the database's links) to its
    sub-agents. An agent listed as its own sub-agent, and a sub-agent the mapping does not
    have, make no edge here (the checks report them on their own). The one cycle check:
    the rule set's (SC507) and the service that links sub-agents both use it."""
    edges = {node: [c for c in kids if c != node] for node, kids in children.items()}
    state: dict[T, int] = {}  # 1 visiting, 2 done

    def visit(node: T, path: list[T]) -> list[T] | None:
        state[node] = 1
        for child in edges.get(node, []):
            if state.get(child) == 1:
                return [*path[path.index(child) :], child] if child in path else [node, child]
            if child in edges and state.get(child) is None:
                found = visit(child, [*path, child])
                if found:
                    return found
        state[node] = 2
        return None

    for start in edges:
        if state.get(start) is None:
            found = visit(start, [start])
            if found:
                return found
    return None


_TOOL_EXPECTATIONS = {ExpectKind.CALL, ExpectKind.RESPONSE, ExpectKind.MOCK}


def step_tools(steps: Iterable[StepSpec]) -> list[str]:
    """The tools the steps script (``tool:``), expect a call or response of, or mock, in order."""
    names: list[str] = []
    for step in steps:
        if step.kind is StepKind.TOOL and step.tool:
            names.append(step.tool)
        expected = step.expectation
        if (
            step.kind is StepKind.EXPECT
            and expected is not None
            and expected.kind in _TOOL_EXPECTATIONS
            and expected.tool
        ):
            names.append(expected.tool)
    return names


def scenario_tool_problems(
    steps: Iterable[StepSpec], app: AppSpec, agent: str | None = None
) -> list[Diagnostic]:
    """SC012 warnings: a step names a tool no agent of `app` has (a run could never call it).
    The message lists the tools of `agent` (the scenario's agent), else of every agent, and
    suggests the closest name. `subject` is the unknown tool."""
    known = {tool for a in app.agents for tool in a.tools}
    owner = app.agent(agent) if agent else None
    listed = sorted(owner.tools if owner is not None and owner.tools else known)
    found: list[Diagnostic] = []
    for name in dict.fromkeys(step_tools(steps)):
        if name in known:
            continue
        close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
        found.append(
            Diagnostic(
                "SC012",
                W,
                Message(
                    "no agent of the app has a tool %(tool)s, so no run can call it "
                    "(%(owner)s: %(tools)s).%(suggestion)s",
                    tool=repr(name),
                    owner=Message("the tools of %(agent)s", agent=owner.name)
                    if owner is not None and owner.tools
                    else Message("the agents' tools"),
                    tools=", ".join(listed) if listed else Message("none"),
                    suggestion=Message(" Did you mean %(match)s?", match=repr(close[0]))
                    if close
                    else "",
                ),
                subject=name,
            )
        )
    return found


def _check_scenarios(app: AppSpec, scenarios: list[ScenarioSpec]) -> Iterable[Diagnostic]:
    agents = {a.name for a in app.agents}
    for repeated in duplicates(f"{s.agent}\x00{s.name.strip()}" for s in scenarios):
        agent, name = repeated.split("\x00", 1)
        yield _field_error(
            "SC506",
            f"agents.{agent}.scenarios.{name}",
            Message("two scenarios have this name"),
            agent,
        )
    for scenario in scenarios:
        base = f"agents.{scenario.agent}.scenarios.{scenario.name}"
        if scenario.agent not in agents:
            yield _field_error(
                "SC507",
                base,
                Message("the app has no agent named '%(agent)s'", agent=scenario.agent),
            )
            continue
        agent = scenario.agent
        yield from _at(scenario_name_problems(scenario.name), f"{base}.name", agent)
        yield from _at(token_budget_problems(scenario.token_budget), f"{base}.token_budget", agent)
        session = scenario.session
        yield from _at(channel_problems(session.channel), f"{base}.session.channel", agent)
        yield from _at(modality_problems(session.modality), f"{base}.session.modality", agent)
        for d in session_values_problems(dict(session.values), app):
            yield from _at([d], f"{base}.session.values.{d.subject}", agent)
        yield from _at(scenario_tool_problems(scenario.steps, app, agent), f"{base}.steps", agent)
        if parse_script(format_script(scenario.steps)).steps != scenario.steps:
            message = Message(
                "%(base)s.steps: a message cannot be kept exactly as a step "
                "script line (a line starting with user:, agent:, tool:, "
                "callback: or #, or spaces around a message); it is saved as "
                "the script reads it",
                base=base,
            )
            yield Diagnostic("SC510", W, message, field=f"{base}.steps", subject=scenario.agent)
