"""DRF throttle classes over server/ratelimit.py: every API request, and the expensive ones."""

from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle

from server import ratelimit


class ScopedThrottle(BaseThrottle):
    """Counts each request in `scope` (RATE_LIMITS) for the user, else the client address."""

    scope = ""
    anonymous_only = False
    signed_in_only = False

    def allow_request(self, request: Request, view: Any) -> bool:
        signed_in = bool(request.user and request.user.is_authenticated)
        if (self.anonymous_only and signed_in) or (self.signed_in_only and not signed_in):
            return True
        self.verdict = ratelimit.hit(self.scope, ratelimit.requester_key(request))
        return self.verdict.allowed

    def wait(self) -> float | None:
        return self.verdict.retry_after


class APIUserThrottle(ScopedThrottle):
    scope = "api-user"
    signed_in_only = True


class APIAnonThrottle(ScopedThrottle):
    scope = "api-anon"
    anonymous_only = True


class CompileThrottle(ScopedThrottle):
    scope = "compile"


class SimulateThrottle(ScopedThrottle):
    scope = "simulate"


class ImportThrottle(ScopedThrottle):
    scope = "import"


def with_default_throttles(*extra: type[BaseThrottle]) -> list[type[BaseThrottle]]:
    """The API-wide throttles plus the expensive endpoint's own."""
    return [*api_settings.DEFAULT_THROTTLE_CLASSES, *extra]
