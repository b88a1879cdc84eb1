"""Issue 33 ("What a designer meets in the first hour"), the items that are not visual: each
test fails on the code before its fix. The visual items are measured in Chromium in
tests/browser/test_browser_first_hour.py."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from agents import services
from agents.demo import ADD_TO_CART_CODE
from agents.models import Job, Tool
from agents.services import evaluation

pytestmark = pytest.mark.django_db


def _run_all_section(html: str) -> str:
    match = re.search(r'<section id="run-all".*?</section>', html, re.S)
    assert match, "no Run all section"
    return match.group(0)


# ------------ 9. after a reload the designer shows the latest Run all's results


def test_after_a_reload_the_designer_shows_the_latest_run_all(signed_in, user, shop, run_jobs):
    page = reverse("app-designer", args=[shop.pk])
    section = _run_all_section(signed_in.get(page).content.decode())
    assert "run-all-summary" not in section  # never run: only the button
    tool = Tool.objects.get(app=shop, name="AddToCart")
    services.tool_update(tool=tool, actor=user, python_code=ADD_TO_CART_CODE.replace("19.5", "21"))
    signed_in.post(reverse("app-run-all", args=[shop.pk]), HTTP_HX_REQUEST="true")
    run_jobs()
    # A part of an app that `manage.py evaluate` runs as its own job is not a Run all.
    evaluation.run_all_submit(app=shop, actor=user, scenarios=[], enqueue=True)
    run_jobs()
    assert Job.objects.filter(kind="evaluate_app", status="succeeded").count() == 2

    section = _run_all_section(signed_in.get(page).content.decode())
    assert 'class="run-all-summary small"' in section
    assert "1 failed" in section
    agent = shop.agents.get()
    scenario = agent.scenarios.get()
    assert f"?agent={agent.pk}&amp;scenario={scenario.pk}#expect-step-3" in section
    assert 'id="run-all-when"' in section and "by ada" in section
    # Shown as it ended: editing the app does not run it again by itself.
    assert "app-changed from:body" not in section
    assert "hx-get" not in section  # finished: nothing polls
