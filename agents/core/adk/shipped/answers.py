"""Model answers and requests between CX's objects and ADK's: what code returned as an
answer (``response_parts``, made ADK's ``Content``), and CX's ``LlmRequest`` for a model
callback and back (``cx_request``, ``apply_request``). Part of the runtime adapter
(``runtime.py``).
"""

from __future__ import annotations

from typing import Any

from google.genai import types

from . import cx_objects as cx
from .context import _plain

# --------------------------------------------------------------------------- answers


def response_parts(value: Any) -> list[dict[str, Any]] | None:
    """The parts of a model answer code returned (an ``LlmResponse``, ``Content`` or
    ``Part``, CX's or ADK's); None when the value is not an answer."""
    value = cx.to_plain(_plain(value))
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("content"), dict):
        value = value["content"]
    if isinstance(value.get("parts"), list):
        parts = value["parts"]
    elif "text" in value or "function_call" in value:
        parts = [value]
    else:
        return None
    out: list[dict[str, Any]] = []
    for part in parts:
        if not isinstance(part, dict):
            continue
        call = part.get("function_call")
        if isinstance(call, dict) and isinstance(call.get("name"), str):
            args = call.get("args")
            out.append({"function_call": {"name": call["name"], "args": args or {}}})
        elif isinstance(part.get("text"), str):
            out.append({"text": part["text"]})
    return out


def _genai_content(parts: list[dict[str, Any]]) -> types.Content:
    made = []
    for part in parts:
        call = part.get("function_call")
        if call is not None:
            made.append(types.Part(function_call=types.FunctionCall(**call)))
        else:
            made.append(types.Part(text=part["text"]))
    return types.Content(role="model", parts=made)


def cx_request(llm_request: Any) -> cx.LlmRequest:
    """CX's ``LlmRequest`` for a model callback: the history and the system instruction."""
    instruction = llm_request.config.system_instruction if llm_request.config else None
    if not isinstance(instruction, str) and instruction is not None:
        instruction = "".join(p.text or "" for p in getattr(instruction, "parts", None) or ())
    return cx.LlmRequest(
        model=llm_request.model,
        contents=[cx.content_from(_plain(c), "user") for c in llm_request.contents],
        config=cx.GenerateContentConfig(system_instruction=instruction),
    )


def apply_request(request: cx.LlmRequest, llm_request: Any) -> None:
    """What a model callback changed in CX's request, back into ADK's: the system
    instruction, and the tools it hid (``config.hide_tool``) leave the declarations the
    model is shown (a call of one still runs, as in Statecraft's simulation)."""
    if llm_request.config is None:
        return
    wanted = request.config.system_instruction
    current = llm_request.config.system_instruction
    if isinstance(wanted, str) and wanted != current:
        llm_request.config.system_instruction = wanted
    hidden = set(request.config.excluded_tools or ())
    if hidden:
        for tool in llm_request.config.tools or ():
            declarations = getattr(tool, "function_declarations", None)
            if declarations:
                tool.function_declarations = [d for d in declarations if d.name not in hidden]
