"""Export's write-back of what a CX import kept (`agents.core.cx.carry`): each
object's generated JSON laid over its original, variables and tool references in their
original order, and the files no object was read from written back verbatim."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

from agents.core.cx.carry import camel_keys, overlay
from agents.core.cx.layout import (
    _CALLBACK_FIELDS,
    _TOOL_KIND_FIELDS,
    _json_bytes,
    _last_segment,
    folder_name,
)
from agents.core.cx.variables import variable_from_cx_schema
from agents.core.formats import load_yaml
from agents.core.spec import AgentSpec, AppSpec, ToolKind, VariableSpec

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
