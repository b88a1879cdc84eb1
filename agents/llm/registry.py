"""The one door to the model providers: ``client_for(endpoint)`` and the protocols it knows.

``client_for(endpoint)`` returns a ``ModelStrategy`` (``agents.core.model``): a `Client`
that sends each ``ModelRequest`` through the endpoint's wire protocol and normalises the
answer to text and function-call parts, token usage and a cost estimate. Nothing raises:
every failure is a ``ModelAnswer`` with a named ``error`` (``agents.core.model.ERROR_KINDS``).

The protocols are registered by the endpoint's ``kind`` (as ADK's ``LLMRegistry`` maps
model names to classes): ``PROTOCOLS`` names each one's client class by its dotted path,
imported at the first call (no SDK is loaded at import time). A new provider is a module
with a ``ProtocolClient`` subclass (``agents.llm.protocol``), a line here (or
``register_protocol``), and its kind in ``agents.llm.endpoints.KINDS``
(docs/architecture.md, "A new provider").

Around the protocol, the `Client` keeps what every provider shares:

- **limits** (``agents.llm.limits``): the endpoint's ``max_concurrent``,
  ``requests_per_minute`` and ``tokens_per_minute``, per process across its threads, and
  the *not before* time a 429 sets for every caller of the endpoint;
- **retries** (``agents.llm.retries``): the OpenAI SDK's policy, ``Retry-After`` honoured,
  jitter, attempts counted exactly in ``ModelAnswer.retries``;
- **bounds of one answer** (``agents.llm.transport``): the call's timeout as a total, the
  run's watch, ``LIVE_MAX_ANSWER_BYTES``;
- **secrets** (``agents.llm.masking``): the key goes only into the SDK's client; an
  error message never carries the server's text for an authentication failure, and any
  occurrence of the key in a message is masked, as is every text and argument value of an
  answer and the text streamed to `on_text`;
- **error classification** (``agents.llm.errors``): each SDK's exceptions as named kinds.
"""

from __future__ import annotations

import importlib
import logging
import time
from typing import Any

from django.utils.module_loading import import_string

from agents.core.diagnostics import Message
from agents.core.model import ModelAnswer, ModelRequest, ModelStrategy, answer_size, call_watch
from agents.llm.endpoints import Endpoint, cost_of
from agents.llm.errors import Failure, failure_in, too_large
from agents.llm.limits import gate_for, limits_of
from agents.llm.masking import TextSink, mask_message, masked_parts
from agents.llm.protocol import ProtocolClient
from agents.llm.retries import INITIAL_DELAY, RetryPolicy, Sleeper, wait
from agents.llm.transport import DEFAULT_MAX_ANSWER_BYTES

logger = logging.getLogger("agents.llm")

# kind -> the dotted path of its ProtocolClient subclass
PROTOCOLS: dict[str, str] = {
    "openai": "agents.llm.openai_protocol.OpenAIClient",
    "gemini": "agents.llm.gemini_protocol.GeminiClient",
}


def register_protocol(kind: str, path: str) -> None:
    """Add (or replace) the client class of endpoints of `kind` (a dotted path)."""
    PROTOCOLS[kind] = path


def protocol_class(kind: str) -> type[ProtocolClient]:
    if kind not in PROTOCOLS:
        raise ValueError(Message("no model protocol is registered for %(kind)s", kind=kind))
    return import_string(PROTOCOLS[kind])


# What each protocol imports at its first call: the SDKs, ~1 s of CPU for openai's types.
SDK_MODULES: dict[str, tuple[str, ...]] = {
    "openai": ("openai",),
    "gemini": ("google.genai", "google.genai.types"),
}


def warm_sdks() -> None:
    """Import every registered protocol and its SDK now. A worker does it as it starts (in a
    thread): otherwise its first live job pays the import, and every piece of a fanned-out
    Run all its threads run waits on the import lock meanwhile. A missing SDK is logged,
    never raised (its protocol names it at its first call)."""
    for kind, path in list(PROTOCOLS.items()):
        try:
            import_string(path)
            for module in SDK_MODULES.get(kind, ()):
                importlib.import_module(module)
        except Exception as exc:  # an SDK not installed, a broken plug-in
            logger.warning("model protocol %s: not imported ahead (%s)", kind, exc)


class Client:
    """A ``ModelStrategy`` over one endpoint's protocol client, with retries and named
    errors (see the module docstring)."""

    def __init__(
        self,
        impl: ProtocolClient,
        *,
        policy: RetryPolicy,
        sleeper: Sleeper,
        mask_answers: bool = True,
    ):
        self.impl = impl
        # False: the answer's parts are the model's own (what runs: a live run masks what it
        # stores and shows once it is over); its secrets go along in ``extra["secrets"]``.
        self.mask_answers = mask_answers
        self.endpoint = impl.endpoint
        self.policy = policy
        self.sleeper = sleeper
        self.clock = impl.bounds.clock
        self.gate = gate_for(self.endpoint)
        self.limits = limits_of(self.endpoint)
        # The endpoint's "not before" times this client already waited for (its own 429's).
        self.waited: set[float] = set()
        self.retries = 0  # over all calls

    def __call__(self, request: ModelRequest) -> ModelAnswer:
        endpoint = self.endpoint
        attempt = 0
        while True:
            stop = self.gate.enter(
                self.limits,
                sleeper=self.sleeper,
                clock=self.clock,
                watch=call_watch.get(),
                waited=self.waited,
            )
            if stop:
                return self._failed(Failure(stop[0], stop[1]), attempt)
            try:
                answer = self._attempt(request)
            except Failure as failure:
                return self._failed(failure, attempt)
            except Exception as exc:  # the SDK's: classify, maybe retry
                failure = failure_in(exc) or self._malformed(exc) or self.impl.classify(exc)
                if failure.retry and self.policy.may_retry(attempt, failure.retry_after):
                    delay = self.policy.delay(attempt, failure.retry_after)
                    if failure.kind == "quota":  # a 429: every caller of the endpoint waits
                        self.waited.add(self.gate.back_off(delay))
                    stop = wait(delay, self.sleeper, call_watch.get())
                    if stop:
                        return self._failed(Failure(stop[0], stop[1]), attempt)
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
            secrets = self.impl.secrets()
            return ModelAnswer(
                parts=masked_parts(answer.parts, secrets) if self.mask_answers else answer.parts,
                extra={} if self.mask_answers else {"secrets": secrets},
                tokens_in=answer.tokens_in,
                tokens_out=answer.tokens_out,
                cost=cost,
                retries=attempt,
                model=answer.model,
                finish=answer.finish,
            )

    def _attempt(self, request: ModelRequest) -> ModelAnswer:
        """One HTTP request of the call, counted in the endpoint's gate until its answer
        is read (its place freed before any wait for a retry)."""
        spent = 0
        try:
            self.impl.begin()
            answer = self.impl.send(request)
            spent = answer.tokens_in + answer.tokens_out
            if answer_size(answer.parts) > self.impl.max_answer_bytes:
                raise too_large(self.impl.max_answer_bytes)
            if not self._protocol_body():
                raise self.impl.bounds.malformed() or Failure("malformed", "")
            return answer
        finally:
            self.gate.leave(spent or self.impl.answered // 4, self.clock)

    def _protocol_body(self) -> bool:
        """Whether the successful answer just read came as the protocol's JSON (or its
        event stream), not an HTML page or plain text."""
        bounds = self.impl.bounds
        if not 200 <= bounds.status < 300:
            return True
        kind = bounds.content_type.split(";")[0].strip().lower()
        return kind.endswith("json") or kind == "text/event-stream"

    def _malformed(self, exc: Exception) -> Failure | None:
        """An SDK that could not read a successful answer (not JSON, cut JSON, fields
        missing): ``malformed``, naming the HTTP status and content type."""
        bounds = self.impl.bounds
        if not 200 <= bounds.status < 300:
            return None
        return bounds.malformed(f"{type(exc).__name__}: {str(exc)[:120]}")

    def _failed(self, failure: Failure, attempt: int) -> ModelAnswer:
        message = mask_message(failure.message, self.impl.secrets())
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
    backoff: float = INITIAL_DELAY,
    max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES,
    mask_answers: bool = True,
    **options: Any,
) -> ModelStrategy:
    """The strategy that asks `endpoint` (see the module docstring); `mask_answers` False
    leaves the answers' parts as the model wrote them (see `Client`)."""
    impl = protocol_class(endpoint.kind)(
        endpoint, stream=stream, on_text=on_text, max_answer_bytes=max_answer_bytes, **options
    )
    return Client(
        impl,
        policy=RetryPolicy(endpoint.max_retries, backoff=backoff),
        sleeper=sleeper,
        mask_answers=mask_answers,
    )
