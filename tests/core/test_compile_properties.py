"""Property-based tests (hypothesis) of the parser and compiler."""

from __future__ import annotations

import re
from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from agents.core.compile import compile_instructions
from agents.core.diagnostics import line_column
from agents.core.parse import _LEXER, TokenKind, parse
from agents.core.render import render_value

SOUP = st.text(alphabet="{}%@$ .:abcTOOLAGENTif\n", max_size=200)
ANY_TEXT = st.text(max_size=300)
NAMES = st.sampled_from(["a", "b", "c", "user_name", "_x", "items"])

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
VALUES = st.dictionaries(NAMES, JSON, max_size=6)


@settings(max_examples=400)
@given(text=SOUP | ANY_TEXT, values=VALUES, channel=st.sampled_from(["web", "api", "telephony"]))
def test_parse_and_compile_never_raise(text, values, channel):
    result = parse(text)
    assert all(d.line is not None and d.start is not None for d in result.diagnostics)
    compiled = compile_instructions(text, values, channel=channel)
    assert isinstance(compiled.text, str)
    for span in compiled.spans:
        assert 0 <= span.start <= span.end <= len(compiled.text)


@settings(max_examples=400)
@given(text=SOUP | ANY_TEXT)
def test_tokens_cover_the_text_contiguously(text):
    tokens = parse(text).tokens
    assert "".join(token.raw for token in tokens) == text
    offset = 0
    for token in tokens:
        assert token.start == offset and token.end > token.start
        assert text[token.start : token.end] == token.raw
        assert (token.line, token.column) == line_column(text, token.start)
        offset = token.end
    assert offset == len(text)
    for before, after in pairwise(tokens):
        assert not (before.kind is TokenKind.TEXT and after.kind is TokenKind.TEXT)


@settings(max_examples=300)
@given(text=SOUP | ANY_TEXT)
def test_diagnostic_positions_match_offsets(text):
    for diagnostic in compile_instructions(text, {}).diagnostics:
        assert diagnostic.start is not None and diagnostic.end is not None
        assert 0 <= diagnostic.start < diagnostic.end <= len(text)
        assert (diagnostic.line, diagnostic.column) == line_column(text, diagnostic.start)


@given(text=st.text().filter(lambda t: "{" not in t), values=VALUES)
def test_compile_without_references_is_identity(text, values):
    result = compile_instructions(text, values)
    assert result.text == text
    assert result.spans == ()


@given(text=(SOUP | ANY_TEXT).filter(lambda t: "{%" not in t))
def test_compile_without_values_or_tags_is_identity(text):
    assert compile_instructions(text, {}).text == text


PLAIN = st.text(max_size=15).map(lambda t: re.sub(r"[{}%$]", "", t))
STATIC = st.tuples(NAMES, st.sampled_from(["", " ", "  "]))


@settings(max_examples=300)
@given(
    pieces=st.lists(st.one_of(PLAIN, STATIC), max_size=12),
    values=VALUES,
)
def test_static_only_text_matches_a_naive_implementation(pieces, values):
    text = "".join(p if isinstance(p, str) else f"{{{{{p[1]}{p[0]}{p[1]}}}}}" for p in pieces)
    expected: list[str] = []
    rendered: list[str] = []
    for piece in pieces:
        if isinstance(piece, str):
            expected.append(piece)
            continue
        name, space = piece
        value = values.get(name)
        if value is None:
            expected.append(f"{{{{{space}{name}{space}}}}}")
        else:
            expected.append(render_value(value))
            rendered.append(render_value(value))
    result = compile_instructions(text, values)
    assert result.text == "".join(expected)
    statics = [result.text[s.start : s.end] for s in result.spans if s.kind == "static"]
    assert statics == rendered
    missing = sum(1 for p in pieces if not isinstance(p, str) and values.get(p[0]) is None)
    assert len(result.diagnostics) == missing


@settings(max_examples=300)
@given(text=(SOUP | ANY_TEXT).filter(lambda t: "%" not in t), values=VALUES)
def test_a_block_that_is_true_changes_nothing(text, values):
    """The block walker and the flat fast path agree."""
    flat = compile_instructions(text, values)
    wrapped = compile_instructions("{% if true %}\n" + text + "\n{% endif %}\n", values)
    assert wrapped.text == flat.text + "\n"
    assert [s.kind for s in wrapped.spans] == [s.kind for s in flat.spans]
    assert [d.code for d in wrapped.diagnostics] == [d.code for d in flat.diagnostics]


@settings(max_examples=200)
@given(text=(SOUP | ANY_TEXT).filter(lambda t: "%" not in t), values=VALUES)
def test_a_block_that_is_false_removes_everything(text, values):
    assert compile_instructions("{% if false %}" + text + "{% endif %}", values).text == ""


REFERENCE_LEXER = re.compile(
    r"(\{(?:\{[^{}]*\}\}|%(?:[^%{\n]|%(?!\})|\{(?!%))*%\}|%|\{(?!\{)|[^{}]*\}))"
)


@settings(max_examples=500)
@given(text=SOUP | ANY_TEXT)
def test_the_tuned_lexer_splits_like_the_plain_one(text):
    assert _LEXER.split(text) == REFERENCE_LEXER.split(text)
