"""CX exports shaped unlike the corpus: UUID names referenced by id, guardrails, MCP and OpenAPI
toolsets, tool kinds Statecraft does not edit, disabled callbacks, the YAML layout.

Written from CX's documented resources (``google.cloud.ces_v1beta`` App, Agent, Tool,
Toolset, Guardrail), not from one app: the import must keep whatever it does not edit and
the export must give it back, whatever the names and the layout.
"""

from __future__ import annotations

import io
import json
import zipfile

import pytest
import yaml

from agents.core.cx.app import from_cx_files, read_zip
from agents.core.spec import ToolKind
from agents.models import AgentApp
from agents.services import exchange
from tests.cx_tree import cx_tree

pytestmark = pytest.mark.django_db

ROOT_ID = "5b1c8a8e-0f3c-4a4e-9d7e-1a2b3c4d5e6f"
BILLING_ID = "9f0e1d2c-3b4a-5968-7766-554433221100"
LOOKUP_ID = "0d1e2f3a-4b5c-6d7e-8f90-a1b2c3d4e5f6"
CLIENT_ID = "c1c2c3c4-d5d6-e7e8-f9f0-a1a2a3a4a5a6"
ORDERS_ID = "7a7a7a7a-1111-2222-3333-444455556666"
PREFIX = "projects/p/locations/us/apps/a1"


def _app_files() -> dict[str, object]:
    """Objects as dicts (written as JSON or YAML by the test), texts as str."""
    return {
        "app.json": {
            "name": f"{PREFIX}",
            "displayName": "Acme Support",
            "description": "Support for Acme customers.",
            "rootAgent": f"{PREFIX}/agents/{ROOT_ID}",
            "languageSettings": {"defaultLanguageCode": "de", "supportedLanguageCodes": ["fr"]},
            "timeZoneSettings": {"timeZone": "Europe/Berlin"},
            "modelSettings": {"model": "gemini-2.5-flash", "temperature": 0.2},
            "guardrails": [f"{PREFIX}/guardrails/g-1"],
            "audioProcessingConfig": {"bargeInConfig": {"bargeInAwareness": True}},
            "loggingSettings": {"redactionConfig": {"enableRedaction": True}},
            "errorHandlingSettings": {"fallbackResponse": {"text": "Sorry."}},
            "defaultChannelProfile": {"channelType": "WEB_UI", "profileId": "web"},
            "globalInstruction": "Always be polite.",
            "metadata": {"cost_center": "cc_01", "owner_team": "care"},
            "variableDeclarations": [
                {
                    "name": "customer_tier",
                    "description": "Tier",
                    "schema": {"type": "STRING", "enum": ["gold", "silver"], "default": "silver"},
                },
                {
                    "name": "open_tickets",
                    "description": "Open tickets",
                    "schema": {
                        "type": "ARRAY",
                        "items": {"type": "OBJECT", "properties": {"id": {"type": "STRING"}}},
                    },
                },
            ],
        },
        "guardrails/Prompt_Guard/Prompt_Guard.json": {
            "name": "g-1",
            "displayName": "Prompt Guard",
            "llmPromptSecurity": {"defaultSettings": {}, "failOpen": False},
            "action": {"respondImmediately": {"responses": [{"text": "I cannot help with that."}]}},
            "enabled": True,
        },
        "agents/Acme_Root/Acme_Root.json": {
            "name": ROOT_ID,
            "displayName": "Acme Root",
            "instruction": "agents/Acme_Root/instruction.txt",
            "tools": [LOOKUP_ID, CLIENT_ID, "end_session", "kb_search"],
            "toolsets": [
                {"toolset": "Crm_Mcp"},
                {"toolset": f"{PREFIX}/toolsets/{ORDERS_ID}", "toolIds": ["getOrder"]},
            ],
            "childAgents": [f"{PREFIX}/agents/{BILLING_ID}"],
            "modelSettings": {"model": "gemini-2.5-pro"},
            "transferRules": [
                {
                    "childAgent": BILLING_ID,
                    "deterministicTransfer": {
                        "expressionCondition": {"expression": "customer_tier == 'gold'"}
                    },
                }
            ],
            "beforeModelCallbacks": [
                {
                    "pythonCode": "agents/Acme_Root/before_model_callbacks/before_model_callbacks_01/python_code.py",
                    "description": "Trim history",
                },
                {
                    "pythonCode": "agents/Acme_Root/before_model_callbacks/before_model_callbacks_02/python_code.py",
                    "description": "Old experiment",
                    "disabled": True,
                },
            ],
        },
        "agents/Acme_Root/instruction.txt": "Help {{customer_tier}} customers. Use {@TOOL: lookup_customer}.",
        "agents/Acme_Root/before_model_callbacks/before_model_callbacks_01/python_code.py": "def before_model_callback(callback_context, llm_request):\n    return None\n",
        "agents/Acme_Root/before_model_callbacks/before_model_callbacks_02/python_code.py": "def before_model_callback(callback_context, llm_request):\n    raise RuntimeError('off')\n",
        "agents/Billing/Billing.json": {
            "name": BILLING_ID,
            "displayName": "Billing",
            "description": "Billing questions",
            "instruction": "Explain invoices.",
        },
        "tools/lookup_customer/lookup_customer.json": {
            "name": LOOKUP_ID,
            "displayName": "Lookup Customer",
            "executionType": "SYNCHRONOUS",
            "pythonFunction": {
                "name": "lookup_customer",
                "pythonCode": "tools/lookup_customer/python_function/python_code.py",
                "description": "Look the customer up.",
            },
        },
        "tools/lookup_customer/python_function/python_code.py": 'def lookup_customer(email: str) -> dict:\n    """Look the customer up."""\n    return {"tier": "gold"}\n',
        "tools/show_map/show_map.json": {
            "name": CLIENT_ID,
            "displayName": "show_map",
            "clientFunction": {
                "name": "show_map",
                "description": "Show a map",
                "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}}},
            },
        },
        "tools/kb/kb.json": {
            "name": "kb-1",
            "displayName": "kb",
            "dataStoreTool": {
                "name": "kb",
                "dataStoreSource": {
                    "dataStore": {"name": "projects/p/locations/us/collections/c/dataStores/d"}
                },
            },
        },
        "toolsets/Crm_Mcp/Crm_Mcp.json": {
            "name": "Crm_Mcp",
            "displayName": "Crm_Mcp",
            "mcpToolset": {
                "serverAddress": "https://mcp.example.com/crm",
                "apiAuthentication": {
                    "apiKeyConfig": {
                        "keyName": "X-Key",
                        "apiKeySecretVersion": "s",
                        "requestLocation": "HEADER",
                    }
                },
            },
        },
        "tools/kb_search/kb_search.json": {
            "displayName": "kb_search",
            "description": "Search the knowledge base.",
            "mcpTool": {"name": "search", "serverAddress": "https://mcp.example.com/kb"},
        },
        "toolsets/Orders_Api/Orders_Api.json": {
            "name": ORDERS_ID,
            "displayName": "Orders API",
            "openApiToolset": {
                "openApiSchema": "toolsets/Orders_Api/open_api_toolset/open_api_schema.yaml"
            },
        },
        "toolsets/Orders_Api/open_api_toolset/open_api_schema.yaml": (
            "openapi: 3.0.0\ninfo: {title: Orders, version: '1'}\nservers: [{url: 'https://orders.example.com'}]\n"
            "paths:\n  /orders/{id}:\n    get:\n      operationId: getOrder\n      summary: One order\n"
            "      parameters: [{name: id, in: path, required: true, schema: {type: string}}]\n"
            "      responses: {'200': {description: ok}}\n"
            "  /orders:\n    post:\n      operationId: createOrder\n      responses: {'200': {description: ok}}\n"
        ),
    }


def _files(*, yaml_layout: bool) -> dict[str, bytes]:
    out = {}
    for path, value in _app_files().items():
        if isinstance(value, str):
            out[path] = value.encode()
        elif yaml_layout:
            out[path[: -len(".json")] + ".yaml"] = yaml.safe_dump(value, sort_keys=False).encode()
        else:
            out[path] = json.dumps(value, indent=2).encode()
    return out


def _zip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, data in files.items():
            archive.writestr(f"acme/{path}", data)
    return buffer.getvalue()


@pytest.mark.parametrize("yaml_layout", [False, True], ids=["json", "yaml"])
def test_an_unusual_export_round_trips_semantically_equal(user, yaml_layout):
    files = _files(yaml_layout=yaml_layout)
    app, _, _ = exchange.app_import_file(owner=user, data=_zip(files))
    app = AgentApp.objects.get(pk=app.pk)
    root = app.agents.get(is_root=True)
    assert root.display_name == "Acme Root"
    assert list(root.children.values_list("display_name", flat=True)) == ["Billing"]
    attached = set(root.tools.values_list("name", flat=True))
    # the Python tool, the platform tool and the OpenAPI toolset's chosen operation
    assert attached == {"lookup_customer", "end_session", "Orders_Api_getOrder", "kb_search"}
    assert app.tools.get(name="Orders_Api_getOrder").cx == {
        "toolset": "Orders_Api",
        "operation": "getOrder",
    }
    assert root.callbacks.count() == 1  # the disabled one is kept, not run
    data, _ = exchange.app_export_cx(app)
    exported, _ = read_zip(data)
    assert json.dumps(cx_tree(exported), sort_keys=True) == json.dumps(
        cx_tree(files), sort_keys=True
    )


def test_what_is_kept_is_reported_and_toolset_operations_are_callable():
    spec, diagnostics = from_cx_files(_files(yaml_layout=False))
    assert spec is not None
    by_file = {}
    for d in diagnostics:
        by_file.setdefault(d.subject, []).append(d)
    assert {"guardrails/Prompt_Guard/Prompt_Guard.json", "tools/show_map/show_map.json"} <= set(
        by_file
    )
    fields = {(d.subject, d.field) for d in diagnostics}
    assert ("app.json", "modelSettings") in fields and ("app.json", "guardrails") in fields
    assert ("agents/Acme_Root/Acme_Root.json", "transferRules") in fields
    operation = spec.tool("Orders_Api_getOrder")
    assert operation.kind is ToolKind.OPENAPI and list(operation.openapi["paths"]) == [
        "/orders/{id}"
    ]
    assert (
        spec.tool("Orders_Api_createOrder") is None
    )  # the agent lists only getOrder of that toolset


def test_a_version_restore_keeps_what_the_cx_import_kept(user):
    from agents import services
    from agents.services import versions

    files = _files(yaml_layout=False)
    app, _, _ = exchange.app_import_file(owner=user, data=_zip(files))
    version = versions.version_create(app=app, name="as imported", note="", user=user)
    services.app_update(app=app, description="changed", actor=user)
    AgentApp.objects.filter(pk=app.pk).update(cx={})  # as if the carry had been lost
    versions.version_restore(version=version, user=user)
    data, _ = exchange.app_export_cx(AgentApp.objects.get(pk=app.pk))
    assert json.dumps(cx_tree(read_zip(data)[0]), sort_keys=True) == json.dumps(
        cx_tree(files), sort_keys=True
    )


def test_edits_keep_what_statecraft_does_not_model(user):
    from agents import services

    files = _files(yaml_layout=False)
    app, _, _ = exchange.app_import_file(owner=user, data=_zip(files))
    tier = app.variables.get(name="customer_tier")
    services.variable_update(variable=tier, default="gold", actor=user)
    tickets = app.variables.get(name="open_tickets")
    services.variable_update(variable=tickets, name="tickets", actor=user)
    data, _ = exchange.app_export_cx(AgentApp.objects.get(pk=app.pk))
    app_json = json.loads(read_zip(data)[0]["app.json"])
    declarations = app_json["variableDeclarations"]
    assert [d["name"] for d in declarations] == ["customer_tier", "tickets"]  # order kept
    assert declarations[0]["schema"] == {
        "type": "STRING",
        "enum": ["gold", "silver"],  # Statecraft has no enum for a text: kept from CX
        "default": "gold",
    }
    assert declarations[1]["schema"]["items"]["properties"] == {"id": {"type": "STRING"}}


def test_typos_and_dangling_references_in_what_is_kept_are_reported():
    files = _files(yaml_layout=False)
    agent = json.loads(files["agents/Acme_Root/Acme_Root.json"])
    agent["instructon"] = "typo"
    agent["guardrails"] = ["NoSuchGuard"]
    agent["transferRules"][0]["childAgent"] = "ghost"
    files["agents/Acme_Root/Acme_Root.json"] = json.dumps(agent).encode()
    spec, diagnostics = from_cx_files(files)
    assert spec is not None
    messages = {d.field: d.message for d in diagnostics if d.severity.value == "warning"}
    assert "did you mean `instruction`?" in messages["instructon"]
    assert "no guardrail 'NoSuchGuard'" in messages["guardrails[0]"]
    assert "no agent 'ghost'" in messages["transferRules[0].childAgent"]
    app_guardrails = [d for d in diagnostics if d.field == "guardrails[0]"]
    assert len(app_guardrails) == 1  # the app's own guardrail (by resource name) resolves


def test_a_file_named_zip_that_is_not_one_is_refused_as_such(user):
    with pytest.raises(exchange.ImportRefused) as refused:
        exchange.app_import_file(owner=user, data=b"hello", filename="app.zip")
    assert refused.value.diagnostics[0].message.startswith("app.zip is not a ZIP file")


def test_the_designer_shows_what_the_import_kept_for_an_agent(client, user):
    from django.urls import reverse

    app, _, _ = exchange.app_import_file(owner=user, data=_zip(_files(yaml_layout=False)))
    client.force_login(user)
    page = client.get(reverse("app-designer", args=[app.pk])).content.decode()
    kept = page[page.index('id="agent-cx-kept"') :]
    kept = kept[: kept.index("</p>")]
    for what, name in [
        ("tool", CLIENT_ID),  # the client function, referenced by id
        ("toolset", "Crm_Mcp"),
        ("transfer rule", BILLING_ID),
        ("disabled callback", "before_model"),
        ("model", "gemini-2.5-pro"),
    ]:
        assert f"{what} <code>{name}</code>" in kept
    assert "lookup_customer" not in kept and "end_session" not in kept  # shown as tools
