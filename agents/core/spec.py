"""Frozen descriptions of an app, the input of lint, simulation and formats.

Models build these with ``to_spec()``; the core never sees a Django object.
JSON-like values (defaults, schemas, mocks) are plain dicts/lists: treat them
as read-only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class VariableType(StrEnum):
    TEXT = "text"
    NUMBER = "number"
    BOOLEAN = "boolean"
    OBJECT = "object"
    LIST = "list"


class ToolKind(StrEnum):
    PYTHON = "python"
    OPENAPI = "openapi"
    MCP = "mcp"
    PLATFORM = "platform"  # a tool CX provides (end_session, customize_response): no code


# What a CX import keeps of an object that Statecraft does not edit: the object's
# original CX JSON (fields and values as the export had them), written back on export
# under the fields Statecraft does edit. Empty for objects made in Statecraft.
CxCarry = dict[str, Any]


class CallbackKind(StrEnum):
    BEFORE_AGENT = "before_agent"
    AFTER_AGENT = "after_agent"
    BEFORE_MODEL = "before_model"
    AFTER_MODEL = "after_model"
    BEFORE_TOOL = "before_tool"
    AFTER_TOOL = "after_tool"


@dataclass(frozen=True, slots=True)
class SchemaSpec:
    name: str
    schema: dict[str, Any]
    description: str = ""


@dataclass(frozen=True, slots=True)
class VariableSpec:
    """A declared variable. `default` None means "no default".

    For a list, `item_type` is the type of its items (never LIST); for an
    object, or a list of objects, `schema` names a SchemaSpec of the app.
    """

    name: str
    type: VariableType
    default: Any = None
    description: str = ""
    item_type: VariableType | None = None
    schema: str | None = None
    cx: CxCarry = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ToolMock:
    """What a tool does in simulation without running code."""

    state: dict[str, Any] = field(default_factory=dict)
    response: Any = None


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    kind: ToolKind
    description: str = ""
    python_code: str = ""
    openapi: dict[str, Any] | None = None
    mcp_url: str = ""
    mcp_headers: tuple[tuple[str, str], ...] = ()
    mock: ToolMock | None = None
    cx: CxCarry = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CallbackSpec:
    kind: CallbackKind
    code: str
    order: int = 0
    cx: CxCarry = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AgentSpec:
    name: str  # the display name, as `{@AGENT: name}` writes it
    instructions: str = ""
    description: str = ""
    tools: tuple[str, ...] = ()
    children: tuple[str, ...] = ()
    callbacks: tuple[CallbackSpec, ...] = ()
    is_root: bool = False
    cx: CxCarry = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AppSpec:
    name: str
    description: str = ""
    variables: tuple[VariableSpec, ...] = ()
    schemas: tuple[SchemaSpec, ...] = ()
    tools: tuple[ToolSpec, ...] = ()
    agents: tuple[AgentSpec, ...] = ()
    # {"app": the original app.json, "files": {path: text} of the files kept verbatim}
    cx: CxCarry = field(default_factory=dict)

    def variable(self, name: str) -> VariableSpec | None:
        return next((v for v in self.variables if v.name == name), None)

    def schema(self, name: str) -> SchemaSpec | None:
        return next((s for s in self.schemas if s.name == name), None)

    def tool(self, name: str) -> ToolSpec | None:
        return next((t for t in self.tools if t.name == name), None)

    def agent(self, name: str) -> AgentSpec | None:
        return next((a for a in self.agents if a.name == name), None)

    def default_values(self) -> dict[str, Any]:
        """Variable name -> default, for variables that have one."""
        return {v.name: v.default for v in self.variables if v.default is not None}


class StepKind(StrEnum):
    USER = "user"
    AGENT = "agent"
    TOOL = "tool"
    CALLBACK = "callback"
    EXPECT = "expect"


class ExpectKind(StrEnum):
    """What a golden expectation checks (CX's ``GoldenExpectation``), and the mock step."""

    STATE = "state"  # updatedVariables
    CALL = "call"  # toolCall: the scripted model calls the tool (args None: the model chooses)
    RESPONSE = "response"  # toolResponse
    NO_CALLS = "no calls"  # noToolCalls
    TRANSFER = "transfer"  # agentTransfer
    AGENT = "agent"  # agentResponse: the scripted reply, checked only by a model
    MOCK = "mock"  # mockToolResponse: the next call of the tool answers this, no code runs


@dataclass(frozen=True, slots=True)
class ExpectationSpec:
    """One expectation of a scenario step (see ``agents.core.evaluate`` for the rules).

    `tool` names the tool (CALL, RESPONSE, MOCK), `agent` the target (TRANSFER); `value` is
    the expected variables (STATE, an object), the arguments (CALL; None when the golden
    leaves them to the model), the response (RESPONSE, MOCK) or the reply text (AGENT).
    """

    kind: ExpectKind
    tool: str = ""
    agent: str = ""
    value: Any = None
    note: str = ""


@dataclass(frozen=True, slots=True)
class StepSpec:
    """One scripted step: a user or agent message, a tool call, a callback run or an
    expectation.

    `tool` names the tool and `args` its arguments (TOOL); `callback` is the
    callback kind to run, all callbacks of that kind in order (CALLBACK). A USER step may
    also set session `variables` (CX's ``userInput.variables``) and carry an `event`
    (``userInput.event``) besides or instead of its text; EXPECT holds `expectation`.
    """

    kind: StepKind
    text: str = ""
    tool: str = ""
    args: dict[str, Any] = field(default_factory=dict)
    callback: CallbackKind | None = None
    variables: dict[str, Any] = field(default_factory=dict)
    event: str = ""
    expectation: ExpectationSpec | None = None


@dataclass(frozen=True, slots=True)
class SessionSpec:
    """Session inputs: values overriding defaults and the built-in context."""

    values: dict[str, Any] = field(default_factory=dict)
    channel: str = "web"
    modality: str = "text"
    session_id: str = "session-1"
    app_id: str = ""
    project_id: str = "my-project"
    project_number: str = "123456789"
    location: str = "us-central1"
    # The session clock: what code reads as now (ISO date-time); "" = the real clock.
    now: str = ""


@dataclass(frozen=True, slots=True)
class ScenarioSpec:
    name: str
    agent: str  # display name of the agent the scenario talks to
    session: SessionSpec = field(default_factory=SessionSpec)
    steps: tuple[StepSpec, ...] = ()
    token_budget: int = 8000
    use_mocks: bool = False  # run tool mocks even when a tool has code
    cx: CxCarry = field(default_factory=dict)  # the original CX evaluation, if imported
