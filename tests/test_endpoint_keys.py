"""A stored model key is bound to where it is sent (issue 32): a staff user who may change
an endpoint sets its base URL to a server of his own, keeps the (never shown) key, runs
live: his server must see no key. The key typed again in the same form goes with the new
URL. Credentials in a base URL never reach a log line or an admin list."""

from __future__ import annotations

import logging

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from agents import keyring
from agents.models import ModelEndpoint
from agents.services.live_models import endpoint_save
from tests.llm_server import ModelServer, openai_stream_text
from tests.test_live_runs import bank_app  # noqa: F401

pytestmark = pytest.mark.django_db
KEY = "sk-stored-bound-4f3e2d1c"


@pytest.fixture
def other_server():
    s = ModelServer()
    yield s
    s.close()


@pytest.fixture
def endpoint_editor(django_user_model):
    """Staff with only the model endpoints' change (and view) permissions."""
    editor = django_user_model.objects.create_user(
        username="eve", password="pw-eve-123456", is_staff=True
    )
    for codename in ("change_modelendpoint", "view_modelendpoint"):
        editor.user_permissions.add(Permission.objects.get(codename=codename))
    return editor


def _form(url: str, **extra: str) -> dict[str, str]:
    return {
        "name": "stored",
        "kind": "openai",
        "model": "gpt-4o-mini",
        "base_url": url,
        "timeout": "5",
        "max_retries": "0",
        "max_concurrent": "8",
        "enabled": "on",
        **extra,
    }


def _run_live(signed_in, run_jobs, app, agent, scenario) -> None:
    url = f"/api/apps/{app.pk}/agents/{agent.pk}/scenarios/{scenario.pk}/simulate"
    answer = signed_in.post(url, {"model": "stored"}, content_type="application/json")
    assert answer.status_code == 202, answer.content
    assert run_jobs() == 1


def test_a_changed_base_url_clears_the_key_unless_the_form_gives_it_again(
    signed_in,
    endpoint_editor,
    server,
    other_server,
    bank_app,  # noqa: F811
    run_jobs,
    caplog,
):
    app, agent, scenario = bank_app
    caplog.set_level(logging.DEBUG)
    stored = endpoint_save(
        endpoint=ModelEndpoint(
            name="stored",
            kind="openai",
            model="gpt-4o-mini",
            base_url=f"{server.url}/v1",
            timeout=5,
            max_retries=0,
        ),
        api_key=KEY,
    )
    server.script(openai_stream_text("1,250 EUR."))
    _run_live(signed_in, run_jobs, app, agent, scenario)
    assert server.seen[-1].headers["authorization"] == f"Bearer {KEY}"

    # The editor points the endpoint at his own server, without typing the key.
    editor = Client()
    editor.force_login(endpoint_editor)
    change = f"/admin/agents/modelendpoint/{stored.pk}/change/"
    moved = editor.post(change, _form(f"{other_server.url}/v1"))
    assert moved.status_code == 302, moved.content.decode()[:2000]
    stored.refresh_from_db()
    assert stored.api_key_encrypted == ""
    other_server.script(openai_stream_text("hello"))
    _run_live(signed_in, run_jobs, app, agent, scenario)
    assert other_server.seen, "the live run reached the new URL"
    for seen in other_server.seen:
        assert KEY not in " ".join(seen.headers.values())

    # The key typed again in the same form goes with the new URL; a save that changes
    # nothing of the binding keeps it.
    again = editor.post(change, _form(f"{server.url}/v1", api_key=KEY))
    assert again.status_code == 302
    stored.refresh_from_db()
    assert keyring.decrypt(stored.api_key_encrypted) == KEY
    kept = editor.post(change, _form(f"{server.url}/v1", timeout="7"))
    assert kept.status_code == 302
    stored.refresh_from_db()
    assert keyring.decrypt(stored.api_key_encrypted) == KEY
    # Any caller of the service, not only the admin: the project changed, the key cleared.
    stored.kind, stored.vertex, stored.project = "gemini", True, "p-1"
    stored.base_url = ""
    endpoint_save(endpoint=stored)
    assert ModelEndpoint.objects.get(pk=stored.pk).api_key_encrypted == ""
    assert KEY not in caplog.text


def test_credentials_in_a_base_url_reach_no_log_line_and_no_admin_list(staff, caplog):
    from agents.llm.masking import RedactCredentials

    endpoint_save(
        endpoint=ModelEndpoint(
            name="with-password",
            kind="openai",
            model="m",
            base_url="https://bob:hunter2-secret@models.example.com/v1",
        ),
        api_key="k",
    )
    admin = Client()
    admin.force_login(staff)
    page = admin.get("/admin/agents/modelendpoint/").content.decode()
    assert "with-password" in page and "hunter2-secret" not in page
    assert "https://***@models.example.com/v1" in page
    # The filter every log handler has (designer/settings.py): httpx's request line masked.
    record = logging.LogRecord(
        "httpx",
        logging.INFO,
        __file__,
        1,
        'HTTP Request: %s %s "%s"',
        ("POST", "https://bob:hunter2-secret@models.example.com/v1/chat", "200 OK"),
        None,
    )
    RedactCredentials().filter(record)
    assert "hunter2-secret" not in record.getMessage()
    assert "https://***@models.example.com" in record.getMessage()
    assert logging.getLogger("httpx").getEffectiveLevel() >= logging.WARNING
