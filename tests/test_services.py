"""Service functions validate with the core before saving and refuse stale writes."""

from __future__ import annotations

import pytest

from agents import services
from agents.models import Agent, Variable

pytestmark = pytest.mark.django_db


@pytest.fixture
def app(user):
    return services.app_create(owner=user, name="Test app")


def test_app_create_makes_a_root_agent(app):
    agents = list(app.agents.all())
    assert len(agents) == 1 and agents[0].is_root


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("1st", "not a valid name"),
        ("my var", "not a valid name"),
        ("", "required"),
        ("x" * 65, "too long"),
    ],
)
def test_variable_bad_name_is_refused_with_the_field(app, name, expected):
    with pytest.raises(services.ServiceError) as info:
        services.variable_create(app=app, name=name, type="text")
    errors = info.value.field_errors()
    assert expected in " ".join(errors["name"])
    assert not Variable.objects.filter(app=app).exists()


def test_variable_duplicate_name_is_refused(app):
    services.variable_create(app=app, name="balance", type="number")
    with pytest.raises(services.ServiceError) as info:
        services.variable_create(app=app, name="balance", type="text")
    assert "already exists" in info.value.field_errors()["name"][0]


def test_variable_bad_type_is_refused(app):
    with pytest.raises(services.ServiceError) as info:
        services.variable_create(app=app, name="colour", type="colour")
    assert "not a variable type" in info.value.field_errors()["type"][0]


def test_list_needs_an_item_type_and_object_needs_a_schema(app):
    with pytest.raises(services.ServiceError) as info:
        services.variable_create(app=app, name="tags", type="list")
    assert "item_type" in info.value.field_errors()
    with pytest.raises(services.ServiceError) as info:
        services.variable_create(app=app, name="customer", type="object")
    assert "schema" in info.value.field_errors()


def test_default_must_fit_the_type(app):
    with pytest.raises(services.ServiceError) as info:
        services.variable_create(app=app, name="count", type="number", default="three")
    assert "default" in info.value.field_errors()
    variable = services.variable_create(app=app, name="count", type="number", default=3)
    assert variable.default == 3


def test_default_must_fit_the_schema(app):
    schema = services.schema_create(
        app=app,
        name="Customer",
        json_schema={"type": "object", "properties": {"age": {"type": "integer", "minimum": 0}}},
    )
    with pytest.raises(services.ServiceError) as info:
        services.variable_create(
            app=app, name="customer", type="object", schema=schema, default={"age": -3}
        )
    assert "default" in info.value.field_errors()


def test_schema_must_pass_the_metaschema(app):
    with pytest.raises(services.ServiceError) as info:
        services.schema_create(app=app, name="Bad", json_schema={"type": "banana"})
    assert "json_schema" in info.value.field_errors()


def test_schema_change_that_breaks_a_default_is_refused(app):
    schema = services.schema_create(
        app=app,
        name="Customer",
        json_schema={"type": "object", "properties": {"age": {"type": "integer"}}},
    )
    services.variable_create(
        app=app, name="customer", type="object", schema=schema, default={"age": 30}
    )
    with pytest.raises(services.ServiceError) as info:
        services.schema_update(
            schema=schema,
            json_schema={
                "type": "object",
                "properties": {"age": {"type": "integer", "maximum": 10}},
            },
        )
    assert "customer" in info.value.field_errors()["json_schema"][0]
    schema.refresh_from_db()
    assert "maximum" not in schema.json_schema["properties"]["age"]


def test_second_save_of_a_stale_version_is_refused(app):
    variable = services.variable_create(app=app, name="note", type="text")
    services.variable_update(variable=variable, description="first editor", expected_version=1)
    with pytest.raises(services.StaleObjectError) as info:
        services.variable_update(variable=variable, description="second editor", expected_version=1)
    assert "changed by someone else" in str(info.value)
    variable.refresh_from_db()
    assert variable.description == "first editor"
    assert variable.version == 2


def test_agent_children_cannot_form_a_cycle(app):
    root = app.agents.get()
    child = services.agent_create(app=app, display_name="Billing")
    services.agent_update(agent=root, children=[child])
    with pytest.raises(services.ServiceError) as info:
        services.agent_update(agent=child, children=[root])
    assert "cycle" in info.value.field_errors()["children"][0]


def test_python_tool_with_bad_syntax_is_refused(app):
    with pytest.raises(services.ServiceError) as info:
        services.tool_create(app=app, name="Broken", python_code="def Broken(:\n  pass")
    assert "Line 1" in info.value.field_errors()["python_code"][0]


def test_duplicate_copies_everything(shop, user):
    copy = services.app_duplicate(app=shop, owner=user)
    assert copy.name == "Shopping assistant (copy)"
    assert set(copy.variables.values_list("name", flat=True)) == set(
        shop.variables.values_list("name", flat=True)
    )
    root = Agent.objects.get(app=copy, is_root=True)
    assert root.instructions == shop.agents.get(is_root=True).instructions
    assert list(root.tools.values_list("name", flat=True)) == ["AddToCart"]
    assert copy.variables.get(name="customer").schema.app_id == copy.pk


def test_load_demo_is_idempotent(user):
    from agents.demo import load_demo

    first = load_demo(user)
    second = load_demo(user)
    assert [a.pk for a in first] == [a.pk for a in second]
    assert Variable.objects.filter(app__owner=user).count() == 6
