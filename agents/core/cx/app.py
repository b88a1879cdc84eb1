"""CX Agent Studio's app layout: export an app as the files of a CX export ZIP, and import one.

Layout (paths relative to the ZIP's root; JSON is camelCase, the proto3 JSON
form of ``google.cloud.ces.v1`` — ``App``, ``Agent``, ``Tool`` — as
``json_format`` prints it; long texts live in files that the JSON names by
path, as CX's own exports do)::

    app.json                                   App: name, displayName, description, rootAgent,
                                               variableDeclarations [{name, description, schema}]
    agents/<A>/<A>.json                        Agent: name, displayName, description,
                                               instruction, tools, childAgents, <kind>Callbacks
    agents/<A>/instruction.txt                 the instructions
    agents/<A>/<kind>_callbacks/<kind>_callbacks_01/python_code.py
                                               one callback (01, 02, ... in run order);
                                               <kind> is before_agent, after_model, ...
    tools/<T>/<T>.json                         Tool: name, displayName, executionType and one of
                                               pythonFunction / openApiTool / mcpTool
    tools/<T>/python_function/python_code.py   a Python tool's code
    tools/<T>/open_api_tool/open_api_schema.yaml   an OpenAPI tool's document
    tools/<T>/tool_fake_config/code_block/python_code.py
                                               a mock, as CX's fake-mode code block

Folder names (<A>, <T>): the agent's display name or the tool's name with every
run of characters other than ASCII letters, digits, ``_`` and ``-`` replaced by
one ``_`` (``Shopping Assistant`` → ``Shopping_Assistant``); a name already taken
(ignoring case) gets ``_2``, ``_3``... Agents refer to tools and sub-agents, and
``rootAgent`` to the root, by folder name, which is also the ``name`` of the
agent's and the tool's JSON.

A Statecraft mock becomes the tool's ``toolFakeConfig`` (a code block setting
the state and returning the response; fake mode off unless the imported tool
had it on) and comes back as the mock on import (also from the older
``tool_fake_config/python_code.py``). What CX's linter (``cxas lint``) rejects
is reported: a tool with no description (a Python tool's docstring serves), a
``{{...}}`` path CX cannot resolve (``{{list.0}}``), a sub-agent of two agents,
a tool the instructions never mention.
Scenarios are golden evaluations, ``evaluations/<name>/<name>.json`` both ways
(``agents.core.cx.evaluations``). Every JSON Schema feature CX cannot hold is
reported (``schemas.to_cx_schema``).

Import reads such a ZIP, also one whose files sit in a top folder, and takes
texts either from the file a field names or inline. Diagnostics name the file
in ``subject`` and the JSON field in ``field`` (``variableDeclarations[2].schema``),
and their message starts with both. What Statecraft has no place for (model
settings, guardrails, toolsets, other tool kinds, ...) is reported, not kept.
"""

from __future__ import annotations

import ast
import base64
import difflib
import io
import json
import posixpath
import re
import unicodedata
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from agents.core import codes, rules
from agents.core.code_analysis import analyze_code
from agents.core.cx import evaluations
from agents.core.cx.carry import camel_keys, overlay
from agents.core.cx.fields import FIELDS
from agents.core.cx.schemas import variable_cx_schema, variable_from_cx_schema
from agents.core.diagnostics import Diagnostic, Message, Severity
from agents.core.formats import (
    check_app_spec,
    dumps_native,
    load_yaml,
    not_json_data,
)
from agents.core.lint import CX_REJECTED_PATH_CODES, lint_app
from agents.core.spec import (
    AgentSpec,
    AppSpec,
    CallbackKind,
    CallbackSpec,
    ScenarioSpec,
    SchemaSpec,
    ToolKind,
    ToolMock,
    ToolSpec,
    VariableSpec,
    VariableType,
)

__all__ = [
    "CODES",
    "MAX_ZIP_BYTES",
    "MAX_ZIP_FILES",
    "folder_name",
    "from_cx_files",
    "read_cx_files",
    "read_zip",
    "to_cx_files",
    "zip_bytes",
]

CODES: dict[str, str] = codes.section("cx_app")

MAX_ZIP_FILES = 1_000
MAX_ZIP_BYTES = 50 * 1024 * 1024
MAX_ZIP_FILE_BYTES = 10 * 1024 * 1024

E, W, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO
_FOLDER_RE = re.compile(r"[^A-Za-z0-9_-]+")
_CALLBACK_FIELDS = {
    kind: "".join(word.capitalize() if i else word for i, word in enumerate(kind.value.split("_")))
    + "Callbacks"
    for kind in CallbackKind
}
_TOOL_KIND_FIELDS = {
    ToolKind.PYTHON: "pythonFunction",
    ToolKind.OPENAPI: "openApiTool",
    ToolKind.MCP: "mcpTool",
}
_MOCK_DOC = '"""Statecraft mock of {name}: in fake mode, set STATE and return RESPONSE."""'


def _note(code: str, severity: Severity, file: str | None, where: str, message: str) -> Diagnostic:
    prefix = f"{file}: " if file else ""
    words = (
        Message("%(prefix)s%(where)s: %(message)s", prefix=prefix, where=where, message=message)
        if where
        else f"{prefix}{message}"
    )
    return Diagnostic(code, severity, words, field=where or None, subject=file)


def _dotted(pointer: str | None) -> str:
    """``#/properties/age`` → ``.properties.age`` (the CX JSON field path style)."""
    if not pointer or not pointer.startswith("#/"):
        return ""
    parts = pointer[2:].split("/")
    return "".join(f".{p.replace('~1', '/').replace('~0', '~')}" for p in parts)


def folder_name(name: str) -> str:
    """The folder a resource goes in: accents dropped (``Été`` → ``Ete``), then runs of
    other characters become one ``_``."""
    plain = unicodedata.normalize("NFKD", name.strip()).encode("ascii", "ignore").decode()
    return _FOLDER_RE.sub("_", plain).strip("_") or _FOLDER_RE.sub("_", name.strip()) or "_"


def _folders(names: Iterable[str]) -> dict[str, str]:
    taken: set[str] = set()
    out: dict[str, str] = {}
    for name in names:
        base = folder_name(name)
        candidate, n = base, 2
        while candidate.casefold() in taken:
            candidate, n = f"{base}_{n}", n + 1
        taken.add(candidate.casefold())
        out[name] = candidate
    return out


def _json_bytes(value: Any) -> bytes:
    return (json.dumps(value, ensure_ascii=False, indent=2) + "\n").encode("utf-8")


# ---------------------------------------------------------------- export


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


# Fields of each CX object that Statecraft edits: on export they come from Statecraft,
# every other field from the object's original JSON (`carry.overlay`).
_APP_EDITED = ("displayName", "description", "rootAgent", "variableDeclarations")
_AGENT_EDITED = (
    "displayName",
    "description",
    "instruction",
    "tools",
    "childAgents",
    *_CALLBACK_FIELDS.values(),
)
_TOOL_EDITED = (
    "displayName",
    *(
        f"{key}.{sub}"
        for key in _TOOL_KIND_FIELDS.values()
        for sub in ("description", "pythonCode", "openApiSchema", "serverAddress", "customHeaders")
    ),
)
# Kept from the original when it has them (ids, and defaults export would add).
_ORIGINAL_WINS = ("name", "executionType")


def _restore_original(original: Mapping[str, Any], out: dict[str, Any]) -> dict[str, Any]:
    for key in _ORIGINAL_WINS:
        if key in original:
            out[key] = original[key]
        elif original and key != "name":
            out.pop(key, None)
    return out


def _write_back_carry(
    app: AppSpec,
    files: dict[str, bytes],
    agent_dirs: Mapping[str, str],
    tool_dirs: Mapping[str, str],
    schemas: Mapping[str, dict[str, Any]],
) -> None:
    """Lay each object's generated JSON over what its CX import kept, and write back the
    files kept verbatim (`agents.core.cx.carry`). Objects made in Statecraft keep no
    original: their JSON is the generated one."""
    original_app = app.cx.get("app") or {}
    if original_app:
        generated = json.loads(files["app.json"])
        by_name = {v.name: v for v in app.variables}
        declarations = []
        for declaration in generated.get("variableDeclarations", []):
            variable = by_name.get(declaration.get("name"))
            declarations.append(_variable_back(variable, declaration, schemas))
        # In the original's order (Statecraft lists variables by name); new ones after.
        before = [
            d.get("name")
            for d in original_app.get("variableDeclarations", [])
            if isinstance(d, dict)
        ]
        rank = {name: i for i, name in enumerate(before)}
        for variable in app.variables:  # a renamed variable keeps its place
            if variable.cx.get("name") in rank:
                rank.setdefault(variable.name, rank[variable.cx["name"]])
        declarations.sort(key=lambda d: rank.get(d.get("name"), len(rank)))
        generated["variableDeclarations"] = declarations
        out = _restore_original(original_app, overlay(original_app, generated, _APP_EDITED))
        files["app.json"] = _json_bytes(out)
    for agent in app.agents:
        folder = agent_dirs[agent.name]
        path = f"agents/{folder}/{folder}.json"
        if not agent.cx or path not in files:
            continue
        generated = json.loads(files[path])
        generated["tools"] = _tools_back(agent, generated.get("tools", []), app, tool_dirs)
        if not generated["tools"]:
            del generated["tools"]
        for kind, key in _CALLBACK_FIELDS.items():
            entries = generated.get(key, [])
            ordered = sorted((c for c in agent.callbacks if c.kind is kind), key=lambda c: c.order)
            entries = [
                overlay(callback.cx, entry, ("pythonCode",))
                for callback, entry in zip(ordered, entries, strict=False)
            ]
            entries += [
                e for e in agent.cx.get(key, []) if isinstance(e, dict) and e.get("disabled")
            ]
            if entries:
                generated[key] = entries
        out = _restore_original(agent.cx, overlay(agent.cx, generated, _AGENT_EDITED))
        files[path] = _json_bytes(out)
    for tool in app.tools:
        folder = tool_dirs.get(tool.name)
        path = f"tools/{folder}/{folder}.json"
        if not tool.cx or tool.kind is ToolKind.PLATFORM or path not in files:
            continue
        generated = json.loads(files[path])
        edited = _TOOL_EDITED + (("toolFakeConfig",) if tool.mock is not None else ())
        out = _restore_original(tool.cx, overlay(tool.cx, generated, edited))
        if _imported_tool_name(tool.cx) == tool.name and "displayName" in tool.cx:
            out["displayName"] = tool.cx["displayName"]  # not renamed: its own display name
        for key in ("openApiTool", "mcpTool"):  # the operation's name on the server, as it was
            before = tool.cx.get(key)
            if isinstance(before, dict) and "name" in before and isinstance(out.get(key), dict):
                out[key]["name"] = before["name"]
        files[path] = _json_bytes(out)
    for path, text in (app.cx.get("files") or {}).items():
        if path in files and path.endswith((".yaml", ".yml", ".json")):
            if _same_document(files[path], text):  # unchanged: its own text, comments and all
                files[path] = text.encode("utf-8")
            continue
        files.setdefault(path, text.encode("utf-8"))
    for path, data in (app.cx.get("binary") or {}).items():
        files.setdefault(path, base64.b64decode(data))


def _same_document(generated: bytes, original: str) -> bool:
    try:
        return load_yaml(generated.decode("utf-8")) == load_yaml(original)
    except (ValueError, RecursionError, UnicodeDecodeError):
        return False


def _imported_tool_name(original: Mapping[str, Any]) -> str | None:
    """The name the import gave a tool (as `_read_tool` does): its Python function's name,
    else its display name."""
    function = original.get("pythonFunction")
    if isinstance(function, dict) and isinstance(function.get("name"), str) and function["name"]:
        return function["name"]
    display = original.get("displayName")
    return display.strip() if isinstance(display, str) else None


def _variable_back(
    variable: VariableSpec | None,
    declaration: dict[str, Any],
    schemas: Mapping[str, dict[str, Any]],
) -> dict[str, Any]:
    """The original declaration when the variable is as imported, else the new one over it."""
    if variable is None or not variable.cx:
        return declaration
    original = variable.cx
    try:
        read, _ = variable_from_cx_schema(original.get("schema") or {})
    except (TypeError, ValueError, RecursionError):
        read = None
    unchanged = (
        read is not None
        and original.get("name") == variable.name
        and (original.get("description") or "") == variable.description
        and read.type is variable.type
        and read.item_type == variable.item_type
        and read.default == variable.default
        and read.schema == (schemas.get(variable.schema) if variable.schema else None)
    )
    if unchanged:
        return dict(original)
    out = overlay(original, declaration, ("description", "schema"))
    out["schema"] = _schema_back(original.get("schema"), declaration.get("schema"))
    return out


def _schema_back(original: Any, generated: Any) -> Any:
    """A variable's new CX schema, keeping what the original said that Statecraft does not
    model (``enum`` of a text, ``minimum``, ``format``...) as long as the type is the same.
    Properties and items follow the new schema (one removed in Statecraft stays removed)."""
    if not (isinstance(original, dict) and isinstance(generated, dict)):
        return generated
    if original.get("type") != generated.get("type"):
        return generated
    out = overlay(original, generated, ("default", "required", "properties", "items"))
    properties = generated.get("properties")
    if isinstance(properties, dict):
        before = original.get("properties") if isinstance(original.get("properties"), dict) else {}
        out["properties"] = {k: _schema_back(before.get(k), v) for k, v in properties.items()}
    if "items" in generated:
        out["items"] = _schema_back(original.get("items"), generated["items"])
    return out


def _kept_tool_aliases(carried: Mapping[str, str]) -> set[str]:
    """Every name a tool kept as it is may be referenced by: folder, `name`, `displayName`."""
    aliases: set[str] = set()
    for path, text in carried.items():
        parts = path.split("/")
        if parts[0] != "tools" or len(parts) < 2:
            continue
        aliases.add(parts[1])
        if len(parts) == 3 and parts[2].rsplit(".", 1)[0] == parts[1]:
            try:
                data = json.loads(text) if parts[2].endswith(".json") else load_yaml(text)
            except (ValueError, RecursionError):
                continue
            if isinstance(data, dict):
                data = camel_keys(data, depth=1)
                aliases.update(
                    v for k in ("name", "displayName") if isinstance(v := data.get(k), str)
                )
    return aliases


def _tools_back(
    agent: AgentSpec, generated: list[str], app: AppSpec, tool_dirs: Mapping[str, str]
) -> list[str]:
    """The agent's tool references in their original order, with the tools kept as they are
    (kinds Statecraft does not edit) where they were."""
    original = [r for r in agent.cx.get("tools", []) if isinstance(r, str)]
    kept_folders = _kept_tool_aliases(app.cx.get("files") or {})
    new = set(generated)
    aliases: dict[str, str] = {}  # what an original reference may say → the exported reference
    for tool in app.tools:
        exported = tool_dirs.get(tool.name)
        display = tool.cx.get("displayName")
        folder = folder_name(display) if isinstance(display, str) else None
        for alias in (tool.name, exported, tool.cx.get("name"), display, folder):
            if isinstance(alias, str) and alias and exported:
                aliases.setdefault(alias, exported)
    out = []
    for reference in original:
        segment = _last_segment(reference)
        exported = aliases.get(reference) or aliases.get(segment)
        if exported in new:
            out.append(exported)
            new.discard(exported)
        elif segment in kept_folders or reference in kept_folders:
            out.append(reference)
    out += [r for r in generated if r in new]
    return out


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


def _yaml_text(value: Any) -> str:
    return dumps_native(value, fmt="yaml")


def mock_code(tool_name: str, mock: ToolMock) -> str:
    """A CX fake-mode code block that does what the mock does (read back by `_read_mock`)."""
    return "\n".join(
        [
            _MOCK_DOC.format(name=tool_name),
            "",
            f"STATE = {mock.state!r}",
            f"RESPONSE = {mock.response!r}",
            "",
            "",
            "def fake_tool_call(tool, input, callback_context):",
            "    for name, value in STATE.items():",
            "        callback_context.state[name] = value",
            "    return RESPONSE",
            "",
        ]
    )


def _read_mock(code: str) -> ToolMock | None:
    try:
        module = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError):
        return None
    values: dict[str, Any] = {}
    for node in module.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id in ("STATE", "RESPONSE")
        ):
            try:
                values[node.targets[0].id] = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
                return None
    state = values.get("STATE")
    if "RESPONSE" not in values or not isinstance(state, dict):
        return None
    if not_json_data(state) or not_json_data(values["RESPONSE"]):
        return None
    return ToolMock(state=state, response=values["RESPONSE"])


# ---------------------------------------------------------------- zip


def zip_bytes(files: Mapping[str, bytes]) -> bytes:
    """A deterministic ZIP of `files` (sorted, fixed timestamps, deflated)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(files):
            info = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, files[path])
    return buffer.getvalue()


def _unsafe_path(name: str) -> bool:
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name) or "\x00" in name:
        return True
    return any(part == ".." for part in name.split("/"))


def read_zip(data: bytes) -> tuple[dict[str, bytes] | None, tuple[Diagnostic, ...]]:
    """The files of a ZIP (path → bytes), or None and why it is refused. Never raises.

    Refused: more than MAX_ZIP_FILES files, more than MAX_ZIP_BYTES unpacked
    (checked on the sizes the ZIP declares and again while reading, so a
    lying header does not help), a file over MAX_ZIP_FILE_BYTES, a path that
    is absolute or climbs out with ``..``, a path twice, encrypted entries.
    Folders and macOS ``__MACOSX/`` / ``.DS_Store`` entries are skipped.
    """

    def refuse(code: str, message: str) -> tuple[None, tuple[Diagnostic, ...]]:
        return None, (Diagnostic(code, E, message, field="(zip)"),)

    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError) as exc:
        return refuse("SC601", Message("the upload is not a readable ZIP (%(exc)s)", exc=exc))
    with archive:
        infos = [info for info in archive.infolist() if not info.is_dir()]
        if len(infos) > MAX_ZIP_FILES:
            return refuse(
                "SC602",
                Message(
                    "the ZIP has %(infos_count)s files; at most %(max_zip_files)s",
                    infos_count=len(infos),
                    max_zip_files=MAX_ZIP_FILES,
                ),
            )
        declared = sum(info.file_size for info in infos)
        if declared > MAX_ZIP_BYTES:
            return refuse(
                "SC602",
                Message(
                    "the ZIP unpacks to %(declared)s MB; at most %(max_zip_bytes)s MB",
                    declared=declared // (1024 * 1024),
                    max_zip_bytes=MAX_ZIP_BYTES // (1024 * 1024),
                ),
            )
        files: dict[str, bytes] = {}
        total = 0
        for info in infos:
            name = info.filename.replace("\\", "/")
            if _unsafe_path(name):
                return refuse(
                    "SC603",
                    Message(
                        "%(filename)s: the path leaves the ZIP's folder", filename=info.filename
                    ),
                )
            name = posixpath.normpath(name)
            base = posixpath.basename(name)
            if name.startswith("__MACOSX/") or base == ".DS_Store":
                continue
            if name in files:
                return refuse(
                    "SC603", Message("%(name)s: the ZIP holds this path twice", name=name)
                )
            if info.flag_bits & 0x1:
                return refuse(
                    "SC601", Message("%(name)s: encrypted files cannot be read", name=name)
                )
            if info.file_size > MAX_ZIP_FILE_BYTES:
                return refuse(
                    "SC602",
                    Message(
                        "%(name)s: a file over %(max_zip_file_bytes)s KB",
                        name=name,
                        max_zip_file_bytes=MAX_ZIP_FILE_BYTES // 1024,
                    ),
                )
            try:
                with archive.open(info) as stream:
                    content = stream.read(MAX_ZIP_FILE_BYTES + 1)
            except (zipfile.BadZipFile, NotImplementedError, RuntimeError, OSError) as exc:
                return refuse(
                    "SC601", Message("%(name)s: cannot be unpacked (%(exc)s)", name=name, exc=exc)
                )
            except Exception as exc:  # zlib.error and friends: a damaged member
                return refuse(
                    "SC601",
                    Message(
                        "%(name)s: cannot be unpacked (%(error)s)",
                        name=name,
                        error=type(exc).__name__,
                    ),
                )
            if len(content) > MAX_ZIP_FILE_BYTES:
                return refuse(
                    "SC602",
                    Message(
                        "%(name)s: a file over %(max_zip_file_bytes)s KB",
                        name=name,
                        max_zip_file_bytes=MAX_ZIP_FILE_BYTES // 1024,
                    ),
                )
            total += len(content)
            if total > MAX_ZIP_BYTES:
                return refuse(
                    "SC602",
                    Message(
                        "the ZIP unpacks to more than %(max_zip_bytes)s MB",
                        max_zip_bytes=MAX_ZIP_BYTES // (1024 * 1024),
                    ),
                )
            files[name] = content
    return files, ()


# ---------------------------------------------------------------- import

_OUTPUT_ONLY = frozenset(
    {
        "createTime",
        "updateTime",
        "etag",
        "deploymentCount",
        "locked",
        "validationErrors",
        "generatedSummary",
    }
)
_APP_FILES = ("app.json", "app.yaml", "app.yml")
_APP_USED = frozenset({"name", "displayName", "description", "rootAgent", "variableDeclarations"})
_APP_BEHAVIOUR = frozenset({"globalInstruction", "guardrails", "predefinedVariableDeclarations"})
_AGENT_USED = frozenset(
    {
        "name",
        "displayName",
        "description",
        "instruction",
        "tools",
        "childAgents",
        "llmAgent",
        "toolsets",
    }
    | set(_CALLBACK_FIELDS.values())
)
_AGENT_BEHAVIOUR = frozenset(
    {"remoteDialogflowAgent", "guardrails", "transferRules", "modelSettings"}
)
_TOOL_USED = frozenset(
    {"name", "displayName", "executionType", "toolFakeConfig", *_TOOL_KIND_FIELDS.values()}
)
_OTHER_TOOL_KINDS = (
    "clientFunction",
    "googleSearchTool",
    "connectorTool",
    "dataStoreTool",
    "fileSearchTool",
    "systemTool",
    "agentTool",
    "widgetTool",
    "remoteAgentTool",
)


@dataclass
class _Import:
    files: Mapping[str, bytes]
    found: list[Diagnostic] = field(default_factory=list)
    consumed: set[str] = field(default_factory=set)  # files read into Statecraft objects
    app_path: str = "app.json"  # or app.yaml

    def note(self, code: str, severity: Severity, file: str | None, where: str, msg: str) -> None:
        self.found.append(_note(code, severity, file, where, msg))

    def json_object(self, path: str) -> dict[str, Any] | None:
        """A CX object from its .json file, or its .yaml one (keys as the JSON form has them)."""
        text = self.text_file(path)
        if text is None:
            return None
        form = path.removesuffix(".tftpl")  # a Terraform template: the format inside
        try:
            if form.endswith((".yaml", ".yml")):
                value = camel_keys(load_yaml(text), depth=4)
            else:
                value = json.loads(text)
        except json.JSONDecodeError as exc:
            self.note(
                "SC605",
                E,
                path,
                "",
                Message(
                    "not valid JSON (line %(lineno)s: %(msg)s)", lineno=exc.lineno, msg=exc.msg
                ),
            )
            return None
        except ValueError as exc:
            self.note("SC605", E, path, "", Message("not valid YAML (%(exc)s)", exc=exc))
            return None
        except RecursionError:
            self.note("SC605", E, path, "", Message("nested too deeply"))
            return None
        if not isinstance(value, dict):
            self.note("SC605", E, path, "", Message("must hold a JSON object"))
            return None
        problem = not_json_data(value)
        if problem:
            self.note("SC605", E, path, problem.field or "", problem.message)
            return None
        return value

    def text_file(self, path: str) -> str | None:
        self.consumed.add(path)
        try:
            return self.files[path].decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            self.note(
                "SC605",
                E,
                path,
                "",
                Message("not UTF-8 text (byte %(start)s)", start=exc.start + 1),
            )
            return None

    def text_field(self, owner: str, where: str, value: Any) -> str | None:
        """A text given by the file it names (from the app root or the JSON's folder) or inline."""
        if value is None:
            return ""
        if not isinstance(value, str):
            self.note("SC606", E, owner, where, Message("must be text"))
            return None
        candidates = [value, posixpath.normpath(posixpath.join(posixpath.dirname(owner), value))]
        for candidate in candidates:
            if candidate in self.files:
                return self.text_file(candidate)
        if "\n" not in value and re.search(r"\.(py|txt|ya?ml|json)$", value.strip()):
            self.note(
                "SC608",
                E,
                owner,
                where,
                Message("names the file %(value)s, not in the ZIP", value=repr(value)),
            )
            return None
        return value

    def unknown_fields(
        self,
        owner: str,
        data: Mapping[str, Any],
        used: frozenset[str],
        behaviour: frozenset[str],
        prefix: str = "",
        message_type: str = "",
    ) -> None:
        """Note each field Statecraft does not edit: kept as is; one that the CX resource
        (`message_type`, as in `cx.fields`) does not have is a warning with a suggestion."""
        known = FIELDS.get(message_type)
        for key, value in data.items():
            if known is not None and key not in known and not str(key).startswith("_"):
                close = difflib.get_close_matches(str(key), sorted(known), n=1)
                hint = f"did you mean `{close[0]}`? " if close else ""
                message = Message(
                    "`%(key)s` is not a field of a CX %(message_type)s: "
                    "%(hint)skept as it is, but CX will reject or ignore it",
                    key=key,
                    message_type=message_type,
                    hint=hint,
                )
                self.note("SC607", W, owner, f"{prefix}{key}", message)
                continue
            if key in used or key in _OUTPUT_ONLY or value in (None, "", [], {}, False):
                continue
            if key in behaviour:
                message = Message(
                    "kept as is and written back on export; the simulation does not apply it"
                )
                self.note("SC607", W, owner, f"{prefix}{key}", message)
            else:
                message = Message("kept as is and written back on export")
                self.note("SC607", INFO, owner, f"{prefix}{key}", message)

    def object_file(self, folder: str) -> str | None:
        """``<folder>/<name>.json`` or ``.yaml`` (CX's two layouts), whichever the ZIP has."""
        name = posixpath.basename(folder)
        for ext in ("json", "yaml", "yml"):
            if f"{folder}/{name}.{ext}" in self.files:
                return f"{folder}/{name}.{ext}"
        return None

    def folders(self, top: str) -> list[str]:
        """The folders under `top` (``agents``, ``tools``, ``toolsets``), sorted."""
        return sorted(
            {p.split("/")[1] for p in self.files if p.startswith(f"{top}/") and p.count("/") >= 2}
        )

    def keep(self, prefix: str) -> None:
        """The files under `prefix` stay in the carry, verbatim, even if they were read."""
        self.consumed.difference_update(p for p in self.files if p.startswith(prefix))

    def carried_files(self) -> dict[str, Any]:
        """Every file no Statecraft object was read from, verbatim (text; else base64)."""
        texts: dict[str, str] = {}
        binary: dict[str, str] = {}
        for path in sorted(self.files):
            if path in self.consumed:
                continue
            try:
                texts[path] = self.files[path].decode("utf-8")
            except UnicodeDecodeError:
                binary[path] = base64.b64encode(self.files[path]).decode("ascii")
        return {"files": texts, **({"binary": binary} if binary else {})}


def _last_segment(reference: str) -> str:
    return reference.rstrip("/").rsplit("/", 1)[-1]


def _find_app_json(
    files: Mapping[str, bytes],
) -> tuple[str | None, tuple[Diagnostic, ...]]:
    candidates = [p for p in files if posixpath.basename(p) in _APP_FILES]
    if not candidates:
        return None, (
            _note("SC604", E, None, "", Message("the ZIP has no app.json (or app.yaml)")),
        )
    depth = min(p.count("/") for p in candidates)
    top = sorted(p for p in candidates if p.count("/") == depth)
    if len({posixpath.dirname(p) for p in top}) > 1:
        return None, (
            _note(
                "SC604",
                E,
                None,
                "",
                Message("the ZIP has several apps: %(top)s", top=", ".join(top)),
            ),
        )
    return top[0][: -len(posixpath.basename(top[0]))], ()


def from_cx_files(files: Mapping[str, bytes]) -> tuple[AppSpec | None, tuple[Diagnostic, ...]]:
    """The app a CX export holds (see `read_cx_files`, without the scenarios)."""
    app, _, found = read_cx_files(files)
    return app, found


def read_cx_files(
    files: Mapping[str, bytes],
) -> tuple[AppSpec | None, tuple[ScenarioSpec, ...], tuple[Diagnostic, ...]]:
    """The app a CX export holds, its golden evaluations as scenarios
    (`agents.core.cx.evaluations`), and what could not be read. Never raises.

    The app is None when nothing usable is found (no app.json, unreadable
    JSON); otherwise it comes with the diagnostics of `check_app_spec` too
    (errors mean it cannot be imported as it is). What Statecraft does not edit is
    kept (`agents.core.cx.carry`): each object's original JSON in its ``cx``, and every
    file no object was read from in the app's ``cx["files"]``.
    """
    prefix, problems = _find_app_json(files)
    if prefix is None:
        return None, (), problems
    inside = {p[len(prefix) :]: data for p, data in files.items() if p.startswith(prefix)}
    state = _Import(inside)
    app_path = next(p for p in _APP_FILES if p in inside)
    state.app_path = app_path
    for other in _APP_FILES:
        if other != app_path and other in inside:
            message = Message(
                "the ZIP also has %(other)s; %(app_path)s is read and %(other)s kept as it is",
                other=other,
                app_path=app_path,
            )
            state.note("SC604", W, other, "", message)
    app_data = state.json_object(app_path)
    if app_data is None:
        return None, (), tuple(state.found)
    state.unknown_fields(app_path, app_data, _APP_USED, _APP_BEHAVIOUR, message_type="App")

    tools, tool_refs, tool_files, kept_tools = _read_tools(state)
    toolsets = _read_toolsets(state, {t.name for t in tools})
    agents_raw = _read_agent_files(state)
    agent_refs: dict[str, str] = {}
    for folder, (_, data) in agents_raw.items():
        display = data.get("displayName")
        display = display.strip() if isinstance(display, str) and display.strip() else folder
        for key in (folder, data.get("name"), display):
            if isinstance(key, str) and key:
                agent_refs.setdefault(key, display)
                agent_refs.setdefault(_last_segment(key), display)

    root_ref = app_data.get("rootAgent")
    root_name = None
    if isinstance(root_ref, str) and root_ref:
        root_name = agent_refs.get(root_ref) or agent_refs.get(_last_segment(root_ref))
        if root_name is None:
            state.note(
                "SC608",
                E,
                app_path,
                "rootAgent",
                Message("no agent %(root_ref)s in the ZIP", root_ref=repr(root_ref)),
            )
    elif agents_raw:
        state.note(
            "SC606", W, app_path, "rootAgent", Message("missing; the first agent is the root")
        )

    _check_kept_references(state, app_data, agents_raw, agent_refs)
    refs = _ToolRefs(tool_refs, kept_tools, toolsets)
    agents = []
    agent_files: dict[str, str] = {}
    for path, data in agents_raw.values():
        agent = _read_agent(state, path, data, refs, agent_refs)
        if agent is not None:
            agents.append(replace(agent, is_root=agent.name == root_name))
            agent_files[agent.name] = path
    if agents and not any(a.is_root for a in agents):
        agents[0] = replace(agents[0], is_root=True)
    for name in sorted(refs.platform_used):
        tools.append(
            ToolSpec(
                name=name,
                kind=ToolKind.PLATFORM,
                description=rules.PLATFORM_TOOLS[name],
                cx={"platform": True},
            )
        )
    unique = {id(ts): ts for ts in toolsets.values()}.values()  # a toolset under each alias
    tools.extend(t for ts in unique for t in ts.tools if t.name in refs.toolset_used)

    variables, schemas = _read_variables(state, app_data, app_path)
    name = app_data.get("displayName")
    if not isinstance(name, str) or not name.strip():
        state.note(
            "SC606", W, app_path, "displayName", Message("missing; the app is named 'CX app'")
        )
        name = "CX app"
    description = app_data.get("description", "")
    goldens = _read_goldens(state)
    carried = state.carried_files()
    app = AppSpec(
        name=name.strip(),
        description=description if isinstance(description, str) else "",
        variables=tuple(variables),
        schemas=tuple(schemas),
        tools=tuple(tools),
        agents=tuple(agents),
        cx={"app": app_data, "layout": "yaml" if app_path != "app.json" else "json", **carried},
    )
    already = {d.subject for d in state.found}  # a file with its own note needs no other
    for path in sorted(carried["files"]) + sorted(carried.get("binary", {})):
        if path not in already:
            state.note("SC607", INFO, path, "", Message("kept as is and written back on export"))
    variable_index = {v.name: i for i, v in enumerate(app.variables)}
    for d in check_app_spec(app):
        state.found.append(_place(d, variable_index, tool_files, agent_files, app_path))
    scenarios: list[ScenarioSpec] = []
    names: set[str] = set()
    for path, data in goldens:
        scenario, notes = evaluations.evaluation_to_scenario(app, data, path)
        state.found.extend(notes)
        if scenario is not None and scenario.agent:
            while (scenario.agent, scenario.name.lower()) in names:
                scenario = replace(scenario, name=f"{scenario.name} (2)")
            names.add((scenario.agent, scenario.name.lower()))
            scenarios.append(scenario)
    root = next((a for a in app.agents if a.is_root), None)
    if scenarios and root is not None and len(app.agents) > 1:
        message = Message(
            "the %(scenarios_count)s golden(s) start at the root agent "
            "%(name)s, as CX starts every conversation: a sub-agent's "
            "tools run once the root's model has transferred to it (a "
            "golden that leaves that routing to the model needs the "
            "routing call written into its first turn to run offline)",
            scenarios_count=len(scenarios),
            name=root.name,
        )
        state.note("SC610", INFO, state.app_path, "rootAgent", message)
    return app, tuple(scenarios), tuple(state.found)


def _read_goldens(state: _Import) -> list[tuple[str, dict[str, Any]]]:
    """The golden evaluations of the ZIP (``evaluations/<name>/<name>.json``). The other
    evaluations (of the scenario kind: they need a model) stay unread: kept verbatim."""
    goldens: list[tuple[str, dict[str, Any]]] = []
    for path in sorted(state.files):
        parts = path.split("/")
        if len(parts) != 3 or parts[0] != "evaluations" or not path.endswith(".json"):
            continue
        data = state.json_object(path)
        if data is not None and isinstance(data.get("golden"), dict):
            goldens.append((path, data))
            continue
        state.consumed.discard(path)
        if data is not None and isinstance(data.get("scenario"), dict):
            name = data.get("displayName") or parts[1]
            state.note(
                "SC607",
                INFO,
                path,
                "scenario",
                Message(
                    "%(name)s is an evaluation of the scenario kind (a simulated "
                    "user with a task and rubrics): it needs a model; kept as is, "
                    "listed, not run",
                    name=repr(name),
                ),
            )
    return goldens


def _check_kept_references(
    state: _Import,
    app_data: Mapping[str, Any],
    agents_raw: Mapping[str, tuple[str, dict[str, Any]]],
    agent_refs: Mapping[str, str],
) -> None:
    """What Statecraft keeps as is may still name something the ZIP lacks: guardrails (of
    the app and of agents) and the agents of transfer rules. CX would refuse such an app;
    the import keeps it and warns, naming the fix."""
    guardrails: set[str] = set()
    for folder in state.folders("guardrails"):
        guardrails.add(folder)
        path = state.object_file(f"guardrails/{folder}")
        data = state.json_object(path) if path else None
        state.keep(f"guardrails/{folder}/")
        if data is not None:
            state.unknown_fields(
                path, data, FIELDS["Guardrail"], frozenset(), message_type="Guardrail"
            )
            guardrails.update(
                v for k in ("name", "displayName") if isinstance(v := data.get(k), str)
            )
    owners = [(state.app_path, app_data), *agents_raw.values()]
    for path, data in owners:
        for i, reference in enumerate(data.get("guardrails") or []):
            if isinstance(reference, str) and not (
                reference in guardrails or _last_segment(reference) in guardrails
            ):
                message = Message(
                    "no guardrail %(reference)s in the ZIP; CX will refuse the "
                    "app: add guardrails/<name>/ or remove the reference",
                    reference=repr(reference),
                )
                state.note("SC608", W, path, f"guardrails[{i}]", message)
    for path, data in agents_raw.values():
        rules_ = data.get("transferRules")
        for i, rule in enumerate(rules_ if isinstance(rules_, list) else []):
            child = rule.get("childAgent") if isinstance(rule, dict) else None
            if isinstance(child, str) and not (
                child in agent_refs or _last_segment(child) in agent_refs
            ):
                message = Message(
                    "no agent %(child)s in the ZIP; CX will refuse the app: name "
                    "one of its agents or remove the rule",
                    child=repr(child),
                )
                state.note("SC608", W, path, f"transferRules[{i}].childAgent", message)


def _place(
    d: Diagnostic,
    variable_index: Mapping[str, int],
    tool_files: Mapping[str, str],
    agent_files: Mapping[str, str],
    app_path: str = "app.json",
) -> Diagnostic:
    """A check on the Statecraft app, told in terms of the CX file and field it came from."""
    where = d.field or ""
    parts = where.split(".")
    file, cx_field = None, where
    if parts[0] in ("variables", "schemas", "name"):
        file = app_path
        if parts[0] == "variables" and len(parts) > 1 and parts[1] in variable_index:
            declaration = f"variableDeclarations[{variable_index[parts[1]]}]"
            last = parts[-1]
            cx_field = {"default": f"{declaration}.schema.default", "name": f"{declaration}.name"}
            cx_field = cx_field.get(last, f"{declaration}.schema")
        elif parts[0] == "name":
            cx_field = "displayName"
    elif parts[0] == "tools" and len(parts) > 1:
        file = tool_files.get(parts[1])
    elif parts[0] == "agents" and len(parts) > 1:
        file = agent_files.get(parts[1])
    message = Message("%(file)s: %(message)s", file=file, message=d.message) if file else d.message
    return replace(d, subject=file, field=cx_field, message=message)


def _read_variables(
    state: _Import, app_data: Mapping[str, Any], app_path: str = "app.json"
) -> tuple[list[VariableSpec], list[SchemaSpec]]:
    declarations = app_data.get("variableDeclarations", [])
    if not isinstance(declarations, list):
        state.note("SC606", E, app_path, "variableDeclarations", Message("must be a list"))
        return [], []
    variables: list[VariableSpec] = []
    schemas: list[SchemaSpec] = []
    for i, declaration in enumerate(declarations):
        where = f"variableDeclarations[{i}]"
        if not isinstance(declaration, dict):
            state.note("SC606", E, state.app_path, where, Message("must be an object"))
            continue
        name = declaration.get("name")
        if not isinstance(name, str) or rules.name_problems(name):
            state.note(
                "SC609",
                E,
                state.app_path,
                f"{where}.name",
                Message("%(name)s is not a valid name", name=repr(name)),
            )
            continue
        state.unknown_fields(
            state.app_path,
            declaration,
            frozenset({"name", "description", "schema"}),
            frozenset(),
            prefix=f"{where}.",
            message_type="VariableDeclaration",
        )
        description = declaration.get("description", "")
        if not isinstance(description, str):
            state.note(
                "SC606", W, state.app_path, f"{where}.description", Message("not text; left empty")
            )
            description = ""
        cx_schema = declaration.get("schema")
        if not isinstance(cx_schema, dict):
            state.note(
                "SC606", E, state.app_path, f"{where}.schema", Message("a variable needs a schema")
            )
            continue
        try:
            read, problems = variable_from_cx_schema(cx_schema)
        except (TypeError, ValueError, RecursionError) as exc:
            # A CX schema with a non-text "type" ([...], {...}) trips the converter.
            state.note(
                "SC606",
                E,
                state.app_path,
                f"{where}.schema",
                Message("cannot be read (%(exc)s)", exc=exc),
            )
            continue
        for d in problems:
            at = f"{where}.schema{_dotted(d.field)}"
            message = Message("%(name)s: %(message)s", name=name, message=d.message)
            state.found.append(_note(d.code, d.severity, state.app_path, at, message))
        schema_name = None
        if read.schema is not None:
            schema_name = _schema_for(state, schemas, read, name, where)
        variables.append(
            VariableSpec(
                name=name,
                type=read.type,
                default=read.default,
                description=description,
                item_type=read.item_type,
                schema=schema_name,
                cx=declaration,
            )
        )
    return variables, schemas


def _schema_for(
    state: _Import, schemas: list[SchemaSpec], read: Any, variable: str, where: str
) -> str:
    for existing in schemas:
        if existing.schema == read.schema:
            return existing.name
    taken = {s.name for s in schemas}
    title = read.schema.get("title")
    if isinstance(title, str) and not rules.name_problems(title):
        base = title
    else:
        base = "".join(part.capitalize() for part in variable.split("_") if part) or "Schema"
        if read.type is VariableType.LIST:
            base += "Item"
        base = base[:60]
    candidate, n = base, 2
    while candidate in taken:
        candidate, n = f"{base}{n}", n + 1
    schemas.append(SchemaSpec(name=candidate, schema=read.schema))
    state.note(
        "SC624",
        INFO,
        state.app_path,
        f"{where}.schema",
        Message(
            "the object schema of %(variable)s is imported as the schema %(candidate)s",
            variable=variable,
            candidate=candidate,
        ),
    )
    return candidate


def _read_agent_files(state: _Import) -> dict[str, tuple[str, dict[str, Any]]]:
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    for folder in state.folders("agents"):
        path = state.object_file(f"agents/{folder}")
        if path is None:
            continue
        data = state.json_object(path)
        if data is not None:
            found[folder] = (path, data)
    return found


@dataclass
class _ToolRefs:
    """How an agent's tool references resolve: Statecraft tools, tools CX provides, tools
    kept as they are (kinds Statecraft does not edit), and toolsets' operations."""

    tools: Mapping[str, str]
    kept: set[str]
    toolsets: Mapping[str, _Toolset]
    platform_used: set[str] = field(default_factory=set)
    toolset_used: set[str] = field(default_factory=set)

    def toolset(self, reference: str) -> _Toolset | None:
        return self.toolsets.get(reference) or self.toolsets.get(_last_segment(reference))


def _read_agent(
    state: _Import,
    path: str,
    data: Mapping[str, Any],
    refs: _ToolRefs,
    agent_refs: Mapping[str, str],
) -> AgentSpec | None:
    state.unknown_fields(path, data, _AGENT_USED, _AGENT_BEHAVIOUR, message_type="Agent")
    folder = path.split("/")[1]
    display = data.get("displayName")
    display = display.strip() if isinstance(display, str) and display.strip() else folder
    instructions = state.text_field(path, "instruction", data.get("instruction"))
    description = data.get("description", "")
    tools: list[str] = []
    for i, reference in enumerate(_string_list(state, path, "tools", data.get("tools"))):
        name = refs.tools.get(reference) or refs.tools.get(_last_segment(reference))
        if name is not None:
            tools.append(name)
        elif _last_segment(reference) in rules.PLATFORM_TOOLS:
            tools.append(_last_segment(reference))
            refs.platform_used.add(_last_segment(reference))
        elif reference in refs.kept or _last_segment(reference) in refs.kept:
            message = Message(
                "%(reference)s is kept as is; the simulation cannot call it",
                reference=repr(reference),
            )
            state.note("SC607", INFO, path, f"tools[{i}]", message)
        else:
            state.note(
                "SC608",
                E,
                path,
                f"tools[{i}]",
                Message("no tool %(reference)s in the ZIP", reference=repr(reference)),
            )
    toolsets = data.get("toolsets", [])
    for i, entry in enumerate(toolsets if isinstance(toolsets, list) else []):
        reference = entry.get("toolset") if isinstance(entry, dict) else None
        toolset = refs.toolset(reference) if isinstance(reference, str) else None
        if toolset is None:
            state.note(
                "SC608",
                E,
                path,
                f"toolsets[{i}]",
                Message("no toolset %(reference)s in the ZIP", reference=repr(reference)),
            )
            continue
        wanted = entry.get("toolIds")
        for tool_id in wanted if toolset.mcp is not None and isinstance(wanted, list) else ():
            if isinstance(tool_id, str) and tool_id:
                toolset.mcp_tool(tool_id)
        for tool in toolset.tools:
            if isinstance(wanted, list) and wanted and tool.cx["operation"] not in wanted:
                continue
            tools.append(tool.name)
            refs.toolset_used.add(tool.name)
    children: list[str] = []
    for i, reference in enumerate(
        _string_list(state, path, "childAgents", data.get("childAgents"))
    ):
        name = agent_refs.get(reference) or agent_refs.get(_last_segment(reference))
        if name is None:
            state.note(
                "SC608",
                E,
                path,
                f"childAgents[{i}]",
                Message("no agent %(reference)s in the ZIP", reference=repr(reference)),
            )
        else:
            children.append(name)
    callbacks: list[CallbackSpec] = []
    for kind, key in _CALLBACK_FIELDS.items():
        entries = data.get(key, [])
        if not isinstance(entries, list):
            state.note("SC606", E, path, key, Message("must be a list of callbacks"))
            continue
        order = 0
        for i, entry in enumerate(entries):
            where = f"{key}[{i}]"
            if not isinstance(entry, dict):
                state.note("SC606", E, path, where, Message("must be an object"))
                continue
            state.unknown_fields(
                path,
                entry,
                frozenset({"pythonCode", "disabled", "description"}),
                frozenset(),
                f"{where}.",
                message_type="Callback",
            )
            if entry.get("disabled") is True:
                message = Message(
                    "a disabled callback is kept as is (and stays disabled); it does not run"
                )
                state.note("SC607", INFO, path, where, message)
                continue
            code = state.text_field(path, f"{where}.pythonCode", entry.get("pythonCode"))
            if code is not None:
                callbacks.append(CallbackSpec(kind=kind, code=code, order=order, cx=entry))
                order += 1
    return AgentSpec(
        name=display,
        instructions=instructions or "",
        description=description if isinstance(description, str) else "",
        tools=tuple(dict.fromkeys(tools)),
        children=tuple(dict.fromkeys(children)),
        callbacks=tuple(callbacks),
        cx=dict(data),
    )


def _string_list(state: _Import, path: str, where: str, value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        state.note("SC606", E, path, where, Message("must be a list of names"))
        return []
    return value


def _read_tools(
    state: _Import,
) -> tuple[list[ToolSpec], dict[str, str], dict[str, str], set[str]]:
    """Tools, reference → tool name, tool name → its JSON file, references of tools kept
    as they are (kinds Statecraft does not edit: their files stay in the carry)."""
    tools: list[ToolSpec] = []
    refs: dict[str, str] = {}
    paths: dict[str, str] = {}
    kept: set[str] = set()
    for folder in state.folders("tools"):
        path = state.object_file(f"tools/{folder}")
        if path is None:
            continue
        data = state.json_object(path)
        if data is None:
            continue
        named = [
            v for v in (folder, data.get("name"), data.get("displayName")) if isinstance(v, str)
        ]
        keys = {k for k in named if k} | {_last_segment(k) for k in named if k}
        tool = _read_tool(state, path, folder, data)
        if tool is None:
            kept.update(keys)
            state.keep(f"tools/{folder}/")
            continue
        for key in keys:
            refs.setdefault(key, tool.name)
        refs.setdefault(tool.name, tool.name)
        paths[tool.name] = path
        tools.append(tool)
    return tools, refs, paths, kept


@dataclass
class _Toolset:
    name: str
    tools: list[ToolSpec]
    # An MCP toolset: its tools are not listed in the export; the agents' ``toolIds`` name
    # them (`mcp_tool`), each called at `mcp` (serverAddress, customHeaders).
    mcp: dict[str, Any] | None = None
    taken: set[str] = field(default_factory=set)

    def mcp_tool(self, tool_id: str) -> ToolSpec | None:
        """The tool `tool_id` of an MCP toolset (made once, named ``<toolset>_<toolId>``
        as CX names a toolset's tools; it sends `tool_id` to the server)."""
        if self.mcp is None:
            return None
        for tool in self.tools:
            if tool.cx.get("operation") == tool_id:
                return tool
        base = re.sub(r"[^A-Za-z0-9_]+", "_", f"{self.name}_{tool_id}").strip("_")
        base = (f"op_{base}" if base[:1].isdigit() else base)[: rules.NAME_MAX_LENGTH - 4]
        name, n = base, 2
        while name in self.taken:
            name, n = f"{base}_{n}", n + 1
        self.taken.add(name)
        address = self.mcp.get("serverAddress")
        raw = self.mcp.get("customHeaders")
        headers = raw if isinstance(raw, dict) else {}
        tool = ToolSpec(
            name=name,
            kind=ToolKind.MCP,
            description=f"Tool {tool_id} of the MCP toolset {self.name}.",
            mcp_url=address if isinstance(address, str) else "",
            mcp_headers=tuple((k, v) for k, v in headers.items() if isinstance(v, str)),
            cx={"toolset": self.name, "operation": tool_id},
        )
        self.tools.append(tool)
        return tool


_HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def _read_toolsets(state: _Import, taken: set[str]) -> dict[str, _Toolset]:
    """Each toolset (kept verbatim) and, for an OpenAPI one, its operations as read-only
    tools the simulation can call (``cx`` names the toolset and the operation)."""
    found: dict[str, _Toolset] = {}
    for folder in state.folders("toolsets"):
        path = state.object_file(f"toolsets/{folder}") or _template_file(state, folder)
        if path is None:
            continue
        data = state.json_object(path)
        state.keep(f"toolsets/{folder}/")
        if data is None:
            continue
        if path.endswith(".tftpl"):
            _note_placeholders(state, path)
        toolset = _Toolset(folder, [], taken=taken)
        for key in {folder, data.get("name"), data.get("displayName")}:
            if isinstance(key, str) and key:
                found.setdefault(key, toolset)
                found.setdefault(_last_segment(key), toolset)
        spec = data.get("openApiToolset")
        if isinstance(data.get("mcpToolset"), dict):
            toolset.mcp = dict(data["mcpToolset"])
            message = Message(
                "kept as is; its tools are the ones the agents name "
                "(toolIds), callable in the simulation with a mock or a "
                "golden's mockToolResponse, and shown with the JSON-RPC "
                "request they would send"
            )
            state.note("SC607", INFO, path, "mcpToolset", message)
            continue
        if not isinstance(spec, dict):
            kind = next((k for k in data if k.endswith("Toolset")), "this toolset")
            message = Message(
                "%(kind)s: kept as is and written back on export; its "
                "operations are not known offline, so the simulation cannot "
                "call them",
                kind=kind,
            )
            state.note("SC607", INFO, path, kind, message)
            continue
        reference = spec.get("openApiSchema")
        text = state.text_field(path, "openApiToolset.openApiSchema", reference)
        state.keep(f"toolsets/{folder}/")
        document = _openapi_document(state, path, "openApiToolset.openApiSchema", text or "")
        if document is None:
            continue
        toolset.tools = _toolset_operations(folder, document, taken)
        names = ", ".join(t.name for t in toolset.tools) or "none"
        state.note(
            "SC607",
            INFO,
            path,
            "openApiToolset",
            Message(
                "kept as is; its operations (%(names)s) are shown as read-only tools", names=names
            ),
        )
    return found


_PLACEHOLDER_RE = re.compile(r"\$\{\s*([^}]*?)\s*\}")


def _template_file(state: _Import, folder: str) -> str | None:
    """``toolsets/<t>/<t>.yaml.tftpl`` (or ``.json.tftpl``): a toolset some CX repositories
    publish as a Terraform template, with ``${var}`` placeholders."""
    for ext in ("yaml", "yml", "json"):
        path = f"toolsets/{folder}/{folder}.{ext}.tftpl"
        if path in state.files:
            return path
    return None


def _note_placeholders(state: _Import, path: str) -> None:
    text = state.files[path].decode("utf-8-sig", "replace")
    names = list(dict.fromkeys(m.group(1) for m in _PLACEHOLDER_RE.finditer(text)))
    shown = ", ".join(f"${{{n}}}" for n in names) or "none"
    message = Message(
        "a Terraform template: its placeholders (%(shown)s) are kept "
        "verbatim — the simulation sends them as written; render the "
        "template (Terraform's templatefile) before importing to "
        "simulate with the values CX will use. Export writes the "
        "template back as it came",
        shown=shown,
    )
    state.note("SC611", W, path, "", message)


def _toolset_operations(
    folder: str, document: Mapping[str, Any], taken: set[str]
) -> list[ToolSpec]:
    tools: list[ToolSpec] = []
    paths = document.get("paths")
    for route, item in paths.items() if isinstance(paths, dict) else ():
        if not isinstance(item, dict):
            continue
        for method in _HTTP_METHODS:
            operation = item.get(method)
            if not isinstance(operation, dict):
                continue
            operation_id = operation.get("operationId")
            if not isinstance(operation_id, str) or not operation_id:
                operation_id = f"{method}_{route}"
            # CX calls an operation `<toolset>_<operationId>` (as `{@TOOL: ...}` names it).
            base = re.sub(r"[^A-Za-z0-9_]+", "_", f"{folder}_{operation_id}").strip("_")
            if base[0].isdigit():
                base = f"op_{base}"
            base = base[: rules.NAME_MAX_LENGTH - 4]
            name, n = base, 2
            while name in taken:
                name, n = f"{base}_{n}", n + 1
            taken.add(name)
            one = {k: v for k, v in document.items() if k != "paths"}
            one["paths"] = {route: {method: operation}}
            description = operation.get("description") or operation.get("summary") or ""
            tools.append(
                ToolSpec(
                    name=name,
                    kind=ToolKind.OPENAPI,
                    description=description if isinstance(description, str) else "",
                    openapi=one,
                    cx={"toolset": folder, "operation": operation_id},
                )
            )
    return tools


def _read_tool(state: _Import, path: str, folder: str, data: Mapping[str, Any]) -> ToolSpec | None:
    kinds = [kind for kind, key in _TOOL_KIND_FIELDS.items() if isinstance(data.get(key), dict)]
    others = [key for key in _OTHER_TOOL_KINDS if key in data]
    if not kinds:
        what = others[0] if others else "no tool kind"
        state.note(
            "SC607",
            INFO,
            path,
            others[0] if others else "",
            Message(
                "%(what)s: kept as is and written back on export (Statecraft "
                "edits Python, OpenAPI and MCP tools); the simulation cannot "
                "call it",
                what=what,
            ),
        )
        return None
    kind = kinds[0]
    key = _TOOL_KIND_FIELDS[kind]
    spec: Mapping[str, Any] = data[key]
    state.unknown_fields(path, data, _TOOL_USED, frozenset(), message_type="Tool")
    display = data.get("displayName")
    if kind is ToolKind.PYTHON and isinstance(spec.get("name"), str) and spec.get("name"):
        name, name_field = spec["name"], f"{key}.name"
    elif isinstance(display, str) and display.strip():
        name, name_field = display.strip(), "displayName"
    else:
        name, name_field = folder, ""
    if rules.name_problems(name):
        state.note(
            "SC609",
            E,
            path,
            name_field,
            Message(
                "%(name)s is not a valid tool name: letters, digits and "
                "underscores, not starting with a digit",
                name=repr(name),
            ),
        )
        return None
    description = spec.get("description", "")
    description = description if isinstance(description, str) else ""
    python_code, openapi, mcp_url, headers = "", None, "", ()
    if kind is ToolKind.PYTHON:
        state.unknown_fields(
            path, spec, frozenset({"name", "pythonCode", "description"}), frozenset(), f"{key}."
        )
        python_code = state.text_field(path, f"{key}.pythonCode", spec.get("pythonCode")) or ""
    elif kind is ToolKind.OPENAPI:
        state.unknown_fields(
            path,
            spec,
            frozenset({"name", "openApiSchema", "description", "ignoreUnknownFields"}),
            frozenset({"apiAuthentication", "url"}),
            f"{key}.",
        )
        text = state.text_field(path, f"{key}.openApiSchema", spec.get("openApiSchema"))
        if text:
            openapi = _openapi_document(state, path, f"{key}.openApiSchema", text)
            # The document's text (comments, quoting) stays in the carry: exported as it
            # was while the document is unchanged.
            state.keep(f"{posixpath.dirname(path)}/open_api_tool/")
    else:
        state.unknown_fields(
            path,
            spec,
            frozenset({"name", "description", "serverAddress", "customHeaders"}),
            frozenset({"apiAuthentication"}),
            f"{key}.",
        )
        address = spec.get("serverAddress", "")
        mcp_url = address if isinstance(address, str) else ""
        raw = spec.get("customHeaders", {})
        if isinstance(raw, dict) and all(isinstance(v, str) for v in raw.values()):
            headers = tuple(raw.items())
        else:
            state.note("SC606", E, path, f"{key}.customHeaders", Message("must map names to text"))
    mock = _tool_mock(state, path, name, data.get("toolFakeConfig"))
    return ToolSpec(
        name=name,
        kind=kind,
        description=description,
        python_code=python_code,
        openapi=openapi,
        mcp_url=mcp_url,
        mcp_headers=headers,
        mock=mock,
        cx=dict(data),
    )


def _openapi_document(state: _Import, path: str, where: str, text: str) -> dict[str, Any] | None:
    try:
        document = json.loads(text) if text.lstrip().startswith("{") else load_yaml(text)
    except (ValueError, RecursionError) as exc:
        state.note(
            "SC605",
            E,
            path,
            where,
            Message("the OpenAPI document cannot be read (%(exc)s)", exc=exc),
        )
        return None
    if not isinstance(document, dict) or not_json_data(document):
        state.note(
            "SC605", E, path, where, Message("the OpenAPI document must be a JSON/YAML object")
        )
        return None
    return document


def _tool_mock(state: _Import, path: str, name: str, config: Any) -> ToolMock | None:
    if not isinstance(config, dict) or not config:
        return None
    block = config.get("codeBlock")
    if not isinstance(block, dict):
        return None
    code = state.text_field(path, "toolFakeConfig.codeBlock.pythonCode", block.get("pythonCode"))
    mock = _read_mock(code or "")
    if mock is None:
        # CX's own fake code is kept with the tool (its file stays in the carry).
        state.keep(f"{posixpath.dirname(path)}/tool_fake_config/")
        state.note(
            "SC607",
            W,
            path,
            "toolFakeConfig.codeBlock",
            Message(
                "the fake-mode code of %(name)s is not a Statecraft mock "
                "(STATE and RESPONSE); kept as is and written back on export",
                name=name,
            ),
        )
    return mock
