"""The API's actions read what the designer's preview reads: the cached spec, not the app.

Compile, lint and simulate take the app from the spec cached by revision
(`selectors.app_spec`); however large the app, a warm call reads a fixed few rows.
"""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from agents import services

pytestmark = pytest.mark.django_db

# The session, the user, the agent with its app; then one count per rate-limit scope the
# request is counted in (server/ratelimit.py keeps them in the database without Redis).
COMPILE_QUERIES = 3 + 2


@pytest.fixture
def api(user):
    client = APIClient()
    client.force_login(user)
    return client


def _grow(app, count: int) -> None:
    customer = app.schemas.get()
    for i in range(count):
        services.variable_create(
            app=app, name=f"extra_{i}", type="object", schema=customer, description="x"
        )
        services.tool_create(app=app, name=f"Extra{i}")


@pytest.mark.parametrize("extra", [0, 30])
def test_the_compile_api_reads_a_fixed_few_rows_from_the_cached_spec(
    api, shop, extra, django_assert_max_num_queries
):
    _grow(shop, extra)
    agent = shop.agents.get(is_root=True)
    path = f"/api/apps/{shop.pk}/agents/{agent.pk}/compile"
    body = {"values": {}, "channel": "web", "modality": "text"}
    assert api.post(path, body, format="json").status_code == 200  # warms the cache
    with django_assert_max_num_queries(COMPILE_QUERIES):
        response = api.post(path, body, format="json")
    assert response.status_code == 200
    assert response.json()["text"]
