"""Browser test of versions, as a designer uses them: save a version, edit, open the diff, restore."""

from __future__ import annotations

import os
import re
import struct
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

pytestmark = [
    pytest.mark.browser,
    pytest.mark.xdist_group("browser-versions"),
    pytest.mark.django_db(transaction=True),
]

ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"
DOCS = Path(__file__).resolve().parents[2] / "docs"


def _save_instructions(page: Page, text: str) -> None:
    editor = page.locator("#instructions-editor")
    editor.click()
    page.keyboard.press("Control+a")
    page.keyboard.type(text)
    with page.expect_response(re.compile(r"/instructions$")) as saved:
        page.keyboard.press("Control+s")
    assert saved.value.ok
    expect(page.locator("#save-status")).to_have_text("Saved")


def test_save_a_version_edit_open_the_diff_restore(open_designer, trip_app):
    page = open_designer(trip_app)
    _save_instructions(page, "Hello {{greeting}}.")

    # Save a version from the Versions page (the designer's header links to it).
    page.get_by_role("link", name="Versions").click()
    expect(page.get_by_role("heading", name="Versions of “Trip planner”")).to_be_visible()
    expect(page.get_by_text("No versions yet")).to_be_visible()
    page.get_by_label("Name").fill("Plain greeting")
    page.get_by_label("Note").fill("Before the traveller's name")
    page.get_by_role("button", name="Save version").click()
    row = page.locator("#version-1")
    expect(row).to_contain_text("Plain greeting")
    expect(row).to_contain_text("Before the traveller's name")
    expect(row).to_contain_text("ada")

    # Label it production.
    page.get_by_role("combobox", name="Label").fill("production")
    page.get_by_role("button", name="Set label").click()
    expect(row.locator(".label-chip")).to_have_text("production")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "versions-page.png"))  # to look at, not compared

    # Edit the working copy in the designer.
    page.locator("#crumb-app").click()  # the header, as on every page of the app
    expect(page.locator("#compiled")).to_have_text("Hello Hello.")
    _save_instructions(page, "Hello {{greeting}}, {{traveller.name}}.")
    expect(page.locator("#compiled")).to_have_text("Hello Hello, Ada.")

    # Open the diff of version 1 against the working copy.
    page.get_by_role("link", name="Versions").click()
    row.get_by_role("link", name="Diff with working copy").click()
    expect(page.locator("#diff-summary")).to_contain_text("v1 · Plain greeting → working copy")
    instructions = page.locator("#diff-instructions")
    expect(instructions.locator(".dl-removed")).to_contain_text("Hello {{greeting}}.")
    expect(instructions.locator(".dl-added")).to_contain_text(
        "Hello {{greeting}}, {{traveller.name}}."
    )
    prompts = page.locator("#diff-prompts")
    expect(prompts.locator(".dl-removed")).to_have_text(re.compile(r"Hello Hello\.$"))
    expect(prompts.locator(".dl-added")).to_have_text(re.compile(r"Hello Hello, Ada\.$"))
    expect(page.locator("#diff-declarations")).to_contain_text("No variable, schema, tool")

    # Restore version 1, after confirming.
    page.get_by_role("link", name="Restore v1 into the working copy…").click()
    expect(
        page.get_by_role("heading", name="Restore version 1 · “Plain greeting”?")
    ).to_be_visible()
    page.get_by_role("button", name="Restore version 1").click()
    expect(page.locator(".flash")).to_contain_text("Restored version 1 · Plain greeting")
    expect(page.locator("#instructions")).to_have_value("Hello {{greeting}}.")
    expect(page.locator("#compiled")).to_have_text("Hello Hello.")
    assert trip_app.agents.get(is_root=True).instructions == "Hello {{greeting}}."
    assert page.js_errors == []  # type: ignore[attr-defined]


def test_screenshot_of_the_diff(signed_in_page: Page, live_server, user):
    from agents import services
    from agents.demo import load_demo
    from agents.services import versions

    shop = next(a for a in load_demo(user) if a.name == "Shopping assistant")
    versions.version_create(app=shop, user=user, name="Launch", note="What went live.")
    root = shop.agents.get(is_root=True)
    services.agent_save_instructions(
        agent=root,
        instructions=root.instructions.replace(
            "You are a helpful shopping assistant.",
            "You are a friendly, concise shopping assistant.",
        ),
    )
    tier = shop.variables.filter(type="object").first()
    if tier is not None and isinstance(tier.default, dict) and "tier" in tier.default:
        services.variable_update(variable=tier, default={**tier.default, "tier": "silver"})
    variable = shop.variables.order_by("pk").last()
    services.variable_create(
        app=shop, name="preferred_language", type="text", default="en", description="ISO code."
    )
    services.variable_update(variable=variable, description=variable.description + " (EUR)")
    page = signed_in_page
    page.set_viewport_size({"width": 1440, "height": 1500})
    page.goto(f"{live_server.url}/apps/{shop.pk}/versions/diff?from=1&to=working")
    expect(page.locator("#diff-summary")).to_contain_text("v1 · Launch → working copy")
    expect(page.locator("#diff-prompts .dl-added").first).to_contain_text("friendly, concise")
    folder = DOCS if os.environ.get("UPDATE_SCREENSHOTS") else ARTIFACTS
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "versions.png"
    page.screenshot(path=str(target))
    data = target.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", data[16:24]) == (1440, 1500)


def test_the_diff_answers_at_once_and_fills_its_scenario_results(
    signed_in_page: Page, live_server, user, workers
):
    from agents import services
    from agents.demo import ADD_TO_CART_CODE, load_demo
    from agents.services import versions

    shop = next(a for a in load_demo(user) if a.name == "Shopping assistant")
    versions.version_create(app=shop, user=user, name="Launch")
    tool = shop.tools.get(name="AddToCart")
    services.tool_update(tool=tool, python_code=ADD_TO_CART_CODE.replace("19.5", "21"))
    workers()
    page = signed_in_page
    page.goto(f"{live_server.url}/apps/{shop.pk}/versions/diff?from=1&to=working")
    expect(page.locator("#diff-summary")).to_contain_text("v1 · Launch → working copy")
    results = page.locator("#scenario-results")
    expect(results).to_contain_text("Buy a product")
    expect(results.locator(".change-badge").first).to_have_text("changed")
    expect(page.locator("#scenario-results-section")).to_have_attribute("data-status", "succeeded")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "version_diff_scenarios.png"), full_page=True)
    assert page.js_errors == []  # type: ignore[attr-defined]
