"""The built-in kinds of job (`agents.services.jobs.register`).

* ``evaluate_app``: every scenario of the app (or the `scenarios` ids given), each stored
  as its last result and as one item of the job; the result is the API's evaluate body.
* ``evaluate_scenario``: one scenario (`scenario` id), the same way.
  Both take `model` (a configured model's name): the scenarios then run live.
* ``version_diff``: the version diff's scenario results (the page shows the rest at once).
* ``import_app``: a large upload's import (`agents.services.exchange.app_import_submit`).
* ``import_evalset``: a large ADK evalset's cases as scenarios of an app
  (`agents.services.exchange.app_import_evalset_submit`).

* ``live_run``: one scenario live, or a replay of a recorded run (``live_jobs``).

Each runs its simulations on the runner its job lends (``ctx.runner``: the one door's, with
the job's caps and its cancel hook, ``JobContext.lending``); a kind cannot open one of its
own (``sandbox_door.OwnRunnerRefused``). A new kind: a function of the context returning
JSON, registered here with `_register` (docs/architecture.md, "A new job kind").
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

from django.utils.translation import gettext_lazy as _

from agents.core.diagnostics import Message
from agents.core.run_data import evaluation_data, result_data
from agents.i18n import with_i18n
from agents.models import AppVersion
from agents.services import (
    evaluation,
    evaluation_history,
    evaluation_matrix,
    evaluation_runs,
    jobs,
    versions,
)
from agents.services.jobs import JobContext, register
from agents.services.live_jobs import RUN_ITEM


def _lent(ctx: JobContext, run: Callable[[JobContext], Any]) -> Any:
    with ctx.lending():
        return run(ctx)


def _register(name: str, run: Callable[[JobContext], Any], label: Any) -> None:
    """Register a kind whose `run` gets its job's runner lent (`ctx.runner`)."""
    register(name, run=lambda ctx: _lent(ctx, run), label=label)


def _evaluate(ctx: JobContext, only: set[int] | None, *, history: bool) -> dict[str, Any]:
    """Run all (or one scenario): one piece per golden x repetition x model x version, each
    a child job any worker runs (``evaluation_runs``); the first column's first repetition
    of each golden is an item as it ends (the page's rows, the goldens' badges); the whole
    matrix is gathered at the end, and kept as an ``EvaluationRun`` with `history`."""
    job = ctx.job
    _, pairs = evaluation.app_scenarios(job.app)
    if only is not None:
        pairs = [(a, s) for a, s in pairs if s.pk in only]
    columns = evaluation_runs.columns_of(job.params)
    model = columns[0].model or None  # a live run: its CX evaluations of the scenario kind
    pieces = evaluation_runs.plan(job, pairs)
    by_key = {p.key: p for p in pieces}
    if history:
        evaluation_history.run_started(job)
    outcomes: dict[str, dict[str, Any]] = {}

    def finished(child: Any) -> None:
        key = child.params.get("piece")
        outcome = evaluation_runs.piece_outcome(child)
        outcomes[key] = outcome
        evaluation_runs.count_usage(ctx, outcome)
        piece = by_key.get(key)
        if piece is not None and piece.primary:
            ctx.item(piece.key, outcome, position=piece.position)

    threshold = float(job.params.get("threshold", 1.0))

    def gathered() -> dict[str, Any]:
        """The matrix of the pieces so far, with the app revisions they ran at."""
        matrix = evaluation_matrix.matrix_of(list(outcomes.values()), columns, threshold)
        started = job.params.get("app_revision")
        matrix["revisions"] = evaluation_matrix.revisions_of(outcomes.values(), started)
        return matrix

    children: list[Any] = []
    try:
        children = evaluation_runs.spawn(ctx, pieces)
        ctx.progress(done=0, total=len(pieces))
        live = any(c.model for c in columns)
        steps = {s.pk: len(s.steps.all()) for _, s in pairs}
        evaluation_runs.fan_out(
            ctx,
            children,
            threads=int(job.params.get("threads") or evaluation_runs.threads_for(live)),
            on_finished=finished,
            order=evaluation_runs.longest_first(job, children, steps),
        )
        if model and (only is None or job.params.get("user_scenarios")):
            with ctx.lending():  # the parent's own runner, only for these
                _simulated_users(ctx, model, ctx.runner, ctx.done_keys(), first=len(pieces))
        ctx.check()
    except jobs.JobStopped as stop:
        # Every piece a cell: those the stop cancelled, and those it found running.
        for child in evaluation_runs.after_stop(children, outcomes):
            finished(child)  # its cell, and a golden's row on the Run all panel
        matrix = gathered()
        if history:
            evaluation_history.run_finished(job, stop.status, matrix)
        raise
    except Exception:
        if history:
            matrix = gathered()
            evaluation_history.run_finished(job, "failed", matrix)
        raise
    matrix = gathered()
    result = evaluation.summary_data(ctx.items())
    evaluation_matrix.annotate(result, matrix)
    if history:
        run = evaluation_history.run_finished(job, "succeeded", matrix)
        result["evaluation_run"] = run.pk if run is not None else None
    return result


def _simulated_users(
    ctx: JobContext, model: str, runner: Any, done: set[str], *, first: int
) -> None:
    """A live Run all also runs the CX evaluations of the scenario kind: a simulated user,
    then the rubrics judged by `judge` (default: the model); one item each, after the
    goldens, with the judge's reasons in its results."""
    from agents import selectors
    from agents.services.live_user_scenarios import run_user_scenarios

    job = ctx.job
    listed = selectors.app_needs_model_evaluations(job.app)
    if not listed:
        return
    ctx.progress(total=first + len(listed))
    judge = job.params.get("judge") or None
    for offset, (name, path) in enumerate(listed):
        key = f"cx-evaluation:{path}"
        if key in done:
            continue
        ctx.check()
        ctx.progress(current=name)
        started = time.monotonic()
        outcomes = run_user_scenarios(
            app=job.app, model=model, judge=judge, actor=job.owner, runner=runner, paths={path}
        )
        if ctx.cancelled:
            break
        for outcome in outcomes:
            data = {
                **evaluation.user_scenario_data(outcome),
                "seconds": round(time.monotonic() - started, 3),
            }
            ctx.item(key, data, position=first + offset)
        done.add(key)
        ctx.progress(done=len(done))


def evaluate_app(ctx: JobContext) -> dict[str, Any]:
    wanted = ctx.job.params.get("scenarios")
    # A part of a Run all (`manage.py evaluate --jobs N` splits one) is no run of its own.
    return _evaluate(
        ctx, None if wanted is None else {int(pk) for pk in wanted}, history=wanted is None
    )


def evaluate_scenario(ctx: JobContext) -> dict[str, Any]:
    result = _evaluate(ctx, {int(ctx.job.params["scenario"])}, history=False)
    return result["scenarios"][0] if result["scenarios"] else result


def _side(app: Any, number: int | None) -> versions.DiffSide:
    version = None if number is None else AppVersion.objects.get(app=app, number=number)
    return versions.diff_side(app, version)


def version_diff(ctx: JobContext) -> dict[str, Any]:
    params = ctx.job.params
    app = ctx.job.app
    ctx.progress(done=0, total=1, current=Message(jobs.PROGRESS_DIFF))
    diff = versions.app_diff(
        app,
        _side(app, params.get("before")),
        _side(app, params.get("after")),
        values=params.get("values") or {},
        channel=params.get("channel", "web"),
        modality=params.get("modality", "text"),
        runner=ctx.runner,
    )
    ctx.check()
    ctx.progress(done=1)
    return {"scenarios": [dataclasses.asdict(s) for s in diff.scenarios]}


def import_app(ctx: JobContext) -> dict[str, Any]:
    from agents.services import exchange  # the import use case (it submits this kind)

    return exchange.app_import_job_run(ctx)


def import_evalset(ctx: JobContext) -> dict[str, Any]:
    from agents.services import exchange

    return exchange.app_import_evalset_job_run(ctx)


# A Run all lends no runner while its pieces run (each piece, a job, lends its own): a warm
# sandbox session held by the parent would be one the pieces cannot reuse.
register("evaluate_app", run=evaluate_app, label=_("Run all"))
register("evaluate_scenario", run=evaluate_scenario, label=_("Evaluate a scenario"))
register(
    evaluation_runs.PIECE_KIND,
    run=lambda ctx: _lent(ctx, evaluation_runs.piece_run),
    label=_("Run all: one golden"),
    from_queue=evaluation_runs.run_with_siblings,
)
_register("version_diff", version_diff, _("Version diff: scenario results"))
_register("import_app", import_app, _("Import an app"))
_register("import_evalset", import_evalset, _("Import an ADK evalset"))


# ---------------------------------------------------------------- live_run (issue 21)

TEXT_EVERY_SECONDS = 0.2  # the streamed text is written to the job's row at most this often
LIVE_TEXT_CHARS = 300  # the end of a call's text the live panel shows


def answer_text(answer: Any) -> str:
    """The text parts of a model's answer (a replay streams nothing)."""
    return "".join(p["text"] for p in answer.parts if isinstance(p.get("text"), str))


def user_words(request: Any) -> str:
    """What the user said in the turn of `request`: the text of its last user content."""
    for content in reversed(request.contents):
        if content.get("role") == "user":
            parts = content.get("parts") or []
            words = "".join(p["text"] for p in parts if isinstance(p.get("text"), str))
            if words:
                return words
    return ""


def live_run(ctx: JobContext) -> dict[str, Any]:
    """Run live, Replay and Re-record (``live_jobs.live_run_submit``): one scenario through
    ``run_live`` (or ``replay_live`` with `replay` = a LiveRun id), on the job's runner.
    While it runs, the model's text so far is the job's `current` (throttled), and each
    model call is an item (``call:N``: tokens and cost) with `progress.done` the calls so
    far. The result is what the API shows of the run: the stored LiveRun's id, the calls
    (their recording), the drift, the error, the expectations' results; the item ``run``
    holds the rest the page draws (the evaluation, the whole timeline:
    ``agents.core.run_data``), so nothing runs it again to show it."""
    from agents.models import Agent, LiveRun, Scenario
    from agents.services.live_replays import replay_live
    from agents.services.live_runs import run_live

    job, params = ctx.job, ctx.job.params
    agent = Agent.objects.get(pk=int(params["agent"]), app=job.app)
    scenario = Scenario.objects.get(pk=int(params["scenario"]), agent=agent)
    instructions = params.get("instructions")
    use_mocks = params.get("use_mocks")
    text: list[str] = []  # the text streamed by the model call running now
    written = [float("-inf")]
    calls = [0]
    turns: list[int] = []  # the turns whose user's words are already shown

    def on_text(piece: str) -> None:
        text.append(piece)
        now = ctx.clock()
        if now - written[0] >= TEXT_EVERY_SECONDS:
            written[0] = now
            ctx.progress(current="".join(text)[-LIVE_TEXT_CHARS:])

    def on_call(answer: Any, request: Any) -> None:
        # Each call keeps its own words, and a new turn the user's as it begins: the live
        # panel shows each turn and each speaker on its own line, as the timeline does.
        if answer is None:  # the call begins
            if request.turn not in turns:
                turns.append(request.turn)
                words = user_words(request)[-LIVE_TEXT_CHARS:]
                ctx.item(f"turn:{request.turn}", {"user": words}, position=calls[0])
            return
        said = "".join(text) or answer_text(answer)
        text.clear()
        data = {
            "tokens_in": answer.tokens_in,
            "tokens_out": answer.tokens_out,
            "cost": answer.cost,
            "error": answer.error,
            "agent": request.agent,
            "text": said[-LIVE_TEXT_CHARS:],
        }
        ctx.item(f"call:{calls[0]}", data, position=calls[0])
        calls[0] += 1
        ctx.progress(done=calls[0], current="")

    ctx.progress(done=0, total=0, current="")
    # A Cancel is checked before every model call and every tool call (a fresh read of the
    # row each time): the run ends at the end of the current call, recorded as cancelled.
    ctx.every_call = True
    if params.get("replay"):
        recorded = LiveRun.objects.get(pk=int(params["replay"]), app=job.app)
        outcome = replay_live(
            run=recorded,
            actor=job.owner,
            instructions=instructions,
            use_mocks=use_mocks,
            on_call=on_call,
            should_stop=ctx.stop_now,
            runner=ctx.runner,
        )
    else:
        outcome = run_live(
            app=job.app,
            agent=agent,
            scenario=scenario,
            model=params.get("model") or None,
            actor=job.owner,
            instructions=instructions,
            use_mocks=use_mocks,
            on_text=on_text,
            on_call=on_call,
            stream=True,
            runner=ctx.runner,
            should_stop=ctx.stop_now,
        )
    # What the page draws of the run, read by `live_jobs.live_job_outcome` (never run again).
    ctx.item(
        RUN_ITEM,
        {
            "scenario_name": outcome.spec.name,
            "agent_name": outcome.spec.agent,
            "use_mocks": outcome.spec.use_mocks,
            "token_budget": outcome.spec.token_budget,
            "evaluation": evaluation_data(outcome.evaluation),
            "simulation": result_data(outcome.result),
        },
        position=calls[0],
    )
    tokens_in, tokens_out = outcome.tokens
    result = {
        "live_run": outcome.run.pk if outcome.run is not None else None,
        "mode": "replay" if params.get("replay") else "live",
        "model": outcome.model,
        "calls": outcome.calls,
        "drift": outcome.drift,
        "error": outcome.error,
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "cost": outcome.cost,
        "status": outcome.evaluation.status,
        "results": [
            with_i18n(dataclasses.asdict(r), "message", "differences")
            for r in outcome.evaluation.results
        ],
        # The run's step errors and warnings (why it stopped: SC421), as evaluate's.
        "diagnostics": [with_i18n(d.to_dict(), "message") for d in outcome.result.diagnostics],
    }
    if outcome.error != "cancelled":  # a cancelled run keeps its result: ends cancelled
        try:
            ctx.check()
        except jobs.JobStopped as stop:  # past one of the job's caps: the run is kept
            raise jobs.JobStopped(stop.status, stop.reason, result) from None
    return result


_register("live_run", live_run, _("Live run"))
