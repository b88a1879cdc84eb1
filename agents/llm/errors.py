"""How a failed model call is named: the `Failure` a protocol raises, its words, and the
classification of each SDK's exceptions into the error kinds of ``agents.core.model``.

A failure's words are `Message`s: the codes (``auth``, ``quota``…) stay, the words are shown
in the reader's language, with the endpoint's name, the HTTP status and the server's own
text (verbatim) filled in after translation. An authentication failure never carries the
server's text (some servers echo the key).
"""

from __future__ import annotations

from typing import Any

from agents.core.diagnostics import Message
from agents.llm.endpoints import Endpoint
from agents.llm.retries import retry_after_of

# HTTP statuses worth asking again (the OpenAI SDK's own list): a request timeout, a lock
# timeout, a rate limit, a server error.
RETRIED_STATUSES = frozenset({408, 409, 429})


class Failure(Exception):
    """A model call that ended without an answer: `kind` (``agents.core.model.ERROR_KINDS``),
    the `message` shown, whether asking again may help (`retry`) and how long the server
    asked to wait first (`retry_after`, seconds; None when it did not say)."""

    def __init__(
        self,
        kind: str,
        message: Message,
        *,
        retry: bool = False,
        retry_after: float | None = None,
    ):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.retry = retry
        self.retry_after = retry_after


FILTERED = Message("the endpoint's content filter stopped the answer")


def refused(refusal: Any) -> Message:
    return Message("the model refused: %(refusal)s", refusal=str(refusal))


def auth(name: str, key_env: str, code: Any) -> Message:
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


def quota(name: str) -> Message:
    return Message("%(name)s is rate limited or out of quota (HTTP 429)", name=name)


def timeout(name: str, seconds: float) -> Message:
    return Message(
        "%(name)s did not answer within %(seconds)s s", name=name, seconds=f"{seconds:g}"
    )


def unreachable(name: str, exc: Any) -> Message:
    return Message("%(name)s could not be reached: %(error)s", name=name, error=sdk_words(exc))


def _causes(exc: Any) -> list[BaseException]:
    out: list[BaseException] = []
    cause = exc.__cause__ if isinstance(exc, BaseException) else None
    while cause is not None and len(out) < 5:
        out.append(cause)
        cause = cause.__cause__ or cause.__context__
    return out


def sdk_words(exc: Any) -> str:
    """An SDK's own sentence for a failed connection, in the reader's language (the OpenAI
    SDK says "Connection error." for every refused, reset or unresolved connection, and
    "Request timed out."); what it does not say is the cause's text, as it came."""
    text = str(exc)
    if text == "Connection error.":
        causes = " ".join(str(c) for c in _causes(exc))
        if "refused" in causes.lower():
            return Message("the connection was refused (nothing listens at that address)")
        if "name or service not known" in causes.lower() or "getaddrinfo" in causes.lower():
            return Message("the host name could not be resolved")
        return Message("the connection failed")
    if text == "Request timed out.":
        return Message("the request timed out")
    return text


def server(name: str, code: Any, detail: str) -> Message:
    return Message(
        "%(name)s failed (HTTP %(code)s): %(detail)s", name=name, code=code, detail=detail
    )


def rejected(name: str, code: Any, detail: str) -> Message:
    return Message(
        "%(name)s rejected the request (HTTP %(code)s): %(detail)s",
        name=name,
        code=code,
        detail=detail,
    )


def unreadable(exc: Any) -> Message:
    return Message("the endpoint's answer could not be read: %(error)s", error=str(exc))


def too_large(limit: int) -> Failure:
    return Failure(
        "too_large",
        Message(
            "the model's answer passed the cap of %(bytes)s bytes (LIVE_MAX_ANSWER_BYTES)",
            bytes=limit,
        ),
    )


def failure_in(exc: BaseException | None) -> Failure | None:
    """The `Failure` raised below the SDK (the watched transport's), however it wrapped it."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, Failure):
            return exc
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


def _retried(status: int) -> bool:
    return status in RETRIED_STATUSES or status >= 500


# --------------------------------------------------------------------------- OpenAI SDK


def classify_openai(exc: Exception, endpoint: Endpoint) -> Failure:
    """An exception of the ``openai`` SDK as a `Failure`."""
    import openai as o

    name = endpoint.name
    after = retry_after_of(exc)
    if isinstance(exc, o.AuthenticationError | o.PermissionDeniedError):
        return Failure("auth", auth(name, endpoint.api_key_env, exc.status_code))
    if isinstance(exc, o.RateLimitError):
        return Failure("quota", quota(name), retry=True, retry_after=after)
    if isinstance(exc, o.APITimeoutError):
        return Failure("timeout", timeout(name, endpoint.timeout))
    if isinstance(exc, o.APIConnectionError):
        return Failure("connection", unreachable(name, exc), retry=True)
    if isinstance(exc, o.APIStatusError):
        body = exc.body if isinstance(exc.body, dict) else {}
        detail = str(body.get("message") or exc.message)[:200]
        if exc.status_code >= 500:
            return Failure(
                "server", server(name, exc.status_code, detail), retry=True, retry_after=after
            )
        if "content" in detail.lower() and ("filter" in detail.lower() or "policy" in detail):
            return Failure(
                "refused", Message("the endpoint refused the content: %(detail)s", detail=detail)
            )
        return Failure(
            "bad_request",
            rejected(name, exc.status_code, detail),
            retry=_retried(exc.status_code),
            retry_after=after,
        )
    if isinstance(exc, o.APIResponseValidationError | ValueError):
        return Failure("bad_answer", unreadable(exc))
    return Failure(
        "bad_answer", Message("%(name)s: %(exc)s", name=type(exc).__name__, exc=str(exc))
    )


# --------------------------------------------------------------------------- google-genai


def classify_gemini(exc: Exception, endpoint: Endpoint) -> Failure:
    """An exception of ``google-genai`` (or of google-auth, fetching Vertex AI's token)
    as a `Failure`."""
    import httpx
    from google.auth import exceptions as auth_errors
    from google.genai import errors

    name = endpoint.name
    if isinstance(exc, auth_errors.DefaultCredentialsError):
        return Failure(
            "config",
            Message(
                "%(name)s (Vertex AI) found no Google credentials on this machine: set "
                "GOOGLE_APPLICATION_CREDENTIALS to a service account's key file, or run "
                "gcloud auth application-default login",
                name=name,
            ),
        )
    if isinstance(exc, auth_errors.RefreshError):
        return Failure(
            "auth",
            Message(
                "%(name)s (Vertex AI): Google refused the machine's credentials when "
                "asked for an access token: check GOOGLE_APPLICATION_CREDENTIALS",
                name=name,
            ),
        )
    if isinstance(exc, auth_errors.TransportError):
        return Failure(
            "connection",
            Message(
                "%(name)s (Vertex AI): Google's token endpoint could not be reached", name=name
            ),
            retry=True,
        )
    if isinstance(exc, errors.APIError):
        code = exc.code or 0
        text = f"{exc.status or ''} {exc.message or ''}"
        after = retry_after_of(exc)
        if code in (401, 403) or "API_KEY" in text.upper().replace(" ", "_"):
            return Failure("auth", auth(name, endpoint.api_key_env, code))
        if code == 429:
            return Failure("quota", quota(name), retry=True, retry_after=after)
        if code >= 500:
            return Failure(
                "server",
                server(name, code, (exc.message or "")[:200]),
                retry=True,
                retry_after=after,
            )
        return Failure(
            "bad_request",
            rejected(name, code, (exc.message or "")[:200]),
            retry=_retried(code),
            retry_after=after,
        )
    if isinstance(exc, httpx.TimeoutException):
        return Failure("timeout", timeout(name, endpoint.timeout))
    if isinstance(exc, httpx.TransportError):
        return Failure("connection", unreachable(name, exc), retry=True)
    return Failure("bad_answer", unreadable(exc))
