"""Statecraft's core: pure Python (stdlib + jsonschema) parse, compile, lint, types, simulate.

Nothing here imports Django; models hand in frozen `spec` dataclasses.
"""

from agents.core.diagnostics import Diagnostic, Severity
from agents.core.spec import (
    AgentSpec,
    AppSpec,
    CallbackKind,
    CallbackSpec,
    SchemaSpec,
    ToolKind,
    ToolMock,
    ToolSpec,
    VariableSpec,
    VariableType,
)

__all__ = [
    "AgentSpec",
    "AppSpec",
    "CallbackKind",
    "CallbackSpec",
    "Diagnostic",
    "SchemaSpec",
    "Severity",
    "ToolKind",
    "ToolMock",
    "ToolSpec",
    "VariableSpec",
    "VariableType",
]
