"""The designer page's cached panes (designer/views/page.py): the same page from the cache,
in fewer queries, with the reader's own CSRF token and role, and a service write shows."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from agents import services

pytestmark = pytest.mark.django_db
TOKEN = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


@pytest.fixture(autouse=True)
def _pane_cache_on(settings):
    settings.DESIGNER_PANE_CACHE_SECONDS = 3600


def _get(client, path):
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(path)
    assert response.status_code == 200
    return response.content.decode(), len(ctx.captured_queries)


def _without_tokens(html: str) -> str:
    html = TOKEN.sub('name="csrfmiddlewaretoken" value="-"', html)
    return re.sub(r'"X-CSRFToken": "[^"]+"', '"X-CSRFToken": "-"', html)


def test_a_second_view_is_the_same_page_from_the_cache_in_fewer_queries(signed_in, shop):
    path = reverse("app-designer", args=[shop.pk])
    first, first_queries = _get(signed_in, path)
    second, second_queries = _get(signed_in, path)
    assert _without_tokens(first) == _without_tokens(second)
    assert second_queries < first_queries
    assert "statecraft-csrf-slot" not in second
    tokens = TOKEN.findall(second)
    assert len(tokens) > 3  # the delete forms of the side pane and the instructions form
    assert all(len(token) == 64 for token in tokens)


def test_each_reader_gets_their_own_token_and_their_role(signed_in, shop, other_user):
    path = reverse("app-designer", args=[shop.pk])
    owner_page, _ = _get(signed_in, path)
    services.app_share(app=shop, user=other_user, role="viewer", actor=shop.owner)
    viewer = Client()
    viewer.force_login(other_user)
    viewer_page, _ = _get(viewer, path)
    assert reverse("variable-new", args=[shop.pk]) in owner_page
    assert reverse("variable-new", args=[shop.pk]) not in viewer_page
    viewer_again, _ = _get(viewer, path)
    assert _without_tokens(viewer_again) == _without_tokens(viewer_page)


def test_a_service_write_shows_on_the_next_view(signed_in, shop, user):
    path = reverse("app-designer", args=[shop.pk])
    before, _ = _get(signed_in, path)
    assert "fresh_variable" not in before
    services.variable_create(actor=user, app=shop, name="fresh_variable", type="text")
    after, _ = _get(signed_in, path)
    assert "fresh_variable" in after
