"""The REST API: CRUD through the services, one error shape, access rules, actions, OpenAPI."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from agents import services
from agents.models import Agent, AgentApp, Variable

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(user):
    client = APIClient()
    client.force_login(user)
    return client


@pytest.fixture
def bob(other_user):
    client = APIClient()
    client.force_login(other_user)
    return client


def root(app) -> Agent:
    return app.agents.get(is_root=True)


def codes_and_fields(response) -> set[tuple[str, str]]:
    return {(d["code"], d["field"]) for d in response.json()["diagnostics"]}


# ---------------------------------------------------------------- access


def test_anonymous_gets_401_with_a_token_challenge_never_basic(bank):
    client = APIClient()
    for path in ("/api/apps/", f"/api/apps/{bank.pk}/", f"/api/apps/{bank.pk}/variables/"):
        response = client.get(path)
        assert response.status_code == 401, path
        assert response["WWW-Authenticate"].startswith("Token")


def test_token_auth_works_for_integrators(bank, user):
    from rest_framework.authtoken.models import Token

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token " + Token.objects.create(user=user).key)
    response = client.get("/api/apps/")
    assert response.status_code == 200
    assert {a["name"] for a in response.json()["results"]} == {"Bank demo", "Shopping assistant"}


def test_strangers_get_404_on_everything(bob, bank):
    agent = root(bank)
    scenario = agent.scenarios.get()
    base = f"/api/apps/{bank.pk}/"
    for path in (
        base,
        base + "variables/",
        base + "variables/authenticated/",
        base + "tools/LookupBalance/",
        base + f"agents/{agent.pk}/",
        base + f"agents/{agent.pk}/scenarios/",
        base + "lint",
    ):
        assert bob.get(path).status_code == 404, path
    assert bob.patch(base, {"name": "x"}, format="json").status_code == 404
    assert bob.post(base + f"agents/{agent.pk}/compile", {}, format="json").status_code == 404
    simulate = base + f"agents/{agent.pk}/scenarios/{scenario.pk}/simulate"
    assert bob.post(simulate, {}, format="json").status_code == 404
    assert bob.get("/api/apps/").json()["count"] == 0


def test_viewers_read_compile_and_simulate_but_cannot_write(bob, bank, other_user):
    services.app_share(app=bank, user=other_user, role="viewer")
    agent = root(bank)
    scenario = agent.scenarios.get()
    base = f"/api/apps/{bank.pk}/"
    listed = bob.get("/api/apps/").json()["results"]
    assert [(a["name"], a["role"]) for a in listed] == [("Bank demo", "viewer")]
    assert bob.get(base).json()["role"] == "viewer"
    assert bob.get(base + "variables/authenticated/").status_code == 200
    assert bob.post(base + f"agents/{agent.pk}/compile", {}, format="json").status_code == 200
    simulate = base + f"agents/{agent.pk}/scenarios/{scenario.pk}/simulate"
    assert bob.post(simulate, {"use_mocks": True}, format="json").status_code == 200
    writes = [
        bob.post(base + "variables/", {"name": "x", "type": "text"}, format="json"),
        bob.patch(base + "variables/authenticated/", {"description": "x"}, format="json"),
        bob.delete(base + "variables/authenticated/"),
        bob.post(base + "schemas/", {"name": "S", "json_schema": {}}, format="json"),
        bob.patch(base + "tools/LookupBalance/", {"description": "x"}, format="json"),
        bob.post(base + "agents/", {"display_name": "x"}, format="json"),
        bob.patch(base + f"agents/{agent.pk}/", {"instructions": "x"}, format="json"),
        bob.post(base + f"agents/{agent.pk}/scenarios/", {"name": "x"}, format="json"),
        bob.patch(base, {"name": "x"}, format="json"),
        bob.delete(base),
    ]
    assert [r.status_code for r in writes] == [403] * len(writes)
    assert "editor access" in writes[0].json()["detail"]
    assert Variable.objects.filter(app=bank, name="x").count() == 0


def test_editors_write_but_only_the_owner_deletes_the_app(bob, bank, other_user):
    services.app_share(app=bank, user=other_user, role="editor")
    base = f"/api/apps/{bank.pk}/"
    created = bob.post(base + "variables/", {"name": "x", "type": "text"}, format="json")
    assert created.status_code == 201
    response = bob.delete(base)
    assert response.status_code == 403
    assert "owner" in response.json()["detail"]


def test_ids_no_database_can_hold_are_404_not_500(api):
    huge = "9" * 30
    assert api.get(f"/api/apps/{huge}/").status_code == 404
    assert api.get(f"/api/apps/{huge}/agents/{huge}/scenarios/").status_code == 404


# ---------------------------------------------------------------- apps


def test_app_list_search_and_create(api, shop, bank):
    assert api.get("/api/apps/", {"q": "bank"}).json()["results"][0]["name"] == "Bank demo"
    assert api.get("/api/apps/", {"q": "nothing-like-it"}).json()["count"] == 0
    response = api.post("/api/apps/", {"name": "Travel", "description": "Trips"}, format="json")
    assert response.status_code == 201
    body = response.json()
    assert response["Location"] == f"/api/apps/{body['id']}/"
    assert (body["name"], body["role"], body["version"]) == ("Travel", "owner", 1)
    assert [a["display_name"] for a in body["agents"]] == ["root_agent"]
    assert body["agents"][0]["is_root"] is True
    listed = {a["name"]: a for a in api.get("/api/apps/").json()["results"]}
    assert listed["Shopping assistant"]["variable_count"] == 4
    assert listed["Travel"]["agent_count"] == 1


def test_app_duplicate_name_is_a_400_naming_the_field(api, bank):
    response = api.post("/api/apps/", {"name": "Bank demo"}, format="json")
    assert response.status_code == 400
    assert codes_and_fields(response) == {("SC004", "name")}
    assert "already have an app" in response.json()["detail"]


def test_app_detail_nests_everything(api, shop):
    body = api.get(f"/api/apps/{shop.pk}/").json()
    assert [v["name"] for v in body["variables"]] == [
        "business_rules",
        "cart_total",
        "customer",
        "languages",
    ]
    assert [s["name"] for s in body["schemas"]] == ["Customer"]
    assert [t["name"] for t in body["tools"]] == ["AddToCart"]
    assert body["agents"][0]["display_name"] == "Shopping Assistant"


def test_app_patch_with_version_and_stale_version_is_409(api, bank):
    url = f"/api/apps/{bank.pk}/"
    version = api.get(url).json()["version"]
    response = api.patch(url, {"description": "New", "version": version}, format="json")
    assert response.status_code == 200
    assert (response.json()["description"], response.json()["version"]) == ("New", version + 1)
    stale = api.patch(url, {"name": "Other", "version": version}, format="json")
    assert stale.status_code == 409
    assert codes_and_fields(stale) == {("SC002", "__all__")}
    assert "changed by someone else" in stale.json()["detail"]
    bank.refresh_from_db()
    assert bank.name == "Bank demo"


def test_app_delete(api, bank):
    assert api.delete(f"/api/apps/{bank.pk}/").status_code == 204
    assert api.get(f"/api/apps/{bank.pk}/").status_code == 404


# ---------------------------------------------------------------- variables


def test_variable_crud_with_typed_defaults(api, shop):
    base = f"/api/apps/{shop.pk}/variables/"
    listed = {v["name"]: v for v in api.get(base).json()["results"]}
    assert listed["languages"]["default"] == ["French", "German"]
    assert listed["languages"]["item_type"] == "text"
    assert listed["customer"]["schema"] == "Customer"
    assert listed["cart_total"]["default"] == 0
    assert listed["cart_total"]["item_type"] is None

    created = api.post(
        base,
        {"name": "max_items", "type": "number", "default": 3, "description": "Limit"},
        format="json",
    )
    assert created.status_code == 201
    assert created["Location"] == f"{base}max_items/"
    assert created.json()["default"] == 3
    assert created.json()["type_label"] == "Number"

    vip = api.post(
        base,
        {
            "name": "vips",
            "type": "list",
            "item_type": "object",
            "schema": "Customer",
            "default": [{"first_name": "Ada", "tier": "gold"}],
        },
        format="json",
    )
    assert vip.status_code == 201, vip.json()
    assert vip.json()["type_label"] == "List of Customer"

    url = f"{base}max_items/"
    assert api.get(url).json()["description"] == "Limit"
    patched = api.patch(url, {"default": 5, "version": 1}, format="json")
    assert patched.status_code == 200
    assert (patched.json()["default"], patched.json()["version"]) == (5, 2)
    cleared = api.patch(url, {"default": None}, format="json")
    assert cleared.json()["default"] is None
    assert api.delete(url).status_code == 204
    assert api.get(url).status_code == 404


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"name": "1bad", "type": "text"}, ("SC003", "name")),
        ({"name": "has space", "type": "text"}, ("SC003", "name")),
        ({"name": "business_rules", "type": "text"}, ("SC004", "name")),
        ({"name": "n", "type": "number", "default": "three"}, None),
        ({"name": "n", "type": "object", "schema": "Nope"}, ("SC001", "schema")),
        ({"name": "n", "type": "object"}, ("SC006", "schema")),
        ({"name": "n", "type": "list"}, ("SC005", "item_type")),
        ({"name": "n", "type": "colour"}, ("SC001", "type")),
        ({"type": "text"}, ("SC001", "name")),
    ],
)
def test_variable_validation_errors_name_the_field(api, shop, body, expected):
    response = api.post(f"/api/apps/{shop.pk}/variables/", body, format="json")
    assert response.status_code == 400
    diagnostics = response.json()["diagnostics"]
    assert diagnostics and all(d["severity"] == "error" and d["message"] for d in diagnostics)
    if expected is None:  # a core type diagnostic: its own code, about the default
        assert {d["field"] for d in diagnostics} == {"default"}
    else:
        assert expected in codes_and_fields(response)


def test_variable_rename_updates_references_and_stale_version_is_409(api, bank):
    url = f"/api/apps/{bank.pk}/variables/current_account_balance/"
    stale = api.patch(url, {"description": "x", "version": 99}, format="json")
    assert stale.status_code == 409
    response = api.patch(
        url, {"name": "balance", "update_references": True, "version": 1}, format="json"
    )
    assert response.status_code == 200, response.json()
    assert response.json()["name"] == "balance"
    instructions = root(bank).instructions
    assert "{balance}" in instructions and "current_account_balance" not in instructions
    assert api.get(url).status_code == 404


def test_malformed_json_is_a_400_in_the_same_shape(api, shop):
    response = api.generic(
        "POST",
        f"/api/apps/{shop.pk}/variables/",
        '{"name": ',
        content_type="application/json",
    )
    assert response.status_code == 400
    assert response.json()["diagnostics"][0]["field"] == "__all__"
    nan = api.generic(
        "PATCH",
        f"/api/apps/{shop.pk}/variables/cart_total/",
        '{"default": NaN}',
        content_type="application/json",
    )
    assert nan.status_code == 400
    not_an_object = api.post(f"/api/apps/{shop.pk}/variables/", [1, 2], format="json")
    assert not_an_object.status_code == 400
    assert not_an_object.json()["diagnostics"][0]["field"] == "__all__"


# ---------------------------------------------------------------- schemas


def test_schema_crud_and_validation(api, shop):
    base = f"/api/apps/{shop.pk}/schemas/"
    address = {"type": "object", "properties": {"city": {"type": "string"}}}
    created = api.post(base, {"name": "Address", "json_schema": address}, format="json")
    assert created.status_code == 201
    assert created.json()["json_schema"] == address
    bad = api.post(base, {"name": "Broken", "json_schema": {"type": "nope"}}, format="json")
    assert bad.status_code == 400
    assert {d["field"] for d in bad.json()["diagnostics"]} == {"json_schema"}
    # Tightening Customer so the default of `customer` no longer fits is refused.
    tight = {"type": "object", "required": ["age"]}
    refused = api.patch(f"{base}Customer/", {"json_schema": tight}, format="json")
    assert refused.status_code == 400
    assert "customer" in refused.json()["detail"]
    in_use = api.delete(f"{base}Customer/")
    assert in_use.status_code == 400
    assert "used by customer" in in_use.json()["detail"]
    patched = api.patch(f"{base}Address/", {"description": "Postal", "version": 1}, format="json")
    assert patched.json()["description"] == "Postal"
    assert api.delete(f"{base}Address/").status_code == 204
    assert [s["name"] for s in api.get(base).json()["results"]] == ["Customer"]


# ---------------------------------------------------------------- tools


def test_tool_crud_rename_updates_references(api, bank):
    base = f"/api/apps/{bank.pk}/tools/"
    created = api.post(
        base,
        {
            "name": "Ping",
            "kind": "mcp",
            "mcp_url": "https://mcp.example.com/",
            "mcp_headers": {"X-Auth": "$context.variables.authenticated"},
            "mock_enabled": True,
            "mock_response": {"ok": True},
        },
        format="json",
    )
    assert created.status_code == 201, created.json()
    assert created.json()["mcp_headers"] == {"X-Auth": "$context.variables.authenticated"}
    bad = api.post(base, {"name": "Bad", "python_code": "def Bad(:\n"}, format="json")
    assert bad.status_code == 400
    assert codes_and_fields(bad) == {("SC007", "python_code")}
    renamed = api.patch(f"{base}LookupBalance/", {"name": "GetBalance"}, format="json")
    assert renamed.status_code == 200
    assert "def GetBalance(" in renamed.json()["python_code"]
    assert "{@TOOL: GetBalance}" in root(bank).instructions
    assert api.delete(f"{base}Ping/").status_code == 204
    assert [t["name"] for t in api.get(base).json()["results"]] == ["GetBalance"]


# ---------------------------------------------------------------- agents


def test_agent_crud_with_tools_and_children_by_name(api, bank):
    base = f"/api/apps/{bank.pk}/agents/"
    created = api.post(
        base,
        {
            "display_name": "Fraud desk",
            "instructions": "Check {@TOOL: LookupBalance}.",
            "tools": ["LookupBalance"],
        },
        format="json",
    )
    assert created.status_code == 201, created.json()
    fraud = created.json()
    assert (fraud["tools"], fraud["is_root"]) == (["LookupBalance"], False)
    url = f"{base}{root(bank).pk}/"
    version = api.get(url).json()["version"]
    linked = api.patch(url, {"children": ["fraud DESK"], "version": version}, format="json")
    assert linked.status_code == 200, linked.json()
    assert linked.json()["children"] == ["Fraud desk"]
    assert linked.json()["version"] == version + 1
    stale = api.patch(url, {"instructions": "lost", "version": version}, format="json")
    assert stale.status_code == 409
    unknown = api.post(base, {"display_name": "X", "tools": ["Nope"]}, format="json")
    assert unknown.status_code == 400
    assert codes_and_fields(unknown) == {("SC001", "tools")}
    assert "Nope" in unknown.json()["detail"]
    made_root = api.patch(f"{base}{fraud['id']}/", {"is_root": True}, format="json")
    assert made_root.json()["is_root"] is True
    listed = api.get(base).json()["results"]
    assert [(a["display_name"], a["is_root"]) for a in listed] == [
        ("Fraud desk", True),
        ("banking_agent", False),
    ]
    assert api.delete(url).status_code == 204


def test_deleting_the_root_agent_while_others_exist_is_refused(api, bank):
    api.post(f"/api/apps/{bank.pk}/agents/", {"display_name": "Other"}, format="json")
    response = api.delete(f"/api/apps/{bank.pk}/agents/{root(bank).pk}/")
    assert response.status_code == 400
    assert "root" in response.json()["detail"]


# ---------------------------------------------------------------- scenarios


def test_scenario_crud_with_a_step_script(api, bank):
    base = f"/api/apps/{bank.pk}/agents/{root(bank).pk}/scenarios/"
    script = 'user: Hi\ntool: LookupBalance {"account_id": "savings"}\nagent: Done.'
    created = api.post(
        base,
        {"name": "Savings", "steps_script": script, "session_values": {"authenticated": True}},
        format="json",
    )
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["steps_script"] == script
    assert [s["kind"] for s in body["steps"]] == ["user", "tool", "agent"]
    assert body["steps"][1]["args"] == {"account_id": "savings"}
    url = f"{base}{body['id']}/"
    patched = api.patch(url, {"token_budget": 50, "version": 1}, format="json")
    assert patched.status_code == 200
    assert (patched.json()["token_budget"], patched.json()["steps_script"]) == (50, script)
    assert api.patch(url, {"name": "x", "version": 1}, format="json").status_code == 409
    bad = api.patch(url, {"steps_script": "hello there"}, format="json")
    assert bad.status_code == 400
    assert bad.json()["diagnostics"][0]["field"] == "steps_script"
    undeclared = api.patch(url, {"session_values": {"nope": 1}}, format="json")
    assert codes_and_fields(undeclared) == {("SC010", "session_values")}
    assert len(api.get(base).json()["results"]) == 2
    assert api.delete(url).status_code == 204
    assert api.get(url).status_code == 404


# ---------------------------------------------------------------- actions


def test_compile_with_values_channel_and_unsaved_instructions(api, shop):
    url = f"/api/apps/{shop.pk}/agents/{root(shop).pk}/compile"
    saved = api.post(url, {}, format="json").json()
    assert "Greet Ada by name" in saved["text"]
    assert "You may use short lists" in saved["text"]
    response = api.post(
        url,
        {"values": {"customer": {"first_name": "Zoé", "tier": "silver"}}, "channel": "telephony"},
        format="json",
    )
    assert response.status_code == 200
    body = response.json()
    assert "Greet Zoé by name and mention their loyalty tier (silver)" in body["text"]
    assert "Keep answers short" in body["text"]
    static = [s for s in body["spans"] if s["kind"] == "static"]
    assert {s["name"] for s in static} >= {"customer.first_name", "business_rules"}
    first = next(s for s in static if s["name"] == "customer.first_name")
    assert body["text"][first["start"] : first["end"]] == "Zoé"

    unsaved = api.post(url, {"instructions": "Hi {{nobody}} {{cart_total}}"}, format="json")
    body = unsaved.json()
    assert body["text"] == "Hi {{nobody}} 0"
    assert "SC301" in {d["code"] for d in body["diagnostics"]}
    assert "SC120" not in {d["code"] for d in body["diagnostics"]}


def test_compile_refuses_undeclared_and_mistyped_values(api, shop):
    url = f"/api/apps/{shop.pk}/agents/{root(shop).pk}/compile"
    response = api.post(url, {"values": {"ghost": 1, "cart_total": "lots"}}, format="json")
    assert response.status_code == 400
    fields = {d["field"] for d in response.json()["diagnostics"]}
    assert fields == {"values.ghost", "values.cart_total"}
    assert api.post(url, {"channel": "fax"}, format="json").status_code == 400


def test_lint_lists_the_apps_diagnostics(api, bank):
    services.variable_create(app=bank, name="NotSnake", type="text")
    response = api.get(f"/api/apps/{bank.pk}/lint")
    assert response.status_code == 200
    diagnostics = response.json()["diagnostics"]
    assert any(d["subject"] == "NotSnake" and d["severity"] == "warning" for d in diagnostics)
    assert set(diagnostics[0]) == {
        "code",
        "severity",
        "message",
        "line",
        "column",
        "start",
        "end",
        "field",
        "subject",
        "reference",
    }


@pytest.mark.parametrize("use_mocks", [False, True])
def test_simulate_the_bank_scenario(api, bank, use_mocks):
    # The mock and the code agree on 1250; spoil the one that must not run.
    tool = bank.tools.get()
    if use_mocks:
        code = tool.python_code.replace("1250", "777")
        services.tool_update(tool=tool, python_code=code, mock_enabled=True)
    else:
        services.tool_update(
            tool=tool, mock_enabled=True, mock_state={"current_account_balance": 9}
        )
    agent = root(bank)
    scenario = agent.scenarios.get()
    url = f"/api/apps/{bank.pk}/agents/{agent.pk}/scenarios/{scenario.pk}/simulate"
    response = api.post(url, {"use_mocks": use_mocks}, format="json")
    assert response.status_code == 200, response.content[:3000]
    body = response.json()
    assert body["use_mocks"] is use_mocks
    updates = [e for e in body["events"] if e["kind"] == "state_update"]
    assert [e["text"] for e in updates] == [
        "<state_update>current_account_balance: 1250</state_update>"
    ]
    assert updates[0]["value"] == 1250
    assert [t["index"] for t in body["turns"]] == [0, 1]
    first = body["turns"][0]
    assert first["state_after"]["current_account_balance"] == 1250
    assert first["changed"] == ["current_account_balance"]
    assert first["builtins"]["$context.turn_index"] == 0
    assert body["turns"][1]["builtins"]["$context.turn_index"] == 1
    assert body["final_state"] == {"current_account_balance": 1250, "authenticated": False}
    assert not [d for d in body["diagnostics"] if d["severity"] == "error"]
    # Each agent or tool step is a model call, with the instructions compiled for it.
    calls = body["model_calls"]
    assert [c["index"] for c in calls] == list(range(len(calls))) and calls
    assert calls[0]["changed"] == [] and calls[0]["replaced_by"] == ""
    assert all(c["instructions"] for c in calls)
    answers = [e for e in body["events"] if e["model_call"] is not None]
    assert {e["kind"] for e in answers} <= {"agent", "tool_call"}
    assert all(isinstance(e["instructions_changed"], list) for e in body["events"])


def test_simulate_shows_the_http_request_of_an_mcp_tool(api, bank):
    services.tool_create(
        app=bank,
        name="Audit",
        kind="mcp",
        mcp_url="https://mcp.example.com/mcp",
        mcp_headers={"X-Session": "$context.session_id"},
        mock_enabled=True,
        mock_response={"ok": True},
    )
    agent = root(bank)
    services.agent_update(agent=agent, tools=list(bank.tools.all()))
    scenario = services.scenario_save(
        agent=agent, name="Audit", steps_script="user: audit\ntool: Audit {}"
    )
    url = f"/api/apps/{bank.pk}/agents/{agent.pk}/scenarios/{scenario.pk}/simulate"
    body = api.post(url, format="json").json()
    (request,) = body["turns"][0]["http"]
    assert (request["tool"], request["method"], request["url"]) == (
        "Audit",
        "POST",
        "https://mcp.example.com/mcp",
    )
    assert {"name": "X-Session", "value": "session-1"} in request["headers"]


# ---------------------------------------------------------------- queries


def _queries(api, path) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert api.get(path).status_code == 200
    return len(captured)


def test_list_endpoints_issue_a_fixed_number_of_queries(api, shop):
    agent = root(shop)
    paths = [
        "/api/apps/",
        f"/api/apps/{shop.pk}/",
        f"/api/apps/{shop.pk}/variables/",
        f"/api/apps/{shop.pk}/agents/",
        f"/api/apps/{shop.pk}/agents/{agent.pk}/scenarios/",
        f"/api/apps/{shop.pk}/lint",
    ]
    before = [_queries(api, p) for p in paths]
    customer = shop.schemas.get()
    for i in range(27):
        services.variable_create(
            app=shop, name=f"extra_{i}", type="object", schema=customer, description="x"
        )
    for i in range(5):
        services.app_create(owner=shop.owner, name=f"App {i}")
        tool = services.tool_create(app=shop, name=f"Tool{i}")
        other = services.agent_create(app=shop, display_name=f"Helper {i}", tools=[tool])
        services.agent_update(agent=other, children=[agent])
        services.scenario_save(agent=agent, name=f"S{i}", steps_script="user: a\nagent: b")
    assert shop.variables.count() == 31
    assert [_queries(api, p) for p in paths] == before


# ---------------------------------------------------------------- OpenAPI


def test_openapi_schema_documents_the_api(api):
    response = api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    paths = schema["paths"]
    assert "/api/apps/{app_id}/variables/{name}/" in paths
    compile_op = paths["/api/apps/{app_id}/agents/{agent_id}/compile"]["post"]
    assert compile_op["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/CompileIn"
    }
    assert "409" in paths["/api/apps/{app_id}/variables/{name}/"]["patch"]["responses"]
    assert "diagnostics" in schema["components"]["schemas"]["ErrorOut"]["properties"]


def test_docs_page_uses_no_cdn(api):
    response = api.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "swagger-ui" in html
    for host in ("https://cdn", "unpkg", "jsdelivr", "cdnjs"):
        assert host not in html


# ---------------------------------------------------------------- robustness

API_FIELDS = [
    "name",
    "type",
    "item_type",
    "schema",
    "default",
    "description",
    "version",
    "update_references",
    "json_schema",
    "kind",
    "python_code",
    "openapi_spec",
    "mcp_url",
    "mcp_headers",
    "mock_enabled",
    "mock_state",
    "mock_response",
    "display_name",
    "instructions",
    "is_root",
    "tools",
    "children",
    "steps_script",
    "session_values",
    "channel",
    "modality",
    "token_budget",
    "values",
    "use_mocks",
]
json_junk = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
    | st.sampled_from(["list", "object", "number", "Customer", "AddToCart", "user: hi", "{{x}}"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=6,
)


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(body=st.dictionaries(st.sampled_from(API_FIELDS), json_junk, max_size=8))
def test_junk_json_never_crashes_an_endpoint(api, shop, body):
    agent = root(shop)
    scenario = agent.scenarios.first()
    base = f"/api/apps/{shop.pk}/"
    posts = ["/api/apps/", base + "variables/", base + "schemas/", base + "tools/"]
    posts += [base + "agents/", base + f"agents/{agent.pk}/scenarios/"]
    posts += [base + f"agents/{agent.pk}/compile"]
    patches = [base, base + "variables/cart_total/", base + "schemas/Customer/"]
    patches += [base + "tools/AddToCart/", base + f"agents/{agent.pk}/"]
    patches += [base + f"agents/{agent.pk}/scenarios/{scenario.pk}/"]
    # Junk is either a valid change (201 created, 200 for a compile) or refused with 400 and
    # its diagnostics: never a 5xx, and never another 4xx (the paths and rights are right).
    for path in posts:
        response = api.post(path, body, format="json")
        assert response.status_code in {200, 201, 400}, (path, body, response.status_code)
    for path in patches:
        response = api.patch(path, body, format="json")
        assert response.status_code in {200, 400}, (path, body, response.status_code)
        if response.status_code == 400:
            assert response.json()["diagnostics"], (path, body)


def _count(client, method, path, data=None) -> int:
    """The queries of one request after a first one (which warms the cached spec)."""
    send = getattr(client, method)
    extra = {"format": "json"} if hasattr(client, "credentials") else {}
    assert send(path, data, **extra).status_code == 200
    with CaptureQueriesContext(connection) as captured:
        assert send(path, data, **extra).status_code == 200
    return len(_reads(captured))


def _reads(captured) -> list[dict]:
    """The queries that read the app: not the rate-limit counts (one upsert per scope the
    request is counted in, server/ratelimit.py, when no Redis is configured)."""
    return [q for q in captured.captured_queries if "agents_ratelimitcount" not in q["sql"]]


def test_compile_reads_what_the_designer_preview_reads(api, signed_in, shop):
    """Compile is served from the spec cached by revision, as the live preview: the agent
    and its app in one query, not the whole app (12 queries before)."""
    agent = root(shop)
    preview = _count(signed_in, "get", f"/apps/{shop.pk}/agents/{agent.pk}/preview")
    compiled = _count(api, "post", f"/api/apps/{shop.pk}/agents/{agent.pk}/compile", {})
    assert compiled == preview == 3  # the session, the user, the agent with its app


def test_lint_reads_the_app_row_and_the_cached_spec(api, shop):
    # the spec is cached for this revision by the first request
    assert (
        _count(api, "get", f"/api/apps/{shop.pk}/lint") == 3
    )  # the session, the user, the app's row


def test_simulate_reads_the_agent_the_scenario_and_the_cached_spec(api, bank):
    agent = bank.agents.get(is_root=True)
    scenario = agent.scenarios.get()
    path = f"/api/apps/{bank.pk}/agents/{agent.pk}/scenarios/{scenario.pk}/simulate"
    # the session, the user, the agent with its app, the scenario, its steps
    assert _count(api, "post", path, {"use_mocks": True}) == 5


def test_compile_lint_and_simulate_see_a_saved_change_at_once(api, bank):
    """The cache is keyed by revision: a write through a service is seen by the next call."""
    agent = bank.agents.get(is_root=True)
    scenario = agent.scenarios.get()
    base = f"/api/apps/{bank.pk}/"
    compile_path = base + f"agents/{agent.pk}/compile"
    simulate_path = base + f"agents/{agent.pk}/scenarios/{scenario.pk}/simulate"
    api.post(compile_path, {}, format="json")
    api.get(base + "lint")
    api.post(simulate_path, {"use_mocks": True}, format="json")
    services.variable_create(app=bank, name="fresh_marker", type="text", default="FRESH-1")
    services.agent_save_instructions(
        agent=agent, instructions=agent.instructions + " {fresh_marker} {nowhere_marker}"
    )
    lint = api.get(base + "lint").json()["diagnostics"]
    assert any("nowhere_marker" in d["message"] for d in lint)
    compiled = api.post(compile_path, {}, format="json").json()["diagnostics"]
    assert any("nowhere_marker" in d["message"] for d in compiled)
    undeclared = {d["message"].split("`")[1] for d in compiled if d["code"] == "SC302"}
    assert undeclared == {"{nowhere_marker}"}  # `fresh_marker` is declared since
    simulated = api.post(simulate_path, {"use_mocks": True}, format="json").json()
    assert simulated["final_state"]["fresh_marker"] == "FRESH-1"  # the new variable's default


# ---------------------------------------------------------------- large imports as jobs


def _native_upload(app, name: str = "shop.json"):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from agents.core.formats import dumps_native
    from agents.services import exchange

    return SimpleUploadedFile(name, dumps_native(exchange.app_export_native(app)).encode())


def test_a_large_import_is_a_202_job_whose_result_names_the_new_app(
    api, user, shop, settings, run_jobs
):
    settings.IMPORT_JOB_MIN_BYTES = 0
    response = api.post("/api/apps/import", {"file": _native_upload(shop), "name": "Copy"})
    assert response.status_code == 202
    assert response["Location"] == response.json()["url"]
    run_jobs()
    job = api.get(response.json()["url"]).json()
    imported = AgentApp.objects.get(owner=user, name="Copy")
    assert job["status"] == "succeeded"
    assert job["result"]["app"] == {
        "id": imported.pk,
        "name": "Copy",
        "url": f"/api/apps/{imported.pk}/",
    }
    assert job["result"]["report"]["file"] == "shop.json"
    assert imported.audit_events.get(action="app.import").actor == user


def test_a_refused_large_import_job_fails_with_every_problem(api, shop, settings, run_jobs):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from agents.core.formats import dumps_native
    from agents.services import exchange

    settings.IMPORT_JOB_MIN_BYTES = 0
    doc = exchange.app_export_native(shop)
    languages = next(v for v in doc["app"]["variables"] if v["name"] == "languages")
    languages["default"] = ["French", 42]
    doc["app"]["variables"].append({**languages, "name": "languages_too"})
    upload = SimpleUploadedFile("shop.json", dumps_native(doc).encode())
    before = AgentApp.objects.count()
    url = api.post("/api/apps/import", {"file": upload}).json()["url"]
    run_jobs()
    job = api.get(url).json()
    assert job["status"] == "failed" and AgentApp.objects.count() == before
    fields = {d["field"] for d in job["result"]["diagnostics"]}
    assert fields == {"variables.languages.default", "variables.languages_too.default"}
    assert job["result"]["report"]["counts"]["error"] == 2


def test_a_small_api_import_is_still_a_201(api, shop, settings):
    from agents.models import Job

    settings.IMPORT_JOB_MIN_BYTES = 10**9
    response = api.post("/api/apps/import", {"file": _native_upload(shop)})
    assert response.status_code == 201 and response.json()["app"]["url"] == response["Location"]
    assert not Job.objects.filter(kind="import_app").exists()


def test_a_large_import_over_the_size_limit_is_refused_before_queuing(api, settings):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from agents.api.views import MAX_IMPORT_BYTES
    from agents.models import Job

    settings.IMPORT_JOB_MIN_BYTES = 0
    upload = SimpleUploadedFile("big.json", b" " * (MAX_IMPORT_BYTES + 1))
    response = api.post("/api/apps/import", {"file": upload})
    assert response.status_code == 400 and not Job.objects.exists()
