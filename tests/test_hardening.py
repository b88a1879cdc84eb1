"""Web hardening (issue #12): auth without Basic, throttles driven by the clock, CSP and
escaping of page data, no 500s, no leaks, import limits. Real HTTP through the URL conf."""

from __future__ import annotations

import base64
import json
import logging
import re

import pytest
from django.db import DatabaseError, connection
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from agents import services
from agents.models import AgentApp, Tool, Variable
from server import ratelimit

pytestmark = pytest.mark.django_db

BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


class Clock:
    """The rate limits' clock, moved by the test (no sleeps)."""

    def __init__(self) -> None:
        self.t = 1_800_000_000.0

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


@pytest.fixture
def clock(monkeypatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(ratelimit, "now", clock)
    return clock


def basic(username: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


# ---------------------------------------------------------------- CSRF through HTTP Basic


def test_a_cross_site_post_with_cached_basic_credentials_creates_nothing(bank):
    """The probe's forged write: a browser replays Basic credentials on a form POST."""
    client = Client(enforce_csrf_checks=True)
    response = client.post(
        f"/api/apps/{bank.pk}/variables/",
        {"name": "forged", "type": "text"},
        HTTP_AUTHORIZATION=basic("ada", "pw-ada-123456"),
        HTTP_ORIGIN="https://evil.example",
    )
    assert response.status_code == 401
    assert not response.get("WWW-Authenticate", "").lower().startswith("basic")
    assert not Variable.objects.filter(app=bank, name="forged").exists()


def test_no_api_answer_challenges_a_browser_with_basic(bank):
    client = Client()
    for path in ("/api/apps/", f"/api/apps/{bank.pk}/", "/api/schema/"):
        response = client.get(path, HTTP_ACCEPT=BROWSER_ACCEPT)
        assert "basic" not in response.get("WWW-Authenticate", "").lower(), path


def test_session_writes_need_the_csrf_token(bank, user):
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    response = client.post(
        f"/api/apps/{bank.pk}/variables/",
        json.dumps({"name": "no_token", "type": "text"}),
        content_type="application/json",
    )
    assert response.status_code == 403
    assert "CSRF" in response.json()["detail"]
    assert not Variable.objects.filter(app=bank, name="no_token").exists()


def test_a_token_writes_without_a_session(bank, user):
    token = Token.objects.create(user=user)
    client = APIClient(enforce_csrf_checks=True)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    response = client.post(
        f"/api/apps/{bank.pk}/variables/",
        {"name": "by_token", "type": "text", "description": "x"},
        format="json",
    )
    assert response.status_code == 201
    assert Variable.objects.filter(app=bank, name="by_token").exists()


def test_the_token_page_creates_shows_once_replaces_and_revokes(signed_in, user, bank):
    url = reverse("api-token")
    assert "You have no API token." in signed_in.get(url).content.decode()
    page = signed_in.post(url, {"action": "create"}).content.decode()
    key = Token.objects.get(user=user).key
    assert key in page
    assert key not in signed_in.get(url).content.decode()  # shown once
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert api.get("/api/apps/").status_code == 200
    signed_in.post(url, {"action": "create"})
    assert Token.objects.get(user=user).key != key
    assert api.get("/api/apps/").status_code == 401  # the old key no longer works
    signed_in.post(url, {"action": "revoke"})
    assert not Token.objects.filter(user=user).exists()
    assert signed_in.post(url, {"action": "steal"}).status_code == 400


def test_the_app_list_links_the_token_page(signed_in):
    assert reverse("api-token") in signed_in.get(reverse("app-list")).content.decode()


def test_operators_manage_tokens_in_the_admin(client, staff, user):
    Token.objects.create(user=user)
    client.force_login(staff)
    response = client.get("/admin/authtoken/tokenproxy/")
    assert response.status_code == 200
    assert "ada" in response.content.decode()


# ---------------------------------------------------------------- sign-in throttling


def _login(client: Client, username: str, password: str, **extra) -> int:
    response = client.post(reverse("login"), {"username": username, "password": password}, **extra)
    return response


def test_wrong_passwords_lock_the_account_until_the_window_ends(client, user, clock):
    for _ in range(5):
        assert _login(client, "ada", "wrong").status_code == 200
    response = _login(client, "ada", "pw-ada-123456")
    assert response.status_code == 200  # the right password is refused now
    assert "Too many failed sign-ins" in response.content.decode()
    assert "_auth_user_id" not in client.session
    clock.advance(15 * 60)
    assert _login(client, "ada", "pw-ada-123456").status_code == 302
    assert client.session["_auth_user_id"] == str(user.pk)


def test_the_lockout_message_says_how_long(client, user, clock):
    for _ in range(5):
        _login(client, "ada", "wrong")
    clock.advance(60)
    page = _login(client, "ada", "pw-ada-123456").content.decode()
    assert "at most 5 per 15 minutes" in page
    assert "Try again in 14 minutes" in page


def test_one_address_trying_many_accounts_is_throttled(client, user, django_user_model, clock):
    for n in range(20):  # 20 failures, 4 per account: no account reaches its own limit
        _login(client, f"user{n % 5}", "wrong")
    django_user_model.objects.create_user(username="eve", password="pw-eve-123456")
    response = _login(client, "eve", "pw-eve-123456")
    assert "Too many failed sign-ins" in response.content.decode()
    other_address = Client()
    response = _login(other_address, "eve", "pw-eve-123456", REMOTE_ADDR="10.0.0.9")
    assert response.status_code == 302


def test_a_success_clears_the_account_count(client, user, clock):
    for _ in range(4):
        _login(client, "ada", "wrong")
    assert _login(client, "ada", "pw-ada-123456").status_code == 302
    fresh = Client()
    for _ in range(4):
        _login(fresh, "ada", "wrong")
    assert _login(fresh, "ada", "pw-ada-123456").status_code == 302


def test_the_admin_login_is_throttled_too(client, staff, clock):
    url = reverse("admin:login")
    for _ in range(5):
        client.post(url, {"username": "operator", "password": "wrong"})
    response = client.post(url, {"username": "operator", "password": "pw-op-123456"})
    assert response.status_code == 200
    assert "Too many failed sign-ins" in response.content.decode()
    clock.advance(15 * 60)
    response = client.post(url, {"username": "operator", "password": "pw-op-123456"})
    assert response.status_code == 302


def test_the_backend_refuses_a_locked_account_whatever_calls_it(rf, user, clock):
    from django.contrib.auth import authenticate

    request = rf.post("/")
    for _ in range(5):
        assert authenticate(request, username="ada", password="wrong") is None
    assert authenticate(request, username="ada", password="pw-ada-123456") is None
    clock.advance(15 * 60)
    assert authenticate(request, username="ada", password="pw-ada-123456") == user


@override_settings(NUM_PROXIES=1)
def test_behind_a_proxy_the_address_is_the_forwarded_one(client, user, clock):
    for n in range(20):
        _login(client, f"nobody{n}", "wrong", HTTP_X_FORWARDED_FOR="10.0.0.1, 203.0.113.7")
    blocked = _login(client, "ada", "pw-ada-123456", HTTP_X_FORWARDED_FOR="10.0.0.2, 203.0.113.7")
    assert "Too many failed sign-ins" in blocked.content.decode()
    assert (
        _login(client, "ada", "pw-ada-123456", HTTP_X_FORWARDED_FOR="203.0.113.8").status_code
        == 302
    )


# ---------------------------------------------------------------- API and expensive endpoints


@override_settings(RATE_LIMITS={**ratelimit.settings.RATE_LIMITS, "api-anon": "3/m"})
def test_the_api_throttles_anonymous_requests(clock):
    """The OpenAPI document is the one API answer open to anyone (the rest answer 401 first)."""
    client = APIClient()
    assert [client.get("/api/schema/").status_code for _ in range(4)] == [200, 200, 200, 429]
    clock.advance(60)
    assert client.get("/api/schema/").status_code == 200


@override_settings(RATE_LIMITS={**ratelimit.settings.RATE_LIMITS, "api-user": "5/h"})
def test_the_api_throttles_each_integrator(bank, user, other_user, clock):
    mine, theirs = APIClient(), APIClient()
    mine.force_authenticate(user)
    theirs.force_authenticate(other_user)
    assert [mine.get("/api/apps/").status_code for _ in range(6)] == [200] * 5 + [429]
    response = mine.get("/api/apps/")
    assert response["Retry-After"] == "3600"
    assert "throttled" in response.json()["detail"]
    assert theirs.get("/api/apps/").status_code == 200  # per user
    clock.advance(3600)
    assert mine.get("/api/apps/").status_code == 200


@override_settings(RATE_LIMITS={**ratelimit.settings.RATE_LIMITS, "compile": "2/m"})
def test_api_compile_is_rate_limited_per_user(bank, user, clock):
    api = APIClient()
    api.force_authenticate(user)
    agent = bank.agents.get(is_root=True)
    url = f"/api/apps/{bank.pk}/agents/{agent.pk}/compile"
    assert [api.post(url, {}, format="json").status_code for _ in range(3)] == [200, 200, 429]
    clock.advance(60)
    assert api.post(url, {}, format="json").status_code == 200


@override_settings(RATE_LIMITS={**ratelimit.settings.RATE_LIMITS, "simulate": "1/m"})
def test_api_and_page_simulate_share_one_limit(bank, user, clock):
    api = APIClient()
    api.force_authenticate(user)
    agent = bank.agents.get(is_root=True)
    scenario = agent.scenarios.first()
    url = f"/api/apps/{bank.pk}/agents/{agent.pk}/scenarios/{scenario.pk}/simulate"
    assert api.post(url, {"use_mocks": True}, format="json").status_code == 200
    assert api.post(url, {"use_mocks": True}, format="json").status_code == 429
    page = Client()
    page.force_login(user)
    response = page.post(reverse("agent-simulate", args=[bank.pk, agent.pk]), {"use_mocks": "on"})
    assert response.status_code == 429


@pytest.mark.parametrize(
    ("scope", "what"),
    [
        ("preview", "previews"),
        ("simulate", "simulations"),
        ("example", "example values"),
        ("import", "imports"),
    ],
)
def test_each_expensive_page_endpoint_answers_429_over_its_rate(
    signed_in, bank, clock, scope, what
):
    agent = bank.agents.get(is_root=True)
    url, data = {
        "preview": (reverse("agent-preview", args=[bank.pk, agent.pk]), {"instructions": "x"}),
        "simulate": (reverse("agent-simulate", args=[bank.pk, agent.pk]), {"use_mocks": "on"}),
        "example": (reverse("schema-example", args=[bank.pk]), {"json_schema": "{}"}),
        "import": (reverse("app-import"), {}),
    }[scope]
    with override_settings(RATE_LIMITS={**ratelimit.settings.RATE_LIMITS, scope: "2/m"}):
        statuses = [signed_in.post(url, data).status_code for _ in range(3)]
        assert statuses[:2] != [429, 429] and statuses[2] == 429
        response = signed_in.post(url, data)
        assert response.status_code == 429
        assert response["Retry-After"] == "60"
        assert response.content.decode() == (
            f"Too many {what}: at most 2 a minute. Try again in 1 minute."
        )
        clock.advance(60)
        assert signed_in.post(url, data).status_code != 429


def test_rates_are_parsed_and_bad_ones_named():
    from django.core.exceptions import ImproperlyConfigured

    assert ratelimit.Rate.parse("5/15m") == ratelimit.Rate(5, 900)
    assert ratelimit.Rate.parse("300/m").describe() == "300 a minute"
    with pytest.raises(ImproperlyConfigured, match="not N/period"):
        ratelimit.Rate.parse("five per minute")


def test_the_rate_limits_setting_refuses_an_unknown_scope(monkeypatch):
    from django.core.exceptions import ImproperlyConfigured

    from designer.settings import rate_limits

    monkeypatch.setenv("RATE_LIMITS", "preview=10/m")
    assert rate_limits({"preview": "300/m", "simulate": "60/m"})["preview"] == "10/m"
    monkeypatch.setenv("RATE_LIMITS", "previews=10/m")
    with pytest.raises(ImproperlyConfigured, match="previews=10/m"):
        rate_limits({"preview": "300/m"})


# ---------------------------------------------------------------- escaping of JSON in pages

BREAKER = "<!--<script>"


def test_a_comment_opener_in_names_and_defaults_cannot_break_the_page_data(signed_in, user):
    app = services.app_create(owner=user, name=f"App {BREAKER}</script>")
    services.variable_create(
        app=app, name="greeting", type="text", default=f"{BREAKER}</script><b>x", description="d"
    )
    services.agent_create(app=app, display_name=f"Helper {BREAKER}")
    page = signed_in.get(reverse("app-designer", args=[app.pk])).content.decode()
    assert "<!--<script>" not in page
    assert "</script><b>" not in page
    data = json.loads(_script_data(page, "completion-data"))
    assert data["variables"][0]["default"] == f"{BREAKER}</script><b>x"
    assert f"Helper {BREAKER}" in data["agents"]
    assert isinstance(json.loads(_script_data(page, "preview-data"))["squiggles"], list)


def _script_data(page: str, element_id: str) -> str:
    match = re.search(
        rf'<script id="{element_id}" type="application/json">(.*?)</script>', page, re.S
    )
    assert match, element_id
    return match.group(1)


def test_no_page_holds_an_inline_script(signed_in, bank):
    agent = bank.agents.get(is_root=True)
    for url in (
        reverse("app-list"),
        reverse("app-designer", args=[bank.pk]) + f"?agent={agent.pk}",
        reverse("app-share", args=[bank.pk]),
        reverse("app-import"),
        reverse("api-token"),
        "/api/docs/",
    ):
        page = signed_in.get(url).content.decode()
        for chunk in page.split("<script")[1:]:
            tag = chunk[: chunk.index(">")]
            assert "src=" in tag or 'type="application/json"' in tag, (url, tag)
        assert " style=" not in page and "<style" not in page, url
        assert " onclick=" not in page and " hx-on" not in page, url


# ---------------------------------------------------------------- 500s


def test_the_api_answers_a_browser_with_json_not_a_500(bank, user):
    client = Client()
    client.force_login(user)
    agent = bank.agents.get(is_root=True)
    scenario = agent.scenarios.first()
    tool = bank.tools.first()
    variable = bank.variables.first()
    base = f"/api/apps/{bank.pk}/"
    paths = [
        "/api/apps/",
        base,
        base + "lint",
        base + "variables/",
        base + f"variables/{variable.name}/",
        base + "schemas/",
        base + "tools/",
        base + f"tools/{tool.name}/",
        base + "agents/",
        base + f"agents/{agent.pk}/",
        base + f"agents/{agent.pk}/scenarios/",
        base + f"agents/{agent.pk}/scenarios/{scenario.pk}/",
    ]
    for path in paths:
        response = client.get(path, HTTP_ACCEPT=BROWSER_ACCEPT)
        assert response.status_code == 200, path
        assert response["Content-Type"] == "application/json", path
        response.json()


def test_a_long_app_name_is_a_clear_error_on_create(signed_in, user):
    response = signed_in.post(reverse("app-create"), {"name": "x" * 201})
    assert response.status_code == 400
    assert "at most 200 characters" in response.content.decode()
    api = APIClient()
    api.force_authenticate(user)
    response = api.post("/api/apps/", {"name": "y" * 201}, format="json")
    assert response.status_code == 400
    assert any(d["field"] == "name" for d in response.json()["diagnostics"])
    assert not AgentApp.objects.filter(name__startswith="xxx").exists()


def test_duplicating_an_app_with_a_200_character_name_works(signed_in, user):
    app = services.app_create(owner=user, name="z" * 200)
    for _ in range(2):
        assert signed_in.post(reverse("app-duplicate", args=[app.pk])).status_code == 302
    names = set(AgentApp.objects.exclude(pk=app.pk).values_list("name", flat=True))
    assert names == {"z" * 193 + " (copy)", "z" * 191 + " (copy) 2"}
    assert all(len(n) <= 200 for n in names)


def _nan_app(user):
    app = services.app_create(owner=user, name="NaN")
    agent = app.agents.get()
    tool = services.tool_create(
        app=app, name="Answer", python_code="def Answer(tool_context):\n    return {}\n"
    )
    agent.tools.add(tool)
    return app, agent, tool


def test_a_nan_in_a_tool_step_is_refused_where_it_is_typed(user):
    _, agent, _ = _nan_app(user)
    with pytest.raises(services.ServiceError) as refused:
        services.scenario_save(
            agent=agent, name="s", steps_script='user: hi\ntool: Answer {"a": NaN}'
        )
    assert "NaN is not a JSON number" in refused.value.diagnostics[0].message


def test_a_nan_in_a_mock_answer_is_refused_where_it_is_typed(user):
    _, _, tool = _nan_app(user)
    with pytest.raises(services.ServiceError) as refused:
        services.tool_update(tool=tool, mock_enabled=True, mock_response={"x": float("nan")})
    assert refused.value.diagnostics[0].field == "mock_response"
    assert refused.value.diagnostics[0].code == "SC209"


def test_a_nan_already_stored_makes_api_simulate_a_400_not_a_500(user):
    """Rows saved before the check (or written around the services) still cannot 500."""
    app, agent, tool = _nan_app(user)
    Tool.objects.filter(pk=tool.pk).update(mock_enabled=True, mock_response={"x": float("nan")})
    scenario = services.scenario_save(
        agent=agent, name="s", steps_script="user: hi\ntool: Answer {}"
    )
    api = APIClient()
    api.force_authenticate(user)
    response = api.post(
        f"/api/apps/{app.pk}/agents/{agent.pk}/scenarios/{scenario.pk}/simulate",
        {"use_mocks": True},
        format="json",
    )
    assert response.status_code == 400
    body = response.json()
    assert body["diagnostics"][0]["code"] == "SC209"
    assert "nan is not a JSON number" in body["diagnostics"][0]["message"]


def test_a_nan_from_python_code_is_a_step_error(user):
    app, agent, tool = _nan_app(user)
    services.tool_update(
        tool=tool,
        python_code="import math\ndef Answer(tool_context):\n    return {'x': math.nan}\n",
    )
    scenario = services.scenario_save(
        agent=agent, name="s", steps_script="user: hi\ntool: Answer {}"
    )
    api = APIClient()
    api.force_authenticate(user)
    response = api.post(
        f"/api/apps/{app.pk}/agents/{agent.pk}/scenarios/{scenario.pk}/simulate", {}, format="json"
    )
    assert response.status_code == 200
    assert "JSON cannot represent" in response.json()["diagnostics"][0]["message"]


# ---------------------------------------------------------------- leaks


def test_healthz_logs_the_database_error_and_answers_a_generic_message(client, monkeypatch, caplog):
    from django.db.backends.utils import CursorWrapper

    def broken(self, sql, params=None):
        raise DatabaseError(
            'connection to server at "db.internal" failed: password for "statecraft"'
        )

    monkeypatch.setattr(CursorWrapper, "execute", broken)
    with caplog.at_level(logging.ERROR, logger="designer.views"):
        response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "error" and body["database"] == "unavailable"
    assert body["queue"] == "unavailable"  # the database queue lives in the database
    assert "db.internal" not in response.content.decode()
    assert "db.internal" in caplog.text


def test_the_share_form_answers_the_same_for_known_and_unknown_usernames(
    signed_in, shop, other_user
):
    url = reverse("app-share", args=[shop.pk])
    unknown = signed_in.post(url, {"username": "nobody-here", "role": "viewer"})
    known = signed_in.post(url, {"username": other_user.username, "role": "viewer"})
    assert unknown.status_code == known.status_code == 302
    assert unknown["Location"] == known["Location"]
    messages = [str(m) for m in signed_in.get(url).context["messages"]]
    assert messages == [
        "If “nobody-here” is a Statecraft user, they can now open this app as viewer; "
        "the list below shows everyone it is shared with.",
        "If “bob” is a Statecraft user, they can now open this app as viewer; "
        "the list below shows everyone it is shared with.",
    ]
    bad_role_unknown = signed_in.post(url, {"username": "nobody-here", "role": "admin"})
    bad_role_known = signed_in.post(url, {"username": other_user.username, "role": "admin"})
    assert bad_role_unknown.status_code == bad_role_known.status_code == 400


# ---------------------------------------------------------------- amplification


def _native(variables: int, instructions: str = "") -> bytes:
    return json.dumps(
        {
            "format": "statecraft.app",
            "version": 1,
            "app": {
                "name": "Big",
                "variables": [
                    {"name": f"v{i}", "type": "text", "description": "d"} for i in range(variables)
                ],
                "agents": [{"name": "root", "is_root": True, "instructions": instructions}],
            },
        }
    ).encode()


def _upload(client, data: bytes, name: str):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return client.post(reverse("app-import"), {"file": SimpleUploadedFile(name, data)})


def test_an_import_over_the_object_limit_is_refused_quickly_naming_the_setting(signed_in):
    """Quickly: refused on counting the document, before any object is built or written
    (counted queries: the session, its user and the import's rate-limit count; nothing of
    the import)."""
    with CaptureQueriesContext(connection) as queries:
        response = _upload(signed_in, _native(20_000), "big.json")
    assert response.status_code == 400
    page = response.content.decode()
    assert "20,001 objects" in page and "IMPORT_MAX_OBJECTS" in page
    tables = [
        q["sql"].split(" FROM ")[-1].split()[0].strip('"')
        if q["sql"].startswith("SELECT")
        else q["sql"].split()[2].strip('"')
        for q in queries.captured_queries
    ]
    assert tables == ["django_session", "auth_user", "agents_ratelimitcount"]
    assert len(response.content) < 100_000
    assert not AgentApp.objects.filter(name="Big").exists()


@override_settings(IMPORT_MAX_INSTRUCTIONS_BYTES=1000)
def test_an_import_over_the_instruction_size_is_refused(signed_in):
    response = _upload(signed_in, _native(1, "x" * 1001), "big.json")
    assert response.status_code == 400
    assert "IMPORT_MAX_INSTRUCTIONS_BYTES" in response.content.decode()


@override_settings(IMPORT_MAX_OBJECTS=3)
def test_the_object_limit_applies_to_cx_zips_too(signed_in, user):
    from agents.services import exchange

    app = services.app_create(owner=user, name="Zipped")
    for i in range(3):
        services.variable_create(app=app, name=f"v{i}", type="text", description="d")
    data, _ = exchange.app_export_cx(app)
    response = _upload(signed_in, data, "app.zip")
    assert response.status_code == 400
    assert "IMPORT_MAX_OBJECTS" in response.content.decode()


def test_an_import_under_the_limits_still_works(signed_in):
    response = _upload(signed_in, _native(50), "ok.json")
    assert response.status_code == 302
    assert AgentApp.objects.get(name="Big").variables.count() == 50


def _yaml(size: int) -> bytes:
    """A native YAML document of about `size` bytes (never more)."""
    lines = ["format: statecraft.app\nversion: 1\napp:\n name: Y\n variables:\n"]
    total, i = len(lines[0]), 0
    while True:
        line = f"  - {{name: v{i}, type: text, description: {'d' * 40}}}\n"
        if total + len(line) > size:
            return "".join(lines).encode()
        lines.append(line)
        total, i = total + len(line), i + 1


def test_yaml_over_its_cap_is_refused_naming_the_setting(signed_in):
    response = _upload(signed_in, _yaml(5 * 1024 * 1024 - 1000), "big.yaml")
    assert response.status_code == 400
    assert "IMPORT_MAX_YAML_BYTES" in response.content.decode()


def test_yaml_at_its_cap_parses_with_libyaml():
    """Fast enough at the cap (well under a second here) because libyaml's C parser reads
    it (about 10x the pure-Python one): checked as which parser, not with a stopwatch."""
    import yaml
    from django.conf import settings

    from agents.core import formats
    from agents.core.formats.text import _yaml_loader

    cap = settings.IMPORT_MAX_YAML_BYTES
    doc, problems = formats.loads_native(_yaml(cap), max_yaml_bytes=cap)
    assert problems == ()
    assert len(doc["app"]["variables"]) > 5_000  # ~1 node per 10 bytes: YAML's worst case
    assert issubclass(_yaml_loader(), yaml.CSafeLoader)


def test_yaml_aliases_are_still_refused_with_the_c_loader():
    import yaml

    from agents.core.formats import loads_native
    from agents.core.formats.text import _yaml_loader

    assert issubclass(_yaml_loader(), getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    doc, problems = loads_native(b"a: &x [1, 2]\nb: *x\n")
    assert doc is None
    assert "an alias (*name) repeats another part of the file" in problems[0].message
