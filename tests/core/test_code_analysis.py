"""Static analysis of tool/callback code: state writes and reads, functions, `$context` refs."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agents.core.code_analysis import (
    BUILTIN_CONTEXT_NAMES,
    analyze_code,
    context_refs,
)
from agents.core.diagnostics import Severity


def only_write(code: str):
    writes = analyze_code(code).writes
    assert len(writes) == 1, writes
    return writes[0]


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("1250", "number"),
        ("-2.5", "number"),
        ("'text'", "text"),
        ('f"{x} pounds"', "text"),
        ("True", "boolean"),
        ("not x", "boolean"),
        ("a < b", "boolean"),
        ('{"a": 1}', "object"),
        ("{k: v for k, v in x}", "object"),
        ("[1, 2]", "list"),
        ("(1, 2)", "list"),
        ("[i for i in x]", "list"),
        ("None", "null"),
        ("str(x)", "text"),
        ("len(x)", "number"),
        ('"a" + "b"', "text"),
        ("1 + 2 * 3", "number"),
        ('"{}".format(x)', "text"),
        ("1 if x else 2", "number"),
        ("some_call()", None),
        ("x", None),
        ('"a" if x else 1', None),
    ],
)
def test_value_kind_of_a_state_assignment(value: str, kind: str | None) -> None:
    write = only_write(f'context.state["v"] = {value}\n')
    assert write.name == "v"
    assert write.value_kind == kind


def test_literal_value_is_kept_for_validation() -> None:
    write = only_write('context.state["customer"] = {"name": "Ada", "tags": ("a", "b")}')
    assert write.literal is True
    assert write.value == {"name": "Ada", "tags": ["a", "b"]}
    not_literal = only_write('context.state["customer"] = load()')
    assert not_literal.literal is False


def test_seed_example_write_with_position() -> None:
    code = (
        "def LookupBalance() -> dict:\n"
        '    """Look up the balance."""\n'
        '    context.state["current_account_balance"] = 1250\n'
        "    return {}\n"
    )
    analysis = analyze_code(code)
    assert analysis.syntax_error is None
    assert analysis.functions == ("LookupBalance",)
    assert analysis.docstring_of("LookupBalance") == "Look up the balance."
    assert analysis.docstring_of("missing") is None
    (write,) = analysis.writes
    assert (write.name, write.line, write.column, write.value_kind) == (
        "current_account_balance",
        3,
        5,
        "number",
    )
    assert analysis.written_names == {"current_account_balance"}


def test_adk_context_names_and_variables_mapping() -> None:
    code = (
        'tool_context.state["a"] = 1\n'
        'callback_context.state["b"] = "x"\n'
        'context.variables["c"] = True\n'
        'other.state["ignored"] = 1\n'
    )
    assert [(w.name, w.value_kind) for w in analyze_code(code).writes] == [
        ("a", "number"),
        ("b", "text"),
        ("c", "boolean"),
    ]


def test_set_and_remove_variable_and_del() -> None:
    code = (
        'context.set_variable("a", [1])\n'
        'context.remove_variable("b")\n'
        'del context.state["c"]\n'
        'context.state.pop("d", None)\n'
    )
    writes = analyze_code(code).writes
    assert [(w.name, w.removal, w.value_kind) for w in writes] == [
        ("a", False, "list"),
        ("b", True, None),
        ("c", True, None),
        ("d", True, None),
    ]
    assert analyze_code(code).written_names == {"a"}


def test_augmented_assignment_is_a_read_and_a_write() -> None:
    analysis = analyze_code('context.state["count"] += 1\ncontext.state["log"] += "x"\n')
    assert [(w.name, w.augmented, w.value_kind) for w in analysis.writes] == [
        ("count", True, "number"),
        ("log", True, "text"),
    ]
    assert [r.name for r in analysis.reads] == ["count", "log"]


def test_update_setdefault_and_chained_assignments() -> None:
    code = (
        'context.state.update({"a": 1, "b": "x"}, c=None)\n'
        'context.state.setdefault("d", {})\n'
        'context.state["e"] = context.state["f"] = 2.5\n'
        'x, context.state["g"] = 1, "y"\n'
    )
    writes = analyze_code(code).writes
    assert {(w.name, w.value_kind) for w in writes} == {
        ("a", "number"),
        ("b", "text"),
        ("c", "null"),
        ("d", "object"),
        ("e", "number"),
        ("f", "number"),
        ("g", "text"),
    }


def test_alias_of_state_and_module_constant_key() -> None:
    code = 'KEY = "balance"\nstate = context.state\nstate[KEY] = 3\nprint(state["other"])\n'
    analysis = analyze_code(code)
    assert [(w.name, w.value_kind) for w in analysis.writes] == [("balance", "number")]
    assert [r.name for r in analysis.reads] == ["other"]


def test_dynamic_key_gives_a_write_without_name() -> None:
    write = only_write("def f(name):\n    context.state[name] = 1\n")
    assert write.name is None
    assert write.line == 2


def test_nested_mutation_writes_the_outer_variable() -> None:
    analysis = analyze_code('context.state["order"]["total"] = 3\n')
    assert [(w.name, w.value_kind) for w in analysis.writes] == [("order", None)]


def test_reads() -> None:
    code = (
        'a = context.state["a"]\n'
        'b = context.state.get("b", 0)\n'
        'if "c" in tool_context.state:\n'
        "    pass\n"
        'd = context.get_variable("d")\n'
    )
    reads = analyze_code(code).reads
    assert [(r.name, r.line) for r in reads] == [("a", 1), ("b", 2), ("c", 3), ("d", 5)]
    assert analyze_code(code).writes == ()


def test_columns_count_characters_not_bytes() -> None:
    write = only_write('é = 1; context.state["x"] = 1\n')
    assert write.column == 8


def test_syntax_error_is_a_diagnostic() -> None:
    analysis = analyze_code("def LookupBalance(:\n    pass\n")
    error = analysis.syntax_error
    assert error is not None
    assert error.code == "SC351"
    assert error.severity is Severity.ERROR
    assert error.line == 1
    assert "line 1" in error.message
    assert analysis.writes == () and analysis.functions == ()


@pytest.mark.parametrize("code", ["\0", "(" * 500 + ")" * 500, "x = " + "-" * 100_000 + "1"])
def test_pathological_code_never_raises(code: str) -> None:
    analysis = analyze_code(code)
    assert analysis.syntax_error.code == "SC351"  # each is refused, none raises


@given(st.text(max_size=300))
def test_analyze_code_never_raises(code: str) -> None:
    analysis = analyze_code(code)
    assert isinstance(analysis.writes, tuple)


def test_code_is_never_executed(tmp_path) -> None:
    marker = tmp_path / "ran"
    analyze_code(f"open({str(marker)!r}, 'w').write('x')\n")
    assert not marker.exists()


def test_context_refs_classify_builtins_and_variables() -> None:
    text = (
        "Bearer $context.session_id. $context.variables.customer_id, $context.variables "
        "$context.sesion_id $contextual $context"
    )
    refs = context_refs(text)
    assert [ref.raw for ref in refs] == [
        "$context.session_id",
        "$context.variables.customer_id",
        "$context.variables",
        "$context.sesion_id",
        "$context",
    ]
    session, variable, everything, typo, bare = refs
    assert session.builtin == "session_id" and session.valid_name
    assert text[session.start : session.end] == "$context.session_id"
    assert variable.variable == "customer_id" and variable.valid_name
    assert everything.all_variables and everything.variable is None
    assert not typo.valid_name and typo.builtin is None
    assert bare.path == () and not bare.valid_name
    assert context_refs("no references") == []
    assert {
        "project_id",
        "project_number",
        "location",
        "app_id",
        "session_id",
        "turn_index",
    } == BUILTIN_CONTEXT_NAMES
