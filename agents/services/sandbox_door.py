"""Simulate a scenario: the one door to the sandbox (docs/architecture.md).

Only this module (and the system check of the host's protections) imports
``agents.sandbox``. A single simulation (the designer's conversation, the API's simulate)
calls `simulate_scenario`; batch callers (evaluate-all, the version diff, jobs) borrow a
`BoundedRunner` from `batch_runner()`: one warm sandbox session shared by the batch, and
every simulation it runs is bounded the same way:

* ``SANDBOX_REQUIRED_PROTECTIONS``: no code runs when the host lacks one (SC471, the
  simulation goes on with mocks only);
* ``SIMULATION_MAX_STEPS`` steps per scenario (SC470);
* ``SIMULATION_MAX_CODE_CALLS`` code calls and ``SIMULATION_MAX_SECONDS`` of **CPU time**
  per simulation (this thread's and the sandbox processes' for its calls, as the kernel
  counts them: a loaded machine stretches the wall clock, not the work), a wall-clock
  backstop of ``SIMULATION_MAX_WALL_SECONDS`` (so a simulation always ends well before
  gunicorn's worker timeout), and a job's own totals (`JobCaps`): every refused tool or
  callback becomes a step error, the simulation notes why (SC472) and says where it was
  stopped (``SimulationResult.stopped``): the checks from that turn on are *stopped*, never
  *failed* (``agents.core.evaluate``), so no verdict depends on the machine's load;
* ``SIMULATION_MAX_CONCURRENT`` simulations at once per process outside a batch (the
  designer's and the API's, in a web request): one more is refused at once
  (`SimulationsBusy`, a 429), so they never hold every gunicorn thread.

How often a user may simulate is the rate limiter's (`server/ratelimit.py`, scope
``simulate``, shared by the designer and the API; a job is rate-limited when it is
submitted, and the number of a user's queued and running jobs is capped by
``JOBS_MAX_ACTIVE_PER_USER``).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from functools import cache

from django.conf import settings

from agents import selectors
from agents.core.diagnostics import Diagnostic, Message, Severity
from agents.core.model import ModelAnswer, ModelRequest, ModelStrategy, answer_size
from agents.core.simulate import CodeCall, CodeResult, CodeRunner, SimulationResult, simulate
from agents.core.spec import AppSpec, ScenarioSpec
from agents.models import Agent, AgentApp, Scenario
from agents.sandbox import host, jail
from agents.sandbox.code_runner import sandbox_runner
from agents.services.common import setting

logger = logging.getLogger("agents.simulation")


def limit(name: str) -> float:
    return setting(name)


@cache
def missing_protections() -> dict[str, str]:
    """The protections this host cannot give, with the reason (checked once per process)."""
    return {name: why for name, why in jail.available_protections().items() if why}


def refused_protections() -> dict[str, str]:
    """Required protections (``SANDBOX_REQUIRED_PROTECTIONS``) that this host lacks."""
    required = getattr(settings, "SANDBOX_REQUIRED_PROTECTIONS", ())
    missing = missing_protections()
    return {name: missing[name] for name in required if name in missing}


@dataclass
class JobCaps:
    """What one batch (a job) may spend in total, beside each simulation's own caps.

    None: no cap beyond the per-simulation settings. The runner counts the code calls of
    every simulation it runs, and the model calls and tokens of its live runs (`metered`):
    past ``JOBS_MAX_MODEL_CALLS`` or ``JOBS_MAX_TOKENS`` a model call is refused with the
    error ``cap``, and the job stops at its next piece (``JobContext.check``)."""

    max_code_calls: int | None = None
    max_seconds: float | None = None
    max_model_calls: int | None = None
    max_tokens: int | None = None
    # Spent so far (filled in by the runner).
    code_calls: int = 0
    model_calls: int = 0
    tokens: int = 0
    started: float = field(default_factory=time.monotonic)

    def model_refusal(self) -> str:
        """Why the next model call is refused ("" when it may be made)."""
        if self.max_model_calls is not None and self.model_calls >= self.max_model_calls:
            return Message(
                "the job reached its cap of %(count)s model calls (JOBS_MAX_MODEL_CALLS)",
                count=self.max_model_calls,
            )
        if self.max_tokens is not None and self.tokens >= self.max_tokens:
            return Message(
                "the job reached its cap of %(count)s tokens (JOBS_MAX_TOKENS)",
                count=self.max_tokens,
            )
        return ""

    def as_json(self) -> dict[str, float | int | None]:
        return {
            "max_code_calls": self.max_code_calls,
            "max_seconds": self.max_seconds,
            "max_model_calls": self.max_model_calls,
            "max_tokens": self.max_tokens,
        }


def bounded_runner(
    session: host.SandboxSession,
    *,
    max_calls: int,
    max_wall: float,
    max_cpu: float | None = None,
    caps: JobCaps | None = None,
    should_stop: Callable[[], str] | None = None,
) -> tuple[CodeRunner, list[str]]:
    """The sandbox runner, refusing every call after *max_calls*, once the simulation has
    used *max_cpu* seconds of CPU (this thread's and the session's processes'), past the
    *max_wall* seconds of wall clock, past the batch's `caps`, or once
    `should_stop` gives a reason (a cancelled job). A refused call is a stop
    (``CodeResult.stopped``), as is a call the sandbox killed at its wall-clock limit. The
    list receives the reason of the first stop."""
    run = sandbox_runner(session)
    calls = 0
    stopped: list[str] = []
    host_cpu, box_cpu = time.thread_time(), session.cpu_seconds
    deadline = time.monotonic() + max_wall

    def bounded(call: CodeCall) -> CodeResult:
        nonlocal calls
        reason = ""
        now = time.monotonic()
        if calls >= max_calls:
            reason = Message(
                "the simulation reached its cap of %(count)s code calls", count=max_calls
            )
        elif max_cpu is not None and (
            time.thread_time() - host_cpu + session.cpu_seconds - box_cpu >= max_cpu
        ):
            reason = Message(
                "the simulation reached its time limit of %(seconds)s s of CPU "
                "(SIMULATION_MAX_SECONDS)",
                seconds=f"{max_cpu:g}",
            )
        elif now >= deadline:
            reason = Message(
                "the simulation reached its wall-clock limit of %(seconds)s s",
                seconds=f"{max_wall:g}",
            )
        elif (
            caps is not None
            and caps.max_code_calls is not None
            and (caps.code_calls >= caps.max_code_calls)
        ):
            reason = Message(
                "the job reached its cap of %(count)s code calls", count=caps.max_code_calls
            )
        elif (
            caps is not None
            and caps.max_seconds is not None
            and (now - caps.started >= caps.max_seconds)
        ):
            reason = Message(
                "the job reached its time cap of %(seconds)s s", seconds=f"{caps.max_seconds:g}"
            )
        elif should_stop is not None:
            reason = should_stop()
        if reason:
            if not stopped:
                stopped.append(reason)
            refused = Message("not run: %(reason)s", reason=reason)
            return CodeResult(False, None, (), (), refused, None, ran=False, stopped=reason)
        calls += 1
        if caps is not None:
            caps.code_calls += 1
        result = run(call)
        if result.stopped and not stopped:
            stopped.append(result.stopped)
        return result

    bounded.reads_only = True  # type: ignore[attr-defined]  # as the sandbox runner
    return bounded, stopped


class BoundedRunner:
    """A sandbox session lent to a batch: `simulate` runs one scenario within every bound.

    Each code call still runs in a fresh process forked for it; the per-simulation caps
    count per `simulate` call, `caps` over the whole batch."""

    def __init__(
        self,
        session: host.SandboxSession,
        *,
        caps: JobCaps | None = None,
        should_stop: Callable[[], str] | None = None,
    ) -> None:
        self.session = session
        self.caps = caps
        self.should_stop = should_stop

    def metered(self, model: ModelStrategy) -> ModelStrategy:
        """`model` counted against the batch's model calls and tokens (`JobCaps`): a call
        past either cap is refused with the error ``cap`` without asking the model."""
        caps = self.caps
        if caps is None or (caps.max_model_calls is None and caps.max_tokens is None):
            return model

        def ask(request: ModelRequest) -> ModelAnswer:
            refusal = caps.model_refusal()
            if refusal:
                return ModelAnswer(error="cap", message=refusal)
            caps.model_calls += 1
            answer = model(request)
            # As a run's own token cap counts them (agents.core.live.Capped).
            caps.tokens += answer.tokens_in + max(answer.tokens_out, answer_size(answer.parts) // 4)
            return answer

        return ask

    def simulate(
        self,
        app: AppSpec,
        scenario: ScenarioSpec,
        *,
        model: ModelStrategy | None = None,
        max_seconds: float | None = None,
    ) -> SimulationResult:
        """`model` makes it a live run (``agents.services.live_runs``), whose wall-clock cap
        `max_seconds` replaces ``SIMULATION_MAX_SECONDS`` (CPU) and
        ``SIMULATION_MAX_WALL_SECONDS``: a model's answers take far longer than code does."""
        refused = refused_protections()
        notes: list[Diagnostic] = []
        max_steps = int(limit("SIMULATION_MAX_STEPS"))
        if len(scenario.steps) > max_steps:
            notes.append(
                Diagnostic(
                    "SC470",
                    Severity.ERROR,
                    Message(
                        "The scenario has %(count)s steps; only the first %(max_steps)s are "
                        "simulated (SIMULATION_MAX_STEPS). Split it into shorter scenarios.",
                        count=len(scenario.steps),
                        max_steps=max_steps,
                    ),
                    field="steps",
                    subject=scenario.name,
                )
            )
            scenario = replace(scenario, steps=scenario.steps[:max_steps])
        if refused:
            names = ", ".join(f"{name} ({why})" for name, why in refused.items())
            notes.append(
                Diagnostic(
                    "SC471",
                    Severity.ERROR,
                    Message(
                        "Python code is not run: this server's sandbox lacks protections that "
                        "SANDBOX_REQUIRED_PROTECTIONS requires: %(names)s. Tick mocks, or ask "
                        "the operator to install them (docs: /docs/designer/sandbox/).",
                        names=names,
                    ),
                    subject=scenario.name,
                )
            )
            result = simulate(app, scenario, run_code=None, model=model)
        else:
            # Offline: the CPU the simulation uses, with a wall-clock backstop. Live: the
            # run's own wall-clock cap (a model's answers take far longer than code does).
            live = max_seconds is not None
            runner, stopped = bounded_runner(
                self.session,
                max_calls=int(limit("SIMULATION_MAX_CODE_CALLS")),
                max_wall=float(max_seconds if live else limit("SIMULATION_MAX_WALL_SECONDS")),
                max_cpu=None if live else float(limit("SIMULATION_MAX_SECONDS")),
                caps=self.caps,
                should_stop=self.should_stop,
            )
            result = simulate(app, scenario, run_code=runner, model=model)
            if stopped:
                notes.append(
                    Diagnostic(
                        "SC472",
                        Severity.ERROR,
                        Message(
                            "The simulation was stopped: %(reason)s; later tools and callbacks "
                            "were not run. Shorten the scenario or make the code faster.",
                            reason=stopped[0],
                        ),
                        subject=scenario.name,
                    )
                )
        if not notes:
            return result
        return replace(result, diagnostics=(*notes, *result.diagnostics))


class SessionPool:
    """Warm sandbox sessions a worker process keeps between jobs.

    Each session serves one batch at a time and belongs to the user it last served: a
    batch of the same user takes it back warm (its session child already started); a
    batch of another user never gets it, but a new session, and a session beyond the
    pool's size is killed. So no state, file or process of one user's run survives into
    another user's (inside a session every code call is a fresh forked process anyway)."""

    def __init__(self, size: int) -> None:
        self.base = size
        self._widths: list[int] = []  # the threads of the fan-outs running in this process
        self._free: list[tuple[str, host.SandboxSession]] = []
        self._lock = threading.Lock()
        self.started = 0  # sessions created
        self.reused = 0  # batches served by a warm session

    @property
    def size(self) -> int:
        """How many free sessions are kept: the setting's, or while a fan-out runs `n`
        pieces at once in this process, `n` (each piece a batch of its own: without them
        each thread past the setting's size would start a session and see it killed)."""
        return max(self.base, *self._widths) if self._widths else self.base

    @contextlib.contextmanager
    def widened(self, threads: int) -> Iterator[None]:
        with self._lock:
            self._widths.append(threads)
        try:
            yield
        finally:
            with self._lock:
                self._widths.remove(threads)
                extra = self._free[: max(0, len(self._free) - self.size)]
                del self._free[: len(extra)]
            for _, old in extra:
                old.close()

    def borrow(self, owner: str) -> host.SandboxSession:
        with self._lock:
            for i, (who, session) in enumerate(self._free):
                if who == owner:
                    del self._free[i]
                    self.reused += 1
                    self._log("reused a warm session for", owner)
                    return session
            self.started += 1
            self._log("started a new session for", owner)
        return host.open_session()

    def _log(self, what: str, owner: str) -> None:
        # A worker's log says how warm its pool ran (tests/test_session_pool.py reads it).
        logger.info(
            "sandbox pool: %s %s (%d started, %d reused)", what, owner, self.started, self.reused
        )

    def give_back(self, owner: str, session: host.SandboxSession) -> None:
        with self._lock:
            # Another user's warm session goes first: it would never serve this one.
            self._free = [(w, s) for w, s in self._free if w != owner or s is session]
            self._free.append((owner, session))
            while len(self._free) > self.size:
                _, old = self._free.pop(0)
                old.close()

    def clear(self) -> None:
        with self._lock:
            free, self._free = self._free, []
        for _, session in free:
            session.close()


_POOL: SessionPool | None = None


def use_session_pool(size: int) -> SessionPool | None:
    """Keep up to `size` warm sessions in this process (a worker calls it; 0: none)."""
    global _POOL
    if _POOL is not None:
        _POOL.clear()
    _POOL = SessionPool(size) if size > 0 else None
    return _POOL


@contextlib.contextmanager
def sessions_for_threads(threads: int) -> Iterator[None]:
    """While `threads` threads of this process run pieces of a fan-out, the warm pool (if
    any) keeps a session for each of them; back to its size afterwards."""
    pool = _POOL
    if pool is None:
        yield
        return
    with pool.widened(threads):
        yield


@contextlib.contextmanager
def session_pool(size: int) -> Iterator[SessionPool | None]:
    """Warm sessions kept while the block runs, as a worker keeps them (a command's jobs:
    ``manage.py evaluate`` runs one piece per golden, each a batch of its own that would
    otherwise start a sandbox session and kill it), all closed when it ends; the pool of
    before (if any) is put back."""
    global _POOL
    before, _POOL = _POOL, (SessionPool(size) if size > 0 else None)
    try:
        yield _POOL
    finally:
        if _POOL is not None:
            _POOL.clear()
        _POOL = before


# The runner a job lends its kind (`job_runner`), while it is lent in this thread: nothing
# there opens another (a kind cannot escape its job's caps and cancel hook).
_JOB_RUNNER: ContextVar[BoundedRunner | None] = ContextVar("job_runner", default=None)


class OwnRunnerRefused(RuntimeError):
    """Code running inside a job asked for a sandbox runner of its own: it must use the one
    its job lends (``JobContext.runner``), which carries the job's caps and cancel hook."""


def _refuse_inside_a_job() -> None:
    if _JOB_RUNNER.get() is not None:
        raise OwnRunnerRefused(
            "a job's kind runs its simulations on the runner its job lends (ctx.runner), "
            "never on one of its own"
        )


@contextlib.contextmanager
def _borrowed(
    *,
    caps: JobCaps | None,
    should_stop: Callable[[], str] | None,
    session: host.SandboxSession | None,
    owner: str | None,
) -> Iterator[BoundedRunner]:
    if session is not None:
        yield BoundedRunner(session, caps=caps, should_stop=should_stop)
        return
    pool = _POOL
    if pool is None or owner is None:
        with host.open_session() as warm:
            yield BoundedRunner(warm, caps=caps, should_stop=should_stop)
        return
    warm = pool.borrow(owner)
    try:
        yield BoundedRunner(warm, caps=caps, should_stop=should_stop)
    except BaseException:
        warm.close()  # a batch that failed does not hand its session on
        raise
    pool.give_back(owner, warm)


@contextlib.contextmanager
def batch_runner(
    *,
    caps: JobCaps | None = None,
    should_stop: Callable[[], str] | None = None,
    session: host.SandboxSession | None = None,
    owner: str | None = None,
) -> Iterator[BoundedRunner]:
    """Borrow a bounded runner for a batch of simulations (one warm sandbox session,
    started at the first code call if any). With a pool (`use_session_pool`) and the
    batch's `owner` (the user it runs for), the session comes from the pool and goes
    back to it; otherwise it is killed when the block ends. Inside a job: refused
    (`OwnRunnerRefused`), the job lends its own (`job_runner`)."""
    _refuse_inside_a_job()
    with _borrowed(caps=caps, should_stop=should_stop, session=session, owner=owner) as runner:
        yield runner


@contextlib.contextmanager
def sibling_runner(runner: BoundedRunner) -> Iterator[BoundedRunner]:
    """A runner beside `runner`, for work that runs next to it in another thread (the
    explanation search's trials): a sandbox session of its own, started at its first code
    call and killed at the end, under `runner`'s bounds (the job's caps and its cancel
    hook: a job still lends every runner its work uses). The hook itself is asked in
    `runner`'s thread only (a job's reads its row: the database stays with that thread):
    the sibling stops with the reason it last gave."""
    given = runner.should_stop
    if given is None:
        with host.open_session() as session:
            yield BoundedRunner(session, caps=runner.caps)
        return
    reason = [""]

    def asked() -> str:
        said = given()
        if said:
            reason[0] = said
        return said

    runner.should_stop = asked
    try:
        with host.open_session() as session:
            yield BoundedRunner(session, caps=runner.caps, should_stop=lambda: reason[0])
    finally:
        runner.should_stop = given


@contextlib.contextmanager
def job_runner(
    *, caps: JobCaps, should_stop: Callable[[], str], owner: str
) -> Iterator[BoundedRunner]:
    """The runner a job lends its kind for the whole run (``JobContext.lending``): the
    job's caps (code calls, time, model calls, tokens) and its cancel hook on every call;
    while it is lent, `batch_runner` and a `simulate_bounded` without a runner are refused
    in this thread."""
    _refuse_inside_a_job()
    with _borrowed(caps=caps, should_stop=should_stop, session=None, owner=owner) as runner:
        token = _JOB_RUNNER.set(runner)
        try:
            yield runner
        finally:
            _JOB_RUNNER.reset(token)


class SimulationsBusy(Exception):
    """This process already runs ``SIMULATION_MAX_CONCURRENT`` simulations of its own (in
    web requests): a new one is refused at once rather than waiting for a thread, so the
    process keeps threads for every other request (``/healthz``, the pages). The web tier
    answers 429 with this message (``server.ratelimit.SimulationsBusyMiddleware``, the
    API's simulate)."""

    retry_after = 2

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.message = Message(
            "Too many simulations at once on this server: at most %(limit)s run at a time in "
            "each web process (SIMULATION_MAX_CONCURRENT=%(limit)s), so that other pages keep "
            "answering. Try again in %(seconds)s seconds, or press Run all: it runs the "
            "scenarios as a job.",
            limit=limit,
            seconds=self.retry_after,
        )
        super().__init__(self.message)


class _Slots:
    """The simulations this process runs outside a batch, at most ``SIMULATION_MAX_CONCURRENT``
    at once (0: no cap). A simulation that runs another inside it (a live run's turns)
    holds one slot for all of them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.running = 0
        self._mine = threading.local()

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        if getattr(self._mine, "depth", 0):
            self._mine.depth += 1
            try:
                yield
            finally:
                self._mine.depth -= 1
            return
        cap = int(limit("SIMULATION_MAX_CONCURRENT"))
        with self._lock:
            if cap > 0 and self.running >= cap:
                logger.warning("simulation refused: %d of %d running", self.running, cap)
                raise SimulationsBusy(cap)
            self.running += 1
        self._mine.depth = 1
        try:
            yield
        finally:
            self._mine.depth = 0
            with self._lock:
                self.running -= 1


SLOTS = _Slots()


def simulate_bounded(
    app: AppSpec,
    scenario: ScenarioSpec,
    *,
    runner: BoundedRunner | None = None,
    session: host.SandboxSession | None = None,
    model: ModelStrategy | None = None,
    max_seconds: float | None = None,
) -> SimulationResult:
    """Simulate *scenario* with the real sandbox, within the caps of the settings (on the
    batch's `runner` when given, else on `session` or a sandbox session of its own).
    `model` makes it a live run with the time cap `max_seconds` (``BoundedRunner``)."""
    if runner is not None:
        return runner.simulate(app, scenario, model=model, max_seconds=max_seconds)
    # Not a batch's: a request's own simulation, one of the process's capped slots.
    _refuse_inside_a_job()
    with SLOTS.hold(), batch_runner(session=session) as own:
        return own.simulate(app, scenario, model=model, max_seconds=max_seconds)


def with_instructions(spec: AppSpec, agent_name: str, instructions: str | None) -> AppSpec:
    """The app with one agent's instructions replaced by unsaved text (None: as saved)."""
    if instructions is None:
        return spec
    return replace(
        spec,
        agents=tuple(
            replace(a, instructions=instructions) if a.name == agent_name else a
            for a in spec.agents
        ),
    )


def simulate_scenario(
    *,
    app: AgentApp,
    agent: Agent,
    scenario: Scenario,
    instructions: str | None = None,
    use_mocks: bool | None = None,
    runner: BoundedRunner | None = None,
) -> tuple[ScenarioSpec, SimulationResult]:
    """Run `scenario` against the app (with `instructions` for `agent` when given).

    `use_mocks` None keeps the scenario's own setting; True or False overrides it both
    ways. The simulation is bounded (module docstring); `runner` is a batch's.
    """
    # A request's own simulation takes its slot before the app's spec is built: a refusal
    # (SimulationsBusy) costs nothing.
    with SLOTS.hold() if runner is None else contextlib.nullcontext():
        spec = with_instructions(selectors.app_spec(app), agent.display_name, instructions)
        scenario_spec = scenario.to_spec(app_id=f"apps/{app.pk}")
        if use_mocks is not None:
            scenario_spec = replace(scenario_spec, use_mocks=use_mocks)
        return scenario_spec, simulate_bounded(spec, scenario_spec, runner=runner)
