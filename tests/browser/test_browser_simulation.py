"""The banking scenario on the designer page, as a designer sees it (real sandbox, real browser)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]


@pytest.fixture
def bank_app(user):
    from agents.demo import load_demo

    return next(a for a in load_demo(user) if a.name == "Bank demo")


def test_banking_scenario_shows_state_update_new_state_and_turn_index(open_designer, bank_app):
    page: Page = open_designer(bank_app)
    conversation = page.locator("#conversation-panel")
    first_turn = conversation.locator(".turn").first
    expect(first_turn.locator(".turn-index")).to_have_text("turn 0")
    expect(first_turn.locator(".event-user")).to_contain_text("balance of my current account")
    update = first_turn.locator(".event-state_update")
    expect(update.locator(".msg")).to_have_text(
        "<state_update>current_account_balance: 1250</state_update>"
    )
    first_turn.locator("details.state summary").click()
    changed = first_turn.locator(".state-table tr.changed")
    expect(changed).to_contain_text("current_account_balance")
    expect(changed).to_contain_text("1250")
    second_turn = conversation.locator(".turn").nth(1)
    expect(second_turn.locator(".turn-index")).to_have_text("turn 1")
    expect(second_turn.locator(".state-table.builtins")).to_contain_text("$context.turn_index")


def test_editing_instructions_resimulates_and_a_failing_tool_is_a_step_error(
    open_designer, bank_app
):
    from agents import services

    page: Page = open_designer(bank_app)
    services.tool_update(
        tool=bank_app.tools.get(),
        python_code="def LookupBalance(account_id=''):\n    return 1 / 0\n",
    )
    editor = page.locator("#instructions-editor")
    editor.focus()
    page.keyboard.press("Control+End")
    editor.press_sequentially(" ok")
    error = page.locator("#conversation-panel .event-error").first
    expect(error).to_contain_text("ZeroDivisionError")
    expect(page.locator("#conversation-panel .turn")).to_have_count(2)


def test_a_key_code_keeps_outside_the_variables_is_a_grey_note_not_a_red_error(
    open_designer, bank_app, tmp_path
):
    """Issue 18.6: CX code keeps private keys in the session state (`_pending_transfer`);
    the timeline says so in a note row, never an error row."""
    from agents import services

    services.tool_update(
        tool=bank_app.tools.get(),
        python_code=(
            "def LookupBalance(account_id=''):\n"
            "    context.state['_last_lookup'] = account_id\n"
            "    context.state['current_account_balance'] = 1250\n"
            "    return {'balance': 1250}\n"
        ),
    )
    page: Page = open_designer(bank_app)
    note = page.locator("#conversation-panel .event-note").first
    expect(note).to_contain_text("keeps _last_lookup in the session state")
    expect(page.locator("#conversation-panel .event-error")).to_have_count(0)
    page.screenshot(path=str(tmp_path / "note.png"), full_page=True)


def test_an_open_scenario_editor_survives_a_resimulation_and_closes_on_save(
    open_designer, bank_app
):
    """Typing in the instructions re-simulates the conversation (its panel is swapped):
    the scenario the designer is editing in that panel keeps its unsaved text. Its save
    shows the fresh panel, editor closed."""
    page: Page = open_designer(bank_app)
    page.evaluate(
        "document.body.addEventListener('htmx:afterSettle', (e) => {"
        " if (e.detail.target && e.detail.target.id === 'conversation-panel')"
        " document.body.dataset.resimulated = 'yes' })"
    )
    expect(page.locator("#conversation-panel .turn").first).to_be_visible()
    expect(page.locator(".htmx-request")).to_have_count(0)
    page.locator("#conversation-panel").get_by_role("link", name="Edit").click()
    name = page.locator("#scenario-editor form input[name=name]")
    name.fill("Balance, edited")
    page.evaluate("delete document.body.dataset.resimulated")
    editor = page.locator("#instructions-editor")
    editor.focus()
    page.keyboard.press("Control+End")
    editor.press_sequentially(" ok")
    # The conversation was simulated again (its panel swapped):
    expect(page.locator("body[data-resimulated=yes]")).to_be_attached()
    expect(page.locator("#conversation-panel .turn").first).to_be_visible()
    expect(name).to_have_value("Balance, edited")
    page.locator("#scenario-editor form").get_by_role("button", name="Save").click()
    expect(page.locator("#scenario-editor form")).to_have_count(0)
    expect(page.locator("#conversation-panel select[name=scenario]")).to_contain_text(
        "Balance, edited"
    )


LONG_DIRECTIVE = "\n<system_directive>Ask which account. " + "Confirm before you act. " * 60


def test_the_timeline_shows_the_request_a_before_model_callback_changed(
    open_designer, bank_app, monkeypatch
):
    """Issue 18: at each model call, what the before_model callback appended to the system
    instruction (a one-line preview, the rest opened on demand) and the tools it hid; the
    scripted call of the hidden tool is a note at its step (SC422). At 1280 px the row stays
    inside its pane; the judge picker sits beside the model picker (issue 21)."""
    import json

    from agents import services

    monkeypatch.setenv(
        "STATECRAFT_MODELS",
        json.dumps(
            {
                "mini": {
                    "kind": "openai",
                    "model": "gpt-4o-mini",
                    "base_url": "http://127.0.0.1:9/v1",
                }
            }
        ),
    )
    agent = bank_app.agents.get()
    services.callback_create(
        agent=agent,
        kind="before_model",
        code=(
            f"DIRECTIVE = {LONG_DIRECTIVE!r}\n\n"
            "def before_model_callback(callback_context, llm_request):\n"
            '    llm_request.config.hide_tool("LookupBalance")\n'
            "    si = llm_request.config.system_instruction\n"
            "    llm_request.config.system_instruction = si + DIRECTIVE\n"
            "    return None\n"
        ),
    )
    page: Page = open_designer(bank_app)
    page.set_viewport_size({"width": 1280, "height": 900})
    first_turn = page.locator("#conversation-panel .turn").first
    request = first_turn.locator(".event-request").first
    expect(request).to_contain_text("callback appended to the system instruction:")
    expect(request).to_contain_text("hidden from the model for this call: LookupBalance")
    detail = request.locator(".request-detail")
    expect(detail).to_be_hidden()
    request.locator("summary").click()
    expect(detail).to_be_visible()
    expect(detail).to_contain_text("Confirm before you act.")
    note = first_turn.locator(".event-note").first
    expect(note).to_contain_text("the scripted call of LookupBalance runs")
    # The rows stay in the pane (the detail scrolls, it never widens the timeline).
    pane = first_turn.bounding_box()
    for row in (request, note, detail):
        box = row.bounding_box()
        assert box["x"] + box["width"] <= pane["x"] + pane["width"] + 1
    assert detail.bounding_box()["height"] < 250
    # No rubric to judge in this app: no judge picker (issue 33, item 12; beside the model
    # picker where rubrics exist: tests/test_live_judge.py).
    expect(page.locator("#model-picker")).to_be_visible()
    expect(page.locator("#judge-picker")).to_have_count(0)
