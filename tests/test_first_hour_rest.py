"""Issue 33 ("What a designer meets in the first hour"), the remaining items that are not
visual: each test fails on the code before its fix. The visual ones are measured in
Chromium in tests/browser/test_browser_first_hour_rest.py."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from agents import services
from agents.models import Job
from tests.llm_server import (
    configure_models,
    openai_call,
    openai_stream_call,
    openai_stream_text,
    openai_text,
)
from tests.test_live_runs import bank_app  # noqa: F401

pytestmark = pytest.mark.django_db
HX = {"HX-Request": "true"}

# A scripted `tool:` step whose arguments the model does not give: its line is in every
# report of the run's failure.
TOOL_STEP = 'tool: LookupBalance {"account_id": "savings", "n": 1}'
TOOL_GOLDEN = f"user: What is my balance?\n{TOOL_STEP}\n"


@pytest.fixture
def loop_model(monkeypatch, server):
    configure_models(monkeypatch, {"loop": {"server": server, "model": "gpt-4o-mini"}})
    server.script(
        openai_stream_call("LookupBalance", '{"account_id": "primary"}'),
        openai_stream_text("It is ", "1,250 EUR."),
    )
    return server


@pytest.fixture
def tool_golden(bank_app):  # noqa: F811
    app, agent, _ = bank_app
    scenario = services.scenario_save(agent=agent, name="Tool step", steps_script=TOOL_GOLDEN)
    return app, agent, scenario


# ------------ 2. a live `tool:` step's line is JSON as the script writes it


def test_a_live_tool_step_reads_as_the_script_in_the_designer(
    signed_in, loop_model, tool_golden, run_jobs
):
    app, agent, scenario = tool_golden
    url = reverse("agent-simulate", args=[app.pk, agent.pk])
    signed_in.post(url, {"scenario": scenario.pk, "model": "loop", "live": "1"}, headers=HX)
    run_jobs()
    job = Job.objects.get(kind="live_run")
    html = signed_in.get(
        reverse("live-job", args=[app.pk, agent.pk, job.pk]), headers=HX
    ).content.decode()
    assert "tool: LookupBalance {&quot;account_id&quot;: &quot;savings&quot;" in html
    assert "{&#x27;account_id&#x27;" not in html


def test_a_live_tool_step_reads_as_the_script_in_the_api(
    signed_in, loop_model, tool_golden, run_jobs
):
    app, agent, scenario = tool_golden
    url = f"/api/apps/{app.pk}/agents/{agent.pk}/scenarios/{scenario.pk}/simulate"
    response = signed_in.post(url, {"model": "loop"}, content_type="application/json")
    run_jobs()
    results = signed_in.get(response["Location"]).json()["result"]["results"]
    lines = [r["line"] for r in results]
    assert TOOL_STEP in lines, lines


def test_a_live_tool_step_reads_as_the_script_in_junit(loop_model, tool_golden, tmp_path):
    app, _, _ = tool_golden
    loop_model.replies.clear()  # evaluate asks without streaming; two scenarios
    for _ in range(2):
        loop_model.script(
            openai_call("LookupBalance", {"account_id": "primary"}), openai_text("It is 1,250.")
        )
    junit = tmp_path / "live.xml"
    with pytest.raises(CommandError):
        call_command(
            "evaluate", str(app.pk), "--model", "loop", "--junit", str(junit), stdout=io.StringIO()
        )
    failure = ET.parse(junit).getroot().find(".//testcase[@name='Tool step']/failure")
    assert failure is not None
    text = (failure.get("message") or "") + (failure.text or "")
    assert TOOL_STEP in text, text
    assert "{'account_id'" not in text


# ------------ 5. the round trip through a CX ZIP says what it changes


def test_the_cx_round_trip_says_tool_steps_and_scripted_replies_change(signed_in, user, bank):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from agents.models import AgentApp

    agent = bank.agents.get()
    services.scenario_save(
        agent=agent,
        scenario=agent.scenarios.get(),
        name="Balance question",
        steps_script='user: What is my balance?\ntool: LookupBalance {"account_id": "primary"}\n'
        "agent: It is 1,250 EUR.\n",
    )
    export = signed_in.get(reverse("app-export", args=[bank.pk])).content.decode()
    assert "1 `tool:` step(s) are exported as toolCall expectations" in export.replace(
        "&#x27;", "'"
    ).replace("<code>", "`").replace("</code>", "`")
    assert "imported back, each is an empty" in export
    data = signed_in.get(reverse("app-export-cx", args=[bank.pk])).getvalue()
    response = signed_in.post(
        reverse("app-import"), {"file": SimpleUploadedFile("bank.zip", data)}, follow=True
    )
    imported = AgentApp.objects.get(owner=user, name="Bank demo (imported)")
    script = services.scenario_script(imported.agents.get().scenarios.get())
    assert 'expect call: LookupBalance {"account_id": "primary"}' in script
    assert "agent: " in script and "It is 1,250" not in script
    report = response.content.decode()
    assert "SC612" in report
    assert "toolCall expectation(s) read" in report
    assert "end with an empty" in report


# ------------ 6. diagnostics for what the runtime would not read


@pytest.mark.parametrize(
    "written", ["{prénom}", "{名前}", '{{"><img src=x>}}', "{{prénom}}", "{{名前}}"]
)
def test_a_brace_group_the_runtime_reads_as_text_is_a_warning(written):
    from agents.core.parse import parse

    codes = [d.code for d in parse(f"Hello {written}, welcome.").diagnostics]
    assert codes == ["SC104"], codes


@pytest.mark.parametrize("written", ['Answer {"total": 1}', "{name}", "{a b}", "{{ name }}"])
def test_json_names_and_spaced_words_in_braces_stay_quiet(written):
    from agents.core.parse import parse

    assert [d.code for d in parse(written).diagnostics] == []


def test_the_designer_says_why_in_the_readers_language(client, user, shop):
    agent = shop.agents.get()
    services.agent_update(agent=agent, instructions='Greet {prénom} and {{"><img src=x>}}.')
    from django.conf import settings

    client.force_login(user)
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "fr"
    html = client.get(reverse("app-designer", args=[shop.pk])).content.decode()
    assert "SC104" in html
    assert "a variable name uses only" not in html and "markup and quotes" not in html
    assert "<img src=x>" not in html  # shown as text, escaped


@pytest.mark.parametrize("name", ["名前", "😀", "🛒"])
def test_a_name_with_no_latin_letter_is_offered_no_useless_fix(name):
    from agents.core import rules

    [problem] = rules.name_problems(name)
    assert "for example" not in problem.message and "_)" not in problem.message
    assert rules.suggested_name("prénom") == "prenom"  # a useful fix is still offered


# ------------ 8. the admin shows data, not Python


@pytest.fixture
def live_run(loop_model, bank_app):  # noqa: F811
    from agents.services.live_runs import run_live

    app, agent, scenario = bank_app
    loop_model.replies.clear()
    loop_model.script(openai_call("LookupBalance", {}), openai_text("It is 1,250 EUR."))
    return run_live(app=app, agent=agent, scenario=scenario, model="loop").run


def test_the_admins_live_run_shows_its_evaluation_and_calls_as_json(client, staff, live_run):
    client.force_login(staff)
    url = reverse("admin:agents_liverun_change", args=[live_run.pk])
    html = client.get(url).content.decode()
    assert '<pre class="admin-json"' in html
    assert "&#x27;step&#x27;:" not in html and "None" not in html  # no Python repr
    assert "&quot;step&quot;: 1" in html  # indented JSON, escaped
    assert "&quot;tokens_in&quot;:" in html


def test_the_admins_audit_event_shows_after_as_json(client, staff, user, shop):
    from agents.models import AuditEvent

    services.variable_create(actor=user, app=shop, name="vip", type="boolean", default=False)
    event = AuditEvent.objects.filter(action="variable.create").latest("created_at")
    client.force_login(staff)
    html = client.get(reverse("admin:agents_auditevent_change", args=[event.pk])).content.decode()
    assert "&quot;default&quot;: false" in html
    assert "False" not in html.split('id="content"')[-1]


def test_the_admins_live_run_list_loads_no_recording(client, staff, live_run):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.force_login(staff)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse("admin:agents_liverun_changelist"))
    assert response.status_code == 200 and live_run.scenario_name in response.content.decode()
    listing = [q["sql"] for q in queries.captured_queries if '"agents_liverun"."mode"' in q["sql"]]
    assert listing
    for sql in listing:
        for column in ("calls", "timeline", "evaluation", "final_state", "cx"):
            assert f'."{column}"' not in sql, (column, sql)


# ------------ 10. what the runtime would do, at the right severity


@pytest.fixture
def routed_app(user):
    """A root agent without the tool its sub-agent has; a golden calls it in the root's turn
    (as real CX goldens list the call and leave the routing to the model)."""
    from agents.demo import LOOKUP_BALANCE_CODE

    app = services.app_create(owner=user, name="Routed")
    services.variable_create(app=app, name="current_account_balance", type="number")
    tool = services.tool_create(
        app=app, name="LookupBalance", kind="python", python_code=LOOKUP_BALANCE_CODE
    )
    teller = services.agent_create(app=app, display_name="Teller", tools=[tool])
    root = app.agents.get(is_root=True)
    services.agent_update(agent=root, display_name="Host", children=[teller])
    services.scenario_save(
        agent=root,
        name="Balance",
        steps_script='user: My balance?\nexpect call: LookupBalance {"account_id": "main"}\n',
    )
    return app, root


def test_a_scripted_call_of_another_agents_tool_is_a_warning_saying_what_cx_does(
    signed_in, routed_app
):
    app, root = routed_app
    url = reverse("agent-simulate", args=[app.pk, root.pk])
    html = signed_in.get(url, headers=HX).content.decode()
    assert "⚠ warning" in html and "✕ error" not in html
    assert "would transfer to Teller before calling it" in html
    # The expectation still says why the call was not made (its own row).
    assert "The call of LookupBalance failed: tool LookupBalance is not attached" in html


def test_an_event_kind_the_page_does_not_know_is_not_an_error():
    row = _timeline_row({"kind": "handoff", "label": "to billing", "text": ""})
    assert "✕ error" not in row and "to billing" in row


def _timeline_row(event: dict) -> str:
    """The designer's timeline row of one event (its template's branch for the kind)."""
    import re
    from pathlib import Path

    template = Path("templates/agents/app_designer.html").read_text()
    start = template.index('{% if e.kind == "user" %}')
    end = template.index(
        "{% endif %}", template.index('{% else %}<span class="who">{% translate "ⓘ event"')
    )
    from django.template import Context, Template

    source = "{% load i18n designer_tags %}" + template[start : end + len("{% endif %}")]
    html = Template(source).render(Context({"e": event, "turn": {"dropped": ()}}))
    return re.sub(r"\s+", " ", html)


# ------------ 3 (the rest). the SDK's "Connection error." in the reader's language


def test_a_refused_connection_reads_in_the_readers_language(monkeypatch, server, bank_app):  # noqa: F811
    from django.utils import translation

    from agents.i18n import localize
    from agents.services.live_runs import run_live

    configure_models(monkeypatch, {"gone": {"server": server, "model": "gpt-4o-mini"}})
    server.close()  # nothing listens on its port any more: the connection is refused
    app, agent, scenario = bank_app
    outcome = run_live(
        app=app, agent=agent, scenario=scenario, model="gone", record=False, sleeper=lambda _: None
    )
    assert outcome.error == "connection"
    message = next(c["answer"]["message"] for c in outcome.calls if c["answer"]["error"])
    with translation.override("fr"):
        shown = localize(message)
    assert "Connection error" not in shown and "connexion" in shown, shown
