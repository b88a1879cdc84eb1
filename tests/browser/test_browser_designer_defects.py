"""Browser tests of the designer defects of issue 22 (items 1-10): each reproduces what a
designer did in Chromium and fails on the code before the fix."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

pytestmark = [
    pytest.mark.browser,
    pytest.mark.xdist_group("browser-designer-defects"),
    pytest.mark.django_db(transaction=True),
]

ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"


@pytest.fixture
def shop_app(user):
    from agents.demo import load_demo

    return next(a for a in load_demo(user) if a.name == "Shopping assistant")


def _root(app):
    return app.agents.get(is_root=True)


# ------------ 1. saving a scenario keeps "Use tool mocks" and posts only the scenario


def test_saving_an_unchanged_scenario_keeps_mocks_off_and_posts_no_instructions(
    open_designer, shop_app
):
    scenario = _root(shop_app).scenarios.get()
    assert scenario.use_mocks is False
    page: Page = open_designer(shop_app)
    panel = page.locator("#conversation-panel")
    panel.get_by_role("link", name="Edit", exact=True).click()
    form = page.locator("#scenario-editor form")
    expect(form.get_by_label("Use tool mocks")).not_to_be_checked()
    with page.expect_request(re.compile(r"/scenarios/\d+/edit$")) as sent:
        form.get_by_role("button", name="Save scenario").click()
    expect(page.locator("#scenario-editor form")).to_have_count(0)
    body = sent.value.post_data or ""
    assert "instructions=" not in body
    scenario.refresh_from_db()
    assert scenario.use_mocks is False


# ------------ 2. Back never shows a stale designer


def test_back_shows_the_saved_instructions_not_an_old_copy(open_designer, shop_app, live_server):
    page: Page = open_designer(shop_app)
    page.locator("#instructions-editor").click()
    page.keyboard.press("Control+End")
    with page.expect_response(re.compile(r"/instructions$")) as saved:
        page.keyboard.type(" Typed before leaving.")
        page.keyboard.press("Control+s")
    assert saved.value.ok
    expect(page.locator("#save-status")).to_have_text("Saved")
    page.get_by_role("link", name="History").click()
    expect(page).to_have_url(re.compile(r"/history$"))
    page.go_back()
    expect(page.locator("#instructions-editor")).to_contain_text("Typed before leaving.")
    # Typing there saves over my own save: no "changed elsewhere" conflict.
    page.locator("#instructions-editor").click()
    page.keyboard.press("Control+End")
    with page.expect_response(re.compile(r"/instructions$")) as again:
        page.keyboard.type(" Typed after Back.")
        page.keyboard.press("Control+s")
    assert again.value.status == 200
    expect(page.locator("#save-status")).to_have_text("Saved")
    expect(page.locator("#editor-conflict")).to_have_count(0)
    assert _root(shop_app).instructions.endswith("Typed before leaving. Typed after Back.")


# ------------ 4. a refused save is a refusal, not a conflict, and is not sent in a loop


def test_a_refused_instruction_save_says_why_keeps_the_text_and_does_not_loop(
    open_designer, shop_app
):
    page: Page = open_designer(shop_app)
    posts: list[str] = []
    page.on(
        "request",
        lambda r: (
            posts.append(r.url) if r.method == "POST" and r.url.endswith("/instructions") else None
        ),
    )
    page.locator("#instructions-editor").click()
    page.keyboard.press("Control+End")
    with page.expect_response(re.compile(r"/instructions$")) as refused:
        page.keyboard.insert_text(" nul:\x00.")
        page.keyboard.press("Control+s")
    assert refused.value.status == 422
    status = page.locator("#save-status")
    expect(status).to_contain_text("NUL")
    expect(status).not_to_contain_text("changed elsewhere")
    expect(page.locator("#editor-conflict")).to_have_count(0)
    # The same text is not sent again: pressing Ctrl+S again sends nothing.
    page.keyboard.press("Control+s")
    page.evaluate("new Promise((resolve) => setTimeout(resolve, 0))")
    assert len(posts) == 1
    assert "nul:" in page.evaluate("window.statecraft.instructions.text()")
    assert "nul:" not in _root(shop_app).instructions


MERGES = [
    # (base, mine, theirs, merged or None)
    ("abc", "abc", "abc", "abc"),
    ("abc", "aXbc", "abc", "aXbc"),
    ("abc", "abc", "abcY", "abcY"),
    ("one two three", "ONE two three", "one two THREE", "ONE two THREE"),
    ("one two three", "one 2 three", "one deux three", None),
    (
        "line 1\nline 2\n",
        "line 1 mine\nline 2\n",
        "line 1\nline 2 theirs\n",
        "line 1 mine\nline 2 theirs\n",
    ),
    ("abc", "aXbc", "aXbc", "aXbc"),
    ("abc", "aXbc", "aYbc", None),
    ("", "mine", "theirs", None),
    ("keep", "", "keep", ""),
]


def test_three_way_merge(open_designer, shop_app):
    """merge3 of the bundled editor, in the browser that runs it: non-overlapping edits of
    both sides merge, edits of the same place give null."""
    page: Page = open_designer(shop_app)
    got = page.evaluate(
        "(cases) => cases.map(([b, m, t]) => window.statecraft.merge3(b, m, t))",
        [list(case[:3]) for case in MERGES],
    )
    assert got == [case[3] for case in MERGES]


# ------------ 10. a viewer's visit runs nobody's code


def test_a_viewer_sees_the_last_stored_result_and_runs_the_simulation_on_request(
    page: Page, live_server, shop_app, other_user
):
    from agents import services

    services.app_share(app=shop_app, user=other_user, role="viewer")
    services.app_evaluate(app=shop_app, actor=shop_app.owner)
    simulations: list[str] = []
    page.on("request", lambda r: simulations.append(r.url) if "/simulate" in r.url else None)
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill("bob")
    page.get_by_label("Password").fill("pw-bob-123456")
    page.get_by_role("button", name="Sign in").click()
    page.goto(f"{live_server.url}/apps/{shop_app.pk}/")
    expect(page.locator("#compiled")).to_be_visible()
    stored = page.locator("#stored-result")
    expect(stored).to_contain_text("Buy a product")
    expect(stored).to_contain_text("Passed")
    expect(stored).to_contain_text("by ada")
    assert simulations == []
    page.get_by_role("link", name="Run the simulation").click()
    expect(page.locator("#conversation-panel .timeline")).to_be_visible()
    assert len(simulations) == 1


# ------------ 5. Escape in a code editor is the editor's, not the form's Cancel


def test_escape_in_a_code_editor_keeps_the_form_and_escape_then_tab_leaves_it(
    open_designer, shop_app
):
    page: Page = open_designer(shop_app)
    page.get_by_label("Edit tool AddToCart").click()
    form = page.locator("#tool-list li.editing form")
    code = form.locator(".cm-field-python .cm-content")
    expect(code).to_be_visible()
    expect(form.locator(".cm-hint").first).to_have_text(
        "Tab indents here; to leave the code, press Esc then Tab."
    )
    code.click()
    page.keyboard.press("Control+End")
    page.keyboard.type("\n# typed before Escape")
    page.keyboard.press("Escape")
    expect(form).to_be_visible()
    expect(code).to_contain_text("# typed before Escape")
    page.keyboard.press("Tab")
    focused_in_code = page.evaluate(
        "() => Boolean(document.activeElement.closest('.cm-field-python'))"
    )
    assert focused_in_code is False
    expect(form.locator("textarea[name=python_code]")).to_have_value(
        re.compile("# typed before Escape")
    )


# ------------ 8. accessibility: no axe-core violation on the designer and its pages


def test_the_designer_has_no_axe_violations(open_designer, shop_app):
    from tests.browser.conftest import axe_violations

    page: Page = open_designer(shop_app)
    expect(page.locator("#conversation-panel .timeline")).to_be_visible()
    page.get_by_label("Edit tool AddToCart").click()
    expect(page.locator("#tool-list .cm-field-python")).to_be_visible()
    page.get_by_label("Add a variable").click()
    expect(page.locator("#variable-new form")).to_be_visible()
    violations = axe_violations(page)
    assert violations == [], json.dumps(violations, indent=1)


def test_versions_history_and_import_report_have_no_axe_violations(
    signed_in_page: Page, live_server, shop_app
):
    from agents.services import exchange, versions
    from tests.browser.conftest import axe_violations

    versions.version_create(app=shop_app, user=shop_app.owner, name="First", note="first")
    data, _ = exchange.app_export_cx(shop_app)
    imported, _, _ = exchange.app_import_file(
        owner=shop_app.owner, data=data, name="Imported shop", filename="shop.zip"
    )
    page = signed_in_page
    found = {}
    for app, path in ((shop_app, "versions"), (shop_app, "history"), (imported, "import-report")):
        page.goto(f"{live_server.url}/apps/{app.pk}/{path}")
        expect(page.locator("main h1")).to_be_visible()
        found[path] = axe_violations(page)
    assert found == {"versions": [], "history": [], "import-report": []}, json.dumps(found)


def test_focus_returns_to_the_row_after_an_inline_save_or_cancel(open_designer, shop_app):
    page: Page = open_designer(shop_app)
    page.get_by_label("Edit tool AddToCart").click()
    page.locator("#tool-list li.editing").get_by_role("link", name="Cancel").click()
    expect(page.get_by_label("Edit tool AddToCart")).to_be_focused()
    page.get_by_label("Edit tool AddToCart").click()
    page.locator("#tool-list li.editing").get_by_role("button", name="Save").click()
    expect(page.get_by_label("Edit tool AddToCart")).to_be_focused()
    page.get_by_label("Add a variable").click()
    expect(page.locator("#variable-new input[name=name]")).to_be_focused()
    page.locator("#variable-list li.editing").get_by_role("link", name="Cancel").click()
    expect(page.get_by_label("Add a variable")).to_be_focused()


# ------------ 6. layout at 1280 px


def _box(page: Page, selector: str) -> dict:
    return page.locator(selector).first.bounding_box()


def test_layout_at_1280_px_keeps_everything_inside_its_pane(open_designer, shop_app):
    from agents import services

    tool = shop_app.tools.get(name="AddToCart")
    services.tool_update(tool=tool, python_code=tool.python_code.replace("19.5", "21"))
    rules = shop_app.variables.get(name="business_rules")
    services.variable_update(variable=rules, default="A" * 600)
    page: Page = open_designer(shop_app)
    page.set_viewport_size({"width": 1280, "height": 800})
    expect(page.locator("#expect-step-2.expect-failed")).to_be_visible()
    overflow = page.evaluate(
        "() => [...document.querySelectorAll('.pane')].map((p) => p.scrollWidth - p.clientWidth)"
    )
    assert overflow == [0, 0, 0]  # the failure cards fit the preview pane
    rows = page.evaluate(
        "() => [...document.querySelectorAll('.state-table tr')].map((r) => r.offsetHeight)"
    )
    assert max(rows) < 200  # a 600-character value opens on request

    page.get_by_label("Edit customer", exact=True).click()
    side = _box(page, ".pane-side")
    label = _box(page, "#variable-list li.editing label.check:has([name=update_code])")
    assert label["x"] + label["width"] <= side["x"] + side["width"]
    page.locator("#variable-list li.editing").get_by_role("link", name="Cancel").click()

    page.get_by_label("Edit schema Customer").click()
    cancel = _box(page, "#schema-list li.editing [data-cancel]")
    assert cancel["x"] + cancel["width"] <= side["x"] + side["width"]
    page.locator("#schema-list li.editing [data-cancel]").click()

    page.get_by_label("Edit tool AddToCart").click()
    expect(page.locator("main.designer")).to_have_class(re.compile(r"\bwide-code\b"))
    code = _box(page, "#tool-list .cm-field-python")
    assert code["width"] >= 480  # code gets a wide editor, not the 320 px pane

    page.locator("#tool-list li.editing [data-cancel]").click()

    root = _root(shop_app)
    services.agent_save_instructions(
        agent=root, instructions="Changed elsewhere.\n" + root.instructions
    )
    page.evaluate(
        "() => window.statecraft.instructions.view.dispatch({changes: {from: 0, to: 0, insert: 'Mine. '}})"
    )
    page.evaluate("window.statecraft.instructions.save()")
    expect(page.locator("#editor-conflict")).to_be_visible()
    assert _box(page, "#editor-help")["width"] >= 200  # not a word per line


# ------------ 9. a key of a big saved text posts its edit, not the text


def test_typing_in_a_big_text_posts_the_edit_and_the_preview_follows(open_designer, shop_app):
    from agents import services

    root = _root(shop_app)
    big = "Keep answers short and friendly.\n" * 1500 + "Total: {{cart_total}}"
    services.agent_save_instructions(agent=root, instructions=big)
    page: Page = open_designer(shop_app)
    expect(page.locator("#compiled")).to_have_attribute("data-length", str(len(big) - 14 + 1))
    page.locator("#instructions-editor").click()
    page.keyboard.press("Control+End")
    with page.expect_request(re.compile(r"/preview$")) as sent:
        page.keyboard.type(" EUR")
    body = sent.value.post_data or ""
    assert len(body) < 2000  # the edit, not the 50 KB text
    assert "instructions_insert=" in body
    expect(page.locator("#compiled")).to_have_attribute("data-length", str(len(big) - 14 + 5))


# ------------ 7. a failing step's link brings the step into view


def test_a_failing_step_link_scrolls_the_step_into_view(
    open_designer, shop_app, live_server, workers
):
    from agents import services

    workers()  # Run all is a job: a worker runs it
    tool = shop_app.tools.get(name="AddToCart")
    services.tool_update(tool=tool, python_code=tool.python_code.replace("19.5", "21"))
    page: Page = open_designer(shop_app)
    page.get_by_role("button", name="Run all").click()
    link = page.locator("#run-all a.failed-step").last
    expect(link).to_be_visible()
    link.click()
    step = page.locator("#expect-step-3")
    expect(step).to_have_class(re.compile(r"\blinked-step\b"))
    expect(step).to_be_in_viewport()


# ------------ 7. an undeclared {typo_var} is marked; the squiggle's tooltip shows code, not backticks


def test_undeclared_dynamic_reference_is_marked_and_its_tooltip_has_no_backticks(
    open_designer, shop_app
):
    page: Page = open_designer(shop_app)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.locator("#instructions-editor").click()
    page.keyboard.press("Control+End")
    with page.expect_response(re.compile(r"/preview$")):
        page.keyboard.type(" {typo_var}")
    marked = page.locator('#compiled .chip-missing[data-ref="typo_var"]')
    expect(marked).to_have_count(1)
    page.locator(".cm-lintRange-error").last.hover()
    tooltip = page.locator(".cm-tooltip-lint").first
    expect(tooltip.locator("code").first).to_have_text("{typo_var}")
    assert "`" not in tooltip.inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "defects7-undeclared-dynamic.png"))


# ------------ 7. an import refused for bad names says what a name is and offers one


def test_import_of_bad_names_lists_each_with_its_fix(signed_in_page, live_server):
    page: Page = signed_in_page
    page.set_viewport_size({"width": 1280, "height": 900})
    bad = {
        "format": "statecraft.app",
        "version": 1,
        "app": {
            "name": "Bad names",
            "variables": [
                {"name": "bad name", "type": "text"},
                {"name": "1st", "type": "text"},
                {"name": "count", "type": "number", "default": "ten"},
            ],
            "tools": [{"name": "Lookup", "kind": "pyhton"}],
        },
    }
    page.goto(f"{live_server.url}/apps/import")
    page.set_input_files(
        "input[type=file]",
        {"name": "bad.json", "mimeType": "application/json", "buffer": json.dumps(bad).encode()},
    )
    page.get_by_role("button", name="Import", exact=True).click()
    table = page.locator("table")
    expect(table).to_contain_text("for example 'bad_name'")
    expect(table).to_contain_text("for example '_1st'")
    expect(table).not_to_contain_text("[A-Za-z_]")
    # Beside the shape errors, the problems of the rest, in the same list.
    expect(table).to_contain_text("did you mean 'python'?")
    expect(table).to_contain_text("'ten' is not a number")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "defects7-import-names.png"), full_page=True)


# ------------ 7. the export report lists the instructions' errors


def test_export_report_lists_instruction_errors(signed_in_page, live_server, shop_app):
    from agents import services

    root = _root(shop_app)
    services.agent_save_instructions(agent=root, instructions=root.instructions + " {typo_var}")
    page: Page = signed_in_page
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{live_server.url}/apps/{shop_app.pk}/export")
    report = page.locator("#export-report")
    expect(report).to_contain_text("no variable typo_var is declared")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "defects7-export-report.png"), full_page=True)


# ------------ 7. the usage popover lists an agent once


def test_usage_popover_lists_the_agent_once(open_designer, shop_app):
    page: Page = open_designer(shop_app)
    page.set_viewport_size({"width": 1280, "height": 900})
    customer = shop_app.variables.get(name="customer")
    page.locator(f'a.usage-link[href$="/variables/{customer.pk}/usage"]').click()
    usage = page.locator(f"#usage-{customer.pk} dd").first
    expect(usage).to_have_text("Shopping Assistant (2\u00d7)")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "defects7-usage.png"))


# ------------ 7. History shows what changed, field by field


def test_history_change_is_a_readable_table_with_no_axe_violations(
    signed_in_page: Page, live_server, shop_app
):
    from agents import services
    from tests.browser.conftest import axe_violations

    root = _root(shop_app)
    services.agent_save_instructions(agent=root, instructions="Brand new.", actor=shop_app.owner)
    page = signed_in_page
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{live_server.url}/apps/{shop_app.pk}/history")
    page.locator(".history-change summary").first.click()
    table = page.locator(".history-table").first
    expect(table.locator(".dl-added").first).to_contain_text("Brand new.")  # a line diff (issue 33)
    assert axe_violations(page) == []
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "defects7-history.png"))


# ------------ 7. a double-click that replaces a request in flight logs no htmx:sendAbort


def test_a_double_click_logs_no_send_abort(open_designer, shop_app):
    page: Page = open_designer(shop_app)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    mocks = page.locator("#conversation-controls").get_by_label("mocks")
    expect(mocks).to_be_visible()
    with page.expect_response(re.compile(r"/simulate")) as answer:
        mocks.dblclick()  # two changes: the second replaces the first request
    assert answer.value.ok
    expect(page.locator("#conversation-controls").get_by_label("mocks")).not_to_be_checked()
    page.evaluate("() => new Promise((done) => setTimeout(done, 0))")  # let the console drain
    assert not [e for e in errors if "sendAbort" in e]
