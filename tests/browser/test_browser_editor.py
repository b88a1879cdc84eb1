"""Browser tests of the instructions editor and the live preview, as a designer uses them."""

from __future__ import annotations

import os
import re
import struct
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect

pytestmark = [
    pytest.mark.browser,
    pytest.mark.xdist_group("browser-editor"),
    pytest.mark.django_db(transaction=True),
]

ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"
DOCS = Path(__file__).resolve().parents[2] / "docs"

BOOK_FLIGHT_CODE = '''def BookFlight(city: str) -> dict:
    """Books a flight to the city."""
    context.state["budget"] = 1000
    return {"booked": city}
'''


def diagnostic(page: Page, text: str) -> Locator:
    return page.locator("#diagnostics li.diag").filter(has_text=text)


def editor(page: Page) -> Locator:
    """The instructions editor (CodeMirror's content element)."""
    return page.locator("#instructions-editor")


def caret(page: Page) -> int:
    return page.evaluate("window.statecraft.instructions.view.state.selection.main.from")


def set_instructions(app, text: str) -> None:
    from agents import services

    services.agent_update(agent=app.agents.get(is_root=True), instructions=text)


# ------------ 3. every reference kind


def test_add_a_python_tool_from_the_tools_pane(open_designer, trip_app):
    page = open_designer(trip_app)
    page.get_by_role("link", name="Add a tool").click()
    tool_form = page.locator("#tool-new form")
    expect(tool_form.get_by_label("Name", exact=True)).to_be_focused()
    tool_form.get_by_label("Name", exact=True).fill("BookFlight")
    expect(tool_form.get_by_label("Kind")).to_have_value("python")
    tool_form.get_by_label("Python code").fill(BOOK_FLIGHT_CODE)
    tool_form.get_by_role("button", name="Add tool").click()
    expect(page.locator("#tool-new")).to_have_count(0)
    expect(page.locator("#tool-list .item-name")).to_have_text(["BookFlight"])

    # Added from this agent's page, the tool is one this agent may call.
    editor(page).fill("Book with {@TOOL: BookFlight}.")
    expect(page.locator("#compiled")).to_have_text("Book with {@TOOL: BookFlight}.")
    for code in ("SC304", "SC305"):
        expect(diagnostic(page, code)).to_have_count(0)


@pytest.fixture
def with_tool(trip_app):
    from agents import services

    tool = services.tool_create(
        app=trip_app,
        name="BookFlight",
        kind="python",
        python_code=BOOK_FLIGHT_CODE,
        description="Books a flight.",
    )
    services.agent_update(agent=trip_app.agents.get(is_root=True), tools=[tool])
    return trip_app


def test_compiled_prompt_follows_typing_with_every_reference_kind(open_designer, with_tool):
    page = open_designer(with_tool)
    page.evaluate("window.__samePage = true")

    instructions = (
        "{{greeting}} {{traveller.name}} {budget} {@TOOL: BookFlight} "
        "{@AGENT: Booking helper} {% if vip %}VIP{% else %}standard{% endif %}"
    )
    editor(page).fill(instructions)

    compiled = page.locator("#compiled")
    expect(compiled).to_have_text(
        "Hello Ada {budget} {@TOOL: BookFlight} {@AGENT: Booking helper} VIP"
    )
    expect(compiled).not_to_contain_text("standard")
    expect(compiled.locator(".ref-static[data-ref=greeting]")).to_have_text("Hello")
    expect(compiled.locator(".chip-dynamic")).to_have_text("{budget}")
    # The tool and the agent are known: no "undeclared" / "may not call" / "no agent" problem.
    for code in ("SC301", "SC302", "SC304", "SC305", "SC306"):
        expect(diagnostic(page, code)).to_have_count(0)
    # The editor colours each kind of reference.
    layer = editor(page)
    for kind in ("static", "dynamic", "tool", "agent", "cond"):
        expect(layer.locator(f".hl-{kind}").first).to_be_visible()

    # Change the condition: the preview follows, still without a reload.
    editor(page).fill(instructions.replace("if vip", "if not vip"))
    expect(compiled).to_have_text(
        "Hello Ada {budget} {@TOOL: BookFlight} {@AGENT: Booking helper} standard"
    )
    assert page.evaluate("window.__samePage") is True
    assert page.js_errors == []


# ------------ 4. undeclared, then declared


def test_undeclared_variable_diagnostic_goes_away_when_declared(open_designer, trip_app):
    page = open_designer(trip_app)
    editor(page).fill("Note: {{undeclared_thing}}")

    expect(diagnostic(page, "undeclared_thing")).not_to_have_count(0)
    expect(diagnostic(page, "SC301")).to_have_count(1)
    expect(page.locator("#compiled")).to_have_text("Note: {{undeclared_thing}}")
    # The unknown name is marked in the editor at once.
    expect(editor(page).locator(".cm-lintRange-error")).to_have_text("{{undeclared_thing}}")

    page.get_by_role("link", name="Add a variable").click()
    form = page.locator("#variable-new form")
    form.get_by_label("Name", exact=True).fill("undeclared_thing")
    form.get_by_label("Default").fill("now here")
    form.get_by_label("Description").fill("Declared at last.")
    form.get_by_role("button", name="Add variable").click()

    # app-changed refreshes the preview with the (unsaved) text of the editor.
    expect(page.locator("#compiled")).to_have_text("Note: now here")
    expect(diagnostic(page, "undeclared_thing")).to_have_count(0)
    expect(diagnostic(page, "SC301")).to_have_count(0)
    expect(page.locator("#instructions")).to_have_value("Note: {{undeclared_thing}}")
    expect(editor(page).locator(".cm-lintRange-error")).to_have_count(0)


# ------------ 7. autocomplete


def test_autocomplete_static_variables(open_designer, trip_app):
    page = open_designer(trip_app)
    field = page.locator("#instructions")
    suggestions = page.locator(".cm-tooltip-autocomplete")
    editor(page).click()
    page.keyboard.type("Hi {{")

    expect(suggestions).to_be_visible()
    labels = suggestions.locator(".cm-completionLabel")
    expect(labels).to_have_count(5)
    for name in ("greeting", "budget", "vip", "traveller", "cities"):
        expect(suggestions).to_contain_text(name)
    # Each suggestion shows the type and the current default.
    expect(suggestions.locator("li", has_text="greeting")).to_contain_text("Text")
    expect(suggestions.locator("li", has_text="greeting")).to_contain_text("Hello")

    first = labels.nth(0).inner_text()
    second = labels.nth(1).inner_text()
    expect(suggestions.locator("li").nth(0)).to_have_attribute("aria-selected", "true")
    page.keyboard.press("ArrowDown")
    expect(suggestions.locator("li").nth(1)).to_have_attribute("aria-selected", "true")
    expect(suggestions.locator("li[aria-selected=true] .cm-completionLabel")).to_have_text(second)
    page.keyboard.press("Enter")

    expect(field).to_have_value(f"Hi {{{{{second}}}}}")
    expect(suggestions).to_be_hidden()
    assert first != second

    # Typing narrows the list; Esc closes it and inserts nothing.
    page.keyboard.type(" and {{tra")
    expect(suggestions).to_be_visible()
    expect(labels).to_have_text(["traveller"])
    page.keyboard.press("Escape")
    expect(suggestions).to_be_hidden()
    expect(field).to_have_value(f"Hi {{{{{second}}}}} and {{{{tra")
    expect(editor(page)).to_be_focused()


def test_autocomplete_agent_reference(open_designer, trip_app):
    page = open_designer(trip_app)
    field = page.locator("#instructions")
    suggestions = page.locator(".cm-tooltip-autocomplete")
    editor(page).click()
    page.keyboard.type("Ask {@")

    expect(suggestions.locator(".cm-completionLabel")).to_have_text(["TOOL", "AGENT"])
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    expect(field).to_have_value("Ask {@AGENT: ")
    # The list reopens with the agents of the app.
    expect(suggestions).to_be_visible()
    expect(suggestions).to_contain_text("Booking helper")
    page.keyboard.type("Boo")
    expect(suggestions.locator(".cm-completionLabel")).to_have_text(["Booking helper"])
    page.keyboard.press("Enter")
    expect(field).to_have_value("Ask {@AGENT: Booking helper}")
    expect(suggestions).to_be_hidden()
    expect(page.locator("#compiled")).to_have_text("Ask {@AGENT: Booking helper}")


# ------------ 8. diagnostic click moves the cursor


def test_clicking_a_diagnostic_moves_the_cursor(open_designer, trip_app):
    text = "Plan a trip.\nGreet {{traveller.name}} warmly.\nMention {{nope}} here."
    set_instructions(trip_app, text)
    page = open_designer(trip_app)

    problem = diagnostic(page, "nope").filter(has_text="SC301")
    expect(problem).to_have_count(1)
    expect(problem.locator(".diag-pos")).to_have_text("line 3:9")
    problem.get_by_role("button").click()

    expect(editor(page)).to_be_focused()
    assert caret(page) == text.index("{{nope}}")

    # Another problem, elsewhere: the cursor follows.
    text2 = "{{gone}} first.\n" + text
    editor(page).fill(text2)
    gone = diagnostic(page, "gone").filter(has_text="SC301")
    expect(gone).to_have_count(1)
    page.keyboard.press("Control+End")
    gone.get_by_role("button").click()
    expect(editor(page)).to_be_focused()
    assert caret(page) == text2.index("{{gone}}")
    diagnostic(page, "nope").filter(has_text="SC301").get_by_role("button").click()
    assert caret(page) == text2.index("{{nope}}")


# ------------ 9. save


def _saved_instructions(app) -> str:
    return app.agents.get(is_root=True).instructions


def test_ctrl_s_saves_the_instructions(open_designer, trip_app):
    page = open_designer(trip_app)
    editor(page).click()
    page.keyboard.type("Say {{greeting}} to {{traveller.name}}.")
    with page.expect_response(re.compile(r"/instructions$")) as saved:
        page.keyboard.press("Control+s")
    assert saved.value.ok
    expect(page.locator("#save-status")).to_have_text("Saved")

    page.reload()
    expect(page.locator("#instructions")).to_have_value("Say {{greeting}} to {{traveller.name}}.")
    expect(page.locator("#compiled")).to_have_text("Say Hello to Ada.")
    assert _saved_instructions(trip_app) == "Say {{greeting}} to {{traveller.name}}."


def test_autosave_then_save_button_saves_again(open_designer, trip_app):
    page = open_designer(trip_app)
    status = page.locator("#save-status")
    editor(page).click()
    # Typing alone saves, after a pause.
    with page.expect_response(re.compile(r"/instructions$")) as first:
        page.keyboard.type("First line.")
    assert first.value.ok
    expect(status).not_to_have_class(re.compile("error-text"))

    # A second save of the same page is not refused as a conflicting edit.
    page.keyboard.type(" Second line.")
    with page.expect_response(re.compile(r"/instructions$")) as second:
        page.get_by_role("button", name="Save", exact=True).click()
    assert second.value.ok
    expect(status).to_have_text("Saved")
    expect(status).not_to_have_class(re.compile("error-text"))

    page.reload()
    expect(page.locator("#instructions")).to_have_value("First line. Second line.")
    assert _saved_instructions(trip_app) == "First line. Second line."


def test_typing_runs_no_animation_and_the_caret_blinks_after_a_pause(open_designer, trip_app):
    """Issue #22, item 9: CodeMirror's caret blinked by an infinite CSS animation, restarted by
    every key; a running animation kept the compositor producing frames, so each key's frame
    waited for the next tick (most of a key's latency over a bare textarea). The caret blinks
    by a timer now: on while typing, blinking after a pause, and no animation runs."""
    page = open_designer(trip_app)
    editor(page).click()
    page.keyboard.type("Say hello.")
    # Nothing animates in the page while a designer types (the old page ran cm-blink).
    assert page.evaluate("() => document.getAnimations().map(a => a.animationName)") == []
    # Just after a key the caret is shown; after a pause it blinks: off, then on again.
    visibility = (
        "() => document.querySelector('#instructions-editor').closest('.cm-editor')"
        ".querySelector('.cm-cursorLayer').style.visibility"
    )

    def wait_until(value: str) -> None:
        page.wait_for_function(f"() => ({visibility})() === {value!r}")

    page.keyboard.type("!")
    assert page.evaluate(visibility) == ""
    wait_until("hidden")
    wait_until("")
    # A key while it is off shows it at once.
    wait_until("hidden")
    page.keyboard.type("?")
    assert page.evaluate(visibility) == ""
    assert page.evaluate("() => document.getAnimations().length") == 0
    assert page.evaluate("() => window.statecraft.instructions.text()") == "Say hello.!?"


# ------------ 10. README screenshot


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (1920, 1080)])
def test_screenshot_of_the_demo_designer(open_designer, user, width, height):
    from agents.demo import load_demo

    shop = next(a for a in load_demo(user) if a.name == "Shopping assistant")
    page = open_designer(shop)
    page.set_viewport_size({"width": width, "height": height})

    compiled = page.locator("#compiled")
    expect(compiled).to_contain_text("You are a helpful shopping assistant.")
    expect(compiled).to_contain_text("No refunds after 30 days. Free shipping over 50 EUR.")
    expect(compiled).to_contain_text("Greet Ada by name and mention their loyalty tier (gold).")
    expect(compiled).to_contain_text("{@TOOL: AddToCart}")
    expect(compiled).to_contain_text("{cart_total}")
    expect(compiled).not_to_contain_text("{{")
    expect(page.locator("#variable-list .count")).to_have_text("4")
    # The editor colours the references; nothing is cut at either width.
    expect(page.locator("#instructions-editor .hl-tool").first).to_be_visible()
    side = page.locator(".pane-side").bounding_box()
    assert 280 <= side["width"] <= 360

    # The conversation pane loads after the page: wait until nothing is in flight.
    page.wait_for_load_state("networkidle")
    # The README's pictures are rewritten only on request (UPDATE_SCREENSHOTS=1), so a test
    # run leaves the work tree clean; otherwise the shots go to tests/artifacts/.
    folder = DOCS if os.environ.get("UPDATE_SCREENSHOTS") else ARTIFACTS
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"designer-{width}.png"
    page.screenshot(path=str(target))

    data = target.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", data[16:24]) == (width, height)
