"""Rewriting references after a rename (agents.core.rename): examples and a property."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.core.parse import TokenKind, parse
from agents.core.rename import RenameKind, rename_references

KIND_OF = {
    RenameKind.VARIABLE: (TokenKind.STATIC, TokenKind.DYNAMIC),
    RenameKind.TOOL: (TokenKind.TOOL,),
    RenameKind.AGENT: (TokenKind.AGENT,),
}


@pytest.mark.parametrize(
    ("text", "kind", "old", "new", "expected"),
    [
        ("{@AGENT: A}", RenameKind.AGENT, "A", "Billing", "{@AGENT: Billing}"),
        ("{@TOOL: TOOL}", RenameKind.TOOL, "TOOL", "Lookup", "{@TOOL: Lookup}"),
        ("{@TOOL:  TOOL }", RenameKind.TOOL, "TOOL", "Lookup", "{@TOOL:  Lookup }"),
        ("{{ a.b }} {a} {{ab}}", RenameKind.VARIABLE, "a", "x", "{{ x.b }} {x} {{ab}}"),
        (
            '{% if a == "a" %}a{% endif %}',
            RenameKind.VARIABLE,
            "a",
            "z",
            '{% if z == "a" %}a{% endif %}',
        ),
        (
            "{@AGENT: Sales Team} {@AGENT: Sales}",
            RenameKind.AGENT,
            "Sales",
            "S",
            "{@AGENT: Sales Team} {@AGENT: S}",
        ),
        ("TOOL {@TOOL: other}", RenameKind.TOOL, "TOOL", "x", "TOOL {@TOOL: other}"),
    ],
)
def test_examples(text, kind, old, new, expected):
    assert rename_references(text, kind, old, new) == expected


NAMES = st.sampled_from(["a", "b", "A", "TOOL", "AGENT", "x_1", "if", "web"])
PIECE = st.one_of(
    NAMES.map(lambda n: f"{{{{{n}}}}}"),
    NAMES.map(lambda n: f"{{{n}}}"),
    NAMES.map(lambda n: f"{{{{ {n}.k }}}}"),
    NAMES.map(lambda n: f"{{@TOOL: {n}}}"),
    NAMES.map(lambda n: f"{{@AGENT:{n}}}"),
    st.text(alphabet="ab TOOLAGENT{}@:.\n", max_size=12),
)
TEXTS = st.lists(PIECE, max_size=12).map("".join)


def _names(text: str, kind: RenameKind) -> list[str]:
    kinds = KIND_OF[kind]
    return [
        t.path[0] if t.kind in (TokenKind.STATIC, TokenKind.DYNAMIC) else t.name
        for t in parse(text).tokens
        if t.kind in kinds
    ]


def _outside(text: str, kind: RenameKind) -> str:
    """The text with every reference of `kind` removed: what a rename must not touch."""
    out, position = [], 0
    for token in parse(text).tokens:
        if token.kind in KIND_OF[kind]:
            out.append(text[position : token.start])
            position = token.end
    out.append(text[position:])
    return "\x00".join(out)


@settings(max_examples=300)
@given(
    text=TEXTS,
    kind=st.sampled_from(list(RenameKind)),
    old=NAMES,
    new=st.sampled_from(["renamed", "B2", "other_name"]),
)
def test_after_a_rename_references_name_the_new_name_and_nothing_else_changed(text, kind, old, new):
    renamed = rename_references(text, kind, old, new)
    before = _names(text, kind)
    after = _names(renamed, kind)
    assert after == [new if name == old else name for name in before]
    assert _outside(renamed, kind) == _outside(text, kind)


def test_condition_strings_are_not_renamed():
    text = "{% if a == 'a' and b.a %}yes{% endif %}"
    assert rename_references(text, RenameKind.VARIABLE, "a", "q") == (
        "{% if q == 'a' and b.a %}yes{% endif %}"
    )
    assert re.search("q", rename_references(text, RenameKind.VARIABLE, "b", "q"))


def test_state_accesses_in_code_follow_a_rename_and_nothing_else_does():
    from agents.core.rename import rename_state_in_code

    code = (
        "def T(x):\n"
        '    """old is a word."""\n'
        "    s = tool_context.state\n"
        "    context.state[\"old\"] = context.state.get('old', 0) + 1\n"
        '    if "old" in context.state:\n'
        '        del context.state["old"]\n'
        "    s[\"old\"] = 'old'\n"
        '    context.state.update({"old": 2, "other": 3})\n'
        "    set_variable(\"old\", 1); context.set_variable('old', 2)\n"
        '    print("old", x["old"], context.state["older"])\n'
        '    return {"old": 1}\n'
    )
    renamed = rename_state_in_code(code, "old", "fresh")
    assert renamed == (
        "def T(x):\n"
        '    """old is a word."""\n'
        "    s = tool_context.state\n"
        "    context.state[\"fresh\"] = context.state.get('fresh', 0) + 1\n"
        '    if "fresh" in context.state:\n'
        '        del context.state["fresh"]\n'
        "    s[\"fresh\"] = 'old'\n"
        '    context.state.update({"fresh": 2, "other": 3})\n'
        "    set_variable(\"fresh\", 1); context.set_variable('fresh', 2)\n"
        '    print("old", x["old"], context.state["older"])\n'
        '    return {"old": 1}\n'
    )
    assert rename_state_in_code("def broken(:\n  context.state['old']", "old", "x").endswith(
        "['old']"
    )
    # Non-ASCII text before the literal on its line: offsets are counted right.
    assert rename_state_in_code('é = 1; context.state["old"] = é', "old", "n") == (
        'é = 1; context.state["n"] = é'
    )
