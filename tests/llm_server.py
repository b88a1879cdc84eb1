"""A real HTTP server on loopback that speaks a model's wire protocol, scripted per test.

``ModelServer`` answers each POST with the next scripted reply (``reply``): a JSON body
with a status, an SSE stream of JSON chunks, or a stall (the server holds the request
until the test ends, so the client's timeout fires — no sleeping anywhere). Every request
is kept (path, headers, JSON body) for the test to assert on. Helpers build the answers
of OpenAI chat completions and Gemini generateContent.

The server checks the history's function-call protocol as the real services do, before
it answers (``strict``, on by default; a refused request is kept in ``seen`` and uses no
scripted reply): OpenAI's chat completions answers 400 ``invalid_request_error`` when an
assistant message with ``tool_calls`` is not followed, before any other message, by a
``tool`` message for each of its ``tool_call_id`` s, or when a ``tool`` message answers no
such call; Gemini's ``generateContent`` answers 400 ``INVALID_ARGUMENT`` when a function
response turn does not come right after a function call turn, or when the number of its
function response parts differs from the number of function call parts (``wire_error``).
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

KEY = "sk-live-test-4f9a1c2e7b"  # the API key every live test's endpoints are given
KEY_ENV = "LIVE_KEY"


def configure_models(
    monkeypatch: Any, endpoints: dict[str, dict[str, Any]], key: str = KEY
) -> None:
    """Name each endpoint in ``STATECRAFT_MODELS`` (as a pipeline would), its key in
    ``LIVE_KEY``. An endpoint is ``{"server": ModelServer, ...}`` plus what the entry
    holds besides the defaults (kind openai, model test-model, base_url the server's)."""
    models = {}
    for name, given in endpoints.items():
        given = dict(given)
        server = given.pop("server")
        kind = given.get("kind", "openai")
        base = f"{server.url}/v1" if kind == "openai" else server.url
        entry = {"kind": kind, "model": "test-model", "base_url": base, "api_key_env": KEY_ENV}
        entry.update(given)
        models[name] = entry
    monkeypatch.setenv(KEY_ENV, key)
    monkeypatch.setenv("STATECRAFT_MODELS", json.dumps(models))


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    stream: list[Any] | None = None  # SSE data chunks (JSON values)
    stall: bool = False
    done_marker: bool = True  # OpenAI's "data: [DONE]"
    # An endless slow stream: `drip(i)` is the i-th SSE chunk, one every `drip_every`
    # seconds, until the client hangs up (or the server closes). After `drip_max` chunks
    # the server hangs up itself, so a client that never stops reading fails its test
    # (at 50 ms, after 30 s) instead of hanging it.
    drip: Callable[[int], Any] | None = None
    drip_every: float = 0.05
    drip_max: int = 600
    # Extra response headers (``Retry-After`` with a 429).
    headers: dict[str, str] = field(default_factory=dict)
    # A body that is not the protocol's JSON (an HTML error page, a cut answer): sent as
    # these bytes with this content type instead of `body`.
    raw: bytes | None = None
    content_type: str = "application/json"


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class ModelServer:
    replies: list[Reply] = field(default_factory=list)
    seen: list[Seen] = field(default_factory=list)
    repeat_last: bool = False
    # Paths answered by a handler instead of the script (an OAuth token endpoint beside
    # the model); their requests are kept in `routed`, not in `seen`.
    routes: dict[str, Callable[[Seen], Reply]] = field(default_factory=dict)
    routed: list[Seen] = field(default_factory=list)
    # The real services' function-call protocol checks (`wire_error`); the 400s refused.
    strict: bool = True
    refused: list[Reply] = field(default_factory=list)
    # Answers every model request from what it received instead of the script (a
    # "perfect model", tests/perfect_model.py).
    answer: Callable[[Seen], Reply] | None = None
    # Called with each model request before it is answered, outside the server's lock
    # (hold a request there while the test counts what is in flight).
    before_answer: Callable[[Seen], None] | None = None

    def __post_init__(self) -> None:
        self.release = threading.Event()
        self.lock = threading.Lock()
        # Model requests being answered now, and the most there were at once.
        self.in_flight = 0
        self.most_in_flight = 0
        # A drip's progress: chunks sent, set after the fifth (`dripping`), and set when
        # the client closed the stream (`hung_up`, the write failed).
        self.dripped = 0
        self.dripping = threading.Event()
        self.hung_up = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"null")
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                seen = Seen(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                route = server.routes.get(self.path.split("?")[0])
                if route is None:
                    with server.lock:
                        server.in_flight += 1
                        server.most_in_flight = max(server.most_in_flight, server.in_flight)
                    if server.before_answer is not None:
                        server.before_answer(seen)
                self.respond(seen, route)

            def respond(self, seen: Seen, route: Callable[[Seen], Reply] | None) -> None:
                with server.lock:
                    if route is None:
                        # Answered from here on: out of flight before the client can read
                        # the answer (and send its next request).
                        server.in_flight -= 1
                    if route is not None:
                        server.routed.append(seen)
                        reply = route(seen)
                    else:
                        server.seen.append(seen)
                        refusal = wire_error(seen) if server.strict else None
                        if refusal is not None:
                            server.refused.append(refusal)
                            reply = refusal
                        elif server.answer is not None:
                            reply = server.answer(seen)
                        else:
                            reply = server.next_reply()
                if reply.stall:
                    server.release.wait(30)
                    # Hang up: an HTTP/1.1 handler that returns without an answer would keep
                    # the connection open, and the client would wait for its read timeout.
                    self.close_connection = True
                    return
                if reply.drip is not None:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.close_connection = True
                    index = 0
                    while not server.release.is_set() and index < reply.drip_max:
                        try:
                            self.wfile.write(f"data: {json.dumps(reply.drip(index))}\n\n".encode())
                            self.wfile.flush()
                        except OSError:
                            server.hung_up.set()
                            return
                        index += 1
                        server.dripped = index
                        if index >= 5:
                            server.dripping.set()
                        server.release.wait(reply.drip_every)
                    return
                if reply.stream is not None:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "text/event-stream")
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.send_header("Connection", "close")
                    self.end_headers()
                    for chunk in reply.stream:
                        self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                        self.wfile.flush()
                    if reply.done_marker:
                        self.wfile.write(b"data: [DONE]\n\n")
                    self.close_connection = True
                    return
                data = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.content_type)
                self.send_header("Content-Length", str(len(data)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def next_reply(self) -> Reply:
        if not self.replies:
            return Reply(500, {"error": {"message": "no scripted reply left"}})
        reply = self.replies[0]
        if len(self.replies) > 1 or not self.repeat_last:
            self.replies.pop(0)
        return reply

    def script(self, *replies: Reply) -> ModelServer:
        self.replies.extend(replies)
        return self

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


# --------------------------------------------------------------------------- protocol


def wire_error(seen: Seen) -> Reply | None:
    """The 400 the real service answers for a request whose history breaks the
    function-call protocol (see the module docstring); None for a valid one."""
    body = seen.body if isinstance(seen.body, dict) else {}
    path = seen.path.split("?")[0]
    if path.endswith("/chat/completions"):
        return openai_wire_error(body.get("messages") or [])
    if path.endswith(":generateContent") or path.endswith(":streamGenerateContent"):
        return gemini_wire_error(body.get("contents") or [])
    return None


def _openai_400(message: str, param: str) -> Reply:
    return Reply(
        400,
        {
            "error": {
                "message": message,
                "type": "invalid_request_error",
                "param": param,
                "code": None,
            }
        },
    )


def openai_wire_error(messages: list[Any]) -> Reply | None:
    """OpenAI chat completions: every ``tool_call_id`` of an assistant message answered by
    the ``tool`` messages that come right after it; no other ``tool`` message."""
    answered: set[int] = set()
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            continue
        if message.get("role") == "tool" and i not in answered:
            return _openai_400(
                "Invalid parameter: messages with role 'tool' must be a response to a "
                "preceeding message with 'tool_calls'.",
                f"messages.[{i}].role",
            )
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        if not calls:
            continue
        waiting = [str(c.get("id")) for c in calls if isinstance(c, dict)]
        j = i + 1
        while j < len(messages) and isinstance(messages[j], dict):
            if messages[j].get("role") != "tool":
                break
            call_id = str(messages[j].get("tool_call_id"))
            if call_id not in waiting:
                return _openai_400(
                    f"Invalid parameter: 'tool_call_id' of '{call_id}' not found in "
                    "'tool_calls' of previous message.",
                    f"messages.[{j}].tool_call_id",
                )
            waiting.remove(call_id)
            answered.add(j)
            j += 1
        if waiting:
            return _openai_400(
                "An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each 'tool_call_id'. The following tool_call_ids did not "
                f"have response messages: {', '.join(waiting)}",
                f"messages.[{j if j < len(messages) else i}].role",
            )
    return None


def _parts(content: Any, key: str) -> int:
    parts = content.get("parts") if isinstance(content, dict) else None
    return sum(1 for p in parts or () if isinstance(p, dict) and key in p)


def gemini_wire_error(contents: list[Any]) -> Reply | None:
    """Gemini generateContent: a function response turn right after a function call turn,
    with as many function response parts as the call turn has function call parts."""
    for i, content in enumerate(contents):
        responses = _parts(content, "functionResponse")
        if not responses:
            continue
        calls = _parts(contents[i - 1], "functionCall") if i else 0
        if not calls:
            return gemini_error(
                400,
                "Please ensure that function response turn comes immediately after a "
                "function call turn.",
            )
        if responses != calls:
            return gemini_error(
                400,
                "Please ensure that the number of function response parts is equal to the "
                "number of function call parts of the function call turn.",
            )
    for i, content in enumerate(contents[:-1]):
        if _parts(content, "functionCall") and not _parts(contents[i + 1], "functionResponse"):
            return gemini_error(
                400,
                "Please ensure that function response turn comes immediately after a "
                "function call turn.",
            )
    return None


# --------------------------------------------------------------------------- OpenAI


def openai_text(text: str, tokens: tuple[int, int] = (11, 5)) -> Reply:
    return Reply(
        body={
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "test-model",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": tokens[0],
                "completion_tokens": tokens[1],
                "total_tokens": sum(tokens),
            },
        }
    )


def openai_call(name: str, arguments: Any, tokens: tuple[int, int] = (20, 7)) -> Reply:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return Reply(
        body={
            "id": "chatcmpl-2",
            "object": "chat.completion",
            "created": 0,
            "model": "test-model",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_x",
                                "type": "function",
                                "function": {"name": name, "arguments": raw},
                            }
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {
                "prompt_tokens": tokens[0],
                "completion_tokens": tokens[1],
                "total_tokens": sum(tokens),
            },
        }
    )


def openai_error(
    status: int, message: str = "error", headers: dict[str, str] | None = None
) -> Reply:
    body = {"error": {"message": message, "type": "error", "code": None}}
    return Reply(status, body, headers=dict(headers or {}))


def _chunk(delta: dict[str, Any], finish: str | None = None, usage: Any = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-s",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "test-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
        if delta is not None
        else [],
        "usage": usage,
    }


def openai_stream_text(*pieces: str) -> Reply:
    chunks = [_chunk({"role": "assistant", "content": ""})]
    chunks += [_chunk({"content": p}) for p in pieces]
    chunks.append(_chunk({}, "stop"))
    chunks.append(
        _chunk(None, usage={"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13})
    )
    return Reply(stream=chunks)


def openai_drip(piece: str = "more ", every: float = 0.05) -> Reply:
    """An OpenAI stream of `piece` as ``delta.content`` every `every` seconds, never ending."""
    return Reply(drip=lambda i: _chunk({"content": piece}), drip_every=every, done_marker=False)


def openai_stream_call(name: str, arguments: str, split: int = 5) -> Reply:
    head = {
        "index": 0,
        "id": "call_s",
        "type": "function",
        "function": {"name": name, "arguments": ""},
    }
    chunks = [_chunk({"role": "assistant", "tool_calls": [head]})]
    for i in range(0, len(arguments), split):
        piece = {"index": 0, "function": {"arguments": arguments[i : i + split]}}
        chunks.append(_chunk({"tool_calls": [piece]}))
    chunks.append(_chunk({}, "tool_calls"))
    chunks.append(
        _chunk(None, usage={"prompt_tokens": 15, "completion_tokens": 6, "total_tokens": 21})
    )
    return Reply(stream=chunks)


# --------------------------------------------------------------------------- Gemini


def _gemini(parts: list[dict[str, Any]], finish: str = "STOP", tokens=(12, 6)) -> dict[str, Any]:
    return {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": finish, "index": 0}
        ],
        "usageMetadata": {
            "promptTokenCount": tokens[0],
            "candidatesTokenCount": tokens[1],
            "totalTokenCount": sum(tokens),
        },
        "modelVersion": "gemini-test",
    }


def gemini_text(text: str, tokens=(12, 6)) -> Reply:
    return Reply(body=_gemini([{"text": text}], tokens=tokens))


def gemini_call(name: str, args: dict[str, Any], tokens=(30, 8)) -> Reply:
    return Reply(body=_gemini([{"functionCall": {"name": name, "args": args}}], tokens=tokens))


def gemini_stream(*pieces: str) -> Reply:
    chunks = [
        _gemini([{"text": p}], finish="STOP" if i == len(pieces) - 1 else None or "")
        for i, p in enumerate(pieces)
    ]
    for chunk in chunks[:-1]:
        chunk["candidates"][0].pop("finishReason")
    return Reply(stream=chunks, done_marker=False)


def gemini_drip(piece: str = "more ", every: float = 0.05) -> Reply:
    """A Gemini stream of `piece` every `every` seconds, never ending."""
    chunk = _gemini([{"text": piece}])
    chunk["candidates"][0].pop("finishReason", None)
    return Reply(drip=lambda i: chunk, drip_every=every, done_marker=False)


def gemini_error(
    status: int, message: str = "error", reason: str = "", headers: dict[str, str] | None = None
) -> Reply:
    names = {
        400: "INVALID_ARGUMENT",
        401: "UNAUTHENTICATED",
        403: "PERMISSION_DENIED",
        429: "RESOURCE_EXHAUSTED",
        500: "INTERNAL",
        503: "UNAVAILABLE",
    }
    error: dict[str, Any] = {"code": status, "message": message, "status": names.get(status, "")}
    if reason:
        error["details"] = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason}]
    return Reply(status, {"error": error}, headers=dict(headers or {}))


# --------------------------------------------------------------------------- Google OAuth


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class GoogleTokenEndpoint:
    """Google's OAuth 2.0 token endpoint for a service account, on the model server.

    `install(server)` serves ``/token`` and returns the service account's key file (the
    JSON ``gcloud iam service-accounts keys create`` writes) with its ``token_uri`` there,
    for ``GOOGLE_APPLICATION_CREDENTIALS``. google-auth signs a JWT with the key and posts
    it (RFC 7523 JWT bearer grant); this checks the signature with the public key, the
    audience (Google's), the issuer, the expiry and the cloud-platform scope, and answers an access token — or
    ``invalid_grant`` when ``refuse`` is set. No client object is replaced: the request
    google-genai makes for Vertex AI carries the token google-auth really obtained."""

    SCOPE = "https://www.googleapis.com/auth/cloud-platform"

    def __init__(self, token: str = "ya29.loopback-access-token", *, refuse: bool = False):
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        self.token = token
        self.refuse = refuse
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.pem = self.key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode()
        self.email = "statecraft-test@proj-x.iam.gserviceaccount.com"
        self.claims: list[dict[str, Any]] = []
        self.url = ""

    def install(self, server: ModelServer) -> dict[str, Any]:
        self.url = f"{server.url}/token"
        server.routes["/token"] = self.answer
        return {
            "type": "service_account",
            "project_id": "proj-x",
            "private_key_id": "k1",
            "private_key": self.pem,
            "client_email": self.email,
            "client_id": "1",
            "token_uri": self.url,
        }

    def answer(self, seen: Seen) -> Reply:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding

        form = parse_qs(seen.body if isinstance(seen.body, str) else "")
        grant = form.get("grant_type", [""])[0]
        assertion = form.get("assertion", [""])[0]
        if grant != "urn:ietf:params:oauth:grant-type:jwt-bearer" or assertion.count(".") != 2:
            return Reply(400, {"error": "unsupported_grant_type"})
        head, payload, signature = assertion.split(".")
        try:
            self.key.public_key().verify(
                _unb64(signature),
                f"{head}.{payload}".encode(),
                padding.PKCS1v15(),
                hashes.SHA256(),
            )
        except InvalidSignature:
            return Reply(400, {"error": "invalid_grant", "error_description": "bad signature"})
        claims = json.loads(_unb64(payload))
        self.claims.append(claims)
        valid = (
            # google-auth's audience is Google's token URI whatever token_uri says.
            claims.get("aud") == "https://oauth2.googleapis.com/token"
            and claims.get("iss") == self.email
            and self.SCOPE in str(claims.get("scope", "")).split()
            and claims.get("exp", 0) > time.time()
        )
        if self.refuse or not valid:
            return Reply(400, {"error": "invalid_grant", "error_description": "Invalid JWT."})
        return Reply(body={"access_token": self.token, "expires_in": 3600, "token_type": "Bearer"})
