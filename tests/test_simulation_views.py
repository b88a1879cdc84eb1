"""Scenarios and the simulated conversation through the designer's URLs (real sandbox)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agents import services
from agents.core.script import format_script, parse_script
from agents.models import Scenario

pytestmark = pytest.mark.django_db
HX = {"HX-Request": "true"}


def test_script_round_trip_and_errors():
    text = 'user: Hi\nand more\ntool: LookupBalance {"account_id": "x"}\nagent: Done\ncallback: before_model'
    parsed = parse_script(text)
    assert not parsed.diagnostics
    assert [s.kind.value for s in parsed.steps] == ["user", "tool", "agent", "callback"]
    assert parsed.steps[0].text == "Hi\nand more"
    assert parse_script(format_script(parsed.steps)).steps == parsed.steps
    bad = parse_script("hello\ntool: X [1]\ncallback: sometimes")
    assert [d.line for d in bad.diagnostics] == [1, 2, 3]


def test_banking_scenario_shows_state_update_and_turns(signed_in, bank):
    agent = bank.agents.get()
    page = signed_in.get(reverse("app-designer", args=[bank.pk])).content.decode()
    # The page does not simulate: its panel loads the conversation as a fragment.
    assert 'id="conversation-panel"' in page and 'hx-trigger="load"' in page
    assert "state_update" not in page
    simulate_url = reverse("agent-simulate", args=[bank.pk, agent.pk])
    assert f'href="{simulate_url}"' in page
    body = signed_in.get(simulate_url, headers=HX).content.decode()
    assert "&lt;state_update&gt;current_account_balance: 1250&lt;/state_update&gt;" in body
    assert "turn 0" in body and "turn 1" in body
    assert "$context.turn_index" in body and "session-1" in body
    fragment = signed_in.post(
        reverse("agent-simulate", args=[bank.pk, agent.pk]), {"use_mocks": "on"}, headers=HX
    ).content.decode()
    assert fragment.lstrip().startswith('<section id="conversation-panel"')
    assert "current_account_balance: 1250" in fragment


def test_tool_error_is_a_step_error_not_a_crash(signed_in, bank):
    tool = bank.tools.get()
    services.tool_update(
        tool=tool, python_code="def LookupBalance(account_id=''):\n    return 1 / 0\n"
    )
    agent = bank.agents.get()
    response = signed_in.post(reverse("agent-simulate", args=[bank.pk, agent.pk]), headers=HX)
    body = response.content.decode()
    assert response.status_code == 200
    assert "ZeroDivisionError" in body and "event-error" in body


def test_writing_a_wrong_type_is_reported(signed_in, bank):
    tool = bank.tools.get()
    services.tool_update(
        tool=tool,
        python_code="def LookupBalance(account_id=''):\n    context.state['current_account_balance'] = 'lots'\n",
    )
    body = signed_in.post(
        reverse("agent-simulate", args=[bank.pk, bank.agents.get().pk]), headers=HX
    ).content.decode()
    assert "LookupBalance" in body and "current_account_balance" in body and "event-error" in body


def test_scenario_create_edit_delete(signed_in, bank):
    agent = bank.agents.get()
    response = signed_in.post(
        reverse("scenario-new", args=[bank.pk, agent.pk]),
        {
            "name": "Short",
            "steps_script": "user: Hi\nagent: Hello",
            "session_values": '{"authenticated": true}',
            "channel": "web",
            "modality": "text",
            "session_id": "s-9",
            "project_id": "p",
            "project_number": "1",
            "location": "eu",
            "token_budget": "50",
        },
        headers=HX,
    )
    assert response.status_code == 200 and response["HX-Retarget"] == "#conversation-panel"
    scenario = Scenario.objects.get(agent=agent, name="Short")
    assert scenario.session_values == {"authenticated": True} and scenario.steps.count() == 2
    assert "s-9" in response.content.decode()
    bad = signed_in.post(
        reverse("scenario-edit", args=[bank.pk, agent.pk, scenario.pk]),
        {
            "name": "Short",
            "steps_script": "tool: LookupBalance nope",
            "session_values": '{"ghost": 1}',
            "channel": "web",
            "modality": "text",
            "session_id": "s",
            "project_id": "p",
            "project_number": "1",
            "location": "eu",
            "token_budget": "50",
            "version": scenario.version,
        },
        headers=HX,
    ).content.decode()
    assert "not valid JSON" in bad and "ghost" in bad and "tool: LookupBalance nope" in bad
    signed_in.post(reverse("scenario-delete", args=[bank.pk, agent.pk, scenario.pk]), headers=HX)
    assert not Scenario.objects.filter(pk=scenario.pk).exists()


def test_small_budget_drops_events_and_warns(signed_in, bank):
    agent = bank.agents.get()
    scenario = agent.scenarios.get()
    services.scenario_save(
        agent=agent,
        scenario=scenario,
        name=scenario.name,
        token_budget=90,
        steps_script=(
            "user: What is my balance?\ntool: LookupBalance {}\nagent: 1250 EUR.\n"
            "user: Tell me a long story about the history of banking in Europe, please, in detail.\n"
            "agent: Once upon a time there were many banks, and they kept ledgers of accounts."
        ),
    )
    body = signed_in.post(
        reverse("agent-simulate", args=[bank.pk, agent.pk]), {"use_mocks": "on"}, headers=HX
    ).content.decode()
    assert "dropped" in body
    assert "may forget current_account_balance" in body


def test_the_timeline_says_which_static_values_changed_in_the_instructions(signed_in, bank):
    # A static reference to the balance the tool updates: the next model call compiles the
    # instructions again, and its answer says what changed.
    agent = bank.agents.get()
    services.agent_update(
        agent=agent, instructions=agent.instructions + "\nBalance: {{current_account_balance}}"
    )
    body = signed_in.get(
        reverse("agent-simulate", args=[bank.pk, agent.pk]), headers=HX
    ).content.decode()
    assert body.count("instructions changed: current_account_balance") == 1
    # Without the static reference, no model call's instructions change.
    services.agent_update(agent=agent, instructions="Answer briefly.")
    body = signed_in.get(
        reverse("agent-simulate", args=[bank.pk, agent.pk]), headers=HX
    ).content.decode()
    assert "instructions changed" not in body


def test_the_scenario_editor_and_the_api_set_the_session_clock(signed_in, bank):
    agent = bank.agents.get()
    form = {
        "name": "Clocked",
        "steps_script": "user: Hi\nagent: Hello",
        "session_values": "",
        "channel": "web",
        "modality": "text",
        "session_id": "s",
        "project_id": "p",
        "project_number": "1",
        "location": "l",
        "token_budget": "8000",
        "now": "2026-06-01T12:00:00",
    }
    response = signed_in.post(reverse("scenario-new", args=[bank.pk, agent.pk]), form, headers=HX)
    assert response.status_code == 200
    scenario = Scenario.objects.get(agent=agent, name="Clocked")
    assert scenario.now == "2026-06-01T12:00:00"
    assert scenario.to_spec().session.now == "2026-06-01T12:00:00"
    editor = signed_in.get(
        reverse("scenario-edit", args=[bank.pk, agent.pk, scenario.pk]), headers=HX
    )
    assert 'name="now" value="2026-06-01T12:00:00"' in editor.content.decode()
    url = f"/api/apps/{bank.pk}/agents/{agent.pk}/scenarios/{scenario.pk}/"
    bad = signed_in.patch(url, {"now": "next tuesday"}, content_type="application/json")
    assert bad.status_code == 400 and bad.json()["diagnostics"][0]["code"] == "SC009"
    ok = signed_in.patch(url, {"now": ""}, content_type="application/json")
    assert ok.status_code == 200 and ok.json()["now"] == ""
