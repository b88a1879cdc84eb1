"""Errors the app answers itself: JSON under /api/ (never the HTML page), and a 503 with
``Retry-After`` for a transient failure (the database restarting, a deadlock, a lock
timeout) instead of a 500 (docs/operations/production.md)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.translation import gettext
from django.views import defaults

logger = logging.getLogger("designer.errors")
RETRY_AFTER_SECONDS = 2


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: `{"detail": ...}` under /api/, the HTML page elsewhere."""
    if _is_api(request):
        return JsonResponse({"detail": gettext("Server error.")}, status=500)
    return defaults.server_error(request)


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler404: `{"detail": ...}` under /api/ (a malformed id, an unknown path)."""
    if _is_api(request):
        return JsonResponse({"detail": gettext("Not found.")}, status=404)
    return defaults.page_not_found(request, exception)


class TransientErrorMiddleware:
    """An exception that is the service's passing state, not a fault of the request (the
    database unreachable or restarting, a deadlock or serialization failure, a lock
    timeout, a full disk): 503 with ``Retry-After``, JSON under /api/, a short page
    elsewhere; the error itself goes to the log, never to the caller."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exc: Exception) -> HttpResponse | None:
        from agents.services.jobs import transient_problem

        problem = transient_problem(exc)
        if problem is None:
            return None
        logger.warning("%s %s: a transient error: %r", request.method, request.path, exc)
        message = gettext(
            "The service is briefly unavailable (a database or Redis hiccup). Try again in a "
            "moment."
        )
        response: Any
        if _is_api(request):
            response = JsonResponse({"detail": message}, status=503)
        else:
            response = HttpResponse(message, status=503, content_type="text/plain; charset=utf-8")
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
