"""The designer in French, then German: switch with the header's buttons, crawl the pages a
designer and an operator use, and find no English left outside user data.

The English left is found with the catalogs themselves: a word of an English message
(msgid) that no translation of that language uses is English only, so it must not appear on
a French or German page; a short list of English function words catches text that was never
marked at all. User data (names, descriptions, instructions, values, code) is taken out of
the page's text first, from the database, and code-like regions (code, pre, editors) are not
read. The same crawl leaves 1280-px screenshots in docs/ (README, "Languages").
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from agents.core.render import render_value
from tests.po import parse

pytestmark = [
    pytest.mark.browser,
    pytest.mark.xdist_group("browser-languages"),
    pytest.mark.django_db(transaction=True),
]

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
WORD = re.compile(r"[A-Za-zÀ-ÿ]{3,}")
# English words that are no French or German word; text never marked for translation shows them.
FUNCTION_WORDS = {
    "the", "and", "with", "for", "this", "that", "from", "are", "has", "have", "your", "you",
    "yet", "none", "add", "edit", "save", "delete", "which", "what", "who", "into", "only",
    "each", "every", "there", "their", "been", "were", "would", "could", "should", "does",
    "its", "our", "here", "than", "then", "them", "they", "these", "those", "open", "show",
    # Common words of a user interface that are no French or German word (issue 33: any
    # English word left, not only the catalog's).
    "run", "runs", "cancel", "close", "hide", "error", "errors", "warning", "warnings",
    "passed", "failed", "loading", "back", "next", "previous", "yes", "more", "less", "new",
    "copy", "download", "upload", "search", "settings", "history", "view", "when", "where",
    "how", "why", "not", "can", "may", "must", "about", "before", "because", "between",
    "without", "connection", "needs", "model", "call", "calls", "result", "results", "step",
    "steps", "turn", "turns", "reply", "request", "answer", "unknown", "empty",
}  # fmt: skip
# Words both English and a word (or a name) of the product in that language.
SHARED = {
    "fr": {"statecraft", "python", "json", "yaml", "openapi", "mcp", "zip", "cx", "studio", "adk",
           "api", "rest", "url", "http", "token", "golden", "goldens", "mock", "mocks", "snake",
           "case", "draft", "agent", "agents", "description", "conversation", "instructions",
           "variable", "variables", "version", "versions", "simulation", "session", "action",
           "actions", "application", "type", "types", "prompt", "message", "note", "options",
           "format", "source", "document", "modification", "date", "condition", "conditions",
           "absent", "export", "import", "client", "admin", "django", "info", "utc", "sandbox",
           "expect", "user", "tool", "callback", "state", "event", "now", "web", "text", "voice",
           "telephony", "production", "staging"},
    "de": {"statecraft", "python", "json", "yaml", "openapi", "mcp", "zip", "cx", "studio", "adk",
           "api", "rest", "url", "http", "token", "tokens", "golden", "goldens", "mock", "mocks",
           "snake", "case", "draft", "agent", "tool", "tools", "callback", "callbacks", "name",
           "app", "apps", "version", "status", "info", "export", "import", "label", "labels",
           "text", "liste", "schema", "schemas", "prompt", "header", "sandbox", "admin", "django",
           "utc", "expect", "user", "state", "event", "now", "web", "voice", "telephony",
           "production", "staging", "root", "details", "filter", "code", "modell", "designer",
           "design"},
}  # fmt: skip

CRAWL_JS = """() => {
  const skip = "code, pre, textarea, script, style, .cm-editor, .cm-content, #compiled, "
    + ".language-switcher, .diag-code, .mono, kbd, [data-user], .chip, svg, #announcer";
  const out = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const el = node.parentElement;
    if (!el || el.closest(skip)) continue;
    const style = getComputedStyle(el);
    if (style.display === "none" || style.visibility === "hidden") continue;
    if (node.textContent.trim()) out.push(node.textContent.trim());
  }
  for (const el of document.querySelectorAll("[title], [aria-label], [placeholder]")) {
    if (el.closest(skip)) continue;
    for (const a of ["title", "aria-label", "placeholder"]) {
      const v = el.getAttribute(a);
      if (v && v.trim()) out.push(v.trim());
    }
  }
  out.push(document.title);
  return out;
}"""


def _english_words(language: str) -> set[str]:
    """Words of the English messages that no translation into `language` uses."""
    english: set[str] = set()
    translated: set[str] = set()
    for name in ("django", "djangojs"):
        path = ROOT / "locale" / language / "LC_MESSAGES" / f"{name}.po"
        if not path.exists():
            continue
        for entry in parse(path.read_text(encoding="utf-8"))[1:]:
            msgids = [entry["msgid"], entry.get("msgid_plural", "")]
            text = re.sub(r"%\(\w+\)s|<[^>]+>|`[^`]*`|\{[^}]*\}", " ", " ".join(msgids))
            english |= {w.lower() for w in WORD.findall(text)}
            for form in entry["msgstr"].values():
                translated |= {w.lower() for w in WORD.findall(form)}
    return english - translated - SHARED[language]


def _user_data(user) -> list[str]:
    """Every text a designer typed or imported: names, descriptions, instructions, values."""
    from agents.models import AgentApp, AppLabel, AppVersion, Scenario

    texts: set[str] = {user.get_username(), "operator"}
    for app in AgentApp.objects.all():
        texts |= {app.name, app.description}
        for collection in (app.variables.all(), app.schemas.all(), app.tools.all()):
            for item in collection:
                texts |= {item.name, getattr(item, "description", "")}
        for variable in app.variables.all():
            if variable.default is not None:
                texts |= {render_value(variable.default), json.dumps(variable.default)}
        for agent in app.agents.all():
            texts |= {agent.display_name, agent.description, *agent.instructions.splitlines()}
    from agents import services

    for scenario in Scenario.objects.all():
        texts.add(scenario.name)
        texts |= {step.text for step in scenario.steps.all()}
        for line in services.scenario_script(scenario).splitlines():  # expectations' values
            texts.add(line.split(":", 1)[-1].strip())
    texts |= {v.name for v in AppVersion.objects.all()} | {v.note for v in AppVersion.objects.all()}
    texts |= {label.name for label in AppLabel.objects.all()}
    return sorted((t for t in texts if t and t.strip()), key=len, reverse=True)


# Names and the script's own words are code, not English: `$context.turn_index`, `.turn_`
# (a name broken at its dots and underscores), `before_model #0`, `expect call:`.
IDENTIFIER = re.compile(
    r"[$.]?\w*(?:[._]\w*)+|\b(?:expect \w+|user|agent|tool|mock|variables|event):"
)


def _english_left(page: Page, words: set[str], user_data: list[str]) -> list[str]:
    found = []
    for text in page.evaluate(CRAWL_JS):
        for data in user_data:
            text = text.replace(data, " ")
        text = IDENTIFIER.sub(" ", text)
        hits = {w for w in WORD.findall(text) if w.lower() in words or w in FUNCTION_WORDS}
        if hits:
            found.append(f"{sorted(hits)} in {text[:120]!r}")
    return found


@pytest.fixture
def world(user, staff):
    """The demo apps, one of them imported from a CX ZIP (an import report), a version with
    a label, and a history; ada owns them, the operator sees them in the admin."""
    from agents import services
    from agents.core.cx.app import to_cx_files, zip_bytes
    from agents.demo import load_demo
    from agents.models import Job
    from agents.services import exchange, versions

    shop, bank = load_demo(user)
    spec, scenarios = exchange.app_export_specs(bank)
    files, _notes = to_cx_files(spec, scenarios)
    imported, _kind, _diagnostics = exchange.app_import_file(
        owner=user, data=zip_bytes(files), name="Bank from CX", filename="bank.zip"
    )
    # A callback in the history (once "before_model #0 of root_agent"), before the version.
    services.callback_create(
        agent=shop.agents.get(is_root=True),
        kind="before_model",
        code="def before_model_callback(callback_context, llm_request):\n    return None\n",
        actor=user,
    )
    version = versions.version_create(app=shop, user=user, name="First")
    versions.label_set(app=shop, version=version, name="production", user=user)
    Job.objects.create(kind="evaluate_app", owner=user, app=shop, status="succeeded")
    services.variable_update(
        variable=shop.variables.get(name="business_rules"),
        actor=user,
        description="Rules changed after the first version.",
    )
    # A live run recorded (the admin's live run page), and a scenario run with every badge
    # kind (passed, failed, needs a model) for the docs' screenshots.
    from agents.models import LiveRun

    LiveRun.objects.create(
        app=bank,
        scenario=bank.agents.get().scenarios.first(),
        scenario_name="Balance question",
        agent_name="banking_agent",
        model_name="gpt-4o-mini",
        mode="live",
        status="passed",
        model_calls=2,
        tokens_in=24,
        tokens_out=10,
        cost=0.0000096,
        ran_by=user,
        ran_by_name="ada",
        evaluation=[{"step": 1, "kind": "call", "status": "passed", "actual": None}],
        calls=[{"answer": {"parts": [{"text": "Your balance is 1,250 EUR."}], "error": ""}}],
    )
    root = shop.agents.get(is_root=True)
    services.scenario_save(
        agent=root, scenario=root.scenarios.get(), name="Buy a product", steps_script=BADGES
    )
    return {"shop": shop, "imported": imported, "bank": bank}


BADGES = """user: I'd like the blue running shoes, two pairs please.
tool: AddToCart {"product_id": "shoe-blue-42", "quantity": 2}
expect response: AddToCart {"quantity": 2, "cart_total": 39}
expect state [Check_Wrong_Total]: {"cart_total": 40}
expect agent: Done — two pairs are in your cart.
user: And one more pair.
expect call: AddToCart
agent: Three pairs now.
"""
SHOTS = DOCS / "screenshots"


def _shot(page: Page, name: str, language: str) -> None:
    """A 1280 x 800 picture of the page for the docs (docs/screenshots/NAME-LANGUAGE.png)."""
    SHOTS.mkdir(exist_ok=True)
    page.set_viewport_size({"width": 1280, "height": 800})
    page.screenshot(path=str(SHOTS / f"{name}-{language}.png"))
    page.set_viewport_size({"width": 1280, "height": 900})


def _switch(page: Page, code: str) -> None:
    page.locator(f".language-switcher button[value='{code}']").click()
    expect(page.locator("html")).to_have_attribute("lang", code)


def _settle_designer(page: Page) -> None:
    expect(page.locator("#compiled .cm-content")).to_be_visible()
    expect(page.locator("#conversation-panel .timeline, #conversation-panel .empty")).to_have_count(
        1
    )


@pytest.mark.parametrize("language", ["en", "fr", "de"])
def test_the_designer_admin_and_their_pages_read_entirely_in_the_language(
    page: Page, live_server, user, staff, world, language
):
    """French and German: no English word left; English: the same crawl takes the docs'
    screenshots (designer, History, the admin's live run) in the three languages."""
    from django.contrib.auth import get_user_model

    from agents.models import LiveRun

    get_user_model().objects.filter(pk=staff.pk).update(username="operator")
    words = _english_words(language) if language != "en" else set()
    assert language == "en" or {"save", "delete", "history"} <= words  # it can see English
    shop, imported = world["shop"], world["imported"]
    base = live_server.url
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{base}/accounts/login/")
    _switch(page, language)  # before signing in: the cookie, then the user's choice
    page.locator("input[name=username]").fill("ada")
    page.locator("input[name=password]").fill("pw-ada-123456")
    page.locator("form.stack button[type=submit]").click()
    _switch(page, language)  # signed in: remembered for ada

    pages = {
        "apps": f"{base}/",
        "designer": f"{base}/apps/{shop.pk}/",
        "import report": f"{base}/apps/{imported.pk}/import-report",
        "import": f"{base}/apps/import",
        "export": f"{base}/apps/{shop.pk}/export",
        "versions": f"{base}/apps/{shop.pk}/versions/",
        "diff": f"{base}/apps/{shop.pk}/versions/diff?from=1&to=working",
        "history": f"{base}/apps/{shop.pk}/history",
        "share": f"{base}/apps/{shop.pk}/share",
        "api token": f"{base}/accounts/api-token",
        "evaluations": f"{base}/apps/{shop.pk}/evaluations",
        "delete": f"{base}/apps/{shop.pk}/delete",
    }
    left: dict[str, list[str]] = {}
    user_data = _user_data(user)
    english = language == "en"
    for name, url in pages.items():
        page.goto(url)
        if name == "designer":
            _settle_designer(page)
            if not english:
                page.screenshot(path=str(DOCS / f"designer-{language}-1280.png"))
            panel = page.locator("#conversation-panel")
            expect(panel.locator(".event-expect .badge-needs_model").first).to_be_visible()
            panel.scroll_into_view_if_needed()
            _shot(page, "designer-badges", language)
        if name == "versions" and not english:
            page.screenshot(path=str(DOCS / f"versions-{language}-1280.png"))
        if name == "history":
            _shot(page, "history", language)
        if not english and (found := _english_left(page, words, user_data)):
            left[name] = found

    # The admin, as the operator (their own choice of language, then Django's admin).
    page.context.clear_cookies()
    page.goto(f"{base}/admin/login/")
    _switch(page, language)
    page.locator("input[name=username]").fill("operator")
    page.locator("input[name=password]").fill("pw-op-123456")
    page.locator("input[type=submit]").click()
    variable = shop.variables.get(name="business_rules")
    for name, url in {
        "admin": f"{base}/admin/",
        "admin variables": f"{base}/admin/agents/variable/",
        "admin variable": f"{base}/admin/agents/variable/{variable.pk}/change/",
        "admin history": f"{base}/admin/agents/auditevent/",
        "admin versions": f"{base}/admin/agents/appversion/",
        "admin jobs": f"{base}/admin/agents/job/",
        "admin endpoint": f"{base}/admin/agents/modelendpoint/add/",
        "admin live runs": f"{base}/admin/agents/liverun/",
        "admin live run": f"{base}/admin/agents/liverun/{LiveRun.objects.get().pk}/change/",
        "admin results": f"{base}/admin/agents/scenarioresult/",
    }.items():
        page.goto(url)
        if name == "admin live run":  # its evaluation and calls, shown as JSON
            page.locator(".field-evaluation_shown").scroll_into_view_if_needed()
            page.evaluate("() => window.scrollBy(0, 200)")
            SHOTS.mkdir(exist_ok=True)
            page.set_viewport_size({"width": 1280, "height": 800})
            page.screenshot(path=str(SHOTS / f"admin-live-run-{language}.png"))
            page.set_viewport_size({"width": 1280, "height": 900})
        if not english and (found := _english_left(page, words, user_data)):
            left[name] = found
        if name == "admin history":
            # At 1280 px the object's name wraps in its column, never clipped.
            clipped = page.locator("td.field-object_shown").evaluate_all(
                "cells => cells.filter(c => c.scrollWidth > c.clientWidth).length"
            )
            assert clipped == 0
    assert not left, "\n".join(f"{k}: {v}" for k, vs in left.items() for v in vs)
