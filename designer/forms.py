"""Designer forms: they parse what a designer types; the services decide what is valid."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.forms.renderers import TemplatesSetting
from django.utils.html import format_html
from django.utils.safestring import mark_safe
from django.utils.translation import gettext_lazy as _

from agents import i18n
from agents.core import form_text, rules
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

MAX_ID = rules.MAX_ID


class DesignerFormRenderer(TemplatesSetting):
    """The project's templates render the designer's forms: a field is
    `agents/fields/field.html`, its input inside its label like every inline form's."""

    field_template_name = "agents/fields/field.html"


class DesignerFormMixin:
    """What the designer's forms share: the project's field template (`as_field_group`),
    errors announced (`role="alert"`) on the fields named in `alert_errors`, and no `id`
    attributes: several inline forms can be open at once, each input sits in its label."""

    default_renderer = DesignerFormRenderer()
    alert_errors: frozenset[str] = frozenset()

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
    unticked, like "false": Django's own reads every other string as ticked."""

    def value_from_datadict(self, data: Any, files: Any, name: str) -> bool:
        if name not in data:
            return False
        values = data.getlist(name) if hasattr(data, "getlist") else [data.get(name)]
        return any(str(v).lower() in ("on", "true", "1", "yes") for v in values)


class CheckboxField(forms.BooleanField):
    widget = Checkbox


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


ITEM_TYPE_CHOICES = [("", "—")] + [c for c in VariableType.choices if c[0] != VariableType.LIST]


def _json_field_value(raw: str, field: str, *, allow_empty: bool = True) -> Any:
    """Parse a JSON text field; an error says where (line, column) and what was expected."""
    if not raw.strip():
        if allow_empty:
            return None
        raise forms.ValidationError(_("Enter JSON here."), code="required")
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise forms.ValidationError(
            _("Line %(line)s, column %(column)s: %(error)s. Check the JSON syntax.")
            % {"line": exc.lineno, "column": exc.colno, "error": exc.msg},
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


class VariableForm(forms.Form):
    """Name, type and description as typed; the default is typed as text and parsed by type."""

    name = forms.CharField(max_length=rules.NAME_MAX_LENGTH, strip=True)
    type = forms.ChoiceField(choices=VariableType.choices, initial=VariableType.TEXT)
    item_type = forms.ChoiceField(choices=ITEM_TYPE_CHOICES, required=False)
    schema = IdChoiceField(queryset=Schema.objects.none(), required=False, empty_label="—")
    default = forms.CharField(required=False, strip=False)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    version = forms.IntegerField(
        required=False, min_value=1, max_value=MAX_ID, widget=forms.HiddenInput
    )
    update_references = CheckboxField(required=False, initial=True)
    update_code = CheckboxField(required=False, initial=True)

    def __init__(
        self, *args: Any, app: AgentApp, schemas: list[Schema] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.app = app
        self.fields["schema"].queryset = Schema.objects.filter(app=app)
        self.schema_list = schemas if schemas is not None else list(app.schemas.all())

    @classmethod
    def for_variable(
        cls, variable: Variable, *, app: AgentApp, schemas: list[Schema] | None = None
    ) -> VariableForm:
        return cls(
            app=app,
            schemas=schemas,
            initial={
                "name": variable.name,
                "type": variable.type,
                "item_type": variable.item_type,
                "schema": variable.schema_id,
                "default": form_text.format_form_value(
                    variable.default,
                    CoreType(variable.type),
                    CoreType(variable.item_type) if variable.item_type else None,
                    decimal_comma=i18n.decimal_comma(),
                ),
                "description": variable.description,
                "version": variable.version,
            },
        )

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


class ToolForm(forms.Form):
    name = forms.CharField(max_length=rules.NAME_MAX_LENGTH, strip=True)
    kind = forms.ChoiceField(choices=ToolKind.choices, initial=ToolKind.PYTHON)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    python_code = forms.CharField(
        required=False, strip=False, widget=forms.Textarea(attrs={"rows": 10})
    )
    openapi_spec = forms.CharField(
        required=False, strip=False, widget=forms.Textarea(attrs={"rows": 10})
    )
    mcp_url = forms.URLField(required=False, assume_scheme="https")
    mcp_headers = forms.CharField(
        required=False, strip=False, widget=forms.Textarea(attrs={"rows": 3})
    )
    mock_enabled = CheckboxField(required=False)
    mock_state = forms.CharField(
        required=False, strip=False, widget=forms.Textarea(attrs={"rows": 3})
    )
    update_references = CheckboxField(required=False, initial=True)
    mock_response = forms.CharField(
        required=False, strip=False, widget=forms.Textarea(attrs={"rows": 3})
    )
    version = forms.IntegerField(
        required=False, min_value=1, max_value=MAX_ID, widget=forms.HiddenInput
    )

    @classmethod
    def for_tool(cls, tool: Tool) -> ToolForm:
        def dump(value: Any) -> str:
            return "" if value in (None, {}) else json.dumps(value, indent=2, ensure_ascii=False)

        return cls(
            initial={
                "name": tool.name,
                "kind": tool.kind,
                "description": tool.description,
                "python_code": tool.python_code,
                "openapi_spec": dump(tool.openapi_spec),
                "mcp_url": tool.mcp_url,
                "mcp_headers": dump(tool.mcp_headers),
                "mock_enabled": tool.mock_enabled,
                "mock_state": dump(tool.mock_state),
                "mock_response": dump(tool.mock_response),
                "update_references": True,
                "version": tool.version,
            }
        )

    def clean_openapi_spec(self) -> Any:
        return _json_field_value(self.cleaned_data["openapi_spec"], "openapi_spec")

    def clean_mcp_headers(self) -> Any:
        return _json_object_value(self.cleaned_data["mcp_headers"], "mcp_headers")

    def clean_mock_state(self) -> Any:
        return _json_object_value(self.cleaned_data["mock_state"], "mock_state")

    def clean_mock_response(self) -> Any:
        return _json_field_value(self.cleaned_data["mock_response"], "mock_response")


class AgentForm(forms.Form):
    display_name = forms.CharField(max_length=rules.DISPLAY_NAME_MAX_LENGTH, strip=True)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    is_root = CheckboxField(required=False)
    tools = IdMultipleChoiceField(
        queryset=Tool.objects.none(), required=False, widget=forms.CheckboxSelectMultiple
    )
    children = IdMultipleChoiceField(
        queryset=Agent.objects.none(), required=False, widget=forms.CheckboxSelectMultiple
    )
    version = forms.IntegerField(
        required=False, min_value=1, max_value=MAX_ID, widget=forms.HiddenInput
    )

    def __init__(
        self, *args: Any, app: AgentApp, agent: Agent | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.fields["tools"].queryset = Tool.objects.filter(app=app)
        others = Agent.objects.filter(app=app)
        if agent is not None:
            others = others.exclude(pk=agent.pk)
        self.fields["children"].queryset = others

    @classmethod
    def for_agent(cls, agent: Agent, *, app: AgentApp) -> AgentForm:
        return cls(
            app=app,
            agent=agent,
            initial={
                "display_name": agent.display_name,
                "description": agent.description,
                "is_root": agent.is_root,
                "tools": [t.pk for t in agent.tools.all()],
                "children": [c.pk for c in agent.children.all()],
                "version": agent.version,
            },
        )


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
        code.label = format_html(
            '{} <span class="muted">{}</span>',
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


class ScenarioForm(forms.Form):
    name = forms.CharField(max_length=rules.SCENARIO_NAME_MAX_LENGTH, strip=True)
    steps_script = forms.CharField(
        required=False, strip=False, widget=forms.Textarea(attrs={"rows": 8})
    )
    session_values = forms.CharField(
        required=False, strip=False, widget=forms.Textarea(attrs={"rows": 3})
    )
    channel = forms.ChoiceField(choices=Channel.choices, initial=rules.SCENARIO_DEFAULTS["channel"])
    modality = forms.ChoiceField(
        choices=Modality.choices, initial=rules.SCENARIO_DEFAULTS["modality"]
    )
    session_id = forms.CharField(
        max_length=rules.SESSION_ID_MAX_LENGTH, initial=rules.SCENARIO_DEFAULTS["session_id"]
    )
    project_id = forms.CharField(
        max_length=rules.PROJECT_ID_MAX_LENGTH, initial=rules.SCENARIO_DEFAULTS["project_id"]
    )
    project_number = forms.CharField(
        max_length=rules.PROJECT_NUMBER_MAX_LENGTH,
        initial=rules.SCENARIO_DEFAULTS["project_number"],
    )
    location = forms.CharField(
        max_length=rules.LOCATION_MAX_LENGTH, initial=rules.SCENARIO_DEFAULTS["location"]
    )
    now = forms.CharField(
        max_length=rules.NOW_MAX_LENGTH,
        required=False,
        help_text=_("The clock the code reads, like 2026-06-01T12:00:00 (empty: the real clock)."),
    )
    token_budget = forms.IntegerField(
        min_value=1,
        max_value=rules.TOKEN_BUDGET_MAX,
        initial=rules.SCENARIO_DEFAULTS["token_budget"],
    )
    use_mocks = CheckboxField(required=False)
    version = forms.IntegerField(
        required=False, min_value=1, max_value=MAX_ID, widget=forms.HiddenInput
    )

    @classmethod
    def for_scenario(cls, scenario: Scenario) -> ScenarioForm:
        return cls(
            initial={
                "name": scenario.name,
                "steps_script": format_script(tuple(s.to_spec() for s in scenario.steps.all())),
                "session_values": json.dumps(scenario.session_values, indent=2, ensure_ascii=False)
                if scenario.session_values
                else "",
                "channel": scenario.channel,
                "modality": scenario.modality,
                "session_id": scenario.session_id,
                "project_id": scenario.project_id,
                "project_number": scenario.project_number,
                "location": scenario.location,
                "now": scenario.now,
                "token_budget": scenario.token_budget,
                "use_mocks": scenario.use_mocks,
                "version": scenario.version,
            }
        )

    def clean_session_values(self) -> Any:
        return _json_object_value(self.cleaned_data["session_values"], "session_values")
