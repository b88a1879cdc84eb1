"""REST endpoints for integrators, by resource: apps, variables, schemas, tools, agents and
scenarios are ViewSets the router in `urls.py` maps (list, create, retrieve, partial
update, destroy), plus the import of an app. The action endpoints (lint, compile,
simulate, evaluate) are in `actions.py`, versions and labels in `version_views.py`,
jobs in `job_views.py`; `base.py` holds what they share (access, errors, throttles).

The selectors check access, the services do every write.
"""

from __future__ import annotations

from django.core.files.uploadedfile import UploadedFile
from django.db.models import Prefetch
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_serializer
from rest_framework import exceptions, serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from agents import selectors, services
from agents.api import serializers as io
from agents.api.base import (
    ERRORS,
    JOB_ACCEPTED,
    READ_ERRORS,
    WRITE_ERRORS,
    ApiView,
    ApiViewSet,
    accepted,
    agent_queryset,
    expected_version,
    input_error,
    scenario_queryset,
)
from agents.api.serializers import DiagnosticOut, MessageField
from agents.api.throttles import ImportThrottle, with_default_throttles
from agents.api.version_views import app_at_version
from agents.core.diagnostics import Diagnostic, Message
from agents.i18n import diagnostic_dicts, localized_report
from agents.models import Agent, AgentApp, AppShare, Scenario, Schema, Tool, Variable
from agents.selectors import Access
from agents.services import exchange, jobs

MAX_IMPORT_BYTES = 20 * 1024 * 1024  # as the import page


# ---------------------------------------------------------------- apps


class AppViewSet(ApiViewSet):
    """Apps you can see, and new apps you own; one app with everything in it."""

    queryset = AgentApp.objects.none()
    lookup_url_kwarg = "app_id"
    lookup_value_converter = "id"

    @extend_schema(
        description=gettext_lazy("Apps you can see (search with `?q=`), and new apps you own."),
        tags=["apps"],
        summary=gettext_lazy("Apps you own or that are shared with you"),
        parameters=[
            OpenApiParameter("q", str, description=gettext_lazy("Search in name and description."))
        ],
        responses={200: io.AppOut(many=True), 401: ERRORS[401]},
    )
    def list(self, request: Request) -> Response:
        apps = selectors.app_list(request.user, search=request.query_params.get("q", "")[:200])
        apps = apps.prefetch_related(
            Prefetch(
                "shares", queryset=AppShare.objects.filter(user=request.user), to_attr="my_shares"
            )
        )
        return self.page(io.AppOut, apps)

    @extend_schema(
        description=gettext_lazy("Apps you can see (search with `?q=`), and new apps you own."),
        tags=["apps"],
        summary=gettext_lazy("Create an app (with its root agent)"),
        request=io.AppIn,
        responses={201: io.AppDetailOut, 400: ERRORS[400], 401: ERRORS[401]},
    )
    def create(self, request: Request) -> Response:
        data = self.valid(io.AppIn)
        app = services.app_create(actor=request.user, owner=request.user, **data)
        app = selectors.app_with_everything(app.pk).get()
        body = self.output(io.AppDetailOut, app, access=Access("owner"))
        location = reverse("api:app-detail", args=[app.pk])
        return Response(body, status=status.HTTP_201_CREATED, headers={"Location": location})

    @extend_schema(
        tags=["apps"],
        summary=gettext_lazy("An app with its variables, schemas, tools and agents"),
        description=gettext_lazy(
            "With `?version=N` or `?label=name`: the app's native document as saved "
            "in that version (see the versions endpoints)."
        ),
        parameters=[
            OpenApiParameter(
                "version", int, description=gettext_lazy("The app as saved in this version.")
            ),
            OpenApiParameter(
                "label", str, description=gettext_lazy("The app at the version of this label.")
            ),
        ],
        responses={200: io.AppDetailOut, **READ_ERRORS},
    )
    def retrieve(self, request: Request, app_id: int) -> Response:
        if "version" in request.query_params or "label" in request.query_params:
            return app_at_version(request, self.load_app())
        app = self.load_app(queryset=selectors.app_with_everything(app_id))
        return Response(self.output(io.AppDetailOut, app, access=self.access))

    @extend_schema(
        description=gettext_lazy(
            "One app with everything in it; editors change it, only its owner deletes it."
        ),
        tags=["apps"],
        summary=gettext_lazy("Rename or describe an app"),
        request=io.AppPatchIn,
        responses={200: io.AppDetailOut, **WRITE_ERRORS},
    )
    def partial_update(self, request: Request, app_id: int) -> Response:
        app = self.load_app(edit=True)
        data = self.valid(io.AppPatchIn)
        services.app_update(
            actor=request.user, app=app, expected_version=expected_version(data), **data
        )
        app = selectors.app_with_everything(app_id).get()
        return Response(self.output(io.AppDetailOut, app, access=self.access))

    @extend_schema(
        description=gettext_lazy(
            "One app with everything in it; editors change it, only its owner deletes it."
        ),
        tags=["apps"],
        summary=gettext_lazy("Delete an app and everything in it (owner only)"),
        responses={204: None, **ERRORS},
    )
    def destroy(self, request: Request, app_id: int) -> Response:
        app = self.load_app(edit=True)
        if not self.access.is_owner:
            raise exceptions.PermissionDenied(_("Only the app's owner can delete it."))
        services.app_delete(actor=request.user, app=app)
        return Response(status=status.HTTP_204_NO_CONTENT)


# ---------------------------------------------------------------- import


class ImportIn(serializers.Serializer):
    file = serializers.FileField(
        help_text=gettext_lazy("A .json/.yaml Statecraft export or a CX .zip.")
    )
    name = serializers.CharField(required=False, help_text=gettext_lazy("The new app's name."))


class ReportRowOut(serializers.Serializer):
    severity = serializers.ChoiceField(choices=io.SEVERITIES)
    code = serializers.CharField()
    field = serializers.CharField(
        help_text=gettext_lazy("The field in the file ('' for the whole file).")
    )
    message = MessageField()


class ReportFileOut(serializers.Serializer):
    file = serializers.CharField(
        help_text=gettext_lazy("A file of the CX ZIP, or the uploaded file.")
    )
    diagnostics = ReportRowOut(many=True)
    kept_whole = serializers.BooleanField(
        help_text=gettext_lazy(
            "The file is kept as is and written back on export; nothing else to say."
        )
    )


class ImportReportOut(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["native", "cx"])
    file = serializers.CharField(help_text=gettext_lazy("The uploaded file's name."))
    counts = serializers.DictField(child=serializers.IntegerField())
    files = ReportFileOut(many=True, help_text=gettext_lazy("Every diagnostic, grouped by file."))
    kept_files = serializers.IntegerField(help_text=gettext_lazy("How many files are kept whole."))


class ImportedAppOut(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    url = serializers.CharField()


@extend_schema_serializer(
    description=gettext_lazy(
        "201: `app` and `report`; 400: `detail`, `diagnostics` and `report` (nothing created)."
    )
)
class ImportOut(serializers.Serializer):
    """201: `app` and `report`; 400: `detail`, `diagnostics` and `report` (nothing created)."""

    app = ImportedAppOut(required=False)
    detail = serializers.CharField(required=False)
    diagnostics = DiagnosticOut(many=True, required=False)
    report = ImportReportOut()


class AppImportView(ApiView):
    """Import a Statecraft JSON/YAML file or a CX Agent Studio ZIP as a new app you own."""

    queryset = AgentApp.objects.none()
    parser_classes = [MultiPartParser, FormParser]
    throttle_classes = with_default_throttles(ImportThrottle)

    @extend_schema(
        tags=["apps"],
        summary=gettext_lazy(
            "Import an app (native JSON/YAML or CX Agent Studio ZIP), with its full report"
        ),
        description=(
            gettext_lazy(
                "Multipart form: `file` (required), `name` (optional). All of it or nothing: on a "
                "refusal nothing is created. Either way the body has `report`: every diagnostic "
                "(errors, warnings, notes) grouped by the file it is about. A file of at least "
                "IMPORT_JOB_MIN_BYTES (256 KB by default) imports as a job: 202 with the job's "
                "`url`; the succeeded job's `result` is this body (`app`, `report`), a refused "
                "one fails with `result.diagnostics` and `result.report`."
            )
        ),
        request={"multipart/form-data": ImportIn},
        responses={
            201: ImportOut,
            400: ImportOut,
            401: ERRORS[401],
            **JOB_ACCEPTED,
        },
    )
    def post(self, request: Request) -> Response:
        upload, refused = _uploaded(request, Message("Send the app file in the `file` field."))
        if refused is not None:
            return refused
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
            raise exceptions.Throttled(detail=exc.localized()) from exc
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


class EvalsetImportIn(serializers.Serializer):
    file = serializers.FileField(help_text=gettext_lazy("An ADK evalset (.evalset.json)."))


class ImportedScenarioOut(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()


@extend_schema_serializer(
    description=gettext_lazy(
        "201: `app`, `scenarios` and `report`; 400: `detail`, `diagnostics` and `report`."
    )
)
class EvalsetImportOut(ImportOut):
    """201: `app`, `scenarios` and `report`; 400: `detail`, `diagnostics` and `report`."""

    scenarios = ImportedScenarioOut(many=True, required=False)


class AppImportEvalsetView(ApiView):
    """Add an ADK evalset's eval cases to an app you may edit, as scenarios of its root agent."""

    queryset = AgentApp.objects.none()
    parser_classes = [MultiPartParser, FormParser]
    throttle_classes = with_default_throttles(ImportThrottle)

    @extend_schema(
        tags=["apps"],
        summary=gettext_lazy("Add an ADK evalset's eval cases as scenarios, with the report"),
        description=gettext_lazy(
            "Multipart form: `file` (required). All of it or nothing. An evalset holds at "
            "most IMPORT_MAX_OBJECTS eval cases (400 naming `eval_cases`, nothing created). "
            "From IMPORT_JOB_MIN_BYTES bytes or IMPORT_EVALSET_JOB_MIN_CASES eval cases it "
            "imports as a job: 202 with the job's `url`; the succeeded job's `result` is this "
            "body (`app`, `scenarios`, `report`), a refused one fails with "
            "`result.diagnostics` and `result.report`."
        ),
        request={"multipart/form-data": EvalsetImportIn},
        responses={
            **ERRORS,
            201: EvalsetImportOut,
            400: EvalsetImportOut,
            **JOB_ACCEPTED,
        },
    )
    def post(self, request: Request, app_id: int) -> Response:
        app = self.load_app(edit=True)
        upload, refused = _uploaded(request, Message("Send the evalset in the `file` field."))
        if refused is not None:
            return refused
        filename = upload.name or "evalset.json"
        data = upload.read()
        try:
            if exchange.evalset_as_job(data):  # a large evalset: 202 with the job
                job = exchange.app_import_evalset_submit(
                    app=app, actor=request.user, data=data, filename=filename
                )
                return accepted(request, job)
            created, notes = exchange.app_import_evalset(
                app=app, actor=request.user, data=data, filename=filename
            )
        except jobs.JobLimitError as exc:
            raise exceptions.Throttled(detail=exc.localized()) from exc
        except exchange.ImportRefused as exc:
            body = {
                "detail": _("%(file)s: not imported; nothing was created.") % {"file": filename},
                "diagnostics": diagnostic_dicts(exc.diagnostics),
                "report": localized_report(
                    exchange.import_report("native", exc.diagnostics, filename)
                ),
            }
            return Response(body, status=status.HTTP_400_BAD_REQUEST)
        location = reverse("api:app-detail", args=[app.pk])
        body = {
            "app": {"id": app.pk, "name": app.name, "url": location},
            "scenarios": [{"id": s.pk, "name": s.name} for s in created],
            "report": localized_report(exchange.import_report("native", notes, filename)),
        }
        return Response(body, status=status.HTTP_201_CREATED)


def _uploaded(request: Request, missing: Message) -> tuple[UploadedFile | None, Response | None]:
    """The request's `file` upload, or the import's 400 when it is missing (`missing` says
    what to send) or over ``MAX_IMPORT_BYTES``."""
    upload = request.FILES.get("file")
    if upload is None:
        return None, _import_refused("upload", input_error("file", missing))
    if upload.size > MAX_IMPORT_BYTES:
        message = Message(
            "The file is over %(max_import_bytes)s MB.",
            max_import_bytes=MAX_IMPORT_BYTES // (1024 * 1024),
        )
        return None, _import_refused(upload.name or "upload", input_error("file", message))
    return upload, None


def _import_refused(filename: str, diagnostic: Diagnostic) -> Response:
    """A 400 of the import with the body its schema documents (`report` included)."""
    body = {
        "detail": _("%(file)s: not imported; nothing was created.") % {"file": filename},
        "diagnostics": diagnostic_dicts([diagnostic]),
        "report": localized_report(exchange.import_report("native", [diagnostic], filename)),
    }
    return Response(body, status=status.HTTP_400_BAD_REQUEST)


# ---------------------------------------------------------------- variables


def _variable(app: AgentApp, name: str) -> Variable:
    return get_object_or_404(Variable.objects.select_related("schema"), app=app, name=name)


class VariableViewSet(ApiViewSet):
    """The app's variables, addressed by name; each `default` is typed JSON."""

    queryset = Variable.objects.none()
    lookup_field = "name"
    lookup_value_converter = "str"

    @extend_schema(
        description=gettext_lazy("The app's variables (by name); each `default` is typed JSON."),
        tags=["variables"],
        responses={200: io.VariableOut(many=True), **READ_ERRORS},
    )
    def list(self, request: Request, app_id: int) -> Response:
        app = self.load_app()
        return self.page(io.VariableOut, app.variables.select_related("schema"))

    @extend_schema(
        description=gettext_lazy("The app's variables (by name); each `default` is typed JSON."),
        tags=["variables"],
        request=io.VariableIn,
        responses={201: io.VariableOut, **ERRORS},
    )
    def create(self, request: Request, app_id: int) -> Response:
        app = self.load_app(edit=True)
        variable = services.variable_create(
            actor=request.user, app=app, **self.valid(io.VariableIn, app=app)
        )
        return self.created(self.output(io.VariableOut, variable), "variable-detail", variable.name)

    @extend_schema(
        description=gettext_lazy("One variable, addressed by its name."),
        tags=["variables"],
        responses={200: io.VariableOut, **READ_ERRORS},
    )
    def retrieve(self, request: Request, app_id: int, name: str) -> Response:
        return Response(self.output(io.VariableOut, _variable(self.load_app(), name)))

    @extend_schema(
        description=gettext_lazy("One variable, addressed by its name."),
        tags=["variables"],
        summary=gettext_lazy(
            "Change a variable; a new name with update_references rewrites references"
        ),
        request=io.VariablePatchIn,
        responses={200: io.VariableOut, **WRITE_ERRORS},
    )
    def partial_update(self, request: Request, app_id: int, name: str) -> Response:
        app = self.load_app(edit=True)
        variable = _variable(app, name)
        data = self.valid(io.VariablePatchIn, app=app)
        version = expected_version(data)
        variable = services.variable_update(
            actor=request.user, variable=variable, expected_version=version, **data
        )
        return Response(self.output(io.VariableOut, _variable(app, variable.name)))

    @extend_schema(
        description=gettext_lazy("One variable, addressed by its name."),
        tags=["variables"],
        responses={204: None, **ERRORS},
    )
    def destroy(self, request: Request, app_id: int, name: str) -> Response:
        app = self.load_app(edit=True)
        services.variable_delete(actor=request.user, variable=_variable(app, name))
        return Response(status=status.HTTP_204_NO_CONTENT)


# ---------------------------------------------------------------- schemas


class SchemaViewSet(ApiViewSet):
    """The app's JSON Schemas for custom objects, addressed by name."""

    queryset = Schema.objects.none()
    lookup_field = "name"
    lookup_value_converter = "str"

    @extend_schema(
        description=gettext_lazy("The app's JSON Schemas for custom objects."),
        tags=["schemas"],
        responses={200: io.SchemaOut(many=True), **READ_ERRORS},
    )
    def list(self, request: Request, app_id: int) -> Response:
        return self.page(io.SchemaOut, self.load_app().schemas.all())

    @extend_schema(
        description=gettext_lazy("The app's JSON Schemas for custom objects."),
        tags=["schemas"],
        request=io.SchemaIn,
        responses={201: io.SchemaOut, **ERRORS},
    )
    def create(self, request: Request, app_id: int) -> Response:
        app = self.load_app(edit=True)
        schema = services.schema_create(actor=request.user, app=app, **self.valid(io.SchemaIn))
        return self.created(self.output(io.SchemaOut, schema), "schema-detail", schema.name)

    @extend_schema(
        description=gettext_lazy("One schema, addressed by its name."),
        tags=["schemas"],
        responses={200: io.SchemaOut, **READ_ERRORS},
    )
    def retrieve(self, request: Request, app_id: int, name: str) -> Response:
        schema = get_object_or_404(Schema, app=self.load_app(), name=name)
        return Response(self.output(io.SchemaOut, schema))

    @extend_schema(
        description=gettext_lazy("One schema, addressed by its name."),
        tags=["schemas"],
        summary=gettext_lazy("Change a schema (every default that uses it must still fit)"),
        request=io.SchemaPatchIn,
        responses={200: io.SchemaOut, **WRITE_ERRORS},
    )
    def partial_update(self, request: Request, app_id: int, name: str) -> Response:
        app = self.load_app(edit=True)
        schema = get_object_or_404(Schema, app=app, name=name)
        data = self.valid(io.SchemaPatchIn)
        version = expected_version(data)
        schema = services.schema_update(
            actor=request.user, schema=schema, expected_version=version, **data
        )
        return Response(self.output(io.SchemaOut, schema))

    @extend_schema(
        description=gettext_lazy("One schema, addressed by its name."),
        tags=["schemas"],
        summary=gettext_lazy("Delete a schema no variable uses"),
        responses={204: None, **ERRORS},
    )
    def destroy(self, request: Request, app_id: int, name: str) -> Response:
        app = self.load_app(edit=True)
        services.schema_delete(
            actor=request.user, schema=get_object_or_404(Schema, app=app, name=name)
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


# ---------------------------------------------------------------- tools


class ToolViewSet(ApiViewSet):
    """The app's tools (Python, OpenAPI or MCP, each with an optional mock), by name."""

    queryset = Tool.objects.none()
    lookup_field = "name"
    lookup_value_converter = "str"

    @extend_schema(
        description=gettext_lazy(
            "The app's tools: Python, OpenAPI or MCP, each with an optional mock."
        ),
        tags=["tools"],
        responses={200: io.ToolOut(many=True), **READ_ERRORS},
    )
    def list(self, request: Request, app_id: int) -> Response:
        return self.page(io.ToolOut, self.load_app().tools.all())

    @extend_schema(
        description=gettext_lazy(
            "The app's tools: Python, OpenAPI or MCP, each with an optional mock."
        ),
        tags=["tools"],
        request=io.ToolIn,
        responses={201: io.ToolOut, **ERRORS},
    )
    def create(self, request: Request, app_id: int) -> Response:
        app = self.load_app(edit=True)
        tool = services.tool_create(actor=request.user, app=app, **self.valid(io.ToolIn))
        return self.created(self.output(io.ToolOut, tool), "tool-detail", tool.name)

    @extend_schema(
        description=gettext_lazy("One tool, addressed by its name."),
        tags=["tools"],
        responses={200: io.ToolOut, **READ_ERRORS},
    )
    def retrieve(self, request: Request, app_id: int, name: str) -> Response:
        tool = get_object_or_404(Tool, app=self.load_app(), name=name)
        return Response(self.output(io.ToolOut, tool))

    @extend_schema(
        description=gettext_lazy("One tool, addressed by its name."),
        tags=["tools"],
        summary=gettext_lazy(
            "Change a tool; a new name renames its Python function and references"
        ),
        request=io.ToolPatchIn,
        responses={200: io.ToolOut, **WRITE_ERRORS},
    )
    def partial_update(self, request: Request, app_id: int, name: str) -> Response:
        app = self.load_app(edit=True)
        tool = get_object_or_404(Tool, app=app, name=name)
        data = self.valid(io.ToolPatchIn)
        tool = services.tool_update(
            actor=request.user, tool=tool, expected_version=expected_version(data), **data
        )
        return Response(self.output(io.ToolOut, tool))

    @extend_schema(
        description=gettext_lazy("One tool, addressed by its name."),
        tags=["tools"],
        responses={204: None, **ERRORS},
    )
    def destroy(self, request: Request, app_id: int, name: str) -> Response:
        app = self.load_app(edit=True)
        services.tool_delete(actor=request.user, tool=get_object_or_404(Tool, app=app, name=name))
        return Response(status=status.HTTP_204_NO_CONTENT)


# ---------------------------------------------------------------- agents


class AgentViewSet(ApiViewSet):
    """The app's agents, addressed by id; tools by name, sub-agents by display name."""

    queryset = Agent.objects.none()
    lookup_url_kwarg = "agent_id"
    lookup_value_converter = "id"

    @extend_schema(
        description=gettext_lazy("The app's agents; tools by name, sub-agents by display name."),
        tags=["agents"],
        responses={200: io.AgentOut(many=True), **READ_ERRORS},
    )
    def list(self, request: Request, app_id: int) -> Response:
        return self.page(io.AgentOut, agent_queryset().filter(app=self.load_app()))

    @extend_schema(
        description=gettext_lazy("The app's agents; tools by name, sub-agents by display name."),
        tags=["agents"],
        request=io.AgentIn,
        responses={201: io.AgentOut, **ERRORS},
    )
    def create(self, request: Request, app_id: int) -> Response:
        app = self.load_app(edit=True)
        agent = services.agent_create(
            actor=request.user, app=app, **self.valid(io.AgentIn, app=app)
        )
        agent = agent_queryset().get(pk=agent.pk)
        return self.created(self.output(io.AgentOut, agent), "agent-detail", agent.pk)

    @extend_schema(
        description=gettext_lazy("One agent, addressed by its id."),
        tags=["agents"],
        responses={200: io.AgentOut, **READ_ERRORS},
    )
    def retrieve(self, request: Request, app_id: int, agent_id: int) -> Response:
        agent = self.load_agent(self.load_app(), agent_queryset())
        return Response(self.output(io.AgentOut, agent))

    @extend_schema(
        description=gettext_lazy("One agent, addressed by its id."),
        tags=["agents"],
        summary=gettext_lazy("Change an agent; a new display name rewrites {@AGENT: …} references"),
        request=io.AgentPatchIn,
        responses={200: io.AgentOut, **WRITE_ERRORS},
    )
    def partial_update(self, request: Request, app_id: int, agent_id: int) -> Response:
        app = self.load_app(edit=True)
        agent = self.load_agent(app)
        data = self.valid(io.AgentPatchIn, app=app)
        services.agent_update(
            actor=request.user, agent=agent, expected_version=expected_version(data), **data
        )
        return Response(self.output(io.AgentOut, agent_queryset().get(pk=agent.pk)))

    @extend_schema(
        description=gettext_lazy("One agent, addressed by its id."),
        tags=["agents"],
        summary=gettext_lazy("Delete an agent (the root only when it is the last one)"),
        responses={204: None, **ERRORS},
    )
    def destroy(self, request: Request, app_id: int, agent_id: int) -> Response:
        app = self.load_app(edit=True)
        services.agent_delete(actor=request.user, agent=self.load_agent(app))
        return Response(status=status.HTTP_204_NO_CONTENT)


# ---------------------------------------------------------------- scenarios


class ScenarioViewSet(ApiViewSet):
    """An agent's scenarios, addressed by id: session inputs, a token budget, steps."""

    queryset = Scenario.objects.none()
    lookup_url_kwarg = "scenario_id"
    lookup_value_converter = "id"

    def load_scenario(self, agent: Agent) -> Scenario:
        return get_object_or_404(scenario_queryset(), agent=agent, pk=self.kwargs["scenario_id"])

    @extend_schema(
        description=gettext_lazy(
            "An agent's scenarios: session inputs, a token budget and scripted steps."
        ),
        tags=["scenarios"],
        responses={200: io.ScenarioOut(many=True), **READ_ERRORS},
    )
    def list(self, request: Request, app_id: int, agent_id: int) -> Response:
        agent = self.load_agent(self.load_app())
        return self.page(io.ScenarioOut, scenario_queryset().filter(agent=agent))

    @extend_schema(
        description=gettext_lazy(
            "An agent's scenarios: session inputs, a token budget and scripted steps."
        ),
        tags=["scenarios"],
        summary=gettext_lazy("Create a scenario; its steps are a script, one step per line"),
        request=io.ScenarioIn,
        responses={201: io.ScenarioOut, **ERRORS},
    )
    def create(self, request: Request, app_id: int, agent_id: int) -> Response:
        agent = self.load_agent(self.load_app(edit=True))
        scenario = services.scenario_save(
            actor=request.user, agent=agent, **self.valid(io.ScenarioIn)
        )
        scenario = scenario_queryset().get(pk=scenario.pk)
        return self.created(
            self.output(io.ScenarioOut, scenario), "scenario-detail", agent.pk, scenario.pk
        )

    @extend_schema(
        description=gettext_lazy("One scenario, addressed by its id."),
        tags=["scenarios"],
        responses={200: io.ScenarioOut, **READ_ERRORS},
    )
    def retrieve(self, request: Request, app_id: int, agent_id: int, scenario_id: int) -> Response:
        scenario = self.load_scenario(self.load_agent(self.load_app()))
        return Response(self.output(io.ScenarioOut, scenario))

    @extend_schema(
        description=gettext_lazy("One scenario, addressed by its id."),
        tags=["scenarios"],
        summary=gettext_lazy("Change a scenario; `steps_script` replaces every step"),
        request=io.ScenarioPatchIn,
        responses={200: io.ScenarioOut, **WRITE_ERRORS},
    )
    def partial_update(
        self, request: Request, app_id: int, agent_id: int, scenario_id: int
    ) -> Response:
        agent = self.load_agent(self.load_app(edit=True))
        scenario = self.load_scenario(agent)
        data = self.valid(io.ScenarioPatchIn)
        version = expected_version(data)
        services.scenario_save(
            actor=request.user, agent=agent, scenario=scenario, expected_version=version, **data
        )
        return Response(self.output(io.ScenarioOut, self.load_scenario(agent)))

    @extend_schema(
        description=gettext_lazy("One scenario, addressed by its id."),
        tags=["scenarios"],
        responses={204: None, **ERRORS},
    )
    def destroy(self, request: Request, app_id: int, agent_id: int, scenario_id: int) -> Response:
        agent = self.load_agent(self.load_app(edit=True))
        services.scenario_delete(actor=request.user, scenario=self.load_scenario(agent))
        return Response(status=status.HTTP_204_NO_CONTENT)
