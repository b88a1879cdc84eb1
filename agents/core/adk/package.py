"""The files of an ADK package for an app (``to_adk_files``): deterministic, no secret.

Layout (paths relative to the output folder)::

    <package>/__init__.py              ``from . import agent`` (what ``adk run``/``adk web`` load)
    <package>/agent.py                 ``root_agent``: the LlmAgent tree
    <package>/README.md                how to run it, what it needs, what differs from CX
    <package>/variables.json           the declared variables (type, default, schema name)
    <package>/schemas/<S>.schema.json  each custom-object schema, as JSON Schema
    <package>/instructions/<A>.txt     each agent's instructions, as written
    <package>/tools/<T>.py             each Python tool's code, unchanged
    <package>/tools/<T>.openapi.json   each OpenAPI tool's document
    <package>/callbacks/<A>/<kind>_01.py   each callback's code, unchanged, in run order
    <package>/statecraft_runtime/      the runtime adapter (``shipped/*.py``: ``runtime.py``
                                       and the modules it imports), CX's
                                       callback objects and Statecraft's instruction compiler
    <package>/evals/<S>.evalset.json   each scenario with expectations, as an ADK evalset
    <package>/evals/test_config.json   the criteria (``agents.core.adk.evalsets``)

The runtime copies are read from Statecraft's own source files (the compiler modules of
``agents/core`` with their imports made relative, and the sandbox's ``cx_objects.py``), so
the package compiles instructions exactly as the designer's preview does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agents.core import codes, rules
from agents.core.adk.evalsets import evalset_files
from agents.core.adk.names import agent_names, identifier, package_name
from agents.core.diagnostics import Diagnostic, Message, Severity
from agents.core.http import _mcp_name as mcp_server_name  # the server's name of a tool
from agents.core.http import _operation as openapi_operation  # the document's operation
from agents.core.spec import AgentSpec, AppSpec, CallbackKind, ScenarioSpec, ToolKind, ToolSpec

CODES: dict[str, str] = codes.section("adk_package")

CORE = Path(__file__).resolve().parent.parent
SHIPPED = Path(__file__).resolve().parent / "shipped"
# Statecraft's instruction compiler and what it imports (pure standard library).
# codes: the registry Diagnostic checks its code against (and parse reads its section from).
COMPILER_MODULES = ("compile", "parse", "conditions", "diagnostics", "render", "codes")
CX_OBJECTS = CORE.parent / "sandbox" / "cx_objects.py"
MODEL_PLACEHOLDER = "gemini-2.5-flash"
MODEL_ENV = "STATECRAFT_ADK_MODEL"
_KINDS = tuple(CallbackKind)


def _json_bytes(value: Any) -> bytes:
    return (json.dumps(value, ensure_ascii=False, indent=2, sort_keys=False) + "\n").encode()


def _note(code: str, severity: Severity, message: str, field: str = "") -> Diagnostic:
    return Diagnostic(code, severity, message, field=field or None)


def _runtime_files(prefix: str) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for name in COMPILER_MODULES:
        text = (CORE / f"{name}.py").read_text(encoding="utf-8")
        text = re.sub(r"^from agents\.core\.(\w+) import", r"from .\1 import", text, flags=re.M)
        text = re.sub(r"^from agents\.core import (\w+)$", r"from . import \1", text, flags=re.M)
        out[f"{prefix}/{name}.py"] = text.encode("utf-8")
    out[f"{prefix}/cx_objects.py"] = CX_OBJECTS.read_bytes()
    for path in sorted(SHIPPED.glob("*.py")):  # runtime.py and the modules it imports
        out[f"{prefix}/{path.name}"] = path.read_bytes()
    out[f"{prefix}/__init__.py"] = (
        b'"""Statecraft\'s runtime adapter for ADK (see runtime.py)."""\n'
    )
    return out


def _model(app: AppSpec, agent: AgentSpec) -> str | None:
    for carry in (agent.cx, (app.cx or {}).get("app") or {}):
        settings = carry.get("modelSettings") if isinstance(carry, dict) else None
        if isinstance(settings, dict) and isinstance(settings.get("model"), str):
            return settings["model"]
    return None


def _tree(
    app: AppSpec, found: list[Diagnostic]
) -> tuple[AgentSpec | None, list[AgentSpec], dict[str, str]]:
    """The root, every agent under it (children before parents) and each one's parent (ADK
    gives an agent one parent: a second one is reported and left out)."""
    root = next((a for a in app.agents if a.is_root), app.agents[0] if app.agents else None)
    if root is None:
        return None, [], {}
    order: list[AgentSpec] = []
    placed: set[str] = set()
    parent_of: dict[str, str] = {}

    def visit(agent: AgentSpec) -> None:
        placed.add(agent.name)
        for child in agent.children:
            target = app.agent(child)
            if target is None:
                continue
            if target.name in placed:
                found.append(
                    _note(
                        "SC640",
                        Severity.WARNING,
                        Message(
                            "%(name)s: the sub-agent %(child)s already has a parent; ADK "
                            "gives an agent one parent, so it is left out here.",
                            name=agent.name,
                            child=child,
                        ),
                        f"agents.{agent.name}.children",
                    )
                )
                continue
            parent_of[target.name] = agent.name
            visit(target)
        order.append(agent)

    visit(root)
    for agent in app.agents:
        if agent.name not in placed:
            found.append(
                _note(
                    "SC641",
                    Severity.WARNING,
                    Message(
                        "%(name)s is not under the root agent: ADK runs only the "
                        "root's tree, so it is not exported.",
                        name=agent.name,
                    ),
                    f"agents.{agent.name}",
                )
            )
    return root, order, parent_of


def _headers(tool: ToolSpec, found: list[Diagnostic]) -> list[tuple[str, str, str]]:
    """(header, kind, value) of an MCP tool: ``template`` values are filled from the
    session's ``$context`` at call time; literal values are never exported (they may be
    secrets): ``env`` names the environment variable that supplies them."""
    out = []
    for name, value in tool.mcp_headers:
        if "$context" in value:
            out.append((name, "template", value))
        else:
            env = f"{identifier(tool.name).upper()}_{identifier(name).upper()}"
            out.append((name, "env", env))
            found.append(
                _note(
                    "SC642",
                    Severity.INFO,
                    Message(
                        "tool %(name)s: the header %(header)s is not exported (it may "
                        "be a secret); the package reads it from the environment "
                        "variable %(env)s.",
                        name=tool.name,
                        header=name,
                        env=env,
                    ),
                    f"tools.{tool.name}.mcp_headers",
                )
            )
    return out


def _agent_py(
    app: AppSpec,
    package: str,
    root: AgentSpec,
    order: list[AgentSpec],
    parent_of: dict[str, str],
    names: dict[str, str],
    callback_paths: dict[str, dict[CallbackKind, list[str]]],
    found: list[Diagnostic],
) -> str:
    lines = [
        f'"""The ADK agent of the Statecraft app {_in_docstring(app.name)} (written by '
        "Statecraft's export).",
        "",
        "`root_agent` is the app's agent tree. Tool and callback code runs as written for CX",
        "Agent Studio through the runtime adapter in statecraft_runtime/ (see README.md).",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "import os",
        "from pathlib import Path",
        "",
        "from google.adk.agents import LlmAgent",
        "",
    ]
    if any(t.kind is ToolKind.MCP for t in app.tools):
        lines.append("from google.adk.tools.mcp_tool.mcp_session_manager import (")
        lines.append("    StreamableHTTPConnectionParams,")
        lines.append(")")
        lines.append("from google.adk.tools.mcp_tool.mcp_toolset import McpToolset")
    lines += [
        "",
        "from .statecraft_runtime.runtime import App"
        + (", Named, header_provider" if any(t.kind is ToolKind.MCP for t in app.tools) else ""),
        "",
        "HERE = Path(__file__).resolve().parent",
        "APP = App(HERE)",
        f"# The model when the app names none: set {MODEL_ENV} to choose another.",
        f"MODEL = os.environ.get({MODEL_ENV!r}, {MODEL_PLACEHOLDER!r})",
        "",
        "# ---------------------------------------------------------------- tools",
        "",
    ]
    tool_vars: dict[str, str] = {}
    for tool in app.tools:
        var = f"tool_{identifier(tool.name)}"
        tool_vars[tool.name] = var
        has_code = tool.kind is ToolKind.PYTHON and bool(tool.python_code.strip())
        if has_code:
            lines.append(f"{var} = APP.python_tool({tool.name!r}, 'tools/{_file(tool)}.py')")
        elif tool.kind is ToolKind.OPENAPI and openapi_operation(tool.openapi) is not None:
            # ADK's RestApiTool of the operation, named as the app calls it.
            path = f"tools/{_file(tool)}.openapi.json"
            lines.append(f"{var} = APP.openapi_tool({tool.name!r}, {path!r})")
        elif tool.kind is ToolKind.MCP and tool.mcp_url:
            headers = _headers(tool, found)
            server = mcp_server_name(tool)
            # The server's tool `server`, named as the app calls it.
            lines.append(f"{var} = Named(McpToolset(")
            lines.append(
                f"    connection_params=StreamableHTTPConnectionParams(url={tool.mcp_url!r}),"
            )
            lines.append(f"    tool_filter=[{server!r}],")
            if headers:
                lines.append(f"    header_provider=header_provider({headers!r}),")
            lines.append(f"), {{{server!r}: {tool.name!r}}})")
        elif tool.mock is not None:
            lines.append(
                f"{var} = APP.fixed_tool({tool.name!r}, {tool.description!r}, "
                f"response={tool.mock.response!r}, state={dict(tool.mock.state)!r})"
            )
        elif tool.kind is ToolKind.PLATFORM and tool.name == rules.END_SESSION:
            lines.append(
                f"{var} = APP.fixed_tool({tool.name!r}, {tool.description!r}, response={{}}, "
                "ends_session=True)"
            )
        else:
            lines.append(
                f"{var} = APP.fixed_tool({tool.name!r}, {tool.description!r}, response={{}})"
            )
            if tool.kind is not ToolKind.PLATFORM:
                found.append(
                    _note(
                        "SC643",
                        Severity.WARNING,
                        Message(
                            "tool %(name)s has no code, no document and no mock: it answers {}.",
                            name=tool.name,
                        ),
                        f"tools.{tool.name}",
                    )
                )
    lines += ["", "# ---------------------------------------------------------------- agents", ""]
    for agent in order:
        var = f"agent_{names[agent.name]}"
        model = _model(app, agent)
        paths = callback_paths.get(agent.name, {})
        lines.append(f"{var} = LlmAgent(")
        lines.append(f"    name={names[agent.name]!r},")
        lines.append(f"    model={model!r}," if model else "    model=MODEL,")
        if agent.description:
            lines.append(f"    description={agent.description!r},")
        path = f"instructions/{names[agent.name]}.txt"
        lines.append(f"    instruction=APP.instruction({path!r}),")
        tools = [tool_vars[t] for t in agent.tools if t in tool_vars]
        if tools:
            lines.append(f"    tools=[{', '.join(tools)}],")
        children = [f"agent_{names[c]}" for c in agent.children if parent_of.get(c) == agent.name]
        if children:
            lines.append(f"    sub_agents=[{', '.join(children)}],")
        for kind in _KINDS:
            files = paths.get(kind, [])
            if files or kind in (CallbackKind.BEFORE_AGENT, CallbackKind.BEFORE_MODEL):
                lines.append(f"    {kind.value}_callback=APP.callbacks({kind.value!r}, {files!r}),")
        lines.append(")")
    lines += ["", f"root_agent = agent_{names[root.name]}", ""]
    return "\n".join(lines)


def _in_docstring(text: str) -> str:
    """`text` quoted for a line of a triple-quoted docstring: its repr (one line, control
    and line-separator characters escaped) with backslashes and double quotes escaped, so
    no user text closes the docstring or continues it on another line."""
    return repr(text).replace("\\", "\\\\").replace('"', '\\"')


def _file(tool: ToolSpec) -> str:
    return identifier(tool.name)


def to_adk_files(
    app: AppSpec, scenarios: Iterable[ScenarioSpec] = ()
) -> tuple[dict[str, bytes], tuple[Diagnostic, ...]]:
    """The package's files (path → bytes, deterministic) and what ADK has no place for."""
    found: list[Diagnostic] = []
    package = package_name(app)
    names = agent_names(app)
    root, order, parent_of = _tree(app, found)
    files: dict[str, bytes] = {}
    p = package
    files[f"{p}/__init__.py"] = (
        b'"""ADK loads `root_agent` from agent.py."""\n\nfrom . import agent\n'
    )
    files.update(_runtime_files(f"{p}/statecraft_runtime"))
    variables = [
        {
            "name": v.name,
            "type": v.type.value,
            "item_type": v.item_type.value if v.item_type else None,
            "schema": v.schema,
            "default": v.default,
            "description": v.description,
        }
        for v in app.variables
    ]
    files[f"{p}/variables.json"] = _json_bytes(variables)
    for schema in app.schemas:
        document = {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema.schema}
        if schema.description and "description" not in document:
            document["description"] = schema.description
        files[f"{p}/schemas/{identifier(schema.name)}.schema.json"] = _json_bytes(document)
    for tool in app.tools:
        if tool.kind is ToolKind.PYTHON and tool.python_code.strip():
            files[f"{p}/tools/{_file(tool)}.py"] = tool.python_code.encode("utf-8")
        elif tool.kind is ToolKind.OPENAPI and openapi_operation(tool.openapi) is not None:
            files[f"{p}/tools/{_file(tool)}.openapi.json"] = _json_bytes(tool.openapi)
    callback_paths: dict[str, dict[CallbackKind, list[str]]] = {}
    for agent in order:
        files[f"{p}/instructions/{names[agent.name]}.txt"] = agent.instructions.encode("utf-8")
        for kind in _KINDS:
            ordered = sorted((c for c in agent.callbacks if c.kind == kind), key=lambda c: c.order)
            for number, callback in enumerate(ordered, start=1):
                if not callback.code.strip():
                    continue
                path = f"callbacks/{names[agent.name]}/{kind.value}_{number:02d}.py"
                files[f"{p}/{path}"] = callback.code.encode("utf-8")
                callback_paths.setdefault(agent.name, {}).setdefault(kind, []).append(path)
    if root is None:
        found.append(
            _note("SC644", Severity.ERROR, Message("The app has no agent: nothing to run."))
        )
        return files, tuple(found)
    files[f"{p}/agent.py"] = _agent_py(
        app, package, root, order, parent_of, names, callback_paths, found
    ).encode("utf-8")
    evals, problems = evalset_files(app, tuple(scenarios), package, names)
    found.extend(problems)
    files.update({f"{p}/evals/{path}": data for path, data in evals.items()})
    from agents.core.adk.readme import package_readme

    files[f"{p}/README.md"] = package_readme(app, package, names, root, sorted(evals)).encode()
    return dict(sorted(files.items())), tuple(found)
