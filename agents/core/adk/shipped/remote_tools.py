"""Tools that call out: an MCP toolset's headers filled from the session
(``header_provider``) and its tools under the app's names (``Named``); an OpenAPI tool's
``x-ces-session-context`` parameters, left out of what the model sees and filled at call
time (``session_parameters``, ``_session_rest_api_tool``). Part of the runtime adapter
(``runtime.py``).
"""

from __future__ import annotations

import contextvars
import copy
import functools
import os
import re
from collections.abc import Callable, Mapping
from typing import Any

from google.adk.tools.base_toolset import BaseToolset

from .render import render_value

_REFERENCE = re.compile(r"\{?\$context\.([A-Za-z_][A-Za-z0-9_.]*)\}?")


def fill_context(template: str, readonly_context: Any) -> str | None:
    """`template` with its ``$context`` references filled from the session
    (``$context.variables.<name>``, ``$context.session_id``, ``$context.app_id``); None when
    one has no value (the header or parameter is then left out, as in CX)."""
    given = readonly_context.state  # a mapping (ReadonlyContext) or ADK's State (ToolContext)
    state = given.to_dict() if hasattr(given, "to_dict") else dict(given)
    session = getattr(readonly_context, "session", None)
    known = {"session_id": getattr(session, "id", ""), "app_id": getattr(session, "app_name", "")}
    missing = False

    def fill(match: re.Match[str]) -> str:
        nonlocal missing
        path = match.group(1).split(".")
        found: Any = state if path[0] == "variables" else known
        for key in path[1:] if path[0] == "variables" else path:
            found = found.get(key) if isinstance(found, dict) else None
        if found is None:
            missing = True
            return ""
        return found if isinstance(found, str) else render_value(found)

    text = _REFERENCE.sub(fill, template)
    return None if missing else text


def header_provider(headers: list[tuple[str, str, str]]) -> Callable[[Any], dict[str, str]]:
    """An MCP toolset's headers at call time: a ``template`` with ``$context`` references
    filled from the session (`fill_context`), an ``env`` value from that environment
    variable. A header without a value is left out."""

    def provide(readonly_context: Any) -> dict[str, str]:
        out: dict[str, str] = {}
        for name, kind, value in headers:
            if kind == "env":
                if os.environ.get(value):
                    out[name] = os.environ[value]
                continue
            text = fill_context(value, readonly_context)
            if text is not None:
                out[name] = text
        return out

    return provide


class Named(BaseToolset):
    """A toolset's tools under the names the app calls them (CX's: an MCP server's tool
    ``get_menu`` of the toolset ``crm`` is ``crm_get_menu``): only the tools `names` maps,
    each a copy renamed, as ADK's own ``tool_name_prefix`` does."""

    def __init__(self, inner: BaseToolset, names: Mapping[str, str]) -> None:
        super().__init__()
        self.inner = inner
        self.names = dict(names)

    async def get_tools(self, readonly_context: Any = None) -> list[Any]:
        out = []
        for tool in await self.inner.get_tools(readonly_context):
            if tool.name in self.names:
                renamed = copy.copy(tool)
                renamed.name = self.names[tool.name]
                out.append(renamed)
        return out

    async def close(self) -> None:
        await self.inner.close()


# --------------------------------------------------------------------------- OpenAPI

SESSION_CONTEXT = "x-ces-session-context"
PRIVATE_NETWORK_ENV = "STATECRAFT_ADK_ALLOW_PRIVATE_NETWORK"
_HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_SESSION_QUERY: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar(
    "statecraft_session_query", default=None
)


def _local(document: Any, node: Any) -> Any:
    """A parameter, its local ``$ref`` (``#/components/parameters/…``) followed."""
    for _ in range(16):
        ref = node.get("$ref") if isinstance(node, dict) else None
        if not isinstance(ref, str) or not ref.startswith("#/"):
            return node
        target: Any = document
        for key in ref[2:].split("/"):
            key = key.replace("~1", "/").replace("~0", "~")
            target = target.get(key) if isinstance(target, dict) else None
        node = target if isinstance(target, dict) else {}
    return {}


def session_parameters(document: Any) -> tuple[Any, list[tuple[str, str, str]]]:
    """A copy of an OpenAPI document without the query and header parameters that carry
    ``x-ces-session-context`` (the runtime fills them from the session; the model never
    sees them), and those parameters as (name, "query" | "header", template)."""
    document = copy.deepcopy(document)
    found: list[tuple[str, str, str]] = []
    paths = document.get("paths") if isinstance(document, dict) else None

    def strip(owner: Any) -> None:
        parameters = owner.get("parameters") if isinstance(owner, dict) else None
        if not isinstance(parameters, list):
            return
        kept = []
        for parameter in parameters:
            resolved = _local(document, parameter)
            where = resolved.get("in") if isinstance(resolved, dict) else None
            if (
                isinstance(resolved, dict)
                and SESSION_CONTEXT in resolved
                and where
                in (
                    "query",
                    "header",
                )
            ):
                found.append((str(resolved.get("name")), where, str(resolved[SESSION_CONTEXT])))
            else:
                kept.append(parameter)
        owner["parameters"] = kept

    for item in paths.values() if isinstance(paths, dict) else ():
        strip(item)
        for method, operation in item.items() if isinstance(item, dict) else ():
            if str(method).lower() in _HTTP_METHODS:
                strip(operation)
    return document, found


@functools.cache
def _session_rest_api_tool() -> type:
    """ADK's ``RestApiTool`` (what its ``OpenAPIToolset`` makes of an operation) with the
    session-context query parameters added to the request (imported when an app has an
    OpenAPI tool: the parser needs fastapi's models)."""
    from google.adk.tools.openapi_tool.openapi_spec_parser.rest_api_tool import RestApiTool

    class SessionRestApiTool(RestApiTool):
        session_query: tuple[tuple[str, str], ...] = ()

        async def run_async(self, *, args: dict[str, Any], tool_context: Any) -> Any:
            query = {}
            for name, template in self.session_query:
                value = fill_context(template, tool_context)
                if value is not None:
                    query[name] = value
            token = _SESSION_QUERY.set(query)
            try:
                return await super().run_async(args=args, tool_context=tool_context)
            finally:
                _SESSION_QUERY.reset(token)

        def _prepare_request_params(self, parameters: Any, kwargs: Any) -> dict[str, Any]:
            request = super()._prepare_request_params(parameters, kwargs)
            query = _SESSION_QUERY.get()
            if query:
                request.setdefault("params", {}).update(query)
            return request

    return SessionRestApiTool
