"""Statecraft's core: pure Python (stdlib + jsonschema) parse, compile, lint, types, simulate.

Nothing here imports Django; models hand in frozen `spec` dataclasses and get
frozen results back. Problems are `Diagnostic` values, never exceptions.
"""

# First, before anything imports jsonschema: rfc3987's parser is built on first use only.
from agents.core import lazy_iri  # noqa: F401  # isort: skip

from agents.core.compile import CompileResult, Span, compile_instructions
from agents.core.diagnostics import Diagnostic, Severity
from agents.core.lint import lint_agent, lint_app
from agents.core.parse import ParseResult, Token, TokenKind, parse
from agents.core.render import render_value
from agents.core.simulate import SimulationResult, simulate
from agents.core.spec import (
    AgentSpec,
    AppSpec,
    CallbackKind,
    CallbackSpec,
    ScenarioSpec,
    SchemaSpec,
    SessionSpec,
    StepKind,
    StepSpec,
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
    "CompileResult",
    "Diagnostic",
    "ParseResult",
    "ScenarioSpec",
    "SchemaSpec",
    "SessionSpec",
    "Severity",
    "SimulationResult",
    "Span",
    "StepKind",
    "StepSpec",
    "Token",
    "TokenKind",
    "ToolKind",
    "ToolMock",
    "ToolSpec",
    "VariableSpec",
    "VariableType",
    "compile_instructions",
    "lint_agent",
    "lint_app",
    "parse",
    "render_value",
    "simulate",
]


def all_codes() -> dict[str, str]:
    """Every diagnostic code of the product, with its one-line meaning (the table of
    docs/reference/diagnostics.md)."""
    from agents.core.codes import REGISTRY

    return dict(sorted(REGISTRY.items()))
