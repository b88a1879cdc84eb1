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

This module plans the pieces, runs them and gathers their outcomes; the matrix they make
is ``evaluation_matrix``'s, the history row ``evaluation_history``'s.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models.fields.json import KT
from django.utils import timezone

from agents.core.diagnostics import Message
from agents.i18n import with_i18n
from agents.models import JOB_FINISHED, AgentApp, Job, JobStatus, Scenario
from agents.services import jobs, sandbox_door
from agents.services.jobs import JobContext

PIECE_KIND = "evaluate_piece"
WORKING_COPY = ""  # a column's version: the app as it is now
OFFLINE = ""  # a column's model: the scripted simulation
WAIT_SECONDS = 0.25  # how often the parent looks at pieces other workers run
STOP_WAIT_SECONDS = 5.0  # after a stop, how long the parent waits for its running pieces


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
        self._held = contextlib.ExitStack()  # the widened sandbox pool, while threads run
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
        self._held.enter_context(sandbox_door.sessions_for_threads(len(self._threads)))
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
            self._held.close()
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


def after_stop(children: list[Job], gathered: Any, wait: float = STOP_WAIT_SECONDS) -> list[Job]:
    """After a stop (a Cancel, a cap): the pieces not gathered yet (`gathered`: the piece
    keys the parent has), so that each is a cell of the matrix: those the stop cancelled
    before they ran, and those still running once they have ended (a running piece stops
    at its next call; at most `wait` seconds: one still running then is shown cancelled).
    What they spent is then in the run's tokens and cost."""
    ids = [c.pk for c in children if c.params.get("piece") not in gathered]
    deadline = time.monotonic() + wait
    running = Job.objects.filter(pk__in=ids, status=JobStatus.RUNNING)
    while not connection.in_atomic_block and running.exists() and time.monotonic() < deadline:
        time.sleep(WAIT_SECONDS)
    return list(Job.objects.filter(pk__in=ids).order_by("queued_at", "pk"))


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
        if scenario is None:  # an error cell where the golden stood in the matrix
            return {**_gone(params), **_where(params)}
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
    return with_i18n(_gone_fields(params), "error")


def _gone_fields(params: dict[str, Any]) -> dict[str, Any]:
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
        # In the reader's language too (``with_i18n``, ``agents.i18n.localized_data``).
        "error": Message("The scenario was deleted before its turn came."),
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
    """What a finished piece gave: its result, or an error cell naming why it has none (a
    piece still going when its run was stopped: cancelled)."""
    if child.status == JobStatus.SUCCEEDED and isinstance(child.result, dict):
        return child.result
    params = child.params
    reason = child.error_message or child.status
    if child.status not in JOB_FINISHED:  # still going when its run was stopped (after_stop)
        reason = Message("Still running when the run was stopped.")
    return with_i18n(
        {
            **_gone_fields(params),
            **_where(params),
            "status": "error"
            if child.status in (JobStatus.SUCCEEDED, JobStatus.FAILED)
            else "cancelled",
            "error": reason,
            **(
                {k: v for k, v in child.result.items() if k in ("results", "live", "diagnostics")}
                if isinstance(child.result, dict)
                else {}
            ),
        },
        "error",
    )


def count_usage(ctx: JobContext, outcome: dict[str, Any]) -> None:
    """A finished piece's spending added to its parent's: the job's caps hold over all its
    pieces (a piece is capped on its own too), checked as each piece ends."""
    usage = outcome.get("usage") or {}
    ctx.caps.code_calls += int(usage.get("code_calls") or 0)
    ctx.caps.model_calls += int(usage.get("model_calls") or 0)
    ctx.caps.tokens += int(usage.get("tokens") or 0)
