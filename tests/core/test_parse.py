"""Tokenizer and condition parser of instructions (SPEC §2): examples for every rule."""

from __future__ import annotations

import re
from itertools import pairwise

import pytest

from agents.core import compile_instructions
from agents.core.conditions import Condition, ConditionError, parse_condition
from agents.core.diagnostics import Severity
from agents.core.parse import CODES, TokenKind, parse


def kinds(text: str) -> list[tuple[TokenKind, str]]:
    return [(token.kind, token.raw) for token in parse(text).tokens]


def codes(text: str) -> list[str]:
    return [d.code for d in parse(text).diagnostics]


def only(text: str):
    diagnostics = parse(text).diagnostics
    assert len(diagnostics) == 1, diagnostics
    return diagnostics[0]


# --- references -----------------------------------------------------------------


def test_each_reference_kind():
    text = "A {{name}} B {{a.b.c}} C {dyn} D {@TOOL: lookup_balance} E {@AGENT: Billing Agent}"
    tokens = [t for t in parse(text).tokens if t.kind is not TokenKind.TEXT]
    assert [(t.kind, t.name, t.path) for t in tokens] == [
        (TokenKind.STATIC, "name", ("name",)),
        (TokenKind.STATIC, "a.b.c", ("a", "b", "c")),
        (TokenKind.DYNAMIC, "dyn", ("dyn",)),
        (TokenKind.TOOL, "lookup_balance", ()),
        (TokenKind.AGENT, "Billing Agent", ()),
    ]
    assert parse(text).diagnostics == ()


@pytest.mark.parametrize(
    ("text", "kind", "name"),
    [
        ("{{ name }}", TokenKind.STATIC, "name"),
        ("{{\tname\n}}", TokenKind.STATIC, "name"),
        ("{{  a.b  }}", TokenKind.STATIC, "a.b"),
        ("{ name }", TokenKind.DYNAMIC, "name"),
        ("{@TOOL:lookup}", TokenKind.TOOL, "lookup"),
        ("{@TOOL:   lookup  }", TokenKind.TOOL, "lookup"),
        ("{ @AGENT: Billing  Agent }", TokenKind.AGENT, "Billing  Agent"),
        ("{{items.0}}", TokenKind.STATIC, "items.0"),
        ("{_private9}", TokenKind.DYNAMIC, "_private9"),
    ],
)
def test_whitespace_inside_braces_and_names(text, kind, name):
    (token,) = parse(text).tokens
    assert (token.kind, token.name, token.raw) == (kind, name, text)


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1}',
        "{ not a name }",
        "{{ 1 }}",
        "{1abc}",
        "{}",
        "{{}}",
        "{a.b}",
        "{{ not a name }}",
        "{ {x",
        "}}",
        "}",
        "{-x-}",
        "{{a..b}}",
        "{{.a}}",
    ],
)
def test_anything_else_in_braces_is_literal_text(text):
    result = parse(text)
    assert [t.kind for t in result.tokens] == [TokenKind.TEXT]
    assert result.tokens[0].raw == text
    assert result.diagnostics == ()


def test_json_in_text_keeps_inner_reference_like_groups():
    text = 'Reply as {"answer": {"text": "…"}} using {lang}.'
    tokens = parse(text).tokens
    assert "".join(t.raw for t in tokens) == text
    assert [t.name for t in tokens if t.kind is TokenKind.DYNAMIC] == ["lang"]
    assert parse(text).diagnostics == ()


def test_triple_braces_hold_a_static_reference():
    assert kinds("{{{x}}}") == [
        (TokenKind.TEXT, "{"),
        (TokenKind.STATIC, "{{x}}"),
        (TokenKind.TEXT, "}"),
    ]


def test_tokens_are_contiguous_with_lines_and_columns():
    text = "Hi {{name}},\n  call {@TOOL: t}\n{% if x %}\n{d}{% endif %}"
    tokens = parse(text).tokens
    assert "".join(t.raw for t in tokens) == text
    assert tokens[0].start == 0 and tokens[-1].end == len(text)
    for before, after in pairwise(tokens):
        assert before.end == after.start
        assert before.kind is not TokenKind.TEXT or after.kind is not TokenKind.TEXT
    positions = {t.raw: (t.line, t.column) for t in tokens}
    assert positions["{{name}}"] == (1, 4)
    assert positions["{@TOOL: t}"] == (2, 8)
    assert positions["{% if x %}"] == (3, 1)
    assert positions["{d}"] == (4, 1)
    assert positions["{% endif %}"] == (4, 4)


def test_empty_text():
    assert parse("").tokens == ()
    assert parse("").diagnostics == ()


# --- wrong reference syntax ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "suggestion"),
    [
        ("${TOOL: x}", "{@TOOL: x}"),
        ("{TOOL: x}", "{@TOOL: x}"),
        ("{@tool x}", "{@TOOL: x}"),
        ("{@TOOL x}", "{@TOOL: x}"),
        ("{@Tool: x}", "{@TOOL: x}"),
        ("{{@TOOL: x}}", "{@TOOL: x}"),
        ("{{TOOL: x}}", "{@TOOL: x}"),
        ("{AGENT: Billing Agent}", "{@AGENT: Billing Agent}"),
        ("{@agent Billing Agent}", "{@AGENT: Billing Agent}"),
        ("${@AGENT: Billing}", "{@AGENT: Billing}"),
        ("{@TOOL:}", "{@TOOL: tool_name}"),
        ("${name}", "{name}"),
        ("${{name}}", "{{name}}"),
        ("${user.name}", "{{user.name}}"),
    ],
)
def test_wrong_reference_syntax_is_a_warning_with_the_right_form(text, suggestion):
    diagnostic = only(f"Please\n  see {text} now")
    assert diagnostic.code == "SC101"
    assert diagnostic.severity is Severity.WARNING
    assert f"`{suggestion}`" in diagnostic.message
    assert (diagnostic.line, diagnostic.column) == (2, 7)
    assert (diagnostic.start, diagnostic.end) == (13, 13 + len(text))


def test_unknown_at_reference_is_a_warning():
    diagnostic = only("{@USER: bob}")
    assert diagnostic.code == "SC101"
    assert "{@TOOL: tool_name}" in diagnostic.message


def test_wrong_syntax_stays_text():
    assert [t.kind for t in parse("{TOOL: x}").tokens] == [TokenKind.TEXT]


def test_context_is_an_error_anywhere():
    text = "Session {{x}} is\n$context.session_id and {{ $context.variables.a }}"
    diagnostics = parse(text).diagnostics
    assert [(d.code, d.severity, d.line, d.column) for d in diagnostics] == [
        ("SC103", Severity.ERROR, 2, 1),
        ("SC103", Severity.ERROR, 2, 28),
    ]
    assert "tools" in diagnostics[0].message


def test_dollar_alone_is_fine():
    assert parse("Costs $5, or $ {x} or $contextual").diagnostics == ()


def test_unclosed_double_brace_is_a_warning():
    diagnostic = only("Hello\n {{name and more")
    assert (diagnostic.code, diagnostic.severity) == ("SC102", Severity.WARNING)
    assert (diagnostic.line, diagnostic.column) == (2, 2)


def test_half_closed_static_is_a_warning():
    assert codes("Hi {{name}!") == ["SC102"]


# --- conditional tags -------------------------------------------------------------------


def test_tag_tokens_carry_conditions():
    text = '{% if tier == "gold" %}a{% elif count > 3 %}b{% else %}c{% endif %}'
    tokens = parse(text).tokens
    assert [t.kind for t in tokens] == [
        TokenKind.IF,
        TokenKind.TEXT,
        TokenKind.ELIF,
        TokenKind.TEXT,
        TokenKind.ELSE,
        TokenKind.TEXT,
        TokenKind.ENDIF,
    ]
    assert tokens[0].condition is not None
    assert tokens[0].condition.references == (("tier",),)
    assert tokens[2].condition.references == (("count",),)
    assert parse(text).diagnostics == ()


def test_nested_blocks_are_fine():
    text = "{% if a %}{% if b %}x{% else %}y{% endif %}{% elif c %}z{% endif %}"
    assert parse(text).diagnostics == ()


def test_whitespace_control_dashes_are_accepted():
    assert parse("{%- if a -%}x{%- endif -%}").diagnostics == ()


@pytest.mark.parametrize(
    ("text", "code", "column"),
    [
        ("ok\n{% if a %}never closed", "SC111", 1),
        ("ok\nx {% endif %}", "SC112", 3),
        ("ok\nx {% else %}", "SC113", 3),
        ("ok\nx {% elif a %}", "SC113", 3),
        ("ok\n{% if a %}{% else %}{% elif b %}{% endif %}", "SC114", 21),
        ("ok\n{% if a %}{% else %}{% else %}{% endif %}", "SC114", 21),
        ("ok\n{% if %}{% endif %}", "SC115", 1),
        ("ok\n{% if a == %}{% endif %}", "SC115", 1),
        ("ok\n{% if (a %}{% endif %}", "SC115", 1),
        ("ok\n{% if a b %}{% endif %}", "SC115", 1),
        ("ok\n{% elif %}", "SC115", 1),
        ("ok\n{% for x in y %}", "SC110", 1),
        ("ok\n{% %}", "SC110", 1),
        ("ok\n{% else if a %}", "SC110", 1),
        ("ok\n{% if a %}{% else a %}{% endif %}", "SC110", 11),
        ("ok\n{% if a %}{% endif a %}", "SC110", 11),
        ("ok\n50 {% off", "SC116", 4),
    ],
)
def test_malformed_tags_are_errors(text, code, column):
    diagnostics = [d for d in parse(text).diagnostics if d.code == code]
    assert len(diagnostics) == 1, parse(text).diagnostics
    assert diagnostics[0].severity is Severity.ERROR
    assert (diagnostics[0].line, diagnostics[0].column) == (2, column)


def test_structurally_wrong_tags_become_text():
    tokens = parse("a {% endif %} b").tokens
    assert [t.kind for t in tokens] == [TokenKind.TEXT]


def test_elif_suggestion():
    assert "elif" in only("{% elseif a %}").message


def test_every_code_is_documented():
    assert all(re.fullmatch(r"SC1\d\d", code) for code in CODES)
    text = (
        "${TOOL: x} {{oops\n$context {% if %}{% endif %}{% endif %}{% else %}"
        "{% if a %}{% else %}{% elif b %}{% endif %}{% bad %} {% if a %} {% x"
    )
    found = set(codes(text))
    assert found <= set(CODES)
    assert found >= {"SC101", "SC102", "SC103", "SC110", "SC111", "SC112", "SC113", "SC114"}
    assert {"SC115", "SC116"} <= set(CODES)


def test_diagnostics_are_in_text_order():
    diagnostics = parse("{% endif %} {TOOL: x} $context {{y").diagnostics
    starts = [d.start for d in diagnostics]
    assert starts == sorted(starts)
    assert len(diagnostics) == 4


def test_parse_accepts_any_string():
    for text in ["\x00{", "{%", "{{", "}}{{", "{%%}", "{% if ((((((( %}", "\ud800{x}"]:
        result = parse(text)
        assert "".join(t.raw for t in result.tokens) == text


# --- conditions ------------------------------------------------------------------


def condition(src: str) -> Condition:
    parsed = parse_condition(src)
    assert isinstance(parsed, Condition), parsed
    return parsed


@pytest.mark.parametrize(
    ("src", "expected"),
    [
        ("true", True),
        ("True and not False", True),
        ("null", False),
        ("None == null", True),
        ('tier == "gold"', True),
        ("tier == 'silver'", False),
        ('tier != "gold"', False),
        ("count > 2", True),
        ("count >= 3 and count <= 3", True),
        ("count < 3", False),
        ("1 < count < 5", True),
        ("2.5 < count", True),
        ("-1 < count", True),
        ('"gold" in tier', True),
        ('"x" not in tags', True),
        ('"vip" in tags', True),
        ('tier in ["gold", "platinum"]', True),
        ("not (count == 3 or vip)", False),
        ("vip", True),
        ("missing", False),
        ("missing == null", True),
        ("profile.address.city == 'Paris'", True),
        ("profile.address.zip", False),
        ("tags.0 == 'vip'", True),
        ("tags.9", False),
        ('channel == "telephony"', True),
        ('modality == "voice"', False),
        ('"a" < 1', False),
        ("count in 5", False),
        ("missing > 3", False),
        ("missing not in 5", False),
        ("count == 3.0", True),
        ('"a\\"b" == quote', True),
    ],
)
def test_condition_semantics(src, expected):
    values = {
        "tier": "gold",
        "count": 3,
        "tags": ["vip", "early"],
        "vip": True,
        "profile": {"address": {"city": "Paris"}},
        "quote": 'a"b',
        "channel": "ignored: the builtin wins",
    }
    assert condition(src).evaluate(values, channel="telephony", modality="text") is expected


def test_condition_references_exclude_builtins_and_literals():
    parsed = condition('a.b == 1 and (channel == "web" or c in [d, "x"]) and a.b')
    assert parsed.references == (("a", "b"), ("c",), ("d",))


@pytest.mark.parametrize(
    "src", ["", "a ==", "(a", "a b", "a not b", "1 +", "a = 1", "[1, 2", "'open", "a and"]
)
def test_condition_errors_are_returned(src):
    assert isinstance(parse_condition(src), ConditionError)


def test_deep_nesting_is_an_error_not_a_crash():
    assert isinstance(parse_condition("(" * 5000 + "a" + ")" * 5000), ConditionError)
    assert isinstance(parse_condition("not " * 5000 + "a"), ConditionError)


def test_evaluate_never_raises():
    weird = condition("a < b")
    assert weird.evaluate({"a": object(), "b": 1}) is False
    assert weird.evaluate(None) is False


@pytest.mark.parametrize(
    "text",
    ["Bonjour {{prénom}}.", "{{名前}}", '{{"a name"}}', "{{ café.prix }}", "{prénom}", "{é}"],
)
def test_a_name_a_reference_cannot_have_is_reported_not_silently_kept(text):
    result = parse(text)
    assert [d.code for d in result.diagnostics] == ["SC104"]
    assert result.diagnostics[0].start == text.index("{")
    assert all(t.kind is TokenKind.TEXT for t in result.tokens)
    # It stays in the compiled prompt exactly as written.
    assert compile_instructions(text, {}).text == text


@pytest.mark.parametrize("text", ['{"a": 1}', "{{a b}}", "{{ 3 }}", "{ prénom }"])
def test_braces_that_are_not_name_like_stay_silent(text):
    assert [d.code for d in parse(text).diagnostics if d.code == "SC104"] == []
