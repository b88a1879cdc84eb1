"""A French and German tester's findings (issue 23): each page or message reads in the
reader's language, with no English label left (pages through the URL conf, a real DB)."""

from __future__ import annotations

import re

import pytest
from django.utils import translation

from agents import services
from agents.core.diagnostics import render
from agents.core.spec import CallbackKind, VariableType
from agents.core.types import type_label
from agents.models import AuditEvent, Job
from agents.services import exchange
from tests.core import test_simulate as sim


@pytest.fixture
def operator(client, staff):
    client.force_login(staff)
    return client


def _page(client, url: str, language: str) -> str:
    response = client.get(url, HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 200, url
    return response.content.decode()


def _visible(page: str) -> str:
    """The page's text as a reader sees it (no markup, scripts or attribute values)."""
    page = re.sub(r"(?s)<(script|style)\b.*?</\1>", " ", page)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))


def _jobs(owner, app) -> list[Job]:
    return [
        Job.objects.create(kind="evaluate_app", owner=owner, app=app, status=status)
        for status in ("queued", "running", "succeeded")
    ]


@pytest.mark.parametrize("language", ["de", "fr"])
def test_the_jobs_admin_has_no_english_label_left(operator, staff, language):
    app = services.app_create(owner=staff, name="Shop")
    job = _jobs(staff, app)[0]
    listing = _visible(_page(operator, "/admin/agents/job/", language))
    change = _visible(_page(operator, f"/admin/agents/job/{job.pk}/change/", language))
    for english in (
        "Kind",
        "Owner",
        "Progress done",
        "Queued",
        "Running",
        "Succeeded",
        "3 jobs",
        "select job to view",
        "By status",
        "By kind",
        "created at",
    ):
        assert english not in listing, english
    assert "evaluate_app" not in listing  # the kind's label, not its identifier
    for english in ("Params", "Caps", "Who submitted it", "Steps, code calls, seconds"):
        assert english not in change, english


def test_the_audit_trail_reads_in_german(operator, staff, shop):
    root = shop.agents.get(is_root=True)
    services.callback_create(agent=root, kind="before_model", code="x = 1")
    AuditEvent.objects.create(
        app=shop, app_name=shop.name, action="app.import", object_type="app", object_name="S"
    )
    AuditEvent.objects.create(
        app=shop,
        app_name=shop.name,
        action="callback.create",
        object_type="callback",
        object_name="before_model #0 of root_agent",  # stored by the old code
    )
    AuditEvent.objects.create(
        app=shop, app_name=shop.name, action="agent.admin_change", object_type="agent"
    )
    page = _page(operator, "/admin/agents/auditevent/", "de")
    text = _visible(page)
    assert "app.import" not in text and "agent.admin_change" not in text
    assert "App importiert" in text and "Agent in der Verwaltung geändert" in text
    assert " of " not in _visible(page.split('id="result_list"')[1])
    assert "Filter by" not in text
    assert (
        AuditEvent.objects.filter(action="callback.create")
        .exclude(object_name__contains=" of ")
        .exists()
    )  # the new name has no English in it either


def test_the_admin_home_and_endpoint_choices_in_german(operator):
    home = _page(operator, "/admin/", "de")
    assert "Django-RQ" not in home and "DJANGO_RQ" not in home  # the queue is the database
    add = _page(operator, "/admin/agents/modelendpoint/add/", "de")
    assert "OpenAI-compatible (chat completions)" not in add
    assert "Gemini (API key or Vertex AI)" not in add


def test_a_list_type_is_one_phrase_per_item_type():
    with translation.override("fr"):
        assert render(type_label(VariableType.LIST, VariableType.TEXT), translation.gettext) == (
            "Liste de textes"
        )
        assert render(type_label(VariableType.LIST, VariableType.NUMBER), translation.gettext) == (
            "Liste de nombres"
        )
    with translation.override("de"):
        assert render(type_label(VariableType.LIST, VariableType.NUMBER), translation.gettext) == (
            "Liste von Zahlen"
        )
    assert type_label(VariableType.LIST, VariableType.NUMBER) == "List of Number"


@pytest.mark.parametrize("later", [1, 2])
def test_a_tool_that_raises_says_what_was_skipped_in_one_french_sentence(later):
    tool = sim.tool_code("Broken", 'raise ValueError("down")\n')
    after = sim.callback(CallbackKind.AFTER_AGENT, "x = 1")
    app = sim.make_app(tools=(tool,), callbacks=(after,))
    steps = [sim.agent_says("sorry")] * later
    result = sim.run(app, sim.user("hi"), sim.call("Broken"), *steps)
    ended = next(d for d in result.diagnostics if d.code == "SC415")
    with translation.override("fr"):
        french = render(ended.message, translation.gettext)
    assert "step" not in french and "(s)" not in french, french
    assert ("1 étape suivante" if later == 1 else "2 étapes suivantes") in french
    assert ("1 later step and" if later == 1 else "2 later steps and") in ended.message


def test_a_reimported_app_gets_the_suffix_in_the_importers_language(user):
    spec = exchange.app_export_specs(services.app_create(owner=user, name="Shop"))[0]
    with translation.override("fr"):
        first = exchange.app_import(owner=user, spec=spec)
        second = exchange.app_import(owner=user, spec=spec)
    assert (first.name, second.name) == ("Shop (importé)", "Shop (importé 2)")
    with translation.override("de"):
        assert (
            exchange.app_import(owner=user, spec=spec).name == "Shop (importiert)"
        )  # free in German


@pytest.mark.parametrize("language, words", [("fr", "à l'instant"), ("de", "gerade eben")])
def test_an_app_changed_a_moment_ago_reads_just_now(signed_in, user, language, words):
    services.app_create(owner=user, name="Shop")
    page = _page(signed_in, "/", language)
    assert words in page.replace("&#x27;", "'")
    assert "0 minute" not in page and "0 Minuten" not in page


@pytest.mark.parametrize("language", ["en", "fr", "de"])
def test_each_language_button_names_its_language_in_that_language(signed_in, language):
    page = _page(signed_in, "/", language)
    titles = re.findall(r'name="language" value="(\w+)" lang="\w+" title="([^"]+)"', page)
    assert dict(titles) == {"en": "English", "fr": "Français", "de": "Deutsch"}


@pytest.mark.parametrize(
    "language, words",
    [("fr", "le code ne définit pas de fonction nommée"), ("de", "der Code definiert keine")],
)
def test_a_callback_without_its_function_is_explained_in_the_language(language, words):
    from agents.sandbox.code_runner import error_message

    message = error_message(
        "entry_not_found", "the code does not define a function named 'before_model_callback'"
    )
    with translation.override(language):
        shown = render(message, translation.gettext)
    assert words in shown and "'before_model_callback'" in shown and "does not" not in shown
