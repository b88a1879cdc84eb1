"""Compiling instructions into the prompt (SPEC §2) and rendering values: examples."""

from __future__ import annotations

import math
from collections import OrderedDict
from decimal import Decimal

import pytest

from agents.core.compile import Span, compile_instructions
from agents.core.diagnostics import Severity
from agents.core.render import render_value


def compiled(text: str, values: dict | None = None, **options) -> str:
    return compile_instructions(text, values or {}, **options).text


# --- substitution ----------------------------------------------------------------


def test_static_values_are_substituted_and_the_rest_kept():
    text = (
        "Rules: {{business_rules}}. Balance {current_balance}; "
        "call {@TOOL: LookupBalance} or {@AGENT: Billing Agent}."
    )
    result = compile_instructions(text, {"business_rules": "be nice", "current_balance": 3})
    assert result.text == (
        "Rules: be nice. Balance {current_balance}; "
        "call {@TOOL: LookupBalance} or {@AGENT: Billing Agent}."
    )
    assert result.diagnostics == ()


def test_whitespace_inside_braces():
    assert compiled("{{ name }}|{{name}}|{ name }", {"name": "Ann"}) == "Ann|Ann|{ name }"


def test_literal_braces_and_json_are_unchanged():
    text = 'Answer as {"a": 1, "b": {"c": [1, 2]}} { not a name } {{ 1 }} {} }{'
    assert compiled(text, {"a": "X", "c": "Y"}) == text


def test_path_into_objects_and_lists():
    values = {
        "customer": {"name": "Zoé", "address": {"city": "Lyon"}, "orders": [{"id": 7}]},
        "items": ["first", "second"],
    }
    text = "{{customer.name}} {{customer.address.city}} {{customer.orders.0.id}} {{items.1}}"
    assert compiled(text, values) == "Zoé Lyon 7 second"


def test_objects_render_as_json():
    values = {"customer": {"name": "Zoé", "vip": True, "score": 3.0}}
    assert compiled("{{customer}}", values) == '{"name": "Zoé", "vip": true, "score": 3}'


def test_single_pass_inserted_values_are_never_rescanned():
    values = {"a": "{{b}}", "b": "B", "c": "{% if true %}x{% endif %}", "d": "{@TOOL x}"}
    result = compile_instructions("{{a}} {{c}} {{d}}", values)
    assert result.text == "{{b}} {% if true %}x{% endif %} {@TOOL x}"
    assert result.diagnostics == ()


@pytest.mark.parametrize(("values"), [{}, {"name": None}, {"other": 1}])
def test_static_without_value_stays_as_written_and_is_reported(values):
    result = compile_instructions("Hi\n  {{ name }}!", values)
    assert result.text == "Hi\n  {{ name }}!"
    (diagnostic,) = result.diagnostics
    assert (diagnostic.code, diagnostic.severity) == ("SC120", Severity.WARNING)
    assert (diagnostic.line, diagnostic.column, diagnostic.start, diagnostic.end) == (2, 3, 5, 15)
    assert "name" in diagnostic.message


@pytest.mark.parametrize(
    "text",
    ["{{customer.phone}}", "{{customer.name.first}}", "{{items.5}}", "{{items.x}}", "{{n.a}}"],
)
def test_static_with_missing_path_stays_as_written_and_is_reported(text):
    values = {"customer": {"name": "Zoé"}, "items": [1], "n": 4}
    result = compile_instructions(text, values)
    assert result.text == text
    assert [d.code for d in result.diagnostics] == ["SC121"]


def test_falsy_values_are_values():
    values = {"zero": 0, "empty": "", "no": False, "nothing": [], "none": {}}
    result = compile_instructions("{{zero}}|{{empty}}|{{no}}|{{nothing}}|{{none}}", values)
    assert result.text == "0||false|[]|{}"
    assert result.diagnostics == ()


def test_syntax_diagnostics_come_with_the_compiled_text():
    result = compile_instructions("{TOOL: x} {{y}}", {"y": 1})
    assert result.text == "{TOOL: x} 1"
    assert [d.code for d in result.diagnostics] == ["SC101"]


# --- conditional blocks -----------------------------------------------------------


BLOCK = """Hello.
{% if channel == "telephony" %}
  Speak slowly.
  {% if modality == "voice" %}
  Use short sentences.
  {% endif %}
{% elif tier == "gold" %}
Offer the lounge.
{% else %}
Be concise.
{% endif %}
Bye.
"""


@pytest.mark.parametrize(
    ("channel", "modality", "tier", "expected"),
    [
        ("telephony", "voice", None, "Hello.\n  Speak slowly.\n  Use short sentences.\nBye.\n"),
        ("telephony", "text", None, "Hello.\n  Speak slowly.\nBye.\n"),
        ("web", "text", "gold", "Hello.\nOffer the lounge.\nBye.\n"),
        ("api", "text", "silver", "Hello.\nBe concise.\nBye.\n"),
    ],
)
def test_only_the_chosen_branch_remains_and_tag_lines_vanish(channel, modality, tier, expected):
    result = compile_instructions(BLOCK, {"tier": tier}, channel=channel, modality=modality)
    assert result.text == expected
    assert result.diagnostics == ()


def test_inline_tags_remove_only_themselves():
    text = "Hi{% if vip %} dear{% endif %}!\nNext line"
    assert compiled(text, {"vip": True}) == "Hi dear!\nNext line"
    assert compiled(text, {"vip": False}) == "Hi!\nNext line"


def test_tag_line_with_indentation_and_crlf_vanishes():
    text = "a\r\n   {% if x %}  \r\nb\r\n\t{% endif %}\r\nc"
    assert compiled(text, {"x": 1}) == "a\r\nb\r\nc"
    assert compiled(text, {"x": 0}) == "a\r\nc"


def test_several_tags_alone_on_a_line_vanish_together():
    text = "a\n{% if x %}{% if y %}\nb\n{% endif %} {% endif %}\nc"
    assert compiled(text, {"x": 1, "y": 1}) == "a\nb\nc"
    assert compiled(text, {"x": 1}) == "a\nc"


def test_tag_at_end_of_text_without_newline():
    assert compiled("a\n{% if x %}\nb\n{% endif %}", {"x": 1}) == "a\nb\n"


def test_static_in_untaken_branch_is_neither_rendered_nor_reported():
    result = compile_instructions("{% if false %}{{missing}}{% else %}{{here}}{% endif %}", {})
    assert result.text == "{{here}}"
    assert [(d.code, d.column) for d in result.diagnostics] == [("SC120", 36)]


def test_conditions_read_paths_and_missing_values():
    text = "{% if customer.vip and customer.orders.0 %}V{% elif unknown %}U{% else %}N{% endif %}"
    assert compiled(text, {"customer": {"vip": True, "orders": [1]}}) == "V"
    assert compiled(text, {"customer": {"vip": True, "orders": []}}) == "N"


def test_first_true_branch_wins():
    text = "{% if a %}A{% elif a %}A2{% elif b %}B{% else %}E{% endif %}"
    assert compiled(text, {"a": 1, "b": 1}) == "A"
    assert compiled(text, {"b": 1}) == "B"
    assert compiled(text, {}) == "E"


def test_nested_blocks_inside_a_false_branch_stay_hidden():
    text = "{% if a %}{% if b %}AB{% else %}A{% endif %}{% else %}{% if b %}B{% endif %}{% endif %}"
    assert compiled(text, {"a": 1, "b": 1}) == "AB"
    assert compiled(text, {"a": 1}) == "A"
    assert compiled(text, {"b": 1}) == "B"
    assert compiled(text, {}) == ""


def test_unclosed_if_runs_to_the_end_and_is_an_error():
    result = compile_instructions("a {% if x %}b {{y}}", {"x": True, "y": 2})
    assert result.text == "a b 2"
    assert [d.code for d in result.diagnostics] == ["SC111"]


def test_stray_tags_stay_as_text():
    result = compile_instructions("a {% endif %} b {% else %}", {})
    assert result.text == "a {% endif %} b {% else %}"
    assert [d.code for d in result.diagnostics] == ["SC112", "SC113"]


def test_unreadable_condition_is_false():
    result = compile_instructions("{% if a == %}A{% else %}B{% endif %}", {"a": 1})
    assert result.text == "B"
    assert [d.code for d in result.diagnostics] == ["SC115"]


def test_unknown_tag_stays_as_text():
    result = compile_instructions("x {% for a in b %} y", {})
    assert result.text == "x {% for a in b %} y"
    assert [d.code for d in result.diagnostics] == ["SC110"]


# --- spans -----------------------------------------------------------------------


def test_spans_locate_values_and_references_in_the_output():
    text = "A {{a}} {dyn} {{missing}}\n{@TOOL: t} {{obj.k}} {@AGENT: Big Boss}"
    result = compile_instructions(text, {"a": "alpha", "obj": {"k": [1, 2]}})
    assert result.text == "A alpha {dyn} {{missing}}\n{@TOOL: t} [1, 2] {@AGENT: Big Boss}"
    assert [(s.kind, s.name, result.text[s.start : s.end]) for s in result.spans] == [
        ("static", "a", "alpha"),
        ("dynamic", "dyn", "{dyn}"),
        ("missing", "missing", "{{missing}}"),
        ("tool", "t", "{@TOOL: t}"),
        ("static", "obj.k", "[1, 2]"),
        ("agent", "Big Boss", "{@AGENT: Big Boss}"),
    ]
    assert result.spans is result.spans


def test_spans_with_blocks():
    text = "{% if x %}\n{{a}} {d}\n{% else %}\n{{b}}\n{% endif %}\n{{a}}"
    result = compile_instructions(text, {"x": True, "a": "AA"})
    assert result.text == "AA {d}\nAA"
    assert result.spans == (
        Span(0, 2, "static", "a"),
        Span(3, 6, "dynamic", "d"),
        Span(7, 9, "static", "a"),
    )


def test_no_spans_without_references():
    assert compile_instructions("plain {not a ref}", {}).spans == ()


# --- robustness -------------------------------------------------------------------


@pytest.mark.parametrize("values", [None, [], "nope", 3, {"a": object()}])
def test_odd_values_never_raise(values):
    result = compile_instructions("{{a}} {% if a %}x{% endif %}", values)
    assert isinstance(result.text, str)


def test_values_mapping_is_not_required_to_be_a_dict():
    assert compiled("{{a}}", OrderedDict(a=1)) == "1"


def test_compile_repr_is_readable():
    assert "CompileResult(text='1'" in repr(compile_instructions("{{a}}", {"a": 1}))


# --- rendering ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("as is {{x}}", "as is {{x}}"),
        ("", ""),
        (3, "3"),
        (3.0, "3"),
        (-0.0, "0"),
        (2.5, "2.5"),
        (1e-7, "1e-07"),
        (1e16, "1e+16"),
        (10**20, "100000000000000000000"),
        (True, "true"),
        (False, "false"),
        (None, "null"),
        ({"a": 1, "b": "x"}, '{"a": 1, "b": "x"}'),
        ({"b": 1, "a": 2}, '{"b": 1, "a": 2}'),
        ([1, "two", None, True], '[1, "two", null, true]'),
        ({"n": [3.0, {"m": 2.0}]}, '{"n": [3, {"m": 2}]}'),
        ({"ville": "Zürich", "emoji": "🙂"}, '{"ville": "Zürich", "emoji": "🙂"}'),
        ((1, 2), "[1, 2]"),
        ([], "[]"),
        ({}, "{}"),
        (float("nan"), "NaN"),
        (float("inf"), "Infinity"),
        (float("-inf"), "-Infinity"),
        ([float("nan"), float("inf")], "[NaN, Infinity]"),
        (Decimal("1.50"), "1.50"),
        ({1: "a"}, '{"1": "a"}'),
    ],
)
def test_render_value(value, text):
    assert render_value(value) == text


def test_render_never_raises():
    circular: list = []
    circular.append(circular)
    assert isinstance(render_value(circular), str)
    assert isinstance(render_value({(1, 2): 3}), str)
    assert render_value({1, 2}) in ("{1, 2}", "{2, 1}")

    class Broken:
        def __str__(self) -> str:
            raise RuntimeError("no")

    assert "Broken" in render_value(Broken())


def test_render_subclasses_like_their_base():
    class Text(str):
        pass

    class Flag(int):
        pass

    assert render_value(Text("x")) == "x"
    assert render_value(Flag(4)) == "4"
    assert math.isnan(float(render_value(float("nan")).replace("NaN", "nan")))


def test_a_condition_on_a_variable_without_value_gets_a_note():
    text = '{% if vip %}A{% elif tier == "gold" %}B{% endif %}{% if channel == "web" %}C{% endif %}'
    result = compile_instructions(text, {"tier": "gold", "vip": None})
    notes = [(d.code, d.severity, d.reference, d.start) for d in result.diagnostics]
    assert notes == [("SC122", Severity.INFO, "vip", 0)]


def test_a_condition_that_is_not_evaluated_gets_no_note():
    text = "{% if vip %}{% if tier %}x{% endif %}{% endif %}"
    result = compile_instructions(text, {"vip": False})
    assert [d.code for d in result.diagnostics] == []
