"""Bad input never crashes a page: every designer endpoint answers < 500 to garbage."""

from __future__ import annotations

import pytest
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.django_db

FIELDS = [
    "name",
    "type",
    "item_type",
    "schema",
    "default",
    "description",
    "version",
    "json_schema",
    "kind",
    "python_code",
    "openapi_spec",
    "mcp_url",
    "mcp_headers",
    "mock_state",
    "mock_response",
    "display_name",
    "tools",
    "is_root",
    "instructions",
    "base_hash",
    "channel",
    "modality",
    "values_json",
    "value__customer",
    "value__cart_total",
    "steps_script",
    "session_values",
    "token_budget",
    "session_id",
    "scenario",
    "use_mocks",
    "agent",
    "update_references",
    "form_uid",
]
junk = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        [
            "",
            "0",
            "-1",
            "99999999999999999999",
            "null",
            "[]",
            "{}",
            '{"a":',
            "list",
            "object",
            "number",
            "boolean",
            "python",
            "mcp",
            "openapi",
            "yes",
            "on",
            "{{x}}",
            "{% if %}",
            "tool: X [",
            "user:",
            "\x00",
            "9" * 400,
        ]
    ),
)
form_data = st.dictionaries(st.sampled_from(FIELDS), junk, max_size=12)


# What each endpoint may answer to junk. Forms: saved (302; for htmx 200 with the fragment,
# or 204 with HX-Redirect when the page changes) or refused with their errors (400). Reads that compute from the input (the preview, the
# simulation, a schema's example) answer 200 with their problems shown; sharing redirects
# back with a message; the instructions also answer 409 when the junk's revision is stale.
ANSWERS = {"preview": {200}, "simulate": {200}, "example": {200}, "share": {302}}
ANSWERS["instructions"] = {200, 302, 409}
FORM = {200, 204, 302, 400}


def answers(path: str) -> set[int]:
    return ANSWERS.get(path.rstrip("/").rsplit("/", 1)[-1], FORM)


def _endpoints(app):
    # Earlier examples may add agents (even a new root): take the one with the scenarios.
    agent = app.agents.filter(scenarios__isnull=False).order_by("pk").first()
    variable = app.variables.order_by("pk").first()
    schema = app.schemas.order_by("pk").first()
    tool = app.tools.order_by("pk").first()
    scenario = agent.scenarios.order_by("pk").first()
    return [
        reverse("variable-new", args=[app.pk]),
        reverse("variable-edit", args=[app.pk, variable.pk]),
        reverse("schema-new", args=[app.pk]),
        reverse("schema-edit", args=[app.pk, schema.pk]),
        reverse("schema-example", args=[app.pk]),
        reverse("tool-new", args=[app.pk]),
        reverse("tool-edit", args=[app.pk, tool.pk]),
        reverse("agent-new", args=[app.pk]),
        reverse("agent-edit", args=[app.pk, agent.pk]),
        reverse("agent-preview", args=[app.pk, agent.pk]),
        reverse("agent-simulate", args=[app.pk, agent.pk]),
        reverse("agent-instructions", args=[app.pk, agent.pk]),
        reverse("scenario-new", args=[app.pk, agent.pk]),
        reverse("scenario-edit", args=[app.pk, agent.pk, scenario.pk]),
        reverse("callback-new", args=[app.pk, agent.pk]),
        reverse("app-share", args=[app.pk]),
        reverse("app-create"),
    ]


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=form_data, htmx=st.booleans())
def test_posting_garbage_never_crashes(signed_in, shop, data, htmx):
    headers = {"HX-Request": "true"} if htmx else {}
    for path in _endpoints(shop):
        response = signed_in.post(path, data, headers=headers)
        assert response.status_code in answers(path), (path, data, response.status_code)


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=form_data)
def test_get_with_garbage_parameters_never_crashes(signed_in, shop, data):
    paths = [
        reverse("app-designer", args=[shop.pk]),
        reverse("variable-default-field", args=[shop.pk]),
    ]
    for path in paths + _endpoints(shop)[:2]:
        response = signed_in.get(path, data, headers={"HX-Request": "true"})
        assert response.status_code in {200, 400}, (path, data, response.status_code)
