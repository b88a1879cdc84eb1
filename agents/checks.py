"""System checks: the sandbox's missing protections, reported at start (`manage.py check`)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Warning, register

from agents.sandbox import jail
from agents.services.sandbox_door import missing_protections


@register("sandbox")
def sandbox_protections(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """A warning per protection this host cannot give; an error when one is unknown.

    Production (``SANDBOX_REQUIRED_PROTECTIONS``) then refuses to run code without the
    required ones: the simulation says so and runs mocks only.
    """
    messages: list[CheckMessage] = []
    required = list(getattr(settings, "SANDBOX_REQUIRED_PROTECTIONS", ()))
    for name in required:
        if name not in jail.ALL_PROTECTIONS:
            messages.append(
                Error(
                    f"SANDBOX_REQUIRED_PROTECTIONS names {name!r}, which is not a protection.",
                    hint="Use any of: " + ", ".join(jail.ALL_PROTECTIONS),
                    id="statecraft.E001",
                )
            )
    for name, why in missing_protections().items():
        refused = " Simulations will not run Python code." if name in required else ""
        messages.append(
            Warning(
                f"The sandbox cannot give the protection {name!r}: {why}.{refused}",
                hint="See the docs, /docs/designer/sandbox/, for what the host must provide.",
                id="statecraft.W001",
            )
        )
    return messages


@register("models")
def model_endpoints(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """``STATECRAFT_MODELS`` is checked at start: a bad field is an error naming it."""
    import os

    from agents.llm.endpoints import ConfigError, parse_models

    try:
        parse_models(os.environ.get("STATECRAFT_MODELS", ""), os.environ)
    except ConfigError as exc:
        return [
            Error(
                str(exc),
                hint="See the docs, /docs/designer/live-models/.",
                id="statecraft.E010",
            )
        ]
    return []
