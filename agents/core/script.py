"""Scenario steps as a short script a designer can type, one step per line.

    user: What is my balance?
    tool: LookupBalance {"account_id": "primary"}
    agent: Your balance is 1250 EUR.
    callback: before_model

A line that does not start with a step keyword continues the previous message
(so messages may span lines); blank lines separate nothing; `#` starts a
comment line. `format_script` writes back what `parse_script` reads.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from agents.core.diagnostics import Diagnostic, Severity
from agents.core.spec import CallbackKind, StepKind, StepSpec

CODES: dict[str, str] = {
    "SC451": "A scenario step line is not understood.",
    "SC452": "A tool step's arguments are not a JSON object.",
    "SC453": "A callback step names an unknown callback kind.",
}

_LINE = re.compile(r"^(user|agent|tool|callback)\s*:\s?(.*)$", re.IGNORECASE)
_TOOL = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(.*)$", re.DOTALL)


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


def parse_script(text: str) -> ParsedScript:
    """Steps from a script; problems name their line. Never raises."""
    raw: list[tuple[int, str, list[str]]] = []  # (line number, kind, lines of body)
    problems: list[Diagnostic] = []
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = _LINE.match(stripped)
        if match:
            raw.append((number, match.group(1).lower(), [match.group(2)]))
        elif raw and raw[-1][1] in ("user", "agent", "tool"):
            raw[-1][2].append(line)
        else:
            problems.append(
                _error(
                    "SC451",
                    f"Line {number}: start a step with user:, agent:, tool: or callback: "
                    f"(got {stripped[:40]!r}).",
                    number,
                )
            )
    steps: list[StepSpec] = []
    for number, kind, body_lines in raw:
        body = "\n".join(body_lines).strip()
        if kind in ("user", "agent"):
            steps.append(StepSpec(kind=StepKind(kind), text=body))
        elif kind == "tool":
            match = _TOOL.match(body)
            if not match:
                problems.append(
                    _error("SC451", f"Line {number}: write the tool name after tool:.", number)
                )
                continue
            name, rest = match.group(1), match.group(2).strip()
            args: object = {}
            if rest:
                try:
                    args = json.loads(rest, parse_constant=_not_a_json_number)
                except json.JSONDecodeError as exc:
                    problems.append(
                        _error(
                            "SC452",
                            f"Line {number}: the arguments of {name} are not valid JSON "
                            f"({exc.msg}).",
                            number,
                        )
                    )
                    continue
            if not isinstance(args, dict):
                problems.append(
                    _error(
                        "SC452",
                        f"Line {number}: the arguments of {name} must be a JSON object, "
                        'like {"id": 1}.',
                        number,
                    )
                )
                continue
            steps.append(StepSpec(kind=StepKind.TOOL, tool=name, args=args))
        else:
            try:
                callback = CallbackKind(body.strip().lower())
            except ValueError:
                kinds = ", ".join(k.value for k in CallbackKind)
                problems.append(
                    _error(
                        "SC453",
                        f"Line {number}: '{body}' is not a callback kind ({kinds}).",
                        number,
                    )
                )
                continue
            steps.append(StepSpec(kind=StepKind.CALLBACK, callback=callback))
    return ParsedScript(tuple(steps), tuple(problems))


def format_script(steps: tuple[StepSpec, ...] | list[StepSpec]) -> str:
    lines: list[str] = []
    for step in steps:
        if step.kind in (StepKind.USER, StepKind.AGENT):
            lines.append(f"{step.kind.value}: {step.text}")
        elif step.kind is StepKind.TOOL:
            args = f" {json.dumps(step.args, ensure_ascii=False)}" if step.args else ""
            lines.append(f"tool: {step.tool}{args}")
        else:
            lines.append(f"callback: {step.callback.value if step.callback else ''}")
    return "\n".join(lines)
