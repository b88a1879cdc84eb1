"""Every admin list and change page opens, with a query count that does not grow with rows."""

from __future__ import annotations

import json

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


def _variable_form(variable: Variable, **changes: object) -> dict[str, object]:
    """What the admin's change form of a variable posts (the default as JSON text)."""
    data: dict[str, object] = {
        "app": variable.app_id,  # read-only once it exists: ignored, as in a real post
        "name": variable.name,
        "type": variable.type,
        "item_type": variable.item_type,
        "schema": variable.schema_id or "",
        "default": json.dumps(variable.default),
        "description": variable.description,
        "expected_version": variable.version,
    }
    data.update(changes)
    return data


def test_an_admin_rename_rewrites_the_references_in_instructions(admin_client_signed, shop):
    """The admin renames through the service: `{{business_rules}}` follows the new name."""
    variable = shop.variables.get(name="business_rules")
    root = shop.agents.get(is_root=True)
    assert "{{business_rules}}" in root.instructions
    url = reverse("admin:agents_variable_change", args=[variable.pk])
    assert f'name="expected_version" value="{variable.version}"' in (
        admin_client_signed.get(url).content.decode()
    )

    response = admin_client_signed.post(url, _variable_form(variable, name="house_rules"))

    assert response.status_code == 302, response.content.decode()
    variable.refresh_from_db()
    root.refresh_from_db()
    assert variable.name == "house_rules"
    assert "{{house_rules}}" in root.instructions
    assert "{{business_rules}}" not in root.instructions
    actions = list(shop.audit_events.values_list("action", flat=True)[:3])
    assert "variable.rename" in actions and "agent.instructions" in actions


def test_a_stale_admin_form_is_refused_with_a_clear_error(admin_client_signed, shop):
    """Someone saved the variable after the admin's form was opened: the form's save is
    refused, naming both versions, and the other change stays."""
    variable = shop.variables.get(name="business_rules")
    shown = _variable_form(variable, description="The operator's words.")
    services.variable_update(variable=variable, description="The designer's words.")

    response = admin_client_signed.post(
        reverse("admin:agents_variable_change", args=[variable.pk]), shown
    )

    assert response.status_code == 200
    body = response.content.decode()
    assert "changed by someone else" in body
    assert f"you edited version {variable.version}" in body
    variable.refresh_from_db()
    assert variable.description == "The designer's words."


def test_an_admin_inline_rename_goes_through_the_service(admin_client_signed, shop):
    """Renaming a tool in the app page's inline rewrites `{@TOOL: AddToCart}` too."""
    url = reverse("admin:agents_agentapp_change", args=[shop.pk])
    form = admin_client_signed.get(url).context["adminform"].form
    data = {
        name: value
        for name, value in form.initial.items()
        if name in form.fields and value is not None and name != "owner"
    }
    data["owner"] = shop.owner_id
    for inline in admin_client_signed.get(url).context["inline_admin_formsets"]:
        formset = inline.formset
        prefix = formset.prefix
        data[f"{prefix}-TOTAL_FORMS"] = len(formset.initial_forms)
        data[f"{prefix}-INITIAL_FORMS"] = len(formset.initial_forms)
        for i, inline_form in enumerate(formset.initial_forms):
            for name, field in inline_form.fields.items():
                value = inline_form.initial.get(name, field.initial)
                if name == "id":
                    value = inline_form.instance.pk
                elif name == formset.fk.name:
                    value = shop.pk
                if hasattr(value, "pk"):
                    value = value.pk
                if isinstance(value, bool):
                    if value:
                        data[f"{prefix}-{i}-{name}"] = "on"
                    continue
                if name == "default" and value is not None:
                    value = json.dumps(value)
                data[f"{prefix}-{i}-{name}"] = "" if value is None else value
            if inline_form.instance.__class__.__name__ == "Tool":
                data[f"{prefix}-{i}-name"] = "PutInCart"

    response = admin_client_signed.post(url, data)

    assert response.status_code == 302, response.context and response.context["errors"]
    root = shop.agents.get(is_root=True)
    assert "{@TOOL: PutInCart}" in root.instructions
    assert Tool.objects.get(app=shop).name == "PutInCart"


def test_an_admin_delete_goes_through_the_service(admin_client_signed, shop):
    """Deleting in the admin is the service's delete: its history entry, with what was lost."""
    variable = shop.variables.get(name="languages")
    url = reverse("admin:agents_variable_delete", args=[variable.pk])

    response = admin_client_signed.post(url, {"post": "yes"})

    assert response.status_code == 302
    assert not Variable.objects.filter(pk=variable.pk).exists()
    event = shop.audit_events.first()
    assert (event.action, event.object_name) == ("variable.delete", "languages")
    assert event.before["default"] == ["French", "German"]
