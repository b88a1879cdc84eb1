"""The three-layer diff on hand-made pairs of apps: one kind of change at a time."""

from __future__ import annotations

from dataclasses import replace

from agents.core.diff import DiffLine, FieldChange, diff_apps, line_diff
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

CUSTOMER = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
}
INSTRUCTIONS = (
    "Greet {{customer_name}}.\n"
    '{% if channel == "telephony" %}\n'
    "Speak slowly.\n"
    "{% endif %}\n"
    "Use {@TOOL: LookupBalance} for the balance, then read {balance}.\n"
)
BASE = AppSpec(
    name="Bank",
    description="A bank agent.",
    schemas=(SchemaSpec("Customer", CUSTOMER, "A customer."),),
    variables=(
        VariableSpec("customer_name", VariableType.TEXT, "Ada", "The customer's name."),
        VariableSpec("balance", VariableType.NUMBER, 0, "Balance in EUR."),
        VariableSpec("customer", VariableType.OBJECT, None, "Who.", schema="Customer"),
    ),
    tools=(
        ToolSpec(
            "LookupBalance",
            ToolKind.PYTHON,
            "Looks up the balance.",
            "def LookupBalance():\n    return {'balance': 1}\n",
            mock=ToolMock(state={"balance": 1250}, response={"ok": True}),
        ),
    ),
    agents=(
        AgentSpec(
            "Root",
            INSTRUCTIONS,
            "The root.",
            tools=("LookupBalance",),
            callbacks=(CallbackSpec(CallbackKind.BEFORE_MODEL, "x = 1\n", 0),),
            is_root=True,
        ),
    ),
)
SCENARIO = ScenarioSpec(
    "Happy path",
    "Root",
    SessionSpec(values={"customer_name": "Bea"}),
    steps=(
        StepSpec(StepKind.USER, "What is my balance?"),
        StepSpec(StepKind.TOOL, tool="LookupBalance"),
        StepSpec(StepKind.AGENT, "1250 EUR."),
    ),
    use_mocks=True,
)


def _with_variable(app: AppSpec, which: str, /, **changes) -> AppSpec:
    return replace(
        app,
        variables=tuple(replace(v, **changes) if v.name == which else v for v in app.variables),
    )


def _with_agent(app: AppSpec, name: str, **changes) -> AppSpec:
    return replace(
        app, agents=tuple(replace(a, **changes) if a.name == name else a for a in app.agents)
    )


def test_identical_apps_have_an_empty_diff():
    diff = diff_apps(BASE, BASE, before_scenarios=[SCENARIO], after_scenarios=[SCENARIO])
    assert diff.is_empty
    assert diff.declarations == () and diff.instructions == ()
    assert [p.changed for p in diff.prompts] == [False]
    assert [s.change for s in diff.scenarios] == ["same"]


def test_added_and_removed_variable():
    after = replace(
        BASE,
        variables=(
            *BASE.variables[:1],
            BASE.variables[2],
            VariableSpec("vip", VariableType.BOOLEAN, True, "VIP?"),
        ),
    )
    changes = {(c.kind, c.change, c.name) for c in diff_apps(BASE, after).declarations}
    assert changes == {("variable", "removed", "balance"), ("variable", "added", "vip")}


def test_type_change_is_reported_field_by_field():
    after = _with_variable(BASE, "balance", type=VariableType.TEXT, default="0")
    [change] = diff_apps(BASE, after).declarations
    assert (change.kind, change.change, change.name) == ("variable", "changed", "balance")
    assert change.fields == (
        FieldChange("type", "number", "text"),
        FieldChange("default", "0", '"0"'),
    )


def test_description_change():
    after = _with_variable(BASE, "customer_name", description="Given name.")
    [change] = diff_apps(BASE, after).declarations
    assert change.fields == (FieldChange("description", "The customer's name.", "Given name."),)


def test_schema_keyword_change_names_the_keyword():
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 18}},
        "required": ["name"],
    }
    after = replace(BASE, schemas=(SchemaSpec("Customer", schema, "A customer."),))
    [change] = diff_apps(BASE, after).declarations
    assert (change.kind, change.change, change.name) == ("schema", "changed", "Customer")
    assert change.fields == (
        FieldChange("json_schema/properties/age/minimum", "0", "18"),
        FieldChange("json_schema/required", None, '["name"]'),
    )


def test_variable_rename_is_one_rename_and_references_show_in_the_text():
    renamed = _with_variable(BASE, "customer_name", name="given_name")
    after = _with_agent(
        renamed, "Root", instructions=INSTRUCTIONS.replace("customer_name", "given_name")
    )
    diff = diff_apps(BASE, after)
    assert [(c.kind, c.change, c.old_name, c.name, c.fields) for c in diff.declarations] == [
        ("variable", "renamed", "customer_name", "given_name", ())
    ]
    [text] = diff.instructions
    assert [(line.kind, line.text) for line in text.diff.lines if line.kind != "same"] == [
        ("removed", "Greet {{customer_name}}."),
        ("added", "Greet {{given_name}}."),
    ]
    # Same value under the new name: the model receives the same prompt.
    assert not diff.changed_prompts


def test_tool_rename_renames_its_function_and_the_agent_link_is_not_a_change():
    tool = BASE.tools[0]
    new_tool = replace(
        tool, name="GetBalance", python_code=tool.python_code.replace("LookupBalance", "GetBalance")
    )
    after = _with_agent(
        replace(BASE, tools=(new_tool,)),
        "Root",
        tools=("GetBalance",),
        instructions=INSTRUCTIONS.replace("LookupBalance", "GetBalance"),
    )
    diff = diff_apps(BASE, after)
    assert [(c.kind, c.change, c.old_name, c.name) for c in diff.declarations] == [
        ("tool", "renamed", "LookupBalance", "GetBalance")
    ]


def test_schema_rename_is_followed_by_its_variables():
    after = replace(
        BASE,
        schemas=(replace(BASE.schemas[0], name="Client"),),
        variables=tuple(replace(v, schema="Client") if v.schema else v for v in BASE.variables),
    )
    diff = diff_apps(BASE, after)
    assert [(c.kind, c.change, c.old_name, c.name) for c in diff.declarations] == [
        ("schema", "renamed", "Customer", "Client")
    ]


def test_a_changed_object_with_a_new_name_is_removed_and_added_not_renamed():
    after = _with_variable(BASE, "balance", name="amount", default=5)
    changes = [(c.change, c.name) for c in diff_apps(BASE, after).declarations]
    assert changes == [("removed", "balance"), ("added", "amount")]


def test_tool_code_and_mock_changes():
    tool = BASE.tools[0]
    after = replace(
        BASE,
        tools=(
            replace(
                tool,
                python_code="def LookupBalance():\n    return {'balance': 2}\n",
                mock=None,
            ),
        ),
    )
    [change] = diff_apps(BASE, after).declarations
    fields = {f.field: f for f in change.fields}
    assert set(fields) == {"python_code", "mock"}
    assert (fields["mock"].before, fields["mock"].after) == ("on", "off")
    code = fields["python_code"].lines
    assert [(line.kind, line.text) for line in code.lines if line.kind != "same"] == [
        ("removed", "    return {'balance': 1}"),
        ("added", "    return {'balance': 2}"),
    ]


def test_agent_links_callbacks_and_new_agents():
    helper = AgentSpec("Helper", "I help.", "A helper.")
    after = replace(
        BASE,
        agents=(
            replace(
                BASE.agents[0],
                tools=(),
                children=("Helper",),
                callbacks=(CallbackSpec(CallbackKind.BEFORE_MODEL, "x = 2\n", 0),),
            ),
            helper,
        ),
    )
    diff = diff_apps(BASE, after)
    root = next(c for c in diff.declarations if c.name == "Root")
    assert [f.field for f in root.fields] == ["tools", "children", "callbacks.before_model[0]"]
    assert root.fields[0] == FieldChange("tools", "LookupBalance", None)
    assert ("agent", "added", "Helper") in {(c.kind, c.change, c.name) for c in diff.declarations}
    assert [(i.agent, i.change) for i in diff.instructions] == [("Helper", "added")]
    helper_prompt = next(p for p in diff.prompts if p.agent == "Helper")
    assert (helper_prompt.before, helper_prompt.after) == ("", "I help.")


def test_a_default_changes_only_the_compiled_prompt():
    after = _with_variable(BASE, "customer_name", default="Grace")
    diff = diff_apps(BASE, after)
    [change] = diff.declarations
    assert change.fields == (FieldChange("default", '"Ada"', '"Grace"'),)
    assert diff.instructions == ()  # the text did not change …
    [prompt] = diff.changed_prompts  # … but what the model receives did
    assert [(line.kind, line.text) for line in prompt.diff.lines if line.kind != "same"] == [
        ("removed", "Greet Ada."),
        ("added", "Greet Grace."),
    ]


def test_an_edit_in_a_branch_not_taken_changes_only_the_text():
    after = _with_agent(
        BASE, "Root", instructions=INSTRUCTIONS.replace("Speak slowly.", "Speak very slowly.")
    )
    diff = diff_apps(BASE, after)  # web channel: the telephony branch is not compiled in
    assert diff.declarations == ()
    assert [i.diff.added for i in diff.instructions] == [1]
    assert not diff.changed_prompts
    on_the_phone = diff_apps(BASE, after, channel="telephony")
    assert [p.agent for p in on_the_phone.changed_prompts] == ["Root"]


def test_the_same_session_values_are_used_on_both_sides():
    after = _with_variable(BASE, "customer_name", default="Grace")
    diff = diff_apps(BASE, after, values={"customer_name": "Bea"})
    assert not diff.changed_prompts
    assert diff.prompts[0].before.startswith("Greet Bea.")


def test_scenario_declaration_and_result_change():
    tool = BASE.tools[0]
    after = replace(
        BASE, tools=(replace(tool, mock=ToolMock(state={"balance": 99}, response={"ok": True})),)
    )
    longer = replace(SCENARIO, steps=(*SCENARIO.steps, StepSpec(StepKind.USER, "Thanks")))
    diff = diff_apps(BASE, after, before_scenarios=[SCENARIO], after_scenarios=[longer])
    scenario = next(c for c in diff.declarations if c.kind == "scenario")
    assert (scenario.change, scenario.name) == ("changed", "Root / Happy path")
    assert [f.field for f in scenario.fields] == ["steps"]
    [result] = diff.scenarios
    assert result.change == "changed"
    assert result.final_state == (FieldChange("balance", "1250", "99"),)
    session = "<state_update>customer_name: Bea</state_update>"
    assert result.updates_before == (session, "<state_update>balance: 1250</state_update>")
    assert result.updates_after == (session, "<state_update>balance: 99</state_update>")


def test_scenarios_only_on_one_side():
    other = replace(SCENARIO, name="Other")
    diff = diff_apps(BASE, BASE, before_scenarios=[SCENARIO], after_scenarios=[other])
    assert {(s.scenario, s.change) for s in diff.scenarios} == {
        ("Happy path", "removed"),
        ("Other", "added"),
    }


def test_app_name_and_description():
    [change] = diff_apps(BASE, replace(BASE, name="Bank 2", description="")).declarations
    assert change.kind == "app"
    assert change.fields == (
        FieldChange("name", "Bank", "Bank 2"),
        FieldChange("description", "A bank agent.", None),
    )


def test_line_diff_keeps_context_and_line_numbers():
    before = "\n".join(f"line {i}" for i in range(1, 21))
    after = before.replace("line 3", "line three").replace("line 18", "line eighteen")
    diff = line_diff(before, after, context=1)
    assert (diff.added, diff.removed) == (2, 2)
    assert diff.lines == (
        DiffLine("gap", "", 2, 2),
        DiffLine("same", "line 2", 2, 2),
        DiffLine("removed", "line 3", 3, None),
        DiffLine("added", "line three", None, 3),
        DiffLine("same", "line 4", 4, 4),
        DiffLine("gap", "", 17, 17),
        DiffLine("same", "line 17", 17, 17),
        DiffLine("removed", "line 18", 18, None),
        DiffLine("added", "line eighteen", None, 18),
        DiffLine("same", "line 19", 19, 19),
    )


def test_line_diff_of_equal_texts_is_empty_and_a_final_newline_counts():
    assert not line_diff("a\nb", "a\nb").changed
    assert line_diff("a\nb", "a\nb\n").changed
