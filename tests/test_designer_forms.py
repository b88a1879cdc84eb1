"""The designer's variable, tool, agent and scenario forms: each shows its instance
(`Form(instance=…)`), and Django renders its fields through the project's field templates
(labels, errors, `aria-invalid`), the variable's default in the widget its type needs."""

from __future__ import annotations

import pytest
from django.utils import translation

from agents import services
from designer.forms import AgentForm, ScenarioForm, ToolForm, VariableForm

pytestmark = pytest.mark.django_db


@pytest.fixture
def app(user):
    app = services.app_create(owner=user, name="Forms")
    traveller = services.schema_create(
        app=app, name="Traveller", json_schema={"type": "object", "properties": {}}
    )
    services.variable_create(app=app, name="ratio", type="number", default=1.5)
    services.variable_create(
        app=app, name="cities", type="list", item_type="text", default=["Paris", "Rome, Lazio"]
    )
    services.variable_create(app=app, name="who", type="object", schema=traveller, default={})
    return app


def test_each_form_shows_its_instance(app):
    ratio = app.variables.get(name="ratio")
    with translation.override("fr"):
        assert VariableForm(instance=ratio, app=app)["default"].value() == "1,5"
    cities = VariableForm(instance=app.variables.get(name="cities"), app=app)
    assert cities["default"].value() == 'Paris, "Rome, Lazio"'
    tool = services.tool_create(app=app, name="Lookup", mock_state={"ratio": 2})
    shown = ToolForm(instance=tool, app=app)
    assert shown["mock_state"].value() == '{\n  "ratio": 2\n}'
    assert shown["mcp_headers"].value() == "" and shown["name"].value() == "Lookup"
    root = app.agents.get()
    helper = services.agent_create(app=app, display_name="Helper", tools=[tool])
    agent_form = AgentForm(instance=helper, app=app)
    assert agent_form["tools"].value() == [tool.pk]
    assert [value for value, _label in agent_form.fields["children"].choices] == [root.pk]
    scenario = services.scenario_save(
        agent=root, name="One", steps_script="user: hi\n", session_values={"ratio": 3}
    )
    scenario_form = ScenarioForm(instance=scenario, app=app)
    assert scenario_form["steps_script"].value() == "user: hi"
    assert scenario_form["session_values"].value() == '{\n  "ratio": 3\n}'


@pytest.mark.parametrize(
    ("data", "wanted", "unwanted"),
    [
        ({"type": "text"}, ['<textarea name="default" rows="2" id="default-new">'], ["hint"]),
        ({"type": "number"}, ['inputmode="decimal"', 'id="default-new"'], ["<textarea"]),
        (
            {"type": "list", "item_type": "text"},
            ['aria-describedby="default-hint-new"', 'id="default-hint-new"'],
            ["hx-post"],
        ),
        (
            {"type": "object"},
            ['data-code="json"', "hx-post=", 'id="default-check-new"', "JSON, checked"],
            ['type="radio"'],
        ),
        (
            {"type": "boolean", "default": "true"},
            ['role="radiogroup"', 'value="yes" checked'],
            ["<textarea", 'id="default-new"'],
        ),
    ],
)
def test_the_default_widget_follows_the_type_shown(app, data, wanted, unwanted):
    form = VariableForm({"name": "x", "form_uid": "new", **data}, app=app)
    html = str(form["default"].as_field_group())
    for text in wanted:
        assert text in html
    for text in unwanted:
        assert text not in html
    assert form.shows_item_type is (data["type"] == "list")
    assert form.shows_schema is (data["type"] == "object")


def test_a_field_with_an_error_says_so_in_its_group(app):
    form = ScenarioForm({"name": "S", "token_budget": "0", "session_values": "[]"}, app=app)
    assert not form.is_valid()
    budget = str(form["token_budget"].as_field_group())
    assert 'aria-invalid="true"' in budget and 'class="error-text"' in budget
    values = str(form["session_values"].as_field_group())
    assert 'aria-invalid="true"' in values and "this is a list" in values
    assert 'aria-invalid="true"' not in str(form["name"].as_field_group())


def test_a_box_unticked_stays_unticked_when_the_form_comes_back(app):
    ratio = app.variables.get(name="ratio")
    form = VariableForm({"name": "", "type": "number"}, instance=ratio, app=app)
    assert not form.is_valid()
    assert "checked" not in str(form["update_references"].as_field_group())
    assert 'value="on" checked' in str(VariableForm(instance=ratio, app=app)["update_code"])


def test_a_tool_fields_label_names_the_kind_it_belongs_to(app):
    form = ToolForm(app=app)
    assert str(form["mcp_url"].as_field_group()).startswith('<label class="field" data-kind="mcp">')
    assert str(form["mock_enabled"].as_field_group()).startswith('<label class="check">')
    assert str(form["name"].as_field_group()).startswith('<label class="field">')
