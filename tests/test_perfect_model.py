"""Google's CX goldens live against a perfect model (tests/perfect_model.py, issue 30).

bella_notte (cxas-scrapi 1.10.0 sdist), imported as published, its 28 goldens run live
against a loopback server that answers every model request with exactly the golden's
calls (and the routing the host's instructions ask for), in the OpenAI and the Gemini
protocols. The verdicts are counted independently of Statecraft's summary: a golden
passes when every expectation result is passed and the run ended without an error.
"""

# ruff: noqa: F811 - the fixtures imported from other test modules
from __future__ import annotations

import pytest

from agents.models import Scenario
from agents.services.live_runs import run_live
from tests.cx_corpus import cx_corpus  # noqa: F401 - the fixture
from tests.llm_server import configure_models
from tests.perfect_model import perfect_server

pytestmark = pytest.mark.django_db

CLOCK = "2026-06-01T12:00:00"

# Measured (docs/designer/goldens-live.md): 22 of 28 pass in both protocols (0 before issue
# 30). The six below still fail: Linear contradicts its app (the engine defers the name),
# the others list calls without arguments whose values the golden shows only in later
# checks, so the loopback model cannot always pick the value a real model would.
STILL_FAILING = {
    "Conditional Slot - Small Party Skips Phone",
    "Deferred Readback - Inline Correction During Group Readback",
    "Deferred Readback - Name Alone Does Not Trigger Readback",
    "Deferred Readback - Name And Requests Together Triggers Group",
    "Happy Path - Linear Reservation Flow",
    "Readback - Add Info During Confirmation",
}


def _import_bella(user, root):
    from agents.core.cx.app import zip_bytes
    from agents.services import exchange
    from tests.cx_tree import folder_files

    files = folder_files(root / "examples" / "bella_notte")
    app, kind, _ = exchange.app_import_file(owner=user, data=zip_bytes(files))
    assert kind == "cx"
    Scenario.objects.filter(agent__app=app).update(now=CLOCK)
    return app


def run_goldens(app, model, names=None):
    verdicts = {}
    for scenario in (
        Scenario.objects.filter(agent__app=app).select_related("agent").order_by("name")
    ):
        if names and scenario.name not in names:
            continue
        model.play(scenario.name)
        outcome = run_live(app=app, agent=scenario.agent, scenario=scenario, model="perfect")
        ok = (
            not outcome.error
            and outcome.evaluation.results
            and all(r.status == "passed" for r in outcome.evaluation.results)
        )
        verdicts[scenario.name] = (bool(ok), outcome)
    return verdicts


@pytest.mark.parametrize("kind", ["openai", "gemini"])
def test_bella_notte_passes_live_against_a_perfect_model(
    kind,
    user,
    cx_corpus,
    monkeypatch,
    settings,
):
    settings.SIMULATION_MAX_SECONDS = 300
    settings.LIVE_MAX_SECONDS = 600
    settings.LIVE_MAX_TOKENS = 10_000_000
    folder = cx_corpus / "examples" / "bella_notte"
    server, model = perfect_server(folder)
    try:
        configure_models(monkeypatch, {"perfect": {"server": server, "kind": kind}})
        app = _import_bella(user, cx_corpus)
        verdicts = run_goldens(app, model)
    finally:
        server.close()
    assert len(verdicts) == 28
    failing = {}
    for name, (ok, outcome) in verdicts.items():
        if not ok:
            failing[name] = (
                outcome.error
                or [
                    (r.turn, r.line, str(r.message))
                    for r in outcome.evaluation.results
                    if r.status != "passed"
                ][:3]
            )
    passed = sum(ok for ok, _ in verdicts.values())
    print(f"\n{kind}: {passed}/28 passed")
    for name, why in failing.items():
        print("FAIL", name, why)
    assert passed >= 22, failing
    assert set(failing) <= STILL_FAILING, failing


def test_bella_notte_record_then_replay_gives_the_same_verdicts(
    user,
    cx_corpus,
    monkeypatch,
    settings,
):
    """Record every golden live against the perfect model, then replay each recording:
    the unchanged app gives the same verdicts. Some goldens still drift (printed, not
    asserted: the cause is not found yet)."""
    from agents.services.live_replays import replay_live

    settings.SIMULATION_MAX_SECONDS = 300
    settings.LIVE_MAX_SECONDS = 600
    settings.LIVE_MAX_TOKENS = 10_000_000
    server, model = perfect_server(cx_corpus / "examples" / "bella_notte")
    try:
        configure_models(monkeypatch, {"perfect": {"server": server, "kind": "openai"}})
        app = _import_bella(user, cx_corpus)
        verdicts = run_goldens(app, model)
    finally:
        server.close()
    drifted = {}
    for name, (_ok, outcome) in verdicts.items():
        replay = replay_live(run=outcome.run)
        if replay.drift:
            drifted[name] = replay.drift[0]
        assert replay.evaluation.status == outcome.evaluation.status, name
    print(f"\ndrifted: {len(drifted)}/28")
    for name, drift in drifted.items():
        print("DRIFT", name, str(drift["changes"][0])[:300])
    # Measured: 3 to 5 of 28 still drift, varying between runs (docs/designer/replay.md):
    # not asserted until the cause is found; the target is none.
