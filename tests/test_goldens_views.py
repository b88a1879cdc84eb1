"""The designer's goldens: badges and diffs in the conversation, and "Run all"."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agents import services
from agents.demo import ADD_TO_CART_CODE
from agents.models import ScenarioResult, Tool

pytestmark = pytest.mark.django_db


def _break(shop, user) -> None:
    tool = Tool.objects.get(app=shop, name="AddToCart")
    services.tool_update(tool=tool, actor=user, python_code=ADD_TO_CART_CODE.replace("19.5", "21"))


def test_the_conversation_shows_each_expectation_at_its_step(signed_in, user, shop):
    agent = shop.agents.get()
    url = reverse("agent-simulate", args=[shop.pk, agent.pk])
    html = signed_in.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert 'id="golden-summary"' in html and "2 passed" in html
    assert 'class="event event-expect expect-passed" id="expect-step-2"' in html
    assert 'id="expect-step-3"' in html
    # The badge sits after the tool's events and before the agent's message.
    assert html.index("event-tool_response") < html.index('id="expect-step-2"')
    assert html.index('id="expect-step-3"') < html.index("event event-agent")
    _break(shop, user)
    html = signed_in.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert 'class="event event-expect expect-failed" id="expect-step-3"' in html
    assert "cart_total: expected 39, got 42" in html
    assert (
        '<pre class="mono expected" tabindex="0">{\n  &quot;cart_total&quot;: 39\n}</pre>' in html
    )
    assert '<pre class="mono actual" tabindex="0">{\n  &quot;cart_total&quot;: 42\n}</pre>' in html


def test_run_all_summarises_and_links_to_the_failing_steps(signed_in, user, shop):
    url = reverse("app-run-all", args=[shop.pk])
    html = signed_in.post(url, HTTP_HX_REQUEST="true").content.decode()
    assert html.lstrip().startswith('<section id="run-all"')
    assert "1 passed" in html and "0 failed" in html
    _break(shop, user)
    html = signed_in.post(url, HTTP_HX_REQUEST="true").content.decode()
    assert "1 failed" in html
    agent = shop.agents.get()
    scenario = agent.scenarios.get()
    link = f"?agent={agent.pk}&amp;scenario={scenario.pk}#expect-step-3"
    assert link in html and "[Check_Cart_Total]" in html
    assert ScenarioResult.objects.get(scenario=scenario).ran_by == user
    page = signed_in.post(url)  # without JavaScript: the designer page with the summary
    assert page.status_code == 200 and "1 failed" in page.content.decode()


def test_run_all_is_refused_to_strangers(client, other_user, shop):
    client.force_login(other_user)
    assert client.post(reverse("app-run-all", args=[shop.pk])).status_code == 404
