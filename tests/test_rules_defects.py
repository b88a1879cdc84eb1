"""Issue 22, "The rules" and the operator's side: each test fails on the code before the fix."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction
from rest_framework.test import APIClient

from agents.models import Callback, Variable
from agents.services import common

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(user):
    client = APIClient()
    client.force_login(user)
    return client


# ---------------------------------------------------------------- 11: names and constraints


@pytest.mark.parametrize("name", ["ghost\n", "ghost\r", "\nghost"])
def test_a_name_ending_in_a_newline_is_refused_naming_the_field(api, shop, name):
    response = api.post(
        f"/api/apps/{shop.pk}/variables/", {"name": name, "type": "text"}, format="json"
    )
    assert response.status_code == 400
    assert ("SC003", "name") in {(d["code"], d["field"]) for d in response.json()["diagnostics"]}


def test_the_database_rule_refuses_a_name_ending_in_a_newline(shop):
    with pytest.raises(IntegrityError), transaction.atomic():
        Variable.objects.create(app=shop, name="ghost\n", type="text")


def test_a_unique_clash_caught_by_the_database_names_its_constraint(shop):
    taken = shop.variables.first()
    clash = Variable(app=shop, name=taken.name, type="text")
    with pytest.raises(common.ServiceError) as caught:
        common.save(clash)
    (diagnostic,) = caught.value.diagnostics
    assert (diagnostic.field, diagnostic.code) == ("name", "SC004")
    assert "variable_unique_name_per_app" in diagnostic.message


def test_a_callback_order_clash_is_reported_on_order_not_on_a_name(shop):
    agent = shop.agents.get(is_root=True)
    Callback.objects.create(agent=agent, kind="before_agent", order=3, code="pass")
    clash = Callback(agent=agent, kind="before_agent", order=3, code="pass")
    with pytest.raises(common.ServiceError) as caught:
        common.save(clash)
    (diagnostic,) = caught.value.diagnostics
    assert diagnostic.field == "order"
    assert "callback_unique_order_per_kind" in diagnostic.message


# ---------------------------------------------------------------- 12: a rename is audited, whole


def test_a_rename_that_rewrites_a_tool_records_it_in_the_history(bank, user):
    from agents import services
    from agents.models import AuditEvent

    services.tool_create(
        app=bank,
        name="Transfer",
        kind="mcp",
        mcp_url="https://mcp.example.com/mcp",
        mcp_headers={"X-Auth": "$context.variables.authenticated"},
        mock_enabled=True,
        mock_state={"authenticated": True},
        mock_response={"ok": True},
    )
    variable = bank.variables.get(name="authenticated")
    services.variable_rename(variable=variable, new_name="signed_in", actor=user)
    event = AuditEvent.objects.get(app=bank, action="tool.update", object_name="Transfer")
    assert event.before == {
        "mcp_headers": {"X-Auth": "$context.variables.authenticated"},
        "mock_state": {"authenticated": True},
    }
    assert event.after == {
        "mcp_headers": {"X-Auth": "$context.variables.signed_in"},
        "mock_state": {"signed_in": True},
    }


@pytest.mark.parametrize("separator", ["\f", "\u2028", "\x85", "\v"])
def test_renaming_in_code_reaches_past_a_line_break_python_does_not_count(separator):
    from agents.core.rename import rename_state_in_code

    code = f'x = 1  # note{separator}\ncontext.state["old"] = 2\nif "old" in context.state:\n    pass\n'
    renamed = rename_state_in_code(code, "old", "new")
    assert renamed == code.replace('"old"', '"new"')


# ---------------------------------------------------------------- 13: refusals said once, as typed

HX = {"HX-Request": "true"}


def test_a_refused_schema_delete_over_htmx_is_not_shown_again_on_the_next_page(signed_in, shop):
    from django.urls import reverse

    schema = shop.schemas.get(name="Customer")
    refused = signed_in.post(reverse("schema-delete", args=[shop.pk, schema.pk]), headers=HX)
    assert "used by customer" in refused.content.decode()
    next_page = signed_in.get(reverse("app-designer", args=[shop.pk]))
    assert "used by customer" not in next_page.content.decode()


@pytest.mark.parametrize("typed", ["[]", "0", '""', "false"])
def test_session_values_that_are_not_an_object_are_refused_not_emptied(signed_in, bank, typed):
    from django.urls import reverse

    agent = bank.agents.get()
    form = {
        "name": "Listy",
        "steps_script": "user: Hi",
        "session_values": typed,
        "channel": "web",
        "modality": "text",
        "session_id": "s",
        "project_id": "p",
        "project_number": "1",
        "location": "l",
        "token_budget": "8000",
    }
    response = signed_in.post(reverse("scenario-new", args=[bank.pk, agent.pk]), form, headers=HX)
    assert not agent.scenarios.filter(name="Listy").exists()
    assert "Enter one JSON object" in response.content.decode()


# ---------------------------------------------------------------- 14: the admin, by permission


@pytest.fixture
def bare_staff(django_user_model):
    return django_user_model.objects.create_user(
        username="clerk", password="pw-clerk-123456", is_staff=True
    )


def _admin_urls(app):
    from django.urls import reverse
    from django.utils import timezone

    from agents import services
    from agents.models import AppVersion, AuditEvent, ScenarioResult

    version = services.versions.version_create(app=app, name="first", user=app.owner)
    scenario = app.agents.get(is_root=True).scenarios.first()
    result = ScenarioResult.objects.create(
        scenario=scenario, status="passed", results=[], ran_at=timezone.now()
    )
    event = AuditEvent.objects.filter(app=app).first()
    urls = []
    for obj in (version, event, result):
        name = f"admin:agents_{obj._meta.model_name}"
        urls += [reverse(f"{name}_changelist"), reverse(f"{name}_change", args=[obj.pk])]
    assert isinstance(version, AppVersion)
    return urls


def test_staff_without_permissions_cannot_read_versions_history_or_results(
    client, bare_staff, bank
):
    urls = _admin_urls(bank)
    client.force_login(bare_staff)
    assert {url: client.get(url).status_code for url in urls} == {url: 403 for url in urls}


def test_a_view_permission_opens_exactly_its_own_model(client, bare_staff, bank):
    from django.contrib.auth.models import Permission

    urls = _admin_urls(bank)
    bare_staff.user_permissions.add(Permission.objects.get(codename="view_auditevent"))
    client.force_login(bare_staff)
    codes = [client.get(url).status_code for url in urls]
    assert codes == [403, 403, 200, 200, 403, 403]


def test_the_audit_trail_cannot_be_deleted_in_the_admin_even_by_a_superuser(client, staff, bank):
    from django.urls import reverse

    from agents.models import AuditEvent

    client.force_login(staff)
    event = AuditEvent.objects.filter(app=bank).first()
    delete_url = reverse("admin:agents_auditevent_delete", args=[event.pk])
    assert client.post(delete_url, {"post": "yes"}).status_code == 403
    changelist = reverse("admin:agents_auditevent_changelist")
    client.post(
        changelist, {"action": "delete_selected", "_selected_action": [event.pk], "post": "yes"}
    )
    assert AuditEvent.objects.filter(pk=event.pk).exists()


def test_an_apps_revision_is_not_editable_in_the_admin(client, staff, bank):
    from django.urls import reverse

    client.force_login(staff)
    page = client.get(reverse("admin:agents_agentapp_change", args=[bank.pk])).content.decode()
    assert 'name="revision"' not in page


# ---------------------------------------------------------------- 15: counts in the database


def test_counts_live_in_the_database_and_ended_windows_are_purged(monkeypatch):
    from django.core.management import call_command

    from agents.models import RateLimitCount
    from server import ratelimit

    moment = [1_000_000.0]
    monkeypatch.setattr(ratelimit, "now", lambda: moment[0])
    rate = ratelimit.Rate(limit=2, period=60)
    assert [ratelimit.hit("t", "who", rate).allowed for _ in range(3)] == [True, True, False]
    assert RateLimitCount.objects.get().count == 3
    moment[0] += 120
    call_command("purge_expired", stdout=open("/dev/null", "w"))  # noqa: SIM115
    assert not RateLimitCount.objects.exists()


def test_a_wrong_api_token_counts_as_an_anonymous_request(settings):
    from server import ratelimit

    settings.RATE_LIMITS = {**ratelimit.settings.RATE_LIMITS, "api-anon": "2/h"}
    client = APIClient(HTTP_AUTHORIZATION="Token not-a-token")
    assert [client.get("/api/apps/").status_code for _ in range(3)] == [401, 401, 429]


# ---------------------------------------------------------------- 17: the new key is not cached


def test_the_page_that_shows_a_new_api_key_is_never_stored(signed_in):
    from django.urls import reverse

    response = signed_in.post(reverse("api-token"), {"action": "create"})
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
