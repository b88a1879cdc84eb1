"""lint_app / lint_agent: one test per diagnostic (code, severity, position or field)."""

from __future__ import annotations

import re
from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from agents.core.diagnostics import Diagnostic, Severity
from agents.core.lint import CODES, lint_agent, lint_app
from agents.core.spec import (
    AgentSpec,
    AppSpec,
    CallbackKind,
    CallbackSpec,
    SchemaSpec,
    ToolKind,
    ToolMock,
    ToolSpec,
    VariableSpec,
    VariableType,
)

BANK_INSTRUCTIONS = (
    "If the user asks for their balance, call the {@TOOL: LookupBalance}.\n"
    "The tool will update the {current_account_balance} variable.\n"
    "Always share the {current_account_balance} with the user."
)
LOOKUP_BALANCE = (
    "def LookupBalance() -> dict:\n"
    '    """Look up the balance of the current account."""\n'
    '    context.state["current_account_balance"] = 1250\n'
    '    return {"balance": 1250}\n'
)
ADDRESS = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
    "additionalProperties": False,
}
CUSTOMER = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "orders": {"type": "array", "items": {"$ref": "#/$defs/order"}},
        "extra": {"type": "object"},
    },
    "additionalProperties": False,
    "$defs": {
        "address": ADDRESS,
        "order": {"type": "object", "properties": {"total": {"type": "number"}}},
    },
}


def variable(name: str, type: VariableType = VariableType.TEXT, **kwargs) -> VariableSpec:
    kwargs.setdefault("description", f"The {name}.")
    return VariableSpec(name, type, **kwargs)


def python_tool(name: str, body: str = "return {}", **kwargs) -> ToolSpec:
    code = f'def {name}():\n    """Does {name}."""\n    ' + body.replace("\n", "\n    ") + "\n"
    return ToolSpec(name, ToolKind.PYTHON, python_code=code, **kwargs)


def bank_app(instructions: str = BANK_INSTRUCTIONS, **changes) -> AppSpec:
    app = AppSpec(
        name="Bank",
        variables=(
            variable("current_account_balance", VariableType.NUMBER),
            variable("customer", VariableType.OBJECT, schema="Customer"),
        ),
        schemas=(SchemaSpec("Customer", CUSTOMER),),
        tools=(ToolSpec("LookupBalance", ToolKind.PYTHON, python_code=LOOKUP_BALANCE),),
        agents=(
            AgentSpec(
                "Bank Agent",
                instructions=instructions + "\nThe customer is {customer}.",
                description="Answers questions about accounts.",
                tools=("LookupBalance",),
                is_root=True,
            ),
        ),
    )
    return replace(app, **changes)


def agent_lint(instructions: str, app: AppSpec | None = None) -> tuple[Diagnostic, ...]:
    app = app or bank_app()
    return lint_agent(app, app.agents[0].name, instructions=instructions)


def with_code(diagnostics, code: str) -> list[Diagnostic]:
    return [d for d in diagnostics if d.code == code]


def one(diagnostics, code: str) -> Diagnostic:
    found = with_code(diagnostics, code)
    assert len(found) == 1, (code, diagnostics)
    return found[0]


def problems(diagnostics) -> list[Diagnostic]:
    return [d for d in diagnostics if d.severity is not Severity.INFO]


# ---------------------------------------------------------------------------
# The seeds' banking example


def test_bank_example_is_clean() -> None:
    assert problems(lint_app(bank_app())) == []


def test_bank_example_static_reference_to_updated_variable_warns() -> None:
    text = BANK_INSTRUCTIONS.replace(
        "share the {current_account_balance}", "share the {{current_account_balance}}"
    )
    diagnostic = one(agent_lint(text), "SC310")
    assert diagnostic.severity is Severity.WARNING
    assert (diagnostic.line, diagnostic.column) == (3, 18)
    assert text[diagnostic.start : diagnostic.end] == "{{current_account_balance}}"
    assert diagnostic.field == "agents.Bank Agent.instructions"
    assert diagnostic.subject == "Bank Agent"
    assert "LookupBalance" in diagnostic.message
    assert "{current_account_balance}" in diagnostic.message
    # The value is compiled again before each model call: the model sees the update, but
    # the instructions change mid-session.
    assert "before each model call" in diagnostic.message
    assert "defeats prompt caching" in diagnostic.message
    assert "never sees" not in diagnostic.message
    assert problems(agent_lint(text)) == [diagnostic]


def test_lint_agent_lints_the_unsaved_text_not_the_saved_one() -> None:
    app = bank_app()
    assert problems(lint_agent(app, "Bank Agent")) == []
    assert with_code(lint_agent(app, "Bank Agent", instructions="{nope}"), "SC302")


# ---------------------------------------------------------------------------
# Instructions


def test_static_reference_to_undeclared_variable() -> None:
    text = "Hi\nDear {{ current_acount_balance.x }}!"
    diagnostic = one(agent_lint(text), "SC301")
    assert diagnostic.severity is Severity.ERROR
    assert (diagnostic.line, diagnostic.column, diagnostic.start) == (2, 6, 8)
    assert diagnostic.end == len(text) - 1
    assert "Did you mean `current_account_balance`?" in diagnostic.message


def test_dynamic_reference_to_undeclared_variable_says_it_becomes_empty() -> None:
    diagnostic = one(agent_lint("Hello {custmer}"), "SC302")
    assert diagnostic.severity is Severity.ERROR
    assert (diagnostic.line, diagnostic.column, diagnostic.start, diagnostic.end) == (1, 7, 6, 15)
    assert "empty" in diagnostic.message
    assert "Did you mean `customer`?" in diagnostic.message


def test_each_occurrence_is_reported_at_its_position() -> None:
    found = with_code(agent_lint("{a}\n{a} {a}"), "SC302")
    assert [(d.line, d.column) for d in found] == [(1, 1), (2, 1), (2, 5)]


def test_condition_reading_undeclared_variable() -> None:
    text = '{% if tier == "gold" %}VIP{% endif %}'
    diagnostic = one(agent_lint(text), "SC303")
    assert diagnostic.severity is Severity.ERROR
    assert (diagnostic.start, diagnostic.end) == (0, 23)


def test_condition_builtins_are_not_variables() -> None:
    text = '{% if channel == "telephony" and modality == "voice" %}Slow.{% endif %}'
    assert problems(agent_lint(text)) == []


def test_undeclared_tool_with_suggestion() -> None:
    diagnostic = one(agent_lint("Call {@TOOL: lookupbalance}."), "SC304")
    assert diagnostic.severity is Severity.ERROR
    assert (diagnostic.column, diagnostic.start, diagnostic.end) == (6, 5, 27)
    assert "Did you mean `LookupBalance`?" in diagnostic.message


def test_tool_of_the_app_not_available_to_the_agent() -> None:
    app = bank_app(tools=(*bank_app().tools, python_tool("Transfer")))
    diagnostic = one(agent_lint("Use {@TOOL: Transfer}", app), "SC305")
    assert diagnostic.severity is Severity.ERROR
    assert diagnostic.start == 4


def test_unknown_agent_matches_display_names_exactly() -> None:
    diagnostic = one(agent_lint("Hand over to {@AGENT: bank agent}."), "SC306")
    assert diagnostic.severity is Severity.ERROR
    assert diagnostic.column == 14
    assert "Did you mean `Bank Agent`?" in diagnostic.message
    assert not with_code(agent_lint("{@AGENT: Bank Agent}"), "SC306")


def test_agent_tool_and_child_lists_must_name_declared_objects() -> None:
    app = bank_app()
    agent = replace(app.agents[0], tools=("LookupBalance", "Ghost"), children=("Helper",))
    found = lint_app(replace(app, agents=(agent,)))
    tool = one(found, "SC308")
    assert (tool.severity, tool.field, tool.subject) == (
        Severity.ERROR,
        "agents.Bank Agent.tools",
        "Bank Agent",
    )
    child = one(found, "SC309")
    assert (child.severity, child.field) == (Severity.ERROR, "agents.Bank Agent.children")


def test_static_reference_in_condition_to_updated_variable() -> None:
    text = "{% if current_account_balance > 0 %}Positive.{% endif %}"
    diagnostic = one(agent_lint(text), "SC310")
    assert diagnostic.severity is Severity.WARNING
    assert diagnostic.start == 0
    assert "instructions change mid-session" in diagnostic.message


def test_updates_by_callbacks_and_mocks_count_too() -> None:
    app = bank_app(
        variables=(*bank_app().variables, variable("mood"), variable("greeting")),
        tools=(
            replace(
                bank_app().tools[0],
                mock=ToolMock(state={"mood": "happy"}),
            ),
        ),
    )
    callback = CallbackSpec(
        CallbackKind.BEFORE_MODEL, 'callback_context.state["greeting"] = "hi"\n'
    )
    app = replace(app, agents=(replace(app.agents[0], callbacks=(callback,)),))
    found = with_code(agent_lint("{{mood}} {{greeting}}", app), "SC310")
    assert len(found) == 2
    assert "LookupBalance" in found[0].message
    assert "before model callback of Bank Agent" in found[1].message


def test_variable_never_used() -> None:
    app = bank_app(variables=(*bank_app().variables, variable("forgotten")))
    diagnostic = one(lint_app(app), "SC311")
    assert (diagnostic.severity, diagnostic.field, diagnostic.subject) == (
        Severity.WARNING,
        "variables.forgotten",
        "forgotten",
    )


def test_variable_used_in_mcp_header_or_condition_or_code_is_used() -> None:
    variables = (*bank_app().variables, variable("token"), variable("tier"), variable("seen"))
    tools = (
        *bank_app().tools,
        ToolSpec(
            "Crm",
            ToolKind.MCP,
            description="CRM.",
            mcp_url="https://crm.example/mcp",
            mcp_headers=(("Authorization", "Bearer $context.variables.token"),),
        ),
        python_tool("Peek", 'return context.state.get("seen")'),
    )
    app = bank_app(variables=variables, tools=tools)
    app = replace(
        app,
        agents=(
            replace(
                app.agents[0],
                instructions=app.agents[0].instructions + '{% if tier == "a" %}x{% endif %}',
            ),
        ),
    )
    assert not with_code(lint_app(app), "SC311")


def test_context_variables_hands_every_variable_to_a_tool() -> None:
    tool = ToolSpec(
        "Crm",
        ToolKind.MCP,
        description="CRM.",
        mcp_url="https://crm.example/mcp",
        mcp_headers=(("X-State", "$context.variables"),),
    )
    app = bank_app(variables=(*bank_app().variables, variable("spare")), tools=(tool,))
    assert not with_code(lint_app(app), "SC311")


def test_tool_never_mentioned() -> None:
    diagnostic = one(agent_lint("Be nice."), "SC312")
    assert (diagnostic.severity, diagnostic.field, diagnostic.subject) == (
        Severity.INFO,
        "agents.Bank Agent.tools",
        "Bank Agent",
    )
    assert "{@TOOL: LookupBalance}" in diagnostic.message


def test_lint_agent_of_unknown_agent() -> None:
    (diagnostic,) = lint_agent(bank_app(), "Bank agent")
    assert (diagnostic.code, diagnostic.severity) == ("SC313", Severity.ERROR)
    assert "Did you mean `Bank Agent`?" in diagnostic.message


def test_root_agent_count() -> None:
    app = bank_app()
    no_root = replace(app, agents=(replace(app.agents[0], is_root=False),))
    assert one(lint_app(no_root), "SC314").severity is Severity.WARNING
    two = replace(app, agents=(app.agents[0], replace(app.agents[0], name="Other")))
    assert one(lint_app(two), "SC314").severity is Severity.ERROR


def test_parse_diagnostics_are_included_with_the_field() -> None:
    found = agent_lint("Call {TOOL: LookupBalance} and $context.session_id {% if %}")
    codes = [d.code for d in found if d.code.startswith("SC1")]
    assert codes == ["SC101", "SC103", "SC115", "SC111"]
    assert all(d.field == "agents.Bank Agent.instructions" for d in found if d.line)
    assert all(d.subject == "Bank Agent" for d in found)


def test_stray_elif_is_not_linted_as_a_condition() -> None:
    found = agent_lint("{% elif ghost %}")
    assert with_code(found, "SC113")
    assert not with_code(found, "SC303")


# ---------------------------------------------------------------------------
# Variables, defaults and schemas


def test_object_variable_needs_a_schema() -> None:
    app = bank_app(
        variables=(
            *bank_app().variables,
            variable("profile", VariableType.OBJECT),
            variable("cart", VariableType.LIST, item_type=VariableType.OBJECT, schema="Cart"),
        )
    )
    found = with_code(lint_app(app), "SC320")
    assert [(d.severity, d.field) for d in found] == [
        (Severity.ERROR, "variables.profile.schema"),
        (Severity.ERROR, "variables.cart.schema"),
    ]
    assert "`Cart`" in found[1].message


def test_default_that_does_not_match_its_type() -> None:
    app = bank_app(
        variables=(variable("current_account_balance", VariableType.NUMBER, default="lots"),)
    )
    diagnostic = one(lint_app(app), "SC201")
    assert diagnostic.severity is Severity.ERROR
    assert diagnostic.field == "variables.current_account_balance.default"


def test_default_that_does_not_match_its_schema() -> None:
    customer = variable(
        "customer", VariableType.OBJECT, schema="Customer", default={"name": "Ada", "age": 3}
    )
    app = bank_app(variables=(bank_app().variables[0], customer))
    diagnostic = one(lint_app(app), "SC205")
    assert diagnostic.field == "variables.customer.default"


def test_path_the_schema_has_is_fine_through_refs_and_items() -> None:
    text = "{{customer.address.city}} {{customer.orders.0.total}} {{customer.extra.anything}}"
    # The path is right; only CX's own rule about list indexes (SC324) has a word to say.
    assert [d.code for d in problems(agent_lint(text))] == ["SC324"]


def test_an_index_into_a_list_is_an_error_naming_the_list_and_the_fix() -> None:
    app = bank_app(
        variables=(
            *bank_app().variables,
            variable("languages", VariableType.LIST, item_type=VariableType.TEXT),
        )
    )
    text = "Speak {{languages.0}}. Last order: {{customer.orders.1.total}}."
    found = with_code(agent_lint(text, app), "SC324")
    spans = [(text.index(ref), text.index(ref) + len(ref)) for ref in re.findall(r"{{.*?}}", text)]
    assert [(d.severity, (d.start, d.end)) for d in found] == [(Severity.ERROR, s) for s in spans]
    assert "`languages` is a list" in found[0].message
    assert "Reference the whole list, `{{languages}}`" in found[0].message
    assert "`customer.orders` is a list" in found[1].message
    assert found[0].field == "agents.Bank Agent.instructions"
    # The whole list, a path without an index, and conditions (not CX references) are fine.
    fine = "{{languages}} {{customer.address.city}} {% if languages.0 == 'fr' %}Salut{% endif %}"
    assert not with_code(agent_lint(fine, app), "SC324")
    assert with_code(
        lint_app(replace(app, agents=(replace(app.agents[0], instructions=text),))), "SC324"
    )


def test_cx_fills_in_current_date_so_it_needs_no_declaration() -> None:
    text = "Today is {current_date} ({{current_date}})."
    assert problems(agent_lint(text)) == []
    for text, code in (
        ("{current_datee}", "SC302"),
        ("{{current_date.year}}", "SC301"),
        ("{% if current_date %}x{% endif %}", "SC303"),
    ):
        assert one(agent_lint(text), code).severity is Severity.ERROR, text


def test_path_the_schema_does_not_have() -> None:
    text = "Ship to {{customer.address.cty}}"
    diagnostic = one(agent_lint(text), "SC321")
    assert diagnostic.severity is Severity.WARNING
    assert diagnostic.start == 8
    assert "Did you mean `customer.address.city`?" in diagnostic.message


def test_path_the_schema_does_not_declare_but_allows() -> None:
    text = "{{customer.orders.0.discount}}"
    diagnostic = one(agent_lint(text), "SC322")
    assert diagnostic.severity is Severity.INFO
    assert diagnostic.line == 1


def test_path_into_something_that_is_not_an_object() -> None:
    app = bank_app(
        variables=(
            *bank_app().variables,
            variable("tags", VariableType.LIST, item_type=VariableType.TEXT),
        )
    )
    for text in (
        "{{current_account_balance.cents}}",
        "{{customer.name.first}}",
        "{{customer.orders.total}}",
        "{{tags.first}}",
        "{{tags.0.x}}",
    ):
        diagnostic = one(agent_lint(text, app), "SC323")
        assert diagnostic.severity is Severity.ERROR, text
        assert (diagnostic.start, diagnostic.end) == (0, len(text)), text
    assert not with_code(agent_lint("{{tags.0}}", app), "SC323")


def test_names_snake_case_validity_and_duplicates() -> None:
    app = bank_app(
        variables=(
            *bank_app().variables,
            variable("CustomerName"),
            variable("2fast"),
            variable("customer"),
        )
    )
    found = lint_app(app)
    snake = one(found, "SC330")
    assert (snake.severity, snake.field, snake.subject) == (
        Severity.WARNING,
        "variables.CustomerName.name",
        "CustomerName",
    )
    assert "customer_name" in snake.message
    invalid = one(found, "SC331")
    assert (invalid.severity, invalid.field) == (Severity.ERROR, "variables.2fast.name")
    duplicate = one(found, "SC332")
    assert (duplicate.severity, duplicate.field) == (Severity.ERROR, "variables.customer.name")


def test_missing_descriptions() -> None:
    app = bank_app(
        variables=(replace(bank_app().variables[0], description=""), bank_app().variables[1]),
        tools=(
            ToolSpec(
                "LookupBalance",
                ToolKind.PYTHON,
                python_code=(
                    'def LookupBalance():\n    context.state["current_account_balance"] = 1\n'
                ),
            ),
        ),
    )
    found = lint_app(app)
    variable_missing = one(found, "SC333")
    assert (variable_missing.severity, variable_missing.field) == (
        Severity.WARNING,
        "variables.current_account_balance.description",
    )
    tool_missing = one(found, "SC334")
    assert (tool_missing.severity, tool_missing.field, tool_missing.subject) == (
        Severity.WARNING,
        "tools.LookupBalance.description",
        "LookupBalance",
    )


def test_schema_problems_come_from_check_schema() -> None:
    app = bank_app(schemas=(SchemaSpec("Customer", {**CUSTOMER, "type": "thing"}),))
    found = [d for d in lint_app(app) if d.field and d.field.startswith("schemas.Customer")]
    assert found
    assert all(d.subject == "Customer" for d in found)
    assert any(d.severity is Severity.ERROR for d in found)


# ---------------------------------------------------------------------------
# Tools and callbacks


def test_tool_writes_undeclared_variable() -> None:
    app = bank_app(tools=(python_tool("LookupBalance", 'context.state["balanse"] = 3'),))
    diagnostic = one(lint_app(app), "SC340")
    # The runtime keeps a key code writes (a note, as the timeline's SC408): issue 18.6.
    assert diagnostic.severity is Severity.INFO
    assert (diagnostic.field, diagnostic.subject) == (
        "tools.LookupBalance.python_code",
        "LookupBalance",
    )
    assert (diagnostic.line, diagnostic.column) == (3, 5)


def test_tool_writes_value_of_the_wrong_kind() -> None:
    body = 'context.state["current_account_balance"] = f"{1250} EUR"'
    app = bank_app(tools=(python_tool("LookupBalance", body),))
    diagnostic = one(lint_app(app), "SC341")
    assert diagnostic.severity is Severity.WARNING
    assert diagnostic.field == "tools.LookupBalance.python_code"
    assert "Number" in diagnostic.message


def test_tool_writes_literal_that_breaks_the_schema() -> None:
    body = 'context.state["customer"] = {"name": "Ada", "shoe_size": 9}'
    app = bank_app(tools=(*bank_app().tools, python_tool("SetCustomer", body)))
    diagnostic = one(lint_app(app), "SC341")
    assert diagnostic.subject == "SetCustomer"
    assert "shoe_size" in diagnostic.message


def test_tool_writes_with_computed_name() -> None:
    app = bank_app(tools=(*bank_app().tools, python_tool("Setter", "context.state[name] = 1")))
    diagnostic = one(lint_app(app), "SC342")
    assert (diagnostic.severity, diagnostic.field) == (Severity.INFO, "tools.Setter.python_code")


def test_tool_reads_undeclared_variable() -> None:
    app = bank_app(tools=(*bank_app().tools, python_tool("Peek", 'return context.state["ghost"]')))
    diagnostic = one(lint_app(app), "SC343")
    assert (diagnostic.severity, diagnostic.line) == (Severity.WARNING, 3)


def test_callback_writes_are_checked_with_their_field() -> None:
    callback = CallbackSpec(CallbackKind.AFTER_TOOL, 'context.state["nope"] = 1\n')
    app = bank_app()
    app = replace(app, agents=(replace(app.agents[0], callbacks=(callback,)),))
    diagnostic = one(lint_app(app), "SC340")
    assert diagnostic.field == "agents.Bank Agent.callbacks.0.code"
    assert diagnostic.subject == "Bank Agent"
    assert one(lint_agent(app, "Bank Agent"), "SC340") == diagnostic


def test_mock_sets_undeclared_variable_or_bad_value() -> None:
    tool = replace(
        bank_app().tools[0],
        mock=ToolMock(state={"ghost": 1, "current_account_balance": "many"}),
    )
    found = lint_app(bank_app(tools=(tool,)))
    undeclared = one(found, "SC344")
    assert (undeclared.severity, undeclared.field) == (
        Severity.ERROR,
        "tools.LookupBalance.mock.state.ghost",
    )
    bad = one(found, "SC201")
    assert (bad.severity, bad.field, bad.subject) == (
        Severity.ERROR,
        "tools.LookupBalance.mock.state.current_account_balance",
        "LookupBalance",
    )


def test_python_tool_without_its_function() -> None:
    tool = ToolSpec(
        "LookupBalance",
        ToolKind.PYTHON,
        description="Balance.",
        python_code="def lookup_balance():\n    return 1\n",
    )
    diagnostic = one(lint_app(bank_app(tools=(tool,))), "SC350")
    assert (diagnostic.severity, diagnostic.field) == (
        Severity.ERROR,
        "tools.LookupBalance.python_code",
    )
    assert "lookup_balance" in diagnostic.message


def test_python_syntax_error_in_a_tool() -> None:
    tool = replace(bank_app().tools[0], python_code="def LookupBalance(:\n", description="B.")
    diagnostic = one(lint_app(bank_app(tools=(tool,))), "SC351")
    assert (diagnostic.severity, diagnostic.field, diagnostic.line) == (
        Severity.ERROR,
        "tools.LookupBalance.python_code",
        1,
    )
    assert not with_code(lint_app(bank_app(tools=(tool,))), "SC350")


def openapi_tool(parameters: list[dict], operations: int = 1) -> ToolSpec:
    methods = {
        method: {"operationId": method, "parameters": parameters, "responses": {"200": {}}}
        for method in ("get", "post")[:operations]
    }
    document = {
        "openapi": "3.0.0",
        "info": {"title": "Accounts", "version": "1"},
        "paths": {"/accounts": methods},
    }
    return ToolSpec("Accounts", ToolKind.OPENAPI, description="Accounts.", openapi=document)


def test_openapi_tool_needs_exactly_one_operation() -> None:
    app = bank_app(tools=(*bank_app().tools, openapi_tool([], operations=2)))
    diagnostic = one(lint_app(app), "SC352")
    assert (diagnostic.severity, diagnostic.field) == (
        Severity.ERROR,
        "tools.Accounts.openapi.paths",
    )
    empty = replace(openapi_tool([]), openapi=None)
    assert one(lint_app(bank_app(tools=(*bank_app().tools, empty))), "SC352")


def test_openapi_session_context_with_unknown_name() -> None:
    parameter = {"name": "session", "in": "header", "x-ces-session-context": "$context.sesion_id"}
    app = bank_app(tools=(*bank_app().tools, openapi_tool([parameter])))
    diagnostic = one(lint_app(app), "SC360")
    assert diagnostic.severity is Severity.ERROR
    assert diagnostic.field == (
        "tools.Accounts.openapi.paths./accounts.get.parameters.0.x-ces-session-context"
    )
    assert "Did you mean `$context.session_id`?" in diagnostic.message


def test_openapi_session_context_on_a_path_parameter() -> None:
    parameter = {"name": "id", "in": "path", "x-ces-session-context": "$context.session_id"}
    app = bank_app(tools=(*bank_app().tools, openapi_tool([parameter])))
    diagnostic = one(lint_app(app), "SC362")
    assert diagnostic.severity is Severity.WARNING


def test_mcp_header_with_undeclared_variable() -> None:
    tool = ToolSpec(
        "Crm",
        ToolKind.MCP,
        description="CRM.",
        mcp_url="https://crm.example/mcp",
        mcp_headers=(("X-Customer", "$context.variables.customer_idd"),),
    )
    diagnostic = one(lint_app(bank_app(tools=(*bank_app().tools, tool))), "SC361")
    assert diagnostic.severity is Severity.ERROR
    assert diagnostic.field == "tools.Crm.mcp_headers.X-Customer"
    assert (diagnostic.start, diagnostic.end) == (0, 31)
    assert diagnostic.subject == "Crm"


def test_mcp_tool_without_url() -> None:
    tool = ToolSpec("Crm", ToolKind.MCP, description="CRM.")
    diagnostic = one(lint_app(bank_app(tools=(*bank_app().tools, tool))), "SC353")
    assert (diagnostic.severity, diagnostic.field) == (Severity.ERROR, "tools.Crm.mcp_url")


# ---------------------------------------------------------------------------
# The code table and robustness


def test_codes_table_is_sc3xx_and_one_line() -> None:
    assert CODES
    for code, meaning in CODES.items():
        assert re.fullmatch(r"SC3\d\d", code)
        assert meaning and "\n" not in meaning


def test_every_lint_code_is_documented() -> None:
    app = bank_app(variables=(*bank_app().variables, variable("BadName", description="")))
    text = "{ghost} {{ghost}} {@TOOL: Nope} {@AGENT: Nope} {{customer.zzz}}"
    for diagnostic in (*lint_app(app), *agent_lint(text)):
        if diagnostic.code.startswith("SC3"):
            assert diagnostic.code in CODES


@given(st.text(alphabet="{}%@$ abc._:TOOLAGENTifelsendcontext\n", max_size=200))
def test_lint_agent_never_raises(text: str) -> None:
    for diagnostic in agent_lint(text):
        assert isinstance(diagnostic, Diagnostic)
        if diagnostic.start is not None:
            assert 0 <= diagnostic.start <= len(text)


def test_a_pattern_property_is_matched_with_the_time_limited_matcher():
    """Issue 22 item 18: lint matched patternProperties keys with `re` and no time limit
    (`^(.*a){12}b$` on a 30-letter segment: seconds per preview keystroke). Lint now asks
    agents/core/safe_regex.py, which answers that pattern at once, and a pattern it stopped
    (seeded here as stopped: no wall clock) makes no claim about the reference."""
    from agents.core import safe_regex

    segment = "a" * 30

    def app_with(pattern: str) -> AppSpec:
        schema = {
            "type": "object",
            "patternProperties": {pattern: {"type": "string"}},
            "additionalProperties": False,
        }
        return AppSpec(
            name="redos",
            variables=(variable("obj", VariableType.OBJECT, schema="Thing", description="x"),),
            schemas=(SchemaSpec("Thing", schema),),
            agents=(AgentSpec("Root", instructions=f"Say {{{{obj.{segment}}}}}.", is_root=True),),
        )

    assert "SC321" in {d.code for d in lint_app(app_with("^(.*a){12}b$"))}
    stopped = "^b"  # no match, but the matcher (seeded) says it ran out of time
    safe_regex._TIMED_OUT[(stopped, segment)] = "took too long"
    try:
        codes = {d.code for d in lint_app(app_with(stopped))}
    finally:
        safe_regex._TIMED_OUT.pop((stopped, segment), None)
    assert not codes & {"SC321", "SC322"}
