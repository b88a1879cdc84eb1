"""Pinned recordings: which live run a scenario's replays use.

Each scenario has one recording its replays use (*Replay* in the designer, ``manage.py
evaluate --replay``, a Run all with replay): the run the designer **pinned**
(``Scenario.pinned_run``), else by default its latest **successful** live run — one that
ended without a model error (``live_recording.replayable_recording``). A failed run (a
wrong key, a model down, a timeout, a malformed answer, a cap, a Cancel) never becomes the
recording: it cannot be pinned, and it is never the default. A new live run never moves a
pin; unpinning goes back to the default. Replays themselves are never recordings.

::

    pinned_recording(scenario) -> PinnedRecording | None   # the run, and whether pinned
    scenario_recordings(scenario) -> list[LiveRun]          # its live runs, newest first
    scenario_pin_run(*, scenario, run, actor) -> Scenario   # run None: unpin

A Run all that replays calls ``pinned_recording`` for each scenario and replays its
``run`` (``live_jobs.live_run_submit(replay=...)``), as ``evaluate --replay`` does.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.translation import gettext

from agents.core.diagnostics import Message
from agents.models import LiveRun, Scenario
from agents.services.common import Actor, ServiceError, app_write, changed, error
from agents.services.live_models import live_rights_check
from agents.services.live_recording import replayable_recording

__all__ = ["PinnedRecording", "pinned_recording", "scenario_pin_run", "scenario_recordings"]

RECORDINGS_LISTED = 50  # the runs the designer's list offers, newest first


@dataclass(frozen=True)
class PinnedRecording:
    """The recording a scenario's replays use; `pinned`: the designer chose it (else it is
    the latest successful live run)."""

    run: LiveRun
    pinned: bool

    @property
    def how(self) -> str:
        """How it was chosen, in the reader's language: "pinned" or "the latest successful one"."""
        return gettext("pinned") if self.pinned else gettext("the latest successful one")


def pinned_recording(scenario: Scenario) -> PinnedRecording | None:
    """The recording `scenario`'s replays use (see the module docstring); None when it has
    no successful live run and none is pinned."""
    if scenario.pinned_run_id is not None:
        run = LiveRun.objects.filter(pk=scenario.pinned_run_id).first()
        if run is not None:
            return PinnedRecording(run, pinned=True)
    run = replayable_recording(scenario)
    return PinnedRecording(run, pinned=False) if run is not None else None


def scenario_recordings(scenario: Scenario, limit: int = RECORDINGS_LISTED) -> list[LiveRun]:
    """The scenario's live runs (never its replays), newest first: the list a designer
    pins from (model, date, status, verdict, error)."""
    return list(
        LiveRun.objects.filter(scenario=scenario, mode="live").order_by("-created_at", "-id")[
            :limit
        ]
    )


@app_write
def scenario_pin_run(*, scenario: Scenario, run: LiveRun | int | None, actor: Actor) -> Scenario:
    """Pin `run` (a live run of `scenario` that ended without a model error) as the
    recording its replays use; None unpins (the latest successful run again). Needs edit
    rights on the app (a ``LiveNotAllowed`` otherwise)."""
    app = scenario.agent.app
    live_rights_check(actor=actor, app=app)
    found: LiveRun | None = None
    if run is not None:
        pk = run.pk if isinstance(run, LiveRun) else run
        found = LiveRun.objects.filter(pk=pk, app=app).first() if str(pk).isdigit() else None
        if found is None or found.scenario_id != scenario.pk:
            raise ServiceError(
                [
                    error(
                        "pinned_run",
                        Message(
                            "Live run %(run)s is not a run of the scenario %(name)s: pick one "
                            "of its live runs.",
                            run=pk,
                            name=scenario.name,
                        ),
                        "SC482",
                    )
                ]
            )
        if found.mode != "live":
            raise ServiceError(
                [
                    error(
                        "pinned_run",
                        Message("Run %(run)s is a replay: pin the live run it replayed.", run=pk),
                        "SC482",
                    )
                ]
            )
        if found.error:
            raise ServiceError(
                [
                    error(
                        "pinned_run",
                        Message(
                            "Live run %(run)s ended with the error %(error)s: a failed run "
                            "cannot be the recording. Pin a run that succeeded.",
                            run=pk,
                            error=found.error,
                        ),
                        "SC482",
                    )
                ]
            )
    before = scenario.pinned_run_id
    scenario.pinned_run = found
    scenario.save(update_fields=["pinned_run"])
    changed(
        app=app,
        actor=actor,
        action="scenario.pin",
        name=scenario.name,
        before={"pinned_run": before},
        after={"pinned_run": scenario.pinned_run_id},
    )
    return scenario
