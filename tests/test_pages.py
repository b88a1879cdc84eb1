"""Health check, sign-in and the app list, through the real URL conf."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agents import services
from agents.models import AgentApp

pytestmark = pytest.mark.django_db


def test_healthz_checks_the_database(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["database"] == "ok" and body["cache"] == "local" and body["queue"] == "ok"
    # No worker has written a heartbeat: the app serves, degraded (Run all would wait).
    assert body["workers"] == {"seen": 0, "last_heartbeat": None}
    assert body["status"] == "degraded"


def test_healthz_answers_a_head_probe(client):
    """Balancers that probe with HEAD get the status GET gets (it was 405)."""
    response = client.head("/healthz")
    assert response.status_code == 200


def test_pages_need_sign_in(client):
    response = client.get(reverse("app-list"))
    assert response.status_code == 302
    assert reverse("login") in response["Location"]


def test_demo_sign_in_works(client):
    from django.core.management import call_command

    call_command("load_demo")
    call_command("load_demo")  # idempotent
    response = client.post(
        reverse("login"), {"username": "demo", "password": "statecraft-demo"}, follow=True
    )
    body = response.content.decode()
    assert "Bank demo" in body and "Shopping assistant" in body


def test_app_list_search_returns_fragment_to_htmx(signed_in, demo_apps):
    response = signed_in.get(reverse("app-list"), {"q": "bank"}, headers={"HX-Request": "true"})
    body = response.content.decode()
    assert body.lstrip().startswith('<section id="app-table"')
    assert "Bank demo" in body and "Shopping assistant" not in body
    assert "<html" not in body


def test_app_list_query_count_does_not_grow(signed_in, user, django_assert_num_queries):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    services.app_create(owner=user, name="One")
    with CaptureQueriesContext(connection) as few:
        signed_in.get(reverse("app-list"))
    for i in range(10):
        services.app_create(owner=user, name=f"More {i}")
    with CaptureQueriesContext(connection) as many:
        signed_in.get(reverse("app-list"))
    assert len(few.captured_queries) == len(many.captured_queries)


def test_create_app_with_empty_name_keeps_the_form(signed_in):
    response = signed_in.post(reverse("app-create"), {"name": "  ", "description": "kept"})
    assert response.status_code == 400
    body = response.content.decode()
    assert "Give the app a name" in body and "kept" in body


def test_create_duplicate_delete(signed_in, user):
    response = signed_in.post(reverse("app-create"), {"name": "Mine"})
    app = AgentApp.objects.get(name="Mine")
    assert response["Location"] == reverse("app-designer", args=[app.pk])
    signed_in.post(reverse("app-duplicate", args=[app.pk]))
    assert AgentApp.objects.filter(name="Mine (copy)").exists()
    assert signed_in.get(reverse("app-delete", args=[app.pk])).status_code == 200
    signed_in.post(reverse("app-delete", args=[app.pk]))
    assert not AgentApp.objects.filter(pk=app.pk).exists()


def test_other_users_apps_are_invisible(client, other_user, shop):
    client.force_login(other_user)
    assert client.get(reverse("app-designer", args=[shop.pk])).status_code == 404
    assert client.post(reverse("app-delete", args=[shop.pk])).status_code == 404
    services.app_share(app=shop, user=other_user, role="viewer")
    assert client.get(reverse("app-designer", args=[shop.pk])).status_code == 200
    assert client.post(reverse("app-delete", args=[shop.pk])).status_code == 403


def test_owner_shares_and_unshares(signed_in, shop, other_user):
    url = reverse("app-share", args=[shop.pk])
    response = signed_in.post(url, {"username": "nobody-here", "role": "viewer"})
    assert (
        response.status_code == 302
    )  # the same answer as for a real user (tests/test_hardening.py)
    assert not shop.shares.exists()
    signed_in.post(url, {"username": other_user.username, "role": "editor"})
    assert shop.shares.get().role == "editor"
    signed_in.post(url, {"remove": other_user.pk})
    assert not shop.shares.exists()


def test_only_owner_can_share(client, shop, other_user, django_user_model):
    services.app_share(app=shop, user=other_user, role="editor")
    client.force_login(other_user)
    url = reverse("app-share", args=[shop.pk])
    assert client.get(url).status_code == 200
    third = django_user_model.objects.create_user(username="carol", password="x-123456789")
    assert client.post(url, {"username": third.username, "role": "viewer"}).status_code == 403


def test_diagnostic_messages_show_quoted_names_as_code_and_stay_escaped():
    from designer.templatetags.designer_tags import ticks

    assert ticks("no variable `x` here") == "no variable <code>x</code> here"
    assert ticks("`<script>` & co") == "<code>&lt;script&gt;</code> &amp; co"


@pytest.mark.django_db
def test_a_missing_page_is_the_apps_page_not_found(signed_in):
    """Not Django's bare "Not Found": the app's page, its header, a way back."""
    response = signed_in.get("/apps/999999/")

    assert response.status_code == 404
    assert "Page not found" in response.content.decode()


def test_a_server_error_page_renders_without_a_request():
    """Django renders 500.html with no context (the server-error view): it must not need one."""
    from django.template import loader

    page = loader.get_template("500.html").render({})
    assert "Something went wrong" in page
