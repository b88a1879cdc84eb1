"""What every wire protocol's client shares: the endpoint, streaming and its masked text
sink, the bounds of one answer, and the history as both protocols want it on the wire.

A protocol (``openai_protocol``, ``gemini_protocol``) subclasses `ProtocolClient`: it builds
its SDK's client on `http_client()` (the watched transport) and gives `send` (a
``ModelRequest`` to an answer, raising `Failure`) and `classify` (its SDK's exceptions as
a `Failure`, ``agents.llm.errors``). Retries, masking and the strategy around it are the
registry's (``agents.llm.registry``).

The history on the wire: both protocols require a function call to be followed at once by
its responses; the runtime's history already puts a tool's state updates right after its
response (``agents.core.simulation.window.function_call_order``), and a user content that
answers function calls still gets its responses first here (text after them).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx

from agents.core.model import ModelAnswer, ModelRequest
from agents.llm.endpoints import Endpoint
from agents.llm.errors import Failure
from agents.llm.masking import MaskedSink, TextSink
from agents.llm.transport import DEFAULT_MAX_ANSWER_BYTES, AnswerBounds, watched_client


class ProtocolClient:
    """One endpoint's client for its wire protocol (see the module docstring)."""

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        stream: bool = False,
        on_text: TextSink | None = None,
        max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.endpoint = endpoint
        self.stream = stream
        self.on_text = on_text
        self.max_answer_bytes = max_answer_bytes
        self.bounds = AnswerBounds(
            name=endpoint.name,
            seconds=endpoint.timeout,
            max_answer_bytes=max_answer_bytes,
            clock=clock,
        )
        self.sink: MaskedSink | None = None
        self.begin()

    @property
    def answered(self) -> int:
        """Bytes of text and arguments the current attempt has read."""
        return self.bounds.answered

    def http_client(self) -> httpx.Client:
        return watched_client(self.bounds, self.endpoint.base_url, self.endpoint.timeout)

    def begin(self) -> None:
        """A new attempt: its clock, its bytes, its masked text sink."""
        self.bounds.begin()
        self.sink = MaskedSink(self.on_text, self.secrets) if self.on_text else None

    def secrets(self) -> tuple[str, ...]:
        """What masks this client's answers and errors: the endpoint's key and every
        credential its requests carried (``AnswerBounds.sent``)."""
        return (self.endpoint.api_key or "", *self.bounds.credentials)

    def check(self, read: int = 0, answered: int = 0) -> None:
        self.bounds.check(read, answered)

    def show(self, text: str) -> None:
        """A piece of the answer's text as it streams in: counted, then shown (masked)."""
        self.check(answered=len(text.encode("utf-8", "replace")))
        if self.sink is not None:
            self.sink(text)

    def shown(self) -> None:
        if self.sink is not None:
            self.sink.flush()

    def send(self, request: ModelRequest) -> ModelAnswer:
        raise NotImplementedError

    def classify(self, exc: Exception) -> Failure:
        raise NotImplementedError


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
