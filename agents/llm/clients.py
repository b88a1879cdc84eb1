"""Model clients: a ``ModelRequest`` to an endpoint's wire protocol and back.

``client_for(endpoint)`` returns a ``ModelStrategy`` (``agents.core.model``): it sends the
request through the endpoint's SDK — ``openai`` for OpenAI-compatible chat completions,
``google-genai`` for Gemini (API key or Vertex AI) — and normalises the answer to text and
function-call parts, token usage and a cost estimate. Nothing raises: every failure is a
``ModelAnswer`` with a named ``error`` (``agents.core.model.ERROR_KINDS``).

- **Retries**: a 429, a 5xx or a connection error is retried up to the endpoint's
  ``max_retries`` times with exponential backoff (``backoff * 2**n`` seconds, through the
  injected ``sleeper``; tests pass one that only counts). The SDKs' own retries are off,
  so the count in ``ModelAnswer.retries`` is exact. A timeout is not retried (each one
  already waited ``timeout`` seconds; the run's time cap counts them).
- **Streaming** (``stream=True``): OpenAI's ``stream`` with usage, Gemini's
  ``streamGenerateContent``; ``on_text`` receives each piece of text as it arrives.
- **The history on the wire**: Gemini gets the contents as the runtime builds them, with
  consecutive contents of one role merged into one (Gemini alternates roles). Both
  protocols require a function call to be followed at once by its responses; the runtime's
  history already puts a tool's state updates right after its response
  (``agents.core.simulation.window.function_call_order``), and a user content that answers
  function calls still gets its responses first here (text after them).
- **Bounds of one answer**: every byte of an answer is read through a watched transport
  (``_Watched``): between chunks it checks the call's own ``timeout`` as a total (the
  SDKs' timeout is per read: an endless slow stream would never time out), the run's
  watch (``agents.core.model.call_watch``: the run's time cap, a Cancel) and a bound of
  the bytes read; the text and arguments of an answer are capped at `max_answer_bytes`
  (``LIVE_MAX_ANSWER_BYTES``). Past any of them the stream is closed and the call ends
  with ``timeout``, ``cancelled`` or ``too_large``.
- **Secrets**: the key goes only into the SDK's client; an error message never carries
  the server's text for an authentication failure (some servers echo the key), and any
  occurrence of the key in a message is masked. So is every text and argument value of
  an answer, and the text streamed to `on_text`: the key itself, and whatever follows
  ``Bearer`` or ``x-goog-api-key`` (``mask_secrets``).
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.request import getproxies, proxy_bypass

import httpx

from agents.core.diagnostics import Message
from agents.core.model import ModelAnswer, ModelRequest, ModelStrategy, answer_size, call_watch
from agents.llm.endpoints import Endpoint, cost_of

logger = logging.getLogger("agents.llm")

Sleeper = Callable[[float], None]
TextSink = Callable[[str], None]


class _Failure(Exception):
    def __init__(self, kind: str, message: Message, *, retry: bool = False):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.retry = retry


# The human messages of the failures are `Message`s: the codes (`auth`, `quota`…) stay,
# the words are shown in the reader's language, with the endpoint's name, the HTTP status
# and the server's own text (verbatim) filled in after translation.
_FILTERED = Message("the endpoint's content filter stopped the answer")


def _refused(refusal: Any) -> Message:
    return Message("the model refused: %(refusal)s", refusal=str(refusal))


def _auth(name: str, key_env: str, code: Any) -> Message:
    if key_env:
        return Message(
            "%(name)s refused the API key from %(key_env)s (HTTP %(code)s): check the key",
            name=name,
            key_env=key_env,
            code=code,
        )
    return Message(
        "%(name)s refused the endpoint's key (HTTP %(code)s): check the key", name=name, code=code
    )


def _quota(name: str) -> Message:
    return Message("%(name)s is rate limited or out of quota (HTTP 429)", name=name)


def _timeout(name: str, seconds: float) -> Message:
    return Message(
        "%(name)s did not answer within %(seconds)s s", name=name, seconds=f"{seconds:g}"
    )


def _unreachable(name: str, exc: Any) -> Message:
    return Message("%(name)s could not be reached: %(error)s", name=name, error=str(exc))


def _server(name: str, code: Any, detail: str) -> Message:
    return Message(
        "%(name)s failed (HTTP %(code)s): %(detail)s", name=name, code=code, detail=detail
    )


def _rejected(name: str, code: Any, detail: str) -> Message:
    return Message(
        "%(name)s rejected the request (HTTP %(code)s): %(detail)s",
        name=name,
        code=code,
        detail=detail,
    )


def _unreadable(exc: Any) -> Message:
    return Message("the endpoint's answer could not be read: %(error)s", error=str(exc))


def _mask(text: str, key: str) -> str:
    """`text` with every occurrence of `key` masked; a `Message` stays one (its parameters
    masked), so it is still shown in the reader's language."""
    if not key or key not in text:
        return text
    if isinstance(text, Message):
        params = {
            name: _mask(value if isinstance(value, str) else str(value), key)
            for name, value in text.params.items()
        }
        masked = Message(text.template, **params)
        return masked if key not in masked else str(masked).replace(key, "***")
    return text.replace(key, "***")


_ECHOED = re.compile(r"(?i)(\bBearer\s+|x-goog-api-key[\"']?\s*[:=]\s*[\"']?)[^\s\"',;]+")
# Streamed text is shown up to its last word, which waits for the next piece: a key (or a
# Bearer token) split across pieces is masked whole before any of it is shown. A word
# longer than the key and this many characters is shown but for that tail.
_HOLD_BACK = 256
_LAST_WORD = re.compile(r"\S*\Z")
DEFAULT_MAX_ANSWER_BYTES = 256 * 1024


def mask_secrets(value: Any, key: str) -> Any:
    """`value` (a text, or arguments: dicts, lists, strings) with the key and any
    ``Bearer …`` / ``x-goog-api-key: …`` echo masked as ``***``."""
    if isinstance(value, str):
        if key and key in value:
            value = value.replace(key, "***")
        return _ECHOED.sub(lambda m: m.group(1) + "***", value) if value else value
    if isinstance(value, dict):
        return {k: mask_secrets(v, key) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [mask_secrets(v, key) for v in value]
    return value


def _masked_parts(parts: tuple[dict[str, Any], ...], key: str) -> tuple[dict[str, Any], ...]:
    out = []
    for part in parts:
        part = dict(part)
        if isinstance(part.get("text"), str):
            part["text"] = mask_secrets(part["text"], key)
        call = part.get("function_call")
        if isinstance(call, dict):
            part["function_call"] = {**call, "args": mask_secrets(call.get("args") or {}, key)}
        out.append(part)
    return tuple(out)


class _MaskedSink:
    """`on_text` fed masked text: the pieces so far masked whole, the last word (a key or
    a token may be only partly there) kept until more text comes or the answer ends
    (`flush`); a word longer than the key and `_HOLD_BACK` is shown but for that tail."""

    def __init__(self, sink: TextSink, key: str):
        self.sink = sink
        self.key = key
        self.text = ""
        self.shown = 0

    def __call__(self, piece: str) -> None:
        self.text += piece
        self._show(final=False)

    def flush(self) -> None:
        self._show(final=True)

    def _show(self, *, final: bool) -> None:
        masked = mask_secrets(self.text, self.key)
        upto = len(masked)
        if not final:
            tail = len(_LAST_WORD.search(masked).group())  # the trailing run of non-spaces
            upto -= min(tail, len(self.key) + _HOLD_BACK)
        if upto > self.shown:
            self.sink(masked[self.shown : upto])
            self.shown = upto


def _too_large(limit: int) -> _Failure:
    return _Failure(
        "too_large",
        Message(
            "the model's answer passed the cap of %(bytes)s bytes (LIVE_MAX_ANSWER_BYTES)",
            bytes=limit,
        ),
    )


class _WatchedStream(httpx.SyncByteStream):
    def __init__(self, stream: Any, check: Callable[[int], None]):
        self.stream = stream
        self.check = check

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.stream:
            self.check(len(chunk))
            yield chunk

    def close(self) -> None:
        self.stream.close()


class _Watched(httpx.BaseTransport):
    """An httpx transport whose answers are read through `check` (bytes read so far),
    which raises a `_Failure` to end the call (the SDK closes the response)."""

    def __init__(self, check: Callable[[int], None], proxy: str | None = None):
        self.inner = httpx.HTTPTransport(proxy=proxy)
        self.check = check

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        response.stream = _WatchedStream(response.stream, self.check)
        return response

    def close(self) -> None:
        self.inner.close()


def _proxy_for(base_url: str) -> str | None:
    """The environment's proxy for the endpoint (HTTPS_PROXY/HTTP_PROXY, NO_PROXY), as the
    SDKs' own clients would use: a transport given to httpx turns its lookup off."""
    url = httpx.URL(base_url or "https://generativelanguage.googleapis.com")
    if proxy_bypass(url.host):
        return None
    return getproxies().get(url.scheme) or None


def _failure_in(exc: BaseException) -> _Failure | None:
    """The `_Failure` the watched transport raised, however the SDK wrapped it."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, _Failure):
            return exc
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


def wire_contents(contents: tuple[dict[str, Any], ...]) -> list[dict[str, Any]]:
    """Contents with consecutive same-role ones merged; in a user content that answers
    function calls, the function responses come first (text after them)."""
    merged: list[dict[str, Any]] = []
    for content in contents:
        role = content.get("role", "user")
        parts = [dict(p) for p in content.get("parts") or []]
        if merged and merged[-1]["role"] == role:
            merged[-1]["parts"].extend(parts)
        else:
            merged.append({"role": role, "parts": parts})
    for content in merged:
        responses = [p for p in content["parts"] if "function_response" in p]
        if responses and content["role"] == "user":
            others = [p for p in content["parts"] if "function_response" not in p]
            content["parts"] = responses + others
    return merged


# --------------------------------------------------------------------------- OpenAI


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


def _parse_arguments(name: str, raw: str | None) -> dict[str, Any]:
    text = raw or "{}"
    try:
        value = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise _Failure(
            "malformed_arguments",
            Message(
                "the model called %(name)s with arguments that are not JSON (%(error)s): %(text)s",
                name=name,
                error=exc.msg,
                text=repr(text[:120]),
            ),
        ) from None
    if not isinstance(value, dict):
        raise _Failure(
            "malformed_arguments",
            Message(
                "the model called %(name)s with arguments that are not a JSON object: %(text)s",
                name=name,
                text=repr(text[:120]),
            ),
        )
    return value


class _SdkClient:
    """What both SDK clients keep: the endpoint, streaming and its text sink, and how the
    strategy (`Client`) waits between retries (`sleeper`, `backoff` doubling per retry),
    and the bounds of one answer (`begin`, `check`: see the module docstring).
    A subclass builds its SDK's client and gives `send` and `classify`."""

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        stream: bool = False,
        on_text: TextSink | None = None,
        sleeper: Sleeper = time.sleep,
        backoff: float = 0.5,
        max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.endpoint = endpoint
        self.stream = stream
        self.on_text = on_text
        self.sleeper = sleeper
        self.backoff = backoff
        self.max_answer_bytes = max_answer_bytes
        self.clock = clock
        self.sink: _MaskedSink | None = None
        self.begin()

    def http_client(self) -> httpx.Client:
        return httpx.Client(
            transport=_Watched(self.check, _proxy_for(self.endpoint.base_url)),
            timeout=httpx.Timeout(self.endpoint.timeout),
            follow_redirects=True,
        )

    def begin(self) -> None:
        """A new attempt: its clock, its bytes, its masked text sink."""
        self.started = self.clock()
        self.read = 0  # bytes on the wire
        self.answered = 0  # bytes of text and arguments
        self.sink = _MaskedSink(self.on_text, self.endpoint.api_key) if self.on_text else None

    def check(self, read: int = 0, answered: int = 0) -> None:
        """Between chunks: raises the `_Failure` that ends the call past a bound."""
        self.read += read
        self.answered += answered
        if self.answered > self.max_answer_bytes:
            raise _too_large(self.max_answer_bytes)
        # The wire's bytes: the answer's JSON or SSE framing around its text, generously.
        if self.read > 16 * self.max_answer_bytes + 65536:
            raise _too_large(self.max_answer_bytes)
        if self.clock() - self.started >= self.endpoint.timeout:
            raise _Failure("timeout", _timeout(self.endpoint.name, self.endpoint.timeout))
        watch = call_watch.get()
        stop = watch() if watch is not None else None
        if stop:
            raise _Failure(stop[0], stop[1])

    def show(self, text: str) -> None:
        self.check(answered=len(text.encode("utf-8", "replace")))
        if self.sink is not None:
            self.sink(text)

    def shown(self) -> None:
        if self.sink is not None:
            self.sink.flush()

    def send(self, request: ModelRequest) -> ModelAnswer:
        raise NotImplementedError

    def classify(self, exc: Exception) -> _Failure:
        raise NotImplementedError


class OpenAIClient(_SdkClient):
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
            raise _Failure("bad_answer", Message("the endpoint answered without a choice"))
        choice = completion.choices[0]
        message = choice.message
        if getattr(message, "refusal", None):
            raise _Failure("refused", _refused(message.refusal))
        if choice.finish_reason == "content_filter":
            raise _Failure("refused", _FILTERED)
        parts: list[dict[str, Any]] = []
        if message.content:
            parts.append({"text": message.content})
        for call in message.tool_calls or []:
            function = getattr(call, "function", None)
            if function is None:
                continue
            args = _parse_arguments(function.name, function.arguments)
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
                        raise _Failure("refused", _refused(delta.refusal))
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
            raise _Failure("refused", _FILTERED)
        parts: list[dict[str, Any]] = []
        if text:
            parts.append({"text": "".join(text)})
        for _, entry in sorted(calls.items()):
            args = _parse_arguments(entry["name"], entry["arguments"])
            parts.append({"function_call": {"name": entry["name"], "args": args}})
        return ModelAnswer(
            parts=tuple(parts),
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            model=model,
            finish=finish,
        )

    def classify(self, exc: Exception) -> _Failure:
        o = self.openai
        name = self.endpoint.name
        if isinstance(exc, o.AuthenticationError | o.PermissionDeniedError):
            return _Failure("auth", _auth(name, self.endpoint.api_key_env, exc.status_code))
        if isinstance(exc, o.RateLimitError):
            return _Failure("quota", _quota(name), retry=True)
        if isinstance(exc, o.APITimeoutError):
            return _Failure("timeout", _timeout(name, self.endpoint.timeout))
        if isinstance(exc, o.APIConnectionError):
            return _Failure("connection", _unreachable(name, exc), retry=True)
        if isinstance(exc, o.APIStatusError):
            body = exc.body if isinstance(exc.body, dict) else {}
            detail = str(body.get("message") or exc.message)[:200]
            if exc.status_code >= 500:
                return _Failure("server", _server(name, exc.status_code, detail), retry=True)
            if "content" in detail.lower() and ("filter" in detail.lower() or "policy" in detail):
                return _Failure(
                    "refused",
                    Message("the endpoint refused the content: %(detail)s", detail=detail),
                )
            return _Failure("bad_request", _rejected(name, exc.status_code, detail))
        if isinstance(exc, o.APIResponseValidationError | ValueError):
            return _Failure("bad_answer", _unreadable(exc))
        return _Failure(
            "bad_answer", Message("%(name)s: %(exc)s", name=type(exc).__name__, exc=str(exc))
        )


# --------------------------------------------------------------------------- Gemini


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


class GeminiClient(_SdkClient):
    def __init__(self, endpoint: Endpoint, **options: Any):
        from google import genai
        from google.genai import errors, types

        super().__init__(endpoint, **options)
        self.types = types
        self.errors = errors
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
                raise _Failure(
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
                            raise _Failure(
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
        if finish in _REFUSED:
            raise _Failure(
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

    def classify(self, exc: Exception) -> _Failure:
        import httpx
        from google.auth import exceptions as auth_errors

        name = self.endpoint.name
        if isinstance(exc, auth_errors.DefaultCredentialsError):
            return _Failure(
                "config",
                Message(
                    "%(name)s (Vertex AI) found no Google credentials on this machine: set "
                    "GOOGLE_APPLICATION_CREDENTIALS to a service account's key file, or run "
                    "gcloud auth application-default login",
                    name=name,
                ),
            )
        if isinstance(exc, auth_errors.RefreshError):
            return _Failure(
                "auth",
                Message(
                    "%(name)s (Vertex AI): Google refused the machine's credentials when "
                    "asked for an access token: check GOOGLE_APPLICATION_CREDENTIALS",
                    name=name,
                ),
            )
        if isinstance(exc, auth_errors.TransportError):
            return _Failure(
                "connection",
                Message(
                    "%(name)s (Vertex AI): Google's token endpoint could not be reached",
                    name=name,
                ),
                retry=True,
            )
        if isinstance(exc, self.errors.APIError):
            code = exc.code or 0
            text = f"{exc.status or ''} {exc.message or ''}"
            if code in (401, 403) or "API_KEY" in text.upper().replace(" ", "_"):
                return _Failure("auth", _auth(name, self.endpoint.api_key_env, code))
            if code == 429:
                return _Failure("quota", _quota(name), retry=True)
            if code >= 500:
                return _Failure(
                    "server", _server(name, code, (exc.message or "")[:200]), retry=True
                )
            return _Failure("bad_request", _rejected(name, code, (exc.message or "")[:200]))
        if isinstance(exc, httpx.TimeoutException):
            return _Failure("timeout", _timeout(name, self.endpoint.timeout))
        if isinstance(exc, httpx.TransportError):
            return _Failure("connection", _unreachable(name, exc), retry=True)
        return _Failure("bad_answer", _unreadable(exc))


# --------------------------------------------------------------------------- the strategy


class Client:
    """A ``ModelStrategy`` over one endpoint, with retries and named errors."""

    def __init__(self, impl: _SdkClient):
        self.impl = impl
        self.endpoint = impl.endpoint
        self.retries = 0  # over all calls

    def __call__(self, request: ModelRequest) -> ModelAnswer:
        endpoint = self.endpoint
        attempt = 0
        while True:
            self.impl.begin()
            try:
                answer = self.impl.send(request)
                if answer_size(answer.parts) > self.impl.max_answer_bytes:
                    raise _too_large(self.impl.max_answer_bytes)
            except _Failure as failure:
                return self._failed(failure, attempt)
            except Exception as exc:  # the SDK's: classify, maybe retry
                failure = _failure_in(exc) or self.impl.classify(exc)
                if failure.retry and attempt < endpoint.max_retries:
                    self.impl.sleeper(self.impl.backoff * 2**attempt)
                    attempt += 1
                    self.retries += 1
                    continue
                return self._failed(failure, attempt)
            cost = cost_of(endpoint, answer.tokens_in, answer.tokens_out)
            logger.info(
                "model call %s/%s: %s tokens in, %s out, %d retries",
                endpoint.name,
                endpoint.model,
                answer.tokens_in,
                answer.tokens_out,
                attempt,
            )
            return ModelAnswer(
                parts=_masked_parts(answer.parts, endpoint.api_key),
                tokens_in=answer.tokens_in,
                tokens_out=answer.tokens_out,
                cost=cost,
                retries=attempt,
                model=answer.model,
                finish=answer.finish,
            )

    def _failed(self, failure: _Failure, attempt: int) -> ModelAnswer:
        message = _mask(failure.message, self.endpoint.api_key)
        if attempt == 1:
            message = Message("%(message)s (after 1 retry)", message=message)
        elif attempt:
            message = Message(
                "%(message)s (after %(count)s retries)", message=message, count=attempt
            )
        logger.warning("model call %s failed: %s: %s", self.endpoint.name, failure.kind, message)
        # What the endpoint streamed before the call ended is spent: a quarter of its bytes
        # as tokens out (the run's token cap counts them).
        return ModelAnswer(
            error=failure.kind,
            message=message,
            retries=attempt,
            tokens_out=self.impl.answered // 4,
        )


def client_for(
    endpoint: Endpoint,
    *,
    stream: bool = False,
    on_text: TextSink | None = None,
    sleeper: Sleeper = time.sleep,
    backoff: float = 0.5,
    max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES,
) -> ModelStrategy:
    """The strategy that asks `endpoint` (see the module docstring)."""
    impl_class = OpenAIClient if endpoint.kind == "openai" else GeminiClient
    return Client(
        impl_class(
            endpoint,
            stream=stream,
            on_text=on_text,
            sleeper=sleeper,
            backoff=backoff,
            max_answer_bytes=max_answer_bytes,
        )
    )
