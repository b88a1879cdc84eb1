"""A live run on the designer page: pick a model, Run live, see tokens and cost per call,
replay it (no drift), change the instructions and replay again (drift at call 1).

The model is a real HTTP server on loopback speaking OpenAI's chat completions
(tests/llm_server.py). With UPDATE_SCREENSHOTS=1 it rewrites docs/live-run.png (README, Live models).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.llm_server import (
    Reply,
    configure_models,
    openai_stream_call,
    openai_stream_text,
)

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]
DOCS = Path(__file__).resolve().parent.parent.parent / "docs"
ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"


@pytest.fixture
def live_bank(user, monkeypatch, server):
    from agents import services
    from agents.demo import load_demo

    endpoint = {"server": server, "model": "gpt-4o-mini", "label": "GPT-4o mini (loopback)"}
    configure_models(monkeypatch, {"mini": endpoint}, key="sk-browser-test")
    app = next(a for a in load_demo(user) if a.name == "Bank demo")
    agent = app.agents.get()
    services.scenario_save(
        agent=agent,
        name="Balance live",
        steps_script="user: What is my balance?\nexpect call: LookupBalance\n"
        'expect state: {"current_account_balance": 1250}\n'
        "expect agent: Your balance is 1,250 EUR.\n",
    )
    return app


def test_run_live_then_replay_and_drift(open_designer, live_bank, server, workers):
    """Run live is a job run by a real worker process; the panel polls until it is done."""
    workers()
    server.script(
        openai_stream_call("LookupBalance", '{"account_id": "primary"}'),
        openai_stream_text("Your current account ", "balance is 1,250 EUR."),
    )
    page: Page = open_designer(live_bank)
    panel = page.locator("#conversation-panel")
    panel.locator("select[name=scenario]").select_option(label="Balance live")
    expect(panel.locator(".event-user .msg").first).to_have_text("What is my balance?")
    # No refresh of the panel in flight (an automatic one would replace the live request).
    page.wait_for_load_state("networkidle")
    panel.locator("#model-picker").select_option("mini")
    panel.locator("#run-live").click()
    summary = page.locator("#live-summary")
    expect(summary).to_contain_text("live · mini", timeout=30_000)
    expect(summary).to_contain_text("2 model calls")
    expect(page.locator("#conversation-panel .call-cost").first).to_contain_text(
        "model call 1: 15+6 tok"
    )
    expect(page.locator("#conversation-panel .event-agent .msg").last).to_have_text(
        "Your current account balance is 1,250 EUR."
    )
    expect(page.locator("#golden-summary")).to_contain_text("3 passed")
    # The README's picture is rewritten only on request (UPDATE_SCREENSHOTS=1).
    folder = DOCS if os.environ.get("UPDATE_SCREENSHOTS") else ARTIFACTS
    folder.mkdir(exist_ok=True)
    page.set_viewport_size({"width": 1280, "height": 1250})
    page.screenshot(path=str(folder / "live-run.png"))
    page.wait_for_load_state("networkidle")
    page.locator("#replay-live").click()
    expect(page.locator("#drift-badge")).to_have_text("no drift", timeout=30_000)
    # Change one instruction line in the editor (unsaved): the panel simulates it scripted;
    # Replay then runs the recording against the new text.
    editor = page.locator("#instructions-editor")
    editor.focus()
    page.keyboard.press("Control+Home")
    editor.press_sequentially("Be brief. ")
    expect(page.locator("#live-summary")).to_have_count(0)
    page.wait_for_load_state("networkidle")
    page.locator("#replay-live").click()
    expect(page.locator("#drift-badge")).to_have_text("drift at call 1", timeout=30_000)
    expect(page.locator("#drift-list")).to_contain_text("instructions line 1")
    expect(page.locator("#drift-list")).to_contain_text("Be brief.")
    assert len(server.seen) == 2  # replays call no model
    assert page.js_errors == []


def test_the_live_timeline_fills_in_while_the_job_runs(open_designer, live_bank, server, workers):
    """While the model holds its second call, the polled fragment shows the first call's
    tokens and the Cancel button; Cancel asks the worker to stop."""
    workers()
    server.script(
        openai_stream_call("LookupBalance", '{"account_id": "primary"}'), Reply(stall=True)
    )
    page: Page = open_designer(live_bank)
    panel = page.locator("#conversation-panel")
    panel.locator("select[name=scenario]").select_option(label="Balance live")
    expect(panel.locator(".event-user .msg").first).to_have_text("What is my balance?")
    page.wait_for_load_state("networkidle")
    panel.locator("#model-picker").select_option("mini")
    panel.locator("#run-live").click()
    progress = page.locator("#live-progress")
    expect(progress).to_contain_text("1 model call so far", timeout=30_000)
    expect(progress).to_contain_text("15 in + 6 out tokens")
    expect(page.locator("#live-timeline")).to_contain_text("model call 1: 15+6 tok")
    ARTIFACTS.mkdir(exist_ok=True)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.screenshot(path=str(ARTIFACTS / "live-run-progress.png"))
    page.locator("#live-cancel").click()
    expect(page.locator("#live-progress")).to_contain_text("Cancelling")
    assert page.js_errors == []
    # The held call answers now, so the worker sees the cancel and stops at once (not at
    # the end of its stop timeout, 20 s).
    server.release.set()
