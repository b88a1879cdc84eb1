"""Database constraints hold even when the services are bypassed."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from agents.models import Agent, AgentApp, Schema, Variable

pytestmark = pytest.mark.django_db


@pytest.fixture
def app(user):
    return AgentApp.objects.create(owner=user, name="Raw")


def _violates(**fields) -> bool:
    try:
        with transaction.atomic():
            Variable.objects.create(**fields)
    except IntegrityError:
        return True
    return False


def test_variable_names_are_unique_per_app(app, user):
    Variable.objects.create(app=app, name="x", type="text")
    assert _violates(app=app, name="x", type="number")
    other = AgentApp.objects.create(owner=user, name="Other")
    assert not _violates(app=other, name="x", type="text")


@pytest.mark.parametrize("name", ["1abc", "has space", "dash-ed", "", "é"])
def test_variable_name_must_match_pattern(app, name):
    assert _violates(app=app, name=name, type="text")


def test_variable_type_must_be_known(app):
    assert _violates(app=app, name="x", type="colour")


def test_item_type_only_on_lists(app):
    assert _violates(app=app, name="a", type="text", item_type="number")
    assert _violates(app=app, name="b", type="list", item_type="")
    assert _violates(app=app, name="c", type="list", item_type="list")
    assert not _violates(app=app, name="d", type="list", item_type="number")


def test_object_needs_schema_and_only_objects_have_one(app):
    schema = Schema.objects.create(app=app, name="Customer", json_schema={"type": "object"})
    assert _violates(app=app, name="a", type="object")
    assert _violates(app=app, name="b", type="text", schema=schema)
    assert not _violates(app=app, name="c", type="object", schema=schema)
    assert not _violates(app=app, name="d", type="list", item_type="object", schema=schema)


def test_one_root_agent_and_unique_display_names(app):
    Agent.objects.create(app=app, display_name="Root", is_root=True)
    with pytest.raises(IntegrityError), transaction.atomic():
        Agent.objects.create(app=app, display_name="Another", is_root=True)
    with pytest.raises(IntegrityError), transaction.atomic():
        Agent.objects.create(app=app, display_name="root")


def test_to_spec_carries_everything(shop, django_assert_max_num_queries):
    from agents.selectors import app_with_everything

    app = app_with_everything(shop.pk, carry=True).get()
    with django_assert_max_num_queries(0):
        spec = app.to_spec()
    assert {v.name for v in spec.variables} == {
        "business_rules",
        "customer",
        "languages",
        "cart_total",
    }
    customer = spec.variable("customer")
    assert customer.schema == "Customer"
    assert spec.variable("languages").default == ["French", "German"]
    assert spec.agents[0].tools == ("AddToCart",)
    assert spec.agents[0].is_root


def test_json_keeps_key_order_on_every_database(app):
    schema = Schema.objects.create(
        app=app,
        name="Ordered",
        json_schema={"type": "object", "properties": {"zeta": {}, "alpha": {}, "mid": {}}},
    )
    variable = Variable.objects.create(
        app=app, name="obj", type="object", schema=schema, default={"zeta": 1, "alpha": 2, "mid": 3}
    )
    variable.refresh_from_db()
    schema.refresh_from_db()
    assert list(variable.default) == ["zeta", "alpha", "mid"]
    assert list(schema.json_schema["properties"]) == ["zeta", "alpha", "mid"]
