"""Designer forms: they parse what a designer types; the services decide what is valid."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.forms.renderers import TemplatesSetting
from django.forms.utils import flatatt
from django.urls import reverse
from django.utils.html import escape, format_html
from django.utils.safestring import mark_safe
from django.utils.text import capfirst
from django.utils.translation import gettext_lazy as _

from agents import i18n
from agents.core import form_text, limits, rules
from agents.core.script import format_script
from agents.core.spec import VariableType as CoreType
from agents.i18n import localize
from agents.models import (
    Agent,
    AgentApp,
    Callback,
    CallbackKind,
    Channel,
    Modality,
    Scenario,
    Schema,
    Tool,
    ToolKind,
    Variable,
    VariableType,
)
from agents.services.common import SCENARIO_FIELDS, TOOL_FIELDS

MAX_ID = rules.MAX_ID


class DesignerBoundField(forms.BoundField):
    """A designer form's field: the attributes of the label (or fieldset) that holds it come
    from its form's `group_attrs` (e.g. the tool kind a field belongs to); a `class` there
    replaces the field template's own."""

    @property
    def group_attrs(self) -> str:
        attrs = getattr(self.form, "group_attrs", {}).get(self.name, {})
        return flatatt({k: v for k, v in attrs.items() if k != "class"})

    @property
    def group_class(self) -> str:
        return getattr(self.form, "group_attrs", {}).get(self.name, {}).get("class", "")


class DesignerFormRenderer(TemplatesSetting):
    """The project's templates render the designer's forms: a field is
    `agents/fields/field.html`, its input inside its label like every inline form's (a
    field may name another template of agents/fields/: a checkbox, a group of them...)."""

    field_template_name = "agents/fields/field.html"
    bound_field_class = DesignerBoundField


class DesignerFormMixin:
    """What the designer's forms share: the project's field template (`as_field_group`),
    errors announced (`role="alert"`) on the fields named in `alert_errors`, attributes of
    a field's label in `group_attrs`, and no `id` attributes: several inline forms can be
    open at once, each input sits in its label."""

    default_renderer = DesignerFormRenderer()
    alert_errors: frozenset[str] = frozenset()
    group_attrs: dict[str, dict[str, str]] = {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("auto_id", False)
        super().__init__(*args, **kwargs)


class InstanceForm(DesignerFormMixin, forms.ModelForm):
    """A ModelForm that shows its `instance` and parses what is typed; it neither writes
    the typed values onto the instance nor checks the model: the services validate and
    save (and name the field), and the instance stays as saved until they do."""

    def _post_clean(self) -> None:
        pass


class TextArea(forms.Textarea):
    """A textarea with only the rows asked for (Django's adds cols="40")."""

    def __init__(self, attrs: dict[str, Any] | None = None) -> None:
        super().__init__(attrs)
        self.attrs.pop("cols", None)


class CodeArea(TextArea):
    """A textarea the page turns into a code editor (`data-code`): the editor hides it, so
    it never carries `required` (a hidden required field would block the submit)."""

    def use_required_attribute(self, initial: Any) -> bool:
        return False


class Checkbox(forms.CheckboxInput):
    """A checkbox that reads "off" (a hidden input's value, or a ticked box's "off") as
    unticked, like "false": Django's own reads every other string as ticked. It sends
    "on" (`value="on"`), ticked or not."""

    def format_value(self, value: Any) -> str:
        return "on"

    def value_from_datadict(self, data: Any, files: Any, name: str) -> bool:
        if name not in data:
            return False
        values = data.getlist(name) if hasattr(data, "getlist") else [data.get(name)]
        return any(str(v).lower() in ("on", "true", "1", "yes") for v in values)


class CheckboxField(forms.BooleanField):
    """A checkbox, its text after it (`agents/fields/check.html`)."""

    widget = Checkbox

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("template_name", "agents/fields/check.html")
        super().__init__(*args, **kwargs)


def _valid_ids(values: Any) -> bool:
    """Primary keys must be integers a database column can hold (not '9' * 400)."""
    items = values if isinstance(values, list | tuple) else [values]
    for item in items:
        if item in ("", None):
            continue
        try:
            number = int(str(item))
        except ValueError:
            return False
        if not 0 < number <= MAX_ID:
            return False
    return True


class IdChoiceField(forms.ModelChoiceField):
    """A model choice that refuses ids no database can hold, instead of crashing the query."""

    def to_python(self, value: Any) -> Any:
        if not _valid_ids(value):
            raise forms.ValidationError(
                self.error_messages["invalid_choice"], code="invalid_choice"
            )
        return super().to_python(value)


class IdMultipleChoiceField(forms.ModelMultipleChoiceField):
    def clean(self, value: Any) -> Any:
        if value and not _valid_ids(list(value)):
            raise forms.ValidationError(
                self.error_messages["invalid_pk_value"] % {"pk": "?"}, code="invalid_pk_value"
            )
        return super().clean(value)


ITEM_TYPES = [c for c in VariableType.choices if c[0] != VariableType.LIST]


def _json_field_value(raw: str, field: str, *, allow_empty: bool = True) -> Any:
    """Parse a JSON text field; an error says where (line, column) and what was expected."""
    if not raw.strip():
        if allow_empty:
            return None
        raise forms.ValidationError(_("Enter JSON here."), code="required")
    try:
        return limits.loads_json(raw)
    except json.JSONDecodeError as exc:
        raise forms.ValidationError(
            _("%(error)s. Check the JSON syntax.")
            % {"error": capfirst(localize(form_text.json_error_message(exc)))},
            code="json",
        ) from exc


def _json_object_value(raw: str, field: str) -> dict[str, Any]:
    """A JSON object field: blank is {}, anything but an object is refused (never made {})."""
    value = _json_field_value(raw, field)
    if value is None:
        return {}
    if not isinstance(value, dict):
        kind = {list: "a list", str: "a string", bool: "true/false"}.get(type(value), "a number")
        raise forms.ValidationError(
            f'Enter one JSON object, e.g. {{"name": "value"}}, or leave it empty; this is {kind}.',
            code="json_object",
        )
    return value


def _noted(label: Any, note: Any) -> str:
    """A label with a muted note after it ("Description (CX Agent Studio requires one...)");
    a note of the catalog that is markup is passed `mark_safe`d."""
    return format_html('{} <span class="muted">{}</span>', label, note)


def _first_field(
    label: Any, *, max_length: int, attrs: dict[str, Any] | None = None
) -> forms.CharField:
    """A form's first field, typed first (`data-autofocus`): a name, a display name."""
    return forms.CharField(
        max_length=max_length,
        strip=True,
        label=label,
        widget=forms.TextInput(attrs={**(attrs or {}), "data-autofocus": True}),
    )


def _name_field(*, placeholder: str, max_length: int = rules.NAME_MAX_LENGTH) -> forms.CharField:
    """The name of a variable or tool: an identifier."""
    return _first_field(
        _("Name"),
        max_length=max_length,
        attrs={"class": "mono", "placeholder": placeholder},
    )


class YesNo(forms.RadioSelect):
    """The yes / no / no default radios of a boolean default: "true" and "false" (typed or
    stored) tick yes and no, anything else "no default"."""

    def format_value(self, value: Any) -> list[str]:
        text = "" if value is None else str(value).strip().lower()
        return [{"yes": "yes", "true": "yes", "no": "no", "false": "no"}.get(text, "")]


class VariableForm(InstanceForm):
    """A variable shown from its instance (`VariableForm(instance=variable, app=app)`): name,
    type and description as typed; the default is typed as text and parsed by type, in a
    widget chosen by the type shown (`default_kind`)."""

    name = _name_field(placeholder="snake_case_name")
    type = forms.ChoiceField(
        choices=VariableType.choices, initial=VariableType.TEXT, label=_("Type")
    )
    item_type = forms.ChoiceField(
        # Blank (no item type) is valid but never offered: a list's items have a type.
        choices=ITEM_TYPES,
        required=False,
        label=_("Items are"),
    )
    schema = IdChoiceField(
        queryset=Schema.objects.none(),
        required=False,
        empty_label=_("— choose a schema —"),
        label=_("Schema"),
    )
    default = forms.CharField(required=False, strip=False)
    description = forms.CharField(required=False, widget=TextArea(attrs={"rows": 2}))
    version = forms.IntegerField(
        required=False, min_value=1, max_value=MAX_ID, widget=forms.HiddenInput
    )
    update_references = CheckboxField(
        required=False,
        initial=True,
        label=_(
            "On rename, update references in every agent's instructions, tool headers and scenarios"
        ),
    )
    update_code = CheckboxField(required=False, initial=True)
    alert_errors = frozenset({"default"})

    class Meta:
        model = Variable
        fields = ["name", "type", "item_type", "schema", "default", "description", "version"]

    def __init__(
        self, *args: Any, app: AgentApp, schemas: list[Schema] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.app = app
        schemas = schemas if schemas is not None else list(app.schemas.all())
        schema = self.fields["schema"]
        schema.queryset = Schema.objects.filter(app=app)
        # The schemas the view loaded already: no query to list them.
        schema.widget.choices = [("", schema.empty_label)] + [(s.pk, s.name) for s in schemas]
        if not schemas:
            schema.help_text = _("No schema yet: add one under Schemas first.")
        variable = self.instance
        if variable.pk:
            self.initial["default"] = form_text.format_form_value(
                variable.default,
                CoreType(variable.type),
                CoreType(variable.item_type) if variable.item_type else None,
                decimal_comma=i18n.decimal_comma(),
            )
            self.fields["update_code"].label = mark_safe(
                _('… and <code>context.state["%(name)s"]</code> in tool and callback code')
                % {"name": escape(variable.name)}
            )
        self.fields["description"].label = _noted(
            _("Description"), _("(CX Agent Studio requires one on export)")
        )
        # Each form on the page has its own uid: the default's input, hint and check.
        self.uid = str((self.data.get("form_uid") if self.is_bound else variable.pk) or "new")
        swap = {
            "hx-get": reverse("variable-default-field", args=[app.pk]),
            "hx-include": "closest form",
            "hx-swap": "outerHTML",
            "hx-trigger": "change",
        }
        self.fields["type"].widget.attrs.update({**swap, "hx-target": "next .default-field"})
        self.fields["item_type"].widget.attrs.update(
            {**swap, "hx-target": "closest .default-field"}
        )
        self._default_widget()

    @property
    def shown_type(self) -> str:
        """The type the form shows: the one typed, else the variable's."""
        return str(self["type"].value() or "")

    @property
    def shows_item_type(self) -> bool:
        return self.shown_type == VariableType.LIST

    @property
    def shows_schema(self) -> bool:
        return self.default_kind == "json"

    @property
    def default_kind(self) -> str:
        """How the default is typed: "boolean" (radios), "json" (a JSON editor, checked
        against the schema), "number", "list" (comma-separated) or "text"."""
        shown = self.shown_type
        if shown == VariableType.BOOLEAN:
            return "boolean"
        if shown == VariableType.OBJECT or (
            shown == VariableType.LIST and self["item_type"].value() == VariableType.OBJECT
        ):
            return "json"
        if shown in (VariableType.NUMBER, VariableType.LIST):
            return str(shown)
        return "text"

    def _default_widget(self) -> None:
        field = self.fields["default"]
        kind, uid = self.default_kind, self.uid
        field.label = _noted(_("Default"), _("(optional)"))
        if kind == "boolean":
            field.widget = YesNo(
                choices=[("yes", _("Yes")), ("no", _("No")), ("", _("No default"))]
            )
            field.template_name = "agents/fields/yes_no.html"
            return
        field.template_name = "agents/fields/default.html"
        attrs: dict[str, Any] = {"id": f"default-{uid}"}
        if kind == "json":
            field.help_text = (
                _("JSON array of objects, checked against the schema as you type.")
                if self.shown_type == VariableType.LIST
                else _("JSON, checked against the schema as you type.")
            )
            field.widget = CodeArea(
                attrs={
                    **attrs,
                    "rows": 5,
                    "class": "mono",
                    "data-code": "json",
                    "placeholder": '{"key": "value"}',
                    "aria-describedby": f"default-hint-{uid} default-check-{uid}",
                    "hx-post": reverse("variable-default-check", args=[self.app.pk]),
                    "hx-trigger": "input changed delay:400ms",
                    "hx-include": "closest form",
                    "hx-target": f"#default-check-{uid}",
                    "hx-swap": "outerHTML",
                }
            )
        elif kind == "number":
            field.widget = forms.TextInput(
                attrs={
                    **attrs,
                    "inputmode": "decimal",
                    "class": "mono",
                    "placeholder": _("e.g. 0, -2.5, 1e3"),
                }
            )
        elif kind == "list":
            item_type = self["item_type"].value()
            if item_type == VariableType.NUMBER:
                # The comma separates the items in every language: a decimal takes a point.
                field.help_text = _(
                    "Comma-separated; in a list a decimal is written with a point (1.5), "
                    "since the comma separates the items."
                )
                placeholder = "1.5, 2, 3"
            elif item_type == VariableType.BOOLEAN:
                field.help_text = _("Comma-separated: yes or no for each item.")
                placeholder = "yes, no, yes"
            else:
                field.help_text = _("Comma-separated; quote an item to keep a comma inside it.")
                placeholder = _('a, b, "c, with comma"')
            field.widget = forms.TextInput(
                attrs={
                    **attrs,
                    "class": "mono",
                    "placeholder": placeholder,
                    "aria-describedby": f"default-hint-{uid}",
                }
            )
        else:
            field.widget = TextArea(attrs={**attrs, "rows": 2})

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        var_type = data.get("type")
        if not var_type:
            return data
        item_type = data.get("item_type") or None
        schema = data.get("schema")
        raw = data.get("default", "")
        parsed = form_text.parse_form_value(
            raw,
            CoreType(var_type),
            item_type=CoreType(item_type) if item_type else None,
            schema=schema.json_schema if schema else None,
            decimal_comma=i18n.decimal_comma(),
            grouping=i18n.number_grouping(),
        )
        for message in parsed.errors:
            self.add_error("default", localize(message))
        data["default_value"] = parsed.value
        return data


class SchemaForm(InstanceForm):
    """A schema shown from its instance (`SchemaForm(instance=schema)`), its JSON indented."""

    json_schema = forms.CharField(
        label=_("JSON Schema (draft 2020-12)"),
        strip=False,
        widget=CodeArea(
            attrs={"rows": 10, "class": "mono", "data-schema-json": True, "data-code": "json"}
        ),
    )
    version = forms.IntegerField(
        required=False, min_value=1, max_value=MAX_ID, widget=forms.HiddenInput
    )
    alert_errors = frozenset({"json_schema"})

    class Meta:
        model = Schema
        fields = ["name", "description", "json_schema", "version"]
        labels = {"name": _("Name"), "description": _("Description")}
        widgets = {
            "name": forms.TextInput(
                attrs={"class": "mono", "data-autofocus": True, "placeholder": _("Customer")}
            ),
            "description": TextArea(attrs={"rows": 2}),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        shown = self.initial.get("json_schema")
        if not isinstance(shown, str):
            self.initial["json_schema"] = json.dumps(shown or {}, indent=2, ensure_ascii=False)

    def clean_json_schema(self) -> Any:
        value = _json_field_value(
            self.cleaned_data["json_schema"], "json_schema", allow_empty=False
        )
        if not isinstance(value, dict):
            raise forms.ValidationError(_('A schema is a JSON object, like {"type": "object"}.'))
        return value


def values_placeholder(app: AgentApp | None) -> str:
    """A JSON object placeholder naming this app's own variables (at most two, each with a
    short value of its type), never another app's."""
    examples = {"text": "text", "number": 1, "boolean": True, "list": [], "object": {}}
    example = {
        variable.name: examples.get(variable.type, "value")
        for variable in (list(app.variables.all())[:2] if app is not None else [])
    }
    return json.dumps(example or {"variable_name": "value"}, ensure_ascii=False)


def _json_text(value: Any) -> str:
    """A JSON field as the form shows it: indented, blank for none or {}."""
    return "" if value in (None, {}) else json.dumps(value, indent=2, ensure_ascii=False)


class ToolForm(InstanceForm):
    """A tool shown from its instance (`ToolForm(instance=tool, app=app)`), its JSON fields
    indented; `line` and `column` open its code there (a problem's "line 3:5")."""

    name = _name_field(placeholder="LookupBalance", max_length=rules.TOOL_NAME_MAX_LENGTH)
    kind = forms.ChoiceField(
        choices=ToolKind.choices,
        initial=ToolKind.PYTHON,
        label=_("Kind"),
        widget=forms.Select(attrs={"data-kind-select": True}),
    )
    description = forms.CharField(
        required=False, label=_("Description"), widget=TextArea(attrs={"rows": 2})
    )
    python_code = forms.CharField(
        required=False,
        strip=False,
        widget=CodeArea(attrs={"rows": 9, "class": "mono", "data-code": "python"}),
    )
    openapi_spec = forms.CharField(
        required=False,
        strip=False,
        label=_("OpenAPI 3 document (one operation)"),
        widget=TextArea(attrs={"rows": 8, "class": "mono"}),
    )
    mcp_url = forms.URLField(
        required=False,
        assume_scheme="https",
        label=_("MCP server URL (Streamable HTTP)"),
        widget=forms.URLInput(attrs={"class": "mono"}),
    )
    mcp_headers = forms.CharField(
        required=False,
        strip=False,
        widget=CodeArea(attrs={"rows": 3, "class": "mono", "data-code": "json"}),
    )
    mock_enabled = CheckboxField(required=False, label=_("Mock in simulation"))
    mock_state = forms.CharField(
        required=False,
        strip=False,
        label=_("State changes (JSON object)"),
        widget=CodeArea(attrs={"rows": 2, "class": "mono", "data-code": "json"}),
    )
    update_references = CheckboxField(required=False, initial=True)
    mock_response = forms.CharField(
        required=False,
        strip=False,
        label=_("Response (JSON)"),
        widget=CodeArea(attrs={"rows": 2, "class": "mono", "data-code": "json"}),
    )
    version = forms.IntegerField(
        required=False, min_value=1, max_value=MAX_ID, widget=forms.HiddenInput
    )
    # The fields of one kind of tool: the page shows those of the kind chosen.
    group_attrs = {
        "python_code": {"data-kind": "python"},
        "openapi_spec": {"data-kind": "openapi"},
        "mcp_url": {"data-kind": "mcp"},
        "mcp_headers": {"data-kind": "mcp"},
        "mock_enabled": {"class": "check"},  # the mock fieldset's legend: its own size
    }

    class Meta:
        model = Tool
        fields = ["name", *TOOL_FIELDS, "version"]

    def __init__(
        self,
        *args: Any,
        app: AgentApp | None = None,
        line: int | None = None,
        column: int = 1,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        for name in ("openapi_spec", "mcp_headers", "mock_state", "mock_response"):
            shown = self.initial.get(name)
            if not isinstance(shown, str):
                self.initial[name] = _json_text(shown)
        fields = self.fields
        fields["update_references"].label = mark_safe(
            _("On rename, update <code>{@TOOL: …}</code> references in every agent's instructions")
        )
        fields["python_code"].label = _noted(
            _("Python code"),
            mark_safe(
                _('(a function named like the tool; <code>context.state["x"] = v</code> updates x)')
            ),
        )
        fields["mcp_headers"].label = mark_safe(
            _("Headers (JSON; values may be <code>$context.variables.name</code>)")
        )
        fields["mock_state"].widget.attrs["placeholder"] = values_placeholder(app)
        if line:
            fields["python_code"].widget.attrs.update({"data-line": line, "data-column": column})

    def clean_openapi_spec(self) -> Any:
        return _json_field_value(self.cleaned_data["openapi_spec"], "openapi_spec")

    def clean_mcp_headers(self) -> Any:
        return _json_object_value(self.cleaned_data["mcp_headers"], "mcp_headers")

    def clean_mock_state(self) -> Any:
        return _json_object_value(self.cleaned_data["mock_state"], "mock_state")

    def clean_mock_response(self) -> Any:
        return _json_field_value(self.cleaned_data["mock_response"], "mock_response")


class AgentForm(InstanceForm):
    """An agent shown from its instance (`AgentForm(instance=agent, app=app)`): the tools it
    may call and the other agents it may hand over to, as checkboxes."""

    display_name = _first_field(_("Display name"), max_length=rules.DISPLAY_NAME_MAX_LENGTH)
    description = forms.CharField(
        required=False, label=_("Description"), widget=TextArea(attrs={"rows": 2})
    )
    is_root = CheckboxField(required=False, label=_("Root agent"))
    tools = IdMultipleChoiceField(
        queryset=Tool.objects.none(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label=_("Tools it may call"),
        help_text=_("No tools in this app yet."),
        template_name="agents/fields/checkboxes.html",
    )
    children = IdMultipleChoiceField(
        queryset=Agent.objects.none(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label=_("Sub-agents it may hand over to"),
        help_text=_("No other agents in this app yet."),
        template_name="agents/fields/checkboxes.html",
    )
    version = forms.IntegerField(
        required=False, min_value=1, max_value=MAX_ID, widget=forms.HiddenInput
    )

    class Meta:
        model = Agent
        fields = ["display_name", "description", "is_root", "tools", "children", "version"]

    def __init__(self, *args: Any, app: AgentApp, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["tools"].queryset = Tool.objects.filter(app=app)
        others = Agent.objects.filter(app=app)
        if self.instance.pk:
            others = others.exclude(pk=self.instance.pk)
        self.fields["children"].queryset = others


class CallbackForm(InstanceForm):
    """A callback shown from its instance (`CallbackForm(instance=callback)`); `line` and
    `column` open its code there (a problem's "line 3:5")."""

    kind = forms.ChoiceField(
        choices=CallbackKind.choices,
        label=_("Runs"),
        widget=forms.Select(attrs={"data-autofocus": True}),
    )
    code = forms.CharField(
        strip=False,
        widget=CodeArea(attrs={"rows": 7, "class": "mono", "data-code": "python"}),
    )
    version = forms.IntegerField(
        required=False, min_value=1, max_value=MAX_ID, widget=forms.HiddenInput
    )

    class Meta:
        model = Callback
        fields = ["kind", "code", "version"]

    def __init__(self, *args: Any, line: int | None = None, column: int = 1, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        code = self.fields["code"]
        code.label = _noted(
            _("Python code"),
            # The catalog's own text, marked up as the template's blocktranslate was.
            mark_safe(
                _(
                    "(a function named <code>&lt;kind&gt;_callback</code>; "
                    '<code>context.state["x"] = v</code> updates x)'
                )
            ),
        )
        if line:
            code.widget.attrs.update({"data-line": line, "data-column": column})


class ScenarioForm(InstanceForm):
    """A scenario shown from its instance (`ScenarioForm(instance=scenario, app=app)`): its
    steps as the script the designer types, its session values as indented JSON."""

    name = _first_field(_("Name"), max_length=rules.SCENARIO_NAME_MAX_LENGTH)
    steps_script = forms.CharField(
        required=False, strip=False, widget=TextArea(attrs={"rows": 7, "class": "mono"})
    )
    session_values = forms.CharField(
        required=False,
        strip=False,
        label=_("Session values (JSON object, overrides defaults)"),
        widget=CodeArea(attrs={"rows": 2, "class": "mono", "data-code": "json"}),
    )
    channel = forms.ChoiceField(
        choices=Channel.choices, initial=rules.SCENARIO_DEFAULTS["channel"], label=_("Channel")
    )
    modality = forms.ChoiceField(
        choices=Modality.choices,
        initial=rules.SCENARIO_DEFAULTS["modality"],
        label=_("Modality"),
    )
    session_id = forms.CharField(
        max_length=rules.SESSION_ID_MAX_LENGTH,
        initial=rules.SCENARIO_DEFAULTS["session_id"],
        label=_("Session id"),
        widget=forms.TextInput(attrs={"class": "mono"}),
    )
    project_id = forms.CharField(
        max_length=rules.PROJECT_ID_MAX_LENGTH,
        initial=rules.SCENARIO_DEFAULTS["project_id"],
        label=_("Project id"),
        widget=forms.TextInput(attrs={"class": "mono"}),
    )
    project_number = forms.CharField(
        max_length=rules.PROJECT_NUMBER_MAX_LENGTH,
        initial=rules.SCENARIO_DEFAULTS["project_number"],
        label=_("Project number"),
        widget=forms.TextInput(attrs={"class": "mono"}),
    )
    location = forms.CharField(
        max_length=rules.LOCATION_MAX_LENGTH,
        initial=rules.SCENARIO_DEFAULTS["location"],
        label=_("Location"),
        widget=forms.TextInput(attrs={"class": "mono"}),
    )
    now = forms.CharField(
        max_length=rules.NOW_MAX_LENGTH,
        required=False,
        label=_("Clock (now)"),
        # What the field means is its title (a hint under it would break the grid's rows).
        widget=forms.TextInput(
            attrs={
                "class": "mono",
                "placeholder": _("real clock — e.g. 2026-06-01T12:00:00"),
                "title": _(
                    "What the tools and callbacks read as now: datetime.date.today(), "
                    "datetime.datetime.now(), time.time()"
                ),
            }
        ),
    )
    token_budget = forms.IntegerField(
        min_value=1,
        max_value=rules.TOKEN_BUDGET_MAX,
        initial=rules.SCENARIO_DEFAULTS["token_budget"],
        label=_("Context window (tokens)"),
    )
    use_mocks = CheckboxField(required=False, label=_("Use tool mocks"))
    version = forms.IntegerField(
        required=False, min_value=1, max_value=MAX_ID, widget=forms.HiddenInput
    )

    class Meta:
        model = Scenario
        fields = [*SCENARIO_FIELDS, "version"]  # the steps' script is the form's own

    def __init__(self, *args: Any, app: AgentApp | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        scenario = self.instance
        if scenario.pk:
            self.initial.setdefault(
                "steps_script", format_script(tuple(s.to_spec() for s in scenario.steps.all()))
            )
        shown = self.initial.get("session_values")
        if not isinstance(shown, str):
            self.initial["session_values"] = _json_text(shown)
        self.fields["steps_script"].label = mark_safe(
            _(
                "Steps — one per line: <code>user:</code>, <code>agent:</code>, "
                '<code>tool: Name {"arg": 1}</code>, <code>callback: before_model</code>; '
                'goldens: <code>expect state: {"total": 39}</code>, '
                '<code>expect call: Name {"arg": 1}</code>, '
                "<code>expect response: Name {…}</code>, <code>expect no calls</code>, "
                "<code>expect transfer: Agent</code>, <code>expect agent: text</code> "
                "(a note in brackets: <code>expect state [Check_Total]: …</code>), "
                "<code>mock: Name {…}</code>, <code>variables: {…}</code> before a "
                "<code>user:</code> line"
            )
        )
        self.fields["session_values"].widget.attrs["placeholder"] = values_placeholder(app)

    def clean_session_values(self) -> Any:
        return _json_object_value(self.cleaned_data["session_values"], "session_values")
