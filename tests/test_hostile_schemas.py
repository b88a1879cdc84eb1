"""Hostile schemas: slow patterns are refused or cut off, examples stay small — within a second."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.test import APIClient

from agents.core import safe_regex
from agents.core.examples import example_value
from agents.core.formats import dumps_native
from agents.core.schemas import check_schema
from agents.core.spec import VariableSpec, VariableType
from agents.core.types import validate_value
from agents.models import AgentApp
from agents.services import exchange

NESTED = r"^(a+)+$"  # refused by check_schema (SC228)
AMBIGUOUS = r"^(a|a)*$"  # overlapping alternatives: refused by check_schema too (SC228)
EVIL_TEXT = "a" * 40 + "!"
# Exponential as well, but the check's heuristic does not see it: only the time limit,
# the layer behind the check, stops it.
SLIPS_THROUGH = r"^(\d|[0-9])*$"
EVIL_DIGITS = "1" * 40 + "!"


class within:
    """A counted bound, not a stopwatch: inside, every pattern match runs with the time
    limit, and at most `seconds / PATTERN_TIMEOUT_S` of them run out of it — so the slow
    matches cost at most `seconds`, whatever the machine's load."""

    def __init__(self, seconds: float):
        self.most = round(seconds / safe_regex.PATTERN_TIMEOUT_S)
        self.matches: list[tuple[float, bool]] = []  # (its time limit, ran out of it)

    def __enter__(self):
        self.original = safe_regex._compiled
        matches = self.matches

        class Counted:
            def __init__(self, compiled):
                self.compiled = compiled

            def search(self, text, timeout=None):
                try:
                    found = self.compiled.search(text, timeout=timeout)
                except TimeoutError:
                    matches.append((timeout, True))
                    raise
                matches.append((timeout, False))
                return found

        safe_regex._compiled = lambda pattern: Counted(self.original(pattern))
        return self

    def __exit__(self, *exc):
        safe_regex._compiled = self.original
        limits = {limit for limit, _ in self.matches}
        assert limits <= {safe_regex.PATTERN_TIMEOUT_S}, f"a match without the limit: {limits}"
        slow = sum(1 for _, ran_out in self.matches if ran_out)
        assert slow <= self.most, f"{slow} matches ran out of time (at most {self.most})"


def test_the_time_limit_stops_a_catastrophic_match():
    with within(1), pytest.raises(safe_regex.PatternTimeout) as caught:
        safe_regex.search(AMBIGUOUS, EVIL_TEXT)
    assert "took longer than 0.1 s" in str(caught.value)
    assert safe_regex.search(AMBIGUOUS, "aaaa") and not safe_regex.search(r"^\d+$", "12a")


def test_a_value_against_a_slow_pattern_is_an_error_not_a_hang():
    variable = VariableSpec(name="code", type=VariableType.TEXT)
    schema = {"type": "object", "properties": {"code": {"type": "string", "pattern": AMBIGUOUS}}}
    obj = VariableSpec(name="thing", type=VariableType.OBJECT, schema="S")
    with within(1):
        found = validate_value({"code": EVIL_TEXT}, obj, {"S": schema})
    assert len(found) == 1 and found[0].severity == "error"
    assert "took longer than 0.1 s" in found[0].message and "simplify it" in found[0].message
    assert validate_value("x", variable, {}) == ()
    keyed = {"type": "object", "patternProperties": {AMBIGUOUS: {"type": "integer"}}}
    with within(1):
        found = validate_value({EVIL_TEXT: 1}, obj, {"S": keyed})
    assert found and "took longer" in found[0].message


def test_nested_quantifiers_are_refused_when_checking_a_schema():
    with within(1):
        found = check_schema({"type": "object", "properties": {"a": {"pattern": NESTED}}})
    assert [(d.code, d.severity) for d in found] == [("SC228", "error")]


def test_the_example_generator_is_bounded():
    hostile = {
        "type": "array",
        "minItems": 10**9,
        "items": {
            "type": "object",
            "required": ["a"],
            "properties": {
                "a": {"type": "array", "minItems": 10**6, "items": {"minLength": 10**9}}
            },
        },
    }
    with within(1):
        value = example_value(hostile)
    assert len(value) == 20 and len(str(value)) < 1_000_000  # the items cap, then the size
    with within(1):
        text = example_value({"type": "string", "minLength": 10**9})
    assert text is not None and len(text) <= 1000
    assert len(example_value({"type": "array", "minItems": 10**9})) == 20


@pytest.mark.django_db
def test_api_refuses_a_slow_pattern_within_a_second(user, shop):
    api = APIClient()
    api.force_login(user)
    schema = {"type": "object", "properties": {"code": {"type": "string", "pattern": NESTED}}}
    with within(1):
        response = api.post(
            f"/api/apps/{shop.pk}/schemas/", {"name": "Evil", "json_schema": schema}, format="json"
        )
    assert response.status_code == 400
    assert "SC228" in {d["code"] for d in response.json()["diagnostics"]}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("pattern", "evil"), [(NESTED, EVIL_TEXT), (AMBIGUOUS, EVIL_TEXT), (SLIPS_THROUGH, EVIL_DIGITS)]
)
def test_import_with_a_slow_pattern_and_a_matching_default_answers_within_a_second(
    signed_in, shop, pattern, evil
):
    doc = exchange.app_export_native(shop)
    doc["app"]["schemas"].append(
        {
            "name": "Evil",
            "description": "",
            "json_schema": {
                "type": "object",
                "properties": {"code": {"type": "string", "pattern": pattern}},
            },
        }
    )
    doc["app"]["variables"].append(
        {
            "name": "evil",
            "type": "object",
            "schema": "Evil",
            "default": {"code": evil},
            "description": "An evil default.",
        }
    )
    before = AgentApp.objects.count()
    # Under a second on an idle machine (the pattern's share is its 0.1 s limit); the bound
    # leaves room for a shared machine running other suites.
    with within(2):
        response = signed_in.post(
            reverse("app-import"),
            {"file": SimpleUploadedFile("evil.json", dumps_native(doc).encode())},
        )
    assert response.status_code == 400
    assert AgentApp.objects.count() == before
    text = response.content.decode()
    assert "Nothing was imported" in text
    if pattern in (NESTED, AMBIGUOUS):
        assert "SC228" in text and "so it is refused" in text
    else:
        assert "took longer than 0.1 s" in text and "variables.evil.default" in text


@pytest.fixture
def slow_pattern_app(user, shop):
    """The shopping app with a custom object whose schema has an ambiguous pattern, written
    to the database directly: as if the schema check in front had been bypassed."""
    from agents import services
    from agents.models import Schema, Variable

    schema = {"type": "object", "properties": {"code": {"type": "string", "pattern": AMBIGUOUS}}}
    saved = Schema.objects.create(app=shop, name="Coded", json_schema=schema)
    Variable.objects.create(
        app=shop, name="coded", type="object", schema=saved, default={"code": "aaa"}
    )
    agent = shop.agents.get()
    services.agent_update(agent=agent, instructions="Code: {{coded.code}}", actor=user)
    return shop, agent


@pytest.mark.django_db
def test_compile_with_a_value_against_a_slow_pattern_answers_within_a_second(
    user, slow_pattern_app
):
    app, agent = slow_pattern_app
    api = APIClient()
    api.force_login(user)
    url = f"/api/apps/{app.pk}/agents/{agent.pk}/compile"
    with within(1):
        response = api.post(url, {"values": {"coded": {"code": EVIL_TEXT}}}, format="json")
    assert response.status_code == 400
    [problem] = response.json()["diagnostics"]
    assert problem["field"] == "values.coded" and "took longer than 0.1 s" in problem["message"]


@pytest.mark.django_db
def test_preview_with_a_value_against_a_slow_pattern_answers_within_a_second(
    client, user, slow_pattern_app
):
    import html
    import json
    import re

    app, agent = slow_pattern_app
    client.force_login(user)
    url = reverse("agent-preview", args=[app.pk, agent.pk])
    with within(1):
        response = client.post(
            url, {"values_json": json.dumps({"coded": {"code": EVIL_TEXT}})}, HTTP_HX_REQUEST="true"
        )
    assert response.status_code == 200
    body = html.unescape(response.content.decode())
    assert "took longer than 0.1 s" in body
    data = re.search(
        r'<script id="preview-data" type="application/json">(.*?)</script>', body, re.S
    )
    assert json.loads(data.group(1))["text"] == "Code: aaa"  # the refused value is left out
