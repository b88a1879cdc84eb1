"""Native and CX Agent Studio formats: round trips, official proto parsing, reports, zip safety."""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.core import formats
from agents.core.cx import app as cx_format
from agents.core.cx import archive as cx_archive
from agents.core.cx.app import from_cx_files, read_zip, to_cx_files, zip_bytes
from agents.core.diagnostics import Severity, has_errors, strip_prefix
from agents.core.formats import (
    NATIVE_SCHEMA,
    check_app_spec,
    dumps_native,
    from_native,
    loads_native,
    to_native,
)
from agents.core.formats.schema import native_validator
from agents.core.spec import (
    AgentSpec,
    AppSpec,
    CallbackKind,
    CallbackSpec,
    ScenarioSpec,
    SchemaSpec,
    SessionSpec,
    StepKind,
    StepSpec,
    ToolKind,
    ToolMock,
    ToolSpec,
    VariableSpec,
    VariableType,
)
from tests import optional
from tests.cx_tree import without_cx

ROOT = Path(__file__).resolve().parents[2]

CUSTOMER = {
    "type": "object",
    "properties": {
        "first_name": {"type": "string", "description": "Given name"},
        "tier": {"type": "string", "enum": ["bronze", "silver", "gold"]},
        "age": {"type": "integer", "minimum": 0},
        "address": {
            "type": "object",
            "properties": {"zip": {"type": "string"}, "city": {"type": "string"}},
        },
    },
    "required": ["first_name", "tier"],
}
ORDER = {
    "type": "object",
    "properties": {"id": {"type": "string"}, "total": {"type": "number"}},
    "required": ["id"],
}
OPENAPI = {
    "openapi": "3.0.0",
    "info": {"title": "Accounts", "version": "1"},
    "servers": [{"url": "https://bank.example"}],
    "paths": {
        "/balance": {
            "get": {
                "operationId": "getBalance",
                "parameters": [
                    {
                        "name": "X-Session",
                        "in": "header",
                        "schema": {"type": "string"},
                        "x-ces-session-context": "$context.session_id",
                    }
                ],
                "responses": {"200": {"description": "ok"}},
            }
        }
    },
}
TOOL_CODE = '''def LookupBalance(account_id: str = "primary") -> dict:
    """Looks up the balance."""
    context.state["balance"] = 1250
    return {"balance": 1250}
'''
MULTILINE = (
    "Line one: {{customer.first_name}}\n\n  indented — ünïcödé\ttab\nlast line without newline"
)


def _app() -> AppSpec:
    return AppSpec(
        name="Bank “demo”",
        description="A bank\nwith two lines",
        schemas=(
            SchemaSpec("Customer", CUSTOMER, "Who we talk to"),
            SchemaSpec("Order", ORDER),
        ),
        variables=(
            VariableSpec(
                "customer",
                VariableType.OBJECT,
                {"first_name": "Ada", "tier": "gold"},
                "The customer",
                schema="Customer",
            ),
            VariableSpec(
                "orders",
                VariableType.LIST,
                [{"id": "a1", "total": 2.5}],
                "Past orders",
                item_type=VariableType.OBJECT,
                schema="Order",
            ),
            VariableSpec("languages", VariableType.LIST, ["fr", "de"], "Langs", VariableType.TEXT),
            VariableSpec("balance", VariableType.NUMBER, None, "Balance"),
            VariableSpec("authenticated", VariableType.BOOLEAN, False, "Signed in?"),
            VariableSpec("greeting", VariableType.TEXT, "yes", "A YAML-looking text"),
        ),
        tools=(
            ToolSpec(
                "LookupBalance",
                ToolKind.PYTHON,
                "Looks up the balance.",
                python_code=TOOL_CODE,
                mock=ToolMock(state={"balance": 1250}, response={"balance": 1250, "ok": True}),
            ),
            ToolSpec("GetBalance", ToolKind.OPENAPI, "HTTP balance", openapi=OPENAPI),
            ToolSpec(
                "Crm",
                ToolKind.MCP,
                "CRM over MCP",
                mcp_url="https://mcp.example/crm",
                mcp_headers=(("X-Customer", "$context.variables.customer"), ("X-Static", "1")),
            ),
        ),
        agents=(
            AgentSpec(
                "Bank Agent",
                MULTILINE + " {@TOOL: LookupBalance} {@AGENT: Helper}",
                "Answers",
                tools=("LookupBalance", "GetBalance"),
                children=("Helper",),
                callbacks=(
                    CallbackSpec(CallbackKind.BEFORE_MODEL, "x = 1\n", 0),
                    CallbackSpec(CallbackKind.BEFORE_MODEL, "y = 2\n", 1),
                    CallbackSpec(CallbackKind.AFTER_TOOL, "context.state['balance'] = 3\n", 0),
                ),
                is_root=True,
            ),
            AgentSpec("Helper", "I help with {@TOOL: Crm}.", tools=("Crm",)),
        ),
    )


def _scenarios() -> tuple[ScenarioSpec, ...]:
    return (
        ScenarioSpec(
            "Balance question",
            "Bank Agent",
            session=SessionSpec(
                values={"balance": 3},
                channel="telephony",
                modality="voice",
                now="2026-06-01T12:00:00",
            ),
            steps=(
                StepSpec(StepKind.USER, text="What is my balance?"),
                StepSpec(StepKind.TOOL, tool="LookupBalance", args={"account_id": "primary"}),
                StepSpec(StepKind.AGENT, text="It is 1,250 EUR."),
                StepSpec(StepKind.CALLBACK, callback=CallbackKind.BEFORE_MODEL),
            ),
            token_budget=500,
            use_mocks=True,
        ),
    )


def _codes(diagnostics) -> set[str]:
    return {d.code for d in diagnostics}


# ---------------------------------------------------------------- native


def test_published_schema_file_equals_the_schema_in_code():
    text = (ROOT / "docs" / "native-format.schema.json").read_text(encoding="utf-8")
    assert json.loads(text) == NATIVE_SCHEMA
    assert text == json.dumps(NATIVE_SCHEMA, indent=2, ensure_ascii=False) + "\n"


def test_native_round_trip_gives_the_same_document_and_app():
    doc = to_native(_app(), _scenarios())
    app, scenarios, diagnostics = from_native(doc)
    assert not has_errors(diagnostics), diagnostics
    assert to_native(app, scenarios) == doc
    assert app == _app()
    assert scenarios[0].steps == _scenarios()[0].steps
    assert scenarios[0].session.channel == "telephony"


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_native_text_round_trip_keeps_values_and_key_order(fmt):
    doc = to_native(_app(), _scenarios())
    text = dumps_native(doc, fmt)
    loaded, diagnostics = loads_native(text.encode("utf-8"))
    assert diagnostics == ()
    assert loaded == doc
    schema = loaded["app"]["schemas"][0]["json_schema"]
    assert list(schema["properties"]) == ["first_name", "tier", "age", "address"]
    app, scenarios, _ = from_native(loaded)
    assert to_native(app, scenarios) == doc


def test_yaml_export_is_readable_block_text():
    text = dumps_native(to_native(_app()), "yaml")
    assert text.startswith("format: statecraft.app\nversion: 1\n")
    assert "python_code: |" in text
    assert "&" not in text.split("python_code")[0]  # no anchors
    assert "greeting" in text and "default: 'yes'" in text  # quoted, not read back as true


def test_loads_native_refuses_what_json_cannot_hold():
    alias = "format: statecraft.app\nx: &a [1, 2]\ny: *a\n"
    _, problems = loads_native(alias)
    assert _codes(problems) == {"SC501"} and "alias" in problems[0].message
    _, problems = loads_native('{"format": NaN}')
    assert _codes(problems) == {"SC501"}
    _, problems = loads_native("a: .nan\n")
    assert _codes(problems) == {"SC503"}
    _, problems = loads_native("1: x\n")
    assert _codes(problems) == {"SC503"}
    _, problems = loads_native(b"\xff\xfe not utf-8")
    assert _codes(problems) == {"SC501"}
    _, problems = loads_native("[" * 5000 + "]" * 5000)
    assert _codes(problems) & {"SC501", "SC502"}
    _, problems = loads_native("{'bad json")
    assert _codes(problems) == {"SC501"} and problems[0].line == 1
    doc, problems = loads_native("when: 2024-01-02\n")
    assert doc == {"when": "2024-01-02"} and problems == ()


def test_from_native_names_the_field_of_a_structural_error():
    doc = to_native(_app())
    doc["app"]["variables"][3]["type"] = "money"
    app, _, problems = from_native(doc)
    assert app is None
    assert [d.field for d in problems] == ["variables.balance.type"]
    assert problems[0].code == "SC505"
    assert "not one of" in problems[0].message


def test_from_native_refuses_another_format_or_version():
    assert from_native({"format": "other"})[2][0].code == "SC504"
    doc = to_native(_app())
    doc["version"] = 2
    app, _, problems = from_native(doc)
    assert app is None and problems[0].field == "version"


def test_from_native_reports_a_deep_default_error_with_its_field():
    doc = to_native(_app())
    doc["app"]["variables"][0]["default"] = {
        "first_name": "Ada",
        "tier": "gold",
        "address": {"zip": 75001},
    }
    app, _, problems = from_native(doc)
    errors = [d for d in problems if d.severity is Severity.ERROR]
    assert app is not None and len(errors) == 1
    assert errors[0].field == "variables.customer.default"
    assert "customer.address.zip" in errors[0].message


def test_check_app_spec_finds_every_problem_at_once():
    app = _app()
    broken = AppSpec(
        name=app.name,
        schemas=(*app.schemas, SchemaSpec("Customer", {"type": "object"})),
        variables=(
            VariableSpec("1bad", VariableType.TEXT),
            VariableSpec("thing", VariableType.OBJECT, schema="Missing"),
        ),
        tools=(ToolSpec("Broken", ToolKind.PYTHON, python_code="def Broken(:\n"),),
        agents=(
            AgentSpec("A", tools=("Nope",), children=("B",), is_root=True),
            AgentSpec("B", children=("A",), callbacks=(CallbackSpec(CallbackKind.AFTER_TOOL, ""),)),
            AgentSpec("{C}", is_root=True),
        ),
    )
    scenario = ScenarioSpec("S", "Ghost")
    fields = {d.field for d in check_app_spec(broken, [scenario]) if d.severity is Severity.ERROR}
    assert {
        "schemas.Customer",
        "variables.1bad.name",
        "variables.thing.schema",
        "tools.Broken.python_code",
        "agents.A.tools",
        "agents.B.callbacks[0].code",
        "agents.{C}.name",
        "agents",
        "agents.Ghost.scenarios.S",
    } <= fields
    assert any(f and f.endswith(".children") for f in fields)  # the A → B → A cycle


def test_scenario_script_is_accepted_in_place_of_steps():
    doc = to_native(_app(), _scenarios())
    scenario = doc["app"]["agents"][0]["scenarios"][0]
    del scenario["steps"]
    scenario["script"] = "user: hi\ntool: LookupBalance {}\ncallback: after_tool"
    _, scenarios, problems = from_native(doc)
    assert not has_errors(problems)
    assert [s.kind for s in scenarios[0].steps] == [StepKind.USER, StepKind.TOOL, StepKind.CALLBACK]
    scenario["script"] = "hello there"
    _, _, problems = from_native(doc)
    assert problems[0].field == "agents.Bank Agent.scenarios.Balance question.script"


# ---------------------------------------------------------------- CX Agent Studio


def test_cx_layout_and_every_json_parses_with_the_official_types():
    ces = optional.ces_v1()
    files, _ = to_cx_files(_app(), _scenarios())
    assert {
        "app.json",
        "agents/Bank_Agent/Bank_Agent.json",
        "agents/Bank_Agent/instruction.txt",
        "agents/Bank_Agent/before_model_callbacks/before_model_callbacks_01/python_code.py",
        "agents/Bank_Agent/before_model_callbacks/before_model_callbacks_02/python_code.py",
        "agents/Bank_Agent/after_tool_callbacks/after_tool_callbacks_01/python_code.py",
        "agents/Helper/Helper.json",
        "tools/LookupBalance/LookupBalance.json",
        "tools/LookupBalance/python_function/python_code.py",
        "tools/LookupBalance/tool_fake_config/code_block/python_code.py",
        "tools/GetBalance/GetBalance.json",
        "tools/GetBalance/open_api_tool/open_api_schema.yaml",
        "tools/Crm/Crm.json",
    } <= set(files)
    json_files = [p for p in files if p.endswith(".json")]
    assert len(json_files) == 7  # with the scenario, a golden evaluation (ces_v1beta)
    for path in json_files:
        text = files[path].decode("utf-8")
        if path.startswith("evaluations/"):
            ces_beta = optional.ces_v1beta()
            assert ces_beta.Evaluation.from_json(text, ignore_unknown_fields=False).golden
            continue
        message = {"app.json": ces.App}.get(path) or (
            ces.Agent if path.startswith("agents/") else ces.Tool
        )
        parsed = message.from_json(text, ignore_unknown_fields=False)
        assert parsed.display_name
    app = ces.App.from_json(files["app.json"].decode(), ignore_unknown_fields=False)
    assert app.root_agent == "Bank_Agent"
    assert [v.name for v in app.variable_declarations][:2] == ["customer", "orders"]
    customer = app.variable_declarations[0].schema
    assert customer.type_ == ces.Schema.Type.OBJECT
    assert customer.properties["age"].type_ == ces.Schema.Type.INTEGER
    agent = ces.Agent.from_json(files["agents/Bank_Agent/Bank_Agent.json"].decode())
    assert agent.instruction == "agents/Bank_Agent/instruction.txt"
    assert list(agent.tools) == ["LookupBalance", "GetBalance"]
    assert list(agent.child_agents) == ["Helper"]
    assert len(agent.before_model_callbacks) == 2 and len(agent.after_tool_callbacks) == 1
    tool = ces.Tool.from_json(files["tools/Crm/Crm.json"].decode())
    assert tool.mcp_tool.server_address == "https://mcp.example/crm"
    assert dict(tool.mcp_tool.custom_headers)["X-Static"] == "1"
    python = ces.Tool.from_json(files["tools/LookupBalance/LookupBalance.json"].decode())
    assert python.python_function.name == "LookupBalance"
    assert python.tool_fake_config.enable_fake_mode is False


def test_cx_round_trip_keeps_variables_schemas_tools_agents_and_callbacks():
    files, _ = to_cx_files(_app())
    app, diagnostics = from_cx_files(read_zip(zip_bytes(files))[0])
    assert not has_errors(diagnostics), diagnostics
    app = without_cx(app)
    original = _app()
    assert app.name == original.name and app.description == original.description

    # CX does not name schemas: compare each variable's schema by content, and the names
    # follow the documented rule (the variable's name in PascalCase, "Item" for a list).
    def by_content(spec: AppSpec) -> list[VariableSpec]:
        schemas = {s.name: s.schema for s in spec.schemas}
        return [replace(v, schema=schemas.get(v.schema)) for v in spec.variables]

    assert by_content(app) == by_content(original)
    assert [s.name for s in app.schemas] == ["Customer", "OrdersItem"]
    assert sorted(app.tools, key=lambda t: t.name) == sorted(original.tools, key=lambda t: t.name)
    assert sorted(app.agents, key=lambda a: a.name) == sorted(original.agents, key=lambda a: a.name)


def test_cx_export_reports_what_it_cannot_carry():
    app = _app()
    lossy = AppSpec(
        name=app.name,
        schemas=(SchemaSpec("Code", {"type": "object", "properties": {"c": {"pattern": "^a"}}}),),
        variables=(VariableSpec("code", VariableType.OBJECT, schema="Code"),),
        tools=app.tools,
        agents=app.agents,
    )
    _, diagnostics = to_cx_files(lossy, _scenarios())
    by_code = {d.code: d for d in diagnostics}
    assert by_code["SC620"].field == "agents.Bank Agent.scenarios.Balance question"
    assert by_code["SC621"].subject == "tools/LookupBalance/LookupBalance.json"
    assert by_code["SC622"].field == "variableDeclarations[0].description"
    pattern = next(d for d in diagnostics if "pattern" in d.message)
    assert pattern.subject == "app.json"
    assert pattern.field.startswith("variableDeclarations[0].schema")
    assert pattern.severity in (Severity.WARNING, Severity.INFO)


def test_cx_folder_names_are_sanitized_and_unique():
    assert cx_format.folder_name("Shopping Assistant") == "Shopping_Assistant"
    assert cx_format.folder_name("Café / Bar!") == "Cafe_Bar"  # accents dropped, no edge _
    assert cx_format.folder_name("Été") == "Ete" and cx_format.folder_name("名前") == "_"
    app = AppSpec(
        name="x", agents=(AgentSpec("a b", is_root=True), AgentSpec("a-b"), AgentSpec("A B"))
    )
    files, _ = to_cx_files(app)
    assert {p.split("/")[1] for p in files if p.startswith("agents/")} == {"a_b", "a-b", "A_B_2"}


REAL_LAYOUT = {
    "cx_app/Totto/app.json": {
        "name": "c1111111-2222",
        "displayName": "Totto",
        "description": "Fan agent",
        "rootAgent": "root_agent",
        "globalInstruction": "global_instruction.txt",
        "modelSettings": {"model": "gemini-3.0-flash-001"},
        "variableDeclarations": [
            {"name": "user_city", "description": "City", "schema": {"type": "STRING"}},
            {
                "name": "profile",
                "description": "Profile",
                "schema": {
                    "type": "OBJECT",
                    "title": "Profile",
                    "properties": {"tier": {"type": "STRING"}, "age": {"type": "INTEGER"}},
                },
            },
        ],
    },
    "cx_app/Totto/agents/root_agent/root_agent.json": {
        "name": "d1111111-1",
        "displayName": "root_agent",
        "instruction": "agents/root_agent/instruction.txt",
        "tools": ["get_links", "end_session"],
        "childAgents": ["helper_agent"],
        "afterToolCallbacks": [
            {
                "pythonCode": "agents/root_agent/after_tool_callbacks/after_tool_callbacks_01/python_code.py",
                "description": "log",
            }
        ],
    },
    "cx_app/Totto/agents/helper_agent/helper_agent.json": {
        "displayName": "Helper Agent",
        "instruction": "Inline instruction",
    },
    "cx_app/Totto/tools/get_links/get_links.json": {
        "name": "e1111111-4",
        "displayName": "get_links",
        "executionType": "SYNCHRONOUS",
        "pythonFunction": {
            "name": "get_links",
            "pythonCode": "tools/get_links/python_function/python_code.py",
            "description": "Official links",
        },
    },
    "cx_app/Totto/tools/end_session/end_session.json": {
        "displayName": "end_session",
        "systemTool": {"name": "end_session"},
    },
}
REAL_TEXTS = {
    "cx_app/Totto/global_instruction.txt": "Be nice.",
    "cx_app/Totto/agents/root_agent/instruction.txt": "Use {@TOOL: get_links}.",
    "cx_app/Totto/agents/root_agent/after_tool_callbacks/after_tool_callbacks_01/python_code.py": "x = 1\n",
    "cx_app/Totto/tools/get_links/python_function/python_code.py": "def get_links() -> dict:\n    return {}\n",
}


def _real_files() -> dict[str, bytes]:
    files = {p: json.dumps(v).encode() for p, v in REAL_LAYOUT.items()}
    files.update({p: v.encode() for p, v in REAL_TEXTS.items()})
    return files


def test_import_of_a_real_looking_cx_export_in_a_top_folder():
    app, diagnostics = from_cx_files(_real_files())
    assert not has_errors(diagnostics), diagnostics
    assert app.name == "Totto"
    assert [(v.name, v.type) for v in app.variables] == [
        ("user_city", VariableType.TEXT),
        ("profile", VariableType.OBJECT),
    ]
    assert app.schemas[0].name == "Profile"  # from the schema's title
    root = app.agent("root_agent")
    assert root.is_root and root.instructions == "Use {@TOOL: get_links}."
    # end_session is a platform tool: CX provides it (its systemTool folder is kept as is)
    assert root.tools == ("get_links", "end_session") and root.children == ("Helper Agent",)
    assert app.tool("end_session").kind is ToolKind.PLATFORM
    assert without_cx(root.callbacks) == (CallbackSpec(CallbackKind.AFTER_TOOL, "x = 1\n", 0),)
    assert root.callbacks[0].cx["description"] == "log"  # kept, and written back on export
    assert app.agent("Helper Agent").instructions == "Inline instruction"
    reported = {(d.subject, d.field) for d in diagnostics}
    assert ("app.json", "globalInstruction") in reported
    assert ("app.json", "modelSettings") in reported
    assert ("tools/end_session/end_session.json", "systemTool") in reported
    # the platform tool and the callback's description are understood: nothing to report
    assert ("agents/root_agent/root_agent.json", "tools[1]") not in reported
    assert (
        "agents/root_agent/root_agent.json",
        "afterToolCallbacks[0].description",
    ) not in reported
    assert ("global_instruction.txt", None) in reported


def test_cx_import_errors_name_the_file_and_the_field():
    files = _real_files()
    app_json = json.loads(files["cx_app/Totto/app.json"])
    app_json["variableDeclarations"][1]["schema"]["default"] = {"tier": "gold", "age": "old"}
    app_json["variableDeclarations"].append({"name": "2bad", "schema": {"type": "STRING"}})
    files["cx_app/Totto/app.json"] = json.dumps(app_json).encode()
    files["cx_app/Totto/agents/root_agent/root_agent.json"] = json.dumps(
        {**REAL_LAYOUT["cx_app/Totto/agents/root_agent/root_agent.json"], "childAgents": ["ghost"]}
    ).encode()
    files["cx_app/Totto/tools/get_links/get_links.json"] = b"{not json"
    _, diagnostics = from_cx_files(files)
    errors = {(d.subject, d.field) for d in diagnostics if d.severity is Severity.ERROR}
    assert ("app.json", "variableDeclarations[1].schema.default") in errors
    assert ("app.json", "variableDeclarations[2].name") in errors
    assert ("agents/root_agent/root_agent.json", "childAgents[0]") in errors
    assert ("tools/get_links/get_links.json", "tools/get_links/get_links.json:1:2") in errors
    default = next(d for d in diagnostics if d.field == "variableDeclarations[1].schema.default")
    assert default.message.startswith("app.json: ") and "profile.age" in default.message


def test_cx_import_without_app_json_or_with_a_missing_file():
    assert from_cx_files({"x.txt": b""})[1][0].code == "SC604"
    files = _real_files()
    del files["cx_app/Totto/agents/root_agent/instruction.txt"]
    _, diagnostics = from_cx_files(files)
    missing = [d for d in diagnostics if d.code == "SC608" and d.field == "instruction"]
    assert missing and missing[0].subject == "agents/root_agent/root_agent.json"


# ---------------------------------------------------------------- zip safety


def _zip(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_zip_bytes_is_deterministic_and_read_back():
    files, _ = to_cx_files(_app())
    assert zip_bytes(files) == zip_bytes(dict(reversed(list(files.items()))))
    assert read_zip(zip_bytes(files)) == (files, ())


@pytest.mark.parametrize("name", ["../evil.py", "a/../../evil.py", "/etc/passwd", "C:/x.json"])
def test_zip_with_a_path_leaving_its_folder_is_refused(name):
    files, problems = read_zip(_zip({"app.json": b"{}", name: b"x"}))
    assert files is None and problems[0].code == "SC603"


def test_zip_bomb_is_refused(monkeypatch):
    monkeypatch.setattr(cx_archive, "MAX_ZIP_BYTES", 1024 * 1024)
    bomb = _zip({f"f{i}.txt": b"\0" * (400 * 1024) for i in range(3)})
    assert len(bomb) < 10 * 1024
    files, problems = read_zip(bomb)
    assert files is None and problems[0].code == "SC602"


def test_zip_with_too_many_files_or_not_a_zip_is_refused(monkeypatch):
    monkeypatch.setattr(cx_archive, "MAX_ZIP_FILES", 3)
    files, problems = read_zip(_zip({f"{i}.txt": b"" for i in range(4)}))
    assert files is None and problems[0].code == "SC602"
    files, problems = read_zip(b"PK\x03\x04 not really")
    assert files is None and problems[0].code == "SC601"


def test_zip_lying_about_its_size_is_caught_while_reading(monkeypatch):
    monkeypatch.setattr(cx_archive, "MAX_ZIP_FILE_BYTES", 1000)
    data = bytearray(_zip({"big.txt": b"a" * 5000}))
    # Patch the declared uncompressed size (local header and central directory) to 10 bytes.
    for signature, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        at = data.find(signature)
        data[at + offset : at + offset + 4] = (10).to_bytes(4, "little")
    files, problems = read_zip(bytes(data))
    assert files is None and problems[0].code in {"SC601", "SC602"}


def test_macos_entries_are_skipped():
    files, problems = read_zip(
        _zip({"__MACOSX/._app.json": b"x", "a/.DS_Store": b"x", "app.json": b"{}"})
    )
    assert problems == () and files == {"app.json": b"{}"}


def test_formats_codes_are_documented_in_the_modules():
    for module in (formats, cx_format):
        for code, words in module.CODES.items():
            assert code.startswith("SC") and words.endswith(".")


def test_native_round_trip_keeps_expectations_inputs_and_mocks():
    from agents.core.script import format_script, parse_script

    script = (
        'variables: {"tier": "gold"}\nevent: welcome\nuser: hi\n'
        'expect call [Check]: LookupBalance {"account_id": "primary"}\nexpect call: LookupBalance\n'
        'expect state: {"balance": 4}\nexpect response: LookupBalance {"ok": true}\n'
        "expect no calls\nexpect transfer: Other\nexpect agent: Hello\n"
        'mock: LookupBalance {"balance": 0}'
    )
    steps = parse_script(script).steps
    scenario = replace(_scenarios()[0], steps=steps)
    doc = to_native(_app(), [scenario])
    assert not list(native_validator().iter_errors(doc))
    _, scenarios, diagnostics = from_native(json.loads(json.dumps(doc)))
    assert not has_errors(diagnostics), diagnostics
    assert scenarios[0].steps == steps
    assert format_script(scenarios[0].steps) == script


def test_every_bad_name_in_a_native_document_is_named_with_its_fix_not_a_regex():
    doc = {
        "format": formats.FORMAT_NAME,
        "version": formats.FORMAT_VERSION,
        "app": {
            "name": "X",
            "variables": [{"name": "bad name", "type": "text"}, {"name": "1st", "type": "text"}],
        },
    }
    _, _, diagnostics = formats.from_native(doc)
    assert [d.message for d in diagnostics] == [
        "variables.bad name.name: 'bad name' is not a valid name: use only unaccented letters a-z, digits and "
        "underscores, not starting with a digit (for example 'bad_name')",
        "variables.1st.name: '1st' is not a valid name: use only unaccented letters a-z, digits and "
        "underscores, not starting with a digit (for example '_1st')",
    ]


# ---------------------------------------------------------------- a misshapen document: every problem


def _doc(app: dict) -> dict:
    return {"format": formats.FORMAT_NAME, "version": formats.FORMAT_VERSION, "app": app}


def _listed(doc) -> list[tuple[str, str, str]]:
    app, _, diagnostics = from_native(doc)
    assert app is None
    return [(d.code, d.field, strip_prefix(d.message, f"{d.field}: ")) for d in diagnostics]


def test_a_misshapen_document_also_lists_the_problems_of_the_rest():
    doc = _doc(
        {
            "name": "X",
            "variables": [
                {"name": "bad name", "type": "text"},
                {"name": "count", "type": "number", "default": "ten"},
            ],
            "tools": [{"name": "Lookup", "kind": "python", "python_code": "def f(:\n"}],
            "agents": [
                {
                    "name": "Root",
                    "is_root": True,
                    "tools": ["Missing"],
                    "scenarios": [{"name": "s", "token_budget": 0}],
                }
            ],
        }
    )
    assert _listed(doc) == [
        ("SC505", "agents.Root.scenarios.s.token_budget", "0 is less than the minimum of 1"),
        (
            "SC505",
            "variables.bad name.name",
            "'bad name' is not a valid name: use only unaccented letters a-z, digits and underscores, "
            "not starting with a digit (for example 'bad_name')",
        ),
        ("SC201", "variables.count.default", "count: 'ten' is not a number"),
        ("SC007", "tools.Lookup.python_code", "Line 1: invalid syntax. Fix the Python syntax."),
        ("SC507", "agents.Root.tools", "the app has no tool named 'Missing'"),
    ]


def test_what_a_shape_error_leaves_out_is_not_also_reported_missing():
    # A tool of an unknown kind, a variable of an unknown type, a schema with a stray key and
    # a sub-agent with a non-boolean is_root are each named once, by their shape error: not
    # again as a tool, variable, schema or agent the others refer to and the app lacks.
    doc = _doc(
        {
            "name": "X",
            "schemas": [{"name": "Customer", "json_schema": {"type": "object"}, "extra": 1}],
            "variables": [
                {"name": "customer", "type": "object", "schema": "Customer"},
                {"name": "v", "type": "txt"},
            ],
            "tools": [{"name": "T", "kind": "pyhton"}],
            "agents": [
                {
                    "name": "Root",
                    "tools": ["T"],
                    "children": ["Kid"],
                    "scenarios": [{"name": "s", "session": {"values": {"v": 1, "customer": {}}}}],
                },
                {"name": "Kid", "is_root": "yes", "tools": ["T"], "children": 3},
            ],
        }
    )
    assert _listed(doc) == [
        ("SC505", "agents.Kid.children", "3 is not a list"),
        ("SC505", "agents.Kid.is_root", "'yes' is not true or false (written without quotes)"),
        (
            "SC505",
            "schemas.Customer",
            "the property 'extra' is not allowed (allowed: 'name', 'description', 'json_schema')",
        ),
        (
            "SC505",
            "tools.T.kind",
            "'pyhton' is not one of 'python', 'openapi', 'mcp', 'platform'; did you mean 'python'?",
        ),
        (
            "SC505",
            "variables.v.type",
            "'txt' is not one of 'text', 'number', 'boolean', 'object', 'list'; "
            "did you mean 'text'?",
        ),
    ]


def test_a_reference_to_an_object_left_out_whole_is_not_reported_but_others_are():
    doc = _doc(
        {
            "name": "X",
            "tools": [{"name": "T", "kind": "python"}, {"kind": "python"}],
            "agents": [
                {"name": "Root", "is_root": True, "tools": ["T", "Gone"], "children": ["Sub"]},
                {"name": "Sub", "tools": "T"},
            ],
        }
    )
    # The nameless tool may be the one called Gone: no reference to a tool is doubted.
    assert _listed(doc) == [
        ("SC505", "agents.Sub.tools", "'T' is not a list"),
        ("SC505", "tools[1]", "the required property 'name' is missing"),
    ]
    doc["app"]["tools"][1] = {"name": "", "kind": "python"}  # an empty name: the same
    assert [code for code, _, _ in _listed(doc)] == ["SC505", "SC505"]
    doc["app"]["tools"].pop()
    assert _listed(doc)[-1] == ("SC507", "agents.Root.tools", "the app has no tool named 'Gone'")


def test_a_callback_left_out_keeps_the_place_of_the_others():
    doc = _doc(
        {
            "name": "X",
            "agents": [
                {
                    "name": "Root",
                    "is_root": True,
                    "callbacks": [
                        {"kind": "before_agnet", "code": "pass"},
                        {"kind": "after_agent", "code": "def f(:\n"},
                    ],
                }
            ],
        }
    )
    listed = _listed(doc)
    assert [(code, field) for code, field, _ in listed] == [
        ("SC505", "agents.Root.callbacks[0].kind"),
        ("SC007", "agents.Root.callbacks[1].code"),
    ]
    assert listed[0][2].endswith("did you mean 'before_agent'?")


def test_a_misspelt_property_names_the_one_meant_and_a_misshapen_app_says_so():
    doc = {**_doc({"name": "", "descripton": "x", "agents": [{"name": "A", "tools": ["T"]}]})}
    doc["extra"] = 1
    assert _listed(doc) == [
        (
            "SC505",
            "(document)",
            "the property 'extra' is not allowed (allowed: 'format', 'version', 'app')",
        ),
        ("SC505", "app", "the property 'descripton' is not allowed; did you mean 'description'?"),
        ("SC505", "name", "'' is shorter than 1 character"),
        ("SC508", "agents", "no agent is the root; A becomes the root"),
        ("SC507", "agents.A.tools", "the app has no tool named 'T'"),
    ]
    assert _listed(_doc({"agents": []})) == [
        ("SC505", "app", "the required property 'name' is missing"),
        (
            "SC505",
            "(document)",
            "the rest of the file is checked once the app itself has the format's shape",
        ),
    ]


def test_a_step_or_a_scenario_field_out_of_shape_leaves_the_rest_of_the_scenario_checked():
    doc = _doc(
        {
            "name": "X",
            "variables": [{"name": "n", "type": "number"}],
            "agents": [
                {
                    "name": "Root",
                    "is_root": True,
                    "scenarios": [
                        {
                            "name": "s",
                            "session": {"channel": "fax", "values": {"n": "x", "zz": 1}},
                            "steps": [{"kind": "tool"}, {"kind": "user", "text": "hi"}],
                        }
                    ],
                }
            ],
        }
    )
    assert [(code, field) for code, field, _ in _listed(doc)] == [
        ("SC505", "agents.Root.scenarios.s.session.channel"),
        ("SC505", "agents.Root.scenarios.s.steps[0]"),
        ("SC201", "agents.Root.scenarios.s.session.values.n"),
        ("SC010", "agents.Root.scenarios.s.session.values.zz"),
    ]


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.sampled_from(["", "x", "bad name", "python"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["name", "kind", "x"]), inner, max_size=3)
    ),
    max_leaves=6,
)


def _paths(node, path=()):
    yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _paths(value, (*path, i))


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_any_document_out_of_shape_is_read_without_an_exception(data):
    doc = json.loads(json.dumps(to_native(_app(), _scenarios())))
    for _ in range(data.draw(st.integers(1, 4))):
        paths = [p for p in _paths(doc) if len(p) > 1]
        path = data.draw(st.sampled_from(paths))
        parent = doc
        for part in path[:-1]:
            parent = parent[part]
        if data.draw(st.booleans()):
            parent[path[-1]] = data.draw(_JSON)
        elif isinstance(parent, dict):
            del parent[path[-1]]
    _, _, diagnostics = from_native(doc)
    for d in diagnostics:
        assert d.message and d.code.startswith("SC")
