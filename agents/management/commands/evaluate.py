"""manage.py evaluate [APP ...] [--junit FILE] [--jobs N]: run every scenario's expectations.

APP is an app's id or its exact name (none: every app). Each scenario is simulated with
the real sandbox and its expectations checked (the use case behind the designer's "Run
all" and the API's evaluate); its outcome is stored as the scenario's last result.
The command runs the work as jobs itself (kind ``evaluate_app``, no worker needed):
``--jobs N`` splits the scenarios into N jobs run at once, each with its own sandbox.
``--model NAME`` runs them live against a configured model (docs/designer/goldens-live.md), and
the CX evaluations of the scenario kind with a simulated user (``--judge`` for rubrics).
Exit status: 0 when no expectation failed (those that need a model do not fail a run),
1 when one failed, 2 when an APP names no app (or --model no configured model), 3 when
none failed but a time limit stopped a scenario (``STOP``: not judged; docs/benchmarks).
``--replay`` replays each scenario's pinned recording offline instead (no model,
milliseconds: the CI way, docs/designer/replay.md); a request that drifted from its
recording fails the run like a failed expectation (exit 1), a scenario never recorded is
listed and does not.
``--junit FILE`` writes JUnit XML.
"""

from __future__ import annotations

import dataclasses
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import CommandError, CommandParser
from django.db import connection
from django.utils.translation import gettext as _
from django.utils.translation import ngettext, npgettext

from agents import selectors
from agents.core.evaluate import ExpectationResult, ScenarioEvaluation
from agents.core.junit import JUnitCase, junit_xml
from agents.i18n import localize, localized_data
from agents.management.language import LocalizedCommand
from agents.models import AgentApp, Job
from agents.services import evaluation, jobs, sandbox_door
from agents.services.common import ServiceError, setting

_LABEL = {
    "passed": "PASS",
    "failed": "FAIL",
    "needs_model": "MODEL",
    "stopped": "STOP",
    "none": "----",
}


def _evaluation(data: dict[str, Any]) -> ScenarioEvaluation:
    results = tuple(
        ExpectationResult(
            **{k: v for k, v in r.items() if k not in {"i18n", "differences"}},
            differences=tuple(r.get("differences", ())),
        )
        for r in data["results"]
    )
    return ScenarioEvaluation(
        results=results,
        status=data["status"],
        passed=data["passed"],
        failed=data["failed"],
        needs_model=data["needs_model"],
        stopped=data.get("stopped", 0),
    )


def _run(job: Job) -> Job | None:
    try:
        return jobs.job_run(str(job.pk))
    finally:
        connection.close()  # a thread's own connection


def _exit_if_failed(failed: int, stopped: int = 0) -> None:
    """Exit 1 naming how many scenarios failed, if any did; else 3 naming how many a time
    limit stopped (no verdict: not a failure, not a pass)."""
    if failed:
        raise CommandError(
            ngettext("%(count)s scenario failed.", "%(count)s scenarios failed.", failed)
            % {"count": failed},
            returncode=1,
        )
    if stopped:
        raise CommandError(
            ngettext(
                "%(count)s scenario was stopped by a time limit: not judged. Run it again on "
                "a less loaded machine, or raise the limit (SIMULATION_MAX_SECONDS).",
                "%(count)s scenarios were stopped by a time limit: not judged. Run them again "
                "on a less loaded machine, or raise the limit (SIMULATION_MAX_SECONDS).",
                stopped,
            )
            % {"count": stopped},
            returncode=3,
        )


def _write_junit(options: dict[str, Any], cases: list[JUnitCase]) -> None:
    """The JUnit XML `--junit` names, if any; a file that cannot be written exits 2."""
    if options.get("junit"):
        path = Path(str(options["junit"]))
        try:
            path.write_text(junit_xml(cases), encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"{path}: {exc.strerror or exc}", returncode=2) from exc


def _counts(
    of: str,
    passed: int,
    failed: int,
    needs_model: int | None = None,
    no_expectations: int | None = None,
    stopped: int = 0,
) -> str:
    """``2 passed, 1 failed, 1 needs a model…``, each count with its own plural (French
    agrees with what is counted: `of` "scenarios" or "expectations")."""
    # Literal contexts, so makemessages extracts each (a variable context is not extracted).
    if of == "scenarios":
        parts = [
            npgettext("scenarios", "%(count)s passed", "%(count)s passed", passed),
            npgettext("scenarios", "%(count)s failed", "%(count)s failed", failed),
        ]
    else:
        parts = [
            npgettext("expectations", "%(count)s passed", "%(count)s passed", passed),
            npgettext("expectations", "%(count)s failed", "%(count)s failed", failed),
        ]
    parts = [parts[0] % {"count": passed}, parts[1] % {"count": failed}]
    if needs_model is not None:
        parts.append(
            ngettext("%(count)s needs a model", "%(count)s need a model", needs_model)
            % {"count": needs_model}
        )
    if stopped:
        parts.append(
            ngettext(
                "%(count)s stopped by a time limit", "%(count)s stopped by a time limit", stopped
            )
            % {"count": stopped}
        )
    if no_expectations is not None:
        parts.append(
            ngettext(
                "%(count)s without expectations",
                "%(count)s without expectations",
                no_expectations,
            )
            % {"count": no_expectations}
        )
    return ", ".join(parts)


class Command(LocalizedCommand):
    help = "Run the expectations (goldens) of every scenario of the apps; non-zero on a failure."
    # The checks of what evaluate uses (the models and their configuration, the sandbox's
    # protections, the translations, the cache): not the URL configuration's, whose import
    # of every view was a third of the command's start (docs/benchmarks/evaluate.md).
    requires_system_checks = ["models", "sandbox", "translation", "caches"]

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        # `--version V` names the app's versions to evaluate (not Django's own version).
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("apps", nargs="*", help="app ids or exact names (default: all)")
        parser.add_argument("--junit", metavar="FILE", help="write JUnit XML to FILE")
        parser.add_argument(
            "--jobs", type=int, default=1, metavar="N", help="run N jobs at once (default 1)"
        )
        parser.add_argument(
            "--model",
            metavar="NAME",
            help="run the goldens live against this configured model (STATECRAFT_MODELS or "
            "the admin's endpoints; several: a,b — a column each); each run is recorded for "
            "replay",
        )
        parser.add_argument(
            "--replay",
            action="store_true",
            help="replay each scenario's pinned recording offline (no model; the pinned live "
            "run, else the latest successful one): fails on a failed expectation or when a "
            "request drifted from the recording",
        )
        parser.add_argument(
            "--version",
            metavar="V[,V...]",
            help="evaluate these saved versions (numbers or labels; 'current': the working "
            "copy): a column each in the run's matrix",
        )
        parser.add_argument(
            "--repeat",
            type=int,
            default=1,
            metavar="N",
            help="run each golden N times: its pass rate, flaky when some runs failed",
        )
        parser.add_argument(
            "--threshold",
            type=float,
            default=1.0,
            metavar="RATE",
            help="the pass rate a golden needs in each (model, version), from 0 to 1 "
            "(default 1: every run); exit 1 when one is below it",
        )
        parser.add_argument(
            "--judge",
            metavar="NAME",
            help="the model that judges the rubrics of CX scenario evaluations (default: --model)",
        )

    def experiment(
        self,
        apps: list[AgentApp],
        models: list[str],
        versions: list[str],
        repeat: int,
        threshold: float,
        judge: str | None,
        threads: int,
        options: dict[str, Any],
    ) -> None:
        """Every golden x repetition x model x version of each app as one evaluation run
        (``evaluation_runs``), run here with `threads` pieces at once; one line and one
        JUnit test case per (golden, model, version); exit 1 when one is below the pass
        threshold."""
        from agents.services import evaluation_runs

        planned: list[tuple[AgentApp, Job]] = []
        for app in apps:  # every refusal (an unknown model, version, repeat) before any run
            try:
                job = evaluation.run_all_submit(
                    app=app,
                    actor=None,
                    models=models,
                    judge=judge,
                    versions=versions,
                    repeat=repeat,
                    threshold=threshold,
                    enqueue=False,
                )
            except ServiceError as exc:
                raise CommandError(exc.localized(), returncode=2) from exc
            if threads > 1:
                job.params["threads"] = threads
                job.save(update_fields=["params"])
            planned.append((app, job))
        cases: list[JUnitCase] = []
        below = 0
        for app, job in planned:
            job = jobs.job_run(str(job.pk)) or Job.objects.get(pk=job.pk)
            if job.status != "succeeded" or not isinstance(job.result, dict):
                self.stderr.write(
                    f"ERROR  {app.name}: "
                    + _("the job ended %(status)s: %(error)s")
                    % {"status": job.status, "error": localize(job.error_message)}
                )
                below += 1
                continue
            matrix = job.result.get("matrix") or {}
            outcomes = [
                evaluation_runs.piece_outcome(child)
                for child in Job.objects.filter(parent=job).order_by("queued_at", "pk")
            ]
            for row in matrix.get("rows", []):
                for column in matrix.get("columns", []):
                    cell = row["cells"].get(column["key"])
                    if cell is None:
                        continue
                    below += cell["below_threshold"]
                    self.report_cell(app, row, column, cell, outcomes, cases)
            for key, total in (matrix.get("totals") or {}).items():
                rate = total["pass_rate"]
                self.stdout.write(
                    f"TOTAL  {app.name} [{key}]  "
                    + _("pass rate %(rate)s, %(flaky)s flaky, p50 %(p50)s s, p95 %(p95)s s")
                    % {
                        "rate": "-" if rate is None else f"{rate:.0%}",
                        "flaky": total["flaky"],
                        "p50": total["latency_p50"],
                        "p95": total["latency_p95"],
                    }
                    + (f", ${total['cost']:.4f}" if total["cost"] else "")
                )
        _write_junit(options, cases)
        if below:
            raise CommandError(
                ngettext(
                    "%(count)s golden is below the pass threshold of %(threshold)s.",
                    "%(count)s goldens are below the pass threshold of %(threshold)s.",
                    below,
                )
                % {"count": below, "threshold": f"{threshold:g}"},
                returncode=1,
            )

    def report_cell(
        self,
        app: AgentApp,
        row: dict[str, Any],
        column: dict[str, Any],
        cell: dict[str, Any],
        outcomes: list[dict[str, Any]],
        cases: list[JUnitCase],
    ) -> None:
        """One (golden, model, version): its marks and pass rate, and a JUnit case judged
        by the threshold (the first failing run when below it, else the first passing)."""
        mine = [
            o
            for o in outcomes
            if o.get("golden") == row["golden"] and o.get("column") == column["key"]
        ]
        mine.sort(key=lambda o: o.get("repetition", 0))
        wanted = "failed" if cell["below_threshold"] else "passed"
        shown = next((o for o in mine if o.get("status") == wanted), mine[0] if mine else None)
        label = {"passed": "PASS ", "failed": "FAIL ", "flaky": "FLAKY"}.get(
            cell["status"], cell["status"].upper()[:5].ljust(5)
        )
        rate = cell["pass_rate"]
        marks = "".join({"passed": "+", "failed": "x"}.get(r, "?") for r in cell["runs"])
        self.stdout.write(
            f"{label}  {app.name} / {row['golden']}  [{column['key']}]  {marks}  "
            + ("-" if rate is None else f"{cell['passed']}/{cell['judged']} ({rate:.0%})")
        )
        if shown is None:
            return
        evaluation_ = _evaluation(shown)
        if cell["below_threshold"] and evaluation_.status not in ("failed", "stopped"):
            evaluation_ = dataclasses.replace(evaluation_, status="failed")
        cases.append(
            JUnitCase(
                suite=app.name,
                classname=f"{app.name}.{row['agent_name']}",
                name=f"{row['name']} [{column['key']}]",
                evaluation=evaluation_,
                seconds=float(shown.get("seconds") or 0.0),
                errors=(str(shown["error"]),) if shown.get("error") else (),
            )
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
                raise CommandError(
                    _("No app %(key)s (give an id or an exact name).") % {"key": repr(key)},
                    returncode=2,
                )
            apps.extend(a for a in found if a not in apps)
        return apps

    def submit(
        self,
        apps: list[AgentApp],
        parallel: int,
        model: str | None = None,
        judge: str | None = None,
    ) -> list[tuple[AgentApp, list[Job]]]:
        """The jobs of each app (Run all's use case, ``evaluation.run_all_submit``): its
        scenarios split into `parallel` chunks; the first also runs the CX evaluations of
        the scenario kind when the run is live."""
        planned = []
        for app in apps:
            ids = evaluation.app_scenario_ids(app)
            chunks = [ids[i::parallel] for i in range(parallel)] if parallel > 1 else [ids]
            planned.append(
                (
                    app,
                    [
                        evaluation.run_all_submit(
                            app=app,
                            actor=None,
                            model=model,
                            judge=judge,
                            scenarios=chunk,
                            user_scenarios=number == 0,
                            enqueue=False,
                        )
                        for number, chunk in enumerate(chunks)
                        if chunk or len(chunks) == 1
                    ],
                )
            )
        return planned

    def handle(self, *args: object, **options: object) -> None:
        # Every golden is a piece (a job) with a batch of its own: warm sandbox sessions
        # kept for the whole command (one per thread that runs pieces) spare each piece
        # the start of one (~0.3 s: the jail, Python, the app's tools sent again).
        parallel = max(1, int(options["jobs"]))  # type: ignore[call-overload]
        size = max(
            int(setting("SANDBOX_POOL_SIZE")),
            parallel * max(int(settings.EVALUATION_THREADS), 1),
        )
        with sandbox_door.session_pool(size):
            self.evaluate(**options)

    def evaluate(self, **options: object) -> None:
        apps = self.find_apps([str(a) for a in options["apps"]])  # type: ignore[union-attr]
        parallel = max(1, int(options["jobs"]))  # type: ignore[call-overload]
        model = str(options.get("model") or "") or None
        if options.get("replay"):
            if model:
                raise CommandError(
                    "--replay calls no model: give --replay or --model.", returncode=2
                )
            self.replay(apps, options)
            return
        judge = str(options.get("judge") or "") or None
        models = [m.strip() for m in (model or "").split(",") if m.strip()]
        versions = [v.strip() for v in str(options.get("version") or "").split(",") if v.strip()]
        repeat = int(options.get("repeat") or 1)  # type: ignore[call-overload]
        threshold = float(options.get("threshold", 1.0))  # type: ignore[arg-type]
        if len(models) > 1 or versions or repeat != 1 or threshold != 1.0:
            self.experiment(apps, models, versions, repeat, threshold, judge, parallel, options)
            return
        if model or judge:
            from agents.services.live_models import checked_judge, resolve_model

            for app in apps:  # an unknown model or judge fails before anything runs
                try:
                    if model:
                        resolve_model(app, model)
                    checked_judge(app, model, judge)
                except ServiceError as exc:
                    raise CommandError(str(exc), returncode=2) from exc
        planned = self.submit(apps, parallel, model, judge)
        every = [job for _, app_jobs in planned for job in app_jobs]
        if parallel > 1:
            with ThreadPoolExecutor(max_workers=parallel) as pool:
                list(pool.map(_run, every))
        else:
            for job in every:
                jobs.job_run(str(job.pk))
        cases: list[JUnitCase] = []
        outcomes: list[dict[str, Any]] = []
        for app, app_jobs in planned:
            done = [Job.objects.get(pk=job.pk) for job in app_jobs]
            for job in done:
                if job.status != "succeeded":
                    self.stderr.write(
                        f"ERROR  {app.name}: "
                        + _("the job ended %(status)s: %(error)s")
                        % {"status": job.status, "error": localize(job.error_message)}
                    )
            scenarios = [s for job in done for s in (job.result or {}).get("scenarios", [])]
            order = {
                pk: i for i, pk in enumerate(s.pk for _, s in evaluation.app_scenarios(app)[1])
            }
            scenarios.sort(key=lambda s: order.get(s["scenario"], len(order)))
            for data in scenarios:
                outcomes.append(data)
                if data.get("kind") == "simulated_user":
                    self.report_user_scenario(app, data, cases)
                else:
                    self.report(app, data, cases)
            if model:
                continue
            for name, file in selectors.app_needs_model_evaluations(app):
                self.stdout.write(
                    f"MODEL  {app.name} / {name}  ("
                    + _(
                        "CX evaluation of the scenario kind, %(file)s: a simulated user and "
                        "rubrics need a model; not run"
                    )
                    % {"file": file}
                    + ")"
                )
        summary = evaluation.summary_data(outcomes)["summary"]
        self.stdout.write(
            _counts(
                "scenarios",
                summary["passed"],
                summary["failed"],
                summary["needs_model"],
                summary["no_expectations"],
                summary.get("stopped", 0),
            )
        )
        _write_junit(options, cases)
        _exit_if_failed(summary["failed"], summary.get("stopped", 0))

    def replay(self, apps: list[AgentApp], options: dict) -> None:
        """`--replay`: every scenario's pinned recording (``live_pins.pinned_recording``:
        the run the designer pinned, else its latest successful live run), replayed with
        its recorded answers (each a ``live_run`` job, ``live_jobs.live_run_submit``, run
        here); each line says which run it replayed and how it was chosen."""
        from agents.models import LiveRun
        from agents.services import live_jobs
        from agents.services.live_pins import pinned_recording

        cases: list[JUnitCase] = []
        counts = {"passed": 0, "failed": 0, "drifted": 0, "not recorded": 0}
        for app in apps:
            _loaded, pairs = evaluation.app_scenarios(app)
            for agent, scenario in pairs:
                where = f"{app.name} / {agent.display_name} / {scenario.name}"
                chosen = pinned_recording(scenario)
                if chosen is None:
                    counts["not recorded"] += 1
                    failed_only = LiveRun.objects.filter(scenario=scenario, mode="live").exists()
                    self.stdout.write(
                        f"----   {where}  ("
                        + (
                            _("no successful live recording: every live run failed")
                            if failed_only
                            else _("no live recording: run --model once")
                        )
                        + ")"
                    )
                    continue
                recording = chosen.run
                started = time.monotonic()
                job = live_jobs.live_run_submit(
                    app=app, agent=agent, actor=None, replay=recording, enqueue=False
                )
                job = jobs.job_run(str(job.pk)) or Job.objects.get(pk=job.pk)
                outcome = live_jobs.live_job_outcome(job)
                if outcome is None:  # the job failed before the replay ended
                    counts["failed"] += 1
                    self.stderr.write(
                        f"ERROR  {where}: "
                        + _("the job ended %(status)s: %(error)s")
                        % {"status": job.status, "error": localize(job.error_message)}
                    )
                    continue
                evaluation_ = outcome.evaluation
                failed = evaluation_.failed > 0
                label = "DRIFT" if outcome.drift else _LABEL[evaluation_.status]
                counts["drifted" if outcome.drift else "failed" if failed else "passed"] += 1
                self.stdout.write(
                    f"{label:<5}  {where}  ("
                    + _(
                        "replay of live run %(run)s (%(model)s, %(date)s, %(how)s): "
                        "%(passed)s passed, %(failed)s failed"
                    )
                    % {
                        "how": chosen.how,
                        "run": recording.pk,
                        "model": recording.model_name,
                        "date": recording.created_at.strftime("%Y-%m-%d %H:%M"),
                        "passed": evaluation_.passed,
                        "failed": evaluation_.failed,
                    }
                    + ")"
                )
                drift = []  # English: the JUnit XML is the same in every language
                for d in job.result["drift"]:
                    line = (
                        f"model call {d['call'] + 1} (turn {d['turn']}) differs from the recording"
                    )
                    drift.append(f"{line}: {'; '.join(d['changes'])}")
                    shown = _("model call %(call)s (turn %(turn)s) differs from the recording") % {
                        "call": d["call"] + 1,
                        "turn": d["turn"],
                    }
                    self.stdout.write(f"      {shown}:")
                    for change in localized_data(d)["changes"]:
                        self.stdout.write(f"        {change}")
                for r in evaluation_.results:
                    if r.status == "failed":
                        step = _("step %(number)s") % {"number": r.step + 1}
                        self.stdout.write(f"      {step}: {r.line}")
                        self.stdout.write(f"        {localize(r.message)}")
                if drift:  # a drift fails the JUnit case too, first, with what changed
                    rows = tuple(
                        ExpectationResult(-1, d["turn"], "drift", text, "", "failed", text)
                        for d, text in zip(outcome.drift, drift, strict=True)
                    )
                    evaluation_ = dataclasses.replace(
                        evaluation_,
                        results=rows + evaluation_.results,
                        status="failed",
                        failed=evaluation_.failed + len(rows),
                    )
                cases.append(
                    JUnitCase(
                        suite=app.name,
                        classname=f"{app.name}.{agent.display_name}",
                        name=scenario.name,
                        evaluation=evaluation_,
                        seconds=time.monotonic() - started,
                    )
                )
        self.stdout.write(
            _("%(passed)s passed, %(failed)s failed, %(drifted)s drifted, %(missing)s not recorded")
            % {
                "passed": counts["passed"],
                "failed": counts["failed"],
                "drifted": counts["drifted"],
                "missing": counts["not recorded"],
            }
        )
        _write_junit(options, cases)
        if counts["drifted"]:
            raise CommandError(
                _(
                    "%(count)s scenario(s) drifted from their recording: re-record them live "
                    "(--model, or Re-record live in the designer)."
                )
                % {"count": counts["drifted"]},
                returncode=1,
            )
        _exit_if_failed(counts["failed"])

    def report(self, app: AgentApp, data: dict[str, Any], cases: list[JUnitCase]) -> None:
        evaluation_ = _evaluation(data)  # English: the JUnit XML is the same in every language
        shown = _evaluation(localized_data(data))  # what the operator reads: their language
        counts = _counts(
            "expectations",
            evaluation_.passed,
            evaluation_.failed,
            evaluation_.needs_model,
            stopped=evaluation_.stopped,
        )
        live = ""
        if data.get("live"):
            run = data["live"]
            live = (
                " ["
                + _(
                    "live %(model)s: %(model_calls)s model calls, %(tokens_in)s+%(tokens_out)s "
                    "tokens, $%(cost)s"
                )
                % {**run, "cost": f"{run['cost']:.4f}"}
                + (_(", error: %(error)s") % {"error": run["error"]} if run["error"] else "")
                + "]"
            )
        self.stdout.write(
            f"{_LABEL[evaluation_.status]}  {app.name} / {data['agent_name']} / "
            f"{data['name']}  ({counts}){live}"
        )
        for r in shown.results:
            # A failure, or one the calls the golden leaves out decide (said why).
            if r.status in ("failed", "stopped") or r.left_to_model:
                note = f" [{r.note}]" if r.note else ""
                step = _("step %(number)s") % {"number": r.step + 1}
                self.stdout.write(f"      {step}{note}: {r.line}")
                self.stdout.write(f"        {r.message}")
                for d in r.differences:
                    self.stdout.write(f"          {d}")
        if data.get("live") and data["live"]["error"]:  # why the live run stopped, in words
            for d in localized_data(data["diagnostics"]):
                if d["code"] == "SC421":
                    self.stdout.write(f"      {d['code']}: {d['message']}")
        errors = tuple(d["message"] for d in data["diagnostics"] if d["severity"] == "error")
        cases.append(
            JUnitCase(
                suite=app.name,
                classname=f"{app.name}.{data['agent_name']}",
                name=data["name"],
                evaluation=evaluation_,
                seconds=float(data.get("seconds", 0.0)),
                errors=errors,
            )
        )

    def report_user_scenario(
        self, app: AgentApp, data: dict[str, Any], cases: list[JUnitCase]
    ) -> None:
        """A CX evaluation of the scenario kind the live job ran: a simulated user, then
        the rubrics judged."""
        evaluation_ = _evaluation(data)  # English: the JUnit XML is the same in every language
        shown = _evaluation(localized_data(data))
        self.stdout.write(
            f"{_LABEL[evaluation_.status]}  {app.name} / {data['name']}  ("
            + ngettext(
                "simulated user, %(turns)s turn, ended by %(ended_by)s",
                "simulated user, %(turns)s turns, ended by %(ended_by)s",
                data["turns"],
            )
            % {"turns": data["turns"], "ended_by": data["ended_by"]}
            + "; "
            + _counts("expectations", evaluation_.passed, evaluation_.failed)
            + ")"
        )
        for r in shown.results:
            mark = "ok  " if r.status == "passed" else "FAIL"
            self.stdout.write(f"      {mark} {r.line}")
            self.stdout.write(f"        {r.message}")
        cases.append(
            JUnitCase(
                suite=app.name,
                classname=f"{app.name}.simulated_user",
                name=data["name"],
                evaluation=evaluation_,
                seconds=float(data.get("seconds", 0.0)),
            )
        )
