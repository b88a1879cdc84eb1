"""Designer views through the real URL conf: pages vs fragments, forms, permissions, queries."""

from __future__ import annotations

import json
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from agents import services
from agents.models import Agent, Variable

pytestmark = pytest.mark.django_db
HX = {"HX-Request": "true"}


def url(name, *args):
    return reverse(name, args=args)


def test_designer_page_shows_three_panes(signed_in, shop):
    body = signed_in.get(url("app-designer", shop.pk)).content.decode()
    assert (
        'id="variable-list"' in body
        and 'id="instructions"' in body
        and 'id="preview-panel"' in body
    )
    assert "No refunds after 30 days" in body  # the compiled prompt
    assert "<html" in body


def test_designer_fragment_for_htmx(signed_in, shop):
    response = signed_in.get(
        url("app-designer", shop.pk), {"fragment": "variable-list"}, headers=HX
    )
    body = response.content.decode()
    assert body.lstrip().startswith('<section id="variable-list"')
    assert "<html" not in body and "business_rules" in body


def _queries(client, path) -> int:
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(path).status_code == 200
    return len(ctx.captured_queries)


def test_designer_query_count_constant_10_vs_200_variables(signed_in, user):
    app = services.app_create(owner=user, name="Many")
    Variable.objects.bulk_create(
        Variable(app=app, name=f"v{i}", type="text", default="x") for i in range(10)
    )
    few = _queries(signed_in, url("app-designer", app.pk))
    Variable.objects.bulk_create(
        Variable(app=app, name=f"w{i}", type="number", default=i) for i in range(190)
    )
    many = _queries(signed_in, url("app-designer", app.pk))
    assert few == many


def test_preview_fragment_compiles_unsaved_text_with_session_values(signed_in, shop):
    agent = shop.agents.get()
    response = signed_in.post(
        url("agent-preview", shop.pk, agent.pk),
        {
            "instructions": "Rules: {{business_rules}} / {cart_total} / {{customer.first_name}}",
            "value__customer": '{"first_name": "Grace", "tier": "silver"}',
            "channel": "web",
            "modality": "text",
        },
        headers=HX,
    )
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="preview-panel"')
    assert "No refunds after 30 days" in body and "Grace" in body
    data = json.loads(
        re.search(r'<script id="preview-data" type="application/json">(.*?)</script>', body)[1]
    )
    assert data["text"].startswith("Rules: No refunds after 30 days")
    # Spans as data: (gap, length, kind, name index); kind 1 is a dynamic reference.
    spans = [data["spans"][i : i + 4] for i in range(0, len(data["spans"]), 4)]
    kept = [(kind, data["names"][name]) for _, _, kind, name in spans]
    assert (1, "cart_total") in kept and (0, "business_rules") in kept
    # The instructions' reference tokens for the editor: (gap, length, kind).
    assert data["tokens"][:3] == [7, len("{{business_rules}}"), 0]


def test_preview_reports_undeclared_reference(signed_in, shop):
    agent = shop.agents.get()
    body = signed_in.post(
        url("agent-preview", shop.pk, agent.pk), {"instructions": "Hi {{nobody}}"}, headers=HX
    ).content.decode()
    assert "nobody" in body and "diag-" in body
    assert "{{nobody}}" in body  # stays literally


def test_variable_create_returns_list_fragment_and_triggers_refresh(signed_in, shop):
    response = signed_in.post(
        url("variable-new", shop.pk),
        {
            "name": "tags",
            "type": "list",
            "item_type": "text",
            "default": 'a, "b, c"',
            "description": "d",
        },
        headers=HX,
    )
    assert response.status_code == 200
    assert response["HX-Trigger-After-Settle"].startswith('{"app-changed"')
    assert response["HX-Retarget"] == "#variable-list"
    assert Variable.objects.get(app=shop, name="tags").default == ["a", "b, c"]


def test_invalid_variable_form_keeps_what_was_typed(signed_in, shop):
    response = signed_in.post(
        url("variable-new", shop.pk),
        {"name": "1 bad", "type": "number", "default": "abc", "description": "typed text stays"},
        headers=HX,
    )
    body = response.content.decode()
    assert response.status_code == 200
    assert "typed text stays" in body and 'value="1 bad"' in body and 'value="abc"' in body
    assert "not a number" in body
    assert not Variable.objects.filter(app=shop, name="1 bad").exists()


def test_invalid_form_without_htmx_is_a_400_page(signed_in, shop):
    response = signed_in.post(url("variable-new", shop.pk), {"name": "", "type": "text"})
    assert response.status_code == 400
    assert "<html" in response.content.decode()


def test_plain_post_redirects(signed_in, shop):
    response = signed_in.post(
        url("variable-new", shop.pk), {"name": "note", "type": "text", "default": "x"}
    )
    assert response.status_code == 302


def test_type_change_swaps_only_the_default_widget(signed_in, shop):
    response = signed_in.get(
        url("variable-default-field", shop.pk),
        {"name": "keep", "type": "boolean", "description": "kept", "default": ""},
        headers=HX,
    )
    body = response.content.decode()
    assert body.lstrip().startswith('<div class="default-field"')
    assert 'type="radio"' in body and 'name="name"' not in body
    body = signed_in.get(
        url("variable-default-field", shop.pk), {"type": "list", "item_type": "object"}, headers=HX
    ).content.decode()
    assert 'name="schema"' in body and 'name="item_type"' in body


def test_object_default_checked_against_schema(signed_in, shop):
    customer = shop.variables.get(name="customer")
    response = signed_in.post(
        url("variable-edit", shop.pk, customer.pk),
        {
            "name": "customer",
            "type": "object",
            "schema": customer.schema_id,
            "default": '{"first_name": "Ada", "tier": "platinum"}',
            "version": customer.version,
        },
        headers=HX,
    )
    body = response.content.decode()
    assert "platinum" in body and "error-text" in body
    customer.refresh_from_db()
    assert customer.default["tier"] == "gold"


def test_rename_updates_references(signed_in, shop):
    variable = shop.variables.get(name="business_rules")
    signed_in.post(
        url("variable-edit", shop.pk, variable.pk),
        {
            "name": "store_rules",
            "type": "text",
            "default": variable.default,
            "version": variable.version,
            "update_references": "on",
        },
        headers=HX,
    )
    agent = shop.agents.get()
    assert "{{store_rules}}" in agent.instructions and "business_rules" not in agent.instructions


def test_tool_rename_updates_function_and_references(signed_in, shop):
    tool = shop.tools.get(name="AddToCart")
    signed_in.post(
        url("tool-edit", shop.pk, tool.pk),
        {
            "name": "PutInCart",
            "kind": "python",
            "python_code": tool.python_code,
            "version": tool.version,
            "update_references": "on",
        },
        headers=HX,
    )
    tool.refresh_from_db()
    assert "def PutInCart(" in tool.python_code
    assert "{@TOOL: PutInCart}" in shop.agents.get().instructions


def test_instructions_save_and_conflict(signed_in, shop):
    agent = shop.agents.get()
    path = url("agent-instructions", shop.pk, agent.pk)
    base = agent.instructions_hash
    response = signed_in.post(path, {"instructions": "v2", "base_hash": base}, headers=HX)
    body = response.content.decode()
    assert "Saved" in body and Agent.objects.get(pk=agent.pk).instructions_hash in body
    assert '"instructions"' in response["HX-Trigger-After-Settle"]
    # A second editor still holding the old text is refused; the first editor's words stay.
    response = signed_in.post(path, {"instructions": "stale", "base_hash": base}, headers=HX)
    assert "changed elsewhere" in response.content.decode()
    assert Agent.objects.get(pk=agent.pk).instructions == "v2"
    # Attaching a tool does not make the editor's text stale.
    fresh = Agent.objects.get(pk=agent.pk)
    services.agent_update(agent=fresh, tools=[])
    response = signed_in.post(
        path, {"instructions": "v3", "base_hash": fresh.instructions_hash}, headers=HX
    )
    assert "Saved" in response.content.decode()
    assert signed_in.get(path).json() == {
        "instructions": "v3",
        "hash": Agent.objects.get(pk=agent.pk).instructions_hash,
    }


def test_viewer_can_preview_but_not_edit(client, other_user, shop):
    services.app_share(app=shop, user=other_user, role="viewer")
    client.force_login(other_user)
    agent = shop.agents.get()
    assert client.get(url("app-designer", shop.pk)).status_code == 200
    assert (
        client.post(url("agent-preview", shop.pk, agent.pk), {"instructions": "x"}).status_code
        == 200
    )
    assert (
        client.post(url("variable-new", shop.pk), {"name": "x", "type": "text"}).status_code == 403
    )
    assert (
        client.post(url("agent-instructions", shop.pk, agent.pk), {"instructions": "x"}).status_code
        == 403
    )
    variable = shop.variables.first()
    assert client.post(url("variable-delete", shop.pk, variable.pk)).status_code == 403


def test_stranger_gets_404_everywhere(client, other_user, shop):
    client.force_login(other_user)
    agent = shop.agents.get()
    assert (
        client.post(url("agent-preview", shop.pk, agent.pk), {"instructions": "x"}).status_code
        == 404
    )
    assert client.get(url("variable-new", shop.pk)).status_code == 404


def test_schema_form_errors_and_example(signed_in, shop):
    response = signed_in.post(
        url("schema-new", shop.pk), {"name": "Bad", "json_schema": '{"type": "banana"}'}, headers=HX
    )
    body = response.content.decode()
    assert "banana" in body and "error-text" in body
    response = signed_in.post(
        url("schema-new", shop.pk), {"name": "Bad", "json_schema": "{oops"}, headers=HX
    )
    assert "Line 1, column 2" in response.content.decode()
    example = signed_in.post(
        url("schema-example", shop.pk),
        {
            "json_schema": '{"type": "object", "properties": {"n": {"type": "integer", "minimum": 3}}, "required": ["n"]}'
        },
    ).json()["example"]
    assert example["n"] >= 3


def test_schema_in_use_cannot_be_deleted(signed_in, shop):
    schema = shop.schemas.get(name="Customer")
    body = signed_in.post(url("schema-delete", shop.pk, schema.pk), headers=HX).content.decode()
    assert "used by customer" in body


def test_usage_fragment(signed_in, shop):
    variable = shop.variables.get(name="cart_total")
    body = signed_in.get(url("variable-usage", shop.pk, variable.pk), headers=HX).content.decode()
    assert "Shopping Assistant" in body and "tool AddToCart" in body


def test_agent_create_and_edit(signed_in, shop):
    response = signed_in.post(
        url("agent-new", shop.pk), {"display_name": "Billing Helper"}, headers=HX
    )
    assert response.status_code == 204 and "agent=" in response["HX-Redirect"]
    billing = shop.agents.get(display_name="Billing Helper")
    root = shop.agents.get(is_root=True)
    services.agent_update(agent=root, instructions="Transfer to {@AGENT: Billing Helper}.")
    signed_in.post(
        url("agent-edit", shop.pk, billing.pk),
        {"display_name": "Billing", "version": billing.version},
        headers=HX,
    )
    root.refresh_from_db()
    assert "{@AGENT: Billing}" in root.instructions


def test_undeclared_static_reference_is_reported_once_with_a_fix(signed_in, shop):
    agent = shop.agents.get()
    body = signed_in.post(
        url("agent-preview", shop.pk, agent.pk), {"instructions": "Hi {{ghost}}"}, headers=HX
    ).content.decode()
    assert body.count(">SC301<") == 1 and "SC120" not in body
    assert "Create variable ghost" in body and "?name=ghost" in body


@pytest.mark.parametrize(
    "name",
    ["variable-new", "schema-new", "tool-new", "agent-new"],
)
def test_new_forms_are_fragments_for_htmx_and_pages_without(signed_in, shop, name):
    path = url(name, shop.pk)
    fragment = signed_in.get(path, headers=HX).content.decode()
    assert "<html" not in fragment and "data-inline-form" in fragment
    page = signed_in.get(path)
    assert page.status_code == 200
    assert "<html" in page.content.decode() and "data-inline-form" in page.content.decode()


def test_edit_forms_show_current_values(signed_in, shop):
    schema = shop.schemas.get()
    body = signed_in.get(url("schema-edit", shop.pk, schema.pk), headers=HX).content.decode()
    assert "first_name" in body and 'value="Customer"' in body
    tool = shop.tools.get()
    body = signed_in.get(url("tool-edit", shop.pk, tool.pk), headers=HX).content.decode()
    assert "def AddToCart" in body
    agent = shop.agents.get()
    body = signed_in.get(url("agent-edit", shop.pk, agent.pk), headers=HX).content.decode()
    assert 'value="Shopping Assistant"' in body and "checked" in body


def test_schema_edit_saves_and_refreshes_the_list(signed_in, shop):
    schema = shop.schemas.get()
    response = signed_in.post(
        url("schema-edit", shop.pk, schema.pk),
        {
            "name": "Customer",
            "description": "edited",
            "version": schema.version,
            "json_schema": '{"type": "object", "properties": {"first_name": {"type": "string"}, '
            '"tier": {"type": "string"}}, "required": ["first_name", "tier"]}',
        },
        headers=HX,
    )
    assert response["HX-Retarget"] == "#schema-list"
    schema.refresh_from_db()
    assert schema.description == "edited" and "age" not in schema.json_schema["properties"]


def test_tool_new_attaches_to_the_current_agent_and_delete_removes(signed_in, bank):
    agent = bank.agents.get()
    response = signed_in.post(
        url("tool-new", bank.pk),
        {
            "name": "Transfer",
            "kind": "mcp",
            "mcp_url": "https://mcp.example.com/mcp",
            "mcp_headers": '{"X-User": "$context.variables.authenticated"}',
            "agent": agent.pk,
        },
        headers=HX,
    )
    assert response["HX-Retarget"] == "#tool-list"
    tool = bank.tools.get(name="Transfer")
    assert tool.mcp_headers == {"X-User": "$context.variables.authenticated"}
    assert agent.tools.filter(pk=tool.pk).exists()
    bad = signed_in.post(
        url("tool-new", bank.pk), {"name": "Bad", "kind": "python", "mock_state": "[1,"}, headers=HX
    ).content.decode()
    assert "Line 1" in bad and 'name="name" value="Bad"' in bad
    signed_in.post(url("tool-delete", bank.pk, tool.pk), headers=HX)
    assert not bank.tools.filter(name="Transfer").exists()


def test_variable_delete_by_owner(signed_in, shop):
    variable = shop.variables.get(name="languages")
    response = signed_in.post(url("variable-delete", shop.pk, variable.pk), headers=HX)
    assert response["HX-Retarget"] == "#variable-list"
    assert "languages" not in response.content.decode()
    assert not shop.variables.filter(name="languages").exists()


def test_agent_delete_root_is_refused_while_others_exist(signed_in, shop):
    root = shop.agents.get()
    other = services.agent_create(app=shop, display_name="Helper")
    response = signed_in.post(url("agent-delete", shop.pk, root.pk), headers=HX)
    assert response.status_code == 204 and f"agent={root.pk}" in response["HX-Redirect"]
    assert Agent.objects.filter(pk=root.pk).exists()
    signed_in.post(url("agent-delete", shop.pk, other.pk), headers=HX)
    assert not Agent.objects.filter(pk=other.pk).exists()


def test_tool_rename_without_updating_references(signed_in, shop):
    tool = shop.tools.get(name="AddToCart")
    signed_in.post(
        url("tool-edit", shop.pk, tool.pk),
        {
            "name": "Basket",
            "kind": "python",
            "python_code": tool.python_code,
            "version": tool.version,
        },
        headers=HX,
    )
    tool.refresh_from_db()
    assert tool.name == "Basket" and "def Basket(" in tool.python_code
    assert "{@TOOL: AddToCart}" in shop.agents.get().instructions


def test_mcp_call_shows_the_request_it_would_send(signed_in, bank):
    agent = bank.agents.get()
    tool = services.tool_create(
        app=bank,
        name="Transfer",
        kind="mcp",
        mcp_url="https://mcp.example.com/mcp",
        mcp_headers={
            "X-Auth": "$context.variables.authenticated",
            "X-Balance": "$context.variables.current_account_balance",
        },
        mock_enabled=True,
        mock_response={"ok": True},
    )
    services.agent_update(agent=agent, tools=[*agent.tools.all(), tool])
    scenario = agent.scenarios.get()
    services.scenario_save(
        agent=agent,
        scenario=scenario,
        name=scenario.name,
        steps_script='user: Send 5\ntool: Transfer {"amount": 5}',
    )
    body = signed_in.post(url("agent-simulate", bank.pk, agent.pk), headers=HX).content.decode()
    assert "POST https://mcp.example.com/mcp" in body
    assert "X-Auth: false" in body
    assert "X-Balance" not in body  # no value and no default: the header is left out


def test_callbacks_are_added_edited_and_deleted_inline(signed_in, bank):
    agent = bank.agents.get()
    form = signed_in.get(url("callback-new", bank.pk, agent.pk), {"kind": "after_tool"}, headers=HX)
    assert "def after_tool_callback(" in form.content.decode()
    response = signed_in.post(
        url("callback-new", bank.pk, agent.pk),
        {
            "kind": "before_model",
            "code": "def before_model_callback(callback_context, llm_request):\n    context.state['authenticated'] = True\n",
            "agent": agent.pk,
        },
        headers=HX,
    )
    assert response["HX-Retarget"] == "#callback-list"
    assert "Before model" in response.content.decode()
    callback = agent.callbacks.get()
    bad = signed_in.post(
        url("callback-edit", bank.pk, agent.pk, callback.pk),
        {
            "kind": "before_model",
            "code": "def broken(:",
            "version": callback.version,
            "agent": agent.pk,
        },
        headers=HX,
    ).content.decode()
    assert "Line 1" in bad and "def broken(:" in bad
    # The callback runs in the simulation and its write shows as a state update.
    body = signed_in.post(url("agent-simulate", bank.pk, agent.pk), headers=HX).content.decode()
    assert "authenticated: true" in body
    signed_in.post(
        url("callback-delete", bank.pk, agent.pk, callback.pk) + f"?agent={agent.pk}", headers=HX
    )
    assert not agent.callbacks.exists()


def test_agent_form_sets_sub_agents(signed_in, shop):
    root = shop.agents.get()
    helper = services.agent_create(app=shop, display_name="Returns desk")
    body = signed_in.get(url("agent-edit", shop.pk, root.pk), headers=HX).content.decode()
    assert "Returns desk" in body and "Sub-agents" in body
    signed_in.post(
        url("agent-edit", shop.pk, root.pk),
        {"display_name": root.display_name, "children": [helper.pk], "version": root.version},
        headers=HX,
    )
    assert list(root.children.values_list("display_name", flat=True)) == ["Returns desk"]
    cycle = signed_in.post(
        url("agent-edit", shop.pk, helper.pk),
        {"display_name": "Returns desk", "children": [root.pk], "version": helper.version},
        headers=HX,
    ).content.decode()
    assert "cycle" in cycle


def test_instructions_save_as_json_and_a_refusal_carries_their_text(signed_in, shop):
    """The editor saves with Accept: application/json: the new fingerprint on success; on a
    stale save a 409 with the text saved meanwhile, so the editor can merge or compare."""
    agent = shop.agents.get()
    path = url("agent-instructions", shop.pk, agent.pk)
    base = agent.instructions_hash
    accept = {"Accept": "application/json"}
    saved = signed_in.post(path, {"instructions": "theirs", "base_hash": base}, headers=accept)
    assert saved.status_code == 200
    fresh = Agent.objects.get(pk=agent.pk)
    assert saved.json()["hash"] == fresh.instructions_hash
    assert saved.json()["instructions"] == {str(agent.pk): fresh.instructions_hash}
    refused = signed_in.post(path, {"instructions": "mine", "base_hash": base}, headers=accept)
    assert refused.status_code == 409
    assert refused.json()["instructions_text"] == "theirs"
    assert refused.json()["hash"] == fresh.instructions_hash
    assert "reload" not in refused.json()["error"]
    assert Agent.objects.get(pk=agent.pk).instructions == "theirs"


@pytest.mark.parametrize("update_code", [True, False])
def test_variable_rename_offers_to_update_state_accesses_in_code(signed_in, shop, update_code):
    """One atomic change: the variable, its references and (when ticked) the tool and
    callback code that reads or writes `context.state["cart_total"]`."""
    agent = shop.agents.get()
    services.callback_create(
        agent=agent,
        kind="before_model",
        code="def before_model_callback(callback_context, llm_request):\n"
        '    print(callback_context.state.get("cart_total"))\n',
    )
    variable = shop.variables.get(name="cart_total")
    data = {
        "name": "basket_total",
        "type": variable.type,
        "default": "0",
        "description": variable.description,
        "version": variable.version,
        "update_references": "on",
    }
    if update_code:
        data["update_code"] = "on"
    response = signed_in.post(url("variable-edit", shop.pk, variable.pk), data, headers=HX)
    assert response.status_code == 200
    tool_code = shop.tools.get(name="AddToCart").python_code
    callback_code = agent.callbacks.get().code
    assert "{basket_total}" in Agent.objects.get(pk=agent.pk).instructions
    if update_code:
        assert 'context.state["basket_total"] = total' in tool_code
        assert 'context.state.get("basket_total", 0)' in tool_code
        assert '"cart_total": total' in tool_code  # a returned key, not state: unchanged
        assert 'state.get("basket_total")' in callback_code
    else:
        assert 'context.state["cart_total"] = total' in tool_code
        assert 'state.get("cart_total")' in callback_code


def test_a_default_is_checked_against_the_schema_while_typed(signed_in, shop):
    from django.urls import reverse

    schema = shop.schemas.get(name="Customer")
    url = reverse("variable-default-check", args=[shop.pk])
    fields = {"name": "buyer", "type": "object", "schema": schema.pk, "form_uid": "new"}
    bad = signed_in.post(url, {**fields, "default": '{"first_name": "Ada", "tier": "platinum"}'})
    assert bad.status_code == 200
    body = bad.content.decode()
    assert 'id="default-check-new"' in body and "platinum" in body
    good = signed_in.post(url, {**fields, "default": '{"first_name": "Ada", "tier": "gold"}'})
    assert (
        '<span id="default-check-new" class="default-check" role="status" aria-live="polite"></span>'
        in good.content.decode()
    )
