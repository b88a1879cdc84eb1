"""The HTTP request an OpenAPI or MCP tool call would send, with `$context` values filled in.

Nothing is sent: the simulation shows the request (SPEC §4) so a designer can check that
session values reach the headers and query string.

Built-in session values are looked up in a *context* mapping with plain keys:
``session_id``, ``turn_index``, ``app_id``, ``project_id``, ``project_number``,
``location`` and ``variables`` (the current variable values; a variable without a value is
absent). ``$context.variables.<name>`` reads a variable, ``$context.variables`` the whole
object, rendered as JSON (``render_value``), a number as ``3``, a boolean as ``true``.

OpenAPI (one operation per document):

- URL = the first server URL (operation, then path item, then document servers; server
  variables take their defaults) + the path, each ``{param}`` replaced by the
  percent-encoded argument. Parameters may be ``$ref``s into the document.
- A header or query parameter that carries ``x-ces-session-context: $context.…`` is filled
  by the runtime from the session, never from the model's arguments; if the value does not
  exist (a variable without a value) the parameter is left out.
- Other parameters come from the arguments of the call: query values in form style
  (a list repeats the key unless ``explode: false``, which joins with commas; an object
  explodes into its keys), header values in simple style (lists comma-joined), cookies
  in one ``Cookie`` header.
- Arguments that are not parameters go in a JSON body when the operation has a
  ``requestBody`` (form-encoded when its only media type is
  ``application/x-www-form-urlencoded``); otherwise they are reported (info) and not sent.

MCP (Streamable HTTP): ``POST`` to the server URL with ``Content-Type: application/json``,
``Accept: application/json, text/event-stream``, then the tool's custom headers in order.
A header value that references ``$context.variables.<name>`` is left out when that
variable has no value (the session state already starts from the defaults, so this is
"no value and no default"); other ``$context`` built-ins are filled in; literal values are
kept. Body: ``{"jsonrpc":"2.0","method":"tools/call","params":{"name":…,"arguments":…},
"id":n}`` (compact JSON, ``n`` counts the MCP calls of the session from 1).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from agents.core import codes
from agents.core.code_analysis import BUILTIN_CONTEXT_NAMES, context_refs
from agents.core.diagnostics import Diagnostic, Message, Severity
from agents.core.render import render_value
from agents.core.spec import ToolSpec
from agents.core.types import is_missing, resolve_local_ref

__all__ = ["CODES", "HttpRequest", "mcp_request", "openapi_request", "resolve_context"]

CODES: dict[str, str] = codes.section("http")

SESSION_CONTEXT = "x-ces-session-context"
_HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_SERVER_VARIABLE = re.compile(r"\{([^{}]+)\}")
_FORM = "application/x-www-form-urlencoded"
_COMPACT = (",", ":")


@dataclass(frozen=True, slots=True)
class HttpRequest:
    """A request as it would go on the wire (headers in order, body as text or None)."""

    method: str
    url: str
    headers: tuple[tuple[str, str], ...]
    body: str | None
    tool: str = ""

    def header(self, name: str) -> str | None:
        """The first header called `name` (case-insensitive), or None."""
        lowered = name.lower()
        return next((v for k, v in self.headers if k.lower() == lowered), None)


class _Absent:
    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Any = _Absent()


def resolve_context(path: tuple[str, ...], context: Mapping[str, Any]) -> Any:
    """The value of ``$context.<path>`` or ``ABSENT`` (unknown name, or variable without value).

    ``("variables", "customer", "id")`` walks into an object value.
    """
    if not path:
        return ABSENT
    head = path[0]
    if head in BUILTIN_CONTEXT_NAMES and len(path) == 1:
        return context.get(head, ABSENT)
    if head != "variables":
        return ABSENT
    node: Any = context.get("variables", {})
    for key in path[1:]:
        if isinstance(node, Mapping) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return ABSENT
        if node is None:
            return ABSENT
    return node


def _fill(
    template: str, context: Mapping[str, Any], tool: str, where: str
) -> tuple[Any, tuple[Diagnostic, ...]]:
    """`template` with its ``$context`` references replaced; ABSENT if one has no value.

    A template that is exactly one reference gives the typed value itself.
    """
    refs = context_refs(template)
    if not refs:
        return template, ()
    problems: list[Diagnostic] = []
    values: list[Any] = []
    for ref in refs:
        value = resolve_context(ref.path, context)
        if value is ABSENT and not ref.valid_name:
            problems.append(
                Diagnostic(
                    "SC432",
                    Severity.WARNING,
                    Message(
                        "%(tool)s: `%(raw)s` in %(where)s is not a session value; "
                        "%(where)s is left out of the request.",
                        tool=tool,
                        raw=ref.raw,
                        where=where,
                    ),
                    field=where,
                    subject=tool,
                )
            )
        values.append(value)
    if any(value is ABSENT for value in values):
        return ABSENT, tuple(problems)
    if len(refs) == 1 and refs[0].start == 0 and refs[0].end == len(template):
        return values[0], ()
    pieces: list[str] = []
    position = 0
    for ref, value in zip(refs, values, strict=True):
        pieces.append(template[position : ref.start])
        pieces.append(render_value(value))
        position = ref.end
    pieces.append(template[position:])
    return "".join(pieces), ()


# --------------------------------------------------------------------------- MCP


def _mcp_name(tool: ToolSpec) -> str:
    cx = tool.cx if isinstance(tool.cx, Mapping) else {}
    operation = cx.get("operation")
    return operation if cx.get("toolset") and isinstance(operation, str) else tool.name


def mcp_request(
    tool: ToolSpec,
    args: Mapping[str, Any],
    context: Mapping[str, Any],
    *,
    request_id: int = 1,
) -> tuple[HttpRequest, tuple[Diagnostic, ...]]:
    """The JSON-RPC ``tools/call`` POST an MCP tool call sends."""
    problems: list[Diagnostic] = []
    if not (tool.mcp_url or "").strip():
        problems.append(
            Diagnostic(
                "SC434",
                Severity.WARNING,
                Message("The MCP tool %(name)s has no server URL.", name=tool.name),
                field=f"tools.{tool.name}.mcp_url",
                subject=tool.name,
            )
        )
    headers: list[tuple[str, str]] = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ]
    for name, template in tool.mcp_headers:
        value, found = _fill(str(template), context, tool.name, f"the header {name}")
        problems.extend(found)
        if value is not ABSENT:
            headers.append((name, render_value(value)))
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "method": "tools/call",
            # An MCP toolset's tool is `<toolset>_<toolId>` in the app; the server knows it
            # by its toolId.
            "params": {"name": _mcp_name(tool), "arguments": dict(args)},
            "id": request_id,
        },
        ensure_ascii=False,
        separators=_COMPACT,
        default=str,
    )
    return (
        HttpRequest("POST", (tool.mcp_url or "").strip(), tuple(headers), body, tool.name),
        tuple(problems),
    )


# --------------------------------------------------------------------------- OpenAPI


def _deref(document: Any, node: Any) -> Any:
    """Follow local ``$ref``s (bounded, so a cycle cannot loop)."""
    for _ in range(16):
        if not (isinstance(node, dict) and isinstance(node.get("$ref"), str)):
            return node
        target = resolve_local_ref(document, node["$ref"])
        if is_missing(target):
            return {}
        node = target
    return {}


def _operation(document: Any) -> tuple[str, str, dict[str, Any], dict[str, Any]] | None:
    """(method, path, operation, path item) of the document's first operation."""
    if not isinstance(document, dict):
        return None
    paths = document.get("paths")
    if not isinstance(paths, dict):
        return None
    for path, item in paths.items():
        item = _deref(document, item)
        if not isinstance(item, dict):
            continue
        for key, operation in item.items():
            if str(key).lower() in _HTTP_METHODS and isinstance(operation, dict):
                return str(key).upper(), str(path), operation, item
    return None


def _server_url(document: dict[str, Any], operation: dict[str, Any], item: dict[str, Any]) -> str:
    for owner in (operation, item, document):
        servers = owner.get("servers")
        if isinstance(servers, list) and servers and isinstance(servers[0], dict):
            server = servers[0]
            url = str(server.get("url") or "")
            variables = server.get("variables") if isinstance(server.get("variables"), dict) else {}

            def default(match: re.Match[str], variables: dict[str, Any] = variables) -> str:
                spec = variables.get(match.group(1))
                if isinstance(spec, dict) and "default" in spec:
                    return str(spec["default"])
                return match.group(0)

            return _SERVER_VARIABLE.sub(default, url)
    return ""


def _parameters(
    document: dict[str, Any], operation: dict[str, Any], item: dict[str, Any]
) -> list[dict[str, Any]]:
    """Path-item parameters overridden by operation parameters of the same (name, in)."""
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for owner in (item, operation):
        raw = owner.get("parameters")
        if not isinstance(raw, list):
            continue
        for parameter in raw:
            parameter = _deref(document, parameter)
            if isinstance(parameter, dict) and "name" in parameter:
                merged[(str(parameter["name"]), str(parameter.get("in", "query")))] = parameter
    return list(merged.values())


def _text(value: Any) -> str:
    return render_value(value)


def _query_pairs(name: str, value: Any, parameter: dict[str, Any]) -> list[tuple[str, str]]:
    explode = parameter.get("explode", parameter.get("style", "form") == "form")
    if isinstance(value, list | tuple):
        if explode:
            return [(name, _text(item)) for item in value]
        return [(name, ",".join(_text(item) for item in value))]
    if isinstance(value, Mapping):
        if explode:
            return [(str(key), _text(item)) for key, item in value.items()]
        return [(name, ",".join(f"{key},{_text(item)}" for key, item in value.items()))]
    return [(name, _text(value))]


def _header_text(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ",".join(_text(item) for item in value)
    return _text(value)


def openapi_request(
    tool: ToolSpec, args: Mapping[str, Any], context: Mapping[str, Any]
) -> tuple[HttpRequest | None, tuple[Diagnostic, ...]]:
    """The request an OpenAPI tool call sends, or None when the document has no operation."""
    name = tool.name
    document = tool.openapi
    found = _operation(document)
    if found is None or not isinstance(document, dict):
        return None, (
            Diagnostic(
                "SC430",
                Severity.WARNING,
                Message(
                    "The OpenAPI tool %(name)s has no operation: its request cannot be shown.",
                    name=name,
                ),
                field=f"tools.{name}.openapi",
                subject=name,
            ),
        )
    method, path, operation, item = found
    problems: list[Diagnostic] = []
    consumed: set[str] = set()
    query: list[tuple[str, str]] = []
    headers: list[tuple[str, str]] = []
    cookies: list[str] = []
    for parameter in _parameters(document, operation, item):
        pname = str(parameter["name"])
        location = str(parameter.get("in", "query"))
        if SESSION_CONTEXT in parameter and location in ("query", "header"):
            # Filled by the runtime from the session; the model never supplies it.
            consumed.add(pname)
            value, found_problems = _fill(
                str(parameter[SESSION_CONTEXT]),
                context,
                name,
                f"the {location} parameter {pname}",
            )
            problems.extend(found_problems)
        elif pname in args:
            consumed.add(pname)
            value = args[pname]
        else:
            value = ABSENT
        if value is ABSENT or value is None:
            if location == "path":
                problems.append(
                    Diagnostic(
                        "SC431",
                        Severity.WARNING,
                        Message(
                            "%(name)s: the path parameter %(pname)s has no value in this call.",
                            name=name,
                            pname=pname,
                        ),
                        field=f"tools.{name}.openapi",
                        subject=name,
                    )
                )
            continue
        if location == "path":
            path = path.replace("{" + pname + "}", quote(_header_text(value), safe=""))
        elif location == "query":
            query.extend(_query_pairs(pname, value, parameter))
        elif location == "header":
            headers.append((pname, _header_text(value)))
        elif location == "cookie":
            cookies.append(f"{pname}={quote(_header_text(value), safe='')}")
    if cookies:
        headers.append(("Cookie", "; ".join(cookies)))

    rest = {key: value for key, value in args.items() if key not in consumed}
    body: str | None = None
    request_body = _deref(document, operation.get("requestBody"))
    content = request_body.get("content") if isinstance(request_body, dict) else None
    if isinstance(content, dict) and content:
        media_types = [str(key) for key in content]
        media_type = next((m for m in media_types if "json" in m.lower()), media_types[0])
        if media_type == _FORM:
            body = urlencode([(k, _header_text(v)) for k, v in rest.items()], quote_via=quote)
        else:
            body = json.dumps(rest, ensure_ascii=False, default=str)
        headers.insert(0, ("Content-Type", media_type))
    elif rest:
        problems.append(
            Diagnostic(
                "SC433",
                Severity.INFO,
                Message(
                    "%(name)s: the argument(s) %(rest)s are not parameters of the "
                    "operation and it takes no body: they are not sent.",
                    name=name,
                    rest=", ".join(sorted(rest)),
                ),
                field=f"tools.{name}.openapi",
                subject=name,
            )
        )

    base = _server_url(document, operation, item)
    url = (base.rstrip("/") + "/" + path.lstrip("/")) if base else path
    if query:
        url += ("&" if "?" in url else "?") + urlencode(query, quote_via=quote)
    return HttpRequest(method, url, tuple(headers), body, name), tuple(problems)
