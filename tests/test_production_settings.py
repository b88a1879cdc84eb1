"""Production settings (designer.settings with DEBUG off), in a child process as deployed:
`check --deploy` is clean and the responses carry CSP, frame, cookie and HSTS headers."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

PROBE = textwrap.dedent(
    """
    import io, json, django
    django.setup()
    from django.core.management import call_command
    from django.core.management.base import SystemCheckError
    from django.contrib.auth import get_user_model
    from django.test import Client

    checked = io.StringIO()
    try:
        call_command("check", deploy=True, fail_level="WARNING", stdout=checked, stderr=checked)
        check = {"ok": True, "output": checked.getvalue()}
    except SystemCheckError as error:
        check = {"ok": False, "output": checked.getvalue() + str(error)}
    # The manifest storage needs collectstatic before a page renders.
    call_command("collectstatic", interactive=False, verbosity=0)
    call_command("migrate", verbosity=0)
    get_user_model().objects.create_user(username="ada", password="pw-ada-123456")
    client = Client(HTTP_HOST="statecraft.example.com")
    plain = client.get("/accounts/login/")
    page = client.get("/accounts/login/", secure=True)
    token = page.cookies["csrftoken"]
    signed = client.post(
        "/accounts/login/",
        {"username": "ada", "password": "pw-ada-123456", "csrfmiddlewaretoken": token.value},
        secure=True,
        HTTP_REFERER="https://statecraft.example.com/accounts/login/",
    )
    session = signed.cookies["sessionid"]
    docs = client.get("/api/docs/", secure=True)
    print(json.dumps({
        "check": check,
        "plain_status": plain.status_code,
        "plain_location": plain.get("Location"),
        "status": page.status_code,
        "headers": dict(page.headers),
        "docs_status": docs.status_code,
        "docs_csp": docs.get("Content-Security-Policy"),
        "signed_status": signed.status_code,
        "csrf_cookie": {"secure": token["secure"], "samesite": token["samesite"]},
        "session_cookie": {
            "secure": session["secure"], "httponly": session["httponly"],
            "samesite": session["samesite"],
        },
    }))
    """
)


def production_env(tmp_path: Path) -> dict[str, str]:
    # The test process sets DJANGO_ALLOW_ASYNC_UNSAFE for Playwright; a deployment does not.
    dropped = {"DEBUG", "DATABASE_URL", "DJANGO_ALLOW_ASYNC_UNSAFE", "SECURE_SSL_REDIRECT"}
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env.update(
        DJANGO_SETTINGS_MODULE="designer.settings",
        SECRET_KEY="prod-like-" + "k" * 60 + "-9f8e7d6c5b4a",
        ALLOWED_HOSTS="statecraft.example.com",
        CSRF_TRUSTED_ORIGINS="https://statecraft.example.com",
        DATABASE_URL=f"sqlite:///{tmp_path / 'prod.sqlite3'}",
        STATIC_ROOT=str(tmp_path / "static"),
    )
    return env


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


# One worker runs the module, so the probe's child process starts once per run.
pytestmark = pytest.mark.xdist_group("production-settings")


@pytest.fixture(scope="module")
def probe(tmp_path_factory, _migrated_sqlite) -> dict:
    """One child process as deployed: `check --deploy`, collectstatic, migrate, requests.

    The database starts as a copy of the run's migrated one (tests/conftest.py): its
    `migrate` then only checks that nothing is left to apply."""
    tmp = tmp_path_factory.mktemp("prod")
    env = production_env(tmp)
    shutil.copyfile(_migrated_sqlite, tmp / "prod.sqlite3")
    result = run(["-c", PROBE], env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_check_deploy_is_clean(probe):
    assert probe["check"]["ok"], probe["check"]["output"]
    assert "System check identified no issues" in probe["check"]["output"]


def test_http_is_redirected_to_https(probe):
    assert probe["plain_status"] == 301
    assert probe["plain_location"] == "https://statecraft.example.com/accounts/login/"


def test_the_content_security_policy_allows_only_the_app(probe):
    assert probe["status"] == 200
    csp = dict(
        part.strip().split(" ", 1)
        for part in probe["headers"]["Content-Security-Policy"].split(";")
    )
    assert csp["default-src"] == "'self'"
    assert csp["script-src"] == "'self'"
    assert csp["style-src"] == "'self'"
    assert csp["frame-ancestors"] == "'none'"
    assert csp["form-action"] == "'self'"
    assert csp["object-src"] == "'none'"
    assert "unsafe-inline" not in probe["headers"]["Content-Security-Policy"]
    assert "unsafe-eval" not in probe["headers"]["Content-Security-Policy"]
    assert probe["docs_status"] == 200
    assert probe["docs_csp"] == probe["headers"]["Content-Security-Policy"]


def test_framing_sniffing_referrer_and_hsts_headers(probe):
    headers = probe["headers"]
    assert headers["X-Frame-Options"] == "DENY"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Referrer-Policy"] == "same-origin"
    assert headers["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"


def test_cookies_are_secure_httponly_and_same_site(probe):
    assert probe["signed_status"] == 302
    assert probe["session_cookie"] == {"secure": True, "httponly": True, "samesite": "Lax"}
    assert probe["csrf_cookie"] == {"secure": True, "samesite": "Lax"}
