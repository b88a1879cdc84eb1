"""Golden expectations checked against a simulation, and the matching rule (issue #11)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agents.core.evaluate import differences, evaluate, matches
from agents.core.script import parse_script
from agents.core.simulate import simulate
from agents.core.spec import (
    AgentSpec,
    AppSpec,
    ScenarioSpec,
    SchemaSpec,
    ToolKind,
    ToolSpec,
    VariableSpec,
)
from agents.core.spec import VariableType as T
from tests.core.test_simulate import FakeRunner

CART = '''
def AddItem(price):
    """Add an item to the cart."""
    context.state["cart_total"] = context.state.get("cart_total", 0) + price
    context.state["cart"] = {"items": 1, "last": {"price": price, "ok": True}}
    return {"total": context.state["cart_total"], "status": "added"}
'''


def shop(code: str = CART) -> AppSpec:
    return AppSpec(
        name="shop",
        variables=(
            VariableSpec("cart_total", T.NUMBER, default=0),
            VariableSpec("cart", T.OBJECT, schema="Any"),
            VariableSpec("event_data", T.OBJECT, schema="Any"),
        ),
        schemas=(SchemaSpec("Any", {"type": "object"}),),
        tools=(ToolSpec("AddItem", ToolKind.PYTHON, python_code=code),),
        agents=(
            AgentSpec("Shop", tools=("AddItem",), children=("Billing Helper",), is_root=True),
            AgentSpec("Billing Helper"),
        ),
    )


def check(script: str, app: AppSpec | None = None):
    parsed = parse_script(script)
    assert parsed.diagnostics == ()
    app = app or shop()
    scenario = ScenarioSpec(name="golden", agent="Shop", steps=parsed.steps)
    return evaluate(scenario, simulate(app, scenario, run_code=FakeRunner()), app)


# ----------------------------------------------------------------------- the matching rule


def test_listed_keys_match_recursively_and_others_are_ignored() -> None:
    assert matches({"sm": {"filled": {"n": 6}}}, {"sm": {"filled": {"n": 6, "d": 1}, "x": 2}})
    assert not matches({"sm": {"filled": {"n": 6}}}, {"sm": {"filled": {"n": 5}}})
    assert not matches({"a": 1}, {"b": 1})


def test_an_empty_object_lists_nothing_and_matches_any_object() -> None:
    # Google's bella_notte goldens expect `sm.filled: {}` after the routing callback wrote
    # `sm.filled.active_flow` (the app's own code): `{}` is the subset rule's empty pattern.
    assert matches({}, {}) and matches({}, {"a": 1})
    assert matches({"a": {}}, {"a": {}, "b": 2}) and matches({"a": {}}, {"a": {"x": 1}})
    assert not matches({"a": {}}, {"a": [1]}) and not matches({"a": {}}, {})


def test_numbers_compare_by_value_booleans_are_not_numbers() -> None:
    assert matches(4, 4.0) and matches({"n": 6.0}, {"n": 6})
    assert not matches(1, True) and not matches(True, 1) and not matches("4", 4)
    assert not matches(None, 0)


def test_lists_match_item_by_item_with_the_same_rule() -> None:
    assert matches([{"a": 1}, 2], [{"a": 1, "b": 3}, 2.0])
    assert not matches([1, 2], [1, 2, 3])
    assert not matches([1], {"0": 1})


def test_differences_name_the_path_expected_and_actual() -> None:
    assert differences({"sm": {"status": "complete", "n": 6}}, {"sm": {"n": 5}}) == [
        'sm.status: expected "complete", got nothing (missing)',
        "sm.n: expected 6, got 5",
    ]
    assert differences([1, {"a": 2}], [1, {"a": 3}]) == ["[1].a: expected 2, got 3"]


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=5),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
        max_leaves=10,
    )
)
def test_a_value_matches_itself_and_a_superset_of_its_keys(value) -> None:
    assert matches(value, value)
    if isinstance(value, dict) and value:
        assert matches(value, {**value, "\x00extra": 1})


# ----------------------------------------------------------------------- expectations


def test_state_call_and_response_pass_when_the_tool_does_what_the_golden_says() -> None:
    evaluation = check(
        "user: add a pizza\n"
        'expect call [Check_Add]: AddItem {"price": 12.0}\n'
        'expect state: {"cart_total": 12, "cart": {"last": {"price": 12}}}\n'
        'expect response: AddItem {"status": "added"}\n'
        "user: thanks\n"
        "expect no calls\n"
        "expect state: {}\n"
    )
    assert [(r.kind, r.status) for r in evaluation.results] == [
        ("call", "passed"),
        ("state", "passed"),
        ("response", "passed"),
        ("no calls", "passed"),
        ("state", "passed"),
    ]
    assert evaluation.status == "passed" and evaluation.passed == 5
    assert evaluation.results[0].note == "Check_Add" and evaluation.results[0].step == 1
    assert [r.turn for r in evaluation.results] == [0, 0, 0, 1, 1]


def test_a_broken_tool_fails_with_expected_actual_and_the_difference() -> None:
    broken = CART.replace("+ price", "+ price * 2")
    evaluation = check(
        'user: add\nexpect call: AddItem {"price": 10}\nexpect state: {"cart_total": 10}\n',
        shop(broken),
    )
    state = evaluation.results[1]
    assert state.status == "failed" and evaluation.status == "failed"
    assert state.expected == {"cart_total": 10} and state.actual == {"cart_total": 20}
    assert state.differences == ("cart_total: expected 10, got 20",)


def test_a_call_that_raises_fails_with_the_error() -> None:
    evaluation = check(
        'user: add\nexpect call: AddItem {"price": 1}\n',
        shop(CART.replace("return", "1/0\n    return")),
    )
    assert evaluation.results[0].status == "failed"
    assert "ZeroDivisionError" in evaluation.results[0].message


def test_a_call_the_golden_leaves_to_the_model_is_not_run_and_needs_a_model() -> None:
    evaluation = check("user: add\nexpect call: AddItem\nexpect state: {}\n")
    assert [r.status for r in evaluation.results] == ["needs_model", "passed"]


def test_agent_response_needs_a_model_and_a_scenario_of_only_those_needs_one() -> None:
    evaluation = check("user: hi\nexpect agent: Welcome!\n")
    assert evaluation.results[0].status == "needs_model"
    assert evaluation.status == "needs_model"


def test_no_calls_fails_listing_the_calls() -> None:
    evaluation = check('user: x\ntool: AddItem {"price": 2}\nexpect no calls\n')
    assert evaluation.results[0].status == "failed"
    assert evaluation.results[0].differences == ('called AddItem({"price": 2})',)


def test_state_expects_no_value_with_null_and_an_empty_object_means_nothing_changed() -> None:
    evaluation = check(
        'user: x\ntool: AddItem {"price": 2}\nexpect state: {"event_data": null}\nexpect state: {}\n'
    )
    assert [r.status for r in evaluation.results] == ["passed", "failed"]
    assert "cart_total" in evaluation.results[1].message


def test_mock_answers_the_next_call_only_without_running_the_tool() -> None:
    evaluation = check(
        'user: x\nmock: AddItem {"status": "sold out"}\nexpect call: AddItem {"price": 3}\n'
        'expect response: AddItem {"status": "sold out"}\nexpect state: {"cart_total": 0}\n'
        'user: again\nexpect call: AddItem {"price": 3}\nexpect response: AddItem {"status": "added"}\n'
    )
    assert [r.status for r in evaluation.results] == ["passed"] * 5


def test_session_variables_at_a_user_input_update_state_before_the_turn() -> None:
    app = shop()
    parsed = parse_script(
        'variables: {"event_data": {"party_size": 4}}\nevent: welcome\nuser:\n'
        'expect state: {"event_data": {"party_size": 4.0}}\n'
    )
    scenario = ScenarioSpec(name="g", agent="Shop", steps=parsed.steps)
    result = simulate(app, scenario, run_code=FakeRunner())
    assert [(e.kind, e.source) for e in result.events] == [
        ("state_update", "session"),
        ("user", ""),
    ]
    assert result.events[1].text == "<event>welcome</event>"
    assert evaluate(scenario, result, app).status == "passed"


def test_transfer_passes_to_a_sub_agent_and_fails_otherwise() -> None:
    evaluation = check("user: bill\nexpect transfer: Billing Helper\nexpect transfer: Nobody\n")
    assert [r.status for r in evaluation.results] == ["passed", "failed"]


def test_a_scenario_without_expectations_has_no_status() -> None:
    assert check("user: hi\nagent: hello\n").status == "none"


def test_junit_xml_has_a_failure_per_failed_scenario_and_skips_the_others() -> None:
    import xml.etree.ElementTree as ET

    from agents.core.junit import JUnitCase, junit_xml

    failed = check('user: x\ntool: AddItem {"price": 2}\nexpect state [T]: {"cart_total": 3}\n')
    passed = check('user: x\ntool: AddItem {"price": 2}\nexpect state: {"cart_total": 2}\n')
    model = check("user: hi\nexpect agent: Hello\n")
    none = check("user: hi\n")
    cases = [
        JUnitCase("shop", "shop.Shop", name, evaluation, 0.25)
        for name, evaluation in (("a", failed), ("b", passed), ("c", model), ("d", none))
    ]
    root = ET.fromstring(junit_xml(cases))
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == ("4", "1", "2")
    suite = root.find("testsuite")
    assert suite.get("name") == "shop" and suite.get("tests") == "4"
    a, b, c, d = suite.findall("testcase")
    assert (
        a.find("failure").get("message").startswith("1 of 1 expectations failed; first at step 3")
    )
    assert "step 3 (turn 0) [T]: failed" in a.find("failure").text
    assert "cart_total: expected 3, got 2" in a.find("failure").text
    assert b.find("failure") is None and b.get("time") == "0.250"
    assert c.find("skipped").get("message").startswith("every expectation needs a model")
    assert d.find("skipped").get("message") == "no expectations"
