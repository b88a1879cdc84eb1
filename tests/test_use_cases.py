"""One use case, one rule set: a regression test for each defect that duplication caused,
and the same action giving the same answer through the designer and the API."""

from __future__ import annotations

import html
import json
import re

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from agents import selectors, services
from agents.models import AuditEvent, Scenario
from agents.services import exchange

HX = {"HX-Request": "true"}
DEEP_CODE = "def t():\n    return " + "-" * 200_000 + "1\n"  # MemoryError/RecursionError in ast


def url(name, *args):
    return reverse(name, args=args)


@pytest.fixture
def api(user):
    client = APIClient()
    client.force_login(user)
    return client


# 1. Renames rewrite the name inside the reference, not the first match in the raw token.


def test_renaming_agent_a_rewrites_only_its_name(user, shop):
    root = shop.agents.get()
    other = services.agent_create(app=shop, display_name="A", actor=user)
    services.agent_update(
        agent=root, instructions="Hand over to {@AGENT: A} and {@AGENT:A}.", actor=user
    )
    services.agent_update(agent=other, display_name="Billing", actor=user)
    root.refresh_from_db()
    assert root.instructions == "Hand over to {@AGENT: Billing} and {@AGENT:Billing}."


def test_renaming_tool_named_tool_rewrites_only_its_name(user, shop):
    root = shop.agents.get()
    tool = services.tool_create(app=shop, name="TOOL", actor=user)
    services.agent_update(agent=root, instructions="Call {@TOOL: TOOL} now.", actor=user)
    services.tool_update(tool=tool, name="Lookup", actor=user)
    root.refresh_from_db()
    assert root.instructions == "Call {@TOOL: Lookup} now."


# 2. Duplicating an app copies everything, scenarios and callbacks included.


def test_duplicate_copies_everything_scenarios_and_callbacks_included(user, bank):
    agent = bank.agents.get()
    services.callback_create(
        agent=agent, kind="before_model", code="def before_model_callback(c, r):\n    pass\n"
    )
    assert Scenario.objects.filter(agent__app=bank).exists()
    copy = services.app_duplicate(app=bank, owner=user)
    original = exchange.app_export_native(bank)
    duplicated = exchange.app_export_native(copy)
    assert duplicated["app"].pop("name") == "Bank demo (copy)"
    original["app"].pop("name")
    assert duplicated == original
    assert duplicated["app"]["agents"][0]["scenarios"]
    assert duplicated["app"]["agents"][0]["callbacks"]


def test_duplicating_a_long_named_app_twice_keeps_names_within_the_limit(user, signed_in):
    app = services.app_create(owner=user, name="n" * 200)
    first = services.app_duplicate(app=app, owner=user)
    second = services.app_duplicate(app=app, owner=user)
    assert len(first.name) <= 200 and len(second.name) <= 200
    assert first.name != second.name


# 3. Deeply nested Python is refused with a message, never a 500.


def test_deeply_nested_python_is_a_form_error_in_the_designer(signed_in, bank):
    tool = bank.tools.get()
    response = signed_in.post(
        url("tool-edit", bank.pk, tool.pk),
        {"name": tool.name, "kind": "python", "python_code": DEEP_CODE, "version": tool.version},
        headers=HX,
    )
    assert response.status_code == 200
    assert "nested too deeply" in response.content.decode()


def test_deeply_nested_python_is_a_400_in_the_api(api, bank):
    response = api.post(
        f"/api/apps/{bank.pk}/tools/", {"name": "deep", "python_code": DEEP_CODE}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["diagnostics"][0]["field"] == "python_code"


def test_deeply_nested_callback_is_refused(user, bank):
    with pytest.raises(services.ServiceError, match="nested too deeply"):
        services.callback_create(agent=bank.agents.get(), kind="before_agent", code=DEEP_CODE)


# 4. The squiggles' JSON is valid whatever mix of diagnostics the preview has.


def test_squiggle_data_is_valid_json_with_positions(signed_in, shop):
    agent = shop.agents.get()
    text = "{{nope}} and {ghost} {% if %}"
    body = signed_in.post(
        url("agent-preview", shop.pk, agent.pk), {"instructions": text}, headers=HX
    ).content.decode()
    match = re.search(r'<script id="preview-data" type="application/json">(.*?)</script>', body)
    squiggles = json.loads(match.group(1))["squiggles"]
    starts = {s["from"] for s in squiggles}
    assert {0, text.index("{ghost}")} <= starts
    assert all(s["to"] >= s["from"] for s in squiggles)
    assert all(s["message"] and s["code"] for s in squiggles)
    completion = re.search(
        r'<script id="completion-data" type="application/json">(.*?)</script>', body
    )
    assert json.loads(completion.group(1))["variables"]


# 5. A plain GET of an inline form is a page, 200.


@pytest.mark.parametrize("name", ["variable-new", "schema-new", "tool-new", "agent-new"])
def test_plain_get_of_an_inline_form_is_200(signed_in, shop, name):
    response = signed_in.get(url(name, shop.pk))
    assert response.status_code == 200
    assert "<html" in response.content.decode()


# 6. The designer's mocks checkbox turns a scenario's mocks off as well as on.


def test_mocks_checkbox_turns_the_scenarios_mocks_off(signed_in, bank):
    agent = bank.agents.get()
    scenario = agent.scenarios.get()
    scenario.use_mocks = True
    scenario.save()
    path = url("agent-simulate", bank.pk, agent.pk)
    shown = signed_in.post(path, {"scenario": scenario.pk}, headers=HX).content.decode()
    assert re.search(r'name="use_mocks" value="on" checked', shown)
    off = signed_in.post(
        path, {"scenario": scenario.pk, "mocks_for": scenario.pk, "use_mocks": "off"}, headers=HX
    ).content.decode()
    assert not re.search(r'name="use_mocks" value="on" checked', off)
    on = signed_in.post(
        path,
        {"scenario": scenario.pk, "mocks_for": scenario.pk, "use_mocks": ["off", "on"]},
        headers=HX,
    ).content.decode()
    assert re.search(r'name="use_mocks" value="on" checked', on)
    reversed_order = signed_in.post(  # the browser may send the ticked box first
        path,
        {"scenario": scenario.pk, "mocks_for": scenario.pk, "use_mocks": ["on", "off"]},
        headers=HX,
    ).content.decode()
    assert re.search(r'name="use_mocks" value="on" checked', reversed_order)


# 7. Preview and API compile: same diagnostics, same checks of values and channel.


def test_preview_and_api_compile_report_the_same_diagnostics(signed_in, api, shop):
    agent = shop.agents.get()
    text = "Hello {{customer.first_name}} {{ghost}} {missing} {@TOOL: nope}"
    compiled = api.post(
        f"/api/apps/{shop.pk}/agents/{agent.pk}/compile", {"instructions": text}, format="json"
    ).json()
    preview = services.preview_agent(app=shop, agent=agent, instructions=text)
    assert [d["code"] for d in compiled["diagnostics"]] == [d.code for d in preview.diagnostics]
    body = signed_in.post(
        url("agent-preview", shop.pk, agent.pk), {"instructions": text}, headers=HX
    ).content.decode()
    for d in preview.diagnostics:
        assert d.code in body


def test_pasted_session_values_are_type_checked_in_the_preview_as_in_the_api(signed_in, api, shop):
    agent = shop.agents.get()
    values = {"cart_total": "lots"}
    response = api.post(
        f"/api/apps/{shop.pk}/agents/{agent.pk}/compile", {"values": values}, format="json"
    )
    assert response.status_code == 400
    api_message = response.json()["diagnostics"][0]["message"]
    body = signed_in.post(
        url("agent-preview", shop.pk, agent.pk),
        {"values_json": json.dumps(values)},
        headers=HX,
    ).content.decode()
    assert api_message in html.unescape(body)


def test_unknown_channel_is_refused_by_both(signed_in, api, shop):
    agent = shop.agents.get()
    response = api.post(
        f"/api/apps/{shop.pk}/agents/{agent.pk}/compile", {"channel": "fax"}, format="json"
    )
    assert response.status_code == 400
    preview = services.preview_agent(app=shop, agent=agent, channel="fax")
    assert [d.field for d in preview.input_problems] == ["channel"]
    body = signed_in.post(
        url("agent-preview", shop.pk, agent.pk), {"channel": "fax"}, headers=HX
    ).content.decode()
    assert "Channel must be one of web, api, telephony" in body


# 8. Attaching a tool from the agent's page adds one link, in the tool's transaction.


def test_new_tool_from_agent_page_keeps_tools_attached_meanwhile(signed_in, user, bank):
    agent = bank.agents.get()
    before = set(agent.tools.values_list("name", flat=True))
    # Another editor attaches a tool between this page's load and its save.
    other = services.tool_create(app=bank, name="OtherTool", attach_to=agent, actor=user)
    response = signed_in.post(
        url("tool-new", bank.pk) + f"?agent={agent.pk}",
        {"name": "NewTool", "kind": "python", "agent": agent.pk},
        headers=HX,
    )
    assert response.status_code == 200
    names = set(agent.tools.values_list("name", flat=True))
    assert names == before | {other.name, "NewTool"}


# Who did what: every write leaves an audit record with the acting user.


def test_writes_through_the_designer_are_recorded_with_the_user(signed_in, user, shop):
    signed_in.post(
        url("variable-new", shop.pk),
        {"name": "loyalty_points", "type": "number", "default": "3"},
        headers=HX,
    )
    event = AuditEvent.objects.get(app=shop, action="variable.create", object_name="loyalty_points")
    assert event.actor == user and event.object_name == "loyalty_points"
    assert event.after["default"] == 3


def test_instruction_edits_keep_before_and_after(user, shop):
    agent = shop.agents.get()
    old = agent.instructions
    services.agent_save_instructions(agent=agent, instructions="New text", actor=user)
    event = AuditEvent.objects.filter(app=shop, action="agent.instructions").get()
    assert event.before == {"instructions": old} and event.after == {"instructions": "New text"}


def test_cached_spec_follows_every_write(user, shop):
    first = selectors.app_spec(shop)
    services.variable_create(app=shop, name="fresh", type="text", actor=user)
    shop.refresh_from_db()
    assert selectors.app_spec(shop).variable("fresh") is not None
    assert first.variable("fresh") is None


def test_the_app_history_page_lists_changes(signed_in, user, shop):
    services.variable_create(app=shop, name="seen_in_history", type="text", actor=user)
    response = signed_in.get(url("app-history", shop.pk))
    assert response.status_code == 200
    body = response.content.decode()
    assert "seen_in_history" in body and "ada" in body


# What an operator needs in the logs: refused saves, imports, sandbox failures.


def test_refused_saves_and_imports_are_logged(user, shop, caplog):
    caplog.set_level("INFO", logger="agents")
    with pytest.raises(services.ServiceError):
        services.variable_create(app=shop, name="9bad", type="text", actor=user)
    assert any("refused save" in r.getMessage() for r in caplog.records)
    spec, scenarios = selectors.app_specs(shop)
    exchange.app_import(owner=user, spec=spec, scenarios=scenarios)
    assert any("imported by ada" in r.getMessage() for r in caplog.records)


def test_a_sandbox_failure_is_logged_but_a_user_error_is_not(caplog):
    from agents.sandbox import host
    from agents.sandbox.code_runner import to_code_result

    caplog.set_level("INFO", logger="agents.sandbox")
    to_code_result(host.SandboxResult(ok=False, error=host.SandboxError("value", "boom")))
    assert not caplog.records
    to_code_result(
        host.SandboxResult(ok=False, error=host.SandboxError("internal", "did not start"))
    )
    assert [r.levelname for r in caplog.records] == ["ERROR"]
    assert "did not start" in caplog.records[0].getMessage()


def test_a_nul_character_is_refused_naming_the_field_on_every_database(signed_in, user, shop):
    agent = shop.agents.get()
    response = signed_in.post(
        url("agent-instructions", shop.pk, agent.pk),
        {"instructions": "bad\x00text", "base_hash": agent.instructions_hash},
        headers=HX,
    )
    assert response.status_code == 200
    assert "NUL character" in response.content.decode()
    agent.refresh_from_db()
    assert "\x00" not in agent.instructions
    with pytest.raises(services.ServiceError) as refused:
        services.app_create(owner=user, name="a\x00b")
    assert "name" in refused.value.field_errors()
