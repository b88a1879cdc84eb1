"""Export and import through the service and the pages: permissions, round trips, all or nothing."""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import replace

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from agents import services
from agents.core.formats import dumps_native, from_native
from agents.models import Agent, AgentApp, Callback, Job, Scenario, Schema, Tool, Variable
from agents.services import ServiceError, exchange
from designer.views.exchange import WARNINGS_HEADER
from tests.cx_tree import without_cx

pytestmark = pytest.mark.django_db


def _counts() -> dict[str, int]:
    return {
        model.__name__: model.objects.count()
        for model in (AgentApp, Schema, Variable, Tool, Agent, Callback, Scenario)
    }


def _spec_and_scenarios(app: AgentApp):
    return exchange.app_export_specs(app)


def _same_app(imported: AgentApp, original: AgentApp) -> None:
    spec, scenarios = _spec_and_scenarios(original)
    new_spec, new_scenarios = _spec_and_scenarios(imported)
    assert new_spec == replace(spec, name=new_spec.name)
    strip = [replace(s, session=replace(s.session, app_id="")) for s in scenarios]
    new_strip = [replace(s, session=replace(s.session, app_id="")) for s in new_scenarios]
    assert new_strip == strip


@pytest.fixture
def rich_app(shop):
    """The shopping demo plus a sub-agent, callbacks, a mock, an OpenAPI and an MCP tool."""
    root = shop.agents.get(is_root=True)
    helper = services.agent_create(app=shop, display_name="Helper Agent", instructions="Help.")
    mcp = services.tool_create(
        app=shop,
        name="Crm",
        kind="mcp",
        mcp_url="https://mcp.example/crm",
        mcp_headers={"X-Customer": "$context.variables.customer"},
        description="CRM",
    )
    services.tool_create(
        app=shop,
        name="Quote",
        kind="openapi",
        openapi_spec={"openapi": "3.0.0", "info": {"title": "q", "version": "1"}, "paths": {}},
        mock_enabled=True,
        mock_state={"cart_total": 3},
        mock_response={"ok": True},
    )
    services.agent_update(agent=helper, tools=[mcp])
    services.agent_update(agent=root, children=[helper], tools=[*root.tools.all()])
    services.callback_create(agent=root, kind="before_model", code="x = 1\n")
    services.callback_create(agent=root, kind="before_model", code="y = 2\n")
    services.callback_create(agent=helper, kind="after_tool", code="z = 3\n")
    return shop


# ---------------------------------------------------------------- export pages


def test_export_downloads_for_owner_and_viewer_not_for_a_stranger(
    client, user, other_user, django_user_model, bank
):
    stranger = django_user_model.objects.create_user(username="eve", password="pw-eve-123456")
    services.app_share(app=bank, user=other_user, role="viewer")
    urls = [
        reverse("app-export", args=[bank.pk]),
        reverse("app-export-native", args=[bank.pk]) + "?format=json",
        reverse("app-export-native", args=[bank.pk]) + "?format=yaml",
        reverse("app-export-cx", args=[bank.pk]),
    ]
    client.force_login(stranger)
    assert [client.get(url).status_code for url in urls] == [404] * 4
    client.force_login(other_user)
    assert [client.get(url).status_code for url in urls] == [200] * 4
    client.logout()
    assert all(client.get(url).status_code == 302 for url in urls)  # to the sign-in page


def test_native_download_is_an_attachment_that_imports_back(signed_in, bank):
    response = signed_in.get(reverse("app-export-native", args=[bank.pk]), {"format": "yaml"})
    assert response["Content-Type"].startswith("application/yaml")
    assert response["Content-Disposition"] == 'attachment; filename="bank-demo.statecraft.yaml"'
    assert response.content.startswith(b"format: statecraft.app\n")
    json_response = signed_in.get(reverse("app-export-native", args=[bank.pk]))
    doc = json.loads(json_response.content)
    assert doc["format"] == "statecraft.app" and doc["app"]["name"] == "Bank demo"
    assert (
        signed_in.get(reverse("app-export-native", args=[bank.pk]), {"format": "xml"}).status_code
        == 400
    )


def test_cx_download_is_a_zip_with_the_warning_count(signed_in, bank):
    response = signed_in.get(reverse("app-export-cx", args=[bank.pk]))
    assert response["Content-Type"] == "application/zip"
    assert "bank-demo-cx-agent-studio.zip" in response["Content-Disposition"]
    names = zipfile.ZipFile(io.BytesIO(response.content)).namelist()
    assert "app.json" in names and "agents/banking_agent/banking_agent.json" in names
    assert "tools/LookupBalance/python_function/python_code.py" in names
    _, diagnostics = exchange.app_export_cx(bank)
    warnings = [d for d in diagnostics if d.severity.value != "info"]
    assert int(response[WARNINGS_HEADER]) == len(warnings)
    assert "evaluations/Balance_question/Balance_question.json" in names  # a golden


def test_export_page_lists_the_downloads_and_the_report(signed_in, bank):
    response = signed_in.get(reverse("app-export", args=[bank.pk]))
    text = response.content.decode()
    assert reverse("app-export-cx", args=[bank.pk]) in text
    assert reverse("app-export-native", args=[bank.pk]) + "?format=yaml" in text
    assert "Balance question" in text  # the scenario CX cannot hold is reported
    assert "agents.banking_agent.scenarios.Balance question" in text  # its field


def test_export_report_lists_the_instructions_errors(signed_in, bank):
    root = bank.agents.get(is_root=True)
    services.agent_save_instructions(
        agent=root, instructions=root.instructions + " {typo_var} {{a.b.c}}"
    )
    text = signed_in.get(reverse("app-export", args=[bank.pk])).content.decode()
    assert f"agents.{root.display_name}.instructions" in text
    assert "no variable <code>typo_var</code> is declared" in text
    assert text.count("SC302") == 1  # listed once


def test_export_reads_the_app_in_a_fixed_number_of_queries(
    bank, rich_app, django_assert_num_queries
):
    with django_assert_num_queries(11):
        exchange.app_export_native(rich_app)


# ---------------------------------------------------------------- import service


def test_native_round_trip_through_the_database_gives_the_same_app(user, rich_app):
    doc = exchange.app_export_native(rich_app)
    spec, scenarios, diagnostics = from_native(json.loads(dumps_native(doc)))
    assert not [d for d in diagnostics if d.severity.value == "error"]
    imported = exchange.app_import(owner=user, spec=spec, scenarios=scenarios)
    assert imported.name == "Shopping assistant (imported)"
    _same_app(imported, rich_app)
    again = exchange.app_import(owner=user, spec=spec, scenarios=scenarios)
    assert again.name == "Shopping assistant (imported 2)"


def test_cx_round_trip_through_the_database_keeps_the_app(user, rich_app):
    data, _ = exchange.app_export_cx(rich_app)
    kind, spec, scenarios, diagnostics = exchange.read_app_file(data)
    assert kind == "cx" and not [d for d in diagnostics if d.severity.value == "error"]
    imported = exchange.app_import(owner=user, spec=spec, scenarios=scenarios, name="From CX")
    original, _ = _spec_and_scenarios(rich_app)
    new, _ = _spec_and_scenarios(imported)
    new = without_cx(new)
    assert imported.name == "From CX"
    assert new.variables == original.variables  # the schema is named Customer again
    assert new.tools == original.tools  # mocks come back from the fake-mode code
    assert new.agents == original.agents


def test_a_bad_default_deep_inside_creates_nothing_and_names_the_field(user, shop):
    doc = exchange.app_export_native(shop)
    customer = next(v for v in doc["app"]["variables"] if v["name"] == "customer")
    customer["default"] = {"first_name": "Ada", "tier": "gold", "age": -3}
    spec, scenarios, _ = from_native(doc)
    before = _counts()
    with pytest.raises(ServiceError) as info:
        exchange.app_import(owner=user, spec=spec, scenarios=scenarios)
    assert _counts() == before
    fields = [d.field for d in info.value.diagnostics]
    assert fields == ["variables.customer.default"]
    assert "customer.age" in info.value.diagnostics[0].message


def test_a_service_refusal_late_in_the_import_rolls_everything_back(user, shop, monkeypatch):
    spec, scenarios = _spec_and_scenarios(shop)

    def refuse(**kwargs):
        raise ServiceError([services.common.error("steps_script", "refused for the test")])

    monkeypatch.setattr(services.apps, "scenario_save", refuse)
    before = _counts()
    with pytest.raises(ServiceError) as info:
        exchange.app_import(owner=user, spec=spec, scenarios=scenarios)
    assert _counts() == before
    assert (
        info.value.diagnostics[0].field == "agents.Shopping Assistant.scenarios.Buy a product.steps"
    )


# ---------------------------------------------------------------- import page


def _upload(name: str, content: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content)


def test_import_page_needs_sign_in_and_shows_the_form(client, signed_in):
    assert b'enctype="multipart/form-data"' in signed_in.get(reverse("app-import")).content
    signed_in.logout()
    assert signed_in.get(reverse("app-import")).status_code == 302


def test_import_of_a_native_file_creates_an_equal_app_and_opens_it(signed_in, user, rich_app):
    text = dumps_native(exchange.app_export_native(rich_app), "yaml").encode()
    response = signed_in.post(
        reverse("app-import"), {"file": _upload("shop.yaml", text), "name": "Shop copy"}
    )
    imported = AgentApp.objects.get(owner=user, name="Shop copy")
    assert response.status_code == 302
    assert response["Location"] == reverse("app-designer", args=[imported.pk])
    _same_app(imported, rich_app)


def test_bad_import_page_lists_the_error_and_creates_nothing(signed_in, shop):
    doc = exchange.app_export_native(shop)
    languages = next(v for v in doc["app"]["variables"] if v["name"] == "languages")
    languages["default"] = ["French", 42]
    before = _counts()
    response = signed_in.post(
        reverse("app-import"), {"file": _upload("shop.json", dumps_native(doc).encode())}
    )
    assert response.status_code == 400
    assert _counts() == before
    text = response.content.decode()
    assert "Nothing was imported" in text
    assert "variables.languages.default" in text and "shop.json" in text


def test_import_page_lists_shape_errors_and_the_problems_of_the_rest_at_once(signed_in, shop):
    # A tool of a misspelt kind (a shape error) did hide the rest: a default of the wrong
    # type, Python that does not parse, an agent calling a tool the app lacks.
    doc = exchange.app_export_native(shop)
    app = doc["app"]
    app["tools"][0]["kind"] = "pyhton"
    languages = next(v for v in app["variables"] if v["name"] == "languages")
    languages["default"] = ["French", 42]
    app["tools"].append({"name": "Broken", "kind": "python", "python_code": "def f(:\n"})
    app["agents"][0]["tools"].append("NoSuchTool")
    before = _counts()
    response = signed_in.post(
        reverse("app-import"), {"file": _upload("shop.json", dumps_native(doc).encode())}
    )
    assert response.status_code == 400 and _counts() == before
    rows = [(r["code"], r["field"]) for r in response.context["rows"]]
    agent = app["agents"][0]["name"]
    assert rows == [
        ("SC505", f"tools.{app['tools'][0]['name']}.kind"),
        ("SC201", "variables.languages.default"),
        ("SC007", "tools.Broken.python_code"),
        ("SC507", f"agents.{agent}.tools"),
    ]
    text = response.content.decode()
    assert "did you mean &#x27;python&#x27;?" in text
    assert "the app has no tool named &#x27;NoSuchTool&#x27;" in text


def test_bad_cx_zip_page_names_the_file_inside_the_zip(signed_in, bank):
    data, _ = exchange.app_export_cx(bank)
    archive = zipfile.ZipFile(io.BytesIO(data))
    files = {name: archive.read(name) for name in archive.namelist()}
    files["tools/LookupBalance/LookupBalance.json"] = b"{broken"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as out:
        for name, content in files.items():
            out.writestr(name, content)
    before = _counts()
    response = signed_in.post(
        reverse("app-import"), {"file": _upload("bank.zip", buffer.getvalue())}
    )
    assert response.status_code == 400 and _counts() == before
    assert "tools/LookupBalance/LookupBalance.json" in response.content.decode()


def test_a_cx_file_that_does_not_parse_is_named_once_and_the_other_files_still_checked(
    signed_in, bank
):
    # An agent naming a tool whose file does not parse was also told "no tool in the ZIP";
    # the problems of the other files are listed beside it.
    data, _ = exchange.app_export_cx(bank)
    archive = zipfile.ZipFile(io.BytesIO(data))
    files = {name: archive.read(name) for name in archive.namelist()}
    files["tools/LookupBalance/LookupBalance.json"] = b"{broken"
    agent_file = next(
        n
        for n in sorted(files)
        if n.startswith("agents/") and n.endswith(".json") and b"LookupBalance" in files[n]
    )
    agent = json.loads(files[agent_file])
    agent["childAgents"] = ["Nobody"]
    files[agent_file] = json.dumps(agent).encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as out:
        for name, content in files.items():
            out.writestr(name, content)
    response = signed_in.post(
        reverse("app-import"), {"file": _upload("bank.zip", buffer.getvalue())}
    )
    assert response.status_code == 400
    rows = [(r["code"], r["file"], r["field"]) for r in response.context["rows"]]
    assert rows == [
        (
            "SC605",
            "tools/LookupBalance/LookupBalance.json",
            "tools/LookupBalance/LookupBalance.json:1:2",
        ),
        ("SC608", agent_file, "childAgents[0]"),
    ]


def test_import_of_the_demo_bank_cx_zip(signed_in, user, bank):
    data, _ = exchange.app_export_cx(bank)
    response = signed_in.post(reverse("app-import"), {"file": _upload("bank.zip", data)})
    imported = AgentApp.objects.get(owner=user, name="Bank demo (imported)")
    assert response.status_code == 302
    spec, _ = _spec_and_scenarios(imported)
    spec = without_cx(spec)
    original, _ = _spec_and_scenarios(bank)
    assert spec.variables == original.variables
    assert spec.tools == original.tools and spec.agents == original.agents
    # The scenario comes back as a golden: its calls and expectations; the scripted agent
    # messages are the model's (not in a golden), so each turn ends with an empty one.
    scenario = imported.agents.get().scenarios.get()
    assert scenario.name == "Balance question"
    assert services.scenario_script(scenario) == (
        "user: Hi! What is the balance of my current account?\n"
        'expect call: LookupBalance {"account_id": "primary"}\n'
        'expect response: LookupBalance {"balance": 1250, "currency": "EUR"}\n'
        'expect state [Check_Balance_Stored]: {"current_account_balance": 1250}\n'
        "agent: \n"
        "user: Thanks. Is that enough to pay a 900 EUR invoice?\n"
        "expect no calls\n"
        "agent: "
    )


def test_upload_that_is_not_an_app_is_refused_with_a_message(signed_in):
    before = _counts()
    response = signed_in.post(reverse("app-import"), {"file": _upload("x.txt", b"hello: [")})
    assert response.status_code == 400 and _counts() == before
    assert "not valid JSON or YAML" in response.content.decode()
    response = signed_in.post(reverse("app-import"), {})
    assert response.status_code == 400 and "Choose a file" in response.content.decode()


# ---------------------------------------------------------------- large imports as jobs


@pytest.fixture
def always_a_job(settings):
    settings.IMPORT_JOB_MIN_BYTES = 0  # every upload imports as a job


def test_large_import_page_answers_with_progress_then_opens_the_app(
    signed_in, user, rich_app, always_a_job, run_jobs
):
    text = dumps_native(exchange.app_export_native(rich_app), "yaml").encode()
    response = signed_in.post(
        reverse("app-import"), {"file": _upload("shop.yaml", text), "name": "Shop copy"}
    )
    assert not AgentApp.objects.filter(name="Shop copy").exists()  # queued, not imported yet
    progress = signed_in.get(response["Location"])
    assert b'id="import-job"' in progress.content and b"hx-get=" in progress.content
    assert run_jobs() == 1
    polled = signed_in.get(response["Location"], headers={"HX-Request": "true"})
    assert polled["HX-Redirect"] == response["Location"]
    done = signed_in.get(response["Location"])
    imported = AgentApp.objects.get(owner=user, name="Shop copy")
    assert done["Location"] == reverse("app-designer", args=[imported.pk])
    _same_app(imported, rich_app)
    event = imported.audit_events.get(action="app.import")
    assert event.actor == user and event.after["file"] == "shop.yaml"


def test_large_import_job_refused_lists_every_problem_and_creates_nothing(
    signed_in, shop, always_a_job, run_jobs
):
    doc = exchange.app_export_native(shop)
    languages = next(v for v in doc["app"]["variables"] if v["name"] == "languages")
    languages["default"] = ["French", 42]
    doc["app"]["variables"].append({**languages, "name": "languages_too"})
    before = _counts()
    response = signed_in.post(
        reverse("app-import"), {"file": _upload("shop.json", dumps_native(doc).encode())}
    )
    run_jobs()
    text = signed_in.get(response["Location"]).content.decode()
    assert _counts() == before
    assert "Nothing was imported" in text and "shop.json" in text
    assert "2 problems" in text and "variables.languages.default" in text
    assert "variables.languages_too.default" in text


def test_large_import_job_drops_the_upload_from_its_row(signed_in, shop, always_a_job, run_jobs):

    text = dumps_native(exchange.app_export_native(shop)).encode()
    signed_in.post(reverse("app-import"), {"file": _upload("shop.json", text)})
    # A native text travels parsed (the request parsed it once; the job does not again).
    params = Job.objects.get(kind="import_app").params
    assert "document" in params and "data" not in params
    run_jobs()
    assert not {"data", "document"} & set(Job.objects.get(kind="import_app").params)


def test_a_large_yaml_import_job_keeps_the_order_of_the_parsed_document(
    signed_in, user, rich_app, always_a_job, run_jobs
):
    doc = exchange.app_export_native(rich_app)
    text = dumps_native(doc, "yaml").encode()
    signed_in.post(reverse("app-import"), {"file": _upload("shop.yaml", text), "name": "Copy"})
    assert json.loads(Job.objects.get(kind="import_app").params["document"]) == doc
    run_jobs()
    _same_app(AgentApp.objects.get(owner=user, name="Copy"), rich_app)


def test_a_large_zip_import_job_carries_the_zip(signed_in, user, shop, always_a_job, run_jobs):
    data, _ = exchange.app_export_cx(shop)
    signed_in.post(reverse("app-import"), {"file": _upload("shop.zip", data)})
    params = Job.objects.get(kind="import_app").params
    assert "data" in params and "document" not in params
    run_jobs()
    assert Job.objects.get(kind="import_app").status == "succeeded"
    assert AgentApp.objects.filter(owner=user, name__startswith=shop.name).exists()


def test_a_small_import_stays_in_the_request(signed_in, user, shop, settings):

    text = dumps_native(exchange.app_export_native(shop)).encode()
    settings.IMPORT_JOB_MIN_BYTES = len(text) + 1
    response = signed_in.post(reverse("app-import"), {"file": _upload("shop.json", text)})
    imported = AgentApp.objects.get(owner=user, name="Shopping assistant (imported)")
    assert response["Location"] == reverse("app-designer", args=[imported.pk])
    assert not Job.objects.filter(kind="import_app").exists()


def test_someone_elses_import_job_is_not_found(signed_in, shop, always_a_job, django_user_model):
    from django.test import Client

    text = dumps_native(exchange.app_export_native(shop)).encode()
    location = signed_in.post(reverse("app-import"), {"file": _upload("shop.json", text)})[
        "Location"
    ]
    other = Client()
    other.force_login(django_user_model.objects.create_user("eve", password="pw-eve-123456"))
    assert other.get(location).status_code == 404


def test_a_large_upload_that_does_not_parse_is_refused_in_the_request(signed_in, always_a_job):

    response = signed_in.post(reverse("app-import"), {"file": _upload("x.json", b"{broken")})
    assert response.status_code == 400 and "Nothing was imported" in response.content.decode()
    assert not Job.objects.exists()
