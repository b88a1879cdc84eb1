"""manage.py evaluate [APP ...] [--junit FILE]: run every scenario's expectations, for CI.

APP is an app's id or its exact name (none: every app). Each scenario is simulated with
the real sandbox and its expectations checked (the use case behind the designer's "Run
all" and the API's evaluate); its outcome is stored as the scenario's last result.
Exit status: 0 when no expectation failed (those that need a model do not fail a run),
1 when one failed, 2 when an APP names no app. ``--junit FILE`` writes JUnit XML.
"""

from __future__ import annotations

import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents import selectors
from agents.core.diagnostics import Severity
from agents.core.evaluate import JUnitCase, junit_xml
from agents.models import AgentApp
from agents.services.evaluation import app_evaluate, summarise

_LABEL = {"passed": "PASS", "failed": "FAIL", "needs_model": "MODEL", "none": "----"}


class Command(BaseCommand):
    help = "Run the expectations (goldens) of every scenario of the apps; non-zero on a failure."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("apps", nargs="*", help="app ids or exact names (default: all)")
        parser.add_argument("--junit", metavar="FILE", help="write JUnit XML to FILE")

    def find_apps(self, wanted: list[str]) -> list[AgentApp]:
        if not wanted:
            return list(AgentApp.objects.order_by("pk"))
        apps: list[AgentApp] = []
        for key in wanted:
            found = list(
                AgentApp.objects.filter(pk=int(key)) if key.isdigit() else AgentApp.objects.none()
            ) or list(AgentApp.objects.filter(name=key).order_by("pk"))
            if not found:
                raise CommandError(f"No app {key!r} (give an id or an exact name).", returncode=2)
            apps.extend(a for a in found if a not in apps)
        return apps

    def handle(self, *args: object, **options: object) -> None:
        apps = self.find_apps([str(a) for a in options["apps"]])  # type: ignore[union-attr]
        cases: list[JUnitCase] = []
        all_runs = []
        for app in apps:
            runs = []
            started = time.monotonic()
            for run in app_evaluate(app=app, actor=None):
                seconds = time.monotonic() - started
                started = time.monotonic()
                runs.append(run)
                evaluation = run.evaluation
                counts = (
                    f"{evaluation.passed} passed, {evaluation.failed} failed, "
                    f"{evaluation.needs_model} need a model"
                )
                self.stdout.write(
                    f"{_LABEL[evaluation.status]}  {app.name} / {run.agent.display_name} / "
                    f"{run.scenario.name}  ({counts})"
                )
                for r in evaluation.results:
                    # A failure, or one the calls the golden leaves out decide (said why).
                    if r.status == "failed" or r.left_to_model:
                        note = f" [{r.note}]" if r.note else ""
                        self.stdout.write(f"      step {r.step + 1}{note}: {r.line}")
                        self.stdout.write(f"        {r.message}")
                        for d in r.differences:
                            self.stdout.write(f"          {d}")
                errors = tuple(
                    d.message for d in run.result.diagnostics if d.severity is Severity.ERROR
                )
                cases.append(
                    JUnitCase(
                        suite=app.name,
                        classname=f"{app.name}.{run.agent.display_name}",
                        name=run.scenario.name,
                        evaluation=evaluation,
                        seconds=seconds,
                        errors=errors,
                    )
                )
            all_runs.extend(runs)
            for name, file in selectors.app_needs_model_evaluations(app):
                self.stdout.write(
                    f"MODEL  {app.name} / {name}  (CX evaluation of the scenario kind, {file}: "
                    "a simulated user and rubrics need a model; not run)"
                )
        summary = summarise(all_runs)
        self.stdout.write(
            f"{summary.passed} passed, {summary.failed} failed, {summary.needs_model} need a "
            f"model, {summary.no_expectations} without expectations"
        )
        if options.get("junit"):
            path = Path(str(options["junit"]))
            try:
                path.write_text(junit_xml(cases), encoding="utf-8")
            except OSError as exc:
                raise CommandError(f"{path}: {exc.strerror or exc}", returncode=2) from exc
        if not summary.ok:
            raise CommandError(f"{summary.failed} scenario(s) failed.", returncode=1)
