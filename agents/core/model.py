"""The model of a live run, as the core sees it: a request, an answer, a strategy.

A scripted simulation (``agents.core.simulate``) takes each model call's answer from the
script. A live run hands ``simulate`` a **model strategy** instead: a callable that gets
the ``ModelRequest`` the runtime would send (the compiled instructions as the system
instruction, the history as Gemini/CX contents with the state updates where the runtime
places them, the function declarations of the agent's tools and ``transfer_to_agent``)
and returns a ``ModelAnswer`` (text and function-call parts, token usage, or a named
error). The core never talks HTTP: the clients live in ``agents.llm``; the strategies
here (caps, recording, replay) are pure and take everything they need (the clock) as
arguments.

Function declarations
---------------------
- A Python tool: its function's signature (``def Tool(a: str, n: int = 1)``): each
  parameter with a JSON type from its annotation (``str`` string, ``int`` integer,
  ``float`` number, ``bool`` boolean, ``dict`` object, ``list`` array, anything else
  string), required when it has no default; the description is the tool's, else the
  docstring's first paragraph.
- An OpenAPI tool: the first operation's parameters and JSON request-body properties.
- An MCP or platform tool: an object with no declared parameters (the schema lives on the
  server), described by the tool's description.
- ``transfer_to_agent`` when the agent has somewhere to go (ADK's rule: its sub-agents,
  its parent and its peers), with ``agent_name`` an enum of those agents; the system
  instruction then ends with ADK's note naming them (``transfer_note``).

Fingerprints and drift
----------------------
``fingerprint(request)`` is the SHA-256 of the request's canonical JSON (system
instruction, contents, tools; not the call's index). ``request_changes(old, new)`` says
in words what differs between two requests (the first difference of the system
instruction, of each tool's declaration and of the history, each with its field path —
``contents[3].parts[0].text > state.sm.pending.guest_name`` — and the two values around
it: ``agents.core.request_diff``; tools added/removed) — the replay's drift report.
"""

from __future__ import annotations

import ast
import hashlib
import json
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from agents.core.diagnostics import Message, message_data, message_from_data
from agents.core.request_diff import first_difference, prefix_length
from agents.core.spec import AgentSpec, AppSpec, ToolKind, ToolSpec

__all__ = [
    "ERROR_KINDS",
    "RUN_ENDING_ERRORS",
    "TRANSFER_TOOL",
    "CallWatch",
    "ModelAnswer",
    "ModelRequest",
    "ModelStrategy",
    "answer_size",
    "call_watch",
    "fingerprint",
    "function_declarations",
    "request_changes",
    "transfer_note",
    "transfer_targets",
]

TRANSFER_TOOL = "transfer_to_agent"

# Every way a model call can fail, by name (never a bare exception, never a 500).
ERROR_KINDS: dict[str, str] = {
    "auth": "the endpoint refused the API key (401/403): check the key",
    "quota": "the endpoint is rate limited or out of quota (429) after the retries",
    "timeout": "the endpoint did not answer in time",
    "refused": "the model refused the content (safety or content filter)",
    "malformed_arguments": "the model called a tool with arguments that are not a JSON object",
    "unknown_tool": "the model called a tool the agent does not have",
    "server": "the endpoint failed (5xx) after the retries",
    "connection": "the endpoint could not be reached",
    "bad_request": "the endpoint rejected the request (4xx)",
    "bad_answer": "the endpoint's answer could not be read",
    "malformed": "the endpoint answered with a body that is not the protocol's (HTML, cut "
    "JSON, no candidates)",
    "config": "the model is not configured (unknown name, missing key)",
    "cap": "the run reached a cap (model calls, tokens or time)",
    "replay": "the recording has no answer for this call",
    "cancelled": "the run was cancelled (its job's Cancel)",
    "too_large": "the model's answer passed the size cap (LIVE_MAX_ANSWER_BYTES)",
}
# The run's watch over the model call in progress (``agents.core.live.Capped`` sets it for
# the call): the client asks it between the chunks of an answer as they are read, and
# ends the call with its error when it gives one (the run's time cap, a Cancel).
CallWatch = Callable[[], "tuple[str, str] | None"]
call_watch: ContextVar[CallWatch | None] = ContextVar("call_watch", default=None)


def answer_size(parts: Any) -> int:
    """The bytes of an answer's text and function-call arguments (UTF-8, the arguments as
    JSON): what ``LIVE_MAX_ANSWER_BYTES`` caps and the token estimate (a quarter) counts."""
    size = 0
    for part in parts or ():
        if isinstance(part.get("text"), str):
            size += len(part["text"].encode("utf-8", "replace"))
        call = part.get("function_call")
        if isinstance(call, dict):
            size += len(
                json.dumps(call.get("args") or {}, ensure_ascii=False, default=str).encode()
            )
    return size


# The errors that end a whole live run, not only its turn: the next turn would ask the
# same refused key, the same exhausted quota, the same broken configuration again, or the
# run was cancelled (docs/designer/live-runs.md).
RUN_ENDING_ERRORS = frozenset({"auth", "quota", "config", "cancelled", "malformed"})


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """What the runtime sends for one model call. `contents` are Gemini/CX contents
    (``{"role": "user" | "model", "parts": [...]}``), `tools` function declarations
    (``{"name", "description", "parameters"}``)."""

    index: int
    turn: int
    agent: str
    system_instruction: str
    contents: tuple[dict[str, Any], ...]
    tools: tuple[dict[str, Any], ...]
    temperature: float | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "system_instruction": self.system_instruction,
            "contents": list(self.contents),
            "tools": list(self.tools),
        }


@dataclass(frozen=True, slots=True)
class ModelAnswer:
    """A model's answer: `parts` as the simulation reads them (``{"text": …}`` or
    ``{"function_call": {"name", "args"}}``), the tokens counted by the endpoint, the cost
    estimate; or `error` (a key of ``ERROR_KINDS``) with `message`. `retries` counts the
    retried attempts (429/5xx)."""

    parts: tuple[dict[str, Any], ...] = ()
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    error: str = ""
    message: str = ""
    retries: int = 0
    model: str = ""
    finish: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def calls(self) -> list[dict[str, Any]]:
        return [p["function_call"] for p in self.parts if isinstance(p.get("function_call"), dict)]

    def as_json(self) -> dict[str, Any]:
        return {
            "parts": [dict(p) for p in self.parts],
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "cost": self.cost,
            "error": self.error,
            "message": self.message,
            "retries": self.retries,
            "model": self.model,
            "finish": self.finish,
            # The message's template and parameters (``agents.i18n.localized_data`` shows
            # it in the reader's language; a replay answers with the same `Message`).
            **({"i18n": {"message": message_data(self.message)}} if self._translatable else {}),
        }

    @property
    def _translatable(self) -> bool:
        return isinstance(self.message, Message)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ModelAnswer:
        return cls(
            parts=tuple(dict(p) for p in data.get("parts") or () if isinstance(p, dict)),
            tokens_in=int(data.get("tokens_in") or 0),
            tokens_out=int(data.get("tokens_out") or 0),
            cost=float(data.get("cost") or 0.0),
            error=str(data.get("error") or ""),
            message=_message_of(data),
            retries=int(data.get("retries") or 0),
            model=str(data.get("model") or ""),
            finish=str(data.get("finish") or ""),
        )


def _message_of(data: Mapping[str, Any]) -> str:
    """An answer's message as `as_json` wrote it: the `Message` when its template was kept."""
    english = str(data.get("message") or "")
    kept = data.get("i18n")
    if isinstance(kept, Mapping) and isinstance(kept.get("message"), dict):
        return message_from_data(kept["message"], english)
    return english


ModelStrategy = Callable[[ModelRequest], ModelAnswer]


# --------------------------------------------------------------------------- declarations

_PY_TYPES = {
    "str": "string",
    "int": "integer",
    "float": "number",
    "bool": "boolean",
    "dict": "object",
    "list": "array",
    "tuple": "array",
}


def _annotation_type(node: ast.expr | None) -> str:
    if node is None:
        return "string"
    if isinstance(node, ast.Subscript):
        return _annotation_type(node.value)
    if isinstance(node, ast.Name):
        return _PY_TYPES.get(node.id, "string")
    if isinstance(node, ast.Attribute):
        return _PY_TYPES.get(node.attr, "string")
    if isinstance(node, ast.BinOp):  # str | None
        return _annotation_type(node.left)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return _PY_TYPES.get(node.value.split("[")[0], "string")
    return "string"


def _python_declaration(tool: ToolSpec) -> dict[str, Any]:
    description = tool.description
    properties: dict[str, Any] = {}
    required: list[str] = []
    try:
        tree = ast.parse(tool.python_code or "")
    except SyntaxError:
        tree = None
    function = None
    if tree is not None:
        functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
        function = next((f for f in functions if f.name == tool.name), None)
    if function is not None:
        if not description:
            doc = ast.get_docstring(function) or ""
            description = doc.split("\n\n")[0].strip()
        args = function.args
        positional = [*args.posonlyargs, *args.args]
        defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
        pairs = list(zip(positional, defaults, strict=True))
        pairs += list(zip(args.kwonlyargs, args.kw_defaults, strict=True))
        for arg, default in pairs:
            if arg.arg in ("self", "context", "tool_context", "callback_context"):
                continue
            properties[arg.arg] = {"type": _annotation_type(arg.annotation)}
            if default is None:
                required.append(arg.arg)
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        parameters["required"] = required
    return {"name": tool.name, "description": description, "parameters": parameters}


def _openapi_declaration(tool: ToolSpec) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    required: list[str] = []
    description = tool.description
    document = tool.openapi if isinstance(tool.openapi, Mapping) else {}
    paths = document.get("paths") if isinstance(document.get("paths"), Mapping) else {}
    for item in paths.values():
        if not isinstance(item, Mapping):
            continue
        operations = [op for m, op in item.items() if m != "parameters" and isinstance(op, dict)]
        if not operations:
            continue
        op = operations[0]
        description = description or str(op.get("summary") or op.get("description") or "")
        for param in op.get("parameters") or []:
            if isinstance(param, Mapping) and isinstance(param.get("name"), str):
                schema = param.get("schema") if isinstance(param.get("schema"), dict) else {}
                properties[param["name"]] = {"type": schema.get("type", "string")}
                if param.get("required"):
                    required.append(param["name"])
        body = op.get("requestBody")
        content = body.get("content") if isinstance(body, Mapping) else None
        media = content.get("application/json") if isinstance(content, Mapping) else None
        schema = media.get("schema") if isinstance(media, Mapping) else None
        if isinstance(schema, Mapping) and isinstance(schema.get("properties"), Mapping):
            for name, sub in schema["properties"].items():
                properties[name] = dict(sub) if isinstance(sub, Mapping) else {"type": "string"}
            required.extend(r for r in schema.get("required") or [] if isinstance(r, str))
        break
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        parameters["required"] = list(dict.fromkeys(required))
    return {"name": tool.name, "description": description, "parameters": parameters}


def tool_declaration(tool: ToolSpec) -> dict[str, Any]:
    if tool.kind is ToolKind.PYTHON:
        return _python_declaration(tool)
    if tool.kind is ToolKind.OPENAPI:
        return _openapi_declaration(tool)
    return {
        "name": tool.name,
        "description": tool.description,
        "parameters": {"type": "object", "properties": {}},
    }


def transfer_targets(app: AppSpec, agent: AgentSpec) -> list[str]:
    """ADK's transfer targets: the sub-agents, the parent and the peers."""
    parent = next((a for a in app.agents if agent.name in a.children), None)
    targets = list(agent.children)
    if parent is not None:
        targets += [parent.name, *parent.children]
    return [t for t in dict.fromkeys(targets) if t != agent.name and app.agent(t) is not None]


def transfer_note(app: AppSpec, agent: AgentSpec) -> str:
    """ADK's instruction about the agents one may transfer to ("" when there are none)."""
    targets = transfer_targets(app, agent)
    if not targets:
        return ""
    lines = [
        "You have a list of other agents to transfer to:",
        *(
            f"Agent name: {name}\nAgent description: {(app.agent(name) or agent).description}"
            for name in targets
        ),
        "If you are the best to answer the question according to your description, you can "
        "answer it. If another agent is better for answering the question according to its "
        f"description, call `{TRANSFER_TOOL}` function to transfer the question to that "
        "agent. When transferring, do not generate any text other than the function call.",
    ]
    return "\n\n".join(lines)


def function_declarations(app: AppSpec, agent: AgentSpec) -> tuple[dict[str, Any], ...]:
    """The declarations the model receives for `agent`: its tools (in the agent's order),
    then ``transfer_to_agent`` when it has transfer targets."""
    out: list[dict[str, Any]] = []
    for name in agent.tools:
        tool = app.tool(name)
        if tool is not None:
            out.append(tool_declaration(tool))
    targets = transfer_targets(app, agent)
    if targets:
        out.append(
            {
                "name": TRANSFER_TOOL,
                "description": "Transfer the question to another agent.",
                "parameters": {
                    "type": "object",
                    "properties": {"agent_name": {"type": "string", "enum": targets}},
                    "required": ["agent_name"],
                },
            }
        )
    return tuple(out)


# --------------------------------------------------------------------------- fingerprints


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def fingerprint(request: ModelRequest | Mapping[str, Any]) -> str:
    data = request.as_json() if isinstance(request, ModelRequest) else dict(request)
    return hashlib.sha256(canonical(data).encode("utf-8")).hexdigest()


_NONE = Message("(none)")  # no line, no content: one side of a change


def _side(value: str | None) -> Any:
    return _NONE if value is None else repr(value)


def request_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """What differs between two requests (as ``ModelRequest.as_json``), in words: each
    part's first difference with its field path and the two values around it
    (``agents.core.request_diff``)."""
    changes: list[str] = []
    if old.get("agent") != new.get("agent"):
        changes.append(
            Message(
                "agent: %(before)s → %(after)s",
                before=repr(old.get("agent")),
                after=repr(new.get("agent")),
            )
        )
    before = str(old.get("system_instruction") or "")
    after = str(new.get("system_instruction") or "")
    found = first_difference(before, after, "system_instruction")
    if found is not None:
        line = before[: prefix_length(before, after)].count("\n") + 1
        changes.append(
            Message(
                "%(path)s, instructions line %(line)s: %(before)s → %(after)s",
                path=found.path,
                line=line,
                before=_side(found.before),
                after=_side(found.after),
            )
        )
    old_list = [t for t in old.get("tools") or [] if isinstance(t, Mapping)]
    new_list = [t for t in new.get("tools") or [] if isinstance(t, Mapping)]
    old_tools = {t.get("name"): t for t in old_list}
    new_tools = {t.get("name"): t for t in new_list}
    for name in new_tools.keys() - old_tools.keys():
        changes.append(Message("tool %(name)s added", name=name))
    for name in old_tools.keys() - new_tools.keys():
        changes.append(Message("tool %(name)s removed", name=name))
    for index, tool in enumerate(new_list):
        name = tool.get("name")
        if name not in old_tools or canonical(old_tools[name]) == canonical(tool):
            continue
        found = first_difference(dict(old_tools[name]), dict(tool), f"tools[{index}]")
        changes.append(
            Message(
                "tool %(name)s's declaration changed at %(path)s: %(before)s → %(after)s",
                name=name,
                path=found.path if found else f"tools[{index}]",
                before=_side(found.before if found else None),
                after=_side(found.after if found else None),
            )
        )
    a_contents = list(old.get("contents") or [])
    b_contents = list(new.get("contents") or [])
    found = first_difference(a_contents, b_contents, "contents")
    if found is not None:
        number = int(found.path[len("contents[") :].split("]", 1)[0]) + 1
        changes.append(
            Message(
                "history content %(number)s, %(path)s: %(before)s → %(after)s",
                number=number,
                path=found.path,
                before=_NONE if found.before is None else found.before,
                after=_NONE if found.after is None else found.after,
            )
        )
    return changes
