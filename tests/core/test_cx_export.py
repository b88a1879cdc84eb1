"""The CX export as CX's own linter wants it: the app's name, tool descriptions, the fake's
place, and the instruction paths CX rejects (``tests/test_cx_lint.py`` runs the linter)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from agents.core.cx.app import from_cx_files, to_cx_files
from agents.core.diagnostics import Severity, has_errors
from agents.core.spec import (
    AgentSpec,
    AppSpec,
    SchemaSpec,
    ToolKind,
    ToolMock,
    ToolSpec,
    VariableSpec,
    VariableType,
)
from tests import optional

DOCUMENTED = '''def lookup(account_id: str) -> dict:
    """Looks up an account.

    Args:
        account_id: which one.
    """
    return {"id": account_id}
'''
UNDOCUMENTED = "def lookup(account_id: str) -> dict:\n    return {}\n"
ORDER = {
    "type": "object",
    "properties": {
        "lines": {"type": "array", "items": {"type": "object", "properties": {"sku": {}}}},
        "total": {"type": "number"},
    },
}


def _app(*tools: ToolSpec, instructions: str = "Hello.") -> AppSpec:
    return AppSpec(
        name="  Shop: “best” ",
        schemas=(SchemaSpec("Order", ORDER),),
        variables=(
            VariableSpec("languages", VariableType.LIST, ["fr"], "Langs", VariableType.TEXT),
            VariableSpec("order", VariableType.OBJECT, None, "The order", schema="Order"),
        ),
        tools=tools,
        agents=(AgentSpec("Root Agent", instructions, tools=tuple(t.name for t in tools)),),
    )


def _json(files: dict[str, bytes], path: str) -> dict:
    return json.loads(files[path])


def test_app_json_has_a_name_as_cx_requires():
    files, _ = to_cx_files(_app())
    app_json = _json(files, "app.json")
    assert app_json["name"] == "Shop_best"
    assert app_json["displayName"] == "  Shop: “best” "
    files, _ = to_cx_files(AppSpec(name="“”"))
    assert _json(files, "app.json")["name"] == "app"


def test_a_python_tool_without_a_description_is_described_by_its_docstring():
    files, found = to_cx_files(_app(ToolSpec("lookup", ToolKind.PYTHON, python_code=DOCUMENTED)))
    function = _json(files, "tools/lookup/lookup.json")["pythonFunction"]
    assert function["description"] == "Looks up an account.\n\nArgs:\n    account_id: which one."
    assert not [d for d in found if d.code == "SC625"]
    # Its own description wins over the docstring.
    own = ToolSpec("lookup", ToolKind.PYTHON, "  Finds it.  ", python_code=DOCUMENTED)
    files, _ = to_cx_files(_app(own))
    assert _json(files, "tools/lookup/lookup.json")["pythonFunction"]["description"] == "Finds it."


def test_a_tool_with_no_description_at_all_is_reported():
    tools = (
        ToolSpec("lookup", ToolKind.PYTHON, python_code=UNDOCUMENTED),
        ToolSpec("Crm", ToolKind.MCP, mcp_url="https://mcp.example/crm"),
    )
    _, found = to_cx_files(_app(*tools))
    reported = [(d.severity, d.subject, d.field) for d in found if d.code == "SC625"]
    assert reported == [
        (Severity.WARNING, "tools/lookup/lookup.json", "pythonFunction.description"),
        (Severity.WARNING, "tools/Crm/Crm.json", "mcpTool.description"),
    ]
    assert "no description or docstring" in next(d for d in found if d.code == "SC625").message


def _mocked(**cx) -> ToolSpec:
    return ToolSpec(
        "lookup",
        ToolKind.PYTHON,
        python_code=DOCUMENTED,
        mock=ToolMock(state={"languages": ["de"]}, response={"id": "a1"}),
        cx=cx,
    )


def test_a_mock_is_the_fake_code_block_where_cx_keeps_it_and_runs():
    files, found = to_cx_files(_app(_mocked()))
    path = "tools/lookup/tool_fake_config/code_block/python_code.py"
    config = _json(files, "tools/lookup/lookup.json")["toolFakeConfig"]
    assert config == {"codeBlock": {"pythonCode": path}, "enableFakeMode": False}
    assert "tools/lookup/tool_fake_config/python_code.py" not in files
    note = next(d for d in found if d.code == "SC621")
    assert "fake mode is off" in note.message
    # The code block does what the mock does, called as CX calls a fake.
    namespace: dict = {}
    exec(compile(files[path], path, "exec"), namespace)

    class Context:
        state: dict = {}

    context = Context()
    assert namespace["fake_tool_call"](None, {"account_id": "x"}, context) == {"id": "a1"}
    assert context.state == {"languages": ["de"]}


def test_fake_mode_stays_on_for_a_tool_imported_with_it_on():
    ces = optional.ces_v1()
    imported = {"toolFakeConfig": {"codeBlock": {"pythonCode": "x.py"}, "enableFakeMode": True}}
    files, found = to_cx_files(_app(_mocked(**imported)))
    text = files["tools/lookup/lookup.json"].decode()
    assert ces.Tool.from_json(text, ignore_unknown_fields=False).tool_fake_config.enable_fake_mode
    assert "fake mode is on" in next(d for d in found if d.code == "SC621").message


@pytest.mark.parametrize(
    "place",
    ["tool_fake_config/code_block/python_code.py", "tool_fake_config/python_code.py"],
)
def test_import_reads_the_fake_at_cx_s_place_and_at_the_older_one(place):
    files, _ = to_cx_files(_app(_mocked()))
    exported = "tools/lookup/tool_fake_config/code_block/python_code.py"
    files[f"tools/lookup/{place}"] = files.pop(exported)
    tool = _json(files, "tools/lookup/lookup.json")
    tool["toolFakeConfig"]["codeBlock"]["pythonCode"] = f"tools/lookup/{place}"
    files["tools/lookup/lookup.json"] = json.dumps(tool).encode()
    app, found = from_cx_files(files)
    assert not has_errors(found), found
    assert app.tool("lookup").mock == ToolMock(state={"languages": ["de"]}, response={"id": "a1"})


def test_an_index_into_a_list_is_an_error_of_the_export_where_it_is_written():
    text = "Hi.\nSpeak {{languages.0}}; first line {{order.lines.0.sku}}; total {{order.total}}."
    _, found = to_cx_files(_app(instructions=text))
    rejected = [d for d in found if d.code == "SC324"]
    assert [(d.severity, d.subject, d.field, d.line) for d in rejected] == [
        (Severity.ERROR, "agents/Root_Agent/instruction.txt", "instruction", 2),
        (Severity.ERROR, "agents/Root_Agent/instruction.txt", "instruction", 2),
    ]
    assert [text[d.start : d.end] for d in rejected] == [
        "{{languages.0}}",
        "{{order.lines.0.sku}}",
    ]
    assert rejected[0].message.startswith("agents/Root_Agent/instruction.txt: line 2: ")
    assert "CX Agent Studio rejects this reference" in rejected[0].message


def test_paths_cx_resolves_and_conditions_are_not_export_errors():
    text = (
        "{{languages}} {{order.total}} {{order}}\n"
        "{% if languages.0 == 'fr' %}Bonjour{% endif %}{% if order.nothing %}x{% endif %}"
    )
    _, found = to_cx_files(_app(instructions=text))
    assert not [d for d in found if d.code in ("SC321", "SC322", "SC323", "SC324")]
    # A part the schema does not declare: CX's linter rejects it too (its V104).
    _, found = to_cx_files(_app(instructions="{{order.nothing}} {{languages.first}}"))
    assert [(d.code, d.severity) for d in found if d.code.startswith("SC32")] == [
        ("SC322", Severity.ERROR),
        ("SC323", Severity.ERROR),
    ]


def test_a_sub_agent_of_two_agents_is_an_error_of_the_export():
    agents = (
        AgentSpec("Root", "r", children=("Helper", "Other"), is_root=True),
        AgentSpec("Other", "o", children=("Helper",)),
        AgentSpec("Helper", "h"),
    )
    _, found = to_cx_files(AppSpec(name="Tree", agents=agents))
    reported = [d for d in found if d.code == "SC626"]
    assert [(d.severity, d.subject) for d in reported] == [
        (Severity.ERROR, "agents/Helper/Helper.json")
    ]
    assert "'Helper' is a sub-agent of 2 agents (Root, Other)" in reported[0].message
    tree = (agents[0], replace(agents[1], children=()), agents[2])
    _, found = to_cx_files(AppSpec(name="Tree", agents=tree))
    assert not [d for d in found if d.code == "SC626"]


def test_a_tool_the_instructions_never_mention_is_a_warning_but_end_session():
    tools = (
        ToolSpec("lookup", ToolKind.PYTHON, python_code=DOCUMENTED),
        ToolSpec("end_session", ToolKind.PLATFORM),
    )
    app = AppSpec(
        name="Shop",
        tools=tools,
        agents=(AgentSpec("Root Agent", "Hi.", tools=("lookup", "end_session"), is_root=True),),
    )
    _, found = to_cx_files(app)
    unmentioned = [d for d in found if d.code == "SC312"]
    assert [(d.severity, d.subject, d.field, d.reference) for d in unmentioned] == [
        (Severity.WARNING, "agents/Root_Agent/Root_Agent.json", "tools", "lookup")
    ]
    mentioned = replace(app, agents=(replace(app.agents[0], instructions="{@TOOL: lookup}"),))
    assert not [d for d in to_cx_files(mentioned)[1] if d.code == "SC312"]
