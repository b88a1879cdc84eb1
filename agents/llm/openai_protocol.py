"""The OpenAI wire protocol: chat completions (any OpenAI-compatible endpoint), through the
``openai`` SDK on the watched transport, its own retries off (``agents.llm.retries``).

``stream=True`` uses OpenAI's ``stream`` with usage; each piece of text goes to the masked
sink as it arrives. Function calls get ids (``call_N``) in the history; a tool's result is
the ``tool`` message answering the call's id.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from agents.core.diagnostics import Message
from agents.core.model import ModelAnswer, ModelRequest
from agents.llm.endpoints import Endpoint
from agents.llm.errors import FILTERED, Failure, classify_openai, refused
from agents.llm.protocol import ProtocolClient, wire_contents


def openai_messages(request: ModelRequest) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if request.system_instruction:
        messages.append({"role": "system", "content": request.system_instruction})
    pending: dict[str, list[str]] = {}  # tool name -> ids of calls awaiting a result
    counter = 0
    for content in wire_contents(request.contents):
        if content["role"] == "model":
            texts = [p["text"] for p in content["parts"] if isinstance(p.get("text"), str)]
            calls = []
            for part in content["parts"]:
                call = part.get("function_call")
                if isinstance(call, dict):
                    counter += 1
                    call_id = f"call_{counter}"
                    pending.setdefault(str(call.get("name")), []).append(call_id)
                    calls.append(
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {
                                "name": call.get("name"),
                                "arguments": json.dumps(call.get("args") or {}),
                            },
                        }
                    )
            message: dict[str, Any] = {"role": "assistant", "content": "\n".join(texts) or None}
            if calls:
                message["tool_calls"] = calls
            messages.append(message)
            continue
        texts: list[str] = []
        for part in content["parts"]:
            response = part.get("function_response")
            if isinstance(response, dict):
                name = str(response.get("name"))
                ids = pending.get(name) or [f"call_{name}"]
                call_id = ids.pop(0)
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": call_id,
                        "content": json.dumps(response.get("response"), ensure_ascii=False),
                    }
                )
            elif isinstance(part.get("text"), str):
                texts.append(part["text"])
        if texts:
            messages.append({"role": "user", "content": "\n".join(texts)})
    return messages


def openai_tools(request: ModelRequest) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": d["name"],
                "description": d.get("description", ""),
                "parameters": d.get("parameters") or {"type": "object", "properties": {}},
            },
        }
        for d in request.tools
    ]


def parse_arguments(name: str, raw: str | None) -> dict[str, Any]:
    text = raw or "{}"
    try:
        value = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise Failure(
            "malformed_arguments",
            Message(
                "the model called %(name)s with arguments that are not JSON (%(error)s): %(text)s",
                name=name,
                error=exc.msg,
                text=repr(text[:120]),
            ),
        ) from None
    if not isinstance(value, dict):
        raise Failure(
            "malformed_arguments",
            Message(
                "the model called %(name)s with arguments that are not a JSON object: %(text)s",
                name=name,
                text=repr(text[:120]),
            ),
        )
    return value


class OpenAIClient(ProtocolClient):
    def __init__(self, endpoint: Endpoint, **options: Any):
        import openai

        super().__init__(endpoint, **options)
        self.openai = openai
        self.client = openai.OpenAI(
            api_key=endpoint.api_key or "not-needed",
            base_url=endpoint.base_url or None,
            timeout=httpx.Timeout(endpoint.timeout),
            max_retries=0,
            http_client=self.http_client(),
        )

    def send(self, request: ModelRequest) -> ModelAnswer:
        kwargs: dict[str, Any] = {
            "model": self.endpoint.model,
            "messages": openai_messages(request),
        }
        tools = openai_tools(request)
        if tools:
            kwargs["tools"] = tools
        temperature = (
            request.temperature if request.temperature is not None else self.endpoint.temperature
        )
        if temperature is not None:
            kwargs["temperature"] = temperature
        if self.stream:
            return self._streamed(kwargs)
        completion = self.client.chat.completions.create(**kwargs)
        if not completion.choices:
            raise self.bounds.malformed("no choice") or Failure(
                "malformed", Message("the endpoint answered without a choice")
            )
        choice = completion.choices[0]
        message = choice.message
        if getattr(message, "refusal", None):
            raise Failure("refused", refused(message.refusal))
        if choice.finish_reason == "content_filter":
            raise Failure("refused", FILTERED)
        parts: list[dict[str, Any]] = []
        if message.content:
            parts.append({"text": message.content})
        for call in message.tool_calls or []:
            function = getattr(call, "function", None)
            if function is None:
                continue
            args = parse_arguments(function.name, function.arguments)
            parts.append({"function_call": {"name": function.name, "args": args}})
        usage = completion.usage
        return ModelAnswer(
            parts=tuple(parts),
            tokens_in=usage.prompt_tokens if usage else 0,
            tokens_out=usage.completion_tokens if usage else 0,
            model=completion.model or self.endpoint.model,
            finish=choice.finish_reason or "",
        )

    def _streamed(self, kwargs: dict[str, Any]) -> ModelAnswer:
        stream = self.client.chat.completions.create(
            **kwargs, stream=True, stream_options={"include_usage": True}
        )
        text: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        finish = ""
        tokens_in = tokens_out = 0
        model = self.endpoint.model
        try:
            for chunk in stream:
                model = chunk.model or model
                if chunk.usage:
                    tokens_in = chunk.usage.prompt_tokens
                    tokens_out = chunk.usage.completion_tokens
                for choice in chunk.choices or []:
                    delta = choice.delta
                    if delta is not None and delta.content:
                        text.append(delta.content)
                        self.show(delta.content)
                    if delta is not None and getattr(delta, "refusal", None):
                        raise Failure("refused", refused(delta.refusal))
                    for piece in (delta.tool_calls if delta is not None else None) or []:
                        entry = calls.setdefault(piece.index, {"name": "", "arguments": ""})
                        if piece.function is not None:
                            entry["name"] += piece.function.name or ""
                            entry["arguments"] += piece.function.arguments or ""
                            self.check(answered=len((piece.function.arguments or "").encode()))
                    if choice.finish_reason:
                        finish = choice.finish_reason
        finally:
            stream.close()
            self.shown()
        if finish == "content_filter":
            raise Failure("refused", FILTERED)
        parts: list[dict[str, Any]] = []
        if text:
            parts.append({"text": "".join(text)})
        for _, entry in sorted(calls.items()):
            args = parse_arguments(entry["name"], entry["arguments"])
            parts.append({"function_call": {"name": entry["name"], "args": args}})
        return ModelAnswer(
            parts=tuple(parts),
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            model=model,
            finish=finish,
        )

    def classify(self, exc: Exception) -> Failure:
        return classify_openai(exc, self.endpoint)
