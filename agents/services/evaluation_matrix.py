"""The matrix of an evaluation run: goldens as rows, (model, version) as columns.

A Run all's pieces (``agents.services.evaluation_runs``) each give an outcome; here they
become one matrix (``matrix_of``: each cell its repetitions' marks, pass rate, flakiness,
cost, tokens and latency; ``revisions_of``: the app revisions the goldens ran at), which
the job's result carries (``annotate``), the history keeps (``evaluation_history``) and the
pages and the API compare (``compare``) and export (``matrix_csv``).
"""

from __future__ import annotations

import csv
import io
import statistics
from collections.abc import Iterable
from typing import Any

from agents.core.diagnostics import Message
from agents.services.common import ServiceError, error
from agents.services.evaluation_runs import Column, golden_name


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    if len(ordered) == 1:
        return round(ordered[0], 3)
    return round(statistics.quantiles(ordered, n=100, method="inclusive")[int(q) - 1], 3)


def _first_failure(outcome: dict[str, Any]) -> dict[str, Any] | None:
    for result in outcome.get("results") or []:
        if result.get("status") in ("failed", "stopped"):
            return {
                "step": result.get("step"),
                "kind": result.get("kind"),
                "message": result.get("message"),
                # How the reader's language says it (``agents.i18n.localized_data``).
                **({"i18n": result["i18n"]} if "i18n" in result else {}),
            }
    if outcome.get("error"):
        kept = (outcome.get("i18n") or {}).get("error")
        return {
            "step": None,
            "kind": "error",
            "message": outcome["error"],
            **({"i18n": {"message": kept}} if kept else {}),
        }
    return None


def _ran_seconds(outcomes: Any) -> list[float]:
    """The seconds of the pieces that ran: a piece cancelled or gone before its turn took
    no time worth a latency figure."""
    return [
        float(o["seconds"])
        for o in outcomes
        if o.get("seconds") is not None and o.get("status") not in ("cancelled", "error")
    ]


def _cell(outcomes: list[dict[str, Any]], threshold: float) -> dict[str, Any]:
    outcomes = sorted(outcomes, key=lambda o: o["repetition"])
    runs = [o.get("status", "error") for o in outcomes]
    judged = [s for s in runs if s in ("passed", "failed", "error")]
    passed = runs.count("passed")
    rate = passed / len(judged) if judged else None
    flaky = 0 < passed < len(judged)
    if not judged:
        status = runs[0] if runs else "none"
    elif flaky:
        status = "flaky"
    else:
        status = "passed" if passed == len(judged) else "failed"
    lives = [o["live"] for o in outcomes if isinstance(o.get("live"), dict)]
    seconds = _ran_seconds(outcomes)
    first_bad = next((o for o in outcomes if o.get("status") != "passed"), None)
    return {
        "runs": runs,
        "passed": passed,
        "judged": len(judged),
        "pass_rate": None if rate is None else round(rate, 4),
        "flaky": flaky,
        "status": status,
        "below_threshold": rate is not None and rate < threshold,
        "first_failure": _first_failure(first_bad) if first_bad else None,
        "first_failing_repetition": first_bad["repetition"] if first_bad else None,
        "live_runs": [x.get("run") for x in lives],
        "cost": round(sum(float(x.get("cost") or 0) for x in lives), 6),
        "tokens_in": sum(int(x.get("tokens_in") or 0) for x in lives),
        "tokens_out": sum(int(x.get("tokens_out") or 0) for x in lives),
        "latency_p50": _percentile(seconds, 50),
        "latency_p95": _percentile(seconds, 95),
    }


def matrix_of(
    outcomes: list[dict[str, Any]], columns: list[Column], threshold: float
) -> dict[str, Any]:
    """Goldens as rows, (model, version) as columns; each cell its repetitions."""
    rows: dict[str, dict[str, list[dict[str, Any]]]] = {}
    names: dict[str, tuple[str, str]] = {}
    for outcome in outcomes:
        golden = outcome.get("golden") or golden_name(outcome["agent_name"], outcome["name"])
        names.setdefault(golden, (outcome.get("agent_name") or "", outcome.get("name") or ""))
        rows.setdefault(golden, {}).setdefault(outcome["column"], []).append(outcome)
    matrix_rows = [
        {
            "golden": golden,
            "agent_name": names[golden][0],
            "name": names[golden][1],
            "cells": {key: _cell(found, threshold) for key, found in cells.items()},
        }
        # By golden (agent / name), the same order in every run of the app.
        for golden, cells in sorted(rows.items(), key=lambda item: item[0].casefold())
    ]
    totals = {}
    for column in columns:
        cells = [r["cells"][column.key] for r in matrix_rows if column.key in r["cells"]]
        seconds = _ran_seconds(o for o in outcomes if o.get("column") == column.key)
        judged = sum(c["judged"] for c in cells)
        passed = sum(c["passed"] for c in cells)
        totals[column.key] = {
            "goldens": len(cells),
            "passed": sum(1 for c in cells if c["status"] == "passed"),
            "failed": sum(1 for c in cells if c["status"] == "failed"),
            "flaky": sum(1 for c in cells if c["flaky"]),
            "below_threshold": sum(1 for c in cells if c["below_threshold"]),
            "pass_rate": round(passed / judged, 4) if judged else None,
            "cost": round(sum(c["cost"] for c in cells), 6),
            "tokens_in": sum(c["tokens_in"] for c in cells),
            "tokens_out": sum(c["tokens_out"] for c in cells),
            "latency_p50": _percentile(seconds, 50),
            "latency_p95": _percentile(seconds, 95),
        }
    return {
        "columns": [c.as_json() for c in columns],
        "rows": matrix_rows,
        "totals": totals,
        "threshold": threshold,
    }


def revisions_of(outcomes: Iterable[dict[str, Any]], started: Any) -> dict[str, Any]:
    """The app revisions a Run all's working-copy pieces ran at, each with its goldens.

    A piece loads the app when it runs and its outcome is stored once (its job's result),
    so a Run all stopped part way (its worker killed), the app edited, then retried
    gathers the pieces already done at the old revision and runs the rest at the new one.
    Rather than hide it (or run every piece again, which an edit during the retry would
    mix again), the run says so: `mixed` when the goldens ran at more than one revision,
    `by_revision` which ran at which. A saved version's column is one revision by nature.
    """
    seen: dict[int, set[str]] = {}
    for outcome in outcomes:
        revision = outcome.get("app_revision")
        if revision is None or outcome.get("version"):
            continue
        golden = outcome.get("golden") or golden_name(
            outcome.get("agent_name") or "", outcome.get("name") or ""
        )
        seen.setdefault(int(revision), set()).add(golden)
    return {
        "started": int(started) if started is not None else None,
        "mixed": len(seen) > 1,
        "by_revision": [
            {"revision": revision, "goldens": sorted(goldens)}
            for revision, goldens in sorted(seen.items())
        ],
    }


def compare(matrix: dict[str, Any], a: str, b: str) -> list[dict[str, Any]]:
    """The goldens whose verdict differs between columns `a` and `b`, and why (each side's
    first failing expectation)."""
    keys = {c["key"] for c in matrix.get("columns", [])}
    for field, key in (("a", a), ("b", b)):
        if key not in keys:
            raise ServiceError(
                [
                    error(
                        field,
                        Message(
                            "No column '%(key)s' in this run; its columns: %(known)s.",
                            key=key,
                            known=", ".join(sorted(keys)),
                        ),
                    )
                ]
            )
    changed = []
    for row in matrix.get("rows", []):
        left, right = row["cells"].get(a), row["cells"].get(b)
        left_status = left["status"] if left else "absent"
        right_status = right["status"] if right else "absent"
        if left_status != right_status:
            changed.append(
                {
                    "golden": row["golden"],
                    "a": left_status,
                    "b": right_status,
                    "a_pass_rate": left["pass_rate"] if left else None,
                    "b_pass_rate": right["pass_rate"] if right else None,
                    "a_first_failure": left["first_failure"] if left else None,
                    "b_first_failure": right["first_failure"] if right else None,
                }
            )
    return changed


CSV_FIELDS = (
    "golden",
    "agent",
    "scenario",
    "model",
    "version",
    "runs",
    "passed",
    "pass_rate",
    "flaky",
    "status",
    "cost",
    "tokens_in",
    "tokens_out",
    "latency_p50",
    "latency_p95",
    "first_failure",
)


# A text cell a spreadsheet would read as a formula (OWASP's CSV injection): =, +, -, @,
# a tab or a carriage return first. Names come from editors (goldens, agents, models).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "|")


def _inert(value: Any) -> Any:
    """`value` as a spreadsheet shows it and never runs it: a text starting like a
    formula gets a leading apostrophe (numbers are written as numbers)."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def matrix_csv(matrix: dict[str, Any]) -> str:
    """One line per (golden, model, version); a text that would start a formula is
    neutralised (`_inert`)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_FIELDS)
    columns = {c["key"]: c for c in matrix.get("columns", [])}
    for row in matrix.get("rows", []):
        for key, column in columns.items():
            cell = row["cells"].get(key)
            if cell is None:
                continue
            failure = cell["first_failure"] or {}
            line = [
                row["golden"],
                row["agent_name"],
                row["name"],
                column["model"] or "offline",
                column["version"] or "current",
                " ".join(cell["runs"]),
                cell["passed"],
                "" if cell["pass_rate"] is None else cell["pass_rate"],
                "yes" if cell["flaky"] else "no",
                cell["status"],
                cell["cost"],
                cell["tokens_in"],
                cell["tokens_out"],
                "" if cell["latency_p50"] is None else cell["latency_p50"],
                "" if cell["latency_p95"] is None else cell["latency_p95"],
                str(failure.get("message") or ""),
            ]
            writer.writerow([_inert(value) for value in line])
    return out.getvalue()


def annotate(result: dict[str, Any], matrix: dict[str, Any]) -> None:
    """A Run all's result with its repetitions: each golden of the first column gets its
    marks, pass rate and flakiness; the summary its flaky count; `ok` is false when a cell
    of any column is below the pass threshold; `matrix` when there is more than one cell
    per golden."""
    columns = matrix.get("columns") or []
    if not columns:
        return
    first = columns[0]["key"]
    rows = {row["golden"]: row for row in matrix.get("rows", [])}
    several = len(columns) > 1
    for scenario in result.get("scenarios", []):
        if scenario.get("kind") == "simulated_user":
            continue
        row = rows.get(golden_name(scenario.get("agent_name", ""), scenario.get("name", "")))
        cell = row["cells"].get(first) if row else None
        if cell is None:
            continue
        scenario["repetitions"] = cell["runs"]
        scenario["pass_rate"] = cell["pass_rate"]
        scenario["flaky"] = cell["flaky"]
        several = several or len(cell["runs"]) > 1
    if matrix.get("revisions") is not None:
        result["revisions"] = matrix["revisions"]
    below = sum(t.get("below_threshold", 0) for t in matrix.get("totals", {}).values())
    result["summary"]["flaky"] = sum(t.get("flaky", 0) for t in matrix.get("totals", {}).values())
    result["ok"] = bool(result.get("ok")) and below == 0
    if several:
        result["matrix"] = matrix
