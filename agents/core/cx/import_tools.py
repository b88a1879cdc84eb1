"""Import of a CX app's tools and toolsets: Python, OpenAPI and MCP tools (with their
mocks), the operations of OpenAPI and MCP toolsets as tools, and how an agent's tool
references resolve (`_ToolRefs`). Other tool kinds are kept as they are."""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agents.core import rules
from agents.core.cx.import_state import _Import
from agents.core.cx.layout import _TOOL_KIND_FIELDS, INFO, E, W, _last_segment, _read_mock
from agents.core.diagnostics import Message
from agents.core.form_text import json_error_message
from agents.core.formats import load_yaml, not_json_data
from agents.core.spec import ToolKind, ToolMock, ToolSpec

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
        base = (f"op_{base}" if base[:1].isdigit() else base)[: rules.TOOL_NAME_MAX_LENGTH - 4]
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


def note_cut_name(state: _Import, path: str, tool: ToolSpec) -> None:
    """A toolset tool whose CX name (``<toolset>_<operation>``) is longer than Statecraft's
    limit is imported under a shorter name: said as a warning naming both, never silently
    (code and ``{@TOOL: …}`` that use the full name do not find it)."""
    full = f"{tool.cx.get('toolset')}_{tool.cx.get('operation')}"
    if len(full) <= rules.TOOL_NAME_MAX_LENGTH - 4:
        return
    state.note(
        "SC609",
        W,
        path,
        "",
        Message(
            "the tool %(full)s (%(count)s characters) is imported as %(name)s: names are at "
            "most %(limit)s characters here, so code and instructions must call it %(name)s",
            full=full,
            count=len(full),
            name=tool.name,
            limit=rules.TOOL_NAME_MAX_LENGTH - 4,
        ),
    )


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
        for tool in toolset.tools:
            note_cut_name(state, path, tool)
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
            base = base[: rules.TOOL_NAME_MAX_LENGTH - 4]
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
    if rules.name_problems(name, max_length=rules.TOOL_NAME_MAX_LENGTH):
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
    except json.JSONDecodeError as exc:
        state.note(
            "SC605",
            E,
            path,
            where,
            Message("the OpenAPI document cannot be read (%(exc)s)", exc=json_error_message(exc)),
        )
        return None
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
