"""What a French or German designer types: numbers in lists and in Number fields, JSON typed
by hand, accented names, and a CX import whose variable has a type CX does not have."""

from __future__ import annotations

import html
import json

import pytest
from django.urls import reverse

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
