"""manage.py evaluate [APP ...] [--junit FILE]: run every scenario's expectations, for CI.

APP is an app's id or its exact name (none: every app). Each scenario is simulated with
the real sandbox and its expectations checked (the use case behind the designer's "Run
all" and the API's evaluate); its outcome is stored as the scenario's last result.
``--model NAME`` runs them live against a configured model (README: Goldens live).
Exit status: 0 when no expectation failed (those that need a model do not fail a run),
1 when one failed, 2 when an APP names no app (or --model no configured model).
``--junit FILE`` writes JUnit XML.
"""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents import selectors
from agents.core.diagnostics import Severity
from agents.core.evaluate import JUnitCase, junit_xml
from agents.models import AgentApp
from agents.services.common import ServiceError
from agents.services.evaluation import app_evaluate, summarise

_LABEL = {"passed": "PASS", "failed": "FAIL", "needs_model": "MODEL", "none": "----"}


class Command(BaseCommand):
    help = "Run the expectations (goldens) of every scenario of the apps; non-zero on a failure."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("apps", nargs="*", help="app ids or exact names (default: all)")
        parser.add_argument("--junit", metavar="FILE", help="write JUnit XML to FILE")
        parser.add_argument(
            "--model",
            metavar="NAME",
            help="run the goldens live against this configured model (STATECRAFT_MODELS or "
            "the admin's endpoints); each run is recorded for replay",
        )
        parser.add_argument(
            "--judge",
            metavar="NAME",
            help="the model that judges the rubrics of CX scenario evaluations (default: --model)",
        )

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

    def user_scenarios(
        self, app: AgentApp, model: str, options: dict, cases: list[JUnitCase]
    ) -> list[SimpleNamespace]:
        """The CX evaluations of the scenario kind, live: a simulated user, then rubrics."""
        from agents.services.live import run_user_scenarios

        judge = str(options.get("judge") or "") or None
        out = []
        started = time.monotonic()
        for done in run_user_scenarios(app=app, model=model, judge=judge):
            seconds = time.monotonic() - started
            started = time.monotonic()
            evaluation = done.evaluation
            self.stdout.write(
                f"{_LABEL[evaluation.status]}  {app.name} / {done.name}  (simulated user, "
                f"{done.turns} turns, ended by {done.ended_by}; {evaluation.passed} passed, "
                f"{evaluation.failed} failed)"
            )
            for r in evaluation.results:
                mark = "ok  " if r.status == "passed" else "FAIL"
                self.stdout.write(f"      {mark} {r.line}")
                self.stdout.write(f"        {r.message}")
            cases.append(
                JUnitCase(
                    suite=app.name,
                    classname=f"{app.name}.simulated_user",
                    name=done.name,
                    evaluation=evaluation,
                    seconds=seconds,
                )
            )
            out.append(SimpleNamespace(evaluation=evaluation))
        return out

    def handle(self, *args: object, **options: object) -> None:
        apps = self.find_apps([str(a) for a in options["apps"]])  # type: ignore[union-attr]
        model = str(options.get("model") or "") or None
        cases: list[JUnitCase] = []
        all_runs = []
        for app in apps:
            runs = []
            started = time.monotonic()
            try:
                app_runs = app_evaluate(app=app, actor=None, model=model)
            except ServiceError as exc:
                raise CommandError(str(exc), returncode=2) from exc
            for run in app_runs:
                seconds = time.monotonic() - started
                started = time.monotonic()
                runs.append(run)
                evaluation = run.evaluation
                counts = (
                    f"{evaluation.passed} passed, {evaluation.failed} failed, "
                    f"{evaluation.needs_model} need a model"
                )
                live = ""
                if run.live is not None:
                    tokens_in, tokens_out = run.live.tokens
                    live = (
                        f" [live {run.live.model}: {len(run.live.calls)} model calls, "
                        f"{tokens_in}+{tokens_out} tokens, ${run.live.cost:.4f}"
                        + (f", error: {run.live.error}" if run.live.error else "")
                        + "]"
                    )
                self.stdout.write(
                    f"{_LABEL[evaluation.status]}  {app.name} / {run.agent.display_name} / "
                    f"{run.scenario.name}  ({counts}){live}"
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
            if model:
                all_runs.extend(self.user_scenarios(app, model, options, cases))
                continue
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
