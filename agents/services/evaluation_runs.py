"""Evaluation runs: a Run all fanned out over workers, repeated, across models and versions.

A Run all (``evaluate_app``) plans one *piece* per golden x repetition x model x version and
writes each as a child job (kind ``evaluate_piece``, ``Job.parent``) on the jobs queue: any
worker runs them — the database queue by default, RQ on Redis across machines. The parent
job runs pieces too while it waits (``fan_out``: several at once in threads, since a live
piece spends its time waiting on a model and an offline one on sandbox processes), then
gathers them into one ``EvaluationRun`` (the history row) with its matrix: goldens as rows,
(model, version) as columns, each cell its repetitions' marks, pass rate, cost, tokens and
latency. Why threads, not asyncio: the engine, the ORM, the sandbox door and both SDK clients
are synchronous; a thread waiting on a socket or a child process releases the GIL.

Every piece is a job: progress counts the pieces done, Cancel cancels every piece, a piece
lost with its worker is queued again by ``jobs_recover`` like any job, a piece that fails is
a failed cell (the others go on), and a piece's outcome is stored once (its own job's
result), so a parent retried after its worker died gathers what exists and runs the rest.

The first column's first repetition of each golden is the Run all of before (the job's
``scenarios``, the goldens' badges); the rest is the matrix (``matrix``), kept on the run.
"""

from __future__ import annotations

import contextlib
import csv
import io
import statistics
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models.fields.json import KT
from django.utils import timezone

from agents.core.diagnostics import Message
from agents.models import JOB_FINISHED, AgentApp, EvaluationRun, Job, JobStatus, Scenario
from agents.services import jobs, sandbox_door
from agents.services.common import ServiceError, error
from agents.services.evaluation import run_fields
from agents.services.jobs import JobContext

PIECE_KIND = "evaluate_piece"
WORKING_COPY = ""  # a column's version: the app as it is now
OFFLINE = ""  # a column's model: the scripted simulation
WAIT_SECONDS = 0.25  # how often the parent looks at pieces other workers run


def threads_for(model_count: int) -> int:
    """How many pieces one worker runs at once: ``EVALUATION_THREADS_LIVE`` when a model is
    asked (pieces wait on it), else ``EVALUATION_THREADS``."""
    name = "EVALUATION_THREADS_LIVE" if model_count else "EVALUATION_THREADS"
    return max(1, int(getattr(settings, name)))


# ---------------------------------------------------------------- the plan


@dataclass(frozen=True)
class Column:
    model: str
    version: str

    @property
    def key(self) -> str:
        return f"{self.model or 'offline'}@{self.version or 'current'}"

    def as_json(self) -> dict[str, str]:
        return {"key": self.key, "model": self.model, "version": self.version}


@dataclass(frozen=True)
class Piece:
    key: str  # the job item's key: "scenario:PK" for the Run all of before, else longer
    golden: str  # "agent / scenario": a row of the matrix
    column: Column
    repetition: int
    position: int
    primary: bool  # first column, first repetition: the goldens' badges
    params: dict[str, Any]


def columns_of(params: dict[str, Any]) -> list[Column]:
    model_list = list(params.get("models") or [params.get("model") or OFFLINE])
    version_list = [str(v) for v in (params.get("versions") or [WORKING_COPY])]
    return [Column(m or OFFLINE, v) for v in version_list for m in model_list]


def golden_name(agent: str, scenario: str) -> str:
    return f"{agent} / {scenario}"


def _version_goldens(app: AgentApp, version: str) -> list[tuple[str, str]]:
    from agents.services import versions

    found = _find_version(app, version)
    _, scenario_specs = versions.version_specs(found)
    return [(s.agent, s.name) for s in scenario_specs]


def _find_version(app: AgentApp, version: str) -> Any:
    from agents.services import versions

    if version.isdigit():
        return versions.version_for_app(app, number=int(version))
    return versions.version_for_app(app, label=version)


def plan(job: Job, pairs: list[tuple[Any, Any]]) -> list[Piece]:
    """The pieces of a Run all: `pairs` (agent, scenario) of the working copy; a version's
    column runs that version's own goldens (by agent and name)."""
    params = job.params
    repeat = max(1, int(params.get("repeat") or 1))
    record = bool(params.get("record", True))
    pieces: list[Piece] = []
    rows: dict[str, int] = {}
    for c_index, column in enumerate(columns_of(params)):
        if column.version == WORKING_COPY:
            goldens = [(a.display_name, s.name, s.pk) for a, s in pairs]
        else:
            goldens = [(a, n, None) for a, n in _version_goldens(job.app, column.version)]
            wanted = {(a.display_name, s.name) for a, s in pairs}
            goldens = [g for g in goldens if (g[0], g[1]) in wanted]
        for agent_name, name, pk in goldens:
            golden = golden_name(agent_name, name)
            row = rows.setdefault(golden, len(rows))
            for repetition in range(repeat):
                primary = c_index == 0 and repetition == 0 and pk is not None
                key = f"scenario:{pk}" if primary else f"piece:{row}:{c_index}:{repetition}"
                pieces.append(
                    Piece(
                        key=key,
                        golden=golden,
                        column=column,
                        repetition=repetition,
                        position=len(pieces),
                        primary=primary,
                        params={
                            "piece": key,
                            "golden": golden,
                            "agent_name": agent_name,
                            "name": name,
                            "scenario": pk,
                            "model": column.model,
                            "version": column.version,
                            "column": column.key,
                            "repetition": repetition,
                            # The goldens' badges: the working copy's first run only.
                            "record": record and primary,
                            "judge": params.get("judge") or "",
                        },
                    )
                )
    return pieces


# ---------------------------------------------------------------- the pieces (children)


def spawn(ctx: JobContext, pieces: list[Piece]) -> list[Job]:
    """The child job of every piece (made once: a parent run again finds its children),
    queued after the transaction commits when the parent's pieces go on the queue."""
    parent = ctx.job
    existing = {c.params.get("piece"): c for c in Job.objects.filter(parent=parent)}
    enqueue = bool(parent.params.get("enqueue_pieces", True))
    made: list[Job] = []
    with transaction.atomic():
        for piece in pieces:
            child = existing.get(piece.key)
            if child is None:
                child = Job.objects.create(
                    kind=PIECE_KIND,
                    owner_id=parent.owner_id,
                    app_id=parent.app_id,
                    parent=parent,
                    params={**piece.params, "app_revision": parent.params.get("app_revision")},
                    caps=parent.caps,
                    queued_at=timezone.now(),
                )
                if enqueue:
                    pk = child.pk
                    transaction.on_commit(lambda pk=pk: jobs.job_enqueue(pk))
            made.append(child)
    return made


def _run_one(job_id: Any) -> None:
    """A piece run here: a thread of the pool, or the parent's thread (a Run all lends no
    runner while its pieces run: each piece, a job, lends its own). Not in a fresh
    ``contextvars.Context``: where an event loop runs in the thread (Playwright's sync API),
    Django keeps the thread's database connection in a context variable, and a fresh
    context would open a second connection that waits on the first's transaction."""
    jobs.job_run(str(job_id))


class _Pool:
    """`size` threads taking the queued pieces in order until none is left; each piece on
    its own database connection, closed when its thread ends."""

    def __init__(self, ids: list[Any], size: int, woken: threading.Event) -> None:
        self._todo = list(ids)
        self._lock = threading.Lock()
        self._woken = woken
        self.failures: list[BaseException] = []
        self._threads = [
            threading.Thread(target=self._loop, name=f"piece-{n}", daemon=True)
            for n in range(min(size, len(ids)))
        ]

    def _take(self) -> Any:
        with self._lock:
            return self._todo.pop(0) if self._todo else None

    def _loop(self) -> None:
        try:
            while (pk := self._take()) is not None:
                _run_one(pk)
                self._woken.set()
        except BaseException as exc:
            self.failures.append(exc)
        finally:
            connection.close()
            self._woken.set()

    def start(self) -> None:
        # A warm sandbox session for each thread while they run (the pool's own size else).
        self._widened = sandbox_door.sessions_for_threads(len(self._threads))
        self._widened.__enter__()
        for thread in self._threads:
            thread.start()

    def alive(self) -> bool:
        return any(t.is_alive() for t in self._threads)

    def stop(self) -> None:
        with self._lock:
            self._todo.clear()

    def join(self) -> None:
        try:
            for thread in self._threads:
                thread.join()
        finally:
            widened, self._widened = getattr(self, "_widened", None), None
            if widened is not None:
                widened.__exit__(None, None, None)
        if self.failures:
            raise self.failures[0]


def longest_first(job: Job, children: list[Job], steps: dict[Any, int]) -> list[Any]:
    """The order a worker's threads take the pieces in: the longest first, so that they end
    together rather than one long golden running alone at the end with the other threads
    idle (bella_notte's *Happy Path - Linear*: 14 of a 17 s Run all, started 11th of 28).
    A piece's length is its golden's seconds in the app's last Run all (same golden and
    column); a piece without one goes first, by its number of steps (`steps`, by scenario
    id). Only the order changes: each piece's outcome and place in the run are its own."""
    rows = (
        Job.objects.filter(app_id=job.app_id, kind=PIECE_KIND, status=JobStatus.SUCCEEDED)
        .exclude(parent_id=job.pk)
        .order_by("-finished_at")
        .annotate(seconds=KT("result__seconds"))
        .values_list("params", "seconds")[: 4 * len(children)]
    )
    last: dict[tuple[Any, Any], float] = {}
    for params, seconds in rows:
        with contextlib.suppress(TypeError, ValueError):
            last.setdefault((params.get("golden"), params.get("column")), float(seconds))

    def length(child: Job) -> tuple[float, int]:
        known = last.get((child.params.get("golden"), child.params.get("column")))
        return (
            -(known if known is not None else float("inf")),
            -steps.get(child.params.get("scenario"), 0),
        )

    return [c.pk for c in sorted(children, key=length)]


def fan_out(
    ctx: JobContext,
    children: list[Job],
    *,
    threads: int,
    on_finished: Callable[[Job], None],
    order: list[Any] | None = None,
) -> None:
    """Run the queued pieces here, `threads` at a time, while other workers take theirs from
    the queue; call `on_finished` once for each piece as it ends (in this thread). Returns
    when every piece has ended; a Cancel (or a cap) of the parent cancels the rest and
    raises ``JobStopped`` as ``ctx.check`` does. `order`: the pieces' ids in the order the
    threads take them (``longest_first``; default: as given). Inside a transaction (the
    tests' queue, an immediate backend) the pieces run one after another in this thread, as
    given: another connection would not see the transaction's rows."""
    ids = [c.pk for c in children]
    seen: set[Any] = set()
    woken = threading.Event()

    shown = [""]

    def gather() -> bool:
        ended = Job.objects.filter(pk__in=ids, status__in=JOB_FINISHED).exclude(pk__in=seen)
        before = len(seen)
        for child in ended.order_by("queued_at", "pk"):
            seen.add(child.pk)
            on_finished(child)
        # What runs now (the page's "running agent / scenario"): the first running piece.
        running = Job.objects.filter(pk__in=ids, status=JobStatus.RUNNING).order_by(
            "queued_at", "pk"
        )
        params = running.values_list("params", flat=True).first() or {}
        current = str(params.get("golden") or "")
        if len(seen) != before or current != shown[0]:
            shown[0] = current
            ctx.progress(done=len(seen), current=current)
        return len(seen) >= len(ids)

    pool = None
    if threads > 1 and not connection.in_atomic_block and len(ids) > 1:
        pool = _Pool(order or ids, threads, woken)
    try:
        if pool is None:
            for pk in ids:
                ctx.check()
                _run_one(pk)
                gather()
        else:
            pool.start()
        while not gather():  # pieces other workers run
            ctx.check()
            if pool is None or not pool.alive():
                for pk in _queued(ids):  # queued again after their worker died: run here
                    _run_one(pk)
            woken.wait(WAIT_SECONDS)
            woken.clear()
        if pool is not None:
            pool.join()
    except BaseException:
        jobs.pieces_cancel(ctx.job)
        if pool is not None:
            pool.stop()
            with contextlib.suppress(BaseException):
                pool.join()
        raise


def run_with_siblings(job_id: Any) -> None:
    """A piece a worker took from the queue, with its queued siblings: up to the threads
    of its run at once (a live piece waits on its model; one piece at a time would leave
    the worker idle). Each is claimed as any job is: one another worker holds is skipped."""
    row = Job.objects.filter(pk=job_id).values("parent_id", "params").first()
    if row is None or row["parent_id"] is None or connection.in_atomic_block:
        jobs.job_run(str(job_id))
        return
    parent = Job.objects.filter(pk=row["parent_id"]).values_list("params", flat=True).first()
    live = any(c.model for c in columns_of(parent or {}))
    threads = int((parent or {}).get("threads") or threads_for(live))
    siblings = Job.objects.filter(parent_id=row["parent_id"], status=JobStatus.QUEUED)
    ids = [job_id, *_queued(list(siblings.exclude(pk=job_id).values_list("pk", flat=True)))]
    if threads <= 1 or len(ids) == 1:
        jobs.job_run(str(job_id))
        return
    pool = _Pool(ids, threads, threading.Event())
    pool.start()
    pool.join()


def _queued(ids: list[Any]) -> list[Any]:
    return list(
        Job.objects.filter(pk__in=ids, status=JobStatus.QUEUED)
        .order_by("queued_at", "pk")
        .values_list("pk", flat=True)
    )


# ---------------------------------------------------------------- one piece


def piece_run(ctx: JobContext) -> dict[str, Any]:
    """An ``evaluate_piece`` job: one golden, one repetition, one (model, version)."""
    from agents.services import evaluation

    job, params = ctx.job, ctx.job.params
    model = params.get("model") or None
    started = time.monotonic()
    if not params.get("version"):
        loaded = job.app
        scenario = _piece_scenario(loaded, params)
        if scenario is None:
            return _gone(params)
        agent = scenario.agent
        run = evaluation.scenario_run(
            app=loaded,
            agent=agent,
            scenario=scenario,
            runner=ctx.runner,
            model=model,
            actor=job.owner,
            should_stop=ctx.stop_now if model else None,
        )
        data = evaluation.run_data(run)
        # The revision it ran at: a Run all retried after an edit may gather pieces of two
        # (``revisions_of``: the job and its run then say "mixed").
        data["app_revision"] = loaded.revision
        # The golden's badge, once: a piece run again after its worker died writes none.
        with transaction.atomic():
            if ctx.item("recorded", {}) and params.get("record") and not ctx.cancelled:
                evaluation.scenario_result_record(
                    scenario=scenario,
                    evaluation=run.evaluation,
                    app_revision=loaded.revision,
                    actor=job.owner,
                )
    else:
        data = _version_piece(ctx, params, model)
    return {
        **data,
        **_where(params),
        "seconds": round(time.monotonic() - started, 3),
        # What it spent: its parent counts its pieces' spending against the job's caps.
        "usage": {
            "code_calls": ctx.caps.code_calls,
            "model_calls": ctx.caps.model_calls,
            "tokens": ctx.caps.tokens,
        },
    }


def _piece_scenario(app: AgentApp, params: dict[str, Any]) -> Any:
    """The piece's golden of the working copy: its scenario (with its agent and steps), by
    id, else by agent and name (a scenario made again since the run was planned); None
    when it is gone. Only that row: the app's spec is cached by its revision
    (``selectors.app_spec``), and loading the whole app for each of 28 pieces cost more
    than a piece's own engine time."""
    rows = Scenario.objects.filter(agent__app=app).select_related("agent")
    rows = rows.prefetch_related("steps")
    found = rows.filter(pk=params.get("scenario")).first() if params.get("scenario") else None
    if found is None:
        named = rows.filter(
            agent__display_name=params.get("agent_name") or "", name=params.get("name") or ""
        )
        found = named.order_by("agent__pk", "pk").first()
    return found


def _where(params: dict[str, Any]) -> dict[str, Any]:
    """Where a piece's outcome stands in the matrix: its golden, column and repetition."""
    return {
        "golden": params.get("golden"),
        "column": params.get("column"),
        "model": params.get("model") or "",
        "version": params.get("version") or "",
        "repetition": params.get("repetition", 0),
    }


def _gone(params: dict[str, Any]) -> dict[str, Any]:
    return {
        "scenario": params.get("scenario"),
        "name": params.get("name"),
        "agent_name": params.get("agent_name"),
        "status": "error",
        "passed": 0,
        "failed": 0,
        "needs_model": 0,
        "stopped": 0,
        "results": [],
        "diagnostics": [],
        "error": str(Message("The scenario was deleted before its turn came.")),
    }


def _version_piece(ctx: JobContext, params: dict[str, Any], model: str | None) -> dict[str, Any]:
    """A golden of a saved version, offline or live (recorded without a scenario row)."""
    from dataclasses import asdict

    from agents import selectors
    from agents.core.evaluate import allows_extra_calls, evaluate
    from agents.i18n import with_i18n
    from agents.services import evaluation, versions
    from agents.services.live_runs import run_live_specs
    from agents.services.sandbox_door import simulate_bounded

    app = ctx.job.app
    version = _find_version(app, str(params["version"]))
    spec, scenario_specs = versions.version_specs(version)
    found = [
        s for s in scenario_specs if s.agent == params["agent_name"] and s.name == params["name"]
    ]
    if not found:
        return _gone(params)
    scenario_spec = found[0]
    live = None
    if model:
        agent = next((a for a in spec.agents if a.name == scenario_spec.agent), None)
        live = run_live_specs(
            app=app,
            spec=spec,
            scenario_spec=scenario_spec,
            scenario=None,
            agent_name=scenario_spec.agent,
            agent_cx=agent.cx if agent is not None else None,
            model=model,
            actor=ctx.job.owner,
            runner=ctx.runner,
            should_stop=ctx.stop_now,
        )
        result, outcome = live.result, live.evaluation
    else:
        result = simulate_bounded(spec, scenario_spec, runner=ctx.runner)
        allow = allows_extra_calls(selectors.app_cx_settings(app), scenario_spec)
        outcome = evaluate(scenario_spec, result, spec, extra_calls_allowed=allow)
    data = {
        "scenario": None,
        "name": scenario_spec.name,
        "agent": None,
        "agent_name": scenario_spec.agent,
        "status": outcome.status,
        "passed": outcome.passed,
        "failed": outcome.failed,
        "needs_model": outcome.needs_model,
        "stopped": outcome.stopped,
        "results": [with_i18n(asdict(r), "message", "differences") for r in outcome.results],
        "diagnostics": [with_i18n(d.to_dict(), "message") for d in result.diagnostics],
    }
    if live is not None:
        data["live"] = evaluation.live_figures(live)
    return data


def piece_outcome(child: Job) -> dict[str, Any]:
    """What a finished piece gave: its result, or an error cell naming why it has none."""
    if child.status == JobStatus.SUCCEEDED and isinstance(child.result, dict):
        return child.result
    params = child.params
    reason = child.error_message or child.status
    return {
        **_gone(params),
        **_where(params),
        "status": "cancelled" if child.status == JobStatus.CANCELLED else "error",
        "error": str(reason),
        **(
            {k: v for k, v in child.result.items() if k in ("results", "live", "diagnostics")}
            if isinstance(child.result, dict)
            else {}
        ),
    }


# ---------------------------------------------------------------- the matrix


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
        return {"step": None, "kind": "error", "message": outcome["error"]}
    return None


def _cell(outcomes: list[dict[str, Any]], threshold: float) -> dict[str, Any]:
    runs = [o.get("status", "error") for o in sorted(outcomes, key=lambda o: o["repetition"])]
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
    seconds = [float(o.get("seconds") or 0) for o in outcomes]
    first_bad = next(
        (o for o in sorted(outcomes, key=lambda o: o["repetition"]) if o.get("status") != "passed"),
        None,
    )
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
        for golden, cells in rows.items()
    ]
    totals = {}
    for column in columns:
        cells = [r["cells"][column.key] for r in matrix_rows if column.key in r["cells"]]
        seconds = [float(o.get("seconds") or 0) for o in outcomes if o.get("column") == column.key]
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


def matrix_csv(matrix: dict[str, Any]) -> str:
    """One line per (golden, model, version)."""
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
            writer.writerow(
                [
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
            )
    return out.getvalue()


# ---------------------------------------------------------------- the history


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
        "flaky": sum(t.get("flaky", 0) for t in totals.values()),
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


def run_list(app: AgentApp) -> Iterable[EvaluationRun]:
    return EvaluationRun.objects.filter(app=app).select_related("owner").defer("matrix")


def run_for_app(app: AgentApp, run_id: Any) -> EvaluationRun:
    with contextlib.suppress(ValueError, TypeError):
        found = EvaluationRun.objects.filter(app=app, pk=int(run_id)).first()
        if found is not None:
            return found
    raise EvaluationRun.DoesNotExist("No such evaluation run for this app.")


def run_data(run: EvaluationRun, *, matrix: bool = True) -> dict[str, Any]:
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


def count_usage(ctx: JobContext, outcome: dict[str, Any]) -> None:
    """A finished piece's spending added to its parent's: the job's caps hold over all its
    pieces (a piece is capped on its own too), checked as each piece ends."""
    usage = outcome.get("usage") or {}
    ctx.caps.code_calls += int(usage.get("code_calls") or 0)
    ctx.caps.model_calls += int(usage.get("model_calls") or 0)
    ctx.caps.tokens += int(usage.get("tokens") or 0)
