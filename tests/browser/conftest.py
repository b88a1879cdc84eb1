"""Playwright fixtures for the browser tests: one Chromium per worker, a fresh page per test.

A failed test leaves a screenshot in tests/artifacts/<test name>.png.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

# Playwright's sync API runs an event loop in the test thread; Django must allow ORM calls there.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
VIEWPORT = {"width": 1440, "height": 900}

expect.set_options(timeout=10_000)


class _ServerRequests:
    """The live server's requests still being handled (its threads, not the test's own
    client): a request the page sent before it closed (the designer's simulate, a poll)
    goes on on the server after the page is gone, and the flush's TRUNCATE must not meet
    it (on PostgreSQL the flush then fails and the next test finds the last one's rows)."""

    def __init__(self) -> None:
        self.count = 0
        self.changed = threading.Condition()

    def started(self, **_kwargs) -> None:
        if threading.current_thread() is not threading.main_thread():
            with self.changed:
                self.count += 1

    def finished(self, **_kwargs) -> None:
        if threading.current_thread() is not threading.main_thread():
            with self.changed:
                self.count = max(0, self.count - 1)
                self.changed.notify_all()

    def wait_until_none(self, timeout: float = 60) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: self.count == 0, timeout=timeout)

    def reset(self) -> None:
        """A new test counts from 0: a request whose end was never signalled (its
        connection reset while the server read the rest of its body) does not make every
        later test wait."""
        with self.changed:
            self.count = 0


SERVER_REQUESTS = _ServerRequests()


@pytest.fixture(scope="session", autouse=True)
def _count_server_requests() -> Iterator[None]:
    from django.core.signals import request_finished, request_started

    request_started.connect(SERVER_REQUESTS.started, weak=False)
    request_finished.connect(SERVER_REQUESTS.finished, weak=False)
    yield
    request_started.disconnect(SERVER_REQUESTS.started)
    request_finished.disconnect(SERVER_REQUESTS.finished)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """Remember each phase's report on the item, so fixtures can see whether the test failed."""
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        yield browser
        browser.close()


def _artifact_name(nodeid: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid.split("::")[-1])[:150]


@pytest.fixture
def page(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Page]:
    """A fresh context and page; `page.js_errors` collects the page's uncaught JS errors.

    A test's live server (and its database) is set up before the page, so the page is
    closed, offline, before the database is flushed: a request the page still sends (an
    autosave, a poll, the editor's keepalive save on leaving) never meets the flush's
    TRUNCATE (a deadlock on PostgreSQL), and what it sent before is waited for on the
    server."""
    if "live_server" in request.fixturenames:
        request.getfixturevalue("live_server")
    SERVER_REQUESTS.reset()
    context = browser.new_context(viewport=VIEWPORT, locale="en-US")
    context.set_default_timeout(10_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.js_errors = errors  # type: ignore[attr-defined]
    yield page
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        # A crashed page must not hide the test's own failure.
        with contextlib.suppress(Exception):
            page.screenshot(
                path=str(ARTIFACTS / f"{_artifact_name(request.node.nodeid)}.png"), full_page=True
            )
    with contextlib.suppress(Exception):
        context.set_offline(True)
    context.close()
    # What the page sent before it closed ends on the server before the flush.
    assert SERVER_REQUESTS.wait_until_none(), "the live server still handles a request"


@pytest.fixture
def session_page(page: Page, live_server, user) -> Page:
    """The page's context holds ada's session cookie (made with the test client's
    `force_login`); nothing loaded yet. The real sign-in form has its own tests
    (test_browser_designer_defects.py, test_browser_languages.py), so the others skip
    its two page loads."""
    from django.conf import settings
    from django.test import Client

    client = Client()
    client.force_login(user)
    page.context.add_cookies(
        [
            {
                "name": settings.SESSION_COOKIE_NAME,
                "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
                "url": live_server.url,
            }
        ]
    )
    return page


@pytest.fixture
def signed_in_page(session_page: Page, live_server) -> Page:
    """A page signed in as ada, showing the app list."""
    session_page.goto(f"{live_server.url}/")
    expect(session_page.get_by_role("heading", name="Your apps")).to_be_visible()
    return session_page


# ------------ a trip-planner app, built in the database

TRAVELLER_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
    "required": ["name"],
}


@pytest.fixture
def trip_app(user):
    """'Trip planner' with one variable of each type, a schema and a sub-agent.

    For the tests that are about the editor and the preview; the test that creates
    them through the forms is test_browser_forms.py::test_add_one_variable_of_each_type.
    """
    from agents import services

    app = services.app_create(owner=user, name="Trip planner")
    traveller = services.schema_create(app=app, name="Traveller", json_schema=TRAVELLER_SCHEMA)
    services.variable_create(
        app=app, name="greeting", type="text", default="Hello", description="How to greet."
    )
    services.variable_create(
        app=app, name="budget", type="number", default=1500, description="Budget in EUR."
    )
    services.variable_create(
        app=app,
        name="vip",
        type="boolean",
        default=True,
        description="Whether the traveller is a VIP.",
    )
    services.variable_create(
        app=app,
        name="traveller",
        type="object",
        schema=traveller,
        default={"name": "Ada", "age": 36},
        description="Who travels.",
    )
    services.variable_create(
        app=app,
        name="cities",
        type="list",
        item_type="text",
        default=["Paris", "Rome, Lazio"],
        description="Where to.",
    )
    services.agent_create(app=app, display_name="Booking helper", description="Books things.")
    return app


@pytest.fixture
def open_designer(session_page: Page, live_server):
    """Open an app's designer page as the signed-in designer; waits for the compiled prompt."""

    def open_(app) -> Page:
        session_page.goto(f"{live_server.url}/apps/{app.pk}/")
        expect(session_page.locator("#compiled")).to_be_visible()
        return session_page

    return open_


# ------------ accessibility: axe-core, served from frontend/node_modules (npm ci), never a CDN

AXE = Path(__file__).resolve().parents[2] / "frontend" / "node_modules" / "axe-core" / "axe.min.js"


def axe_violations(page: Page) -> list[dict]:
    """axe-core's violations on the page as it is now (every rule of its default run).

    The script is evaluated by the test (through the DevTools protocol, which the page's
    CSP does not apply to); the app's pages never load it."""
    assert AXE.exists(), (
        f"{AXE} is missing: run `npm ci` in frontend/ (axe-core is a devDependency)"
    )
    if not page.evaluate("() => Boolean(window.axe)"):
        page.evaluate(AXE.read_text(encoding="utf-8"))
    return page.evaluate(
        """async () => (await window.axe.run(document, {resultTypes: ["violations"]})).violations
            .map((v) => ({id: v.id, impact: v.impact, help: v.help,
                          nodes: v.nodes.slice(0, 5).map((n) => n.target.join(" "))}))"""
    )
