"""REST endpoints for versions and labels, and the app as at a version or a label.

`GET /api/apps/{id}/?version=N` or `?label=production` answers the app's native
document as saved in that version (what a runtime or a pipeline fetches);
versions are listed and saved under `/versions/`, labels set and moved with
`PUT /labels/{name}/ {"version": N}`. Viewers read; editors save, label and
restore; only the owner (or staff) deletes a version.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Prefetch
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from agents import selectors
from agents.api import serializers as io
from agents.api.base import ERRORS, READ_ERRORS, ApiView, ApiViewSet, input_error
from agents.core.diagnostics import Message
from agents.models import AgentApp, AppLabel, AppVersion
from agents.services import ServiceError, versions

# ---------------------------------------------------------------- shapes


class VersionIn(serializers.Serializer):
    name = serializers.CharField(max_length=versions.VERSION_NAME_MAX_LENGTH)
    note = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)


class LabelIn(serializers.Serializer):
    version = serializers.IntegerField(
        min_value=1,
        max_value=io.MAX_ID,
        help_text=gettext_lazy("The version number the label points at."),
    )


class VersionOut(serializers.ModelSerializer):
    created_by = serializers.CharField(
        source="created_by.get_username", read_only=True, default=None
    )
    labels = serializers.SlugRelatedField(slug_field="name", many=True, read_only=True)

    class Meta:
        model = AppVersion
        fields = ["number", "name", "note", "created_by", "created_at", "labels"]
        read_only_fields = fields


class VersionDetailOut(VersionOut):
    document = serializers.JSONField(
        read_only=True, help_text=gettext_lazy("The app's native document.")
    )

    class Meta(VersionOut.Meta):
        fields = [*VersionOut.Meta.fields, "document"]
        read_only_fields = fields


class LabelOut(serializers.ModelSerializer):
    version = serializers.IntegerField(source="version.number", read_only=True)
    version_name = serializers.CharField(source="version.name", read_only=True)
    moved_by = serializers.CharField(source="moved_by.get_username", read_only=True, default=None)

    class Meta:
        model = AppLabel
        fields = ["name", "version", "version_name", "moved_by", "created_at", "updated_at"]
        read_only_fields = fields


class AppAtVersionOut(serializers.Serializer):
    app = serializers.IntegerField(help_text=gettext_lazy("The app's id."))
    version = VersionOut()
    document = serializers.JSONField(
        help_text=gettext_lazy("The app's native document at that version.")
    )


def _labelled_versions() -> Prefetch:
    return Prefetch("labels", queryset=AppLabel.objects.order_by("name"))


def _version(app: AgentApp, number: int) -> AppVersion:
    found = (
        AppVersion.objects.filter(app=app, number=number)
        .select_related("created_by")
        .prefetch_related(_labelled_versions())
        .first()
    )
    if found is None:
        raise exceptions.NotFound(_("This app has no version %(number)s.") % {"number": number})
    return found


# ---------------------------------------------------------------- the app at a version


def app_at_version(request: Request, app: AgentApp) -> Response:
    """The answer of `GET /api/apps/{id}/?version=N` or `?label=name` (access already checked)."""
    params = request.query_params
    if "version" in params and "label" in params:
        raise ServiceError(
            [input_error("version", Message("Give either version or label, not both."))]
        )
    if "label" in params:
        label = params["label"]
        try:
            found = versions.version_for_app(app, label=label)
        except ServiceError as exc:
            raise exceptions.NotFound(exc.diagnostics[0].message) from exc
    else:
        raw = params["version"]
        try:
            number = int(raw)
        except ValueError:
            raise ServiceError(
                [
                    input_error(
                        "version",
                        Message(
                            "version must be a version number (1, 2, ...), not '%(raw)s'; "
                            "or ask for a label with ?label=production.",
                            raw=raw[:50],
                        ),
                    )
                ]
            ) from None
        found = _version(app, number)
    found = _version(app, found.number)  # with its labels
    body = {"app": app.pk, "version": found, "document": found.document}
    return Response(AppAtVersionOut(body, context={"request": request}).data)


# ---------------------------------------------------------------- versions


class VersionViewSet(ApiViewSet):
    """The app's saved versions, addressed by number; the owner (or staff) deletes one."""

    queryset = AppVersion.objects.none()
    lookup_field = "number"
    lookup_value_converter = "id"

    @extend_schema(
        description=gettext_lazy(
            "The app's saved versions (newest first, without documents); save a new one."
        ),
        tags=["versions"],
        responses={200: VersionOut(many=True), **READ_ERRORS},
    )
    def list(self, request: Request, app_id: int) -> Response:
        app = self.load_app()
        return self.page(VersionOut, versions.version_list(app))

    @extend_schema(
        description=gettext_lazy(
            "The app's saved versions (newest first, without documents); save a new one."
        ),
        tags=["versions"],
        summary=gettext_lazy("Save the app as it is now as a new version"),
        request=VersionIn,
        responses={201: VersionOut, **ERRORS},
    )
    def create(self, request: Request, app_id: int) -> Response:
        app = self.load_app(edit=True)
        data = self.valid(VersionIn)
        version = versions.version_create(app=app, user=request.user, **data)
        version = _version(app, version.number)
        return self.created(self.output(VersionOut, version), "version-detail", version.number)

    @extend_schema(
        description=gettext_lazy(
            "One version with its native document; the owner (or staff) deletes it."
        ),
        tags=["versions"],
        responses={200: VersionDetailOut, **READ_ERRORS},
    )
    def retrieve(self, request: Request, app_id: int, number: int) -> Response:
        app = self.load_app()
        return Response(self.output(VersionDetailOut, _version(app, number)))

    @extend_schema(
        description=gettext_lazy(
            "One version with its native document; the owner (or staff) deletes it."
        ),
        tags=["versions"],
        summary=gettext_lazy(
            "Delete a version (owner or staff; refused while a label points at it)"
        ),
        responses={204: None, **ERRORS},
    )
    def destroy(self, request: Request, app_id: int, number: int) -> Response:
        app = self.load_app()
        if not versions.may_delete_versions(request.user, self.access):
            raise exceptions.PermissionDenied(
                _("Only the app's owner (or staff) can delete a version.")
            )
        versions.version_delete(version=_version(app, number), user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class VersionRestoreView(ApiView):
    """Replace the working copy with a version, in one change."""

    queryset = AppVersion.objects.none()

    @extend_schema(
        description=gettext_lazy("Replace the working copy with a version, in one change."),
        tags=["versions"],
        operation_id="apps_versions_restore",
        summary=gettext_lazy("Restore a version into the working copy (editors)"),
        request=None,
        responses={200: io.AppDetailOut, **ERRORS},
    )
    def post(self, request: Request, app_id: int, number: int) -> Response:
        app = self.load_app(edit=True)
        versions.version_restore(version=_version(app, number), user=request.user)
        app = selectors.app_with_everything(app_id).get()
        return Response(self.output(io.AppDetailOut, app, access=self.access))


# ---------------------------------------------------------------- labels


class LabelViewSet(ApiViewSet):
    """The app's labels, addressed by name: set or move one (`PUT {"version": N}`)."""

    queryset = AppLabel.objects.none()
    lookup_field = "name"
    lookup_value_converter = "str"

    @extend_schema(
        description=gettext_lazy("The app's labels and the version each points at."),
        tags=["versions"],
        responses={200: LabelOut(many=True), **READ_ERRORS},
    )
    def list(self, request: Request, app_id: int) -> Response:
        app = self.load_app()
        return self.page(LabelOut, versions.label_list(app))

    def _label(self, app: AgentApp, name: str) -> AppLabel:
        found = versions.label_list(app).filter(name=name).first()
        if found is None:
            raise exceptions.NotFound(_("No label '%(name)s' on this app.") % {"name": name})
        return found

    @extend_schema(
        description=gettext_lazy('Set or move a label (`PUT {"version": N}`), read it, remove it.'),
        tags=["versions"],
        responses={200: LabelOut, **READ_ERRORS},
    )
    def retrieve(self, request: Request, app_id: int, name: str) -> Response:
        return Response(self.output(LabelOut, self._label(self.load_app(), name)))

    @extend_schema(
        description=gettext_lazy('Set or move a label (`PUT {"version": N}`), read it, remove it.'),
        tags=["versions"],
        summary=gettext_lazy("Point the label at a version (creates the label or moves it)"),
        request=LabelIn,
        responses={200: LabelOut, **ERRORS},
    )
    def update(self, request: Request, app_id: int, name: str) -> Response:
        app = self.load_app(edit=True)
        data: dict[str, Any] = self.valid(LabelIn)
        version = _version(app, data["version"])
        versions.label_set(app=app, version=version, name=name, user=request.user)
        return Response(self.output(LabelOut, self._label(app, name)))

    @extend_schema(
        description=gettext_lazy('Set or move a label (`PUT {"version": N}`), read it, remove it.'),
        tags=["versions"],
        responses={204: None, **ERRORS},
    )
    def destroy(self, request: Request, app_id: int, name: str) -> Response:
        app = self.load_app(edit=True)
        self._label(app, name)
        versions.label_delete(app=app, name=name, user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
