"""Issue 33 ("What a designer meets in the first hour"), the items that are not visual: each
test fails on the code before its fix. The visual items are measured in Chromium in
tests/browser/test_browser_first_hour.py."""

from __future__ import annotations

import json
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


# ------------ 12. the Judge picker and Make default show only where they act


@pytest.fixture
def models(monkeypatch, server):
    from tests.llm_server import configure_models

    configure_models(monkeypatch, {"loop": {"server": server}, "other": {"server": server}})


def _panel(client, app, **params) -> str:
    agent = app.agents.get(is_root=True)
    url = reverse("agent-simulate", args=[app.pk, agent.pk])
    return client.get(url, params, HTTP_HX_REQUEST="true").content.decode()


def _make_default(html: str) -> str:
    match = re.search(r'<button[^>]*id="make-default-model"[^>]*>', html)
    assert match, "no Make default button"
    return match.group(0)


def test_the_judge_picker_shows_only_where_a_rubric_is_judged(signed_in, shop, models):
    assert 'id="model-picker"' in _panel(signed_in, shop)
    assert 'id="judge-picker"' not in _panel(signed_in, shop)  # no rubric in this app
    from agents.models import AgentApp
    from tests.test_live_api_and_secrets import SIMULATED

    path = "evaluations/Simulated/Simulated.json"
    AgentApp.objects.filter(pk=shop.pk).update(cx={"files": {path: json.dumps(SIMULATED)}})
    html = _panel(signed_in, shop)
    assert html.index('id="model-picker"') < html.index('id="judge-picker"')
    # An evaluation of the scenario kind with no rubric: nothing to judge either.
    bare = {**SIMULATED, "scenario": {**SIMULATED["scenario"], "rubrics": []}}
    AgentApp.objects.filter(pk=shop.pk).update(cx={"files": {path: json.dumps(bare)}})
    assert 'id="judge-picker"' not in _panel(signed_in, shop)


def test_make_default_shows_only_while_the_picked_model_is_not_the_default(signed_in, shop, models):
    # Scripted picked, no default: nothing to make default.
    assert " hidden" in _make_default(_panel(signed_in, shop))
    assert 'data-default-model=""' in _make_default(_panel(signed_in, shop))
    assert " hidden" not in _make_default(_panel(signed_in, shop, model="loop"))
    agent = shop.agents.get(is_root=True)
    url = reverse("agent-simulate", args=[shop.pk, agent.pk])
    signed_in.post(url, {"model": "loop", "make_default": "1"}, HTTP_HX_REQUEST="true")
    assert " hidden" in _make_default(_panel(signed_in, shop, model="loop"))
    assert 'data-default-model="loop"' in _make_default(_panel(signed_in, shop, model="loop"))
    assert " hidden" not in _make_default(_panel(signed_in, shop, model="other"))
    # Scripted while the app has a default: it acts (the app then has no default).
    assert " hidden" not in _make_default(_panel(signed_in, shop))


# ------------ 13. `manage.py evaluate --model` prints the verdicts, not httpx's request lines


@pytest.mark.parametrize("level", ["", "DEBUG"])
def test_evaluate_with_a_model_prints_no_http_request_lines(
    migrated_sqlite_url, server, monkeypatch, level
):
    import os
    import subprocess
    import sys
    from pathlib import Path

    from tests.llm_server import configure_models, openai_text

    configure_models(monkeypatch, {"loop": {"server": server}})
    server.repeat_last = True
    server.script(openai_text("Your balance is 1,250 EUR."))
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "DATABASE_URL": migrated_sqlite_url}
    env.pop("LOG_LEVEL", None)
    if level:
        env["LOG_LEVEL"] = level
    manage = [sys.executable, "manage.py"]
    settings = "--settings=tests.settings"
    subprocess.run(
        [*manage, "load_demo", settings], cwd=root, env=env, check=True, capture_output=True
    )
    done = subprocess.run(
        [*manage, "evaluate", "Bank demo", "--model", "loop", settings],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = done.stdout + done.stderr
    assert server.seen, output  # the model was asked
    assert "Balance question" in done.stdout, output
    if level == "DEBUG":  # the operator asked for every line: the requests are there
        # httpx's own line ("… "HTTP/1.1 200 OK""), not only the SDK's debug lines.
        assert '/v1/chat/completions "HTTP/1.1 200 OK"' in output, output
    else:
        assert "HTTP Request" not in output, output


# ------------ 3. the French and German UI use CX Agent Studio's words, codes set apart

ENGLISH_TERMS = re.compile(r"\b(mocks?|goldens?|eval ?cases?|Richter)\b", re.I)
# What stays as typed: code, the script's words, field names and the CX/ADK file fields.
CODE = re.compile(
    r"<code>.*?</code>|`[^`]*`|%\(\w+\)s|\bmock:|\buse_mocks\b|\bmockToolResponse\b", re.S
)


@pytest.mark.parametrize("language", ["fr", "de"])
def test_the_catalog_keeps_no_english_term_outside_code(language):
    from pathlib import Path

    from tests.po import parse

    po = Path(__file__).resolve().parent.parent / "locale" / language / "LC_MESSAGES"
    left = []
    for name in ("django.po", "djangojs.po"):
        for entry in parse((po / name).read_text(encoding="utf-8")):
            for text in entry["msgstr"].values():
                if ENGLISH_TERMS.search(CODE.sub("", text)):
                    left.append((entry["msgid"][:60], text[:80]))
    assert not left, left


@pytest.mark.parametrize(
    ("language", "words"),
    [
        ("fr", ["Évaluations de référence", "réponses fictives"]),
        ("de", ["Referenzbewertungen", "Testantworten"]),
    ],
)
def test_the_designer_reads_cx_words_in_french_and_german(client, user, shop, language, words):
    from django.conf import settings

    client.force_login(user)
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = language
    agent = shop.agents.get(is_root=True)
    page = client.get(reverse("app-designer", args=[shop.pk])).content.decode()
    panel = client.get(
        reverse("agent-simulate", args=[shop.pk, agent.pk]), HTTP_HX_REQUEST="true"
    ).content.decode()
    text = page + panel
    for word in words:
        assert word in text, word
    visible = re.sub(
        r"<[^>]+>", " ", CODE.sub("", re.sub(r"<script.*?</script>", "", text, flags=re.S))
    )
    assert not ENGLISH_TERMS.search(visible), ENGLISH_TERMS.search(visible)


# ------------ 11. the right pane's folds are the user's


def test_the_folded_sections_are_remembered_for_the_user_and_checked(signed_in, user, shop):
    from agents.models import UserSettings

    url = reverse("set-collapsed")
    assert signed_in.post(url, {"sections": "goldens,preview"}).status_code == 204
    assert UserSettings.objects.get(user=user).collapsed == ["preview", "goldens"]
    page = signed_in.get(reverse("app-designer", args=[shop.pk])).content.decode()
    assert 'data-collapsed="preview goldens"' in page
    assert signed_in.post(url, {"sections": "preview,sidebar"}).status_code == 400
    assert UserSettings.objects.get(user=user).collapsed == ["preview", "goldens"]
    assert signed_in.post(url, {"sections": ""}).status_code == 204
    assert UserSettings.objects.get(user=user).collapsed == []
