"""The designer's top bar at 1280 px in the longer languages: the breadcrumb's app name
stays on one line, whole, and the bar does not overflow the window (a black-box tester saw
"Bank demo" wrap onto two lines in French). The fullest bar there is: an operator's (the
Admin button), of an imported app (Import report) that is shared (Share · 1)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.django_db(transaction=True)

SHOTS = os.environ.get("TOPBAR_SHOTS")  # a folder: the bars are saved there as PNGs


@pytest.fixture
def full_bar(page: Page, live_server, demo_apps, staff, user):
    """The staff user's imported, shared "Bank demo"; the page signed in as them."""
    from django.conf import settings
    from django.test import Client

    from agents import services
    from agents.core.formats import dumps_native
    from agents.models import ShareRole
    from agents.services import exchange

    bank = next(a for a in demo_apps if a.name == "Bank demo")
    data = dumps_native(exchange.app_export_native(bank), "json").encode()
    app, _kind, _notes = exchange.app_import_file(
        owner=staff, data=data, name="Bank demo", filename="bank.json"
    )
    services.app_share(app=app, user=user, role=ShareRole.EDITOR)
    client = Client()
    client.force_login(staff)
    cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
    page.context.add_cookies(
        [{"name": settings.SESSION_COOKIE_NAME, "value": cookie, "url": live_server.url}]
    )
    return app


@pytest.mark.parametrize("language", ["fr", "de", "en"])
def test_the_breadcrumb_stays_on_one_line_at_1280(page: Page, live_server, full_bar, language):
    page.context.add_cookies(
        [{"name": "statecraft_language", "value": language, "url": live_server.url}]
    )
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{live_server.url}/apps/{full_bar.pk}/")
    expect(page.locator("#compiled")).to_be_visible()
    expect(page.locator("html")).to_have_attribute("lang", language)
    name = page.locator(".topbar .crumb strong")
    expect(name).to_have_text("Bank demo")
    measured = name.evaluate(
        """el => {
            const style = getComputedStyle(el);
            const line = parseFloat(style.lineHeight) || parseFloat(style.fontSize) * 1.5;
            const bar = document.querySelector('.topbar');
            return {
                lines: Math.round(el.getBoundingClientRect().height / line),
                clipped: el.scrollWidth > el.clientWidth + 1,
                barOverflow: bar.scrollWidth > bar.clientWidth + 1,
                barHeight: Math.round(bar.getBoundingClientRect().height),
            };
        }"""
    )
    if SHOTS:
        page.screenshot(
            path=str(Path(SHOTS) / f"topbar-{language}-1280.png"),
            clip={"x": 0, "y": 0, "width": 1280, "height": 60},
        )
    assert measured == {"lines": 1, "clipped": False, "barOverflow": False, "barHeight": 48}
