"""A finished run as JSON data and back: what a job stores so that a page draws the run
without running it again (no model called, no tool code run to show a result).

``result_data(result)`` / ``result_from_data(data)``: a ``SimulationResult`` (turns, events,
model calls, state, diagnostics); ``evaluation_data`` / ``evaluation_from_data``: a
``ScenarioEvaluation``. Messages are kept as their template and parameters
(``message_data``), so a reader sees them in their own language; values that are not JSON
are kept as their text (``render_value``), as the recorded run keeps them.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from agents.core.diagnostics import Diagnostic, Severity, message_data, message_from_data
from agents.core.evaluate import ExpectationResult, ScenarioEvaluation
from agents.core.http import HttpRequest
from agents.core.render import render_value
from agents.core.simulation.results import Event, ModelCall, SimulationResult, TurnResult

__all__ = ["evaluation_data", "evaluation_from_data", "result_data", "result_from_data"]


def json_safe(value: Any) -> Any:
    """`value` as JSON data (what JSON cannot hold becomes text)."""
    try:
        return json.loads(json.dumps(value, default=str))
    except (TypeError, ValueError):
        return render_value(value)


def _message(data: Any) -> str:
    return message_from_data(data, str(data) if isinstance(data, str) else "")


def _diagnostic_data(diagnostic: Diagnostic) -> dict[str, Any]:
    data = dataclasses.asdict(diagnostic)
    data["severity"] = str(diagnostic.severity)
    data["message"] = message_data(diagnostic.message)
    return data


def _diagnostic(data: dict[str, Any]) -> Diagnostic:
    return Diagnostic(
        **{**data, "severity": Severity(data["severity"]), "message": _message(data["message"])}
    )


def _event_data(event: Event) -> dict[str, Any]:
    return {
        "index": event.index,
        "turn": event.turn,
        "kind": event.kind,
        "text": event.text,
        "tokens": event.tokens,
        "source": event.source,
        "variable": event.variable,
        "value": json_safe(event.value),
        "error": None if event.error is None else _diagnostic_data(event.error),
        "label": message_data(event.label),
        "step": event.step,
        "dropped_at_turn": event.dropped_at_turn,
        "model_call": event.model_call,
        "instructions_changed": list(event.instructions_changed),
        "author": event.author,
    }


def _event(data: dict[str, Any]) -> Event:
    return Event(
        **{
            **data,
            "error": None if data["error"] is None else _diagnostic(data["error"]),
            "label": _message(data["label"]),
            "instructions_changed": tuple(data["instructions_changed"]),
        }
    )


def _call_data(call: ModelCall) -> dict[str, Any]:
    data = {f.name: getattr(call, f.name) for f in dataclasses.fields(call)}
    for name in ("changed", "history", "hidden_tools"):
        data[name] = list(data[name])
    for name in ("scripted", "answer"):
        data[name] = [json_safe(part) for part in data[name]]
    return data


def _call(data: dict[str, Any]) -> ModelCall:
    tuples = ("changed", "scripted", "answer", "history", "hidden_tools")
    return ModelCall(**{k: tuple(v) if k in tuples else v for k, v in data.items()})


def _turn_data(turn: TurnResult) -> dict[str, Any]:
    return {
        "index": turn.index,
        "events": list(turn.events),
        "state_after": json_safe(turn.state_after),
        "changed": list(turn.changed),
        "builtins": json_safe(turn.builtins),
        "model_input": list(turn.model_input),
        "tokens_used": turn.tokens_used,
        "dropped": list(turn.dropped),
        "warnings": [_diagnostic_data(d) for d in turn.warnings],
        "http": [dataclasses.asdict(h) for h in turn.http],
        "instructions": turn.instructions,
    }


def _turn(data: dict[str, Any]) -> TurnResult:
    return TurnResult(
        index=data["index"],
        events=tuple(data["events"]),
        state_after=data["state_after"],
        changed=tuple(data["changed"]),
        builtins=data["builtins"],
        model_input=tuple(data["model_input"]),
        tokens_used=data["tokens_used"],
        dropped=tuple(data["dropped"]),
        warnings=tuple(_diagnostic(d) for d in data["warnings"]),
        http=tuple(
            HttpRequest(**{**h, "headers": tuple(tuple(pair) for pair in h["headers"])})
            for h in data["http"]
        ),
        instructions=data["instructions"],
    )


def result_data(result: SimulationResult) -> dict[str, Any]:
    """`result` as JSON data (`result_from_data` reads it back)."""
    return {
        "instructions": result.instructions,
        "instruction_tokens": result.instruction_tokens,
        "turns": [_turn_data(t) for t in result.turns],
        "events": [_event_data(e) for e in result.events],
        "final_state": json_safe(result.final_state),
        "diagnostics": [_diagnostic_data(d) for d in result.diagnostics],
        "instruction_diagnostics": [_diagnostic_data(d) for d in result.instruction_diagnostics],
        "model_calls": [_call_data(c) for c in result.model_calls],
    }


def result_from_data(data: dict[str, Any]) -> SimulationResult:
    """The result `result_data` wrote."""
    return SimulationResult(
        instructions=data["instructions"],
        instruction_tokens=data["instruction_tokens"],
        turns=tuple(_turn(t) for t in data["turns"]),
        events=tuple(_event(e) for e in data["events"]),
        final_state=data["final_state"],
        diagnostics=tuple(_diagnostic(d) for d in data["diagnostics"]),
        instruction_diagnostics=tuple(_diagnostic(d) for d in data["instruction_diagnostics"]),
        model_calls=tuple(_call(c) for c in data["model_calls"]),
    )


def evaluation_data(evaluation: ScenarioEvaluation) -> dict[str, Any]:
    """`evaluation` as JSON data (`evaluation_from_data` reads it back)."""
    results = []
    for r in evaluation.results:
        row = dataclasses.asdict(r)
        row["message"] = message_data(r.message)
        row["differences"] = [message_data(d) for d in r.differences]
        row["expected"], row["actual"] = json_safe(r.expected), json_safe(r.actual)
        results.append(row)
    return {
        "results": results,
        "status": evaluation.status,
        "passed": evaluation.passed,
        "failed": evaluation.failed,
        "needs_model": evaluation.needs_model,
        "stopped": evaluation.stopped,
        "notes": [message_data(n) for n in evaluation.notes],
    }


def evaluation_from_data(data: dict[str, Any]) -> ScenarioEvaluation:
    """The evaluation `evaluation_data` wrote."""
    known = {f.name for f in dataclasses.fields(ExpectationResult)}
    results = tuple(
        ExpectationResult(
            **{
                **{k: v for k, v in row.items() if k in known},
                "message": _message(row["message"]),
                "differences": tuple(_message(d) for d in row.get("differences", ())),
            }
        )
        for row in data["results"]
    )
    return ScenarioEvaluation(
        results=results,
        status=data["status"],
        passed=data["passed"],
        failed=data["failed"],
        needs_model=data["needs_model"],
        stopped=data.get("stopped", 0),
        notes=tuple(_message(n) for n in data.get("notes", ())),
    )
