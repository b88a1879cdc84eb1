"""The configured models: ``STATECRAFT_MODELS`` and the admin's endpoints, and which one a
run uses.

- ``endpoints()``: every enabled endpoint by name — the admin's (``ModelEndpoint``, key
  decrypted by ``agents.keyring``) and the environment's (``STATECRAFT_MODELS``, read when
  asked, so a pipeline sets it per job); a name in both is the environment's.
- ``resolve_model(app, agent, requested)``: the run's endpoint: the one the run names;
  else the app's default (``AppModelDefault``); else the CX ``modelSettings.model`` of the
  agent or the app when it names a configured endpoint (by its name or its ``model``). The
  temperature is the CX ``modelSettings.temperature`` (agent, then app), else the
  endpoint's.
- ``endpoint_save``: the admin's write (the key encrypted, never returned); ``app_model_set``
  the app's default. Neither is an app change: no revision, no audit row (the key must
  never reach the audit trail; the admin's own log records only which fields changed).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from django.db import transaction

from agents import keyring, selectors
from agents.core.diagnostics import Message
from agents.core.model import ModelRequest, ModelStrategy
from agents.llm.endpoints import VERTEX_LOCATION, ConfigError, Endpoint, parse_models
from agents.models import AgentApp, AppModelDefault, ModelEndpoint
from agents.services.common import ServiceError, error

# A live run (a model named, a replay or re-record, a judge) spends the operator's model
# key: it needs edit rights on the app; a viewer may still run the scripted simulation.
LIVE_NEEDS_EDIT = Message(
    "A live run calls a model on the operator's account: it needs edit rights on this app. "
    "You may view this app: run the scripted simulation (no model) instead."
)


class ModelNotConfigured(ServiceError):
    """The run names no configured model; the message lists those there are."""


class LiveNotAllowed(ServiceError):
    """The actor may view the app but not run it live (the adapters answer 403)."""


def live_rights_check(*, actor: Any, app: AgentApp) -> None:
    """A live run, a replay or a judge needs edit rights on `app` (`LiveNotAllowed`);
    None acts as the system (a management command)."""
    if actor is None:
        return
    access = selectors.app_access(actor, app) if actor.pk else None
    if access is None or not access.can_edit:
        raise LiveNotAllowed([error("model", LIVE_NEEDS_EDIT)])


def env_endpoints(environ: Mapping[str, str] | None = None) -> dict[str, Endpoint]:
    environ = os.environ if environ is None else environ
    return parse_models(environ.get("STATECRAFT_MODELS", ""), environ)


def admin_endpoints() -> dict[str, Endpoint]:
    out: dict[str, Endpoint] = {}
    for row in ModelEndpoint.objects.filter(enabled=True):
        key = keyring.decrypt(row.api_key_encrypted)
        out[row.name] = Endpoint(
            name=row.name,
            kind=row.kind,
            model=row.model,
            base_url=row.base_url.rstrip("/"),
            api_key=key,
            key_unreadable=bool(row.api_key_encrypted) and not key,
            vertex=row.vertex,
            project=row.project,
            location=row.location or (VERTEX_LOCATION if row.vertex and row.project else ""),
            timeout=row.timeout,
            max_retries=row.max_retries,
            price_in=row.price_in,
            price_out=row.price_out,
            max_concurrent=row.max_concurrent,
            requests_per_minute=row.requests_per_minute,
            tokens_per_minute=row.tokens_per_minute,
            source="admin",
        )
    return out


def endpoints() -> dict[str, Endpoint]:
    """Every configured endpoint by name; a bad ``STATECRAFT_MODELS`` is a ServiceError
    naming the field."""
    try:
        env = env_endpoints()
    except ConfigError as exc:
        raise ServiceError([error("model", exc.message, "SC480")]) from None
    return {**admin_endpoints(), **env}


def model_names() -> list[dict[str, Any]]:
    """What the designer and the API may show: names, kinds, models (never a key)."""
    try:
        found = endpoints()
    except ServiceError:
        return []
    return [e.describe() for _, e in sorted(found.items())]


def _cx_settings(app: AgentApp, agent_cx: Mapping[str, Any] | None) -> dict[str, Any]:
    settings: dict[str, Any] = {}
    carry = AgentApp.objects.filter(pk=app.pk).values_list("cx", flat=True).first() or {}
    app_json = carry.get("app") if isinstance(carry, Mapping) else None
    for source in (app_json, agent_cx):
        model = source.get("modelSettings") if isinstance(source, Mapping) else None
        if isinstance(model, Mapping):
            settings.update({k: v for k, v in model.items() if v not in (None, "")})
    return settings


def resolve_model(
    app: AgentApp,
    requested: str | None,
    *,
    agent_cx: Mapping[str, Any] | None = None,
    field: str = "model",
) -> tuple[Endpoint, float | None]:
    """The endpoint a run uses and the temperature (see the module docstring); an unknown
    `requested` name is refused on `field` (``judge`` for a run's judge model)."""
    found = endpoints()
    names = ", ".join(sorted(found)) or Message(
        "none (set STATECRAFT_MODELS or add one in the admin)"
    )
    cx = _cx_settings(app, agent_cx)
    temperature = cx.get("temperature")
    temperature = float(temperature) if isinstance(temperature, int | float) else None
    if requested:
        if requested not in found:
            if field == "judge":
                message = Message(
                    "No judge model named %(requested)s. Configured: %(names)s.",
                    requested=repr(requested),
                    names=names,
                )
            else:
                message = Message(
                    "No model named %(requested)s. Configured: %(names)s.",
                    requested=repr(requested),
                    names=names,
                )
            raise ModelNotConfigured([error(field, message, "SC481")])
        return found[requested], temperature
    default = AppModelDefault.objects.filter(app=app).values_list("model", flat=True).first()
    if default and default in found:
        return found[default], temperature
    wanted = str(cx.get("model") or "")
    if wanted:
        for endpoint in found.values():
            if wanted in (endpoint.name, endpoint.model):
                return endpoint, temperature
    raise ModelNotConfigured(
        [
            error(
                "model",
                Message("Name a model for this run (configured: %(names)s).", names=names),
                "SC481",
            )
        ]
    )


def checked_judge(app: AgentApp, model: str | None, judge: str | None) -> str | None:
    """The judge a live run asks (the rubrics of CX scenario evaluations): `judge` when it
    names a configured model, refused on the ``judge`` field (listing the configured names)
    when it does not, or when there is no `model` (a scripted run judges nothing). None:
    the run's model judges."""
    if not judge:
        return None
    resolve_model(app, judge, field="judge")
    if not model:
        raise ModelNotConfigured(
            [
                error(
                    "judge",
                    Message(
                        "A judge needs a live run: name the run's model too (configured: "
                        "%(names)s).",
                        names=", ".join(sorted(endpoints())),
                    ),
                    "SC481",
                )
            ]
        )
    return judge


def with_temperature(model: ModelStrategy, temperature: float | None) -> ModelStrategy:
    if temperature is None:
        return model

    def ask(request: ModelRequest) -> Any:
        return model(replace(request, temperature=temperature))

    return ask


# What a stored key is bound to: where it is sent. A change to any of them without the key
# typed again clears the key, so it never leaves for a server it was not given for.
KEY_BINDING = ("kind", "base_url", "vertex", "project", "location")


def key_binding_changed(endpoint: ModelEndpoint) -> bool:
    """True when the stored row's kind, base URL, Vertex choice, project or location
    differ from `endpoint`'s (a new endpoint: False)."""
    if not endpoint.pk:
        return False
    stored = ModelEndpoint.objects.filter(pk=endpoint.pk).values(*KEY_BINDING).first()
    return stored is not None and any(
        stored[field] != getattr(endpoint, field) for field in KEY_BINDING
    )


@transaction.atomic
def endpoint_save(*, endpoint: ModelEndpoint, api_key: str | None = None) -> ModelEndpoint:
    """Save an admin endpoint; `api_key` None keeps the stored key, "" removes it. A key is
    bound to where it is sent: a changed kind, base URL, Vertex choice, project or location
    clears the stored key unless the same save gives it again (`api_key`)."""
    if api_key is not None:
        endpoint.api_key_encrypted = keyring.encrypt(api_key.strip())
    elif key_binding_changed(endpoint):
        endpoint.api_key_encrypted = ""
    endpoint.full_clean()
    endpoint.save()
    return endpoint


def app_model_default(app: AgentApp) -> str:
    """The name of the app's default model ("" for none)."""
    return AppModelDefault.objects.filter(app=app).values_list("model", flat=True).first() or ""


@transaction.atomic
def app_model_set(*, app: AgentApp, model: str) -> AppModelDefault | None:
    """Set (or with "" clear) the app's default model; it must be configured."""
    if not model:
        AppModelDefault.objects.filter(app=app).delete()
        return None
    if model not in endpoints():
        raise ModelNotConfigured(
            [error("model", Message("No model named %(model)s.", model=repr(model)), "SC481")]
        )
    row, _ = AppModelDefault.objects.update_or_create(app=app, defaults={"model": model})
    return row
