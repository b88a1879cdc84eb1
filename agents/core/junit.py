"""JUnit XML of an evaluation (``manage.py evaluate --junit``): one test case per scenario
(per golden, model and version in an experiment), failed checks as ``failure``, a stopped
simulation as ``error``, a golden that needs a model as ``skipped``."""

from __future__ import annotations

from dataclasses import dataclass

from agents.core.diagnostics import Message
from agents.core.evaluate import ScenarioEvaluation


@dataclass(frozen=True, slots=True)
class JUnitCase:
    suite: str  # the app
    classname: str  # app.agent
    name: str  # the scenario
    evaluation: ScenarioEvaluation
    seconds: float = 0.0
    errors: tuple[str, ...] = ()  # problems of the run itself (step errors), for the log


def _case_text(case: JUnitCase) -> str:
    lines = []
    for r in case.evaluation.results:
        note = f" [{r.note}]" if r.note else ""
        lines.append(f"step {r.step + 1} (turn {r.turn}){note}: {r.status}: {r.line}")
        lines.append(f"  {r.message}")
        lines.extend(f"    {d}" for d in r.differences)
    lines.extend(f"simulation: {e}" for e in case.errors)
    return "\n".join(lines)


def junit_xml(cases: list[JUnitCase]) -> str:
    """JUnit XML (the common Ant/Jenkins/GitLab shape): one testsuite per app, one testcase
    per scenario; a failed scenario has a <failure>, one that needs a model or has no
    expectations is <skipped>."""
    import xml.etree.ElementTree as ET

    root = ET.Element("testsuites", name="statecraft evaluate")
    suites: dict[str, ET.Element] = {}
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for case in cases:
        suite = suites.get(case.suite)
        if suite is None:
            suite = suites[case.suite] = ET.SubElement(
                root, "testsuite", name=case.suite, tests="0", failures="0", errors="0", skipped="0"
            )
        element = ET.SubElement(
            suite,
            "testcase",
            classname=case.classname,
            name=case.name,
            time=f"{case.seconds:.3f}",
        )
        evaluation = case.evaluation
        suite.set("tests", str(int(suite.get("tests", "0")) + 1))
        totals["tests"] += 1
        if evaluation.status == "failed":
            first = next(r for r in evaluation.results if r.status == "failed")
            failure = ET.SubElement(
                element,
                "failure",
                message=Message(
                    "%(failed)s of %(results_count)s expectations failed; first "
                    "at step %(step)s: %(message)s",
                    failed=evaluation.failed,
                    results_count=len(evaluation.results),
                    step=first.step + 1,
                    message=first.message,
                ),
                type="ExpectationFailed",
            )
            failure.text = _case_text(case)
            suite.set("failures", str(int(suite.get("failures", "0")) + 1))
            totals["failures"] += 1
        elif evaluation.status == "stopped":
            # Not a failed expectation: the run was stopped (a time limit), so no verdict.
            first = next(r for r in evaluation.results if r.status == "stopped")
            error = ET.SubElement(element, "error", message=first.message, type="Stopped")
            error.text = _case_text(case)
            suite.set("errors", str(int(suite.get("errors", "0")) + 1))
            totals["errors"] += 1
        elif evaluation.status in ("needs_model", "none"):
            message = (
                Message("every expectation needs a model (run it in CX Agent Studio)")
                if evaluation.status == "needs_model"
                else Message("no expectations")
            )
            ET.SubElement(element, "skipped", message=message)
            suite.set("skipped", str(int(suite.get("skipped", "0")) + 1))
            totals["skipped"] += 1
        else:
            out = ET.SubElement(element, "system-out")
            out.text = _case_text(case)
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
