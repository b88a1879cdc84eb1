"""Secrets out of what a model call shows: the endpoint's key, every credential the call
put on the wire (the access token google-auth obtains for Vertex AI, read from the request's
``Authorization`` header: ``agents.llm.transport``), and whatever follows ``Bearer`` or
``x-goog-api-key``, masked as ``***`` in text, function and argument names, argument values
and messages.

The streamed text is masked as it arrives (`MaskedSink`): a key split across pieces is
masked whole before any of it is shown.
"""

from __future__ import annotations

import dataclasses
import enum
import logging
import re
from collections.abc import Callable, Iterable
from typing import Any

from agents.core.diagnostics import Message

TextSink = Callable[[str], None]

# A key shorter than this is never used to mask: local OpenAI-compatible servers are often
# given `x`, `EMPTY` or `ollama`, and masking every `x` would rewrite ordinary text.
MIN_MASKED_KEY = 8


def maskable(key: str) -> str:
    """`key` when it is long enough to be masked (``MIN_MASKED_KEY``), else ""."""
    return key if key and len(key) >= MIN_MASKED_KEY else ""


Secrets = str | Iterable[str]


def _keys(secrets: Secrets) -> tuple[str, ...]:
    """The secrets that mask, longest first (a token that holds a key is masked whole)."""
    given = [secrets] if isinstance(secrets, str) else list(secrets or ())
    return tuple(sorted({k for k in map(maskable, given) if k}, key=len, reverse=True))


def _replace(text: str, keys: tuple[str, ...]) -> str:
    for key in keys:
        if key in text:
            text = text.replace(key, "***")
    return text


_ECHOED = re.compile(r"(?i)(\bBearer\s+|x-goog-api-key[\"']?\s*[:=]\s*[\"']?)[^\s\"',;]+")
# Streamed text is shown up to its last word, which waits for the next piece: a key (or a
# Bearer token) split across pieces is masked whole before any of it is shown. A word
# longer than the key and this many characters is shown but for that tail.
HOLD_BACK = 256
_LAST_WORD = re.compile(r"\S*\Z")


def mask_message(text: str, key: Secrets) -> str:
    """`text` with every occurrence of the secrets masked; a `Message` stays one (its
    parameters masked), so it is still shown in the reader's language."""
    keys = _keys(key)
    if not any(k in text for k in keys):
        return text
    if isinstance(text, Message):
        params = {
            name: mask_message(value if isinstance(value, str) else str(value), keys)
            for name, value in text.params.items()
        }
        masked = Message(text.template, **params)
        return masked if not any(k in masked for k in keys) else _replace(str(masked), keys)
    return _replace(text, keys)


def mask_secrets(value: Any, key: Secrets) -> Any:
    """`value` (a text, or arguments: dicts, lists, strings) with the secrets and any
    ``Bearer …`` / ``x-goog-api-key: …`` echo masked as ``***``, in keys as in values."""
    return _masked(value, _keys(key))


def _masked(value: Any, keys: tuple[str, ...]) -> Any:
    if isinstance(value, str):
        value = _replace(value, keys)
        return _ECHOED.sub(lambda m: m.group(1) + "***", value) if value else value
    if isinstance(value, dict):
        return {_masked(k, keys): _masked(v, keys) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_masked(v, keys) for v in value]
    return value


def masked_parts(parts: tuple[dict[str, Any], ...], key: Secrets) -> tuple[dict[str, Any], ...]:
    keys = _keys(key)
    out = []
    for part in parts:
        part = dict(part)
        if isinstance(part.get("text"), str):
            part["text"] = mask_secrets(part["text"], keys)
        call = part.get("function_call")
        if isinstance(call, dict):
            name = call.get("name")
            part["function_call"] = {
                **call,
                "name": mask_secrets(name, keys) if isinstance(name, str) else name,
                "args": mask_secrets(call.get("args") or {}, keys),
            }
        out.append(part)
    return tuple(out)


def has_secret(value: Any, key: Secrets) -> bool:
    """Whether a secret of `key` occurs in `value` (texts, names and values, any depth)."""
    keys = _keys(key)
    return bool(keys) and _holds(value, keys)


def _holds(value: Any, keys: tuple[str, ...]) -> bool:
    if isinstance(value, str):
        return any(k in value for k in keys)
    if isinstance(value, dict):
        return any(_holds(k, keys) or _holds(v, keys) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_holds(v, keys) for v in value)
    return False


def masked_tree(value: Any, key: Secrets) -> Any:
    """`value` with the secrets masked wherever a text holds them: in `Message`s (kept
    translatable), strings, dict keys and values, lists, tuples and dataclasses (a live
    run's result and verdicts, masked once the run is over: what is stored and shown)."""
    return _masked_tree(value, _keys(key))


def _masked_tree(value: Any, keys: tuple[str, ...]) -> Any:
    if isinstance(value, enum.Enum):  # a kind or a severity: a name, never a secret
        return value
    if isinstance(value, Message):
        return mask_message(value, keys)
    if isinstance(value, str):
        return _masked(value, keys)
    if isinstance(value, dict):
        return {_masked_tree(k, keys): _masked_tree(v, keys) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked_tree(v, keys) for v in value]
    if isinstance(value, tuple):
        return tuple(_masked_tree(v, keys) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {
            f.name: _masked_tree(getattr(value, f.name), keys)
            for f in dataclasses.fields(value)
            if f.init
        }
        return dataclasses.replace(value, **changes)
    return value


class MaskedSink:
    """`on_text` fed masked text: the pieces so far masked whole, the last word (a key or
    a token may be only partly there) kept until more text comes or the answer ends
    (`flush`); a word longer than the key and `HOLD_BACK` is shown but for that tail."""

    def __init__(self, sink: TextSink, key: Secrets | Callable[[], Secrets]):
        self.sink = sink
        # The secrets, read at each piece: a token the request carried is known by then.
        self.secrets = key if callable(key) else (lambda: key)
        self.text = ""
        self.shown = 0

    def __call__(self, piece: str) -> None:
        self.text += piece
        self._show(final=False)

    def flush(self) -> None:
        self._show(final=True)

    def _show(self, *, final: bool) -> None:
        keys = _keys(self.secrets())
        masked = mask_secrets(self.text, keys)
        upto = len(masked)
        if not final:
            tail = len(_LAST_WORD.search(masked).group())  # the trailing run of non-spaces
            upto -= min(tail, max(map(len, keys), default=0) + HOLD_BACK)
        if upto > self.shown:
            self.sink(masked[self.shown : upto])
            self.shown = upto


_URL_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]+@")
_BEARER = re.compile(r"(?i)(bearer\s+|\bapi[_-]?key[=:]\s*|[?&]key=|x-goog-api-key:\s*)[^\s&\"',]+")


def redact_url(text: str) -> str:
    """`text` with the user and password of every URL in it replaced by ``***``
    (``https://***@host/``), and ``Bearer …`` / ``key=…`` values masked."""
    text = _URL_USERINFO.sub(lambda m: f"{m['scheme']}***@", text or "")
    return _BEARER.sub(lambda m: f"{m[1]}***", text)


class RedactCredentials(logging.Filter):
    """A logging filter (designer/settings.py's LOGGING): every record's text with URL
    credentials and bearer tokens masked, whatever logger wrote it (httpx's request line
    names the URL, a base URL may carry a password)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: leave it to the handler
            return True
        redacted = redact_url(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        return True
