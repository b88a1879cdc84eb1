"""What the host learns from an answer's text, and what a simulation's call is sent back
(issue 31, docs/benchmarks/evaluate.md): an answer whose only float is its own
``duration_ms`` is *plain* (JSON data of the exact types, no float: the simulation skips
its walks); a call made with ``state_back=False`` gets its writes without a copy of the
whole state; the random seed is what it was, byte for byte."""

from __future__ import annotations

import hashlib
import json
import random

import pytest

from agents.sandbox import open_session
from agents.sandbox.answers import loads_answer


@pytest.mark.parametrize(
    ("text", "plain"),
    [
        (b'{"duration_ms": 1.5, "writes": [["sm", {"n": 1, "ok": true, "x": null}]]}', True),
        (b'{"duration_ms": null, "writes": [["n", 2]]}', True),
        (b'{"duration_ms": 1.5, "writes": [["n", 1.0]]}', False),
        # A child that puts a float anywhere else (or twice) is not believed.
        (b'{"duration_ms": 2, "return_value": 0.5}', False),
        (b'{"duration_ms": 1.5, "duration_ms": 2.5}', False),
        (b'{"writes": [["n", 1e999]]}', False),
        (b"[1.5]", False),
    ],
)
def test_an_answer_is_plain_when_its_only_float_is_its_duration(text, plain):
    value, found = loads_answer(text)
    assert value == json.loads(text)
    assert found is plain


TOOL = (
    "def t(tool_context):\n"
    "    tool_context.state['sm']['seen'].append(1)\n"  # a change in place
    "    tool_context.state['n'] = tool_context.state['n'] + 1\n"
)


def test_a_call_can_leave_the_state_copy_out_of_its_answer():
    given = {"n": 1, "sm": {"seen": []}}
    with open_session() as session:
        full = session.run(TOOL, entry="t", kind="tool", state=given)
        lean = session.run(TOOL, entry="t", kind="tool", state=given, state_back=False)
    assert full.ok and lean.ok, (full.error, lean.error)
    assert full.writes == lean.writes == (("n", 2), ("sm", {"seen": [1]}))
    assert full.state == {"n": 2, "sm": {"seen": [1]}}
    assert lean.state == given  # not sent back: the caller reads the writes
    assert full.plain and lean.plain
    floats = "def t(tool_context):\n    tool_context.state['x'] = 0.5\n"
    with open_session() as session:
        assert not session.run(floats, entry="t", kind="tool", state={}).plain


def test_the_random_seed_is_the_calls_whole_input_encoded_once():
    """The seed's text is put together from each state value's own encoding; it must be the
    bytes of the whole input encoded at once, as before (a replay draws the same values)."""
    code = "import random\n\ndef t(tool_context, k):\n    return random.random()\n"
    state = {"b": {"z": 1, "a": [True, None, "é"]}, "a": 2.5, "c": "\u2028"}
    args = {"k": {"y": 1, "x": 2}}
    with open_session() as session:
        drawn = session.run(code, entry="t", kind="tool", args=args, state=state)
    assert drawn.ok, drawn.error
    text = json.dumps(["tool", "t", args, state], sort_keys=True, default=repr, ensure_ascii=True)
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    assert drawn.return_value == random.Random(seed).random()
