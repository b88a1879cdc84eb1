"""XSS and CSP in Chromium (issue #12): every page and fragment, a payload in every field a
user types, a dialog listener, no injected element, no CSP violation, and the page's own
script still running (the editor highlights, completion opens, the panels load)."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import ConsoleMessage, Dialog, Page, expect

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

# Closes attributes of either quote, opens markup, a script, an HTML comment that would
# swallow the page's own script, and a script-ending tag for JSON islands.
P = "\"'><img src=x class=pwned onerror=alert(1)><script>alert(2)</script><!--<script></script>"


@pytest.fixture
def xss_app(user):
    """An app with the payload in every user-typed field (names allow no markup: they are
    identifiers; display names and every free text take it)."""
    from agents import services
    from agents.models import Tool

    app = services.app_create(owner=user, name=f"App {P}", description=f"About {P}")
    schema = services.schema_create(
        app=app,
        name="Profile",
        description=f"Schema {P}",
        json_schema={
            "title": f"Title {P}",
            "type": "object",
            "properties": {
                "tier": {"type": "string", "enum": [f"gold {P}", "silver"], "description": P},
            },
        },
    )
    services.variable_create(
        app=app, name="greeting", type="text", default=f"Hi {P}", description=P
    )
    services.variable_create(
        app=app, name="tags", type="list", item_type="text", default=[P, "b"], description=P
    )
    services.variable_create(
        app=app,
        name="profile",
        type="object",
        schema=schema,
        default={"tier": f"gold {P}"},
        description=P,
    )
    tool = services.tool_create(
        app=app,
        name="Lookup",
        description=f"Tool {P}",
        python_code=(
            f"# {P}\ndef Lookup(tool_context):\n"
            f"    tool_context.state['greeting'] = {json.dumps(P)}\n"
            f"    return {{'say': {json.dumps(P)}}}\n"
        ),
        mock_response={"say": P},
        mock_state={"greeting": P},
    )
    root = app.agents.get(is_root=True)
    services.agent_update(
        agent=root,
        description=f"Root {P}",
        instructions=f"Say {{{{greeting}}}} and {{tags}} {P} then {{@TOOL: Lookup}} {{{{missing}}}}",
    )
    root.tools.add(Tool.objects.get(pk=tool.pk))
    helper = services.agent_create(app=app, display_name=f"Helper {P}", description=P)
    services.callback_create(
        agent=root,
        kind="before_model",
        code=f"def before_model_callback(callback_context, llm_request):\n    # {P}\n    return None\n",
    )
    services.scenario_save(
        agent=root,
        name=f"Scenario {P}",
        steps_script=f"user: {P}\ntool: Lookup {json.dumps({'q': P})}\nagent: {P}\n",
        session_values={"greeting": P},
    )
    return app, root, helper


class Watch:
    """Dialogs, CSP violations and errors seen by a page."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.dialogs: list[str] = []
        self.csp: list[str] = []
        page.on("dialog", self._dialog)
        page.on("console", self._console)

    def _dialog(self, dialog: Dialog) -> None:
        self.dialogs.append(dialog.message)
        if dialog.type == "confirm" and dialog.message.startswith("Delete"):
            dialog.dismiss()  # the app's own hx-confirm; recorded only if it is not ours
            self.dialogs.pop()
            return
        dialog.dismiss()

    def _console(self, message: ConsoleMessage) -> None:
        if "Content Security Policy" in message.text or "Content-Security-Policy" in message.text:
            self.csp.append(message.text)

    def check(self, where: str) -> None:
        page = self.page
        assert self.dialogs == [], (where, self.dialogs)
        assert page.locator("img.pwned").count() == 0, where
        injected = page.evaluate(
            "[...document.scripts].filter(s => s.type !== 'application/json' && "
            "s.textContent.includes('alert(')).length"
        )
        assert injected == 0, where
        assert self.csp == [], (where, self.csp)
        assert page.js_errors == [], (where, page.js_errors)  # type: ignore[attr-defined]


def test_every_page_and_fragment_escapes_the_payload_and_keeps_its_script(
    signed_in_page: Page, live_server, xss_app, user, staff
):
    app, root, helper = xss_app
    page = signed_in_page
    watch = Watch(page)
    base = live_server.url

    # The app list, and its search fragment with the payload typed in.
    page.goto(f"{base}/")
    expect(page.get_by_role("link", name=f"App {P}")).to_be_visible()
    watch.check("app list")
    page.get_by_placeholder("Search apps…").fill(P + " nothing")
    expect(page.locator("#app-table")).to_contain_text(f"No app matches “{P} nothing”")
    watch.check("app list search")

    # The designer: its script runs (highlight layer, completion), its panels load.
    page.goto(f"{base}/apps/{app.pk}/?agent={root.pk}")
    expect(page.locator("#compiled")).to_contain_text(f"Say Hi {P}")
    expect(page.locator("#instructions-editor .hl-static").first).to_be_visible()
    expect(page.locator("#conversation-panel .turn").first).to_contain_text(P)
    watch.check("designer")
    editor = page.locator("#instructions-editor")
    editor.click()
    editor.press("Control+End")
    editor.press_sequentially(" {{")
    suggestions = page.locator(".cm-tooltip-autocomplete")
    expect(suggestions).to_be_visible()
    expect(suggestions).to_contain_text("greeting")
    editor.press("Escape")
    expect(page.locator("#compiled")).to_contain_text("{{")  # the preview fragment came back
    expect(page.locator("#completion-data")).to_be_attached()  # its json_script survived the swap
    expect(page.locator("#preview-data")).to_be_attached()
    watch.check("designer typing: preview fragment")

    # Each inline form fragment, opened as a designer does.
    for name, opener in [
        ("variable form", "#variable-list a[href$='/edit']"),
        ("schema form", "#schema-list a[href$='/edit']"),
        ("tool form", "#tool-list a[href$='/edit']"),
        ("agent form", f"#agent-list a[href$='/agents/{helper.pk}/edit']"),
    ]:
        page.locator(opener).first.click()
        expect(page.locator("form[data-inline-form]").first).to_be_visible()
        watch.check(name)
        page.locator("form[data-inline-form] [data-cancel]").first.click()
        expect(page.locator("form[data-inline-form]")).to_have_count(0)
    schema_form = page.locator("#schema-list a[href$='/edit']").first
    schema_form.click()
    expect(page.locator("[data-schema-builder] .builder-row").first).to_be_visible()
    watch.check("schema builder (JS-rendered rows)")
    page.locator("form[data-inline-form] [data-cancel]").first.click()
    expect(page.locator("#callback-list")).to_have_attribute("open", "")  # it has a callback
    page.get_by_label("Edit before model callback").click()
    expect(page.locator("#callback-list form[data-inline-form]")).to_be_visible()
    watch.check("callback form")
    page.locator("#callback-list [data-cancel]").click()
    page.locator("#variable-list a.usage-link").first.click()
    expect(page.locator("#variable-list .usage-slot").first).not_to_be_empty()
    watch.check("variable usage fragment")
    page.locator("#conversation-panel").get_by_role("link", name="Edit").click()
    expect(page.locator("#scenario-editor form")).to_be_visible()
    watch.check("scenario form")
    page.locator("#scenario-editor [data-clear]").click()  # the Cancel that was an onclick
    expect(page.locator("#scenario-editor form")).to_have_count(0)
    # Tick it once the conversation has settled: a re-simulation still in flight would
    # swap in a fresh panel (and checkbox) after the click.
    expect(page.locator("#conversation-panel.htmx-request")).to_have_count(0)
    expect(page.locator(".htmx-request")).to_have_count(0)
    page.locator("#conversation-panel input[type=checkbox][name=use_mocks]").check()
    expect(page.locator("#conversation-panel input[type=checkbox][name=use_mocks]")).to_be_checked()
    expect(page.locator("#conversation-panel .turn").first).to_contain_text(P)
    watch.check("conversation fragment with mocks")

    # The other agent's page (its display name holds the payload).
    page.goto(f"{base}/apps/{app.pk}/?agent={helper.pk}")
    expect(page.locator(".agent-title")).to_contain_text(f"Helper {P}")
    watch.check("designer, payload-named agent")

    # Share, export, delete confirmation, API token.
    for path, text in [
        (f"/apps/{app.pk}/share", "Share"),
        (f"/apps/{app.pk}/export", "Export"),
        (f"/apps/{app.pk}/delete", "Delete"),
        ("/accounts/api-token", "API token"),
    ]:
        page.goto(base + path)
        expect(page.locator("h1")).to_contain_text(text)
        watch.check(path)
    page.goto(f"{base}/apps/{app.pk}/share")
    page.get_by_label("Username").fill(P)
    page.get_by_role("button", name="Share").click()
    expect(page.locator(".flash")).to_contain_text(P)
    watch.check("share message")

    # An imported file whose problems echo the payload (file name, names, values).
    bad = {
        "format": "statecraft.app",
        "version": 1,
        "app": {"name": P, "variables": [{"name": P, "type": P, "description": P}]},
    }
    page.goto(f"{base}/apps/import")
    page.set_input_files(
        "input[type=file]",
        {"name": f"{P}.json", "mimeType": "application/json", "buffer": json.dumps(bad).encode()},
    )
    page.get_by_role("button", name="Import", exact=True).click()
    expect(page.locator("table")).to_be_visible()
    watch.check("import problems")

    # The API docs page (its script from a URL), and the admin as an operator.
    page.goto(f"{base}/api/docs/")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("Statecraft API")
    watch.check("api docs")


def test_the_admin_escapes_the_payload_and_runs_under_the_csp(
    page: Page, live_server, xss_app, staff
):
    app, root, _ = xss_app
    watch = Watch(page)
    base = live_server.url
    page.goto(f"{base}/admin/login/")
    page.get_by_label("Username").fill("operator")
    page.get_by_label("Password").fill("pw-op-123456")
    page.get_by_role("button", name="Log in").click()
    expect(page.locator("#site-name")).to_contain_text("Statecraft")
    for path in (
        "/admin/",
        "/admin/agents/agentapp/",
        f"/admin/agents/agentapp/{app.pk}/change/",
        f"/admin/agents/agent/{root.pk}/change/",
        "/admin/authtoken/tokenproxy/",
    ):
        page.goto(base + path)
        expect(page.locator("#content")).to_be_visible()
        watch.check(path)


def test_the_browser_enforces_the_policy_and_the_watch_sees_violations(signed_in_page: Page):
    """The detector above is real: markup injected past escaping would neither run nor pass."""
    page = signed_in_page
    watch = Watch(page)
    page.evaluate(
        """() => {
          const s = document.createElement('script');
          s.textContent = 'window.__ran = true';
          document.body.appendChild(s);
          document.body.insertAdjacentHTML('beforeend', '<p id="styled" style="color: rgb(255, 0, 0)">x</p>');
        }"""
    )
    expect(page.locator("#styled")).to_be_attached()
    assert page.evaluate("window.__ran === undefined")
    assert (
        page.evaluate("getComputedStyle(document.getElementById('styled')).color")
        != "rgb(255, 0, 0)"
    )
    assert any("script-src" in text for text in watch.csp), watch.csp
    assert any("style-src" in text for text in watch.csp), watch.csp
