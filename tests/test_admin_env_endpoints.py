"""The admin's Model endpoints lists the endpoints configured in the environment
(``STATECRAFT_MODELS``) too, read-only and marked as the environment's, their keys never
shown; and no link of the admin leads to a 500 (issue 32, item 8 and 10). Through the
real admin (the URL conf, the sessions, the templates) with staff users."""

from __future__ import annotations

import json
import re
from urllib.parse import urljoin, urlsplit

import pytest
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.test import Client
from django.urls import reverse

from agents import services
from agents.models import ModelEndpoint
from agents.services import evaluation, versions
from agents.services.live_models import endpoint_save

pytestmark = pytest.mark.django_db

SECRET = "sk-env-secret-4242"
STORED = "sk-admin-stored-7777"
MODELS = {
    "env-flash": {"kind": "openai", "model": "gpt-x", "api_key_env": "ENV_FLASH_KEY"},
    "both": {
        "kind": "openai",
        "model": "llama",
        "base_url": "https://user:pass-in-url@models.example/v1?key=q",
        "api_key_env": "ENV_FLASH_KEY",
    },
}


@pytest.fixture
def env_models(monkeypatch):
    monkeypatch.setenv("STATECRAFT_MODELS", json.dumps(MODELS))
    monkeypatch.setenv("ENV_FLASH_KEY", SECRET)


def _changelist(client: Client) -> str:
    response = client.get(reverse("admin:agents_modelendpoint_changelist"))
    assert response.status_code == 200
    return response.content.decode()


def test_the_model_endpoints_list_shows_the_environments_read_only_without_keys(
    client, staff, env_models
):
    endpoint_save(endpoint=ModelEndpoint(name="both", kind="openai", model="other"), api_key=STORED)
    client.force_login(staff)
    page = _changelist(client)
    section = page.split('id="env-endpoints"', 1)[1].split("</div>", 1)[0]
    assert "Configured in the environment (STATECRAFT_MODELS)" in page
    rows = re.findall(r'<tr class="env-endpoint">(.*?)</tr>', section, re.S)
    assert [re.search(r"<td>([^<]+)", r).group(1).strip() for r in rows] == ["both", "env-flash"]
    assert all("environment" in r for r in rows)
    assert "ENV_FLASH_KEY" in section and "this one is used" in rows[0]
    # Read-only: no change link for the environment's endpoints.
    assert "env-flash" not in re.sub(
        r'<div class="module" id="env-endpoints">.*?</div>', "", page, flags=re.S
    )
    for secret in (SECRET, STORED, "pass-in-url", "key=q"):
        assert secret not in page


def test_a_bad_statecraft_models_is_said_on_the_list_not_a_500(client, staff, monkeypatch):
    monkeypatch.setenv("STATECRAFT_MODELS", '{"x": {"kind": "openai"}}')
    client.force_login(staff)
    page = _changelist(client)
    assert "STATECRAFT_MODELS.x" in page


def test_a_staff_user_with_view_rights_only_sees_them_too(client, django_user_model, env_models):
    viewer = django_user_model.objects.create_user(
        "viewer", password="pw-viewer-123", is_staff=True
    )
    viewer.user_permissions.add(Permission.objects.get(codename="view_modelendpoint"))
    client.force_login(viewer)
    page = _changelist(client)
    assert "env-flash" in page and SECRET not in page


def _links(html: str, base: str) -> set[str]:
    found = set()
    for href in re.findall(r'href="([^"#]+)"', html):
        href = href.replace("&amp;", "&")
        url = urljoin(base, href)
        path = urlsplit(url)
        if path.netloc not in ("", "testserver") or not path.path.startswith("/admin/"):
            continue
        if path.path.endswith(("/logout/", "/delete/")) or "/password/" in path.path:
            continue
        found.add(path.path + (f"?{path.query}" if path.query else ""))
    return found


def test_no_admin_link_leads_to_a_500(client, staff, user, bank, env_models, run_jobs):
    versions.version_create(app=bank, name="first", user=user)
    endpoint_save(endpoint=ModelEndpoint(name="stored", kind="openai", model="m"), api_key=STORED)
    evaluation.run_all_submit(app=bank, actor=user)
    run_jobs()
    services.app_update(app=bank, description="edited", actor=user)
    client.force_login(staff)
    client.raise_request_exception = False
    seen: dict[str, int] = {}
    todo = ["/admin/"]
    # The index, every list, every page a list links to (a row, its filters, its add form).
    for depth in range(3):
        following = []
        for url in todo:
            if url in seen:
                continue
            response = client.get(url)
            seen[url] = response.status_code
            if depth < 2 and response.status_code == 200 and "html" in response["Content-Type"]:
                following += sorted(_links(response.content.decode(), url) - set(seen))
        todo = following
    assert len(seen) > 40, sorted(seen)
    # The "view on site" shortcut of every content type (django-rq's table-less one too).
    for content_type in ContentType.objects.all():
        url = f"/admin/r/{content_type.pk}/1/"
        seen[url] = client.get(url).status_code
    broken = {url: code for url, code in seen.items() if code >= 500}
    assert not broken, broken
