"""JSON nested too deeply in a scenario, and hostile text in the ADK export (depthcap).

Each test fails on the code before its fix: a scenario step or an evalset holding JSON
nested 1,000 (or 100,000) levels deep was saved (or a 500), and then the app could not
be simulated or exported; an app name with ``\"\"\"`` closed the exported agent.py's
docstring; importing the exported package ran the tools' top-level code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from agents.core.adk.package import to_adk_files
from agents.core.spec import AgentSpec, AppSpec, ToolKind, ToolSpec
from agents.models import Agent, Scenario, ScenarioStep


def _deep(levels: int) -> str:
    return "[" * levels + "]" * levels


def _root(app) -> Agent:
    return app.agents.get(is_root=True)


@pytest.fixture
def api(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


# --------------------------------------------------------------- 1. nesting on save


@pytest.mark.parametrize(
    "script",
    [
        'user: hi\nexpect call: LookupBalance {"a": %s}',
        'user: hi\nexpect state: {"a": %s}',
        'mock: LookupBalance {"a": %s}\nuser: hi',
        'variables: {"a": %s}\nuser: hi',
        'user: hi\ntool: LookupBalance {"a": %s}',
    ],
)
@pytest.mark.parametrize("levels", [1000, 100_000])
def test_a_step_script_nested_too_deeply_is_refused_on_save(api, bank, script, levels):
    agent = _root(bank)
    before = Scenario.objects.count()
    response = api.post(
        f"/api/apps/{bank.pk}/agents/{agent.pk}/scenarios/",
        {"name": "Deep", "steps_script": script % _deep(levels)},
        format="json",
    )
    assert response.status_code == 400, response.content[:300]
    (problem,) = response.json()["diagnostics"]
    assert problem["field"] == "steps_script"
    assert "nested more than 100 levels deep" in problem["message"]
    assert Scenario.objects.count() == before


def test_a_step_script_nested_100_levels_is_kept(api, bank):
    agent = _root(bank)
    response = api.post(
        f"/api/apps/{bank.pk}/agents/{agent.pk}/scenarios/",
        {
            "name": "Deep",
            "steps_script": 'user: hi\nexpect call: LookupBalance {"a": ' + _deep(99) + "}",
        },
        format="json",
    )
    assert response.status_code == 201, response.content[:300]


def test_session_values_nested_too_deeply_are_refused_on_save(api, bank):
    agent = _root(bank)
    deep: object = 1
    for _ in range(150):
        deep = [deep]
    response = api.post(
        f"/api/apps/{bank.pk}/agents/{agent.pk}/scenarios/",
        {"name": "Deep", "session_values": {"authenticated": deep}},
        format="json",
    )
    assert response.status_code == 400
    assert [(d["code"], d["field"]) for d in response.json()["diagnostics"]] == [
        ("SC008", "session_values")
    ]
    assert not Scenario.objects.filter(name="Deep").exists()


def _evalset(args: str) -> bytes:
    case = {
        "eval_id": "deep",
        "conversation": [
            {
                "user_content": {"parts": [{"text": "hi"}]},
                "intermediate_data": {
                    "tool_uses": [{"name": "LookupBalance", "args": {"a": "ARGS"}}]
                },
            }
        ],
    }
    return json.dumps({"eval_cases": [case]}).replace('"ARGS"', args).encode()


@pytest.mark.parametrize("levels", [1000, 100_000])
def test_an_evalset_nested_too_deeply_is_refused_with_sc660(signed_in, bank, levels, tmp_path):
    path = tmp_path / "deep.evalset.json"
    path.write_bytes(_evalset(_deep(levels)))
    before = Scenario.objects.count()
    with path.open("rb") as upload:
        response = signed_in.post(
            reverse("app-import-evalset", args=[bank.pk]), {"evalset": upload}
        )
    assert response.status_code == 400
    page = response.content.decode()
    assert "SC660" in page and "nested more than 100 levels deep" in page
    assert Scenario.objects.count() == before


def _stored_deep_scenario(app) -> Scenario:
    """A scenario saved before the limit: its expected call's arguments 1,000 levels deep."""
    agent = _root(app)
    scenario = Scenario.objects.create(agent=agent, name="Old deep")
    deep: object = 1
    for _ in range(1000):
        deep = [deep]
    ScenarioStep.objects.create(scenario=scenario, order=0, kind="user", text="hi")
    ScenarioStep.objects.create(
        scenario=scenario,
        order=1,
        kind="expect",
        expectation={"kind": "call", "tool": "LookupBalance", "value": {"a": deep}},
    )
    return scenario


def test_a_stored_scenario_nested_too_deeply_is_named_by_simulate(api, bank):
    scenario = _stored_deep_scenario(bank)
    simulated = api.post(
        f"/api/apps/{bank.pk}/agents/{scenario.agent.pk}/scenarios/{scenario.pk}/simulate",
        format="json",
    )
    assert simulated.status_code == 200
    assert [(d["code"], d["field"]) for d in simulated.json()["diagnostics"]] == [
        ("SC502", "steps_script")
    ]
    assert (
        "steps[1].expectation.value is nested more than 100 levels"
        in simulated.json()["diagnostics"][0]["message"]
    )


@pytest.mark.parametrize("fmt", ["native", "cx", "adk"])
def test_a_stored_scenario_nested_too_deeply_is_named_by_export(signed_in, bank, fmt):
    _stored_deep_scenario(bank)
    exported = signed_in.get(reverse(f"app-export-{fmt}", args=[bank.pk]))
    named = "The scenario Old deep cannot be run or exported: its steps[1].expectation.value"
    if fmt == "native":
        assert exported.status_code == 400
        assert named in exported.content.decode()
    else:
        assert exported.status_code == 200
        assert exported["X-Statecraft-Export-Warnings"] != "0"
        page = signed_in.get(reverse("app-export", args=[bank.pk]))
        assert page.status_code == 200 and named in page.content.decode()


def test_json_too_deep_for_the_parser_is_a_named_refusal_in_the_designer(signed_in, bank):
    response = signed_in.post(
        reverse("schema-example", args=[bank.pk]), {"json_schema": _deep(100_000)}
    )
    assert response.status_code == 200
    assert "nested more than 100 levels deep" in response.json()["error"]


# --------------------------------------------------------------- 2./3. the ADK package

HOSTILE = (
    'X"""; __import__("os").system("touch MARKER"); """ \'\'\' \\ \\"\\"\\" end\n'
    "line two\u2028three\x00four"
)


def _hostile_app(marker: Path) -> AppSpec:
    tool_code = (
        "import pathlib\n"
        f"pathlib.Path({str(marker)!r}).write_text('ran')\n\n\n"
        "def LookupBalance(account_id: str, limit: int = 3, *, tags: list[str] | None = None,"
        " context=None) -> dict:\n"
        '    """The balance of an account."""\n'
        "    return {'balance': 1}\n"
    )
    return AppSpec(
        name=HOSTILE,
        tools=(ToolSpec("LookupBalance", ToolKind.PYTHON, python_code=tool_code),),
        agents=(AgentSpec("Root", is_root=True, tools=("LookupBalance",)),),
    )


def test_the_exported_package_compiles_and_importing_it_runs_no_user_code(tmp_path):
    import subprocess
    import sys

    marker = tmp_path / "marker.txt"
    app = _hostile_app(marker)
    files, _ = to_adk_files(app)
    out = tmp_path / "out"
    for path, data in files.items():
        (out / path).parent.mkdir(parents=True, exist_ok=True)
        (out / path).write_bytes(data)
    agent_py = next(p for p in files if p.endswith("/agent.py"))
    for path, data in files.items():
        if path.endswith(".py"):
            compile(data, path, "exec")  # every generated file compiles
    first = files[agent_py].decode().splitlines()[0]
    assert first.startswith('"""The ADK agent of the Statecraft app ') and "\n" not in first
    package = agent_py.split("/")[0]
    check = (
        f"import {package}.agent as a, json; t = a.root_agent.tools[0];"
        "d = t._get_declaration();"
        "print(json.dumps([a.__doc__.splitlines()[0], t.name, d.description,"
        ' d.model_dump(mode="json", exclude_none=True)]))'
    )
    done = subprocess.run(
        [sys.executable, "-c", check],
        cwd=out,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert not marker.exists()  # neither the app's name nor the tool's top level ran
    assert not (out / "MARKER").exists()
    doc, name, description, declared = json.loads(done.stdout.splitlines()[-1])
    assert doc == (
        f"The ADK agent of the Statecraft app {HOSTILE!r} (written by Statecraft's export)."
    )
    assert (name, description) == ("LookupBalance", "The balance of an account.")
    schema = declared["parameters_json_schema"]
    assert schema["properties"]["account_id"]["type"] == "string"
    assert schema["properties"]["limit"] == {"default": 3, "title": "Limit", "type": "integer"}
    assert schema["properties"]["tags"]["anyOf"][0] == {
        "items": {"type": "string"},
        "type": "array",
    }
    assert schema["required"] == ["account_id"]


def test_an_api_body_too_deep_to_parse_is_a_400(api, bank):
    agent = _root(bank)
    body = '{"name": "x", "session_values": {"a": ' + _deep(100_000) + "}}"
    response = api.post(
        f"/api/apps/{bank.pk}/agents/{agent.pk}/scenarios/", body, content_type="application/json"
    )
    assert response.status_code == 400
    assert "nested too deeply" in json.dumps(response.json())
    assert not Scenario.objects.filter(name="x").exists()
