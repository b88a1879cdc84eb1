"""Browser tests of issue 33 ("What a designer meets in the first hour"): each measures, in
Chromium and in English, French and German, what a new designer saw go wrong: bounding
boxes where the defect is visual (a badge over text, a name broken mid-word), the text
where it is a word. Each fails on the code before its fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

pytestmark = [
    pytest.mark.browser,
    pytest.mark.xdist_group("browser-first-hour"),
    pytest.mark.django_db(transaction=True),
]

ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"
LANGUAGES = ["en", "fr", "de"]

# Every badge kind a scenario run shows offline: passed, failed, needs a model.
BADGES_SCRIPT = """user: I'd like the blue running shoes, two pairs please.
tool: AddToCart {"product_id": "shoe-blue-42", "quantity": 2}
expect response: AddToCart {"quantity": 2, "cart_total": 39}
expect state [Check_Wrong_Total]: {"cart_total": 40}
expect agent: Done — two pairs are in your cart.
user: And one more pair.
expect call: AddToCart
agent: Three pairs now.
"""


@pytest.fixture
def shop_app(user):
    from agents.demo import load_demo

    return next(a for a in load_demo(user) if a.name == "Shopping assistant")


def _in_language(page: Page, live_server, language: str, width: int, height: int = 2000) -> Page:
    """The page reads `language` (the header switcher's cookie) at `width` px."""
    from django.conf import settings

    page.context.add_cookies(
        [{"name": settings.LANGUAGE_COOKIE_NAME, "value": language, "url": live_server.url}]
    )
    page.set_viewport_size({"width": width, "height": height})
    return page


def _shot(page: Page, name: str, selector: str | None = None) -> None:
    """A screenshot to look at (tests/artifacts/first-hour-*.png): the page, or one part."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = str(ARTIFACTS / f"first-hour-{name}.png")
    if selector:
        page.locator(selector).screenshot(path=path)
    else:
        page.screenshot(path=path, full_page=True)


def _overlap(a: dict, b: dict) -> float:
    """The area two bounding boxes share (0 when they do not meet)."""
    w = min(a["x"] + a["width"], b["x"] + b["width"]) - max(a["x"], b["x"])
    h = min(a["y"] + a["height"], b["y"] + b["height"]) - max(a["y"], b["y"])
    return max(w, 0) * max(h, 0)


# ------------ 1. result badges never overlap the expectation text


@pytest.mark.parametrize("width", [1280, 1920])
@pytest.mark.parametrize("language", LANGUAGES)
def test_expectation_badges_never_overlap_their_text(
    session_page, live_server, shop_app, language, width
):
    from agents import services

    root = shop_app.agents.get(is_root=True)
    services.scenario_save(
        agent=root,
        scenario=root.scenarios.get(),
        name="Buy a product",
        steps_script=BADGES_SCRIPT,
    )
    page = _in_language(session_page, live_server, language, width)
    page.goto(f"{live_server.url}/apps/{shop_app.pk}/")
    panel = page.locator("#conversation-panel")
    expect(panel.locator(".event-expect")).to_have_count(4)
    expect(panel.locator(".event-expect .badge-needs_model")).to_have_count(2)
    _shot(page, f"badges-{language}-{width}", "#conversation-panel")
    rows = page.evaluate(
        """() => [...document.querySelectorAll('#conversation-panel .event-expect')].map((li) => {
            const box = (el) => { const r = el.getBoundingClientRect();
                return {x: r.x, y: r.y, width: r.width, height: r.height}; };
            return {badge: box(li.querySelector('.badge')), who: box(li.querySelector('.who')),
                    line: box(li.querySelector('.msg code')),
                    message: box(li.querySelector('.expect-message')),
                    text: li.querySelector('.badge').textContent};
        })"""
    )
    for row in rows:
        assert _overlap(row["badge"], row["line"]) == 0, row
        assert _overlap(row["badge"], row["message"]) == 0, row
        # The badge stays inside its own column.
        assert row["badge"]["x"] + row["badge"]["width"] <= row["line"]["x"], row
    # The summary's badges: each on one line (none broken inside), all on the summary's lines.
    badges = page.evaluate(
        """() => [...document.querySelectorAll('#golden-summary .badge')].map((b) => {
            const r = b.getBoundingClientRect(); return {height: r.height, text: b.textContent,
                lines: b.getClientRects().length}; })"""
    )
    for badge in badges:
        assert badge["lines"] == 1, badge


# ------------ 4. values in the reader's form in the sidebar and the state table

READER_FORM = {
    "en": {"vip": "Yes", "late": "No", "rate": "1.5"},
    "fr": {"vip": "Oui", "late": "Non", "rate": "1,5"},
    "de": {"vip": "Ja", "late": "Nein", "rate": "1,5"},
}


@pytest.fixture
def values_app(user):
    """An app with a Yes/No of each value, a decimal Number and JSON values around them."""
    from agents import services

    app = services.app_create(owner=user, name="Values")
    services.variable_create(app=app, name="vip", type="boolean", default=True)
    services.variable_create(app=app, name="late", type="boolean", default=False)
    services.variable_create(app=app, name="rate", type="number", default=1.5)
    services.variable_create(
        app=app, name="rates", type="list", item_type="number", default=[1.5, 2]
    )
    root = app.agents.get(is_root=True)
    services.agent_update(agent=root, instructions="VIP: {{vip}}, rate {{rate}}.")
    services.scenario_save(agent=root, name="Hello", steps_script="user: Hi\nagent: Hello.\n")
    return app


@pytest.mark.parametrize("language", LANGUAGES)
def test_yes_no_and_decimals_read_in_the_readers_form(
    session_page, live_server, values_app, language
):
    page = _in_language(session_page, live_server, language, 1280)
    page.goto(f"{live_server.url}/apps/{values_app.pk}/")
    words = READER_FORM[language]
    sidebar = page.locator("#variable-list")
    for name, shown in words.items():
        item = sidebar.locator(".item", has=page.locator(".item-name", has_text=name)).first
        expect(item.locator("code.default")).to_have_text(shown)
    # A list is JSON: its numbers keep the point, in every language.
    rates = sidebar.locator(".item", has=page.locator(".item-name", has_text="rates"))
    expect(rates.locator("code.default")).to_have_text("[1.5, 2]")
    table = page.locator("#conversation-panel details.state[open] table.state-table").first
    expect(table).to_be_visible()
    _shot(page, f"values-{language}", "#conversation-panel")
    cells = page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll(
            '#conversation-panel details.state[open] table.state-table:not(.builtins) tr')]
            .map((tr) => [tr.querySelector('th').textContent,
                          tr.querySelector('td').textContent.trim()]))"""
    )
    for name, shown in words.items():
        assert cells[name] == shown, (name, cells)
    assert cells["rates"] == "[1.5, 2]"


# ------------ 7. History a person can read, with the designer's header


def _topbar(page: Page) -> dict:
    return page.evaluate(
        """() => { const bar = document.querySelector('header.topbar, .topbar');
            const r = bar.getBoundingClientRect();
            const right = Math.max(...[...bar.querySelectorAll('a, button, span')]
                .map((e) => e.getBoundingClientRect().right));
            return {height: r.height, right: right, width: document.documentElement.clientWidth,
                    links: [...bar.querySelectorAll('a')].map((a) => a.getAttribute('href'))}; }"""
    )


@pytest.mark.parametrize("language", LANGUAGES)
def test_history_shows_a_line_diff_no_empty_table_and_the_designers_header(
    session_page, live_server, shop_app, user, language
):
    from agents import services

    root = shop_app.agents.get(is_root=True)
    old = root.instructions
    new = old.replace("Please follow these business rules:", "Follow these rules, always:")
    assert new != old
    services.agent_update(agent=root, instructions=new, actor=user)
    services.app_update(app=shop_app, name=shop_app.name, actor=user)  # saves, changes nothing
    page = _in_language(session_page, live_server, language, 1280)
    page.goto(f"{live_server.url}/apps/{shop_app.pk}/")
    designer_bar = _topbar(page)
    page.goto(f"{live_server.url}/apps/{shop_app.pk}/history")
    bar = _topbar(page)
    # The designer's header: the same height, inside the page, the app's pages linked.
    assert bar["height"] == designer_bar["height"], (bar, designer_bar)
    assert bar["right"] <= bar["width"], bar
    for path in ("/", "/versions/", "/export", "/history", "/share"):
        assert f"/apps/{shop_app.pk}{path}" in bar["links"], (path, bar["links"])
    events = page.locator(".history-event")
    edit = events.nth(1)  # newest first: the app.update, then the instruction edit
    expect(edit.locator(".history-head code")).to_have_text("Shopping Assistant")
    edit.locator("summary").click()
    diff = edit.locator(".line-diff")
    expect(diff).to_be_visible()
    expect(diff.locator(".dl-removed")).to_contain_text("Please follow these business rules:")
    expect(diff.locator(".dl-added")).to_contain_text("Follow these rules, always:")
    # Not both whole texts side by side: the unchanged lines are not each shown twice.
    assert edit.locator("del, ins").count() == 0
    box = diff.bounding_box()
    card = page.locator("section.card").first.bounding_box()
    table = edit.locator("table").bounding_box()
    assert box and card and table
    assert box["x"] + box["width"] <= card["x"] + card["width"] + 0.5
    assert box["width"] >= table["width"] * 0.6, (box, table)  # the before and after columns
    # The app.update entry that changed nothing opens no empty table.
    update = events.nth(0)
    expect(update.locator("details")).to_have_count(0)
    expect(update.locator(".history-same")).to_be_visible()
    _shot(page, f"history-{language}")
    # The crumb leads back to the app.
    page.locator("#crumb-app").click()
    expect(page.locator("#compiled")).to_be_visible()


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_page_of_an_app_has_the_designers_header(
    session_page, live_server, shop_app, user, language
):

    from agents.services.versions import version_create

    version_create(app=shop_app, name="First", user=user)
    page = _in_language(session_page, live_server, language, 1280, 900)
    page.goto(f"{live_server.url}/apps/{shop_app.pk}/")
    designer_bar = _topbar(page)
    for path in ("versions/", "versions/diff", "export", "history", "share"):
        page.goto(f"{live_server.url}/apps/{shop_app.pk}/{path}")
        bar = _topbar(page)
        assert bar["height"] == designer_bar["height"], (path, bar, designer_bar)
        assert bar["right"] <= bar["width"], (path, bar)
        assert f"/apps/{shop_app.pk}/" in bar["links"], (path, bar["links"])
        assert f"/apps/{shop_app.pk}/history" in bar["links"], (path, bar["links"])
        _shot(page, f"header-{path.strip('/').replace('/', '-')}-{language}")


# ------------ 12. Make default shows while the picked model is not the default


@pytest.mark.parametrize("language", LANGUAGES)
def test_make_default_follows_the_model_picker(
    session_page, live_server, shop_app, monkeypatch, language
):
    import json

    monkeypatch.setenv(
        "STATECRAFT_MODELS",
        json.dumps({"mini": {"kind": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1"}}),
    )
    page = _in_language(session_page, live_server, language, 1280)
    page.goto(f"{live_server.url}/apps/{shop_app.pk}/")
    picker = page.locator("#model-picker")
    button = page.locator("#make-default-model")
    expect(picker).to_be_visible()
    expect(button).to_be_hidden()  # Scripted, and the app has no default
    expect(page.locator("#judge-picker")).to_have_count(0)  # no rubric in this app
    picker.select_option("mini")
    expect(button).to_be_visible()
    _shot(page, f"pickers-{language}", "#conversation-controls")
    # The controls stay inside the pane at 1280 px.
    pane = page.locator("#conversation-panel").bounding_box()
    box = button.bounding_box()
    assert pane and box and box["x"] + box["width"] <= pane["x"] + pane["width"] + 1
    picker.select_option("")
    expect(button).to_be_hidden()


# ------------ 11. the state table breaks names at their dots and underscores, not mid-word

# Where each line of a state table's name begins: a character whose top differs from the
# one before starts a new line.
LINE_BREAKS_JS = """() => [...document.querySelectorAll(
        '#conversation-panel details.state[open] .state-table th')].map((th) => {
    const text = th.textContent;
    const walker = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
    const tops = [];
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        for (let i = 0; i < node.length; i++) {
            const range = document.createRange();
            range.setStart(node, i); range.setEnd(node, i + 1);
            const rect = range.getClientRects()[0];
            tops.push(rect ? Math.round(rect.top) : null);
        }
    }
    const breaks = [];
    for (let i = 1; i < tops.length; i++) if (tops[i] !== null && tops[i] > tops[i - 1]) breaks.push(i);
    return {text, breaks};
})"""


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_state_table_breaks_names_only_at_dots_and_underscores(
    session_page, live_server, shop_app, language
):
    page = _in_language(session_page, live_server, language, 1280)
    page.goto(f"{live_server.url}/apps/{shop_app.pk}/")
    table = page.locator("#conversation-panel details.state[open] .state-table").first
    expect(table).to_be_visible()
    _shot(page, f"state-table-{language}", "#conversation-panel details.state[open]")
    names = page.evaluate(LINE_BREAKS_JS)
    assert any(n["breaks"] for n in names), names  # at 1280 the long names do wrap
    for name in names:
        text = name["text"]
        for at in name["breaks"]:
            assert text[at] == "." or text[at - 1] == "_", (text, text[:at], text[at:])


# ------------ 11. the right pane's sections fold, remembered for the user


@pytest.mark.parametrize("language", LANGUAGES)
def test_folding_the_right_panes_sections_brings_the_conversation_up_and_is_remembered(
    session_page, live_server, shop_app, user, language
):
    from agents.models import UserSettings

    page = _in_language(session_page, live_server, language, 1280, 800)
    page.goto(f"{live_server.url}/apps/{shop_app.pk}/")
    title = page.locator("#conversation-title")
    expect(page.locator("#conversation-panel .timeline")).to_be_visible()
    before = title.bounding_box()
    assert before
    for section in ("preview", "problems", "goldens"):
        with page.expect_response(lambda r: r.url.endswith("/accounts/collapsed")) as saved:
            page.locator(f'.pane-fold[data-fold="{section}"]').click()
        assert saved.value.status == 204
    expect(page.locator("#compiled")).to_be_hidden()
    expect(page.locator("#diagnostics")).to_be_hidden()
    after = title.bounding_box()
    # The conversation moves up by the folded sections, its first turn into the window.
    assert after and after["y"] < before["y"] - 150, (before, after)
    turn = page.locator("#conversation-panel .turn").first.bounding_box()
    assert turn and turn["y"] + 40 <= 800, turn
    assert UserSettings.objects.get(user=user).collapsed == ["preview", "problems", "goldens"]
    _shot(page, f"folded-{language}")
    # Remembered: the next visit opens them folded, the buttons say so.
    page.reload()
    expect(page.locator("#conversation-panel .timeline")).to_be_visible()
    expect(page.locator("#compiled")).to_be_hidden()
    expect(page.locator('.pane-fold[data-fold="goldens"]')).to_have_attribute(
        "aria-expanded", "false"
    )
    expect(page.locator('.pane-fold[data-fold="conversation"]')).to_have_attribute(
        "aria-expanded", "true"
    )
    box = title.bounding_box()
    assert box and abs(box["y"] - after["y"]) < 2, (box, after)
    # Unfolding one brings it back.
    page.locator('.pane-fold[data-fold="problems"]').click()
    expect(page.locator("#diagnostics")).to_be_visible()
