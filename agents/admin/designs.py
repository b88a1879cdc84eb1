"""The admin of the design objects: every model of an app, with inlines, search, filters and
constant queries (the records' admins: ``agents.admin.records``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import Count, Model, QuerySet, UniqueConstraint
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.utils import formats
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from agents import services
from agents.admin import writes
from agents.admin.writes import EXPECTED_VERSION, PARENT_FIELD, record
from agents.i18n import localize
from agents.models import (
    Agent,
    AgentApp,
    AppShare,
    Callback,
    Scenario,
    ScenarioStep,
    Schema,
    Tool,
    Variable,
)
from agents.services.common import ServiceError, StaleObjectError, check_version
from server.signin import AdminSignInForm

READONLY = ("created_at", "updated_at", "version")
REFUSAL = "_statecraft_admin_refusal"  # the request's attribute: a save the services refused

admin.site.site_header = _("Statecraft operations")
admin.site.login_form = AdminSignInForm  # failed passwords are throttled (server/signin.py)
admin.site.site_title = _("Statecraft admin")
admin.site.index_title = _("Apps, variables, schemas, tools, agents and scenarios")


class ServiceCheckedForm(forms.ModelForm):
    """Runs the services' checks on the unsaved object, so the admin obeys the designer's rules,
    and carries the version it showed: a form saved after someone else's change is refused.

    Uniqueness is the services' to judge (their messages, not Django's); what a service
    refuses on saving comes back as `refusal` and is shown on the fields it names."""

    check = staticmethod(lambda obj: [])
    refusal: ServiceError | None = None
    expected_version = forms.IntegerField(required=False, min_value=1, widget=forms.HiddenInput)

    def __init__(self, *args: Any, refusal: ServiceError | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if refusal is not None:
            self.refusal = refusal
        if self.instance.pk is not None:
            self.fields[EXPECTED_VERSION].initial = self.instance.version

    def validate_unique(self) -> None:
        """The services check it (and a race is their refusal): one message, theirs."""

    def validate_constraints(self) -> None:
        """The model's checks, but not its unique constraints: those are the services' too
        (a new root agent moves the root, a clash is named in their words). A failed check
        is held back: the rule set's diagnostics (`check`, below) name the field and the fix
        in the designer's words; only a check they do not explain is shown as Django words
        it ("Constraint … is violated")."""
        self.constraint_errors: list[ValidationError] = []
        exclude = self._get_validation_exclusions()
        model = type(self.instance)
        for constraint in model._meta.constraints:
            if isinstance(constraint, UniqueConstraint):
                continue
            try:
                constraint.validate(model, self.instance, exclude=exclude)
            except ValidationError as exc:
                self.constraint_errors.append(exc)

    def _post_clean(self) -> None:
        super()._post_clean()
        refusal = self.refusal
        if refusal is not None and getattr(refusal, "prefix", None) == self.prefix:
            for field, errors in refusal.field_errors().items():
                for message in errors:
                    self.add_error(field if field in self.fields else None, message)
        if self.errors:
            return
        if self.instance.pk is not None:
            try:  # the instance is the row as this request read it
                check_version(self.instance, self.cleaned_data.get(EXPECTED_VERSION))
            except StaleObjectError as exc:
                self.add_error(None, exc.localized())
                return
        explained = False
        for diagnostic in type(self).check(self.instance):
            field = diagnostic.field if diagnostic.field in self.fields else None
            self.add_error(field, localize(diagnostic.message))
            explained = True
        if not explained:
            for exc in getattr(self, "constraint_errors", ()):
                self._update_errors(exc)


def checked_form(model_: type, checker) -> type[forms.ModelForm]:  # type: ignore[no-untyped-def]
    meta = type("Meta", (), {"model": model_, "fields": "__all__"})
    return type(
        f"{model_.__name__}AdminForm",
        (ServiceCheckedForm,),
        {"Meta": meta, "check": staticmethod(checker)},
    )


class VersionedAdmin(admin.ModelAdmin):
    """Adds, changes and deletes go through the services (agents/admin/writes.py): a new
    object is the service's create, a rename rewrites references, a stale form is refused,
    the history records who did it."""

    form = ServiceCheckedForm
    readonly_fields = READONLY

    def get_readonly_fields(self, request: HttpRequest, obj: Model | None = None) -> Any:
        fields = tuple(super().get_readonly_fields(request, obj))
        parent = PARENT_FIELD.get(self.model)
        return (*fields, parent) if obj is not None and parent else fields

    def get_form(self, request: HttpRequest, obj: Model | None = None, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, **kwargs)
        refusal = getattr(request, REFUSAL, None)
        if refusal is None or not issubclass(form, ServiceCheckedForm):
            return form
        return type(form.__name__, (form,), {"refusal": refusal})

    def get_formset_kwargs(self, request, obj, inline, prefix):  # type: ignore[no-untyped-def]
        kwargs = super().get_formset_kwargs(request, obj, inline, prefix)
        refusal = getattr(request, REFUSAL, None)
        if refusal is not None and issubclass(inline.form, ServiceCheckedForm):
            kwargs["form_kwargs"] = {**kwargs.get("form_kwargs", {}), "refusal": refusal}
        return kwargs

    def save_model(self, request: HttpRequest, obj, form, change) -> None:  # type: ignore[no-untyped-def]
        write = writes.save_changed if change else writes.save_new
        if write(request, obj, form):
            return
        if change:
            obj.version += 1
        super().save_model(request, obj, form, change)
        record(request, obj, "change" if change else "add")

    def save_related(self, request: HttpRequest, form, formsets, change) -> None:  # type: ignore[no-untyped-def]
        if self.model in writes.UPDATE:  # the service set the links
            for formset in formsets:
                self.save_formset(request, form, formset, change=change)
            return
        super().save_related(request, form, formsets, change)

    def save_formset(self, request: HttpRequest, form, formset, change) -> None:  # type: ignore[no-untyped-def]
        if writes.save_formset(request, formset):
            return
        super().save_formset(request, form, formset, change)
        if formset.has_changed():
            record(request, form.instance, "change")

    def delete_model(self, request: HttpRequest, obj) -> None:  # type: ignore[no-untyped-def]
        writes.delete(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset) -> None:  # type: ignore[no-untyped-def]
        for obj in queryset:
            writes.delete(request, obj)

    def _refused(self, request: HttpRequest, view: Callable[[], HttpResponse]) -> HttpResponse:
        """A service's refusal (a save raced by another, a root agent deleted) shown as an
        error on the page it came from; the transaction has rolled back."""
        try:
            return view()
        except ServiceError as exc:
            self.message_user(request, exc.localized(), messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):  # type: ignore[no-untyped-def]
        def view() -> HttpResponse:
            return super(VersionedAdmin, self).changeform_view(
                request, object_id, form_url, extra_context
            )

        if request.method == "POST":
            try:
                return view()  # Django's transaction rolls back what a refusal left
            except ServiceError as exc:
                # The same post again, the service's errors on the fields (or row) they name.
                setattr(request, REFUSAL, exc)
        return self._refused(request, view)

    def delete_view(self, request, object_id, extra_context=None):  # type: ignore[no-untyped-def]
        return self._refused(
            request,
            lambda: super(VersionedAdmin, self).delete_view(request, object_id, extra_context),
        )

    def changelist_view(self, request, extra_context=None):  # type: ignore[no-untyped-def]
        return self._refused(
            request, lambda: super(VersionedAdmin, self).changelist_view(request, extra_context)
        )


class VariableInline(admin.TabularInline):
    model = Variable
    form = checked_form(Variable, services.variable_problems)
    extra = 0
    fields = ("name", "type", "item_type", "schema", "default", "description", EXPECTED_VERSION)
    show_change_link = True

    def get_queryset(self, request: HttpRequest) -> QuerySet[Variable]:
        return super().get_queryset(request).select_related("schema")

    def formfield_for_foreignkey(self, db_field, request, **kwargs):  # type: ignore[no-untyped-def]
        if (
            db_field.name == "schema"
            and request.resolver_match
            and "object_id" in request.resolver_match.kwargs
        ):
            kwargs["queryset"] = Schema.objects.filter(
                app_id=request.resolver_match.kwargs["object_id"]
            )
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


class SchemaInline(admin.TabularInline):
    model = Schema
    form = checked_form(Schema, services.schema_problems)
    extra = 0
    fields = ("name", "description", EXPECTED_VERSION)
    show_change_link = True


class ToolInline(admin.TabularInline):
    model = Tool
    form = checked_form(Tool, services.tool_problems)
    extra = 0
    fields = ("name", "kind", "description", "mock_enabled", EXPECTED_VERSION)
    show_change_link = True


class AgentInline(admin.TabularInline):
    model = Agent
    form = checked_form(Agent, services.agent_problems)
    extra = 0
    fields = ("display_name", "is_root", "description", EXPECTED_VERSION)
    show_change_link = True


class AppShareInline(admin.TabularInline):
    model = AppShare
    form = checked_form(AppShare, lambda share: [])
    extra = 0
    fields = ("user", "role", EXPECTED_VERSION)
    autocomplete_fields = ("user",)


@admin.register(AgentApp)
class AgentAppAdmin(VersionedAdmin):
    list_display = ("name", "owner", "variable_count", "agent_count", "tool_count", "updated_at")
    list_select_related = ("owner",)
    list_filter = ("updated_at", "owner")
    search_fields = ("name", "description", "owner__username")
    inlines = (VariableInline, SchemaInline, ToolInline, AgentInline, AppShareInline)
    autocomplete_fields = ("owner",)
    date_hierarchy = "updated_at"
    # The revision counts writes (the key of cached specs, bumped by the history): never typed.
    readonly_fields = (*READONLY, "revision")

    def get_queryset(self, request: HttpRequest) -> QuerySet[AgentApp]:
        return (
            super()
            .get_queryset(request)
            .annotate(
                _variable_count=Count("variables", distinct=True),
                _agent_count=Count("agents", distinct=True),
                _tool_count=Count("tools", distinct=True),
            )
        )

    @admin.display(description=_("variables"), ordering="_variable_count")
    def variable_count(self, obj: AgentApp) -> int:
        return obj._variable_count  # type: ignore[attr-defined]

    @admin.display(description=_("agents"), ordering="_agent_count")
    def agent_count(self, obj: AgentApp) -> int:
        return obj._agent_count  # type: ignore[attr-defined]

    @admin.display(description=_("tools"), ordering="_tool_count")
    def tool_count(self, obj: AgentApp) -> int:
        return obj._tool_count  # type: ignore[attr-defined]


@admin.register(Variable)
class VariableAdmin(VersionedAdmin):
    form = checked_form(Variable, services.variable_problems)
    list_display = ("name", "app", "type", "item_type", "schema", "default", "updated_at")
    list_select_related = ("app", "schema")
    list_filter = ("type", "item_type")
    search_fields = ("name", "description", "app__name")
    autocomplete_fields = ("app", "schema")


@admin.register(Schema)
class SchemaAdmin(VersionedAdmin):
    form = checked_form(Schema, services.schema_problems)
    list_display = ("name", "app", "variable_count", "updated_at")
    list_select_related = ("app",)
    search_fields = ("name", "description", "app__name")
    autocomplete_fields = ("app",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Schema]:
        return super().get_queryset(request).annotate(_variable_count=Count("variables"))

    @admin.display(description=_("used by"), ordering="_variable_count")
    def variable_count(self, obj: Schema) -> int:
        return obj._variable_count  # type: ignore[attr-defined]


@admin.register(Tool)
class ToolAdmin(VersionedAdmin):
    form = checked_form(Tool, services.tool_problems)
    list_display = ("name", "app", "kind", "mock_enabled", "updated_at")
    list_select_related = ("app",)
    list_filter = ("kind", "mock_enabled")
    search_fields = ("name", "description", "app__name")
    autocomplete_fields = ("app",)


class CallbackInline(admin.StackedInline):
    model = Callback
    form = checked_form(Callback, services.callback_problems)
    extra = 0
    fields = ("kind", "order", "code", EXPECTED_VERSION)


@admin.register(Agent)
class AgentAdmin(VersionedAdmin):
    form = checked_form(Agent, services.agent_problems)
    list_display = ("display_name", "app", "is_root", "tool_count", "updated_at")
    list_select_related = ("app",)
    list_filter = ("is_root",)
    search_fields = ("display_name", "description", "instructions", "app__name")
    autocomplete_fields = ("app",)
    filter_horizontal = ("tools", "children")
    inlines = (CallbackInline,)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Agent]:
        return super().get_queryset(request).annotate(_tool_count=Count("tools"))

    @admin.display(description=_("tools"), ordering="_tool_count")
    def tool_count(self, obj: Agent) -> int:
        return obj._tool_count  # type: ignore[attr-defined]


@admin.register(Callback)
class CallbackAdmin(VersionedAdmin):
    form = checked_form(Callback, services.callback_problems)
    list_display = ("__str__", "agent", "kind", "order", "updated_at")
    list_select_related = ("agent", "agent__app")
    list_filter = ("kind",)
    search_fields = ("code", "agent__display_name", "agent__app__name")
    autocomplete_fields = ("agent",)


@admin.register(AppShare)
class AppShareAdmin(VersionedAdmin):
    list_display = ("app", "user", "role", "updated_at")
    list_select_related = ("app", "user")
    list_filter = ("role",)
    search_fields = ("app__name", "user__username")
    autocomplete_fields = ("app", "user")


class ScenarioStepInline(admin.TabularInline):
    model = ScenarioStep
    extra = 0
    fields = (
        "order",
        "kind",
        "text",
        "tool",
        "args",
        "callback_kind",
        "variables",
        "event",
        "expectation",
    )


@admin.register(Scenario)
class ScenarioAdmin(VersionedAdmin):
    list_display = (
        "name",
        "agent",
        "app_name",
        "channel",
        "token_budget",
        "step_count",
        "last_status",
        "last_run",
        "updated_at",
    )
    list_select_related = ("agent", "agent__app", "last_result")
    list_filter = ("channel", "modality", "use_mocks")
    search_fields = ("name", "agent__display_name", "agent__app__name")
    autocomplete_fields = ("agent",)
    inlines = (ScenarioStepInline,)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Scenario]:
        return super().get_queryset(request).annotate(_step_count=Count("steps"))

    @admin.display(description=_("app"), ordering="agent__app__name")
    def app_name(self, obj: Scenario) -> str:
        return obj.agent.app.name

    @admin.display(description=_("steps"), ordering="_step_count")
    def step_count(self, obj: Scenario) -> int:
        return obj._step_count  # type: ignore[attr-defined]

    @admin.display(description=_("last result"), ordering="last_result__status")
    def last_status(self, obj: Scenario) -> str:
        result = getattr(obj, "last_result", None)
        return result.get_status_display() if result is not None else "—"

    @admin.display(description=_("last run"), ordering="last_result__ran_at")
    def last_run(self, obj: Scenario) -> str:
        result = getattr(obj, "last_result", None)
        if result is None:
            return "—"
        return gettext("%(when)s by %(who)s") % {
            "when": formats.date_format(result.ran_at, "SHORT_DATETIME_FORMAT"),
            "who": result.ran_by_name or gettext("a command"),
        }


@admin.register(ScenarioStep)
class ScenarioStepAdmin(VersionedAdmin):
    list_display = ("__str__", "scenario", "kind", "tool", "updated_at")
    list_select_related = ("scenario", "scenario__agent")
    list_filter = ("kind",)
    search_fields = ("text", "tool", "scenario__name")
    autocomplete_fields = ("scenario",)
