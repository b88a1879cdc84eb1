"""A golden fails when a designer breaks a tool, shows where and why, and passes once fixed."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import ARTIFACTS

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]


@pytest.fixture
def shop_app(user):
    from agents.demo import load_demo

    return next(a for a in load_demo(user) if a.name == "Shopping assistant")


@pytest.fixture
def bank_app(user):
    from agents.demo import load_demo

    return next(a for a in load_demo(user) if a.name == "Bank demo")


def _edit_price(page: Page, old: str, new: str) -> None:
    page.get_by_label("Edit tool AddToCart").click()
    editor = page.locator("#tool-list .cm-field-python .cm-content")
    expect(editor).to_be_visible()
    text = page.locator("#tool-list textarea[name=python_code]").input_value()
    assert f"price = {old}" in text
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(text.replace(f"price = {old}", f"price = {new}"))  # as a paste
    expect(editor).to_contain_text(f"price = {new}")
    page.locator("#tool-list button[type=submit]", has_text="Save").click()


def test_breaking_a_tool_turns_the_golden_red_with_the_diff_and_fixing_it_turns_it_green(
    open_designer, shop_app, workers
):
    workers()  # Run all is a job: a worker runs it
    page: Page = open_designer(shop_app)
    conversation = page.locator("#conversation-panel")
    state = conversation.locator("#expect-step-3")
    expect(state).to_have_class("event event-expect expect-passed")
    expect(state.locator(".badge")).to_have_text("✓ passed")

    _edit_price(page, "19.5", "21")

    expect(state).to_have_class("event event-expect expect-failed")
    expect(state.locator(".badge")).to_have_text("✗ failed")
    expect(state.locator(".expect-diff")).to_have_text("cart_total: expected 39, got 42")
    expect(state.locator("pre.expected")).to_contain_text('"cart_total": 39')
    expect(state.locator("pre.actual")).to_contain_text('"cart_total": 42')
    expect(conversation.locator("#golden-summary")).to_contain_text("2 failed")

    page.get_by_role("button", name="Run all").click()
    summary = page.locator("#run-all")
    expect(summary.locator(".run-all-summary")).to_contain_text("1 failed")
    failing = summary.locator("a.failed-step")
    expect(failing).to_have_text(["step 3", "step 4 [Check_Cart_Total]"])

    _edit_price(page, "21", "19.5")

    expect(state).to_have_class("event event-expect expect-passed")
    expect(state.locator(".badge")).to_have_text("✓ passed")
    expect(conversation.locator("#golden-summary")).to_contain_text("2 passed")
    expect(summary.locator(".run-all-summary")).to_contain_text("1 passed")
    expect(summary.locator(".run-all-summary")).to_contain_text("0 failed")


def test_a_json_default_is_checked_against_its_schema_as_it_is_typed(open_designer, shop_app):
    page: Page = open_designer(shop_app)
    page.get_by_label("Edit customer", exact=True).click()
    editor = page.locator("#variable-list .default-field .cm-content")
    expect(editor).to_be_visible()
    check = page.locator("#variable-list .default-check")
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text('{"first_name": "Ada", "tier": "platinum"}')
    expect(check).to_contain_text("platinum")
    page.keyboard.press("Control+A")
    page.keyboard.insert_text('{"first_name": "Ada", "tier": "gold"}')
    expect(check).to_have_text("")


def test_run_all_shows_the_bar_moving_fills_results_and_cancel_stops_it(
    open_designer, bank_app, workers
):
    """Run all is a job run by a real worker process: the bar counts the scenarios as they
    finish, each result appears as it comes, and Cancel stops the job part-way."""
    from agents.models import Job
    from tests.workers import slow_app

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    total = slow_app(bank_app, 12, calls=3)  # about 1 s a scenario
    worker = workers()
    page: Page = open_designer(bank_app)
    page.get_by_role("button", name="Run all").click()
    run_all = page.locator("#run-all")
    expect(run_all.locator("progress")).to_be_visible()
    # The pieces run two at a time in the worker's threads: the count may go 0 → 2.
    count = run_all.locator(".run-all-count")
    expect(count).to_have_text(re.compile(rf"^[1-9][0-9]* of {total}$"))
    expect(count).not_to_have_text(count.inner_text())  # it moves
    expect(run_all.locator(".run-all-current")).to_contain_text("running banking_agent / ")
    expect(run_all.locator(".run-all-item").nth(1)).to_be_visible()  # results fill in
    page.screenshot(path=str(ARTIFACTS / "run_all_progress.png"))
    run_all.get_by_role("button", name="Cancel").click()
    job = Job.objects.get(app=bank_app, parent=None)
    worker.wait_for(f"job {job.pk} (evaluate_app) cancelled")
    expect(run_all.locator(".run-all-stopped")).to_contain_text("Cancelled after")
    expect(run_all.locator("progress")).to_have_count(0)
    job.refresh_from_db()
    assert job.status == "cancelled" and job.progress_done < total
    page.screenshot(path=str(ARTIFACTS / "run_all_cancelled.png"))
    assert page.js_errors == []
