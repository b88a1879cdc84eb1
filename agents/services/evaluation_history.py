"""The history of an app's evaluation runs: one ``EvaluationRun`` row per Run all.

Written when a Run all is submitted or starts (``run_started``), finished with its totals
and matrix (``run_finished``, the matrix from ``evaluation_matrix``), pruned to the newest
``EVALUATION_RUNS_KEPT``; read by the designer's history page and the API
(``run_list``, ``run_for_app``, ``history_data``, ``golden_strips``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.utils import timezone

from agents.models import JOB_ACTIVE, JOB_FINISHED, AgentApp, EvaluationRun, Job, JobStatus
from agents.services.evaluation import run_fields


def run_started(job: Job) -> EvaluationRun:
    """The history row of a Run all (written when it is submitted, or here; once per job),
    now running."""
    run, _ = EvaluationRun.objects.get_or_create(job=job, defaults=run_fields(job))
    if run.status != JobStatus.RUNNING:
        run.status = JobStatus.RUNNING
        run.save(update_fields=["status"])
    return run


def run_finished(job: Job, status: str, matrix: dict[str, Any]) -> EvaluationRun | None:
    """Write the run's totals and matrix, then prune the app's oldest runs."""
    run = EvaluationRun.objects.filter(job=job).first()
    if run is None:
        return None
    totals = matrix.get("totals", {})
    first = next(iter(totals.values()), {}) if totals else {}
    run.status = status
    run.matrix = matrix
    run.totals = {
        "goldens": len(matrix.get("rows", [])),
        "pass_rate": first.get("pass_rate"),
        "passed": first.get("passed", 0),
        "failed": first.get("failed", 0),
        # Goldens flaky in at least one column (a golden flaky in four columns is one).
        "flaky": sum(
            1
            for row in matrix.get("rows", [])
            if any(c.get("flaky") for c in row["cells"].values())
        ),
        "tokens_in": sum(t.get("tokens_in", 0) for t in totals.values()),
        "tokens_out": sum(t.get("tokens_out", 0) for t in totals.values()),
        # The revisions its goldens ran at (`revisions_of`): "mixed" after a retried run.
        "revisions": matrix.get("revisions"),
    }
    run.cost = round(sum(t.get("cost", 0.0) for t in totals.values()), 6)
    run.finished_at = timezone.now()
    run.save()
    prune(job.app_id)
    return run


def prune(app_id: int) -> int:
    """Keep the newest ``EVALUATION_RUNS_KEPT`` runs of the app (0: keep all)."""
    kept = int(settings.EVALUATION_RUNS_KEPT)
    if kept <= 0:
        return 0
    old = EvaluationRun.objects.filter(app_id=app_id).order_by("-created_at", "-pk")[kept:]
    ids = list(old.values_list("pk", flat=True))
    if not ids:
        return 0
    return EvaluationRun.objects.filter(pk__in=ids).delete()[0]


def settle(app: AgentApp) -> int:
    """Runs still shown queued or running whose job has ended without finishing them (a
    Run all cancelled or superseded before it ran, or one that failed) take the job's end:
    its status and time. Read before the history is shown, so no run waits forever."""
    settled = 0
    stuck = EvaluationRun.objects.filter(app=app, status__in=JOB_ACTIVE).select_related("job")
    for run in stuck:
        job = run.job
        if job is not None and job.status not in JOB_FINISHED:
            continue
        run.status = job.status if job is not None else JobStatus.CANCELLED
        run.finished_at = (job.finished_at if job is not None else None) or timezone.now()
        run.save(update_fields=["status", "finished_at"])
        settled += 1
    return settled


def run_list(app: AgentApp) -> Iterable[EvaluationRun]:
    settle(app)
    return EvaluationRun.objects.filter(app=app).select_related("owner").defer("matrix")


def run_for_app(app: AgentApp, run_id: Any) -> EvaluationRun:
    settle(app)
    with contextlib.suppress(ValueError, TypeError):
        found = EvaluationRun.objects.filter(app=app, pk=int(run_id)).first()
        if found is not None:
            return found
    raise EvaluationRun.DoesNotExist("No such evaluation run for this app.")


def history_data(run: EvaluationRun, *, matrix: bool = True) -> dict[str, Any]:
    """A history row as JSON (the API's and the download's; `matrix` False: without its
    matrix). Not ``evaluation.run_data``, a scenario run's outcome."""
    data: dict[str, Any] = {
        "id": run.pk,
        "job": str(run.job_id) if run.job_id else None,
        "owner": run.owner.get_username() if run.owner_id and run.owner else None,
        "status": run.status,
        "created_at": run.created_at,
        "finished_at": run.finished_at,
        "app_revision": run.app_revision,
        "models": run.models_used,
        "versions": run.versions,
        "repeat": run.repeat,
        "threshold": run.threshold,
        "totals": run.totals,
        "cost": run.cost,
        # Whether its goldens ran at more than one app revision, and which at which.
        "revisions": (run.totals or {}).get("revisions"),
    }
    if matrix:
        data["matrix"] = run.matrix
    return data


def golden_strips(runs: list[EvaluationRun], last: int = 10) -> list[dict[str, Any]]:
    """Per golden, its status in each of the `last` runs (oldest first; "" when absent):
    the first column of each run."""
    chosen = list(reversed(runs[:last]))
    goldens: dict[str, list[str]] = {}
    for index, run in enumerate(chosen):
        columns = (run.matrix or {}).get("columns") or []
        if not columns:
            continue
        key = columns[0]["key"]
        for row in (run.matrix or {}).get("rows", []):
            cell = row["cells"].get(key)
            marks = goldens.setdefault(row["golden"], [""] * len(chosen))
            marks[index] = cell["status"] if cell else ""
    return [{"golden": g, "marks": marks} for g, marks in sorted(goldens.items())]
