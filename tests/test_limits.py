"""Every limit once (agents/core/rules.py, "Limits"): the models' columns, the API's
serializers and the native format's JSON Schema agree with the rule set, and an app
the import accepts saves unchanged through the API."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from django.apps import apps
from django.db import connection
from rest_framework.test import APIClient

import agents.models
from agents.api import serializers as io
from agents.core import rules
from agents.core.formats import NATIVE_SCHEMA, dumps_native
from agents.models import (
    Agent,
    AgentApp,
    AppModelDefault,
    AppShare,
    AuditEvent,
    Callback,
    Job,
    JobItem,
    LiveRun,
    ModelEndpoint,
    Scenario,
    ScenarioResult,
    ScenarioStep,
    Schema,
    Tool,
    UserSettings,
    Variable,
)
from agents.services import exchange

# The schema's bounds, by path in NATIVE_SCHEMA, and the constant of the rule set each is.
SCHEMA_LIMITS = {
    ("$defs", "name", "maxLength"): rules.NAME_MAX_LENGTH,
    ("$defs", "toolName", "maxLength"): rules.TOOL_NAME_MAX_LENGTH,
    ("$defs", "app", "properties", "name", "maxLength"): rules.APP_NAME_MAX_LENGTH,
    ("$defs", "agent", "properties", "name", "maxLength"): rules.DISPLAY_NAME_MAX_LENGTH,
    ("$defs", "agent", "properties", "children", "items", "maxLength"): (
        rules.DISPLAY_NAME_MAX_LENGTH
    ),
    ("$defs", "expectation", "properties", "agent", "maxLength"): rules.DISPLAY_NAME_MAX_LENGTH,
    ("$defs", "expectation", "properties", "note", "maxLength"): (
        rules.EXPECTATION_NOTE_MAX_LENGTH
    ),
    ("$defs", "tool", "properties", "mcp_url", "maxLength"): rules.URL_MAX_LENGTH,
    ("$defs", "scenario", "properties", "name", "maxLength"): rules.SCENARIO_NAME_MAX_LENGTH,
    ("$defs", "scenario", "properties", "token_budget", "maximum"): rules.TOKEN_BUDGET_MAX,
    ("$defs", "step", "properties", "event", "maxLength"): rules.STEP_EVENT_MAX_LENGTH,
    **{
        ("$defs", "scenario", "properties", "session", "properties", field, "maxLength"): limit
        for field, limit in {
            "session_id": rules.SESSION_ID_MAX_LENGTH,
            "project_id": rules.PROJECT_ID_MAX_LENGTH,
            "project_number": rules.PROJECT_NUMBER_MAX_LENGTH,
            "location": rules.LOCATION_MAX_LENGTH,
            "now": rules.NOW_MAX_LENGTH,
        }.items()
    },
}

# (model, field, API input serializer or None, constant)
COLUMNS = [
    (AgentApp, "name", io.AppIn, rules.APP_NAME_MAX_LENGTH),
    (Variable, "name", None, rules.NAME_MAX_LENGTH),
    (Schema, "name", None, rules.NAME_MAX_LENGTH),
    (Tool, "name", None, rules.TOOL_NAME_MAX_LENGTH),
    (Tool, "mcp_url", io.ToolIn, rules.URL_MAX_LENGTH),
    (Agent, "display_name", io.AgentIn, rules.DISPLAY_NAME_MAX_LENGTH),
    (Scenario, "name", io.ScenarioIn, rules.SCENARIO_NAME_MAX_LENGTH),
    (Scenario, "session_id", io.ScenarioIn, rules.SESSION_ID_MAX_LENGTH),
    (Scenario, "project_id", io.ScenarioIn, rules.PROJECT_ID_MAX_LENGTH),
    (Scenario, "project_number", io.ScenarioIn, rules.PROJECT_NUMBER_MAX_LENGTH),
    (Scenario, "location", io.ScenarioIn, rules.LOCATION_MAX_LENGTH),
    (Scenario, "now", io.ScenarioIn, rules.NOW_MAX_LENGTH),
    (ScenarioStep, "event", None, rules.STEP_EVENT_MAX_LENGTH),
    (ScenarioStep, "tool", None, rules.TOOL_NAME_MAX_LENGTH),
    # The columns around an app: choices, who did it, jobs and live runs.
    (Variable, "type", None, rules.VARIABLE_TYPE_MAX_LENGTH),
    (Variable, "item_type", None, rules.VARIABLE_TYPE_MAX_LENGTH),
    (Tool, "kind", None, rules.TOOL_KIND_MAX_LENGTH),
    (Callback, "kind", None, rules.CALLBACK_KIND_MAX_LENGTH),
    (AppShare, "role", None, rules.SHARE_ROLE_MAX_LENGTH),
    (Scenario, "channel", None, rules.CHANNEL_MAX_LENGTH),
    (Scenario, "modality", None, rules.MODALITY_MAX_LENGTH),
    (ScenarioStep, "kind", None, rules.STEP_KIND_MAX_LENGTH),
    (ScenarioStep, "callback_kind", None, rules.CALLBACK_KIND_MAX_LENGTH),
    (ScenarioResult, "status", None, rules.RESULT_STATUS_MAX_LENGTH),
    (ScenarioResult, "ran_by_name", None, rules.USERNAME_MAX_LENGTH),
    (AuditEvent, "actor_name", None, rules.USERNAME_MAX_LENGTH),
    (AuditEvent, "action", None, rules.AUDIT_ACTION_MAX_LENGTH),
    (AuditEvent, "object_type", None, rules.AUDIT_OBJECT_TYPE_MAX_LENGTH),
    (UserSettings, "language", None, rules.LANGUAGE_CODE_MAX_LENGTH),
    (Job, "status", None, rules.JOB_STATUS_MAX_LENGTH),
    (Job, "current", None, rules.JOB_CURRENT_MAX_LENGTH),
    (Job, "worker", None, rules.WORKER_MAX_LENGTH),
    (Job, "task_id", None, rules.TASK_ID_MAX_LENGTH),
    (JobItem, "key", None, rules.JOB_ITEM_KEY_MAX_LENGTH),
    (ModelEndpoint, "name", None, rules.MODEL_NAME_MAX_LENGTH),
    (ModelEndpoint, "kind", None, rules.ENDPOINT_KIND_MAX_LENGTH),
    (ModelEndpoint, "model", None, rules.MODEL_ID_MAX_LENGTH),
    (ModelEndpoint, "project", None, rules.PROJECT_ID_MAX_LENGTH),
    (ModelEndpoint, "location", None, rules.LOCATION_MAX_LENGTH),
    (AppModelDefault, "model", None, rules.MODEL_NAME_MAX_LENGTH),
    (LiveRun, "model_name", None, rules.MODEL_NAME_MAX_LENGTH),
    (LiveRun, "mode", None, rules.LIVE_RUN_MODE_MAX_LENGTH),
    (LiveRun, "status", None, rules.RESULT_STATUS_MAX_LENGTH),
    (LiveRun, "error", None, rules.MODEL_ERROR_MAX_LENGTH),
    (LiveRun, "ran_by_name", None, rules.USERNAME_MAX_LENGTH),
    (LiveRun, "now", None, rules.NOW_MAX_LENGTH),
]

MODELS_DIR = Path(agents.models.__file__).resolve().parent


def _at(schema: dict, path: tuple[str, ...]):
    for key in path:
        schema = schema[key]
    return schema


def _bounds(node, path=()):
    """Every maxLength and maximum in the schema, by path."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("maxLength", "maximum"):
                yield (*path, key), value
            else:
                yield from _bounds(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _bounds(value, (*path, str(index)))


@pytest.mark.parametrize("path", SCHEMA_LIMITS, ids=lambda p: ".".join(p[1:]))
def test_the_native_schema_bounds_are_the_rule_sets(path):
    assert _at(NATIVE_SCHEMA, path) == SCHEMA_LIMITS[path], ".".join(path)


def test_every_bound_of_the_native_schema_is_a_constant_of_the_rule_set():
    """A length written into the schema by hand (not from agents.core.rules) fails here."""
    unlisted = {p: v for p, v in _bounds(NATIVE_SCHEMA) if p not in SCHEMA_LIMITS}
    assert not unlisted, f"bounds not taken from agents.core.rules: {unlisted}"


@pytest.mark.parametrize(
    ("model", "field", "serializer", "limit"),
    COLUMNS,
    ids=[f"{m.__name__}.{f}" for m, f, _, _ in COLUMNS],
)
def test_models_and_serializers_take_their_lengths_from_the_rule_set(
    model, field, serializer, limit
):
    assert model._meta.get_field(field).max_length == limit
    if serializer is not None:
        assert serializer().fields[field].max_length == limit


def _literal_lengths(path: Path) -> list[str]:
    """`max_length=<a number>` in the source: a length not taken from the rule set."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        literal = isinstance(node, ast.keyword) and isinstance(node.value, ast.Constant)
        if literal and node.arg == "max_length":
            found.append(f"{path.name}:{node.value.lineno} max_length={node.value.value}")
    return found


def test_no_model_writes_a_length_of_its_own():
    """Every column's length is a named limit of agents/core/rules.py."""
    literals = [hit for path in sorted(MODELS_DIR.glob("*.py")) for hit in _literal_lengths(path)]
    assert literals == []


def test_every_choice_column_holds_its_longest_choice():
    for model in apps.get_app_config("agents").get_models():
        for field in model._meta.concrete_fields:
            if field.choices and field.max_length:
                longest = max(len(str(value)) for value, _ in field.flatchoices)
                assert longest <= field.max_length, f"{model.__name__}.{field.name}"


def test_the_token_budget_limit_is_one_everywhere():
    assert io.ScenarioIn().fields["token_budget"].max_value == rules.TOKEN_BUDGET_MAX
    assert io.ScenarioPatchIn().fields["token_budget"].max_value == rules.TOKEN_BUDGET_MAX
    column = Scenario._meta.get_field("token_budget")
    _, high = connection.ops.integer_field_range(column.get_internal_type())
    assert high is None or high >= rules.TOKEN_BUDGET_MAX  # the column holds every budget
    assert rules.token_budget_problems(rules.TOKEN_BUDGET_MAX) == []
    (too_large,) = rules.token_budget_problems(rules.TOKEN_BUDGET_MAX + 1)
    assert (too_large.code, too_large.field) == ("SC009", "token_budget")
    assert str(rules.TOKEN_BUDGET_MAX) in too_large.message


# ---------------------------------------------------------------- an imported app saves


def _with_budget(app, budget: int) -> bytes:
    doc = exchange.app_export_native(app)
    scenario = doc["app"]["agents"][0]["scenarios"][0]
    scenario["token_budget"] = budget
    scenario["session"]["session_id"] = "s" * rules.SESSION_ID_MAX_LENGTH
    return dumps_native(doc).encode()


@pytest.mark.django_db
def test_an_imported_app_with_a_large_budget_saves_unchanged_through_the_api(user, shop):
    """The import accepts any budget the rule set does (up to TOKEN_BUDGET_MAX): the API
    must take the same scenario back unchanged (it used to refuse over 10,000,000)."""
    assert shop.agents.get(is_root=True).scenarios.exists()
    budget = rules.TOKEN_BUDGET_MAX
    imported, _, _ = exchange.app_import_file(
        owner=user, data=_with_budget(shop, budget), filename="big.json"
    )
    scenario = Scenario.objects.filter(agent__app=imported).order_by("pk").first()
    assert scenario.token_budget == budget
    api = APIClient()
    api.force_login(user)
    url = f"/api/apps/{imported.pk}/agents/{scenario.agent_id}/scenarios/{scenario.pk}/"
    read = api.get(url).json()
    writable = set(io.ScenarioPatchIn().fields) - {"version"}
    body = {field: read[field] for field in writable if field in read}
    response = api.patch(url, {**body, "version": read["version"]}, format="json")
    assert response.status_code == 200, response.json()
    again = response.json()
    assert again["token_budget"] == budget
    assert {f: again[f] for f in body} == body


@pytest.mark.django_db
def test_a_budget_over_the_limit_is_refused_by_the_import_and_the_api_alike(user, shop):
    with pytest.raises(exchange.ImportRefused) as refused:
        exchange.app_import_file(
            owner=user, data=_with_budget(shop, rules.TOKEN_BUDGET_MAX + 1), filename="x.json"
        )
    assert any("token_budget" in (d.field or "") for d in refused.value.diagnostics)
    scenario = Scenario.objects.filter(agent__app=shop).first()
    api = APIClient()
    api.force_login(user)
    url = f"/api/apps/{shop.pk}/agents/{scenario.agent_id}/scenarios/{scenario.pk}/"
    response = api.patch(url, {"token_budget": rules.TOKEN_BUDGET_MAX + 1}, format="json")
    assert response.status_code == 400
    assert {d["field"] for d in response.json()["diagnostics"]} == {"token_budget"}
