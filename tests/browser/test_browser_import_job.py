"""A large import in the browser: the progress at once, then the app when the job ends."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

pytestmark = [
    pytest.mark.browser,
    pytest.mark.xdist_group("browser"),
    pytest.mark.django_db(transaction=True),
]


def test_a_large_import_shows_progress_then_opens_the_app(
    signed_in_page: Page, live_server, user, shop, settings, run_jobs, tmp_path
):
    from agents.core.formats import dumps_native
    from agents.services import exchange

    settings.IMPORT_JOB_MIN_BYTES = 0
    upload = tmp_path / "shop.json"
    upload.write_bytes(dumps_native(exchange.app_export_native(shop)).encode())
    page = signed_in_page
    page.goto(f"{live_server.url}/apps/import")
    page.get_by_label("File", exact=True).set_input_files(str(upload))
    page.locator("input[name=name]").fill("Shop copy")
    page.get_by_role("button", name="Import").click()
    expect(page.locator("#import-job")).to_contain_text("Queued: importing shop.json")
    page.screenshot(path="tests/artifacts/import-job-progress.png", full_page=True)
    assert run_jobs() == 1
    expect(page).to_have_url(re.compile(r"/apps/\d+/$"))
    expect(page).to_have_title(re.compile(r"^Shop copy"))
