"""Every admin list and change page opens, with a query count that does not grow with rows."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agents import services
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

pytestmark = pytest.mark.django_db

MODELS = [AgentApp, Variable, Schema, Tool, Agent, Callback, AppShare, Scenario, ScenarioStep]


@pytest.fixture
def admin_client_signed(client, staff):
    client.force_login(staff)
    return client


def _populate(owner, n: int) -> None:
    for i in range(n):
        app = services.app_create(owner=owner, name=f"App {i}")
        schema = services.schema_create(app=app, name="S", json_schema={"type": "object"})
        services.variable_create(app=app, name="v", type="object", schema=schema)
        tool = services.tool_create(app=app, name="T", python_code="def T():\n    pass\n")
        root = app.agents.get()
        services.agent_update(agent=root, tools=[tool])
        services.callback_create(agent=root, kind="before_model", code="x = 1")
        services.scenario_save(agent=root, name="s", steps_script="user: hi")


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_changelist_query_count_is_constant(
    admin_client_signed, staff, user, model, django_assert_max_num_queries
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    _populate(user, 2)
    url = reverse(f"admin:agents_{model._meta.model_name}_changelist")
    with CaptureQueriesContext(connection) as few:
        assert admin_client_signed.get(url).status_code == 200
    _populate(staff, 8)
    with CaptureQueriesContext(connection) as many:
        assert admin_client_signed.get(url).status_code == 200
    assert len(many.captured_queries) == len(few.captured_queries)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_change_and_add_pages_open(admin_client_signed, shop, other_user, model):
    if model is AppShare:
        services.app_share(app=shop, user=other_user, role="viewer")
    if model in (Scenario, ScenarioStep):
        services.scenario_save(agent=shop.agents.get(), name="s", steps_script="user: hi")
    if model is Callback:
        services.callback_create(agent=shop.agents.get(), kind="after_tool", code="pass")
    obj = model.objects.first()
    change = reverse(f"admin:agents_{model._meta.model_name}_change", args=[obj.pk])
    add = reverse(f"admin:agents_{model._meta.model_name}_add")
    assert admin_client_signed.get(change).status_code == 200
    assert admin_client_signed.get(add).status_code == 200


def test_admin_refuses_an_invalid_default(admin_client_signed, shop):
    variable = shop.variables.get(name="cart_total")
    url = reverse("admin:agents_variable_change", args=[variable.pk])
    response = admin_client_signed.post(
        url,
        {
            "app": shop.pk,
            "name": "cart_total",
            "type": "number",
            "item_type": "",
            "schema": "",
            "default": '"lots"',
            "description": "x",
            "version": variable.version,
        },
    )
    assert response.status_code == 200
    assert (
        "not a number" in response.content.decode() or "is not of type" in response.content.decode()
    )
    variable.refresh_from_db()
    assert variable.default == 0


def test_app_change_page_shows_inlines(admin_client_signed, shop):
    response = admin_client_signed.get(reverse("admin:agents_agentapp_change", args=[shop.pk]))
    body = response.content.decode()
    assert "business_rules" in body and "AddToCart" in body and "Customer" in body
