"""REST endpoints for integrators: the selectors check access, the services do every write.

Errors have one shape: `{"detail": str, "diagnostics": [Diagnostic, ...]}` with 400 for
invalid input (DRF validation and `ServiceError` alike) and 409 for a stale `version`;
401/403/404 carry `detail` only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.db.models import Prefetch, QuerySet
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils.translation import gettext as _
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.generics import GenericAPIView
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import exception_handler

from agents import selectors, services
from agents.api import serializers as io
from agents.api.json_boundary import json_data_response
from agents.api.throttles import (
    CompileThrottle,
    ImportThrottle,
    SimulateThrottle,
    with_default_throttles,
)
from agents.core.diagnostics import Diagnostic, Message, Severity
from agents.core.lint import lint_app
from agents.core.simulate import SimulationResult
from agents.i18n import diagnostic_dicts, localize, localized_report
from agents.models import Agent, AgentApp, AppShare, Job, Scenario, Schema, Tool, Variable
from agents.selectors import Access
from agents.services import exchange, jobs

# ---------------------------------------------------------------- errors


class InvalidInput(Exception):
    """Input the view itself checks (compile values) was refused; like a ServiceError."""

    def __init__(self, diagnostics: Iterable[Diagnostic]) -> None:
        self.diagnostics = tuple(diagnostics)
        super().__init__("; ".join(d.message for d in self.diagnostics))


def _input_error(field: str, message: str) -> Diagnostic:
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
    return [_input_error(field, str(detail))]


def _error_response(diagnostics: Iterable[Diagnostic], status_code: int) -> Response:
    diagnostics = list(diagnostics)
    body = {
        "detail": " ".join(localize(d.message) for d in diagnostics),
        "diagnostics": diagnostic_dicts(diagnostics),
    }
    return Response(body, status=status_code)


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, services.StaleObjectError):
        return _error_response(exc.diagnostics, status.HTTP_409_CONFLICT)
    if isinstance(exc, services.ServiceError | InvalidInput):
        return _error_response(exc.diagnostics, status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, exceptions.ValidationError):
        return _error_response(_flatten(exc.detail), status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, exceptions.ParseError):
        return _error_response([_input_error("__all__", str(exc.detail))], exc.status_code)
    return exception_handler(exc, context)


MAX_IMPORT_BYTES = 20 * 1024 * 1024  # as the import page

ERRORS = {
    400: OpenApiResponse(io.ErrorOut, description="Invalid input: the diagnostics say why."),
    401: OpenApiResponse(io.ErrorOut, description="Not signed in."),
    403: OpenApiResponse(io.ErrorOut, description="You may view this app but not change it."),
    404: OpenApiResponse(io.ErrorOut, description="No such object, or not shared with you."),
}
READ_ERRORS = {401: ERRORS[401], 404: ERRORS[404]}
WRITE_ERRORS = {
    **ERRORS,
    409: OpenApiResponse(io.ErrorOut, description="Stale `version`: someone saved meanwhile."),
}


# ---------------------------------------------------------------- base


class ApiView(GenericAPIView):
    """Access through the selectors (strangers 404, viewers 403 on writes), one error shape."""

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


def _expected_version(data: dict) -> int | None:
    """Take the request's `version` out of `data`: the services' `expected_version`."""
    return data.pop("version", None)


def _agent_queryset() -> QuerySet[Agent]:
    return Agent.objects.prefetch_related(
        Prefetch("tools", queryset=Tool.objects.only("id", "name")),
        Prefetch("children", queryset=Agent.objects.only("id", "display_name")),
        "callbacks",
    )


def _scenario_queryset() -> QuerySet[Scenario]:
    return Scenario.objects.prefetch_related("steps")


# ---------------------------------------------------------------- apps


class AppListView(ApiView):
    """Apps you can see (search with `?q=`), and new apps you own."""

    queryset = AgentApp.objects.none()

    @extend_schema(
        tags=["apps"],
        summary="Apps you own or that are shared with you",
        parameters=[OpenApiParameter("q", str, description="Search in name and description.")],
        responses={200: io.AppOut(many=True), 401: ERRORS[401]},
    )
    def get(self, request: Request) -> Response:
        apps = selectors.app_list(request.user, search=request.query_params.get("q", "")[:200])
        apps = apps.prefetch_related(
            Prefetch(
                "shares", queryset=AppShare.objects.filter(user=request.user), to_attr="my_shares"
            )
        )
        return self.page(io.AppOut, apps)

    @extend_schema(
        tags=["apps"],
        summary="Create an app (with its root agent)",
        request=io.AppIn,
        responses={201: io.AppDetailOut, 400: ERRORS[400], 401: ERRORS[401]},
    )
    def post(self, request: Request) -> Response:
        data = self.valid(io.AppIn)
        app = services.app_create(actor=request.user, owner=request.user, **data)
        app = selectors.app_with_everything(app.pk).get()
        body = self.output(io.AppDetailOut, app, access=Access("owner"))
        location = reverse("api:app-detail", args=[app.pk])
        return Response(body, status=status.HTTP_201_CREATED, headers={"Location": location})


JOB_ACCEPTED = {
    202: OpenApiResponse(
        io.JobAcceptedOut,
        description="Queued: follow `url` (also in `Location`) for progress and the result.",
    ),
    429: OpenApiResponse(
        io.ErrorOut,
        description="Too many jobs queued or running for you (JOBS_MAX_ACTIVE_PER_USER), "
        "or too many simulations (RATE_LIMITS).",
    ),
}


class AppImportView(ApiView):
    """Import a Statecraft JSON/YAML file or a CX Agent Studio ZIP as a new app you own."""

    queryset = AgentApp.objects.none()
    parser_classes = [MultiPartParser, FormParser]
    throttle_classes = with_default_throttles(ImportThrottle)

    @extend_schema(
        tags=["apps"],
        summary="Import an app (native JSON/YAML or CX Agent Studio ZIP), with its full report",
        description=(
            "Multipart form: `file` (required), `name` (optional). All of it or nothing: on a "
            "refusal nothing is created. Either way the body has `report`: every diagnostic "
            "(errors, warnings, notes) grouped by the file it is about. A file of at least "
            "IMPORT_JOB_MIN_BYTES (256 KB by default) imports as a job: 202 with the job's "
            "`url`; the succeeded job's `result` is this body (`app`, `report`), a refused "
            "one fails with `result.diagnostics` and `result.report`."
        ),
        request={"multipart/form-data": io.ImportIn},
        responses={
            201: io.ImportOut,
            400: io.ImportOut,
            401: ERRORS[401],
            **JOB_ACCEPTED,
        },
    )
    def post(self, request: Request) -> Response:
        upload = request.FILES.get("file")
        if upload is None:
            raise InvalidInput(
                [_input_error("file", Message("Send the app file in the `file` field."))]
            )
        if upload.size > MAX_IMPORT_BYTES:
            message = Message(
                "The file is over %(max_import_bytes)s MB.",
                max_import_bytes=MAX_IMPORT_BYTES // (1024 * 1024),
            )
            raise InvalidInput([_input_error("file", message)])
        filename = upload.name or "upload"
        name = str(request.data.get("name") or "").strip() or None
        data = upload.read()
        try:
            if exchange.import_as_job(data):  # a large upload: 202 with the job
                job = exchange.app_import_submit(
                    owner=request.user, data=data, name=name, filename=filename
                )
                return accepted(request, job)
            app, kind, diagnostics = exchange.app_import_file(
                owner=request.user, data=data, name=name, filename=filename
            )
        except jobs.JobLimitError as exc:
            raise exceptions.Throttled(detail=str(exc)) from exc
        except exchange.ImportRefused as exc:
            body = {
                "detail": _("%(file)s: not imported; nothing was created.") % {"file": filename},
                "diagnostics": diagnostic_dicts(exc.diagnostics),
                "report": localized_report(
                    exchange.import_report(exc.kind, exc.diagnostics, filename)
                ),
            }
            return Response(body, status=status.HTTP_400_BAD_REQUEST)
        location = reverse("api:app-detail", args=[app.pk])
        body = {
            "app": {"id": app.pk, "name": app.name, "url": location},
            "report": localized_report(exchange.import_report(kind, diagnostics, filename)),
        }
        return Response(body, status=status.HTTP_201_CREATED, headers={"Location": location})


class AppDetailView(ApiView):
    """One app with everything in it; editors change it, only its owner deletes it."""

    queryset = AgentApp.objects.none()

    @extend_schema(
        tags=["apps"],
        summary="An app with its variables, schemas, tools and agents",
        description="With `?version=N` or `?label=name`: the app's native document as saved "
        "in that version (see the versions endpoints).",
        parameters=[
            OpenApiParameter("version", int, description="The app as saved in this version."),
            OpenApiParameter("label", str, description="The app at the version of this label."),
        ],
        responses={200: io.AppDetailOut, **READ_ERRORS},
    )
    def get(self, request: Request, app_id: int) -> Response:
        if "version" in request.query_params or "label" in request.query_params:
            from agents.api.version_views import app_at_version  # versions: a module of its own

            return app_at_version(request, self.load_app())
        app = self.load_app(queryset=selectors.app_with_everything(app_id))
        return Response(self.output(io.AppDetailOut, app, access=self.access))

    @extend_schema(
        tags=["apps"],
        summary="Rename or describe an app",
        request=io.AppPatchIn,
        responses={200: io.AppDetailOut, **WRITE_ERRORS},
    )
    def patch(self, request: Request, app_id: int) -> Response:
        app = self.load_app(edit=True)
        data = self.valid(io.AppPatchIn)
        services.app_update(
            actor=request.user, app=app, expected_version=_expected_version(data), **data
        )
        app = selectors.app_with_everything(app_id).get()
        return Response(self.output(io.AppDetailOut, app, access=self.access))

    @extend_schema(
        tags=["apps"],
        summary="Delete an app and everything in it (owner only)",
        responses={204: None, **ERRORS},
    )
    def delete(self, request: Request, app_id: int) -> Response:
        app = self.load_app(edit=True)
        if not self.access.is_owner:
            raise exceptions.PermissionDenied(_("Only the app's owner can delete it."))
        services.app_delete(actor=request.user, app=app)
        return Response(status=status.HTTP_204_NO_CONTENT)


class AppLintView(ApiView):
    """The app's diagnostics, as the designer's lint panel shows them."""

    queryset = AgentApp.objects.none()

    @extend_schema(
        tags=["actions"],
        operation_id="apps_lint",
        summary="Every diagnostic of the app (saved state)",
        responses={200: io.DiagnosticsOut, **READ_ERRORS},
    )
    def get(self, request: Request, app_id: int) -> Response:
        # The spec cached by revision, as the designer's preview: one query when it is warm.
        diagnostics = lint_app(selectors.app_spec(self.load_app()))
        return Response(self.output(io.DiagnosticsOut, {"diagnostics": diagnostics}))


# ---------------------------------------------------------------- variables


def _variable(app: AgentApp, name: str) -> Variable:
    return get_object_or_404(Variable.objects.select_related("schema"), app=app, name=name)


class VariableListView(ApiView):
    """The app's variables (by name); each `default` is typed JSON."""

    queryset = Variable.objects.none()

    @extend_schema(tags=["variables"], responses={200: io.VariableOut(many=True), **READ_ERRORS})
    def get(self, request: Request, app_id: int) -> Response:
        app = self.load_app()
        return self.page(io.VariableOut, app.variables.select_related("schema"))

    @extend_schema(
        tags=["variables"],
        request=io.VariableIn,
        responses={201: io.VariableOut, **ERRORS},
    )
    def post(self, request: Request, app_id: int) -> Response:
        app = self.load_app(edit=True)
        variable = services.variable_create(
            actor=request.user, app=app, **self.valid(io.VariableIn, app=app)
        )
        return self.created(self.output(io.VariableOut, variable), "variable-detail", variable.name)


class VariableDetailView(ApiView):
    """One variable, addressed by its name."""

    queryset = Variable.objects.none()

    @extend_schema(tags=["variables"], responses={200: io.VariableOut, **READ_ERRORS})
    def get(self, request: Request, app_id: int, name: str) -> Response:
        return Response(self.output(io.VariableOut, _variable(self.load_app(), name)))

    @extend_schema(
        tags=["variables"],
        summary="Change a variable; a new name with update_references rewrites references",
        request=io.VariablePatchIn,
        responses={200: io.VariableOut, **WRITE_ERRORS},
    )
    def patch(self, request: Request, app_id: int, name: str) -> Response:
        app = self.load_app(edit=True)
        variable = _variable(app, name)
        data = self.valid(io.VariablePatchIn, app=app)
        version = _expected_version(data)
        variable = services.variable_update(
            actor=request.user, variable=variable, expected_version=version, **data
        )
        return Response(self.output(io.VariableOut, _variable(app, variable.name)))

    @extend_schema(tags=["variables"], responses={204: None, **ERRORS})
    def delete(self, request: Request, app_id: int, name: str) -> Response:
        app = self.load_app(edit=True)
        services.variable_delete(actor=request.user, variable=_variable(app, name))
        return Response(status=status.HTTP_204_NO_CONTENT)


# ---------------------------------------------------------------- schemas


class SchemaListView(ApiView):
    """The app's JSON Schemas for custom objects."""

    queryset = Schema.objects.none()

    @extend_schema(tags=["schemas"], responses={200: io.SchemaOut(many=True), **READ_ERRORS})
    def get(self, request: Request, app_id: int) -> Response:
        return self.page(io.SchemaOut, self.load_app().schemas.all())

    @extend_schema(tags=["schemas"], request=io.SchemaIn, responses={201: io.SchemaOut, **ERRORS})
    def post(self, request: Request, app_id: int) -> Response:
        app = self.load_app(edit=True)
        schema = services.schema_create(actor=request.user, app=app, **self.valid(io.SchemaIn))
        return self.created(self.output(io.SchemaOut, schema), "schema-detail", schema.name)


class SchemaDetailView(ApiView):
    """One schema, addressed by its name."""

    queryset = Schema.objects.none()

    @extend_schema(tags=["schemas"], responses={200: io.SchemaOut, **READ_ERRORS})
    def get(self, request: Request, app_id: int, name: str) -> Response:
        schema = get_object_or_404(Schema, app=self.load_app(), name=name)
        return Response(self.output(io.SchemaOut, schema))

    @extend_schema(
        tags=["schemas"],
        summary="Change a schema (every default that uses it must still fit)",
        request=io.SchemaPatchIn,
        responses={200: io.SchemaOut, **WRITE_ERRORS},
    )
    def patch(self, request: Request, app_id: int, name: str) -> Response:
        app = self.load_app(edit=True)
        schema = get_object_or_404(Schema, app=app, name=name)
        data = self.valid(io.SchemaPatchIn)
        version = _expected_version(data)
        schema = services.schema_update(
            actor=request.user, schema=schema, expected_version=version, **data
        )
        return Response(self.output(io.SchemaOut, schema))

    @extend_schema(
        tags=["schemas"],
        summary="Delete a schema no variable uses",
        responses={204: None, **ERRORS},
    )
    def delete(self, request: Request, app_id: int, name: str) -> Response:
        app = self.load_app(edit=True)
        services.schema_delete(
            actor=request.user, schema=get_object_or_404(Schema, app=app, name=name)
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


# ---------------------------------------------------------------- tools


class ToolListView(ApiView):
    """The app's tools: Python, OpenAPI or MCP, each with an optional mock."""

    queryset = Tool.objects.none()

    @extend_schema(tags=["tools"], responses={200: io.ToolOut(many=True), **READ_ERRORS})
    def get(self, request: Request, app_id: int) -> Response:
        return self.page(io.ToolOut, self.load_app().tools.all())

    @extend_schema(tags=["tools"], request=io.ToolIn, responses={201: io.ToolOut, **ERRORS})
    def post(self, request: Request, app_id: int) -> Response:
        app = self.load_app(edit=True)
        tool = services.tool_create(actor=request.user, app=app, **self.valid(io.ToolIn))
        return self.created(self.output(io.ToolOut, tool), "tool-detail", tool.name)


class ToolDetailView(ApiView):
    """One tool, addressed by its name."""

    queryset = Tool.objects.none()

    @extend_schema(tags=["tools"], responses={200: io.ToolOut, **READ_ERRORS})
    def get(self, request: Request, app_id: int, name: str) -> Response:
        tool = get_object_or_404(Tool, app=self.load_app(), name=name)
        return Response(self.output(io.ToolOut, tool))

    @extend_schema(
        tags=["tools"],
        summary="Change a tool; a new name renames its Python function and references",
        request=io.ToolPatchIn,
        responses={200: io.ToolOut, **WRITE_ERRORS},
    )
    def patch(self, request: Request, app_id: int, name: str) -> Response:
        app = self.load_app(edit=True)
        tool = get_object_or_404(Tool, app=app, name=name)
        data = self.valid(io.ToolPatchIn)
        tool = services.tool_update(
            actor=request.user, tool=tool, expected_version=_expected_version(data), **data
        )
        return Response(self.output(io.ToolOut, tool))

    @extend_schema(tags=["tools"], responses={204: None, **ERRORS})
    def delete(self, request: Request, app_id: int, name: str) -> Response:
        app = self.load_app(edit=True)
        services.tool_delete(actor=request.user, tool=get_object_or_404(Tool, app=app, name=name))
        return Response(status=status.HTTP_204_NO_CONTENT)


# ---------------------------------------------------------------- agents


class AgentListView(ApiView):
    """The app's agents; tools by name, sub-agents by display name."""

    queryset = Agent.objects.none()

    @extend_schema(tags=["agents"], responses={200: io.AgentOut(many=True), **READ_ERRORS})
    def get(self, request: Request, app_id: int) -> Response:
        return self.page(io.AgentOut, _agent_queryset().filter(app=self.load_app()))

    @extend_schema(tags=["agents"], request=io.AgentIn, responses={201: io.AgentOut, **ERRORS})
    def post(self, request: Request, app_id: int) -> Response:
        app = self.load_app(edit=True)
        agent = services.agent_create(
            actor=request.user, app=app, **self.valid(io.AgentIn, app=app)
        )
        agent = _agent_queryset().get(pk=agent.pk)
        return self.created(self.output(io.AgentOut, agent), "agent-detail", agent.pk)


class AgentDetailView(ApiView):
    """One agent, addressed by its id."""

    queryset = Agent.objects.none()

    @extend_schema(tags=["agents"], responses={200: io.AgentOut, **READ_ERRORS})
    def get(self, request: Request, app_id: int, agent_id: int) -> Response:
        agent = self.load_agent(self.load_app(), _agent_queryset())
        return Response(self.output(io.AgentOut, agent))

    @extend_schema(
        tags=["agents"],
        summary="Change an agent; a new display name rewrites {@AGENT: …} references",
        request=io.AgentPatchIn,
        responses={200: io.AgentOut, **WRITE_ERRORS},
    )
    def patch(self, request: Request, app_id: int, agent_id: int) -> Response:
        app = self.load_app(edit=True)
        agent = self.load_agent(app)
        data = self.valid(io.AgentPatchIn, app=app)
        services.agent_update(
            actor=request.user, agent=agent, expected_version=_expected_version(data), **data
        )
        return Response(self.output(io.AgentOut, _agent_queryset().get(pk=agent.pk)))

    @extend_schema(
        tags=["agents"],
        summary="Delete an agent (the root only when it is the last one)",
        responses={204: None, **ERRORS},
    )
    def delete(self, request: Request, app_id: int, agent_id: int) -> Response:
        app = self.load_app(edit=True)
        services.agent_delete(actor=request.user, agent=self.load_agent(app))
        return Response(status=status.HTTP_204_NO_CONTENT)


class AgentCompileView(ApiView):
    """The compiled prompt of an agent, with diagnostics and highlight spans."""

    queryset = Agent.objects.none()
    throttle_classes = with_default_throttles(CompileThrottle)

    @extend_schema(
        tags=["actions"],
        operation_id="apps_agents_compile",
        summary="Compile instructions (saved or given) with typed values",
        description=(
            "Values start from the variables' defaults; `values` overrides them (null removes "
            "one). Diagnostics: the agent's lint for these instructions and the compile's. "
            "Viewers may compile."
        ),
        request=io.CompileIn,
        responses={200: io.CompileOut, 400: ERRORS[400], **READ_ERRORS},
    )
    def post(self, request: Request, app_id: int, agent_id: int) -> Response:
        # The agent and its app in one query, the rest from the spec cached by revision:
        # the same reads as the designer's preview.
        app, agent, self.access = selectors.agent_for_user(request.user, app_id, agent_id)
        data = self.valid(io.CompileIn)
        preview = services.preview_agent(
            app=app,
            agent=agent,
            instructions=data.get("instructions"),
            values=data.get("values", {}),
            channel=data["channel"],
            modality=data["modality"],
        )
        if preview.input_problems:
            raise InvalidInput(preview.input_problems)
        result = {"text": preview.text, "diagnostics": preview.diagnostics, "spans": preview.spans}
        return Response(self.output(io.CompileOut, result))


# ---------------------------------------------------------------- scenarios


class ScenarioListView(ApiView):
    """An agent's scenarios: session inputs, a token budget and scripted steps."""

    queryset = Scenario.objects.none()

    @extend_schema(tags=["scenarios"], responses={200: io.ScenarioOut(many=True), **READ_ERRORS})
    def get(self, request: Request, app_id: int, agent_id: int) -> Response:
        agent = self.load_agent(self.load_app())
        return self.page(io.ScenarioOut, _scenario_queryset().filter(agent=agent))

    @extend_schema(
        tags=["scenarios"],
        summary="Create a scenario; its steps are a script, one step per line",
        request=io.ScenarioIn,
        responses={201: io.ScenarioOut, **ERRORS},
    )
    def post(self, request: Request, app_id: int, agent_id: int) -> Response:
        agent = self.load_agent(self.load_app(edit=True))
        scenario = services.scenario_save(
            actor=request.user, agent=agent, **self.valid(io.ScenarioIn)
        )
        scenario = _scenario_queryset().get(pk=scenario.pk)
        return self.created(
            self.output(io.ScenarioOut, scenario), "scenario-detail", agent.pk, scenario.pk
        )


class ScenarioDetailView(ApiView):
    """One scenario, addressed by its id."""

    queryset = Scenario.objects.none()

    def load_scenario(self, agent: Agent) -> Scenario:
        return get_object_or_404(_scenario_queryset(), agent=agent, pk=self.kwargs["scenario_id"])

    @extend_schema(tags=["scenarios"], responses={200: io.ScenarioOut, **READ_ERRORS})
    def get(self, request: Request, app_id: int, agent_id: int, scenario_id: int) -> Response:
        scenario = self.load_scenario(self.load_agent(self.load_app()))
        return Response(self.output(io.ScenarioOut, scenario))

    @extend_schema(
        tags=["scenarios"],
        summary="Change a scenario; `steps_script` replaces every step",
        request=io.ScenarioPatchIn,
        responses={200: io.ScenarioOut, **WRITE_ERRORS},
    )
    def patch(self, request: Request, app_id: int, agent_id: int, scenario_id: int) -> Response:
        agent = self.load_agent(self.load_app(edit=True))
        scenario = self.load_scenario(agent)
        data = self.valid(io.ScenarioPatchIn)
        version = _expected_version(data)
        services.scenario_save(
            actor=request.user, agent=agent, scenario=scenario, expected_version=version, **data
        )
        return Response(self.output(io.ScenarioOut, self.load_scenario(agent)))

    @extend_schema(tags=["scenarios"], responses={204: None, **ERRORS})
    def delete(self, request: Request, app_id: int, agent_id: int, scenario_id: int) -> Response:
        agent = self.load_agent(self.load_app(edit=True))
        services.scenario_delete(actor=request.user, scenario=self.load_scenario(agent))
        return Response(status=status.HTTP_204_NO_CONTENT)


def accepted(request: Request, job: Job) -> Response:
    """202 for a submitted job: its id, url (also the Location header) and status."""
    url = request.build_absolute_uri(reverse("api:job-detail", args=[job.pk]))
    body = {"id": str(job.pk), "url": url, "status": job.status}
    return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": url})


def submit(request: Request, **kwargs: Any) -> Job:
    """`jobs.job_submit` for the request's user; over the per-user limit, a 429 naming it."""
    try:
        return jobs.job_submit(owner=request.user, **kwargs)
    except jobs.JobLimitError as exc:
        raise exceptions.Throttled(detail=str(exc)) from exc


class ScenarioSimulateView(ApiView):
    """Run a scenario through the simulator."""

    queryset = Scenario.objects.none()
    throttle_classes = with_default_throttles(SimulateThrottle)

    @extend_schema(
        tags=["actions"],
        operation_id="apps_agents_scenarios_simulate",
        summary="Run the scenario: turns, events, state, built-ins, HTTP requests, warnings",
        description=(
            "Python tools and callbacks run in the sandbox unless `use_mocks` (default: the "
            "scenario's setting). `instructions` simulates unsaved text. Viewers may simulate. "
            "With `model` (a configured model) the run is live and a job: 202 with the job's "
            "`id`, `url` (also `Location`) and `status`; GET the url: `progress.done` counts "
            "the model calls so far and `current` holds the model's text so far; once "
            "succeeded, `result` is {live_run (the recorded run's id, null for unsaved "
            "instructions), mode, model, status, error, tokens_in, tokens_out, cost, calls, "
            "drift}. Without a model it answers 200 at once with the simulation."
        ),
        request=io.SimulateIn,
        responses={200: io.SimulationOut, 400: ERRORS[400], **JOB_ACCEPTED, **READ_ERRORS},
    )
    def post(self, request: Request, app_id: int, agent_id: int, scenario_id: int) -> Response:
        # The agent and its app in one query, the scenario and its steps in two; the app
        # itself comes from the spec cached by revision (as the designer's simulation).
        app, agent, self.access = selectors.agent_for_user(request.user, app_id, agent_id)
        scenario = (
            Scenario.objects.prefetch_related("steps").filter(pk=scenario_id, agent=agent).first()
        )
        if scenario is None:
            raise exceptions.NotFound(_("No such scenario for this agent."))
        scenario.agent = agent  # its spec names the agent
        data = self.valid(io.SimulateIn)
        if data.get("model"):  # a live run is long work: a job (README, "Jobs")
            params = {
                "agent": agent.pk,
                "scenario": scenario.pk,
                "model": _checked_model(app, data["model"]),
                "instructions": data.get("instructions"),
                "use_mocks": data.get("use_mocks"),
            }
            return accepted(request, submit(request, kind="live_run", app=app, params=params))
        scenario_spec, result = services.simulate_scenario(
            app=app,
            agent=agent,
            scenario=scenario,
            instructions=data.get("instructions"),
            use_mocks=data.get("use_mocks"),
        )
        body = self.output(io.SimulationOut, _simulation(result, scenario_spec.use_mocks))
        return json_data_response(body)


def _simulation(result: SimulationResult, use_mocks: bool) -> dict[str, Any]:
    return {
        "use_mocks": use_mocks,
        "instructions": result.instructions,
        "instruction_tokens": result.instruction_tokens,
        "instruction_diagnostics": result.instruction_diagnostics,
        "diagnostics": result.diagnostics,
        "turns": result.turns,
        "events": result.events,
        "model_calls": result.model_calls,
        "final_state": result.final_state,
    }


class ScenarioEvaluateView(ApiView):
    """Run one scenario's expectations (goldens) as a job, storing its last result."""

    queryset = Scenario.objects.none()
    throttle_classes = with_default_throttles(SimulateThrottle)

    @extend_schema(
        tags=["actions"],
        operation_id="apps_agents_scenarios_evaluate",
        summary="Check the scenario's expectations (a job): each passed, failed or needing a model",
        description=(
            "Queues a job that simulates the scenario (Python tools and callbacks in the "
            "sandbox) and checks each expectation against what happened; the outcome is "
            "stored as the scenario's last result. Answers 202 at once; GET the job's `url` "
            "until its status is succeeded, failed or cancelled: `result` is then the "
            "scenario's outcome. Viewers may evaluate."
        ),
        request=io.ModelIn,
        responses={**JOB_ACCEPTED, **READ_ERRORS},
    )
    def post(self, request: Request, app_id: int, agent_id: int, scenario_id: int) -> Response:
        app = self.load_app()
        if not Scenario.objects.filter(pk=scenario_id, agent_id=agent_id, agent__app=app).exists():
            raise exceptions.NotFound(_("No such scenario for this agent."))
        params: dict[str, Any] = {"scenario": scenario_id}
        model = _checked_model(app, self.valid(io.ModelIn).get("model"))
        if model:
            params["model"] = model
        job = submit(request, kind="evaluate_scenario", app=app, params=params)
        return accepted(request, job)


def _checked_model(app: AgentApp, name: str | None) -> str | None:
    """`name` when it names a configured model (else the 400 that lists them), before a
    job is queued for it."""
    if not name:
        return None
    from agents.services.live_models import resolve_model

    resolve_model(app, name)
    return name


class AppEvaluateView(ApiView):
    """Run the expectations of every scenario of the app as a job (as `manage.py evaluate`)."""

    queryset = AgentApp.objects.none()
    throttle_classes = with_default_throttles(SimulateThrottle)

    @extend_schema(
        tags=["actions"],
        operation_id="apps_evaluate",
        summary="Check every scenario's expectations (a job); `result.ok` is false when one failed",
        description=(
            "Queues a job and answers 202 with its `id`, `url` and `status` (and a "
            "`Location` header). GET the url for `status` (queued, running, succeeded, "
            "failed, cancelled), `progress` {done, total} and `result` {ok, summary, "
            "scenarios}: each scenario's outcome as it finishes. POST `<url>cancel` stops it. "
            "`model` runs every scenario live with that configured model."
        ),
        request=io.ModelIn,
        responses={**JOB_ACCEPTED, **READ_ERRORS},
    )
    def post(self, request: Request, app_id: int) -> Response:
        app = self.load_app()
        model = _checked_model(app, self.valid(io.ModelIn).get("model"))
        params = {"model": model} if model else {}
        return accepted(request, submit(request, kind="evaluate_app", app=app, params=params))
