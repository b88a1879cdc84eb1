"""The Gemini wire protocol: ``generateContent`` / ``streamGenerateContent`` through
``google-genai`` on the watched transport (its own retries off: ``agents.llm.retries``), with
an API key, Vertex AI express mode (a key, no project) or a project's Vertex AI (Google's
Application Default Credentials, through google-auth).

Gemini gets the contents as the runtime builds them, with consecutive contents of one role
merged into one (Gemini alternates roles), and each earlier function call with the
``thought_signature`` its answer carried (`gemini_contents`).
"""

from __future__ import annotations

import json
from typing import Any

from agents.core.diagnostics import Message
from agents.core.model import ModelAnswer, ModelRequest
from agents.llm.endpoints import Endpoint
from agents.llm.errors import Failure, classify_gemini
from agents.llm.protocol import ProtocolClient, wire_contents


def _call_key(name: Any, args: Any) -> str:
    return json.dumps([name, args or {}], sort_keys=True, ensure_ascii=False, default=str)


def gemini_contents(
    request: ModelRequest, signatures: dict[str, list[bytes]] | None = None
) -> list[dict[str, Any]]:
    """The wire contents; a function call the model made earlier in the run gets back the
    ``thought_signature`` its answer carried (`signatures`: by call, in answer order).
    Gemini 3 refuses a request whose current turn has a function call without its
    signature (HTTP 400); Gemini 2.5 reasons better with them. The signatures stay on the
    wire: the history (and the request's fingerprint) is the runtime's."""
    out = []
    seen: dict[str, int] = {}
    wire = wire_contents(request.contents)
    totals: dict[str, int] = {}
    for content in wire:
        for part in content["parts"]:
            if "function_call" in part and content["role"] == "model":
                key = _call_key(
                    part["function_call"].get("name"), part["function_call"].get("args")
                )
                totals[key] = totals.get(key, 0) + 1
    for content in wire:
        parts = []
        for part in content["parts"]:
            if "function_call" in part:
                call = part["function_call"]
                wire_part: dict[str, Any] = {
                    "function_call": {"name": call["name"], "args": call.get("args")}
                }
                key = _call_key(call.get("name"), call.get("args"))
                known = (signatures or {}).get(key) or []
                if content["role"] == "model" and known:
                    # The history's n-th call of this name and arguments, aligned on the
                    # newest answers (older calls may have left the context window).
                    nth = seen.get(key, 0)
                    seen[key] = nth + 1
                    index = len(known) - totals[key] + nth
                    if 0 <= index < len(known) and known[index]:
                        wire_part["thought_signature"] = known[index]
                parts.append(wire_part)
            elif "function_response" in part:
                parts.append({"function_response": part["function_response"]})
            elif isinstance(part.get("text"), str):
                parts.append({"text": part["text"]})
        out.append({"role": content["role"], "parts": parts})
    return out


_REFUSED = {"SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "RECITATION"}


class GeminiClient(ProtocolClient):
    def __init__(self, endpoint: Endpoint, **options: Any):
        from google import genai
        from google.genai import types

        super().__init__(endpoint, **options)
        self.types = types
        # The thought signature of each function call the model answered, by call (see
        # `gemini_contents`), one entry per answer, b"" when it had none.
        self.signatures: dict[str, list[bytes]] = {}
        options = types.HttpOptions(
            timeout=int(endpoint.timeout * 1000),
            retry_options=types.HttpRetryOptions(attempts=1),
            base_url=endpoint.base_url or None,
            httpx_client=self.http_client(),
        )
        # `vertexai` is always given: left out, google-genai reads GOOGLE_GENAI_USE_VERTEXAI
        # (and GOOGLE_CLOUD_PROJECT, GOOGLE_API_KEY…) from the environment and could send a
        # Gemini API endpoint's request to Vertex AI, or the other way round.
        if endpoint.vertex_express:
            # Vertex AI express mode: the key in x-goog-api-key, no project in the path
            # (/v1beta1/publishers/google/models/{model}:generateContent).
            self.client = genai.Client(
                vertexai=True, api_key=endpoint.api_key, http_options=options
            )
        elif endpoint.vertex:
            # A project's Vertex AI: /v1beta1/projects/{p}/locations/{l}/publishers/google/
            # models/{model}:…, with "Authorization: Bearer" from Google's Application
            # Default Credentials (google-auth), fetched at the first call.
            self.client = genai.Client(
                vertexai=True,
                project=endpoint.project,
                location=endpoint.location,
                http_options=options,
            )
        else:
            if not endpoint.api_key:
                # google-genai would fall back to GEMINI_API_KEY/GOOGLE_API_KEY silently.
                raise ValueError(Message("no API key is set for this Gemini endpoint"))
            self.client = genai.Client(
                vertexai=False, api_key=endpoint.api_key, http_options=options
            )

    def config(self, request: ModelRequest) -> Any:
        types = self.types
        tools = None
        if request.tools:
            tools = [
                types.Tool(
                    function_declarations=[
                        types.FunctionDeclaration(
                            name=d["name"],
                            description=d.get("description", ""),
                            parameters_json_schema=d.get("parameters"),
                        )
                        for d in request.tools
                    ]
                )
            ]
        temperature = (
            request.temperature if request.temperature is not None else self.endpoint.temperature
        )
        return types.GenerateContentConfig(
            system_instruction=request.system_instruction or None,
            tools=tools,
            temperature=temperature,
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        )

    def send(self, request: ModelRequest) -> ModelAnswer:
        contents = gemini_contents(request, self.signatures)
        config = self.config(request)
        model = self.endpoint.model
        if not self.stream:
            return self._answer(
                [self.client.models.generate_content(model=model, contents=contents, config=config)]
            )
        chunks = []
        stream = self.client.models.generate_content_stream(
            model=model, contents=contents, config=config
        )
        try:
            for chunk in stream:
                chunks.append(chunk)
                for candidate in (chunk.candidates or [])[:1]:
                    for part in (candidate.content.parts if candidate.content else None) or []:
                        if part.text and not part.thought:
                            self.show(part.text)
                        elif part.function_call is not None:
                            self.check(answered=len(json.dumps(part.function_call.args or {})))
        finally:
            stream.close()
            self.shown()
        return self._answer(chunks)

    def _answer(self, responses: list[Any]) -> ModelAnswer:
        text: list[str] = []
        parts: list[dict[str, Any]] = []
        finish = ""
        tokens_in = tokens_out = 0
        for response in responses:
            feedback = getattr(response, "prompt_feedback", None)
            if feedback is not None and feedback.block_reason:
                raise Failure(
                    "refused",
                    Message(
                        "the model refused the prompt (%(reason)s)",
                        reason=str(feedback.block_reason),
                    ),
                )
            usage = response.usage_metadata
            if usage is not None:
                tokens_in = usage.prompt_token_count or tokens_in
                tokens_out = usage.candidates_token_count or tokens_out
            for candidate in (response.candidates or [])[:1]:
                if candidate.finish_reason:
                    finish = str(getattr(candidate.finish_reason, "value", candidate.finish_reason))
                for part in (candidate.content.parts if candidate.content else None) or []:
                    if part.function_call is not None:
                        call = part.function_call
                        args = call.args if call.args is not None else {}
                        if not isinstance(args, dict):
                            raise Failure(
                                "malformed_arguments",
                                Message(
                                    "the model called %(name)s with arguments that are not "
                                    "an object",
                                    name=call.name,
                                ),
                            )
                        parts.append({"function_call": {"name": call.name, "args": dict(args)}})
                        self.signatures.setdefault(_call_key(call.name, dict(args)), []).append(
                            part.thought_signature or b""
                        )
                    elif part.text and not part.thought:
                        text.append(part.text)
        if not any(response.candidates for response in responses):
            # A 200 without a candidate (and no block reason): not an answer.
            raise self.bounds.malformed("no candidates") or Failure(
                "malformed", Message("the endpoint answered without a candidate")
            )
        if finish in _REFUSED:
            raise Failure(
                "refused", Message("the model stopped for %(reason)s", reason=finish.lower())
            )
        answer_parts = ([{"text": "".join(text)}] if text else []) + parts
        return ModelAnswer(
            parts=tuple(answer_parts),
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            model=self.endpoint.model,
            finish=finish,
        )

    def classify(self, exc: Exception) -> Failure:
        return classify_gemini(exc, self.endpoint)
