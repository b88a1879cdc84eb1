"""What the Run-all fragment shows of a job (the designer page on return, and the job
views' polling fragment): progress, rows so far, the summary."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from agents import selectors
from agents.i18n import localize
from agents.models import JOB_ACTIVE, AgentApp, Job
from agents.services import jobs

POLL_MS = 500  # the fragment asks for itself again this often while the job runs


def run_all_context(app: AgentApp, job: Job) -> dict[str, Any]:
    """What the Run-all fragment shows of `job`: progress, rows so far, the summary."""
    data = jobs.job_data(job)
    scenarios = (data["result"] or {}).get("scenarios", [])
    rows = [
        {
            **s,
            "failed_steps": [r for r in s["results"] if r["status"] in ("failed", "stopped")],
        }
        for s in scenarios
    ]
    start = job.started_at
    end = job.finished_at or timezone.now()
    finished = job.status not in JOB_ACTIVE
    summary = (data["result"] or {}).get("summary") if finished else None
    # A live Run all ran the CX evaluations of the scenario kind: they are rows of their own.
    ran = {s.get("file") for s in scenarios if s.get("kind") == "simulated_user"}
    needs_model = [
        (name, file)
        for name, file in (selectors.app_needs_model_evaluations(app) if finished else [])
        if file not in ran
    ]
    # A live Run all's figures over its rows: the summary's "live · model" badge.
    lives = [s["live"] for s in scenarios if isinstance(s.get("live"), dict)]
    live = None
    if job.params.get("model"):
        live = {
            "model": job.params["model"],
            "calls": sum(int(x.get("model_calls") or 0) for x in lives),
            "tokens_in": sum(int(x.get("tokens_in") or 0) for x in lives),
            "tokens_out": sum(int(x.get("tokens_out") or 0) for x in lives),
            "cost": sum(float(x.get("cost") or 0) for x in lives),
        }
    # A retried Run all whose goldens ran at more than one app revision says which at which.
    revisions = (data["result"] or {}).get("revisions") if finished else None
    mixed = revisions["by_revision"] if revisions and revisions.get("mixed") else []
    return {
        "job": job,
        "live": live,
        "mixed": mixed,
        "rows": rows,
        "done": job.progress_done,
        "total": job.progress_total,
        "elapsed": (end - start).total_seconds() if start else 0.0,
        "active": not finished,
        "summary": summary,
        "needs_model": needs_model,
        # Every "?" row: scenarios whose expectations need a model, and CX evaluations.
        "needs_model_count": (summary or {}).get("needs_model", 0) + len(needs_model),
        "poll_ms": POLL_MS,
        # Queued longer than a worker takes to pick it up: why (no worker seen: the fix).
        "waiting": localize(wait) if (wait := jobs.queue_wait(job)) else "",
    }
