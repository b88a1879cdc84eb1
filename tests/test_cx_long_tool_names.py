"""Tool names as CX names them (issue 30): a toolset's operation is `<toolset>_<operationId>`
and published apps call names of 61 and 70 characters (`tools.<name>(...)` in code,
`{@TOOL: name}` in instructions). The import keeps them whole, so they resolve in the
simulation, the lint, the CX export and the ADK export."""

from __future__ import annotations

import json

import pytest

from agents.core.cx.app import from_cx_files, read_zip, zip_bytes
from agents.core.lint import lint_app
from agents.core.spec import ToolKind
from agents.models import Tool
from agents.services import exchange
from agents.services.sandbox_door import simulate_scenario

pytestmark = pytest.mark.django_db

OPERATION = "generate_upload_url_for_the_customer_artifacts_signed_post"
LONG_OP = f"Banking_Service_{OPERATION}"  # 74 characters: CX's name of the operation
LONG_PY = "banking_service_generate_upload_url_artifacts_signed_url_post"  # 61, as published
PREFIX = "projects/p/locations/us/apps/a1"
SCHEMA = f"""openapi: 3.0.0
info: {{title: Banking, version: '1'}}
servers: [{{url: 'https://bank.example.com'}}]
paths:
  /artifacts/upload:
    post:
      operationId: {OPERATION}
      summary: A signed upload URL
      responses: {{'200': {{description: ok}}}}
"""
SIGNED = f"def {LONG_PY}(name: str) -> dict:\n    return {{'url': 'https://u/' + name}}\n"
CALLER = f"def upload(name: str) -> dict:\n    return tools.{LONG_PY}({{'name': name}}).json()\n"


def files() -> dict[str, bytes]:
    objects = {
        "app.json": {
            "name": PREFIX,
            "displayName": "Long names",
            "rootAgent": f"{PREFIX}/agents/root-1",
        },
        "agents/Root/Root.json": {
            "name": "root-1",
            "displayName": "Root",
            "instruction": "agents/Root/instruction.txt",
            "tools": ["upload-1", "signed-1"],
            "toolsets": [{"toolset": "Banking_Service", "toolIds": [OPERATION]}],
        },
        "tools/upload/upload.json": {
            "name": "upload-1",
            "displayName": "upload",
            "pythonFunction": {
                "name": "upload",
                "pythonCode": "tools/upload/python_function/python_code.py",
            },
        },
        f"tools/{LONG_PY}/{LONG_PY}.json": {
            "name": "signed-1",
            "displayName": LONG_PY,
            "pythonFunction": {
                "name": LONG_PY,
                "pythonCode": f"tools/{LONG_PY}/python_function/python_code.py",
            },
        },
        "toolsets/Banking_Service/Banking_Service.json": {
            "name": "Banking_Service",
            "displayName": "Banking_Service",
            "openApiToolset": {
                "openApiSchema": "toolsets/Banking_Service/open_api_toolset/open_api_schema.yaml"
            },
        },
    }
    out = {path: json.dumps(value).encode() for path, value in objects.items()}
    out["agents/Root/instruction.txt"] = (
        f"Call {{@TOOL: {LONG_OP}}} for an upload URL, or {{@TOOL: {LONG_PY}}}."
    ).encode()
    out["tools/upload/python_function/python_code.py"] = CALLER.encode()
    out[f"tools/{LONG_PY}/python_function/python_code.py"] = SIGNED.encode()
    out["toolsets/Banking_Service/open_api_toolset/open_api_schema.yaml"] = SCHEMA.encode()
    return out


def test_the_import_keeps_long_operation_and_tool_names_whole():
    assert len(LONG_OP) > 70 and len(LONG_PY) == 61
    spec, diagnostics = from_cx_files(files())
    assert spec is not None, diagnostics
    operation = spec.tool(LONG_OP)
    assert operation is not None and operation.kind is ToolKind.OPENAPI
    assert spec.tool(LONG_PY) is not None
    assert LONG_OP in spec.agent("Root").tools
    problems = [d for d in lint_app(spec) if d.severity.value == "error"]
    assert not problems, problems  # {@TOOL: …} resolves: no unknown tool


def test_long_names_resolve_in_the_simulation_and_both_exports(user):
    app, kind, _ = exchange.app_import_file(owner=user, data=zip_bytes(files()))
    assert kind == "cx"
    assert set(Tool.objects.filter(app=app).values_list("name", flat=True)) >= {LONG_OP, LONG_PY}
    root = app.agents.get(is_root=True)
    from agents import services

    scenario = services.scenario_save(
        agent=root,
        name="Upload",
        steps_script='user: upload\ntool: upload {"name": "a.pdf"}\nagent: Done.\n',
        actor=user,
    )
    _, result = simulate_scenario(app=app, agent=root, scenario=scenario)
    response = next(e for e in result.events if e.kind == "tool_response")
    assert response.value == {"result": {"url": "https://u/a.pdf"}}, response
    # CX export: the agent names the operation of the toolset as CX does, the tool its own.
    data, _ = exchange.app_export_cx(app)
    exported, _ = read_zip(data)
    instruction = next(v for p, v in exported.items() if p.endswith("Root/instruction.txt"))
    assert f"{{@TOOL: {LONG_OP}}}" in instruction.decode()
    # ADK export: the code calls the long names, and each is defined under that name.
    adk, _ = exchange.app_export_adk_files(app)
    text = "\n".join(v.decode("utf-8", "replace") for v in adk.values())
    assert f"tools.{LONG_PY}(" in text and f"def {LONG_PY}(" in text
    assert LONG_OP in text


def test_an_operation_name_past_the_limit_is_said_with_both_names():
    """A CX name longer than Statecraft's tool name limit (196 with room for a suffix) is
    imported shorter, and the import report says so naming both (before: cut silently)."""
    operation = "x" * 230
    data = files()
    data["toolsets/Banking_Service/open_api_toolset/open_api_schema.yaml"] = SCHEMA.replace(
        OPERATION, operation
    ).encode()
    root = json.loads(data["agents/Root/Root.json"])
    root["toolsets"] = [{"toolset": "Banking_Service"}]
    data["agents/Root/Root.json"] = json.dumps(root).encode()
    spec, diagnostics = from_cx_files(data)
    assert spec is not None, diagnostics
    cut = [d for d in diagnostics if d.code == "SC609" and operation in str(d.message)]
    assert len(cut) == 1 and cut[0].severity.value == "warning", diagnostics
    imported = next(t for t in spec.tools if t.kind is ToolKind.OPENAPI)
    assert imported.name in str(cut[0].message) and len(imported.name) == 196
