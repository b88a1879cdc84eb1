"""CX Agent Studio's app layout, and what export and import share: folder names, the
CX field of each callback kind and tool kind, notes that name a file and a field, and a
mock's fake-mode code block both ways. Export is `agents.core.cx.export` (with
`write_back`), import `agents.core.cx.import_` (with `import_state`, `import_tools`), the
ZIP itself `agents.core.cx.archive`.

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
reported (``schema_to_cx.to_cx_schema``).

Import reads such a ZIP, also one whose files sit in a top folder, and takes
texts either from the file a field names or inline. Diagnostics name the file
in ``subject`` and the JSON field in ``field`` (``variableDeclarations[2].schema``),
and their message starts with both. What Statecraft has no place for (model
settings, guardrails, toolsets, other tool kinds, ...) is reported, not kept.
"""

from __future__ import annotations

import ast
import json
import re
import unicodedata
from collections.abc import Iterable
from typing import Any

from agents.core import codes
from agents.core.diagnostics import Diagnostic, Message, Severity
from agents.core.formats import dumps_native, not_json_data
from agents.core.spec import CallbackKind, ToolKind, ToolMock

__all__ = ["CODES", "folder_name", "mock_code"]


CODES: dict[str, str] = codes.section("cx_app")


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


def _last_segment(reference: str) -> str:
    return reference.rstrip("/").rsplit("/", 1)[-1]
