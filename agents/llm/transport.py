"""The watched transport: every byte of a model's answer is read through it, for both SDKs.

Between the chunks of an answer, `AnswerBounds.check` asks the call's own ``timeout`` as a
total (the SDKs' timeout is per read: an endless slow stream would never time out), the
run's watch (``agents.core.model.call_watch``: the run's time cap, a Cancel) and a bound
of the bytes read; the text and arguments of an answer are capped at `max_answer_bytes`
(``LIVE_MAX_ANSWER_BYTES``). Past any of them it raises the `Failure` that ends the call
(``timeout``, ``cancelled`` or ``too_large``); the SDK closes the stream.

Every client shares one TLS context (`shared_ssl_context`: the certificates are loaded once
per process). The transport keeps the environment's proxy (``HTTPS_PROXY``/``NO_PROXY``)
the SDKs' own clients would use: a transport given to httpx turns httpx's own lookup off.
"""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.request import getproxies, proxy_bypass

import httpx

from agents.core.diagnostics import Message
from agents.core.model import call_watch
from agents.llm.errors import Failure, timeout, too_large

DEFAULT_MAX_ANSWER_BYTES = 256 * 1024


class AnswerBounds:
    """The bounds of one attempt of a model call (see the module docstring): `begin` starts
    an attempt, `check` counts bytes read (`read`) and answered (`answered`)."""

    def __init__(
        self,
        *,
        name: str,
        seconds: float,
        max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.name = name
        self.seconds = seconds
        self.max_answer_bytes = max_answer_bytes
        self.clock = clock
        # Every credential a request of this client carried (masked like the key).
        self.credentials: set[str] = set()
        self.begin()

    def sent(self, headers: httpx.Headers) -> None:
        """A request leaves: the credentials in its headers join `credentials` (the access
        token google-auth obtained for Vertex AI, a key the SDK put in a header)."""
        for name in ("authorization", "x-goog-api-key", "api-key", "x-api-key"):
            value = headers.get(name, "")
            token = value.split(None, 1)[1] if value.lower().startswith("bearer ") else value
            if token.strip():
                self.credentials.add(token.strip())

    def begin(self) -> None:
        self.started = self.clock()
        self.read = 0  # bytes on the wire
        self.answered = 0  # bytes of text and arguments
        # The last HTTP answer's status and content type (a `malformed` error names them).
        self.status = 0
        self.content_type = ""

    def seen(self, status: int, content_type: str) -> None:
        self.status = status
        self.content_type = content_type

    def malformed(self, why: str = "") -> Failure | None:
        """The ``malformed`` failure of a successful HTTP answer whose body is not the
        protocol's (an HTML page, cut JSON, no candidates): None for another status."""
        if not 200 <= self.status < 300:
            return None
        return Failure(
            "malformed",
            Message(
                "the endpoint answered HTTP %(status)s (%(content_type)s) with a body that is "
                "not the protocol's answer%(why)s",
                status=self.status,
                content_type=self.content_type.split(";")[0].strip() or "no content type",
                why=f": {why}" if why else "",
            ),
        )

    def check(self, read: int = 0, answered: int = 0) -> None:
        """Between chunks: raises the `Failure` that ends the call past a bound."""
        self.read += read
        self.answered += answered
        if self.answered > self.max_answer_bytes:
            raise too_large(self.max_answer_bytes)
        # The wire's bytes: the answer's JSON or SSE framing around its text, generously.
        if self.read > 16 * self.max_answer_bytes + 65536:
            raise too_large(self.max_answer_bytes)
        if self.clock() - self.started >= self.seconds:
            raise Failure("timeout", timeout(self.name, self.seconds))
        watch = call_watch.get()
        stop = watch() if watch is not None else None
        if stop:
            raise Failure(stop[0], stop[1])


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


class WatchedTransport(httpx.BaseTransport):
    """An httpx transport whose answers are read through `check` (bytes read so far),
    which raises a `Failure` to end the call (the SDK closes the response)."""

    def __init__(
        self,
        check: Callable[[int], None],
        proxy: str | None = None,
        seen: Callable[[int, str], None] | None = None,
        sent: Callable[[httpx.Headers], None] | None = None,
    ):
        self.inner = httpx.HTTPTransport(verify=shared_ssl_context(), proxy=proxy)
        self.check = check
        self.seen = seen
        self.sent = sent

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if self.sent is not None:
            self.sent(request.headers)
        response = self.inner.handle_request(request)
        if self.seen is not None:
            self.seen(response.status_code, response.headers.get("content-type", ""))
        response.stream = _WatchedStream(response.stream, self.check)
        return response

    def close(self) -> None:
        self.inner.close()


_ssl_context: ssl.SSLContext | None = None
_ssl_lock = threading.Lock()


def shared_ssl_context() -> ssl.SSLContext:
    """The verifying TLS context of every model client of the process (httpx's default:
    the certifi bundle, or ``SSL_CERT_FILE``/``SSL_CERT_DIR``). Loading the certificates
    takes tens of milliseconds: once per process, not once per run (a live run's first
    token waited for it). A context is safe to share between threads."""
    global _ssl_context
    with _ssl_lock:
        if _ssl_context is None:
            _ssl_context = httpx.create_ssl_context()
        return _ssl_context


def proxy_for(base_url: str) -> str | None:
    """The environment's proxy for the endpoint (HTTPS_PROXY/HTTP_PROXY, NO_PROXY), as the
    SDKs' own clients would use."""
    url = httpx.URL(base_url or "https://generativelanguage.googleapis.com")
    if proxy_bypass(url.host):
        return None
    return getproxies().get(url.scheme) or None


def watched_client(bounds: AnswerBounds, base_url: str, seconds: float) -> httpx.Client:
    """The httpx client an SDK is given: every answer read within `bounds`."""
    return httpx.Client(
        transport=WatchedTransport(bounds.check, proxy_for(base_url), bounds.seen, bounds.sent),
        timeout=httpx.Timeout(seconds),
        follow_redirects=True,
    )
