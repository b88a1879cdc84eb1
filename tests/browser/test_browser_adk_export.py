"""The export page's ADK project: the download is the package, and an evalset uploaded on
the same page comes back as scenarios (a real browser, a real server)."""

from __future__ import annotations

import io
import zipfile

import pytest
from playwright.sync_api import Page, expect

from agents.models import Scenario

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_adk_project_downloads_and_an_evalset_adds_scenarios(
    signed_in_page: Page, live_server, demo_apps, tmp_path
):
    page = signed_in_page
    shop = next(a for a in demo_apps if a.name == "Shopping assistant")
    page.goto(f"{live_server.url}/apps/{shop.pk}/export")
    expect(page.get_by_role("heading", name="ADK project")).to_be_visible()
    page.screenshot(path="/tmp/export-adk.png", full_page=True)
    with page.expect_download() as download:
        page.get_by_role("link", name="Download ADK project (ZIP)").click()
    data = download.value.path().read_bytes()
    assert download.value.suggested_filename == "shopping_assistant-adk.zip"
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        evalset = archive.read("shopping_assistant/evals/buy_a_product.evalset.json")
        assert "shopping_assistant/agent.py" in archive.namelist()
    upload = tmp_path / "buy_a_product.evalset.json"
    upload.write_bytes(evalset)
    page.get_by_label("Evalset file").set_input_files(str(upload))
    page.get_by_role("button", name="Add scenarios").click()
    expect(page.get_by_text("Added 1 scenario from buy_a_product.evalset.json.")).to_be_visible()
    assert Scenario.objects.filter(agent__app=shop, name="buy_a_product").exists()


def test_a_file_that_is_not_an_evalset_is_listed_on_the_page(
    signed_in_page: Page, live_server, demo_apps, tmp_path
):
    page = signed_in_page
    shop = next(a for a in demo_apps if a.name == "Shopping assistant")
    page.goto(f"{live_server.url}/apps/{shop.pk}/export")
    upload = tmp_path / "notes.json"
    upload.write_text('{"cases": []}')
    page.get_by_label("Evalset file").set_input_files(str(upload))
    page.get_by_role("button", name="Add scenarios").click()
    expect(page.get_by_role("alert")).to_contain_text(
        "eval_cases: an ADK evalset holds a list eval_cases"
    )
    page.screenshot(path="/tmp/export-adk-error.png", full_page=True)
    assert not Scenario.objects.filter(agent__app=shop).exclude(name="Buy a product").exists()
