"""The Gemini kind on Vertex AI, through google-genai, against the loopback server.

google-genai is pointed at the loopback server with ``base_url`` (its ``http_options``)
and sends what it sends to Google: the Vertex AI paths (``/v1beta1/projects/{p}/
locations/{l}/publishers/google/models/{m}:generateContent``; express mode
``/v1beta1/publishers/google/models/{m}:generateContent``) and headers. With a project,
the credentials are Google's Application Default Credentials read by google-auth from
``GOOGLE_APPLICATION_CREDENTIALS``: a service account key file whose ``token_uri`` is
the loopback server's token endpoint (``GoogleTokenEndpoint``), which checks the JWT
google-auth signs and answers an access token. Nothing is mocked.
"""

from __future__ import annotations

import json

import pytest

from agents.services.live_runs import run_live
from tests import test_live_runs
from tests.llm_server import (
    KEY,
    GoogleTokenEndpoint,
    gemini_call,
    gemini_error,
    gemini_stream,
    gemini_text,
)

pytestmark = pytest.mark.django_db

bank_app = test_live_runs.bank_app  # the banking app with its real LookupBalance tool

PROJECT_PATH = "/v1beta1/projects/proj-x/locations/europe-west4/publishers/google/models/"
EXPRESS_PATH = "/v1beta1/publishers/google/models/"


@pytest.fixture
def vertex(monkeypatch, server, tmp_path):
    """Configure `STATECRAFT_MODELS` with one Vertex AI endpoint named "vx"."""
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_CLOUD_PROJECT"):
        monkeypatch.delenv(name, raising=False)

    def configure(**entry):
        entry = {
            "kind": "gemini",
            "model": "gemini-2.5-flash",
            "vertex": True,
            "base_url": server.url,
            **entry,
        }
        monkeypatch.setenv("STATECRAFT_MODELS", json.dumps({"vx": entry}))

    def credentials(endpoint: GoogleTokenEndpoint) -> GoogleTokenEndpoint:
        key_file = tmp_path / "service-account.json"
        key_file.write_text(json.dumps(endpoint.install(server)), encoding="utf-8")
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key_file))
        return endpoint

    configure.credentials = credentials
    return configure


def test_vertex_with_a_project_uses_the_service_account_token_and_the_project_path(
    server,
    vertex,
    bank_app,
):
    vertex(project="proj-x", location="europe-west4")
    tokens = vertex.credentials(GoogleTokenEndpoint())
    app, agent, scenario = bank_app
    server.script(gemini_call("LookupBalance", {}), gemini_text("Your balance is 1,250 EUR."))
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="vx")
    assert [s.path for s in server.seen] == [PROJECT_PATH + "gemini-2.5-flash:generateContent"] * 2
    for seen in server.seen:
        assert seen.headers["authorization"] == f"Bearer {tokens.token}"
        assert "x-goog-api-key" not in seen.headers
    # google-auth asked the token endpoint once, with a JWT it signed with the file's key.
    assert len(server.routed) == 1 and tokens.claims[0]["iss"] == tokens.email
    first = server.seen[0].body
    assert first["systemInstruction"]["parts"][0]["text"].startswith("If the user asks")
    assert first["tools"][0]["functionDeclarations"][0]["name"] == "LookupBalance"
    response = server.seen[1].body["contents"][2]["parts"][0]["functionResponse"]
    assert response["response"]["balance"] == 1250  # the real tool ran
    assert outcome.error == "" and outcome.evaluation.status == "passed"
    assert outcome.run.model_name == "vx" and outcome.run.cost > 0  # gemini-2.5-flash's price


def test_vertex_streams_on_the_project_path(server, vertex, bank_app):
    vertex(project="proj-x", location="europe-west4")
    vertex.credentials(GoogleTokenEndpoint())
    app, agent, scenario = bank_app
    call = gemini_call("LookupBalance", {}).body
    from tests.llm_server import Reply

    server.script(Reply(stream=[call], done_marker=False), gemini_stream("1,250 ", "EUR."))
    pieces: list[str] = []
    outcome = run_live(
        app=app, agent=agent, scenario=scenario, model="vx", stream=True, on_text=pieces.append
    )
    assert [s.path for s in server.seen] == [
        PROJECT_PATH + "gemini-2.5-flash:streamGenerateContent?alt=sse"
    ] * 2
    assert pieces == ["1,250 ", "EUR."] and outcome.evaluation.status == "passed"


def test_vertex_express_mode_sends_the_api_key_and_no_project(
    server,
    vertex,
    bank_app,
    monkeypatch,
):
    monkeypatch.setenv("VERTEX_KEY", KEY)
    vertex(api_key_env="VERTEX_KEY")
    app, agent, scenario = bank_app
    server.script(gemini_call("LookupBalance", {}), gemini_text("1,250 EUR."))
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="vx")
    assert [s.path for s in server.seen] == [EXPRESS_PATH + "gemini-2.5-flash:generateContent"] * 2
    assert server.seen[0].headers["x-goog-api-key"] == KEY
    assert "authorization" not in server.seen[0].headers
    assert outcome.evaluation.status == "passed"


def test_vertex_express_mode_from_an_admin_endpoint_with_a_stored_key(
    server,
    vertex,
    bank_app,
    monkeypatch,
):
    from agents.models import ModelEndpoint
    from agents.services.live_models import endpoint_save

    monkeypatch.delenv("STATECRAFT_MODELS", raising=False)
    endpoint_save(
        endpoint=ModelEndpoint(
            name="vx-admin",
            kind="gemini",
            model="gemini-2.5-flash",
            base_url=server.url,
            vertex=True,
        ),
        api_key=KEY,
    )
    app, agent, scenario = bank_app
    server.script(gemini_text("Hello."))
    run_live(app=app, agent=agent, scenario=scenario, model="vx-admin")
    assert server.seen[0].path == EXPRESS_PATH + "gemini-2.5-flash:generateContent"
    assert server.seen[0].headers["x-goog-api-key"] == KEY


def test_vertex_without_credentials_is_a_config_error_naming_the_fix(
    server,
    vertex,
    bank_app,
    tmp_path,
    monkeypatch,
):
    vertex(project="proj-x", location="europe-west4")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    app, agent, scenario = bank_app
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="vx")
    assert server.seen == [] and outcome.error == "config"
    problem = next(d for d in outcome.result.diagnostics if d.code == "SC421")
    assert "found no Google credentials" in problem.message
    assert "GOOGLE_APPLICATION_CREDENTIALS" in problem.message


def test_vertex_credentials_google_refuses_are_an_auth_error(
    server,
    vertex,
    bank_app,
):
    vertex(project="proj-x", location="europe-west4")
    tokens = vertex.credentials(GoogleTokenEndpoint(refuse=True))
    app, agent, scenario = bank_app
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="vx")
    assert server.seen == [] and len(server.routed) == 1
    assert outcome.error == "auth"
    assert "refused the machine's credentials" in outcome.calls[0]["answer"]["message"]
    assert tokens.pem not in json.dumps(outcome.run.calls)


def test_vertex_permission_denied_is_an_auth_error(server, vertex, bank_app):
    vertex(project="proj-x", location="europe-west4")
    vertex.credentials(GoogleTokenEndpoint())
    app, agent, scenario = bank_app
    server.script(gemini_error(403, "Permission 'aiplatform.endpoints.predict' denied"))
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="vx")
    assert outcome.error == "auth"


def test_a_gemini_api_endpoint_stays_off_vertex_whatever_the_environment_says(
    server,
    bank_app,
    monkeypatch,
):
    """google-genai reads GOOGLE_GENAI_USE_VERTEXAI when `vertexai` is not given: an
    endpoint configured for the Gemini API must not move to Vertex AI because of it."""
    monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "someone-elses")
    monkeypatch.setenv("LIVE_KEY", KEY)
    entry = {"kind": "gemini", "model": "m", "base_url": server.url, "api_key_env": "LIVE_KEY"}
    monkeypatch.setenv("STATECRAFT_MODELS", json.dumps({"g": entry}))
    app, agent, scenario = bank_app
    server.script(gemini_text("Hello."))
    run_live(app=app, agent=agent, scenario=scenario, model="g")
    assert server.seen[0].path == "/v1beta/models/m:generateContent"


def test_a_gemini_admin_endpoint_without_a_key_does_not_borrow_the_environments(
    server,
    bank_app,
    monkeypatch,
):
    from agents.models import ModelEndpoint
    from agents.services.live_models import endpoint_save

    monkeypatch.delenv("STATECRAFT_MODELS", raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", "someone-elses-key")
    endpoint_save(
        endpoint=ModelEndpoint(name="nokey", kind="gemini", model="m", base_url=server.url)
    )
    app, agent, scenario = bank_app
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="nokey")
    assert server.seen == [] and outcome.error == "config"


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ({"vertex": True}, "STATECRAFT_MODELS.vx.project"),
        (
            {"vertex": True, "project": "p", "api_key_env": "K"},
            "STATECRAFT_MODELS.vx.api_key_env: Vertex AI takes a project",
        ),
        ({"project": "p", "api_key_env": "K"}, "the Gemini API takes no project"),
    ],
)
def test_a_bad_vertex_configuration_names_the_field(entry, field):
    from agents.llm.endpoints import ConfigError, parse_models

    config = json.dumps({"vx": {"kind": "gemini", "model": "m", **entry}})
    with pytest.raises(ConfigError) as raised:
        parse_models(config, {"K": "k"})
    assert field in str(raised.value)


def test_a_vertex_endpoint_parses_both_ways():
    from agents.llm.endpoints import parse_models

    config = {
        "p": {"kind": "gemini", "model": "m", "vertex": True, "project": "proj"},
        "x": {"kind": "gemini", "model": "m", "vertex": True, "api_key_env": "K"},
    }
    found = parse_models(json.dumps(config), {"K": "k"})
    assert (found["p"].location, found["p"].vertex_express) == ("us-central1", False)
    assert (found["x"].location, found["x"].vertex_express) == ("", True)


ADMIN_ADD = "/admin/agents/modelendpoint/add/"


def _admin_form(**fields):
    form = {
        "name": "g",
        "kind": "gemini",
        "model": "gemini-2.5-flash",
        "base_url": "",
        "project": "",
        "location": "",
        "timeout": "5",
        "max_retries": "0",
        "max_concurrent": "8",
        "enabled": "on",
        "api_key": "",
    }
    form.update(fields)
    return form


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"vertex": "on"}, "Vertex AI needs the Google Cloud project, or an API key"),
        ({"vertex": "on", "project": "p", "api_key": "k"}, "not both: remove one"),
        ({"vertex": "on", "location": "europe-west4", "api_key": "k"}, "not both: remove one"),
        ({"project": "p", "api_key": "k"}, "The Gemini API takes no project or location"),
        ({}, "A Gemini API endpoint needs its API key."),
        ({"kind": "openai", "vertex": "on"}, "Only a Gemini endpoint runs on Vertex AI."),
    ],
)
def test_the_admin_refuses_an_endpoint_no_client_could_run(staff, fields, message):
    from django.test import Client

    from agents.models import ModelEndpoint

    client = Client()
    client.force_login(staff)
    answer = client.post(ADMIN_ADD, _admin_form(**fields))
    assert answer.status_code == 200  # the form again, with the message on its field
    assert message in answer.content.decode()
    assert not ModelEndpoint.objects.exists()


def test_the_admin_saves_vertex_with_a_project_or_express_with_a_key(staff):
    from django.test import Client

    from agents import keyring
    from agents.models import ModelEndpoint

    client = Client()
    client.force_login(staff)
    project = _admin_form(name="vp", vertex="on", project="proj-x", location="europe-west4")
    assert client.post(ADMIN_ADD, project).status_code == 302
    assert client.post(ADMIN_ADD, _admin_form(name="vx", vertex="on", api_key=KEY)).status_code
    express = ModelEndpoint.objects.get(name="vx")
    assert keyring.decrypt(express.api_key_encrypted) == KEY
    # Saving the express endpoint again without typing the key keeps it (and passes).
    change = f"/admin/agents/modelendpoint/{express.pk}/change/"
    assert client.post(change, _admin_form(name="vx", vertex="on")).status_code == 302
    assert keyring.decrypt(ModelEndpoint.objects.get(pk=express.pk).api_key_encrypted) == KEY


def test_a_stored_key_the_secret_no_longer_decrypts_is_a_named_config_error(
    server,
    bank_app,
    monkeypatch,
    settings,
):
    from agents.models import ModelEndpoint
    from agents.services.live_models import endpoint_save

    monkeypatch.delenv("STATECRAFT_MODELS", raising=False)
    endpoint_save(
        endpoint=ModelEndpoint(name="o", kind="openai", model="m", base_url=f"{server.url}/v1"),
        api_key=KEY,
    )
    settings.MODEL_KEYS_SECRET = "a-new-secret-after-a-rotation"
    app, agent, scenario = bank_app
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="o")
    assert server.seen == []  # not sent with no key, to fail as a bad key at the provider
    assert outcome.error == "config"
    assert "cannot be decrypted" in outcome.calls[0]["answer"]["message"]


def test_the_vertex_access_token_and_the_service_account_key_are_stored_nowhere(
    server, vertex, bank_app, signed_in, caplog, run_jobs
):
    import logging

    from agents.models import LiveRun

    caplog.set_level(logging.DEBUG)
    vertex(project="proj-x", location="europe-west4")
    tokens = vertex.credentials(GoogleTokenEndpoint(token="ya29.secret-token-5e6f7a"))
    app, agent, scenario = bank_app
    server.script(gemini_call("LookupBalance", {}), gemini_text("1,250 EUR."))
    live = run_live(app=app, agent=agent, scenario=scenario, model="vx")
    assert server.seen[0].headers["authorization"] == "Bearer ya29.secret-token-5e6f7a"
    queued = signed_in.post(f"/api/apps/{app.pk}/live-runs/{live.run.pk}/replay")
    assert queued.status_code == 202 and run_jobs() == 1
    replayed = signed_in.get(queued["Location"])
    assert replayed.json()["status"] == "succeeded"
    everything = "\n".join(
        [
            replayed.content.decode(),
            signed_in.get("/api/models").content.decode(),
            json.dumps(list(LiveRun.objects.values()), default=str),
            "\n".join(r.getMessage() for r in caplog.records),
        ]
    )
    secret_line = tokens.pem.splitlines()[5]  # a line of the private key
    for secret in ("ya29.secret-token-5e6f7a", secret_line):
        assert secret not in everything


def test_a_credential_in_a_base_url_is_not_shown_by_the_api(signed_in, monkeypatch):
    url = "https://proxy-user:s3cr3t-pw@llm.example.com:8443/v1?api-key=qk-77"
    models = {"p": {"kind": "openai", "model": "m", "base_url": url}}
    monkeypatch.setenv("STATECRAFT_MODELS", json.dumps(models))
    answer = signed_in.get("/api/models")
    assert answer.json()[0]["base_url"] == "https://llm.example.com:8443/v1"
    assert "s3cr3t-pw" not in answer.content.decode() and "qk-77" not in answer.content.decode()


def test_vertex_express_mode_with_a_key_google_refuses_is_an_auth_error(
    server, vertex, bank_app, monkeypatch
):
    monkeypatch.setenv("VERTEX_KEY", KEY)
    vertex(api_key_env="VERTEX_KEY")
    app, agent, scenario = bank_app
    server.script(
        gemini_error(
            400, f"API key not valid: {KEY}. Please pass a valid API key.", "API_KEY_INVALID"
        )
    )
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="vx")
    assert outcome.error == "auth"
    message = outcome.calls[0]["answer"]["message"]
    assert "refused the API key from VERTEX_KEY" in message and KEY not in message


# --------------------------------------------------------------------------- the access token
# Issue 30: the access token google-auth obtains for Vertex AI is a secret like a key. Echoed
# by the model (in text, a function's name, an argument's name and value) or by an error
# body, it appears in no stored row and no log line.

ECHO_TOKEN = "ya29_loopbackAccessTokenForMasking"


def _stored_and_logged(caplog) -> str:
    from django.core import serializers

    from agents.models import AuditEvent, LiveRun

    rows = [*LiveRun.objects.all(), *AuditEvent.objects.all()]
    return serializers.serialize("json", rows) + "\n".join(r.getMessage() for r in caplog.records)


def test_a_vertex_access_token_the_model_echoes_is_masked_everywhere(
    server, vertex, bank_app, caplog
):
    vertex(project="proj-x", location="europe-west4")
    vertex.credentials(GoogleTokenEndpoint(token=ECHO_TOKEN))
    app, agent, scenario = bank_app
    echo = gemini_call(f"tool_{ECHO_TOKEN}", {ECHO_TOKEN: f"value {ECHO_TOKEN}"})
    echo.body["candidates"][0]["content"]["parts"].insert(0, {"text": f"I hold {ECHO_TOKEN}."})
    server.script(echo, gemini_text("Done."))
    caplog.set_level("DEBUG")
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="vx")
    assert server.seen[0].headers["authorization"] == f"Bearer {ECHO_TOKEN}"
    shown = json.dumps(
        [[str(e.label), str(e.text), e.source, e.value] for e in outcome.result.events]
        + [str(d.message) for d in outcome.result.diagnostics],
        default=str,
    )
    assert "***" in shown
    assert ECHO_TOKEN not in shown + _stored_and_logged(caplog)


def test_a_vertex_error_body_echoing_the_access_token_is_masked(server, vertex, bank_app, caplog):
    vertex(project="proj-x", location="europe-west4")
    vertex.credentials(GoogleTokenEndpoint(token=ECHO_TOKEN))
    app, agent, scenario = bank_app
    server.script(gemini_error(400, f"Request with token {ECHO_TOKEN} is invalid."))
    caplog.set_level("DEBUG")
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="vx")
    assert outcome.error == "bad_request"
    said = json.dumps(
        [str(d.message) for d in outcome.result.diagnostics] + outcome.calls, default=str
    )
    assert "Request with token ***" in said
    assert ECHO_TOKEN not in said + _stored_and_logged(caplog)
