"""Platform tools (end_session, customize_response): CX provides them, Statecraft knows them."""

from __future__ import annotations

import pytest

from agents import services
from agents.core.cx.app import read_zip
from agents.models import AgentApp, Tool
from agents.services import ServiceError, exchange

pytestmark = pytest.mark.django_db


def test_a_platform_tool_is_created_attached_and_exported_as_cx_expects(bank, user):
    root = bank.agents.get(is_root=True)
    tool = services.tool_create(
        app=bank, name="end_session", kind="platform", attach_to=root, actor=user
    )
    assert tool.kind == "platform"
    data, diagnostics = exchange.app_export_cx(AgentApp.objects.get(pk=bank.pk))
    files, _ = read_zip(data)
    assert not [p for p in files if p.startswith("tools/end_session/")]  # CX never ships it
    import json

    agent_json = json.loads(files[f"agents/{root.display_name}/{root.display_name}.json"])
    assert "end_session" in agent_json["tools"]
    assert not [
        d for d in diagnostics if "end_session" in d.message and d.severity.value == "error"
    ]


def test_only_the_tools_cx_provides_can_be_platform_tools(bank, user):
    with pytest.raises(ServiceError) as refused:
        services.tool_create(app=bank, name="hang_up", kind="platform", actor=user)
    message = refused.value.diagnostics[0].message
    assert "end_session" in message and "customize_response" in message
    assert not Tool.objects.filter(name="hang_up").exists()


def test_the_simulation_calls_a_platform_tool(bank, user):
    from agents.services.sandbox_door import simulate_scenario

    root = bank.agents.get(is_root=True)
    services.tool_create(app=bank, name="end_session", kind="platform", attach_to=root, actor=user)
    scenario = services.scenario_save(
        agent=root,
        name="Goodbye",
        steps_script='user: bye\ntool: end_session {"reason": "done"}\nagent: Goodbye!',
        actor=user,
    )
    _, result = simulate_scenario(app=bank, agent=root, scenario=scenario)
    responses = [e for e in result.events if e.kind == "tool_response"]
    assert responses and "end_session" in responses[0].text
    assert not [d for d in result.diagnostics if d.severity.value == "error"]
