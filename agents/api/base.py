"""What every API endpoint shares: access through the selectors, one error shape, throttles
counted first, the error responses the schema documents, and the 202 of a submitted job.

Errors have one shape: `{"detail": str, "diagnostics": [Diagnostic, ...]}` with 400 for
invalid input (DRF validation and `ServiceError` alike) and 409 for a stale `version`;
401/403/404 carry `detail` only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from django.db.models import Prefetch, QuerySet
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import OpenApiResponse
from rest_framework import exceptions, serializers, status
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import exception_handler
from rest_framework.viewsets import ViewSetMixin

from agents import selectors, services
from agents.api import serializers as io
from agents.core.diagnostics import Diagnostic, Severity
from agents.i18n import diagnostic_dicts, localize
from agents.models import Agent, AgentApp, Job, Scenario, Tool
from agents.services import jobs
from agents.services.live_models import LiveNotAllowed

# ---------------------------------------------------------------- errors


class InvalidInput(Exception):
    """Input the view itself checks (compile values) was refused; like a ServiceError."""

    def __init__(self, diagnostics: Iterable[Diagnostic]) -> None:
        self.diagnostics = tuple(diagnostics)
        super().__init__("; ".join(d.message for d in self.diagnostics))


def input_error(field: str, message: str) -> Diagnostic:
    # SC001: "A field has a value the object cannot be saved with." (services.CODES)
    return Diagnostic(code="SC001", severity=Severity.ERROR, message=message, field=field)


def _flatten(detail: Any, field: str = "__all__") -> list[Diagnostic]:
    """DRF's nested error detail as diagnostics whose `field` is a dotted path."""
    if isinstance(detail, Mapping):
        out: list[Diagnostic] = []
        for key, value in detail.items():
            name = "__all__" if key == "non_field_errors" else str(key)
            out += _flatten(value, name if field == "__all__" else f"{field}.{name}")
        return out
    if isinstance(detail, list):
        out = []
        for index, value in enumerate(detail):
            nested = isinstance(value, Mapping | list)
            out += _flatten(value, f"{field}.{index}" if nested else field)
        return out
    return [input_error(field, str(detail))]


def _error_response(diagnostics: Iterable[Diagnostic], status_code: int) -> Response:
    diagnostics = list(diagnostics)
    body = {
        "detail": " ".join(localize(d.message) for d in diagnostics),
        "diagnostics": diagnostic_dicts(diagnostics),
    }
    return Response(body, status=status_code)


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, LiveNotAllowed):  # a viewer asked for a live run: 403, detail only
        return Response({"detail": exc.localized()}, status=status.HTTP_403_FORBIDDEN)
    if isinstance(exc, services.StaleObjectError):
        return _error_response(exc.diagnostics, status.HTTP_409_CONFLICT)
    if isinstance(exc, services.ServiceError | InvalidInput):
        return _error_response(exc.diagnostics, status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, exceptions.ValidationError):
        return _error_response(_flatten(exc.detail), status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, exceptions.ParseError):
        return _error_response([input_error("__all__", str(exc.detail))], exc.status_code)
    return exception_handler(exc, context)


ERRORS = {
    400: OpenApiResponse(io.ErrorOut, description=_("Invalid input: the diagnostics say why.")),
    401: OpenApiResponse(io.ErrorOut, description=_("Not signed in.")),
    403: OpenApiResponse(io.ErrorOut, description=_("You may view this app but not change it.")),
    404: OpenApiResponse(io.ErrorOut, description=_("No such object, or not shared with you.")),
}
READ_ERRORS = {401: ERRORS[401], 404: ERRORS[404]}
WRITE_ERRORS = {
    **ERRORS,
    409: OpenApiResponse(io.ErrorOut, description=_("Stale `version`: someone saved meanwhile.")),
}


JOB_ACCEPTED = {
    202: OpenApiResponse(
        io.JobAcceptedOut,
        description=_("Queued: follow `url` (also in `Location`) for progress and the result."),
    ),
    429: OpenApiResponse(
        io.ErrorOut,
        description=_(
            "Too many jobs queued or running for you (JOBS_MAX_ACTIVE_PER_USER), "
            "or too many simulations (RATE_LIMITS)."
        ),
    ),
}


# ---------------------------------------------------------------- base


class ApiView(GenericAPIView):
    """Access through the selectors (strangers 404, viewers 403 on writes), one error shape.

    An endpoint of its own (an action: compile, simulate...) is an ApiView; a resource's
    endpoints are an ApiViewSet."""

    def get_exception_handler(self) -> Any:
        return api_exception_handler

    # DRF checks permissions before throttles: an anonymous request (401) or a wrong token
    # would never count. Here the throttles count first, once, whoever asks.
    def perform_authentication(self, request: Request) -> None:
        try:
            super().perform_authentication(request)
        except exceptions.AuthenticationFailed:
            self.check_throttles(request)  # a guessed token counts for its address
            raise

    def check_permissions(self, request: Request) -> None:
        self.check_throttles(request)
        super().check_permissions(request)

    def check_throttles(self, request: Request) -> None:
        if getattr(request, "_statecraft_throttled", False):
            return
        request._statecraft_throttled = True  # type: ignore[attr-defined]
        super().check_throttles(request)

    def get_authenticate_header(self, request: Request) -> str:
        # Not signed in: 401 with a Token challenge (never Basic: a browser would prompt
        # for a password and then replay it on cross-site requests).
        return 'Token realm="Statecraft API"'

    def load_app(
        self, *, edit: bool = False, queryset: QuerySet[AgentApp] | None = None
    ) -> AgentApp:
        app, self.access = selectors.app_for_user(
            self.request.user, self.kwargs["app_id"], edit=edit, queryset=queryset
        )
        return app

    def load_agent(self, app: AgentApp, queryset: QuerySet[Agent] | None = None) -> Agent:
        queryset = queryset if queryset is not None else Agent.objects.all()
        return get_object_or_404(queryset, app=app, pk=self.kwargs["agent_id"])

    def valid(self, serializer_class: type[serializers.Serializer], **context: Any) -> dict:
        serializer = serializer_class(
            data=self.request.data, context={"request": self.request, **context}
        )
        serializer.is_valid(raise_exception=True)
        return dict(serializer.validated_data)

    def output(
        self, serializer_class: type[serializers.Serializer], instance: Any, **context: Any
    ) -> Any:
        return serializer_class(instance, context={"request": self.request, **context}).data

    def page(self, serializer_class: type[serializers.Serializer], queryset: QuerySet) -> Response:
        rows = self.paginate_queryset(queryset)
        data = serializer_class(rows, many=True, context={"request": self.request}).data
        return self.get_paginated_response(data)

    def created(self, data: Any, url_name: str, *args: Any) -> Response:
        location = reverse(f"api:{url_name}", args=[self.kwargs["app_id"], *args])
        return Response(data, status=status.HTTP_201_CREATED, headers={"Location": location})


class ApiViewSet(ViewSetMixin, ApiView):
    """A resource's endpoints (list, create, retrieve, partial_update, destroy) for a router.

    Each sets `lookup_url_kwarg` and `lookup_value_converter` so the router's URLs are
    the API's: `apps/<id:app_id>/variables/<str:name>/`."""


def expected_version(data: dict) -> int | None:
    """Take the request's `version` out of `data`: the services' `expected_version`."""
    return data.pop("version", None)


def agent_queryset() -> QuerySet[Agent]:
    return Agent.objects.prefetch_related(
        Prefetch("tools", queryset=Tool.objects.only("id", "name")),
        Prefetch("children", queryset=Agent.objects.only("id", "display_name")),
        "callbacks",
    )


def scenario_queryset() -> QuerySet[Scenario]:
    return Scenario.objects.prefetch_related("steps")


# ---------------------------------------------------------------- jobs


def accepted(request: Request, job: Job) -> Response:
    """202 for a submitted job: its id, url (also the Location header) and status."""
    url = request.build_absolute_uri(reverse("api:job-detail", args=[job.pk]))
    body = {"id": str(job.pk), "url": url, "status": job.status}
    return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": url})


def submitted(use_case: Callable[..., Job], **kwargs: Any) -> Job:
    """The job a service's use case submits (``run_all_submit``, ``live_run_submit``…);
    over the per-user limit of jobs, a 429 naming it."""
    try:
        return use_case(**kwargs)
    except jobs.JobLimitError as exc:
        raise exceptions.Throttled(detail=exc.localized()) from exc
