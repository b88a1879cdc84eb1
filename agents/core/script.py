"""Scenario steps as a short script a designer can type, one step per line.

    variables: {"event_data": {"party_size": 4}}
    user: What is my balance?
    tool: LookupBalance {"account_id": "primary"}
    expect state: {"current_account_balance": 1250}
    agent: Your balance is 1250 EUR.
    callback: before_model

Steps: ``user:``, ``agent:``, ``tool: Name {args}``, ``callback: kind``. A user input may
also set session variables (``variables: {...}``, CX's ``userInput.variables``) and carry
an event (``event: welcome``): ``variables:`` and ``event:`` lines belong to the ``user:``
line right after them (without one, they are an input of their own, with no text).

Expectations (CX's golden expectations; ``agents.core.evaluate`` checks them), each with
an optional note in brackets (``expect state [Check_Total]: {...}``):

    expect state: {"cart_total": 39}            the variables at the end of the turn
    expect call: LookupBalance {"id": "p"}      the scripted model calls the tool (it runs);
    expect call: LookupBalance                  without arguments the model chooses them
    expect response: LookupBalance {"ok": true} the tool's response in this turn
    expect no calls                             no tool is called in this turn
    expect transfer: Billing Helper             the agent hands over to a sub-agent
    expect agent: Your balance is 1250 EUR.     the reply (the scripted one; needs a model)
    mock: LookupBalance {"balance": 0}          the next call of the tool answers this

A line that does not start with a step keyword continues the previous message or JSON
(so they may span lines); blank lines separate nothing; `#` starts a comment line.
`format_script` writes back what `parse_script` reads.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from agents.core import codes, limits
from agents.core.diagnostics import Diagnostic, Message, Severity
from agents.core.form_text import explain_json_error
from agents.core.spec import CallbackKind, ExpectationSpec, ExpectKind, StepKind, StepSpec

CODES: dict[str, str] = codes.section("script")

_LINE = re.compile(r"^(user|agent|tool|callback|variables|event)\s*:\s?(.*)$", re.IGNORECASE)
_EXPECT = re.compile(
    r"^(?:expect\s+(no\s+calls|state|call|response|transfer|agent)|(mock))\s*"
    r"(?:\[([^\]\n]*)\])?\s*(?::\s?(.*))?$",
    re.IGNORECASE | re.DOTALL,
)
_TOOL = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(.*)$", re.DOTALL)
_CONTINUED = frozenset({"user", "agent", "tool", "variables", "expect"})
# The steps whose later lines continue JSON: there, `word: …` at a line's start is never
# JSON (a key is quoted) but a step whose keyword is misspelled (`agnet: hi`).
_JSON_CONTINUED = frozenset({"tool", "variables", "expect"})
_BARE_KEY = re.compile(r"[A-Za-z_][\w ]*:")


@dataclass(frozen=True, slots=True)
class ParsedScript:
    steps: tuple[StepSpec, ...]
    diagnostics: tuple[Diagnostic, ...]


def _not_a_json_number(name: str) -> object:
    raise json.JSONDecodeError(f"{name} is not a JSON number", name, 0)


def _error(code: str, message: str, line: int) -> Diagnostic:
    return Diagnostic(
        code=code, severity=Severity.ERROR, message=message, line=line, column=1, field="steps"
    )


def _json(text: str) -> Any:
    """The JSON in `text`; nested more than the native import allows (SC502's limit) is
    refused like malformed JSON, so no step holds a value that simulate and export cannot
    handle."""
    try:
        value = json.loads(text, parse_constant=_not_a_json_number)
    except RecursionError:
        value = None
        too_deep = True
    else:
        too_deep = limits.json_too_deep(value)
    if too_deep:
        raise json.JSONDecodeError(limits.too_deep_message(), text, 0)
    return value


class _Reader:
    def __init__(self) -> None:
        self.steps: list[StepSpec] = []
        self.problems: list[Diagnostic] = []
        # A user input being gathered: variables and event lines wait for their user: line.
        self.pending_variables: dict[str, Any] = {}
        self.pending_event = ""
        self.pending = False

    def flush_input(self) -> None:
        if self.pending:
            self.steps.append(
                StepSpec(
                    kind=StepKind.USER,
                    variables=self.pending_variables,
                    event=self.pending_event,
                )
            )
        self.pending, self.pending_variables, self.pending_event = False, {}, ""

    def object_body(self, rest: str, what: str, number: int, code: str) -> dict | None:
        try:
            value = _json(rest) if rest else {}
        except json.JSONDecodeError as exc:
            self.problems.append(
                _error(
                    code,
                    Message(
                        "Line %(number)s: %(what)s is not valid JSON (%(msg)s).",
                        number=number,
                        what=what,
                        msg=explain_json_error(exc),
                    ),
                    number,
                )
            )
            return None
        if not isinstance(value, dict):
            self.problems.append(
                _error(
                    code,
                    Message(
                        'Line %(number)s: %(what)s must be a JSON object, like {"id": 1}.',
                        number=number,
                        what=what,
                    ),
                    number,
                )
            )
            return None
        return value

    def add(self, number: int, kind: str, body: str, head: tuple[str, str]) -> None:
        if kind == "variables":
            values = self.object_body(body, Message("the session variables"), number, "SC454")
            if values is None:
                return
            if self.pending and (self.pending_variables or self.pending_event):
                self.flush_input()
            self.pending, self.pending_variables = True, values
            return
        if kind == "event":
            if self.pending and self.pending_event:
                self.flush_input()
            self.pending, self.pending_event = True, body.strip()
            return
        if kind == "user":
            self.steps.append(
                StepSpec(
                    kind=StepKind.USER,
                    text=body,
                    variables=self.pending_variables,
                    event=self.pending_event,
                )
            )
            self.pending, self.pending_variables, self.pending_event = False, {}, ""
            return
        self.flush_input()
        if kind == "agent":
            self.steps.append(StepSpec(kind=StepKind.AGENT, text=body))
        elif kind == "tool":
            match = _TOOL.match(body)
            if not match:
                self.problems.append(
                    _error(
                        "SC451",
                        Message("Line %(number)s: write the tool name after tool:.", number=number),
                        number,
                    )
                )
                return
            name, rest = match.group(1), match.group(2).strip()
            args = self.object_body(
                rest, Message("the arguments of %(name)s", name=name), number, "SC452"
            )
            if args is not None:
                self.steps.append(StepSpec(kind=StepKind.TOOL, tool=name, args=args))
        elif kind == "callback":
            try:
                callback = CallbackKind(body.strip().lower())
            except ValueError:
                kinds = ", ".join(k.value for k in CallbackKind)
                self.problems.append(
                    _error(
                        "SC453",
                        Message(
                            "Line %(number)s: '%(body)s' is not a callback kind (%(kinds)s).",
                            number=number,
                            body=body,
                            kinds=kinds,
                        ),
                        number,
                    )
                )
                return
            self.steps.append(StepSpec(kind=StepKind.CALLBACK, callback=callback))
        else:
            expectation = self.expectation(number, head, body)
            if expectation is not None:
                self.steps.append(StepSpec(kind=StepKind.EXPECT, expectation=expectation))

    def expectation(self, number: int, head: tuple[str, str], body: str) -> ExpectationSpec | None:
        word, note = head
        kind = ExpectKind.MOCK if word == "mock" else ExpectKind(" ".join(word.split()))
        label = "mock" if kind is ExpectKind.MOCK else f"expect {kind.value}"

        def bad(message: str) -> None:
            self.problems.append(
                _error(
                    "SC454",
                    Message(
                        "Line %(number)s: %(label)s: %(message)s",
                        number=number,
                        label=label,
                        message=message,
                    ),
                    number,
                )
            )

        if kind is ExpectKind.NO_CALLS:
            if body:
                bad(Message("takes nothing after it."))
                return None
            return ExpectationSpec(kind, note=note)
        if kind is ExpectKind.AGENT:
            return ExpectationSpec(kind, value=body, note=note)
        if kind is ExpectKind.TRANSFER:
            if not body:
                bad(Message("name the agent, like expect transfer: Billing Helper."))
                return None
            return ExpectationSpec(kind, agent=body, note=note)
        if kind is ExpectKind.STATE:
            try:
                value = _json(body)
            except json.JSONDecodeError as exc:
                bad(
                    Message(
                        'write the variables as a JSON object, like {"total": 3} (%(msg)s).',
                        msg=explain_json_error(exc),
                    )
                )
                return None
            if not isinstance(value, dict):
                bad(Message('write the variables as a JSON object, like {"total": 3}.'))
                return None
            return ExpectationSpec(kind, value=value, note=note)
        match = _TOOL.match(body)
        if not match:
            bad(Message("write the tool name first."))
            return None
        name, rest = match.group(1), match.group(2).strip()
        if kind is ExpectKind.CALL and not rest:
            return ExpectationSpec(kind, tool=name, value=None, note=note)
        if not rest:
            bad(Message("write the response of %(name)s as JSON after its name.", name=name))
            return None
        try:
            value = _json(rest)
        except json.JSONDecodeError as exc:
            bad(
                Message(
                    "what follows %(name)s is not valid JSON (%(msg)s).",
                    name=name,
                    msg=explain_json_error(exc),
                )
            )
            return None
        if kind is ExpectKind.CALL and not isinstance(value, dict):
            bad(
                Message(
                    'the arguments of %(name)s must be a JSON object, like {"id": 1}.', name=name
                )
            )
            return None
        return ExpectationSpec(kind, tool=name, value=value, note=note)


def parse_script(text: str) -> ParsedScript:
    """Steps from a script; problems name their line. Never raises."""
    # (line number, kind, lines of body, (expect word, note))
    raw: list[tuple[int, str, list[str], tuple[str, str]]] = []
    problems: list[Diagnostic] = []
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = _LINE.match(stripped)
        expect = None if match else _EXPECT.match(stripped)
        if match:
            raw.append((number, match.group(1).lower(), [match.group(2)], ("", "")))
        elif expect:
            word = (expect.group(1) or expect.group(2)).lower()
            raw.append((number, "expect", [expect.group(4) or ""], (word, expect.group(3) or "")))
        elif (
            raw
            and raw[-1][1] in _CONTINUED
            and not (raw[-1][1] in _JSON_CONTINUED and _BARE_KEY.match(stripped))
        ):
            raw[-1][2].append(line)
        else:
            problems.append(
                _error(
                    "SC451",
                    Message(
                        "Line %(number)s: start a step with user:, agent:, tool:, "
                        "callback:, variables:, event:, expect … or mock: (got "
                        "%(stripped)s).",
                        number=number,
                        stripped=repr(stripped[:40]),
                    ),
                    number,
                )
            )
    reader = _Reader()
    for number, kind, body_lines, head in raw:
        reader.add(number, kind, "\n".join(body_lines).strip(), head)
    reader.flush_input()
    return ParsedScript(tuple(reader.steps), tuple(problems + reader.problems))


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def format_expectation(expectation: ExpectationSpec) -> str:
    """One expectation as its script line."""
    kind = expectation.kind
    note = f" [{expectation.note}]" if expectation.note else ""
    head = f"mock{note}" if kind is ExpectKind.MOCK else f"expect {kind.value}{note}"
    if kind is ExpectKind.NO_CALLS:
        return head
    if kind is ExpectKind.AGENT:
        return f"{head}: {expectation.value or ''}"
    if kind is ExpectKind.TRANSFER:
        return f"{head}: {expectation.agent}"
    if kind is ExpectKind.STATE:
        return f"{head}: {_dump(expectation.value if expectation.value is not None else {})}"
    if kind is ExpectKind.CALL and expectation.value is None:
        return f"{head}: {expectation.tool}"
    return f"{head}: {expectation.tool} {_dump(expectation.value)}"


def format_script(steps: tuple[StepSpec, ...] | list[StepSpec]) -> str:
    lines: list[str] = []
    for step in steps:
        if step.kind is StepKind.USER:
            if step.variables:
                lines.append(f"variables: {_dump(step.variables)}")
            if step.event:
                lines.append(f"event: {step.event}")
            lines.append(f"user: {step.text}")
        elif step.kind is StepKind.AGENT:
            lines.append(f"agent: {step.text}")
        elif step.kind is StepKind.TOOL:
            args = f" {_dump(step.args)}" if step.args else ""
            lines.append(f"tool: {step.tool}{args}")
        elif step.kind is StepKind.EXPECT and step.expectation is not None:
            lines.append(format_expectation(step.expectation))
        elif step.kind is StepKind.CALLBACK:
            lines.append(f"callback: {step.callback.value if step.callback else ''}")
    return "\n".join(lines)
