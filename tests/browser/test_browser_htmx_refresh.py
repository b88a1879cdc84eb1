"""The designer's regions that follow every save do it with htmx (issue 29, item 6): the save
sends the `app-changed` event (HX-Trigger), the usage counts and the agent's "Tools:" line
ask for themselves again (`hx-trigger="app-changed from:body"`) and swap what they show; the
page is not reloaded, a form open in the left pane keeps what was typed, and the console is
htmx's own (no patch)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

pytestmark = [
    pytest.mark.browser,
    pytest.mark.xdist_group("browser-htmx-refresh"),
    pytest.mark.django_db(transaction=True),
]

READS_BUDGET = 'def CheckBudget():\n    """Checks."""\nreturn context.state.get("budget")'


def _count(page: Page, name: str):
    return (
        page.locator("#variable-list li.item")
        .filter(has=page.get_by_text(name, exact=True))
        .locator(".usage-link")
    )


def test_a_tool_save_updates_the_counts_and_the_tools_line_without_a_reload(
    open_designer, trip_app
):
    page = open_designer(trip_app)
    page.evaluate("() => { window.notReloaded = true; }")
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    expect(_count(page, "budget")).to_have_text("unused")
    # A form open in another row, with text typed in it: the refresh leaves it alone.
    page.get_by_label("Edit greeting").click()
    description = page.locator("#variable-list li.editing").get_by_label("Description")
    description.fill("Typed while the counts refresh")
    page.get_by_role("link", name="Add a tool").click()
    form = page.locator("#tool-new form")
    form.get_by_label("Name", exact=True).fill("CheckBudget")
    form.get_by_label("Python code").fill(READS_BUDGET)
    with page.expect_response(re.compile(r"/variables/usage-counts\?")) as counts:
        form.get_by_role("button", name="Add tool").click()
    assert counts.value.ok
    expect(_count(page, "budget")).to_have_text("used 1\u00d7")
    expect(page.locator("#agent-tools .chip-tool")).to_have_text(["CheckBudget"])
    expect(description).to_have_value("Typed while the counts refresh")
    assert page.evaluate("() => window.notReloaded") is True
    assert errors == [] and page.js_errors == []


def test_the_count_still_opens_where_the_variable_is_used(open_designer, trip_app):
    """The count swapped in is the link's text only: the link still shows the usage."""
    page = open_designer(trip_app)
    editor = page.locator("#instructions-editor")
    editor.click()
    page.keyboard.press("Control+End")
    page.keyboard.type(" {{budget}}")
    with page.expect_response(re.compile(r"/variables/usage-counts\?")):
        page.keyboard.press("Control+s")
    count = _count(page, "budget")
    expect(count).to_have_text("used 1\u00d7")
    count.click()
    budget = trip_app.variables.get(name="budget")
    expect(page.locator(f"#usage-{budget.pk}")).to_contain_text("static {{budget}}")


def test_the_console_is_not_patched(open_designer, trip_app):
    page = open_designer(trip_app)
    assert page.evaluate("() => console.error.toString().includes('[native code]')")


def test_example_value_of_a_schema_comes_from_the_server(open_designer, trip_app):
    page = open_designer(trip_app)
    page.get_by_label("Edit schema Traveller").click()
    form = page.locator("#schema-list li.editing form")
    box = form.locator(".example-box")
    expect(box).to_be_hidden()
    form.get_by_role("button", name="Example value").click()
    expect(box).to_be_visible()
    expect(box.locator("pre")).to_contain_text('"name":')
    expect(box.locator("pre")).to_contain_text('"age":')


@pytest.fixture
def shop_app(user):
    from agents.demo import load_demo

    return next(a for a in load_demo(user) if a.name == "Shopping assistant")


def test_a_second_change_in_flight_aborts_nothing_and_the_newest_answer_shows(
    open_designer, shop_app
):
    """A double-click on "mocks" asks the conversation twice while the first answer is on
    its way: nothing is aborted (htmx would log it as an error), the first answer is not
    swapped over the second change, and the panel shows the box as the second click left it."""
    page = open_designer(shop_app)
    page.evaluate(
        """() => { window.aborts = 0; window.answers = 0;
            document.body.addEventListener("htmx:sendAbort", () => { window.aborts += 1; });
            document.body.addEventListener("htmx:afterRequest", (e) => {
              if (e.detail.pathInfo.requestPath.includes("/simulate")) window.answers += 1;
            }); }"""
    )
    mocks = page.locator("#conversation-controls").get_by_label("mocks")
    expect(mocks).not_to_be_checked()
    mocks.dblclick()
    page.wait_for_function("() => window.answers >= 2")
    page.wait_for_load_state("networkidle")
    expect(page.locator("#conversation-controls").get_by_label("mocks")).not_to_be_checked()
    assert page.evaluate("() => window.aborts") == 0
