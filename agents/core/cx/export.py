"""Export: an app (and its scenarios) as the files of a CX Agent Studio export ZIP
(`to_cx_files`), with what does not fit CX, or what CX's linter rejects, reported. The
layout is `agents.core.cx.layout`'s; what the import kept is laid back by `write_back`."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from agents.core.code_analysis import analyze_code
from agents.core.cx import evaluations
from agents.core.cx.layout import (
    _CALLBACK_FIELDS,
    _TOOL_KIND_FIELDS,
    INFO,
    E,
    W,
    _dotted,
    _folders,
    _json_bytes,
    _note,
    _yaml_text,
    folder_name,
    mock_code,
)
from agents.core.cx.variables import variable_cx_schema
from agents.core.cx.write_back import _write_back_carry
from agents.core.diagnostics import Diagnostic, Message
from agents.core.lint import CX_REJECTED_PATH_CODES, lint_app
from agents.core.spec import AgentSpec, AppSpec, ScenarioSpec, ToolKind, ToolSpec

__all__ = ["to_cx_files"]


def to_cx_files(
    app: AppSpec, scenarios: Iterable[ScenarioSpec] = ()
) -> tuple[dict[str, bytes], tuple[Diagnostic, ...]]:
    """The files of a CX export of `app` (path → bytes) and what did not fit CX."""
    files: dict[str, bytes] = {}
    found: list[Diagnostic] = []
    schemas = {s.name: s.schema for s in app.schemas}
    agent_dirs = _folders(a.name for a in app.agents)
    own_tools = [t for t in app.tools if t.kind is not ToolKind.PLATFORM and not _in_toolset(t)]
    tool_dirs = _folders(t.name for t in own_tools)
    tool_dirs.update({t.name: t.name for t in app.tools if t.kind is ToolKind.PLATFORM})
    in_toolsets = {t.name for t in app.tools if _in_toolset(t)}
    for name, folder in agent_dirs.items():
        if folder != name:
            found.append(
                _note(
                    "SC623",
                    INFO,
                    f"agents/{folder}/{folder}.json",
                    "name",
                    Message(
                        "the agent %(name)s is in the folder %(folder)s",
                        name=repr(name),
                        folder=repr(folder),
                    ),
                )
            )

    found.extend(_what_cx_lint_rejects(app, agent_dirs))
    found.extend(_second_parents(app, agent_dirs))
    # CX's linter requires a name (A002); a CX export has the app's id there.
    app_id = folder_name(app.name).strip("_") or "app"
    app_json: dict[str, Any] = {"name": app_id, "displayName": app.name}
    if app.description:
        app_json["description"] = app.description
    root = next((a for a in app.agents if a.is_root), None)
    if root is not None:
        app_json["rootAgent"] = agent_dirs[root.name]
    elif app.agents:
        found.append(
            _note("SC620", W, "app.json", "rootAgent", Message("the app has no root agent"))
        )
    declarations = []
    for i, variable in enumerate(app.variables):
        where = f"variableDeclarations[{i}]"
        schema, problems = variable_cx_schema(variable, schemas)
        for d in problems:
            at = f"{where}.schema{_dotted(d.field)}"
            about = f"{variable.name} (schema {d.subject})" if d.subject != variable.name else ""
            message = (
                Message("%(about)s: %(message)s", about=about, message=d.message)
                if about
                else d.message
            )
            found.append(replace(_note(d.code, d.severity, "app.json", at, message)))
        if not variable.description.strip():
            found.append(
                _note(
                    "SC622",
                    W,
                    "app.json",
                    f"{where}.description",
                    Message(
                        "the variable %(name)s has no description; CX requires one",
                        name=variable.name,
                    ),
                )
            )
        declarations.append(
            {"name": variable.name, "description": variable.description, "schema": schema}
        )
    app_json["variableDeclarations"] = declarations
    for schema in app.schemas:
        if schema.description.strip():
            found.append(
                _note(
                    "SC620",
                    INFO,
                    "app.json",
                    "variableDeclarations",
                    Message(
                        "the description of the schema %(name)s has no place in CX (a "
                        "variable's schema has no name or own description); not "
                        "exported",
                        name=schema.name,
                    ),
                )
            )
    files["app.json"] = _json_bytes(app_json)

    for agent in app.agents:
        own = replace(agent, tools=tuple(t for t in agent.tools if t not in in_toolsets))
        files.update(_agent_files(own, agent_dirs, tool_dirs, found))
    for tool in own_tools:
        files.update(_tool_files(tool, tool_dirs[tool.name], found))
    _write_back_carry(app, files, agent_dirs, tool_dirs, schemas)
    if app.cx.get("layout") == "yaml":  # imported in CX's YAML layout: exported in it too
        for path in list(files):
            parts = path.split("/")
            if path == "app.json" or (
                len(parts) == 3
                and parts[0] in ("agents", "tools")
                and parts[2] == f"{parts[1]}.json"
            ):
                files[path[: -len(".json")] + ".yaml"] = _yaml_text(
                    json.loads(files.pop(path))
                ).encode("utf-8")
    taken: set[str] = set()
    for scenario in scenarios:
        folder = evaluations.folder_of(scenario)
        while folder.lower() in taken:
            folder += "_2"
        taken.add(folder.lower())
        files[f"evaluations/{folder}/{folder}.json"] = _json_bytes(
            evaluations.scenario_to_evaluation(app, scenario)
        )
        found.extend(evaluations.export_problems(scenario))
    return files, tuple(found)


def _in_toolset(tool: ToolSpec) -> bool:
    """An operation of a CX toolset, shown as a tool: the toolset itself is exported."""
    return bool(tool.cx.get("toolset"))


def _agent_files(
    agent: AgentSpec,
    agent_dirs: Mapping[str, str],
    tool_dirs: Mapping[str, str],
    found: list[Diagnostic],
) -> dict[str, bytes]:
    folder = agent_dirs[agent.name]
    base = f"agents/{folder}"
    path = f"{base}/{folder}.json"
    files: dict[str, bytes] = {f"{base}/instruction.txt": agent.instructions.encode("utf-8")}
    data: dict[str, Any] = {"name": folder, "displayName": agent.name}
    if agent.description:
        data["description"] = agent.description
    data["instruction"] = f"{base}/instruction.txt"
    tools = []
    for tool in agent.tools:
        if tool in tool_dirs:
            tools.append(tool_dirs[tool])
        else:
            found.append(
                _note(
                    "SC608",
                    E,
                    path,
                    "tools",
                    Message("the app has no tool named %(tool)s", tool=repr(tool)),
                )
            )
    children = []
    for child in agent.children:
        if child in agent_dirs:
            children.append(agent_dirs[child])
        else:
            found.append(
                _note(
                    "SC608",
                    E,
                    path,
                    "childAgents",
                    Message("the app has no agent named %(child)s", child=repr(child)),
                )
            )
    if tools:
        data["tools"] = tools
    if children:
        data["childAgents"] = children
    for kind, key in _CALLBACK_FIELDS.items():
        callbacks = sorted((c for c in agent.callbacks if c.kind is kind), key=lambda c: c.order)
        entries = []
        for n, callback in enumerate(callbacks, start=1):
            code_path = (
                f"{base}/{kind.value}_callbacks/{kind.value}_callbacks_{n:02d}/python_code.py"
            )
            files[code_path] = callback.code.encode("utf-8")
            entries.append({"pythonCode": code_path})
        if entries:
            data[key] = entries
    files[path] = _json_bytes(data)
    return files


def _what_cx_lint_rejects(app: AppSpec, agent_dirs: Mapping[str, str]) -> list[Diagnostic]:
    """Lint's findings that CX's linter makes too, told in the export's files: a `{{...}}`
    path CX cannot resolve is an error (in a condition, `{% if a.b %}`, a path is
    Statecraft's to resolve, not CX's); a tool the instructions never mention, a warning
    (its I012; CX calls end_session by itself)."""
    found = []
    texts = {a.name: a.instructions for a in app.agents}
    for d in lint_app(app):
        if d.subject not in agent_dirs:
            continue
        folder = agent_dirs[d.subject]
        if d.code == "SC312" and d.reference != "end_session":
            file = f"agents/{folder}/{folder}.json"
            message = Message("CX's linter warns about it too: %(message)s", message=d.message)
            found.append(replace(_note(d.code, W, file, "tools", message), reference=d.reference))
        if d.code not in CX_REJECTED_PATH_CODES:
            continue
        if d.start is None or not texts.get(d.subject, "").startswith("{{", d.start):
            continue
        file = f"agents/{folder}/instruction.txt"
        found.append(
            Diagnostic(
                d.code,
                E,
                Message(
                    "%(file)s: line %(line)s: CX Agent Studio rejects this reference: %(message)s",
                    file=file,
                    line=d.line,
                    message=d.message,
                ),
                d.line,
                d.column,
                d.start,
                d.end,
                field="instruction",
                subject=file,
            )
        )
    return found


def _second_parents(app: AppSpec, agent_dirs: Mapping[str, str]) -> list[Diagnostic]:
    """A sub-agent listed by more than one agent: CX's agents form a tree (cxas lint S007)."""
    parents: dict[str, list[str]] = {}
    for agent in app.agents:
        for child in dict.fromkeys(agent.children):
            parents.setdefault(child, []).append(agent.name)
    found = []
    for child, names in parents.items():
        if len(names) > 1 and child in agent_dirs:
            folder = agent_dirs[child]
            found.append(
                _note(
                    "SC626",
                    E,
                    f"agents/{folder}/{folder}.json",
                    "",
                    Message(
                        "the agent %(child)s is a sub-agent of %(names_count)s agents "
                        "(%(names)s); in CX a sub-agent has one parent: keep it under "
                        "one of them",
                        child=repr(child),
                        names_count=len(names),
                        names=", ".join(names),
                    ),
                )
            )
    return found


def _tool_files(tool: ToolSpec, folder: str, found: list[Diagnostic]) -> dict[str, bytes]:
    base = f"tools/{folder}"
    path = f"{base}/{folder}.json"
    files: dict[str, bytes] = {}
    data: dict[str, Any] = {"name": folder, "displayName": tool.name}
    if tool.kind is ToolKind.PYTHON:
        code_path = f"{base}/python_function/python_code.py"
        files[code_path] = tool.python_code.encode("utf-8")
        # CX reads a Python tool's description from its docstring when it has none of its own.
        docstring = analyze_code(tool.python_code).docstring_of(tool.name) or ""
        data["pythonFunction"] = {
            "name": tool.name,
            "pythonCode": code_path,
            "description": tool.description.strip() or docstring.strip(),
        }
    elif tool.kind is ToolKind.OPENAPI:
        spec: dict[str, Any] = {"name": tool.name, "description": tool.description}
        if tool.openapi is None:
            found.append(
                _note(
                    "SC620",
                    W,
                    path,
                    "openApiTool.openApiSchema",
                    Message("the tool has no document"),
                )
            )
        else:
            schema_path = f"{base}/open_api_tool/open_api_schema.yaml"
            files[schema_path] = _yaml_text(tool.openapi).encode("utf-8")
            spec["openApiSchema"] = schema_path
        data["openApiTool"] = spec
    else:
        mcp: dict[str, Any] = {
            "name": tool.name,
            "description": tool.description,
            "serverAddress": tool.mcp_url,
        }
        if tool.mcp_headers:
            mcp["customHeaders"] = dict(tool.mcp_headers)
        data["mcpTool"] = mcp
    for other in ("python_code", "openapi", "mcp_url", "mcp_headers"):
        value = getattr(tool, other)
        used = {ToolKind.PYTHON: "python_code", ToolKind.OPENAPI: "openapi"}.get(tool.kind)
        if value and other != used and not (tool.kind is ToolKind.MCP and other.startswith("mcp")):
            found.append(
                _note(
                    "SC620",
                    W,
                    path,
                    "",
                    Message(
                        "the %(value)s tool %(name)s also has %(other)s, which a "
                        "%(value)s tool does not use in CX; not exported",
                        value=tool.kind.value,
                        name=tool.name,
                        other=other,
                    ),
                )
            )
    kind_field = _TOOL_KIND_FIELDS.get(tool.kind, "mcpTool")
    if not str(data[kind_field].get("description") or "").strip():
        hint = " or docstring" if tool.kind is ToolKind.PYTHON else ""
        found.append(
            _note(
                "SC625",
                W,
                path,
                f"{kind_field}.description",
                Message(
                    "the tool %(name)s has no description%(hint)s; CX requires one",
                    name=tool.name,
                    hint=hint,
                ),
            )
        )
    data["executionType"] = "SYNCHRONOUS"
    if tool.mock is not None:
        code_path = f"{base}/tool_fake_config/code_block/python_code.py"
        files[code_path] = mock_code(tool.name, tool.mock).encode("utf-8")
        # Fake mode as the imported tool had it; off for a mock made in Statecraft.
        imported = tool.cx.get("toolFakeConfig")
        fake_mode = isinstance(imported, dict) and imported.get("enableFakeMode") is True
        data["toolFakeConfig"] = {
            "codeBlock": {"pythonCode": code_path},
            "enableFakeMode": fake_mode,
        }
        state = "on" if fake_mode else "off (turn it on in CX to use the mock)"
        found.append(
            _note(
                "SC621",
                INFO,
                path,
                "toolFakeConfig",
                Message(
                    "the mock of %(name)s is the tool's fake-mode code block; "
                    "fake mode is %(state)s",
                    name=tool.name,
                    state=state,
                ),
            )
        )
    files[path] = _json_bytes(data)
    return files
