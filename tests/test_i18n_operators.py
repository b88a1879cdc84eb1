"""French and German for integrators and operators: the API's schema (the descriptions an
integrator reads on /api/docs/), the API's own refusals, and the output of the management
commands (`import_app`, `export_app`, `evaluate`) in the operator's language."""

from __future__ import annotations

import io
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from agents.core.diagnostics import Message, message_data
from tests.test_live_runs import bank_app  # noqa: F401  (a fixture: the live bank app)

# What the schema may say in English in every language: names of things, not sentences.
SAME_IN_EVERY_LANGUAGE = {
    "",
    "Statecraft API",
    "max_steps, max_code_calls, max_seconds, max_model_calls, max_tokens.",
}
# An enum whose labels are its values (`web`, `queued`): identifiers, the same everywhere.
IDENTIFIERS = re.compile(r"\* `(\w+)` - \1(\n\* `(\w+)` - \3)*")


def _texts(node, found):
    """Every description, summary and title of an OpenAPI document."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in {"description", "summary", "title"} and isinstance(value, str):
                found.add(value)
            else:
                _texts(value, found)
    elif isinstance(node, list):
        for value in node:
            _texts(value, found)
    return found


def _schema(client, language):
    response = client.get("/api/schema/?format=json", HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 200
    return json.loads(response.content)


@pytest.mark.django_db
@pytest.mark.parametrize("language", ["fr", "de"])
def test_the_api_schema_reads_in_french_and_german(user, language):
    client = APIClient()
    client.force_login(user)
    english = _texts(_schema(client, "en"), set())
    other = _texts(_schema(client, language), set())
    assert len(english) > 150
    left = sorted(
        text for text in english & other - SAME_IN_EVERY_LANGUAGE if not IDENTIFIERS.fullmatch(text)
    )
    assert not left, f"{len(left)} descriptions still in English, e.g. {left[:8]}"


@pytest.mark.django_db
def test_the_schema_in_french_keeps_its_shape(user):
    """Only words change: paths, operation ids, fields and enums are the same."""
    client = APIClient()
    client.force_login(user)
    english, french = _schema(client, "en"), _schema(client, "fr")
    assert english["paths"].keys() == french["paths"].keys()
    assert english["components"]["schemas"].keys() == french["components"]["schemas"].keys()
    variable = french["components"]["schemas"]["VariableIn"]["properties"]
    assert variable.keys() == english["components"]["schemas"]["VariableIn"]["properties"].keys()
    assert variable["type"] == english["components"]["schemas"]["VariableIn"]["properties"]["type"]
    assert variable["default"]["description"].startswith("JSON typé : un nombre")
    assert "valeur par défaut" in json.dumps(french, ensure_ascii=False)
    # drf-spectacular's `?lang=` says it too (a link to the schema in one language).
    response = client.get("/api/schema/?format=json&lang=de", HTTP_ACCEPT_LANGUAGE="en")
    assert "Standardwert" in response.content.decode()


# ---------------------------------------------------------------- the API's own refusals


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("language", "words"),
    [
        ("fr", "Cette application n'a pas de schéma nommé 'Nope'"),
        ("de", "kein Schema namens 'Nope'"),
    ],
)
def test_an_unknown_schema_is_refused_in_the_readers_language(user, shop, language, words):
    client = APIClient()
    client.force_login(user)
    response = client.post(
        f"/api/apps/{shop.pk}/variables/",
        {"name": "order", "type": "object", "schema": "Nope"},
        format="json",
        HTTP_ACCEPT_LANGUAGE=language,
    )
    assert response.status_code == 400
    assert words in response.json()["diagnostics"][0]["message"]
    assert response.json()["diagnostics"][0]["field"] == "schema"


# ---------------------------------------------------------------- the commands


def test_the_environment_names_the_language_the_way_gettext_reads_it():
    from agents.management.language import environment_language

    assert environment_language({"LANG": "de_DE.UTF-8"}) == "de"
    assert environment_language({"LANG": "fr_CA.UTF-8"}) == "fr"
    assert environment_language({"LANGUAGE": "xx:de:fr", "LANG": "fr_FR.UTF-8"}) == "de"
    assert environment_language({"LC_ALL": "fr_FR.UTF-8", "LANG": "de_DE.UTF-8"}) == "fr"
    assert environment_language({"LC_ALL": "C.UTF-8", "LANG": "de_DE.UTF-8"}) is None
    assert environment_language({"LANG": "ja_JP.UTF-8"}) is None
    assert environment_language({}) is None


@pytest.mark.django_db
def test_evaluate_speaks_german_with_language_set_and_keeps_codes_and_junit(
    tmp_path, monkeypatch, user, shop
):
    from tests.test_evaluate_command import break_add_to_cart

    break_add_to_cart(shop, user)
    monkeypatch.setenv("LANGUAGE", "de")
    out, junit = io.StringIO(), tmp_path / "report.xml"
    with pytest.raises(CommandError) as raised:
        call_command("evaluate", str(shop.pk), "--junit", str(junit), stdout=out)
    assert raised.value.returncode == 1
    assert str(raised.value) == "1 Szenario ist fehlgeschlagen."
    text = out.getvalue()
    # The status word and the names stay (a pipeline greps them); the sentences are German.
    assert "FAIL  Shopping assistant / Shopping Assistant / Buy a product" in text
    assert "0 bestanden, 2 fehlgeschlagen, 0 brauchen ein Modell" in text
    assert "Schritt 4" in text
    assert "cart_total: 39 erwartet, erhalten: 42" in text  # the stored result, in German
    assert " passed" not in text and " failed" not in text and "step " not in text
    # The JUnit XML is a file for tools: the same in every language.
    failure = ET.parse(junit).getroot().find(".//testcase[@name='Buy a product']/failure")
    assert "2 of 2 expectations failed" in failure.get("message")
    assert "expected 39, got 42" in failure.text


@pytest.mark.django_db
def test_import_app_in_french_with_the_language_option(tmp_path, user):
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": "statecraft.app", "version": 1, "app": {"name": 3}}')
    err = io.StringIO()
    with pytest.raises(CommandError) as raised:
        call_command(
            "import_app", str(broken), "--owner", user.username, "--language", "fr", stderr=err
        )
    assert str(raised.value) == "broken.json : non importé (1 problème) ; rien n'a été créé."
    line = err.getvalue().strip().splitlines()[0]
    assert line.startswith("broken.json: ") and line.endswith("]") and "[SC5" in line
    english = io.StringIO()
    with pytest.raises(CommandError):
        call_command(
            "import_app", str(broken), "--owner", user.username, "--language", "en", stderr=english
        )
    assert line != english.getvalue().strip().splitlines()[0]  # the message itself is French


@pytest.mark.django_db
def test_export_app_in_french_from_lang_writes_the_same_bytes(tmp_path, monkeypatch, shop):
    english, french = tmp_path / "en.zip", tmp_path / "fr.zip"
    call_command("export_app", shop.pk, "--format", "cx", "-o", str(english))
    monkeypatch.setenv("LANGUAGE", "")
    monkeypatch.setenv("LANG", "fr_FR.UTF-8")
    err = io.StringIO()
    call_command("export_app", shop.pk, "--format", "cx", "-o", str(french), stderr=err)
    assert english.read_bytes() == french.read_bytes()
    size = english.stat().st_size
    grouped = f"{size:,}".replace(",", "\xa0")  # French groups thousands with a space
    assert f"{french} écrit ({grouped} octets)." in err.getvalue()
    with pytest.raises(CommandError, match="Aucune application avec l'id 999999"):
        call_command("export_app", 999999)


# ---------------------------------------------------------------- Python errors in the designer


def _failing_callback(code: str):
    from agents.core.simulate import simulate
    from agents.core.spec import (
        AgentSpec,
        AppSpec,
        CallbackKind,
        CallbackSpec,
        ScenarioSpec,
        StepSpec,
    )
    from agents.sandbox import open_session
    from agents.sandbox.code_runner import sandbox_runner

    spec = AppSpec(
        name="Shop",
        agents=(
            AgentSpec(
                name="Root",
                callbacks=(CallbackSpec(CallbackKind.BEFORE_AGENT, code, 0),),
                is_root=True,
            ),
        ),
    )
    scenario = ScenarioSpec(name="s", agent="Root", steps=(StepSpec(kind="user", text="hi"),))
    with open_session() as session:
        result = simulate(spec, scenario, run_code=sandbox_runner(session, memoise=False))
    (error,) = [d for d in result.diagnostics if d.code == "SC410"]
    return error


@pytest.mark.parametrize(
    ("language", "frame"),
    [
        ("fr", "le before_agent_callback de Root a échoué (ligne 2) : exception : "),
        ("de", "der before_agent_callback von Root ist fehlgeschlagen (Zeile 2): Ausnahme: "),
    ],
)
def test_a_failing_callback_reads_in_the_language_its_exception_verbatim(language, frame):
    """The frame (what failed, where, the kind of failure) is translated; what Python raised
    in the designer's code is the program's output and stays as Python wrote it."""
    from django.utils import translation

    from agents.i18n import localize

    error = _failing_callback(
        "def before_agent_callback(callback_context):\n    return undefined_name\n"
    )
    assert error.message.startswith(
        "the before_agent_callback of Root failed (line 2): exception: "
    )
    with translation.override(language):
        shown = localize(error.message)
    assert shown.startswith(frame), shown
    assert "NameError: name 'undefined_name' is not defined" in shown
    assert error.code == "SC410"


@pytest.mark.parametrize(
    ("language", "words"),
    [
        ("fr", "délai d'attente : temps imparti dépassé"),
        ("de", "Zeitlimit: Laufzeit überschritten"),
    ],
)
def test_the_sandboxs_own_limits_read_in_the_language(language, words):
    from django.utils import translation

    from agents.i18n import localize
    from agents.sandbox.code_runner import error_message

    message = error_message("timeout", "time limit exceeded")
    assert message == "timeout: time limit exceeded"  # the English is unchanged
    with translation.override(language):
        assert localize(message) == words
    big = error_message("output_too_large", "the sandbox answer is larger than 1000 bytes")
    with translation.override(language):
        assert "1000" in localize(big) and "larger" not in localize(big)


# ---------------------------------------------------------------- import reports stored before


@pytest.mark.django_db
def test_an_import_report_stored_before_its_templates_is_shown_as_stored(signed_in, shop):
    """Reports stored before the templates were kept hold English only: each message is
    shown as it was written (no reading back against the catalog: a name in it is never
    taken for a word), and the page says why; a row with its template reads in French."""
    from agents.models import AuditEvent

    old = "the ZIP also has other/app.json; app.json is read and other/app.json kept as it is"
    kept = Message(
        "the ZIP also has %(other)s; %(app_path)s is read and %(other)s kept as it is",
        other="other/app.json",
        app_path="app.json",
    )
    report = {
        "kind": "cx",
        "file": "old.zip",
        "counts": {"error": 0, "warning": 2, "info": 0},
        "files": [
            {
                "file": "app.json",
                "kept_whole": False,
                "diagnostics": [
                    {"severity": "warning", "code": "SC604", "field": "", "message": old},
                    {
                        "severity": "warning",
                        "code": "SC604",
                        "field": "",
                        "message": str(kept),
                        "i18n": message_data(kept),
                    },
                ],
            }
        ],
        "kept_files": 0,
    }
    AuditEvent.objects.create(
        app=shop, app_name=shop.name, action="app.import", object_type="app", after=report
    )
    url = f"/apps/{shop.pk}/import-report"
    french = signed_in.get(url, HTTP_ACCEPT_LANGUAGE="fr").content.decode()
    assert old in french  # as stored
    assert (
        "le ZIP contient aussi other/app.json ; app.json est lu et other/app.json conservé"
        in french
    )
    assert 'data-stored-in-english="1"' in french and "1 message est affiché en anglais" in french


def test_the_reverse_translation_is_gone():
    """Messages are stored as their template and parameters, never read back from English
    with the catalog's templates as patterns (issue 29): no such helper comes back."""
    import agents.i18n
    from agents.services import jobs

    for module in (agents.i18n, jobs):
        for name in ("recovered_message", "_templates", "_msgids", "_plain", "shown_current"):
            assert not hasattr(module, name), f"{module.__name__}.{name} is back"
    root = Path(__file__).resolve().parent.parent
    for where in ("agents", "designer"):
        for path in (root / where).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            assert "recovered_message" not in text, path
            for reading in ("GNUTranslations", "._catalog"):
                assert reading not in text, f"{path} reads the catalog back ({reading})"


# ---------------------------------------------------------------- jobs: results and limits


@pytest.mark.django_db
def test_a_stored_evaluation_reads_in_the_language_of_whoever_reads_it(
    signed_in, user, shop, run_jobs
):
    """A job's result is stored once; its messages keep their templates, so the API answers
    in each request's language (the same codes, values and keys)."""
    from tests.test_evaluate_command import break_add_to_cart

    break_add_to_cart(shop, user)
    location = signed_in.post(f"/api/apps/{shop.pk}/evaluate")["Location"]
    run_jobs()
    bodies = {
        lang: signed_in.get(location, HTTP_ACCEPT_LANGUAGE=lang).json()["result"]
        for lang in ("en", "fr", "de")
    }

    def state(body):
        golden = next(s for s in body["scenarios"] if s["name"] == "Buy a product")
        return next(r for r in golden["results"] if r["kind"] == "state")

    assert state(bodies["en"])["differences"] == ["cart_total: expected 39, got 42"]
    assert state(bodies["de"])["differences"] == ["cart_total: 39 erwartet, erhalten: 42"]
    assert state(bodies["fr"])["message"] != state(bodies["en"])["message"]
    for body in bodies.values():
        assert "i18n" not in json.dumps(body)
        assert state(body)["expected"] == {"cart_total": 39}
    assert bodies["en"]["summary"] == bodies["fr"]["summary"] == bodies["de"]["summary"]


@pytest.mark.django_db
def test_the_job_limit_is_refused_in_german(user, bank, settings):
    settings.JOBS_MAX_ACTIVE_PER_USER = 1
    client = APIClient()
    client.force_login(user)
    scenario = bank.agents.get().scenarios.first()
    # A scenario's evaluation (a second Run all would supersede the first).
    url = f"/api/apps/{bank.pk}/agents/{scenario.agent_id}/scenarios/{scenario.pk}/evaluate"
    assert client.post(url).status_code == 202
    refused = client.post(url, HTTP_ACCEPT_LANGUAGE="de")
    assert refused.status_code == 429
    assert refused.json()["detail"].startswith("Zu viele Jobs: Sie haben 1 wartende")
    assert "JOBS_MAX_ACTIVE_PER_USER=1" in refused.json()["detail"]


# ---------------------------------------------------------------- a default that fails its schema


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("language", "words"),
    [
        ("fr", ["la propriété obligatoire 'id' est absente", "n'est pas un nombre entier"]),
        ("de", ["die erforderliche Eigenschaft 'id' fehlt", "ist nicht eine ganze Zahl"]),
    ],
)
def test_a_default_that_fails_its_schema_is_explained_in_the_language(user, shop, language, words):
    """The JSON Schema problems (missing property, wrong type) are the core's words: they
    read in the designer's language, the names and values in them as typed."""
    client = APIClient()
    client.force_login(user)
    schema = {
        "type": "object",
        "properties": {"id": {"type": "integer"}, "age": {"type": "integer"}},
        "required": ["id"],
    }
    created = client.post(
        f"/api/apps/{shop.pk}/schemas/",
        {"name": "Visitor", "json_schema": schema},
        format="json",
    )
    assert created.status_code == 201, created.json()
    body = {"name": "customer", "type": "object", "schema": "Visitor", "default": {"age": "x"}}
    url = f"/api/apps/{shop.pk}/variables/"
    english = client.post(url, body, format="json", HTTP_ACCEPT_LANGUAGE="en").json()
    other = client.post(url, body, format="json", HTTP_ACCEPT_LANGUAGE=language).json()
    text = " ".join(d["message"] for d in other["diagnostics"])
    for phrase in words:
        assert phrase in text, text
    assert "is missing" not in text and "is not a whole number" not in text
    assert [d["code"] for d in other["diagnostics"]] == [d["code"] for d in english["diagnostics"]]


@pytest.mark.parametrize(
    ("language", "words"),
    [
        ("fr", "la condition se termine trop tôt : il manque une valeur"),
        ("de", "die Bedingung endet zu früh: ein Wert fehlt"),
    ],
)
def test_why_a_condition_cannot_be_read_is_in_the_language(language, words):
    from django.utils import translation

    from agents.core import AgentSpec, AppSpec, lint_app
    from agents.i18n import localize

    app = AppSpec(
        name="Shop",
        agents=(
            AgentSpec(name="Root", instructions="{% if channel == %}web{% endif %}", is_root=True),
        ),
    )
    (problem,) = [d for d in lint_app(app) if d.code == "SC115"]
    assert "the condition ends too early: a value is missing" in problem.message
    with translation.override(language):
        assert words in localize(problem.message)


@pytest.mark.django_db
def test_load_demo_and_purge_expired_speak_the_operators_language(monkeypatch):
    monkeypatch.setenv("LANGUAGE", "fr")
    out = io.StringIO()
    call_command("load_demo", stdout=out)
    assert "Applications de démonstration prêtes : " in out.getvalue()
    assert "nom d'utilisateur : " in out.getvalue()
    out = io.StringIO()
    call_command("purge_expired", "--language", "de", stdout=out)
    assert out.getvalue().startswith("Abgelaufene Sitzungen und 0 beendete")


@pytest.mark.django_db
def test_a_cancelled_jobs_reason_reads_in_the_language(user, bank):
    client = APIClient()
    client.force_login(user)
    location = client.post(f"/api/apps/{bank.pk}/evaluate")["Location"]
    assert client.post(location + "cancel").status_code == 200
    assert client.get(location, HTTP_ACCEPT_LANGUAGE="en").json()["error"] == (
        "Cancelled before it ran."
    )
    assert client.get(location, HTTP_ACCEPT_LANGUAGE="de").json()["error"] == (
        "Abgebrochen, bevor er lief."
    )
    assert client.get(location, HTTP_ACCEPT_LANGUAGE="fr").json()["status"] == "cancelled"


@pytest.mark.django_db
def test_a_queued_import_reads_in_german(signed_in, shop, settings):
    """A state the page crawl never sees (the import still queued) is translated too."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from agents.core.formats import dumps_native
    from agents.services import exchange

    settings.IMPORT_JOB_MIN_BYTES = 0  # every upload imports as a job
    text = dumps_native(exchange.app_export_native(shop), "json").encode()
    response = signed_in.post(
        "/apps/import", {"file": SimpleUploadedFile("shop.json", text)}, HTTP_ACCEPT_LANGUAGE="de"
    )
    page = signed_in.get(response["Location"], HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert "In der Warteschlange: <code>shop.json</code> (eine große Datei)" in page
    progress = re.search(r"<progress [^>]*>([^<]*)</progress>", page)
    assert progress and re.fullmatch(r"\d+ von \d+", progress[1]), progress
    assert "Queued" not in page and "Refresh" not in page


@pytest.mark.django_db
def test_a_large_imports_report_reads_in_the_language_through_the_api(user, settings, run_jobs):
    """An import run as a job keeps its report in the job's result: read in French and in
    German through the API (the same codes and fields), English stored once."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    settings.IMPORT_JOB_MIN_BYTES = 0
    client = APIClient()
    client.force_login(user)
    broken = json.dumps(
        {
            "format": "statecraft.app",
            "version": 1,
            "app": {"name": "Shop", "variables": [{"name": "9 lives", "type": "text"}]},
        }
    ).encode()
    response = client.post(
        "/api/apps/import", {"file": SimpleUploadedFile("shop.json", broken)}, format="multipart"
    )
    assert response.status_code == 202, response.json()
    run_jobs()
    bodies = {
        lang: client.get(response["Location"], HTTP_ACCEPT_LANGUAGE=lang).json()
        for lang in ("en", "fr", "de")
    }
    assert {b["status"] for b in bodies.values()} == {"failed"}
    rows = {
        lang: [r for g in b["result"]["report"]["files"] for r in g["diagnostics"]]
        for lang, b in bodies.items()
    }
    assert [(r["code"], r["field"]) for r in rows["fr"]] == [
        (r["code"], r["field"]) for r in rows["en"]
    ]
    assert any("n'est pas un nom valide" in r["message"] for r in rows["fr"]), rows["fr"]
    assert any("kein gültiger Name" in r["message"] for r in rows["de"]), rows["de"]
    assert bodies["fr"]["result"]["detail"] == "shop.json : non importé ; rien n'a été créé."
    assert bodies["de"]["error"] == "shop.json: nicht importiert; nichts wurde erstellt."
    assert "i18n" not in json.dumps(bodies["fr"])


# ---------------------------------------------------------------- live runs (a real model on loopback)


@pytest.fixture
def loop_model(monkeypatch):
    """A model server on loopback, configured as the endpoint ``loop`` (STATECRAFT_MODELS)."""
    from tests.llm_server import ModelServer, configure_models

    server = ModelServer()
    configure_models(monkeypatch, {"loop": {"server": server}})
    yield server
    server.close()


@pytest.mark.django_db
def test_a_live_runs_auth_error_reads_in_german_and_french_through_the_api(
    user,
    loop_model,
    run_jobs,
    bank_app,  # noqa: F811
):
    """The model refuses the key (HTTP 401): the job's result and a replay of the recorded
    run say so in the request's language; the error's code (`auth`), the endpoint's name,
    the variable's name and the HTTP status are as they are, and the key is nowhere."""
    from tests.llm_server import KEY, openai_error

    app, agent, scenario = bank_app
    loop_model.script(openai_error(401, f"Incorrect API key provided: {KEY}"))
    client = APIClient()
    client.force_login(user)
    url = f"/api/apps/{app.pk}/agents/{agent.pk}/scenarios/{scenario.pk}/simulate"
    response = client.post(url, {"model": "loop"}, format="json")
    assert response.status_code == 202
    assert run_jobs() == 1
    bodies = {
        lang: client.get(response["Location"], HTTP_ACCEPT_LANGUAGE=lang).json()
        for lang in ("en", "de", "fr")
    }
    answers = {lang: body["result"]["calls"][0]["answer"] for lang, body in bodies.items()}
    assert answers["en"]["message"] == (
        "loop refused the API key from LIVE_KEY (HTTP 401): check the key"
    )
    assert answers["de"]["message"] == (
        "loop hat den API-Schlüssel aus LIVE_KEY abgelehnt (HTTP 401): prüfen Sie den Schlüssel"
    )
    assert answers["fr"]["message"].startswith("loop a refusé la clé d'API de LIVE_KEY (HTTP 401)")
    assert {b["result"]["error"] for b in bodies.values()} == {"auth"}
    assert {a["error"] for a in answers.values()} == {"auth"}
    assert all(KEY not in json.dumps(b) and "i18n" not in json.dumps(b) for b in bodies.values())

    run = bodies["en"]["result"]["live_run"]
    queued = client.post(f"/api/apps/{app.pk}/live-runs/{run}/replay")
    assert queued.status_code == 202 and run_jobs() == 1
    replay = client.get(queued["Location"], HTTP_ACCEPT_LANGUAGE="de").json()["result"]
    (problem,) = [d for d in replay["diagnostics"] if d["code"] == "SC421"]
    assert problem["message"] == (
        "Modellaufruf 1 ist fehlgeschlagen (auth): loop hat den API-Schlüssel aus LIVE_KEY "
        "abgelehnt (HTTP 401): prüfen Sie den Schlüssel"
    )
    assert replay["calls"][0]["answer"]["message"].startswith("loop hat den API-Schlüssel")
    assert replay["calls"][0]["answer"]["error"] == "auth"


@pytest.mark.django_db
def test_a_live_goldens_verdicts_and_a_replays_drift_read_in_the_language(
    user,
    loop_model,
    run_jobs,
    bank_app,  # noqa: F811
):
    """The model answers without calling the tool the golden expects: the live golden's
    verdict is German in the evaluate job's result; a replay after the instructions changed
    says in French what changed in the request (the drift)."""
    from agents import services
    from tests.llm_server import openai_text

    app, agent, scenario = bank_app
    loop_model.script(openai_text("Hello, how can I help?"))
    client = APIClient()
    client.force_login(user)
    response = client.post(f"/api/apps/{app.pk}/evaluate", {"model": "loop"}, format="json")
    assert response.status_code == 202
    assert run_jobs() == 1
    bodies = {
        lang: client.get(response.json()["url"], HTTP_ACCEPT_LANGUAGE=lang).json()["result"]
        for lang in ("en", "de")
    }

    def call_result(body):
        (golden,) = body["scenarios"]
        return next(r for r in golden["results"] if r["kind"] == "call")

    assert call_result(bodies["en"])["message"] == (
        "The model did not call LookupBalance in turn 0."
    )
    assert call_result(bodies["de"])["message"] == (
        "Das Modell hat LookupBalance in Runde 0 nicht aufgerufen."
    )
    assert call_result(bodies["de"])["differences"] == ["kein Tool wurde aufgerufen"]
    assert call_result(bodies["de"])["status"] == "failed"

    from agents.models import LiveRun

    recorded = LiveRun.objects.get(scenario=scenario, mode="live")
    services.agent_update(agent=agent, instructions=agent.instructions + "Be brief.\n")
    queued = client.post(f"/api/apps/{app.pk}/live-runs/{recorded.pk}/replay")
    assert queued.status_code == 202 and run_jobs() == 1
    replay = client.get(queued["Location"], HTTP_ACCEPT_LANGUAGE="fr").json()["result"]
    (drift,) = replay["drift"]
    assert drift["call"] == 0
    assert drift["changes"][0].startswith("system_instruction, instructions ligne 4 : "), drift
    (verdict,) = [r for r in replay["results"] if r["kind"] == "call"]
    assert verdict["message"] == "Le modèle n'a pas appelé LookupBalance au tour 0."


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("language", "words"),
    [
        ("fr", 'STATECRAFT_MODELS.m.kind : écrivez "openai" ou "gemini" (reçu \'openia\').'),
        (
            "de",
            'STATECRAFT_MODELS.m.kind: schreiben Sie "openai" oder "gemini" (erhalten: \'openia\').',
        ),
    ],
)
def test_a_bad_statecraft_models_is_refused_in_the_readers_language(
    user, bank, monkeypatch, language, words
):
    """SC480: the operator's typo, named by its field, in the words of whoever asked."""
    monkeypatch.setenv("STATECRAFT_MODELS", json.dumps({"m": {"kind": "openia", "model": "x"}}))
    client = APIClient()
    client.force_login(user)
    response = client.post(
        f"/api/apps/{bank.pk}/evaluate",
        {"model": "m"},
        format="json",
        HTTP_ACCEPT_LANGUAGE=language,
    )
    assert response.status_code == 400
    (problem,) = response.json()["diagnostics"]
    assert problem["code"] == "SC480"
    assert problem["message"] == words


@pytest.mark.parametrize(
    ("language", "path", "progress"),
    [
        ("fr", "orders élément 2.total", "lecture de shop.json"),
        ("de", "orders Element 2.total", "shop.json wird gelesen"),
    ],
)
def test_a_value_path_and_a_jobs_progress_read_in_the_language(language, path, progress):
    from django.utils import translation

    from agents.core.types import path_in_words
    from agents.i18n import localize
    from agents.models import Job, message_columns
    from agents.services.jobs import PROGRESS_READING

    words = path_in_words("orders", [1, "total"])
    assert words == "orders item 2.total"  # the English, as the core writes it
    reading = Job(**message_columns("current", Message(PROGRESS_READING, file="shop.json")))
    name = Job(**message_columns("current", "Shop / Buy a product"))
    assert reading.current == "reading shop.json"  # the English, beside its template
    with translation.override(language):
        assert localize(words) == path
        assert localize(path_in_words(None, [])) in {"valeur", "Wert"}
        assert localize(reading.current_message) == progress
        assert localize(name.current_message) == "Shop / Buy a product"  # names: data


@pytest.mark.django_db
def test_the_designers_live_panel_reads_in_german(
    signed_in,
    loop_model,
    run_jobs,
    settings,
    bank_app,  # noqa: F811
):
    """Run live in the designer, in German: the run stops at its cap (SC421 in German, the
    cap's code as it is); a replay after the instructions changed shows the drift's change
    in German. The panel is what a worker's job left (the job's result)."""
    from django.urls import reverse

    from agents import services
    from agents.models import Job, LiveRun
    from tests.llm_server import openai_stream_call
    from tests.test_live_runs import INSTRUCTIONS

    headers = {"HX-Request": "true", "Accept-Language": "de"}
    app, agent, scenario = bank_app
    settings.LIVE_MAX_MODEL_CALLS = 1
    loop_model.script(openai_stream_call("LookupBalance", "{}"))  # the designer streams

    def panel(data):
        url = reverse("agent-simulate", args=[app.pk, agent.pk])
        assert signed_in.post(url, data, headers=headers).status_code == 200
        job = Job.objects.filter(kind="live_run").order_by("-created_at").first()
        assert run_jobs() >= 1
        page = signed_in.get(reverse("live-job", args=[app.pk, agent.pk, job.pk]), headers=headers)
        return page.content.decode()

    html = panel({"scenario": scenario.pk, "model": "loop", "live": "1"})
    assert (
        "kein weiterer Modellaufruf (Obergrenze): die Ausführung hat ihre Obergrenze von 1 "
        "Modellaufrufen erreicht"
    ) in html
    assert "der Modellaufruf hat in Runde 0 eine Ausnahme ausgelöst" in html
    assert "the model call" not in html and "reached its cap" not in html
    assert "Modellaufruf 1: 15+6 tok · kein Preis" in html  # the endpoint has no price: said so
    assert "reached its cap" not in html
    run = LiveRun.objects.get(mode="live")
    services.agent_update(agent=agent, instructions=INSTRUCTIONS.replace("Always", "Please"))
    html = panel({"scenario": scenario.pk, "replay": run.pk})
    assert "Abweichung bei Aufruf 1" in html
    assert "Anweisungen Zeile 3: " in html and "instructions line" not in html


@pytest.mark.parametrize(
    ("language", "words"),
    [
        ("fr", "la propriété 'b' est obligatoire quand 'a' est présente"),
        ("de", "die Eigenschaft 'b' ist erforderlich, wenn 'a' vorhanden ist"),
    ],
)
def test_a_dependent_property_reads_in_the_language(language, words):
    """A JSON Schema keyword jsonschema describes in English (`dependentRequired`) is the
    core's own words, in the reader's language."""
    from django.utils import translation
    from jsonschema import Draft202012Validator

    from agents.core.types import describe_validation_error
    from agents.i18n import localize

    (error,) = Draft202012Validator({"dependentRequired": {"a": ["b"]}}).iter_errors({"a": 1})
    with translation.override(language):
        assert localize(describe_validation_error(error)) == words


@pytest.mark.django_db
def test_evaluate_with_a_model_says_why_the_live_run_stopped_in_the_operators_language(
    monkeypatch,
    loop_model,
    bank_app,  # noqa: F811
):
    """`evaluate --model` against a model that refuses the key, with LANGUAGE=de: the
    reason (SC421) in German, the code `auth` and the status word as they are."""
    from tests.llm_server import openai_error

    app, _agent, _scenario = bank_app
    loop_model.script(openai_error(401, "Incorrect API key provided"))
    monkeypatch.setenv("LANGUAGE", "de")
    out = io.StringIO()
    with pytest.raises(CommandError):
        call_command("evaluate", str(app.pk), "--model", "loop", stdout=out)
    text = out.getvalue()
    assert "FAIL  Live bank / banking_agent / Balance live" in text
    assert ", Fehler: auth]" in text  # the code as it is
    assert (
        "SC421: Modellaufruf 1 ist fehlgeschlagen (auth): loop hat den API-Schlüssel aus "
        "LIVE_KEY abgelehnt (HTTP 401): prüfen Sie den Schlüssel"
    ) in text
    assert "refused the API key" not in text


@pytest.mark.django_db
def test_a_simulations_bounds_read_in_french_through_the_api(user, bank, settings):
    """SC470 (a scenario past SIMULATION_MAX_STEPS) in French, the setting's name and the
    numbers as they are; the same code in English."""
    from agents.models import Scenario

    settings.SIMULATION_MAX_STEPS = 1
    scenario = Scenario.objects.filter(agent__app=bank).first()
    client = APIClient()
    client.force_login(user)
    url = f"/api/apps/{bank.pk}/agents/{scenario.agent_id}/scenarios/{scenario.pk}/simulate"
    bodies = {
        lang: client.post(url, {}, format="json", HTTP_ACCEPT_LANGUAGE=lang).json()
        for lang in ("en", "fr")
    }
    (english,) = [d for d in bodies["en"]["diagnostics"] if d["code"] == "SC470"]
    (french,) = [d for d in bodies["fr"]["diagnostics"] if d["code"] == "SC470"]
    steps = len(scenario.to_spec().steps)
    assert english["message"].startswith(f"The scenario has {steps} steps; only the first 1")
    assert french["message"] == (
        f"Le scénario a {steps} étapes ; seules les 1 premières sont simulées "
        "(SIMULATION_MAX_STEPS). Découpez-le en scénarios plus courts."
    )


@pytest.mark.django_db
def test_a_simulated_users_verdicts_read_in_german_through_the_api(
    user,
    loop_model,
    run_jobs,
    bank_app,  # noqa: F811
):
    """A CX evaluation of the scenario kind run live (a simulated user, then the judge):
    the expectation's verdict and the judge's fallback are German in the job's result; the
    judge's own reasons are its text (none here: it answered no JSON)."""
    from agents import services
    from agents.models import AgentApp
    from tests.llm_server import openai_call, openai_text

    app, _agent, scenario = bank_app
    evaluation = {
        "displayName": "Simulated balance question",
        "scenario": {
            "task": "Ask for the balance of your current account.",
            "rubrics": ["The agent tells the user the balance."],
            "scenarioExpectations": [
                {"toolExpectation": {"expectedToolCall": {"tool": "LookupBalance"}}}
            ],
            "maxTurns": 2,
        },
    }
    services.scenario_delete(scenario=scenario)  # only the CX evaluation runs
    path = "evaluations/Simulated/Simulated.json"
    AgentApp.objects.filter(pk=app.pk).update(cx={"files": {path: json.dumps(evaluation)}})
    loop_model.script(
        openai_text("What is my current account balance?"),  # the simulated user
        openai_call("LookupBalance", {}),  # the agent
        openai_text("Your balance is 1,250 EUR."),
        openai_text("END"),  # the user is done
        openai_text("I would rather not say."),  # the judge, without JSON
    )
    client = APIClient()
    client.force_login(user)
    response = client.post(f"/api/apps/{app.pk}/evaluate", {"model": "loop"}, format="json")
    assert response.status_code == 202
    assert run_jobs() == 1
    body = client.get(response.json()["url"], HTTP_ACCEPT_LANGUAGE="de").json()["result"]
    (simulated,) = body["scenarios"]
    messages = {r["kind"]: r["message"] for r in simulated["results"]}
    assert messages == {
        "call": "Der Agent hat LookupBalance aufgerufen.",
        "rubric": "das Bewertungsmodell hat es nicht bewertet",
    }
    assert "i18n" not in json.dumps(body)
