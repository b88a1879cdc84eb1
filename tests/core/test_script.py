"""The step script with expectations, session variables, events and mocks (issue #11)."""

from __future__ import annotations

import string

from hypothesis import given, settings
from hypothesis import strategies as st

from agents.core.script import format_script, parse_script
from agents.core.spec import CallbackKind, ExpectationSpec, ExpectKind, StepKind, StepSpec

E = ExpectKind


def expect(kind: ExpectKind, **fields) -> StepSpec:
    return StepSpec(StepKind.EXPECT, expectation=ExpectationSpec(kind, **fields))


def test_every_expectation_line_reads_as_written() -> None:
    script = "\n".join(
        [
            'variables: {"event_data": {"party_size": 4}}',
            "event: welcome",
            "user: I need a table",
            'expect call [Check_Called]: set_party {"party_size": 6.0}',
            "expect call: set_phone",
            'expect state [Check_Pending]: {"sm": {"pending": {"party_size": 6}}}',
            'expect response: set_party {"ok": true}',
            "expect no calls",
            "expect transfer: Billing Helper",
            "expect agent [Greets]: Welcome to Bella Notte!",
            'mock: find_times {"times": ["18:00"]}',
        ]
    )
    parsed = parse_script(script)
    assert parsed.diagnostics == ()
    assert parsed.steps == (
        StepSpec(
            StepKind.USER,
            text="I need a table",
            variables={"event_data": {"party_size": 4}},
            event="welcome",
        ),
        expect(E.CALL, tool="set_party", value={"party_size": 6.0}, note="Check_Called"),
        expect(E.CALL, tool="set_phone", value=None),
        expect(E.STATE, value={"sm": {"pending": {"party_size": 6}}}, note="Check_Pending"),
        expect(E.RESPONSE, tool="set_party", value={"ok": True}),
        expect(E.NO_CALLS),
        expect(E.TRANSFER, agent="Billing Helper"),
        expect(E.AGENT, value="Welcome to Bella Notte!", note="Greets"),
        expect(E.MOCK, tool="find_times", value={"times": ["18:00"]}),
    )
    assert format_script(parsed.steps) == script


def test_a_call_with_empty_arguments_differs_from_one_the_model_fills() -> None:
    with_empty = parse_script("expect call: confirm {}").steps[0].expectation
    chosen = parse_script("expect call: confirm").steps[0].expectation
    assert with_empty is not None and with_empty.value == {}
    assert chosen is not None and chosen.value is None


def test_variables_without_a_user_line_are_an_input_of_their_own() -> None:
    parsed = parse_script('variables: {"a": 1}\nexpect state: {"a": 1}\nuser: hi')
    assert [s.kind for s in parsed.steps] == [StepKind.USER, StepKind.EXPECT, StepKind.USER]
    assert parsed.steps[0] == StepSpec(StepKind.USER, variables={"a": 1})


def test_json_may_span_lines() -> None:
    parsed = parse_script('expect state: {\n  "a": 1,\n  "b": [1, 2]\n}')
    assert parsed.diagnostics == ()
    assert parsed.steps[0].expectation == ExpectationSpec(E.STATE, value={"a": 1, "b": [1, 2]})


def test_bad_expectations_name_their_line() -> None:
    parsed = parse_script(
        "user: hi\nexpect state: [1]\nexpect no calls: x\nexpect response: T\n"
        "expect transfer:\nexpect call: T [1]\nvariables: 3\nexpect state: {nope"
    )
    assert [(d.code, d.line) for d in parsed.diagnostics] == [
        ("SC454", 2),
        ("SC454", 3),
        ("SC454", 4),
        ("SC454", 5),
        ("SC454", 6),
        ("SC454", 7),
        ("SC454", 8),
    ]
    assert "JSON object" in parsed.diagnostics[0].message
    assert [s.kind for s in parsed.steps] == [StepKind.USER]


# ----------------------------------------------------------------------- round trip

_WORD = st.text(string.ascii_letters + string.digits + "_", min_size=1, max_size=8)
_NAME = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True)
# A message line: no leading/trailing space, nothing a keyword could take for its own.
_TEXT = (
    st.text(string.ascii_letters + string.digits + " .,!?'éü€", min_size=1, max_size=30)
    .map(str.strip)
    .filter(lambda t: t and not t.startswith("#"))
)
_NOTE = st.text(string.ascii_letters + string.digits + "_ -", max_size=20).map(str.strip)
_SCALAR = (
    st.none()
    | st.booleans()
    | st.integers(-1000, 1000)
    | _TEXT
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
)
_JSON = st.recursive(
    _SCALAR,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_WORD, inner, max_size=3),
    max_leaves=8,
)
_OBJECT = st.dictionaries(_WORD, _JSON, max_size=3)


@st.composite
def _step(draw: st.DrawFn) -> StepSpec:
    kind = draw(st.sampled_from(["user", "agent", "tool", "callback", "expect"]))
    if kind == "user":
        variables = draw(_OBJECT)
        event = draw(st.just("") | _WORD)
        text = draw(_TEXT) if draw(st.booleans()) or not (variables or event) else ""
        return StepSpec(StepKind.USER, text=text, variables=variables, event=event)
    if kind == "agent":
        return StepSpec(StepKind.AGENT, text=draw(_TEXT))
    if kind == "tool":
        return StepSpec(StepKind.TOOL, tool=draw(_NAME), args=draw(_OBJECT))
    if kind == "callback":
        return StepSpec(StepKind.CALLBACK, callback=draw(st.sampled_from(list(CallbackKind))))
    which = draw(st.sampled_from(list(ExpectKind)))
    note = draw(_NOTE)
    if which is E.STATE:
        return expect(which, value=draw(_OBJECT), note=note)
    if which is E.CALL:
        return expect(which, tool=draw(_NAME), value=draw(st.none() | _OBJECT), note=note)
    if which in (E.RESPONSE, E.MOCK):
        return expect(which, tool=draw(_NAME), value=draw(_JSON), note=note)
    if which is E.TRANSFER:
        return expect(which, agent=draw(_TEXT), note=note)
    if which is E.AGENT:
        return expect(which, value=draw(_TEXT), note=note)
    return expect(which, note=note)


@settings(max_examples=300)
@given(st.lists(_step(), max_size=8))
def test_format_then_parse_gives_back_the_steps(steps: list[StepSpec]) -> None:
    parsed = parse_script(format_script(steps))
    assert parsed.diagnostics == ()
    assert parsed.steps == tuple(steps)
    assert format_script(parsed.steps) == format_script(steps)


def test_a_misspelled_step_after_json_is_named_on_its_own_line():
    # Read as more of the JSON above, `agnet: hi there` used to give "Line 2: … (Extra
    # data)" and never name the misspelled step (a tester's find).
    parsed = parse_script('user: hi\nexpect state: {"balance": 5}\nagnet: hi there\n')
    assert [(d.code, d.line) for d in parsed.diagnostics] == [("SC451", 3)]


def test_a_text_step_still_continues_with_a_line_that_has_a_colon():
    parsed = parse_script("user: hi\nagent: Two things.\nNote: keep it short.\n")
    assert parsed.diagnostics == ()
