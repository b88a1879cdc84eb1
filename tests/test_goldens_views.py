"""The designer's goldens: badges and diffs in the conversation, and "Run all"."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agents import services
from agents.demo import ADD_TO_CART_CODE
from agents.models import Job, ScenarioResult, Tool

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


def _run_all(client, app, run_jobs) -> str:
    """Press Run all, let a worker run the job, and read the fragment the page polls."""
    html = client.post(reverse("app-run-all", args=[app.pk]), HTTP_HX_REQUEST="true").content
    job = Job.objects.filter(app=app).latest("created_at")
    assert f'hx-get="{reverse("app-run-all-job", args=[app.pk, job.pk])}"' in html.decode()
    run_jobs()
    url = reverse("app-run-all-job", args=[app.pk, job.pk])
    return client.get(url, HTTP_HX_REQUEST="true").content.decode()


def test_run_all_answers_at_once_with_a_progress_bar_and_a_cancel_button(signed_in, shop):
    html = signed_in.post(reverse("app-run-all", args=[shop.pk]), HTTP_HX_REQUEST="true")
    text = html.content.decode()
    assert text.lstrip().startswith('<section id="run-all"')
    assert "<progress" in text and "Queued…" in text and ">Cancel</button>" in text
    assert 'hx-trigger="load delay:500ms"' in text
    assert not ScenarioResult.objects.exists()  # nothing ran in the request


def test_run_all_summarises_and_links_to_the_failing_steps(signed_in, user, shop, run_jobs):
    html = _run_all(signed_in, shop, run_jobs)
    assert html.lstrip().startswith('<section id="run-all"')
    assert "1 passed" in html and "0 failed" in html
    assert "hx-get" not in html  # finished: the fragment stops polling
    _break(shop, user)
    html = _run_all(signed_in, shop, run_jobs)
    assert "1 failed" in html
    agent = shop.agents.get()
    scenario = agent.scenarios.get()
    link = f"?agent={agent.pk}&amp;scenario={scenario.pk}#expect-step-3"
    assert link in html and "[Check_Cart_Total]" in html
    assert ScenarioResult.objects.get(scenario=scenario).ran_by == user
    page = signed_in.post(reverse("app-run-all", args=[shop.pk]))  # without JavaScript
    assert page.status_code == 200 and "<progress" in page.content.decode()


def test_cancel_in_the_page_stops_the_queued_run(signed_in, shop, run_jobs):
    signed_in.post(reverse("app-run-all", args=[shop.pk]), HTTP_HX_REQUEST="true")
    job = Job.objects.get(parent=None)
    url = reverse("app-run-all-cancel", args=[shop.pk, job.pk])
    html = signed_in.post(url, HTTP_HX_REQUEST="true").content.decode()
    assert "Cancelled after 0 of 0." in html and "hx-get" not in html
    run_jobs()
    assert not ScenarioResult.objects.exists()


def test_a_second_run_all_supersedes_the_unfinished_one(signed_in, shop):
    url = reverse("app-run-all", args=[shop.pk])
    signed_in.post(url, HTTP_HX_REQUEST="true")
    signed_in.post(url, HTTP_HX_REQUEST="true")
    assert sorted(Job.objects.values_list("status", flat=True)) == ["cancelled", "queued"]


def test_another_users_job_is_not_shown(client, other_user, signed_in, shop):
    signed_in.post(reverse("app-run-all", args=[shop.pk]), HTTP_HX_REQUEST="true")
    services.app_share(app=shop, user=other_user, role="viewer")
    client.force_login(other_user)
    job = Job.objects.get(parent=None)
    assert client.get(reverse("app-run-all-job", args=[shop.pk, job.pk])).status_code == 404


def test_run_all_is_refused_to_strangers(client, other_user, shop):
    client.force_login(other_user)
    assert client.post(reverse("app-run-all", args=[shop.pk])).status_code == 404


def test_back_on_the_designer_page_a_running_run_all_shows_its_progress(signed_in, shop, run_jobs):
    signed_in.post(reverse("app-run-all", args=[shop.pk]), HTTP_HX_REQUEST="true")
    page = signed_in.get(reverse("app-designer", args=[shop.pk])).content.decode()
    assert "<progress" in page and "Queued…" in page
    run_jobs()
    page = signed_in.get(reverse("app-designer", args=[shop.pk])).content.decode()
    assert "<progress" not in page  # finished: the page is as before Run all
