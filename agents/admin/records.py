"""The operators' admin for the records Statecraft keeps: versions and labels, the audit
trail, scenario results, live models and runs, jobs. Read-only except the model endpoints
and the apps' default models; registered when `agents.admin` is imported (autodiscovery).
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import Model, QuerySet
from django.http import HttpRequest
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from agents.core.formats import dumps_native
from agents.i18n import action_words, localize, word
from agents.models import (
    AppLabel,
    AppModelDefault,
    AppVersion,
    AuditEvent,
    Job,
    LiveRun,
    ModelEndpoint,
    ScenarioResult,
    WorkerHeartbeat,
)
from agents.models.audit import object_name_shown
from agents.services import versions

# ---------------------------------------------------------------- versions and labels


def json_shown(value: Any) -> str:
    """A JSON column as readable JSON (indented, the reader's characters kept), escaped: the
    admin's own rendering of a read-only JSON field is Python's repr (`{'a': None}`)."""
    if value in (None, "", [], {}):
        return "-"
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    return format_html('<pre class="admin-json" tabindex="0">{}</pre>', text)


def _changelist(request: HttpRequest) -> bool:
    match = request.resolver_match
    return bool(match and match.url_name and match.url_name.endswith("changelist"))


class ReadOnlyAdmin(admin.ModelAdmin):
    """Visible and searchable, never edited here: versions are immutable, labels move in the app."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    # Viewing needs the model's view (or change) permission, as everywhere in the admin:
    # being staff is not enough to read every app's documents, history and results.


@admin.register(AppVersion)
class AppVersionAdmin(ReadOnlyAdmin):
    list_display = ("app", "number", "name", "created_by", "created_at", "label_names")
    list_select_related = ("app", "created_by")
    search_fields = ("name", "note", "app__name", "created_by__username")
    list_filter = ("created_at",)
    fields = ("app", "number", "name", "note", "created_by", "created_at", "document_text")
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[AppVersion]:
        # The list never loads the (possibly large) documents.
        queryset = super().get_queryset(request).prefetch_related("labels")
        return (
            queryset.defer("document")
            if request.resolver_match.url_name.endswith("changelist")
            else queryset
        )

    @admin.display(description=_("labels"))
    def label_names(self, version: AppVersion) -> str:
        return ", ".join(label.name for label in version.labels.all()) or "—"

    @admin.display(description=_("document"))
    def document_text(self, version: AppVersion) -> str:
        return dumps_native(version.document)

    def has_delete_permission(self, request: HttpRequest, obj: AppVersion | None = None) -> bool:
        # Staff, or the owner of the version's app (the designer offers the same to owners).
        if request.user.is_staff and request.user.has_perm("agents.delete_appversion"):
            return True
        return obj is not None and obj.app.owner_id == request.user.pk

    def delete_model(self, request: HttpRequest, obj: AppVersion) -> None:
        versions.version_delete(version=obj, user=request.user)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[AppVersion]) -> None:
        for version in queryset:
            versions.version_delete(version=version, user=request.user)


@admin.register(AppLabel)
class AppLabelAdmin(ReadOnlyAdmin):
    list_display = ("app", "name", "version_shown", "moved_by", "updated_at")
    list_select_related = ("app", "version", "moved_by")
    search_fields = ("name", "app__name", "version__name")
    fields = ("app", "name", "version_shown", "moved_by", "created_at", "updated_at")
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[AppLabel]:
        return super().get_queryset(request).defer("version__document")

    @admin.display(description=_("version"))
    def version_shown(self, label: AppLabel) -> str:
        return f"v{label.version.number} · {label.version.name}"


class _WordsFilter(admin.SimpleListFilter):
    """A filter on an identifier column that shows each value as a word of the language."""

    words = staticmethod(word)

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple]:
        values = model_admin.get_queryset(request).values_list(self.parameter_name, flat=True)
        return [(v, self.words(v)) for v in sorted(set(values))]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        value = self.value()
        return queryset.filter(**{self.parameter_name: value}) if value else queryset


class ObjectTypeFilter(_WordsFilter):
    title = _("object type")
    parameter_name = "object_type"


class ActionFilter(_WordsFilter):
    title = _("action")
    parameter_name = "action"
    words = staticmethod(action_words)


class JobKindFilter(_WordsFilter):
    title = _("kind")
    parameter_name = "kind"

    @staticmethod
    def words(kind: str) -> str:
        from agents.services.jobs import job_kind_label

        return job_kind_label(kind)


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    """The history of every app: read-only, searchable by app, user, action and object."""

    list_display = ("created_at", "app_name", "actor_name", "action_shown", "object_shown")

    @admin.display(description=_("action"), ordering="action")
    def action_shown(self, event: AuditEvent) -> str:
        return action_words(event.action)

    @admin.display(description=_("object name"), ordering="object_name")
    def object_shown(self, event: AuditEvent) -> str:
        return object_name_shown(event.object_name)

    list_filter = (ObjectTypeFilter, ActionFilter, "created_at")
    search_fields = ("app_name", "actor_name", "action", "object_name")
    date_hierarchy = "created_at"
    readonly_fields = (
        "created_at",
        "app",
        "app_name",
        "actor",
        "actor_name",
        "action",
        "object_type",
        "object_name",
        "before_shown",
        "after_shown",
    )
    fields = readonly_fields

    @admin.display(description=_("before"))
    def before_shown(self, event: AuditEvent) -> str:
        return json_shown(event.before)

    @admin.display(description=_("after"))
    def after_shown(self, event: AuditEvent) -> str:
        return json_shown(event.after)

    def get_queryset(self, request: HttpRequest) -> QuerySet[AuditEvent]:
        queryset = super().get_queryset(request)  # the list shows neither side of a change
        return queryset.defer("before", "after") if _changelist(request) else queryset

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False  # append-only, for superusers too


@admin.register(ScenarioResult)
class ScenarioResultAdmin(ReadOnlyAdmin):
    """The last evaluation of each scenario (manage.py evaluate, the API, the designer)."""

    list_display = (
        "scenario",
        "app_name",
        "status",
        "passed",
        "failed",
        "needs_model",
        "ran_by_name",
        "ran_at",
    )
    list_select_related = ("scenario", "scenario__agent", "scenario__agent__app")
    list_filter = ("status", "ran_at")
    search_fields = ("scenario__name", "scenario__agent__app__name", "ran_by_name")
    fields = (
        "scenario",
        "status",
        "passed",
        "failed",
        "needs_model",
        "app_revision",
        "ran_by_name",
        "ran_at",
        "results",
    )
    readonly_fields = fields

    @admin.display(description=_("app"), ordering="scenario__agent__app__name")
    def app_name(self, obj: ScenarioResult) -> str:
        return obj.scenario.agent.app.name

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class ModelEndpointForm(forms.ModelForm):
    """The key is typed once and stored encrypted; the form never shows it again."""

    api_key = forms.CharField(
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        label=_("API key"),
        help_text=_(
            "Stored encrypted (docs: /docs/designer/live-models/). Leave empty to keep the "
            "stored key; tick 'Remove the key' to delete it. Changing the kind, base URL, "
            "Vertex AI, project or location clears the stored key: type it again."
        ),
    )
    remove_key = forms.BooleanField(required=False, label=_("Remove the key"))

    class Meta:
        model = ModelEndpoint
        fields = (
            "name",
            "kind",
            "model",
            "base_url",
            "vertex",
            "project",
            "location",
            "timeout",
            "max_retries",
            "price_in",
            "price_out",
            "max_concurrent",
            "requests_per_minute",
            "tokens_per_minute",
            "enabled",
        )
        help_texts = {
            "vertex": _(
                "Gemini through Vertex AI: with a project, this machine's Google credentials "
                "(GOOGLE_APPLICATION_CREDENTIALS); with an API key and no project, express "
                "mode."
            ),
        }

    def clean(self) -> dict:
        """What a client could not run with, refused on the field it is about (the
        service's full_clean runs after the form: an error there would be a 500)."""
        data = super().clean()
        kind, vertex = data.get("kind"), data.get("vertex")
        project, location = data.get("project"), data.get("location")
        # A stored key is bound to where it is sent: kind, URL, Vertex, project, location
        # changed without the key typed again, the key is cleared on save.
        from agents.services.live_models import KEY_BINDING

        rebound = bool(set(self.changed_data) & set(KEY_BINDING))
        stored = bool(self.instance.pk and self.instance.has_key and not rebound)
        key = bool(data.get("api_key")) or (stored and not data.get("remove_key"))
        if vertex and kind != "gemini":
            self.add_error("vertex", _("Only a Gemini endpoint runs on Vertex AI."))
        elif vertex and not project and not key:
            self.add_error(
                "project",
                _("Vertex AI needs the Google Cloud project, or an API key for express mode."),
            )
        elif vertex and (project or location) and key:
            self.add_error(
                "project",
                _(
                    "Vertex AI takes a project (Google credentials) or an API key (express "
                    "mode), not both: remove one."
                ),
            )
        elif kind == "gemini" and not vertex and (project or location):
            self.add_error(
                "project",
                _("The Gemini API takes no project or location: tick Vertex AI, or clear them."),
            )
        elif kind == "gemini" and not vertex and not key:
            self.add_error("api_key", _("A Gemini API endpoint needs its API key."))
        return data


@admin.register(ModelEndpoint)
class ModelEndpointAdmin(admin.ModelAdmin):
    """Models designers can run live (besides STATECRAFT_MODELS). Keys: write-only."""

    form = ModelEndpointForm
    list_display = ("name", "kind", "model", "url_shown", "key_set", "enabled", "updated_at")
    list_filter = ("kind", "enabled")
    # Not the base URL: a search would tell what a password in it starts with.
    search_fields = ("name", "model")
    fields = (*ModelEndpointForm.Meta.fields, "api_key", "remove_key", "key_set")
    readonly_fields = ("key_set",)

    def changelist_view(self, request: HttpRequest, extra_context: dict | None = None) -> Any:
        """The list, with the environment's endpoints (``STATECRAFT_MODELS``) above it,
        read-only and marked as such; a bad value is its message, never a 500."""
        from agents.llm.endpoints import ConfigError
        from agents.services.live_models import env_endpoints

        context: dict[str, Any] = dict(extra_context or {})
        try:
            found = env_endpoints()
        except ConfigError as exc:
            context["env_endpoints_error"] = localize(exc.message)
            found = {}
        admin_names = set(ModelEndpoint.objects.values_list("name", flat=True))
        context["env_endpoints"] = [
            {
                **endpoint.describe(),
                "api_key_env": endpoint.api_key_env,
                "shadows": name in admin_names,
            }
            for name, endpoint in sorted(found.items())
        ]
        return super().changelist_view(request, extra_context=context)

    @admin.display(description=_("base url"), ordering="base_url")
    def url_shown(self, obj: ModelEndpoint) -> str:
        """The base URL without a user or password in it (never in a list)."""
        from agents.llm.masking import redact_url

        return redact_url(obj.base_url)

    @admin.display(description=_("key"), boolean=True)
    def key_set(self, obj: ModelEndpoint) -> bool:
        return bool(obj and obj.has_key)

    def save_model(self, request: HttpRequest, obj: Model, form: forms.Form, change: bool) -> None:
        from agents.services.live_models import endpoint_save

        data = form.cleaned_data
        key = "" if data.get("remove_key") else (data.get("api_key") or None)
        endpoint_save(endpoint=obj, api_key=key)  # type: ignore[arg-type]


LIVE_RUN_BIG = ("script", "calls", "drift", "evaluation", "timeline", "final_state", "diagnostics")
APP_BIG = ("app__cx", "app__description")


@admin.register(LiveRun)
class LiveRunAdmin(ReadOnlyAdmin):
    """Every live run and replay: model calls, tokens, cost, drift."""

    list_display = (
        "scenario_name",
        "app",
        "model_name",
        "mode",
        "status",
        "error",
        "model_calls",
        "tokens_in",
        "tokens_out",
        "cost",
        "created_at",
    )
    list_select_related = ("app",)
    list_filter = ("mode", "status", "model_name", "created_at")
    search_fields = ("scenario_name", "app__name", "model_name")
    fields = (
        "app",
        "scenario",
        "scenario_name",
        "agent_name",
        "model_name",
        "mode",
        "replay_of",
        "status",
        "error",
        "model_calls",
        "tokens_in",
        "tokens_out",
        "cost",
        "retries",
        "ran_by_name",
        "created_at",
        "script",
        "drift_shown",
        "evaluation_shown",
        "calls_shown",
    )
    readonly_fields = fields

    @admin.display(description=_("drift"))
    def drift_shown(self, run: LiveRun) -> str:
        return json_shown(run.drift)

    @admin.display(description=_("evaluation"))
    def evaluation_shown(self, run: LiveRun) -> str:
        return json_shown(run.evaluation)

    @admin.display(description=_("calls"))
    def calls_shown(self, run: LiveRun) -> str:
        return json_shown(run.calls)

    def get_queryset(self, request: HttpRequest) -> QuerySet[LiveRun]:
        # The list loaded every run's recording (each call's whole request: the system
        # instruction and the history), its timeline and state, and each app's CX JSON:
        # megabytes for a page of 100 rows. It shows none of them.
        queryset = super().get_queryset(request)
        if not _changelist(request):
            return queryset
        return queryset.select_related("app").defer(*LIVE_RUN_BIG, *APP_BIG)


class AppModelDefaultForm(forms.ModelForm):
    class Meta:
        model = AppModelDefault
        fields = ("app", "model")

    def clean_model(self) -> str:
        from agents.services.common import ServiceError
        from agents.services.live_models import endpoints

        name = self.cleaned_data["model"].strip()
        try:
            known = endpoints()
        except ServiceError as exc:
            raise forms.ValidationError(
                "; ".join(localize(d.message) for d in exc.diagnostics)
            ) from None
        if name not in known:
            names = ", ".join(sorted(known)) or _("none configured")
            raise forms.ValidationError(
                _("No model named %(name)s (configured: %(names)s).")
                % {"name": repr(name), "names": names}
            )
        return name


@admin.register(AppModelDefault)
class AppModelDefaultAdmin(admin.ModelAdmin):
    """The model an app's live runs use when a run names none (a configured name)."""

    form = AppModelDefaultForm

    list_display = ("app", "model", "updated_at")
    list_select_related = ("app",)
    search_fields = ("app__name", "model")
    raw_id_fields = ("app",)

    def save_model(self, request: HttpRequest, obj: Model, form: forms.Form, change: bool) -> None:
        from agents.services.live_models import app_model_set

        app_model_set(app=obj.app, model=obj.model)  # type: ignore[attr-defined]


@admin.register(Job)
class JobAdmin(ReadOnlyAdmin):
    """Every job (docs/operations/jobs.md): who submitted it, its status, progress and error."""

    list_display = (
        "id",
        "kind_shown",
        "app",
        "owner",
        "status",
        "progress_done",
        "progress_total",
        "attempts",
        "worker",
        "created_at",
        "finished_at",
    )
    list_select_related = ("app", "owner")
    list_filter = ("status", JobKindFilter, "created_at")

    @admin.display(description=_("kind"), ordering="kind")
    def kind_shown(self, job: Job) -> str:
        from agents.services.jobs import job_kind_label

        return job_kind_label(job.kind)

    search_fields = ("id", "app__name", "owner__username", "error")
    readonly_fields = fields = (
        "id",
        "kind",
        "app",
        "owner",
        "status",
        "params",
        "caps",
        "progress_done",
        "progress_total",
        "current",
        "error",
        "attempts",
        "worker",
        "task_id",
        "created_at",
        "started_at",
        "finished_at",
        "heartbeat_at",
        "result",
    )

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(WorkerHeartbeat)
class WorkerHeartbeatAdmin(ReadOnlyAdmin):
    """The job workers and their last heartbeat (docs/operations/production.md): one seen in
    the last minute takes work; none seen, queued jobs wait (start `make worker`)."""

    list_display = ("worker", "queue", "seen", "seen_at", "started_at", "stopped")
    list_filter = ("queue", "stopped")
    search_fields = ("worker",)
    readonly_fields = fields = ("worker", "queue", "started_at", "seen_at", "stopped")

    @admin.display(description=_("seen in the last minute"), boolean=True)
    def seen(self, row: WorkerHeartbeat) -> bool:
        from datetime import timedelta

        from django.utils import timezone

        from agents.services.jobs import WORKER_SEEN_SECONDS

        recent = row.seen_at >= timezone.now() - timedelta(seconds=WORKER_SEEN_SECONDS)
        return recent and not row.stopped

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return request.user.is_superuser  # a long-gone worker's row may be cleared


# The database queue's own rows (django-tasks-db) are the workers' bookkeeping: operators
# read jobs as `Job` rows above (status, progress, error), in their language; the queue's
# admin (English-only, a second view of the same work) is left out.
# django-rq's dashboard (English, its own templates) shows only when RQ is the queue
# (TASKS_BACKEND=rq): with the database queue it would be an empty, untranslated section.
def _hide_task_queue_admin() -> None:
    from django.conf import settings
    from django_rq.models import Dashboard
    from django_tasks_db.models import DBTaskResult

    if admin.site.is_registered(DBTaskResult):
        admin.site.unregister(DBTaskResult)
    if settings.TASKS_BACKEND != "rq" and admin.site.is_registered(Dashboard):
        admin.site.unregister(Dashboard)


_hide_task_queue_admin()
