"""French and German beside English: the catalogs, the reader's language, diagnostics and API
errors in it (same codes), numbers as a French or German designer types them, and exports
that never depend on the language."""

from __future__ import annotations

import ast
import gettext
import re
from pathlib import Path

import pytest
from django.utils import translation
from rest_framework.test import APIClient

from agents.core import AgentSpec, AppSpec, lint_app
from agents.core.diagnostics import Message, render
from agents.core.spec import VariableType
from agents.i18n import localize
from agents.models import UserSettings
from tests.po import parse

ROOT = Path(__file__).resolve().parent.parent
LOCALE = ROOT / "locale"
CATALOGS = sorted(LOCALE.glob("*/LC_MESSAGES/*.po"))
PLACEHOLDER = re.compile(r"%\(\w+\)s|%%")


def test_there_are_french_and_german_catalogs():
    assert {(p.parts[-3], p.stem) for p in CATALOGS} >= {
        ("fr", "django"),
        ("de", "django"),
        ("fr", "djangojs"),
        ("de", "djangojs"),
    }


@pytest.mark.parametrize("path", CATALOGS, ids=lambda p: "/".join(p.parts[-3:]))
def test_every_marked_string_has_a_translation(path):
    """CI fails when a marked string has no French or German translation (empty or fuzzy)."""
    entries = parse(path.read_text(encoding="utf-8"))[1:]
    untranslated = [
        e["msgid"]
        for e in entries
        if "fuzzy" in e["flags"] or not all(v.strip() for v in e["msgstr"].values())
    ]
    assert not untranslated, f"{path}: {len(untranslated)} untranslated, e.g. {untranslated[:5]}"


@pytest.mark.parametrize("path", CATALOGS, ids=lambda p: "/".join(p.parts[-3:]))
def test_translations_keep_the_placeholders(path):
    for e in parse(path.read_text(encoding="utf-8"))[1:]:
        wanted = sorted(PLACEHOLDER.findall(e.get("msgid_plural", e["msgid"])))
        for form in e["msgstr"].values():
            assert sorted(PLACEHOLDER.findall(form)) == wanted, (e["msgid"], form)


@pytest.mark.parametrize("path", CATALOGS, ids=lambda p: "/".join(p.parts[-3:]))
def test_a_plural_has_every_form_of_its_language(path):
    """French has 3 plural forms: a message with 2 showed English from 2 on (`msgfmt -c`
    refuses such a catalog)."""
    text = path.read_text(encoding="utf-8")
    forms = int(re.search(r"nplurals=(\d+)", text).group(1))
    short = [
        e["msgid"] for e in parse(text)[1:] if "msgid_plural" in e and len(e["msgstr"]) != forms
    ]
    assert not short, f"{path}: {len(short)} plurals without {forms} forms, e.g. {short[:3]}"


@pytest.mark.parametrize("path", CATALOGS, ids=lambda p: "/".join(p.parts[-3:]))
def test_the_compiled_catalog_is_the_source(path):
    """The committed .mo holds exactly the .po's translations (no manual step was missed)."""
    with path.with_suffix(".mo").open("rb") as handle:
        compiled = gettext.GNUTranslations(handle)
    for e in parse(path.read_text(encoding="utf-8"))[1:]:
        msgid = e["msgid"] if "msgctxt" not in e else f"{e['msgctxt']}\x04{e['msgid']}"
        if "msgid_plural" in e:
            assert compiled.ngettext(msgid, e["msgid_plural"], 1) == e["msgstr"][0], msgid
        else:
            assert compiled.gettext(msgid) == e["msgstr"][0], msgid


def _message_templates() -> set[str]:
    found = set()
    for path in (ROOT / "agents").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Message":
                first = node.args[0] if node.args else None
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    found.add(first.value)
    return found


def test_every_diagnostic_template_is_in_the_catalogs():
    """A `Message` template added to the core without `makemessages` fails here."""
    templates = _message_templates()
    assert len(templates) > 300
    for lang in ("fr", "de"):
        msgids = {e["msgid"] for e in parse((LOCALE / lang / "LC_MESSAGES/django.po").read_text())}
        missing = sorted(templates - msgids)
        assert not missing, f"{lang}: run makemessages; missing {missing[:5]}"


# ---------------------------------------------------------------- diagnostics in a language

APP = AppSpec(
    name="Shop",
    agents=(AgentSpec(name="Root", instructions="Hello {{prenom}}.", is_root=True),),
)


def _sc301():
    return next(d for d in lint_app(APP) if d.code == "SC301")


def test_a_diagnostic_carries_its_template_and_parameters():
    d = _sc301()
    assert d.template.startswith("%(shown)s: no variable `%(first)s` is declared")
    assert d.params["first"] == "prenom"
    assert d.message == render(d.message, lambda t: t)  # English is the template filled in


@pytest.mark.parametrize(
    ("language", "words"),
    [
        ("fr", "`{{prenom}}` : aucune variable `prenom` n'est déclarée"),
        ("de", "`{{prenom}}`: keine Variable `prenom` ist deklariert"),
        ("en", "`{{prenom}}`: no variable `prenom` is declared"),
    ],
)
def test_a_diagnostic_in_french_and_german_with_its_parameters(language, words):
    d = _sc301()
    with translation.override(language):
        assert localize(d.message).startswith(words)
    assert d.code == "SC301"


def test_a_nested_message_is_translated_too():
    inner = Message("Text")
    outer = Message("List of %(item)s", item=inner)
    with translation.override("de"):
        assert localize(outer) == "Liste von Text"
    with translation.override("fr"):
        assert localize(outer) == "Liste de Texte"


def test_a_broken_translation_falls_back_to_english():
    message = Message("The tool %(name)s has no mock.", name="x")
    assert render(message, lambda t: "Das Tool %(nom)s") == "The tool x has no mock."


# ---------------------------------------------------------------- the API


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("language", "words"),
    [
        ("fr", "n'est pas un nom valide"),
        ("de", "ist kein gültiger Name"),
    ],
)
def test_an_api_error_in_french_and_german_keeps_its_code_and_field(user, shop, language, words):
    client = APIClient()
    client.force_login(user)
    body = {"name": "9 lives", "type": "text"}
    url = f"/api/apps/{shop.pk}/variables/"
    english = client.post(url, body, format="json", HTTP_ACCEPT_LANGUAGE="en").json()
    other = client.post(url, body, format="json", HTTP_ACCEPT_LANGUAGE=language)
    assert other.status_code == 400
    assert other["Content-Language"] == language
    diagnostics = other.json()["diagnostics"]
    assert [(d["code"], d["field"]) for d in diagnostics] == [
        (d["code"], d["field"]) for d in english["diagnostics"]
    ]
    assert words in diagnostics[0]["message"] and "9 lives" in diagnostics[0]["message"]
    assert words in other.json()["detail"]


@pytest.mark.django_db
def test_api_lint_messages_follow_accept_language_codes_do_not(user, shop):
    client = APIClient()
    client.force_login(user)
    agent = shop.agents.get(is_root=True)
    url = f"/api/apps/{shop.pk}/agents/{agent.pk}/compile"
    body = {"instructions": "Hi {{nobody_declared_this}} {@TOOL: no_such_tool}"}
    runs = {
        lang: client.post(url, body, format="json", HTTP_ACCEPT_LANGUAGE=lang).json()
        for lang in ("en", "fr", "de")
    }
    codes = {lang: [d["code"] for d in run["diagnostics"]] for lang, run in runs.items()}
    assert codes["en"] == codes["fr"] == codes["de"] and "SC301" in codes["en"]
    french = {d["code"]: d["message"] for d in runs["fr"]["diagnostics"]}
    german = {d["code"]: d["message"] for d in runs["de"]["diagnostics"]}
    assert "aucune variable `nobody_declared_this`" in french["SC301"]
    assert "keine Variable `nobody_declared_this`" in german["SC301"]


# ---------------------------------------------------------------- the reader's choice


@pytest.mark.django_db
def test_the_switcher_remembers_the_language_per_user(client, user):
    client.force_login(user)
    response = client.post("/accounts/language", {"language": "de", "next": "/"})
    assert response.status_code == 302 and response["Location"] == "/"
    assert UserSettings.objects.get(user=user).language == "de"
    assert response.cookies["statecraft_language"].value == "de"
    # Another browser (no cookie), English Accept-Language: the user's choice still wins.
    fresh = type(client)()
    fresh.login(username="ada", password="pw-ada-123456")
    page = fresh.get("/", HTTP_ACCEPT_LANGUAGE="en")
    assert page["Content-Language"] == "de"
    assert "Ihre Apps" in page.content.decode()


@pytest.mark.django_db
def test_without_a_choice_accept_language_decides(signed_in):
    page = signed_in.get("/", HTTP_ACCEPT_LANGUAGE="fr-FR,fr;q=0.9")
    assert page["Content-Language"] == "fr"
    assert "Vos applications" in page.content.decode()


@pytest.mark.django_db
def test_the_switcher_refuses_an_unknown_language_and_a_foreign_next(signed_in, user):
    assert signed_in.post("/accounts/language", {"language": "xx"}).status_code == 400
    response = signed_in.post(
        "/accounts/language", {"language": "fr", "next": "https://evil.example/"}
    )
    assert response["Location"] == "/"


@pytest.mark.django_db
def test_the_javascript_catalog_is_served_by_the_app(client):
    response = client.get("/jsi18n/?l=fr", HTTP_ACCEPT_LANGUAGE="fr")
    assert response.status_code == 200
    assert "javascript" in response["Content-Type"]
    assert "django.gettext" in response.content.decode() or "gettext" in response.content.decode()


# ---------------------------------------------------------------- numbers where people type them


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("language", "typed", "value", "shown"),
    [
        ("fr", "1,5", 1.5, "1,5"),
        ("de", "1,5", 1.5, "1,5"),
        ("fr", "1.5", 1.5, "1,5"),
        ("en", "1.5", 1.5, "1.5"),
    ],
)
def test_a_number_default_follows_the_designers_language(shop, language, typed, value, shown):
    from designer.forms import VariableForm

    with translation.override(language):
        form = VariableForm({"name": "ratio", "type": "number", "default": typed}, app=shop)
        assert form.is_valid(), form.errors
        assert form.cleaned_data["default_value"] == value
        variable = shop.variables.create(name="ratio", type="number", default=value)
        assert VariableForm(instance=variable, app=shop)["default"].value() == shown


@pytest.mark.django_db
def test_english_refuses_a_decimal_comma_and_lists_keep_the_comma_separator(shop):
    from designer.forms import VariableForm

    with translation.override("en"):
        form = VariableForm({"name": "ratio", "type": "number", "default": "1,5"}, app=shop)
        assert not form.is_valid() and "is not a number" in form.errors["default"][0]
    with translation.override("fr"):
        form = VariableForm(
            {"name": "sizes", "type": "list", "item_type": "number", "default": "1, 5"}, app=shop
        )
        assert form.is_valid(), form.errors
        assert form.cleaned_data["default_value"] == [1, 5]
        # `1,5` (no space) is one decimal or two items: refused, both fixes named.
        form = VariableForm(
            {"name": "sizes", "type": "list", "item_type": "number", "default": "1,5"}, app=shop
        )
        assert not form.is_valid() and "1.5" in form.errors["default"][0]


# ---------------------------------------------------------------- exports stay locale-free


@pytest.mark.django_db
def test_native_and_cx_exports_are_byte_identical_in_every_language(signed_in, shop):
    shop.variables.create(name="ratio", type=VariableType.NUMBER.value, default=1.5)
    urls = [
        f"/apps/{shop.pk}/export/native?format=json",
        f"/apps/{shop.pk}/export/native?format=yaml",
        f"/apps/{shop.pk}/export/cx",
    ]
    bodies = {}
    for lang in ("en", "fr", "de"):
        signed_in.cookies["statecraft_language"] = lang
        bodies[lang] = [signed_in.get(url).content for url in urls]
        assert signed_in.get(f"/apps/{shop.pk}/")["Content-Language"] == lang
    assert bodies["en"] == bodies["fr"] == bodies["de"]
    assert b"1.5" in bodies["fr"][0]


@pytest.mark.django_db
def test_the_api_follows_accept_language_even_for_a_user_who_chose_another(user, shop):
    UserSettings.objects.create(user=user, language="de")
    client = APIClient()
    client.login(username="ada", password="pw-ada-123456")  # the session holds "de"
    response = client.post(
        f"/api/apps/{shop.pk}/variables/",
        {"name": "9 lives", "type": "text"},
        format="json",
        HTTP_ACCEPT_LANGUAGE="fr",
    )
    assert "n'est pas un nom valide" in response.json()["diagnostics"][0]["message"]
    assert "Ihre Apps" in client.get("/", HTTP_ACCEPT_LANGUAGE="fr").content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("/admin/", "Authentifizierungs-Token"),
        ("/admin/agents/variable/add/", "- Option auswählen -"),
    ],
)
def test_the_german_admin_has_the_words_django_and_drf_leave_in_english(admin_client, url, words):
    """Django 6's and DRF's own German catalogs lack them (a tester saw "AUTH TOKEN" and
    "- Select an option -"); ours has them (agents/i18n.py DJANGO_GAPS)."""
    page = admin_client.get(url, HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert words in page
