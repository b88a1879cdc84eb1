"""Adding in the admin is the services' create: their rules and messages, their history
entry, the app's revision (the designer's cached spec trusts it), on the add pages and in
the inlines, as an operator posts them."""

from __future__ import annotations

from typing import Any

import pytest
from django.forms import ModelMultipleChoiceField
from django.urls import reverse

from agents import services
from agents.models import Agent, AgentApp, AppShare, Callback, Scenario, Schema, Tool, Variable

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator(client, staff):
    client.force_login(staff)
    return client


def _postable(form: Any, prefix: str | None = None) -> dict[str, Any]:
    """What a browser posts for the form as the page shows it (unticked boxes: absent)."""
    data: dict[str, Any] = {}
    for name, field in form.fields.items():
        value = form[name].value()
        key = f"{prefix}-{name}" if prefix else name
        if value is True:
            data[key] = "on"
        elif value is None and not isinstance(field, ModelMultipleChoiceField):
            data[key] = ""
        elif value not in (False, None):
            data[key] = value
    return data


def _page(client: Any, url: str, fields: dict[str, Any], rows: dict[str, list[dict]]) -> dict:
    """The page's own form with `fields` typed in and `rows` added to the named inlines."""
    context = client.get(url).context
    data = _postable(context["adminform"].form)
    data.update(fields)
    for inline in context["inline_admin_formsets"]:
        formset = inline.formset
        data.update(
            {
                f"{formset.prefix}-{key}": value
                for key, value in formset.management_form.initial.items()
            }
        )
        for form in formset.initial_forms:
            data.update(_postable(form, form.prefix))
            data[f"{form.prefix}-id"] = form.instance.pk
            data[f"{form.prefix}-{formset.fk.name}"] = formset.instance.pk
        new = rows.get(formset.model.__name__, [])
        start = len(formset.initial_forms)
        for i, row in enumerate(new, start=start):
            empty = formset.empty_form
            row_data = _postable(empty, f"{formset.prefix}-{i}")
            row_data.update({f"{formset.prefix}-{i}-{k}": v for k, v in row.items()})
            data.update(row_data)
        data[f"{formset.prefix}-TOTAL_FORMS"] = start + len(new)
    return data


def _add(client: Any, model: type, fields: dict[str, Any], **rows: list[dict]) -> Any:
    url = reverse(f"admin:agents_{model._meta.model_name}_add")
    return client.post(url, _page(client, url, fields, rows))


def _change(client: Any, obj: Any, **rows: list[dict]) -> Any:
    url = reverse(f"admin:agents_{obj._meta.model_name}_change", args=[obj.pk])
    return client.post(url, _page(client, url, {}, rows))


def _actions(app: AgentApp) -> list[str]:
    return list(app.audit_events.order_by("pk").values_list("action", flat=True))


def _form_errors(response: Any) -> dict[str, list[str]]:
    assert response.status_code == 200, response.status_code
    errors = dict(response.context["adminform"].form.errors)
    return {field: [str(e) for e in messages] for field, messages in errors.items()}


def _row_errors(response: Any, model: type) -> list[dict[str, list[str]]]:
    assert response.status_code == 200, response.status_code
    for inline in response.context["inline_admin_formsets"]:
        if inline.formset.model is model:
            return [dict(form.errors) for form in inline.formset.forms if form.errors]
    raise AssertionError(f"no {model.__name__} inline")


# ------------------------------------------------------------------ what a create leaves


def test_an_app_added_in_the_admin_is_the_services_app_with_its_root_agent(operator, user):
    response = _add(operator, AgentApp, {"name": "Support desk", "owner": user.pk})

    assert response.status_code == 302, response.context and response.context["errors"]
    app = AgentApp.objects.get(name="Support desk")
    assert _actions(app) == ["app.create", "agent.create"]


CREATES = {
    "variable": (
        Variable,
        lambda shop: {"app": shop.pk, "name": "coupon", "type": "text", "default": '""'},
        "variable.create",
    ),
    "schema": (
        Schema,
        lambda shop: {"app": shop.pk, "name": "Coupon", "json_schema": '{"type": "object"}'},
        "schema.create",
    ),
    "tool": (
        Tool,
        lambda shop: {
            "app": shop.pk,
            "name": "ApplyCoupon",
            "kind": "python",
            "python_code": "def ApplyCoupon():\n    return {}\n",
            # headers and mock state as the add page shows them ({}, the model's default)
        },
        "tool.create",
    ),
    "agent": (
        Agent,
        lambda shop: {"app": shop.pk, "display_name": "coupon_agent"},
        "agent.create",
    ),
    "callback": (
        Callback,
        lambda shop: {
            "agent": shop.agents.get(is_root=True).pk,
            "kind": "before_model",
            "order": 5,
            "code": "pass",
        },
        "callback.create",
    ),
    "scenario": (
        Scenario,
        lambda shop: {"agent": shop.agents.get(is_root=True).pk, "name": "coupon flow"},
        "scenario.create",
    ),
}


@pytest.mark.parametrize("kind", CREATES)
def test_an_admin_add_is_the_services_create_in_the_history(operator, shop, kind):
    """Each kind added on its add page: the service's history entry, one revision more."""
    model, fields, action = CREATES[kind]
    shop.refresh_from_db()
    revision = shop.revision

    response = _add(operator, model, fields(shop))

    assert response.status_code == 302, response.context and response.context["errors"]
    shop.refresh_from_db()
    assert (_actions(shop)[-1], shop.revision) == (action, revision + 1)


def test_a_share_added_in_the_admin_is_the_services_share(operator, shop, other_user):
    response = _add(operator, AppShare, {"app": shop.pk, "user": other_user.pk, "role": "editor"})

    assert response.status_code == 302, response.context and response.context["errors"]
    assert _actions(shop)[-1] == "share.set"


def test_a_variable_added_in_the_apps_inline_is_the_services_create(operator, shop):
    response = _change(
        operator, shop, Variable=[{"name": "coupon", "type": "text", "default": '""'}]
    )

    assert response.status_code == 302, response.context and response.context["errors"]
    assert _actions(shop)[-1] == "variable.create"


def test_a_callback_added_in_the_agents_inline_is_the_services_create(operator, shop):
    root = shop.agents.get(is_root=True)

    response = _change(
        operator, root, Callback=[{"kind": "after_tool", "order": 3, "code": "pass"}]
    )

    assert response.status_code == 302, response.context and response.context["errors"]
    assert _actions(shop)[-1] == "callback.create"


def test_an_app_added_with_a_variable_row_creates_both_through_the_services(operator, user):
    response = _add(
        operator,
        AgentApp,
        {"name": "Support desk", "owner": user.pk},
        Variable=[{"name": "ticket", "type": "text", "default": '""'}],
    )

    assert response.status_code == 302, response.context and response.context["errors"]
    app = AgentApp.objects.get(name="Support desk")
    assert _actions(app) == ["app.create", "agent.create", "variable.create"]


# ------------------------------------------------------------------ what a create refuses


def test_a_second_app_of_the_same_name_shows_the_services_message(operator, shop):
    response = _add(operator, AgentApp, {"name": shop.name, "owner": shop.owner_id})

    assert _form_errors(response) == {"name": [f"You already have an app named '{shop.name}'."]}


def test_a_second_scenario_of_the_same_name_shows_the_services_message(operator, shop):
    root = shop.agents.get(is_root=True)
    services.scenario_save(agent=root, name="coupon flow")

    response = _add(operator, Scenario, {"agent": root.pk, "name": "coupon flow"})

    assert _form_errors(response) == {
        "name": ["This agent already has a scenario named 'coupon flow'."]
    }


def test_a_bad_variable_name_in_the_apps_inline_shows_the_services_message(operator, shop):
    response = _change(
        operator, shop, Variable=[{"name": "cart_total", "type": "text", "default": '""'}]
    )

    assert _row_errors(response, Variable) == [
        {"name": ["A variable named 'cart_total' already exists in this app."]}
    ]


def test_a_broken_callback_in_the_agents_inline_is_refused_on_its_row(operator, shop):
    root = shop.agents.get(is_root=True)

    response = _change(operator, root, Callback=[{"kind": "after_tool", "order": 3, "code": "if"}])

    assert list(_row_errors(response, Callback)[0]) == ["code"]


def test_a_share_with_the_owner_shows_the_services_message_on_the_user(operator, shop):
    response = _add(operator, AppShare, {"app": shop.pk, "user": shop.owner_id, "role": "editor"})

    assert _form_errors(response) == {"user": ["The owner already has full access."]}


def test_a_clerk_allowed_to_add_variables_adds_one_in_their_name(client, django_user_model, shop):
    """The admin scopes by Django's permissions (not by owner): a staff user with only the
    variable permissions adds one, and the service's history names them."""
    from django.contrib.auth.models import Permission

    clerk = django_user_model.objects.create_user(
        username="clerk", password="pw-clerk-123456", is_staff=True
    )
    clerk.user_permissions.add(
        *Permission.objects.filter(codename__in=["add_variable", "view_variable"])
    )
    client.force_login(clerk)

    response = _add(
        client, Variable, {"app": shop.pk, "name": "coupon", "type": "text", "default": '""'}
    )

    assert response.status_code == 302, response.context and response.context["errors"]
    event = shop.audit_events.order_by("pk").last()
    assert (event.action, event.actor_name) == ("variable.create", "clerk")


def test_the_root_agent_deleted_in_the_apps_inline_is_refused_on_the_page(operator, shop):
    """A service's refusal of a row ticked for deletion (the root agent, while another
    agent exists) is an error of the page, kept as typed, not a message over a reload."""
    services.agent_create(app=shop, display_name="billing")
    url = reverse("admin:agents_agentapp_change", args=[shop.pk])
    data = _page(operator, url, {}, {})
    rows = operator.get(url).context["inline_admin_formsets"]
    agents = next(inline.formset for inline in rows if inline.formset.model is Agent)
    (root,) = [form for form in agents.initial_forms if form.instance.is_root]
    data[f"{root.prefix}-DELETE"] = "on"

    response = operator.post(url, data)

    assert _form_errors(response) == {
        "__all__": ["Make another agent the root before deleting the root agent."]
    }


@pytest.mark.parametrize(
    ("fields", "field", "words"),
    [
        (
            {"name": "1bad name", "type": "text"},
            "name",
            "is not a valid name: use unaccented letters",
        ),
        ({"name": "traveller", "type": "object"}, "schema", "A custom object needs a schema"),
    ],
)
def test_a_variable_the_rules_refuse_is_refused_on_its_field_in_their_words(
    operator, shop, fields, field, words
):
    """Not Django's "Constraint 'variable_name_valid' is violated." above the form (a
    tester's find): the rule set's message, on the field it is about."""
    response = _add(operator, Variable, {"app": shop.pk, "default": '""', **fields})

    errors = response.context["adminform"].form.errors
    assert words in " ".join(errors.get(field, [])), errors


def test_json_the_admin_cannot_read_is_refused_with_where_and_how(operator, shop):
    """Not only Django's "Enter a valid JSON." (a tester's find): where, and how JSON
    writes each kind of value."""
    response = _add(
        operator, Variable, {"app": shop.pk, "name": "coupon", "type": "text", "default": "abc"}
    )

    errors = " ".join(response.context["adminform"].form.errors.get("default", []))
    assert errors.startswith("Not valid JSON: line 1, column 1: expected a value"), errors
