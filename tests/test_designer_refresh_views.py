"""The designer's refresh fragments (issue 29, item 6), through the real URL conf: the usage
counts of the rows shown and the agent's "Tools:" line, read with the page's rights."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from agents import services
from agents.models import ShareRole

pytestmark = pytest.mark.django_db
HX = {"HX-Request": "true"}


def _counts(client: Client, app, *shown) -> object:
    return client.get(
        reverse("variable-usage-counts", args=[app.pk]),
        {"shown": [str(v) for v in shown]},
        headers=HX,
    )


def test_the_counts_are_out_of_band_swaps_of_the_rows_shown_only(signed_in, shop):
    rules, customer = (shop.variables.get(name=n) for n in ("business_rules", "customer"))
    body = _counts(signed_in, shop, rules.pk, "junk", 0).content.decode()
    assert body.count('hx-swap-oob="innerHTML"') == 1
    assert f'id="usage-count-{rules.pk}"' in body and "used 1\u00d7" in body
    assert f"usage-count-{customer.pk}" not in body


def test_the_page_asks_for_the_counts_of_its_rows_on_every_change(signed_in, shop):
    page = signed_in.get(reverse("app-designer", args=[shop.pk])).content.decode()
    counts_url = reverse("variable-usage-counts", args=[shop.pk])
    assert f'hx-get="{counts_url}" hx-trigger="app-changed from:body"' in page
    for variable in shop.variables.all():
        assert f'<input type="hidden" name="shown" value="{variable.pk}">' in page
    root = shop.agents.get(is_root=True)
    tools_url = reverse("agent-tools-line", args=[shop.pk, root.pk])
    assert f'hx-get="{tools_url}" hx-trigger="app-changed from:body"' in page


def test_the_tools_line_is_the_agents(signed_in, shop):
    root = shop.agents.get(is_root=True)
    response = signed_in.get(reverse("agent-tools-line", args=[shop.pk, root.pk]), headers=HX)
    body = response.content.decode()
    assert body.lstrip().startswith('<p id="agent-tools"') and "AddToCart" in body


@pytest.mark.parametrize("fragment", ["counts", "tools"])
def test_the_fragments_have_the_pages_rights(client, user, other_user, shop, fragment):
    """A stranger gets the page's 404 (nothing of the app), a viewer reads them; signed
    out, the sign-in page."""
    root = shop.agents.get(is_root=True)
    path = (
        reverse("variable-usage-counts", args=[shop.pk])
        if fragment == "counts"
        else reverse("agent-tools-line", args=[shop.pk, root.pk])
    )
    shown = {"shown": [str(v.pk) for v in shop.variables.all()]}
    assert client.get(path, shown, headers=HX).status_code == 302
    client.force_login(other_user)
    stranger = client.get(path, shown, headers=HX)
    page = client.get(reverse("app-designer", args=[shop.pk]))
    assert stranger.status_code == page.status_code == 404
    assert "business_rules" not in stranger.content.decode()
    services.app_share(app=shop, user=other_user, role=ShareRole.VIEWER)
    viewer = client.get(path, shown, headers=HX)
    assert viewer.status_code == 200
    assert ("used 1\u00d7" if fragment == "counts" else "AddToCart") in viewer.content.decode()


def test_an_agent_of_another_app_is_not_found(signed_in, shop, bank):
    other = bank.agents.first()
    response = signed_in.get(reverse("agent-tools-line", args=[shop.pk, other.pk]), headers=HX)
    assert response.status_code == 404


def test_the_example_value_for_htmx_is_the_box_that_shows_it(signed_in, shop):
    schema = '{"type": "object", "properties": {"n": {"type": "integer"}}}'
    path = reverse("schema-example", args=[shop.pk])
    box = signed_in.post(path, {"json_schema": schema}, headers=HX).content.decode()
    assert box.startswith('<div class="example-box">')  # shown: no hidden attribute
    assert _shown(box) == "{\n  &quot;n&quot;: 0\n}"
    assert signed_in.post(path, {"json_schema": schema}).json() == {"example": {"n": 0}}
    error = _shown(signed_in.post(path, {"json_schema": "{"}, headers=HX).content.decode())
    assert error == signed_in.post(path, {"json_schema": "{"}).json()["error"] != ""


def _shown(box: str) -> str:
    return re.search(r"<pre[^>]*>(.*)</pre>", box, re.S).group(1)
