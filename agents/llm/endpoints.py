"""Model endpoints: what an operator configures, read from ``STATECRAFT_MODELS``.

``STATECRAFT_MODELS`` is a JSON object, one entry per endpoint name::

    {"flash": {"kind": "gemini", "model": "gemini-2.5-flash", "api_key_env": "GEMINI_KEY"},
     "local": {"kind": "openai", "base_url": "http://localhost:11434/v1",
               "model": "llama3.1", "api_key_env": "OLLAMA_KEY"}}

Fields: ``kind`` (``openai`` — any OpenAI-compatible chat-completions endpoint — or
``gemini``), ``model`` (required), ``base_url`` (openai: default the OpenAI API; gemini:
default Google's), ``api_key_env`` (the environment variable that holds the key; the key
itself never appears in the JSON), ``vertex`` (gemini through Vertex AI: with
``project`` and ``location``, authenticated by the machine's Google credentials — Google's
Application Default Credentials: ``GOOGLE_APPLICATION_CREDENTIALS``, ``gcloud auth
application-default login`` or the metadata server; or, with ``api_key_env`` and no
project, Vertex AI express mode with an API key), ``timeout`` (seconds per
attempt, default 60), ``max_retries`` (on 429/5xx/connection errors, default 3),
``temperature``, ``price_in`` / ``price_out`` (USD per million tokens, overriding the
price table), ``label``, and the limits of ``agents.llm.limits``: ``max_concurrent``
(requests in flight at once per process, default 8, 0 for no limit),
``requests_per_minute`` and ``tokens_per_minute`` (default: none). Anything else is an
error naming the field, so a typo is caught at start (``agents.checks``) rather than at
the first run.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agents.core import rules
from agents.core.diagnostics import Message
from agents.core.form_text import explain_json_error

KINDS = ("openai", "gemini")
VERTEX_LOCATION = "us-central1"  # a Vertex AI endpoint's location when it names none
FIELDS = frozenset(
    {
        "kind",
        "model",
        "base_url",
        "api_key_env",
        "vertex",
        "project",
        "location",
        "timeout",
        "max_retries",
        "temperature",
        "price_in",
        "price_out",
        "label",
        "max_concurrent",
        "requests_per_minute",
        "tokens_per_minute",
    }
)
# The limits' bounds (``agents.llm.limits``): the admin's fields validate with the same.
DEFAULT_MAX_CONCURRENT = rules.MODEL_MAX_CONCURRENT_DEFAULT
MAX_CONCURRENT_LIMIT = rules.MODEL_MAX_CONCURRENT_LIMIT
PER_MINUTE_LIMITS = rules.MODEL_PER_MINUTE_LIMITS


@dataclass(frozen=True)
class Endpoint:
    """One configured model. `api_key` is the resolved key (never shown: not in repr)."""

    name: str
    kind: str
    model: str
    base_url: str = ""
    api_key_env: str = ""
    api_key: str = field(default="", repr=False, compare=False)
    # An admin key stored encrypted that the current secret cannot decrypt.
    key_unreadable: bool = field(default=False, compare=False)
    vertex: bool = False
    project: str = ""
    location: str = ""
    timeout: float = 60.0
    max_retries: int = 3
    temperature: float | None = None
    price_in: float | None = None
    price_out: float | None = None
    label: str = ""
    max_concurrent: int = DEFAULT_MAX_CONCURRENT  # 0: no limit
    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    source: str = "env"  # env | admin

    @property
    def vertex_express(self) -> bool:
        """Vertex AI with an API key (express mode) rather than a project's credentials."""
        return self.vertex and bool(self.api_key_env or self.api_key) and not self.project

    def describe(self) -> dict[str, Any]:
        """What may be shown about the endpoint (never the key)."""
        return {
            "name": self.name,
            "kind": self.kind,
            "model": self.model,
            "base_url": shown_url(self.base_url),
            "label": self.label or self.name,
            "source": self.source,
            "has_key": bool(self.api_key) or self.vertex,
            "max_concurrent": self.max_concurrent,
            "requests_per_minute": self.requests_per_minute,
            "tokens_per_minute": self.tokens_per_minute,
        }


def shown_url(url: str) -> str:
    """`url` without what may be a credential: a user and password, a query
    (``?key=…``, ``?api-key=…``) or a fragment."""
    from urllib.parse import urlsplit, urlunsplit

    if not url:
        return ""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return ""
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    return urlunsplit((parts.scheme, host + port, parts.path, "", ""))


class ConfigError(ValueError):
    """A bad ``STATECRAFT_MODELS``; the message (a `Message`, so it is shown in the reader's
    language) names the field and the fix."""

    def __init__(self, message: Message):
        super().__init__(message)
        self.message = message


def _number(where: str, value: Any, *, minimum: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(
            Message(
                "%(where)s: write a number (got %(value)s).", where=where, value=json.dumps(value)
            )
        )
    if value < minimum:
        raise ConfigError(
            Message(
                "%(where)s: must be at least %(minimum)s (got %(value)s).",
                where=where,
                minimum=f"{minimum:g}",
                value=value,
            )
        )
    return float(value)


def _whole(where: str, value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(
            Message(
                "%(where)s: write a whole number from %(low)s to %(high)s (got %(value)s).",
                where=where,
                low=low,
                high=high,
                value=json.dumps(value),
            )
        )
    return value


def parse_limits(where: str, entry: Mapping[str, Any]) -> dict[str, Any]:
    """An entry's ``max_concurrent``, ``requests_per_minute`` and ``tokens_per_minute``
    (absent or null per-minute limits: none); ConfigError naming the field."""
    out: dict[str, Any] = {
        "max_concurrent": _whole(
            f"{where}.max_concurrent",
            entry.get("max_concurrent", DEFAULT_MAX_CONCURRENT),
            0,
            MAX_CONCURRENT_LIMIT,
        )
    }
    for key, high in PER_MINUTE_LIMITS.items():
        value = entry.get(key)
        out[key] = None if value is None else _whole(f"{where}.{key}", value, 1, high)
    return out


def parse_models(text: str, environ: Mapping[str, str]) -> dict[str, Endpoint]:
    """The endpoints of a ``STATECRAFT_MODELS`` value; raises ConfigError naming the field."""
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            Message(
                "STATECRAFT_MODELS is not valid JSON (%(error)s at character %(position)s): "
                "write an object like %(example)s.",
                error=explain_json_error(exc),
                position=exc.pos,
                example='{"flash": {"kind": "gemini", "model": "gemini-2.5-flash", '
                '"api_key_env": "GEMINI_API_KEY"}}',
            )
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(Message("STATECRAFT_MODELS must be a JSON object of endpoints by name."))
    out: dict[str, Endpoint] = {}
    for name, entry in data.items():
        where = f"STATECRAFT_MODELS.{name}"
        if not name.strip() or len(name) > 60:
            raise ConfigError(Message("%(where)s: a name is 1 to 60 characters.", where=where))
        if not isinstance(entry, dict):
            raise ConfigError(
                Message("%(where)s: must be an object with kind and model.", where=where)
            )
        unknown = sorted(set(entry) - FIELDS)
        if unknown:
            raise ConfigError(
                Message(
                    "%(where)s: unknown field (the fields are %(fields)s).",
                    where=f"{where}.{unknown[0]}",
                    fields=", ".join(sorted(FIELDS)),
                )
            )
        kind = entry.get("kind")
        if kind not in KINDS:
            raise ConfigError(
                Message(
                    '%(where)s: write "openai" or "gemini" (got %(kind)s).',
                    where=f"{where}.kind",
                    kind=repr(kind),
                )
            )
        model = entry.get("model")
        if not isinstance(model, str) or not model.strip():
            raise ConfigError(
                Message(
                    '%(where)s: name the model, like "gemini-2.5-flash".', where=f"{where}.model"
                )
            )
        for key in ("base_url", "api_key_env", "project", "location", "label"):
            if key in entry and not isinstance(entry[key], str):
                raise ConfigError(Message("%(where)s: must be a string.", where=f"{where}.{key}"))
        base_url = entry.get("base_url", "")
        if base_url and not base_url.startswith(("http://", "https://")):
            raise ConfigError(
                Message(
                    "%(where)s: must start with http:// or https://.", where=f"{where}.base_url"
                )
            )
        vertex = entry.get("vertex", False)
        if not isinstance(vertex, bool):
            raise ConfigError(Message("%(where)s: write true or false.", where=f"{where}.vertex"))
        if vertex and kind != "gemini":
            raise ConfigError(
                Message(
                    "%(where)s: only a gemini endpoint runs on Vertex AI.", where=f"{where}.vertex"
                )
            )
        key_env = entry.get("api_key_env", "")
        if vertex and not entry.get("project") and not key_env:
            raise ConfigError(
                Message(
                    "%(where)s: Vertex AI needs the Google Cloud project (or api_key_env "
                    "for Vertex AI express mode).",
                    where=f"{where}.project",
                )
            )
        if vertex and key_env and (entry.get("project") or entry.get("location")):
            raise ConfigError(
                Message(
                    "%(where)s: Vertex AI takes a project and location (Google "
                    "credentials) or an API key (express mode), not both.",
                    where=f"{where}.api_key_env",
                )
            )
        if not vertex and kind == "gemini" and (entry.get("project") or entry.get("location")):
            raise ConfigError(
                Message(
                    "%(where)s: the Gemini API takes no project or location; set "
                    "vertex: true for Vertex AI.",
                    where=f"{where}.project",
                )
            )
        if not vertex and not key_env and kind == "gemini":
            raise ConfigError(
                Message(
                    "%(where)s: name the environment variable holding the Gemini API "
                    "key (or set vertex: true).",
                    where=f"{where}.api_key_env",
                )
            )
        if key_env and key_env not in environ:
            raise ConfigError(
                Message(
                    "%(where)s: the environment variable %(variable)s is not set.",
                    where=f"{where}.api_key_env",
                    variable=key_env,
                )
            )
        timeout = _number(f"{where}.timeout", entry.get("timeout", 60), minimum=0.01)
        retries = entry.get("max_retries", 3)
        if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= 10:
            raise ConfigError(
                Message(
                    "%(where)s: write a whole number from 0 to 10.", where=f"{where}.max_retries"
                )
            )
        temperature = entry.get("temperature")
        if temperature is not None:
            temperature = _number(f"{where}.temperature", temperature)
        prices = {}
        for key in ("price_in", "price_out"):
            if entry.get(key) is not None:
                prices[key] = _number(f"{where}.{key}", entry[key])
        out[name] = Endpoint(
            name=name,
            kind=kind,
            model=model.strip(),
            base_url=base_url.rstrip("/"),
            api_key_env=key_env,
            api_key=environ.get(key_env, "") if key_env else "",
            vertex=vertex,
            project=entry.get("project", ""),
            location=entry.get("location", "")
            or (VERTEX_LOCATION if vertex and not key_env else ""),
            timeout=timeout,
            max_retries=retries,
            temperature=temperature,
            price_in=prices.get("price_in"),
            price_out=prices.get("price_out"),
            label=entry.get("label", ""),
            **parse_limits(where, entry),
        )
    return out


# USD per million tokens (input, output): list prices of the common models when this was
# written, for an estimate only. An endpoint's price_in/price_out override them; a model
# not listed costs 0 (shown as "no price").
PRICES: dict[str, tuple[float, float]] = {
    "gemini-2.5-pro": (1.25, 10.0),
    "gemini-2.5-flash-lite": (0.10, 0.40),
    "gemini-2.5-flash": (0.30, 2.50),
    "gemini-2.0-flash-lite": (0.075, 0.30),
    "gemini-2.0-flash": (0.10, 0.40),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1": (2.0, 8.0),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.0),
}


def price_of(endpoint: Endpoint) -> tuple[float, float] | None:
    if endpoint.price_in is not None or endpoint.price_out is not None:
        return (endpoint.price_in or 0.0, endpoint.price_out or 0.0)
    model = endpoint.model.rsplit("/", 1)[-1]
    for prefix in sorted(PRICES, key=len, reverse=True):
        if model.startswith(prefix):
            return PRICES[prefix]
    return None


def cost_of(endpoint: Endpoint, tokens_in: int, tokens_out: int) -> float:
    price = price_of(endpoint)
    if price is None:
        return 0.0
    return (tokens_in * price[0] + tokens_out * price[1]) / 1_000_000
