"""What a French or German designer types: numbers in lists and in Number fields, JSON typed
by hand, accented names, and a CX import whose variable has a type CX does not have."""

from __future__ import annotations

import html
import json

import pytest
from django.urls import reverse
from django.utils import translation

from agents.core.cx.app import from_cx_files
from agents.core.diagnostics import Severity, render
from agents.core.script import parse_script
from tests.test_cx_generalise import _app_files

pytestmark = pytest.mark.django_db


def _cx_files(app: dict) -> dict[str, bytes]:
    out = {}
    for path, value in {**_app_files(), "app.json": app}.items():
        out[path] = value.encode() if isinstance(value, str) else json.dumps(value).encode()
    return out


def test_a_cx_variable_of_an_unknown_type_is_refused_on_its_type_with_a_suggestion():
    app = _app_files()["app.json"]
    app["variableDeclarations"][1]["schema"] = {"type": "DECIMAL", "default": 1.5}
    _spec, found = from_cx_files(_cx_files(app))
    errors = [d for d in found if d.severity is Severity.ERROR]
    assert [d.field for d in errors] == ["variableDeclarations[1].schema.type"], errors
    text = str(errors[0].message)
    assert "'DECIMAL'" in text
    assert "STRING, INTEGER, NUMBER, BOOLEAN, OBJECT, ARRAY" in text
    assert "did you mean NUMBER" in text
    assert not any("schema.default" in (d.field or "") for d in found)


def test_a_cx_list_of_an_unknown_item_type_is_refused_on_the_item_type():
    app = _app_files()["app.json"]
    app["variableDeclarations"][1]["schema"] = {"type": "ARRAY", "items": {"type": "STRNG"}}
    _spec, found = from_cx_files(_cx_files(app))
    errors = [d for d in found if d.severity is Severity.ERROR]
    assert [d.field for d in errors] == ["variableDeclarations[1].schema.items.type"], errors
    assert "did you mean STRING" in str(errors[0].message)


# JSON typed by a person: Python's English never reaches the reader ---------------------


def test_a_broken_cx_app_json_names_the_file_and_place_and_the_fix_in_a_message():
    text = json.dumps(_app_files()["app.json"], indent=2).replace(
        '"displayName":', '"displayName"', 1
    )
    files = {**_cx_files(_app_files()["app.json"]), "app.json": text.encode()}
    _spec, found = from_cx_files(files)
    [error] = [d for d in found if d.code == "SC605"]
    line = text[: text.index('"displayName"')].count("\n") + 1
    assert error.field.startswith(f"app.json:{line}:"), error
    assert error.line == line
    assert "Expecting" not in error.message
    assert "expected ':' after the property name" in error.message
    assert "Expecting" not in render(error.message, lambda template: template)


def test_a_decimal_comma_in_a_scenario_state_says_json_writes_a_point():
    parsed = parse_script('user: hi\nexpect state: {"tarif_nuit": 100,0}')
    [problem] = parsed.diagnostics
    assert "a decimal is written with a point in JSON: 100.0" in problem.message
    assert "Expecting" not in problem.message


def test_the_schema_form_says_remove_the_trailing_comma_in_french(signed_in, shop):
    response = signed_in.post(
        reverse("schema-new", args=[shop.pk]),
        {"name": "Bad", "json_schema": '{"type": "object",}'},
        headers={"HX-Request": "true"},
        HTTP_ACCEPT_LANGUAGE="fr",
    )
    body = response.content.decode()
    assert "Illegal trailing comma" not in body
    assert "Expecting" not in body
    assert "colonne 18" in body, body
    assert "remove the comma before }" in body or "virgule" in body


def test_the_schema_example_and_the_session_values_explain_json_errors(signed_in, shop):
    error = signed_in.post(
        reverse("schema-example", args=[shop.pk]), {"json_schema": '{"type": "object",}'}
    ).json()["error"]
    assert error == "Line 1, column 18: remove the comma before }", error
    agent = shop.agents.get(is_root=True)
    page = signed_in.post(
        reverse("agent-preview", args=[shop.pk, agent.pk]),
        {"values_json": '{"a": 100,5}'},
        headers={"HX-Request": "true"},
    ).content.decode()
    assert "Line 1, column 11: a decimal is written with a point in JSON: 100.5" in html.unescape(
        page
    )
    diff = signed_in.get(reverse("version-diff", args=[shop.pk]), {"values": '{"a": 1,}'})
    assert "values must be a JSON object: line 1, column 8: remove the comma before }" in (
        html.unescape(diff.content.decode())
    )


# Numbers a French or German designer types ---------------------------------------------


@pytest.mark.parametrize("language", ["fr", "de"])
def test_a_french_or_german_list_of_numbers_refuses_1_5_naming_both_fixes(shop, language):
    from designer.forms import VariableForm

    data = {"name": "sizes", "type": "list", "item_type": "number", "default": "1,5, 2"}
    with translation.override(language):
        form = VariableForm(data, app=shop)
        assert not form.is_valid()
        [error] = form.errors["default"]
        assert "'1,5'" in error and "1.5" in error and "1, 5" in error, error
        for fixed, value in (("1.5, 2", [1.5, 2]), ("1, 5, 2", [1, 5, 2])):
            form = VariableForm({**data, "default": fixed}, app=shop)
            assert form.is_valid(), form.errors
            assert form.cleaned_data["default_value"] == value
    with translation.override("en"):  # English reads the comma as the separator, as before
        form = VariableForm(data, app=shop)
        assert form.is_valid() and form.cleaned_data["default_value"] == [1, 5, 2]


def test_the_list_placeholder_and_item_errors_follow_the_item_type(shop):
    from designer.forms import VariableForm

    def form(item_type, default=""):
        data = {"name": "xs", "type": "list", "item_type": item_type, "default": default}
        return VariableForm(data, app=shop)

    with translation.override("fr"):
        assert form("number")["default"].field.widget.attrs["placeholder"] == "1.5, 2, 3"
        assert form("text")["default"].field.widget.attrs["placeholder"] != "1.5, 2, 3"
        numbers = form("number", "1.5, 2x")
        assert not numbers.is_valid()
        assert "item 2" in numbers.errors["default"][0] or "2x" in numbers.errors["default"][0]
        assert "1234.5" in numbers.errors["default"][0], numbers.errors


@pytest.mark.parametrize(
    ("language", "typed", "value"),
    [
        ("fr", "1 234,5", 1234.5),
        ("fr", "1\u00a0234,5", 1234.5),
        ("fr", "1\u202f234,5", 1234.5),
        ("fr", "12 345 678", 12345678),
        ("de", "1.234,5", 1234.5),
        ("de", "1.234.567", 1234567),
        ("de", "1.5", 1.5),
        ("de", "1 234,5", 1234.5),
    ],
)
def test_a_number_reads_the_languages_thousands_separators(shop, language, typed, value):
    from designer.forms import VariableForm

    with translation.override(language):
        form = VariableForm({"name": "ratio", "type": "number", "default": typed}, app=shop)
        assert form.is_valid(), form.errors
        assert form.cleaned_data["default_value"] == value


@pytest.mark.parametrize(
    ("language", "typed", "example"),
    [
        ("fr", "1,5x", "1 234,5"),
        ("de", "1,5x", "1.234,5"),
        ("en", "1,5", "1234.5"),
        ("fr", "12 34", "1 234,5"),
    ],
)
def test_not_a_number_gives_an_example_in_the_readers_form(shop, language, typed, example):
    from designer.forms import VariableForm

    with translation.override(language):
        form = VariableForm({"name": "ratio", "type": "number", "default": typed}, app=shop)
        assert not form.is_valid()
        assert example in form.errors["default"][0], form.errors


# Names ----------------------------------------------------------------------------------


def test_an_accented_name_is_refused_as_unaccented_letters_with_the_name_without_accents():
    from agents.core import rules

    [problem] = rules.name_problems("prix_nuitée")
    assert "unaccented letters a-z" in problem.message
    assert "for example prix_nuitee" in problem.message
    assert rules.suggested_name("Réservation simple") == "Reservation_simple"
    assert rules.suggested_name("1er tarif") == "_1er_tarif"
    assert not rules.name_problems(rules.suggested_name("prix_nuitée"))


def test_the_variable_form_suggests_the_name_without_accents(signed_in, shop):
    response = signed_in.post(
        reverse("variable-new", args=[shop.pk]),
        {"name": "prix_nuitée", "type": "text", "description": "d"},
        headers={"HX-Request": "true"},
    )
    body = html.unescape(response.content.decode())
    assert "prix_nuitee" in body and "a-z" in body, body
    assert not shop.variables.filter(name="prix_nuitée").exists()


# Accented names in a CX export ------------------------------------------------------------


def test_an_accented_scenario_and_agent_export_to_ascii_folders_and_round_trip():
    from agents.core.cx.app import read_cx_files, to_cx_files
    from agents.core.spec import AgentSpec, AppSpec, ScenarioSpec

    app = AppSpec(
        name="Hôtel",
        agents=(
            AgentSpec("Accueil", children=("Réception",), is_root=True),
            AgentSpec("Réception"),
        ),
    )
    steps = parse_script("user: une chambre\nexpect transfer: Réception\nagent:").steps
    scenario = ScenarioSpec(name="Réservation simple", agent="Accueil", steps=steps)
    files, _notes = to_cx_files(app, [scenario])
    path = "evaluations/Reservation_simple/Reservation_simple.json"
    assert path in files, sorted(files)
    assert not any("R_servation" in name or "R_ception" in name for name in files)
    golden = json.loads(files[path])
    assert "R_ception" not in json.dumps(golden)
    back, scenarios, _ = read_cx_files(files)
    assert back is not None and [s.name for s in scenarios] == ["Réservation simple"]
    assert scenarios[0].steps == steps


def test_the_schema_example_uses_the_property_names_not_english(signed_in, shop):
    schema = {
        "type": "object",
        "properties": {
            "ville": {"type": "string"},
            "étapes": {"type": "array", "items": {"type": "string"}},
            "code": {"type": "string", "pattern": "^[A-Z]+$"},
        },
        "required": ["ville", "autre"],
    }
    example = signed_in.post(
        reverse("schema-example", args=[shop.pk]), {"json_schema": json.dumps(schema)}
    ).json()["example"]
    assert example == {"ville": "ville", "étapes": ["étapes"], "code": "ABC", "autre": "autre"}
    assert "example" not in json.dumps(example)


# Numbers where a person reads them ---------------------------------------------------------


@pytest.mark.parametrize(("language", "shown"), [("fr", "1,5"), ("de", "1,5"), ("en", "1.5")])
def test_the_sidebar_and_the_autocomplete_show_a_number_in_the_readers_form(
    signed_in, shop, language, shown
):
    import re

    shop.variables.create(name="ratio", type="number", default=1.5)
    shop.variables.create(name="sizes", type="list", item_type="number", default=[1.5, 2])
    page = signed_in.get(
        reverse("app-designer", args=[shop.pk]), HTTP_ACCEPT_LANGUAGE=language
    ).content.decode()
    rows = re.findall(r'<code class="default"[^>]*>([^<]*)</code>', page)
    assert shown in rows, rows
    assert "[1.5, 2]" in [html.unescape(row) for row in rows], rows  # a list keeps the point
    data = json.loads(
        re.search(
            r'<script id="completion-data" type="application/json">(.*?)</script>', page, re.S
        ).group(1)
    )
    ratio = next(v for v in data["variables"] if v["name"] == "ratio")
    assert ratio["default"] == shown
