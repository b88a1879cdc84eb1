"""Issue 21, item 3: a live Run all (the API's evaluate and the designer's Run all) takes
a judge for the rubrics of the CX scenario evaluations, as `manage.py evaluate --judge`
does. Two real model servers on loopback (tests/llm_server.py): the run's and the judge's;
the judge's request must reach the judge's endpoint, never the run's."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from agents.models import AgentApp, Job
from tests.llm_server import ModelServer, configure_models, openai_call, openai_text
from tests.test_live_api_and_secrets import SIMULATED
from tests.test_live_runs import bank_app  # noqa: F401

pytestmark = pytest.mark.django_db
HX = {"HX-Request": "true"}
PATH = "evaluations/Simulated/Simulated.json"
VERDICT = {"rubrics": [{"index": 1, "passed": True, "reason": "It said 1,250 EUR."}]}


@pytest.fixture
def servers(monkeypatch):
    """Two configured models: `loop` (the run's) and `referee` (a judge), each its server."""
    run, judge = ModelServer(), ModelServer()
    configure_models(
        monkeypatch,
        {
            "loop": {"server": run, "model": "gpt-4o-mini"},
            "referee": {"server": judge, "model": "judge-model"},
        },
    )
    yield run, judge
    run.close()
    judge.close()


@pytest.fixture
def simulated_app(bank_app):  # noqa: F811
    """The bank app with one golden and one CX evaluation of the scenario kind."""
    app = bank_app[0]
    AgentApp.objects.filter(pk=app.pk).update(cx={"files": {PATH: json.dumps(SIMULATED)}})
    return app


def script_run(run: ModelServer) -> None:
    run.script(
        openai_call("LookupBalance", {}),  # the golden "Balance live"
        openai_text("It is 1,250 EUR."),
        openai_text("What is my current account balance?"),  # the simulated user
        openai_call("LookupBalance", {}),  # the agent
        openai_text("Your balance is 1,250 EUR."),
        openai_text("END"),  # the user is done
    )


def assert_judged_by_the_judge(job: Job, run: ModelServer, judge: ModelServer) -> None:
    assert job.status == "succeeded", job.error
    assert (job.params["model"], job.params["judge"]) == ("loop", "referee")
    # Six requests to the run's model (the golden's two, the user's two, the agent's two);
    # the one judge request to the judge's endpoint, with the judge's model and the rubric.
    assert len(run.seen) == 6
    assert not any("judge a conversation" in json.dumps(s.body) for s in run.seen)
    (asked,) = judge.seen
    assert asked.path == "/v1/chat/completions" and asked.body["model"] == "judge-model"
    assert "The agent tells the user the balance." in json.dumps(asked.body)
    simulated = job.result["scenarios"][1]
    assert simulated["kind"] == "simulated_user" and simulated["status"] == "passed"
    rubric = next(r for r in simulated["results"] if r["kind"] == "rubric")
    assert rubric["message"] == "It said 1,250 EUR."


def test_the_api_evaluate_judges_with_the_judge_model(signed_in, servers, simulated_app, run_jobs):
    run, judge = servers
    script_run(run)
    judge.script(openai_text(json.dumps(VERDICT)))
    response = signed_in.post(
        f"/api/apps/{simulated_app.pk}/evaluate",
        {"model": "loop", "judge": "referee"},
        content_type="application/json",
    )
    assert response.status_code == 202
    assert run_jobs() == 1
    assert_judged_by_the_judge(Job.objects.get(kind="evaluate_app"), run, judge)


def test_without_a_judge_the_runs_model_judges(signed_in, servers, simulated_app, run_jobs):
    run, judge = servers
    script_run(run)
    run.script(openai_text(json.dumps(VERDICT)))
    url = f"/api/apps/{simulated_app.pk}/evaluate"
    response = signed_in.post(url, {"model": "loop"}, content_type="application/json")
    assert response.status_code == 202 and run_jobs() == 1
    assert Job.objects.get(parent=None).status == "succeeded"
    assert len(run.seen) == 7 and judge.seen == []


def test_an_unknown_judge_is_a_400_naming_the_field_and_the_configured_names(
    signed_in, servers, simulated_app
):
    url = f"/api/apps/{simulated_app.pk}/evaluate"
    bad = signed_in.post(url, {"model": "loop", "judge": "gpt-9"}, content_type="application/json")
    assert bad.status_code == 400
    (diagnostic,) = bad.json()["diagnostics"]
    assert diagnostic["field"] == "judge"
    assert diagnostic["message"] == "No judge model named 'gpt-9'. Configured: loop, referee."
    # A judge without a model: a scripted run judges nothing.
    alone = signed_in.post(url, {"judge": "referee"}, content_type="application/json")
    assert alone.status_code == 400
    assert alone.json()["diagnostics"][0]["field"] == "judge"
    assert "loop, referee" in alone.json()["detail"]
    assert not Job.objects.exists()


def test_the_designers_run_all_takes_the_judge_picker(signed_in, servers, simulated_app, run_jobs):
    run, judge = servers
    agent = simulated_app.agents.get(is_root=True)
    panel = signed_in.get(reverse("agent-simulate", args=[simulated_app.pk, agent.pk]), headers=HX)
    html = panel.content.decode()
    # The judge picker sits beside the model picker, "the run's model" first; Run all
    # sends both.
    assert html.index('id="model-picker"') < html.index('id="judge-picker"')
    assert '<option value="">Judge: the run\'s model</option>' in html
    assert '<option value="referee">Judge: referee</option>' in html
    designer = signed_in.get(reverse("app-designer", args=[simulated_app.pk])).content.decode()
    assert 'hx-include="#model-picker, #judge-picker"' in designer
    script_run(run)
    judge.script(openai_text(json.dumps(VERDICT)))
    url = reverse("app-run-all", args=[simulated_app.pk])
    page = signed_in.post(url, {"model": "loop", "judge": "referee"}, headers=HX)
    assert page.status_code == 200
    text = page.content.decode()
    assert "live · loop" in text and "judge · referee" in text
    assert run_jobs() == 1
    assert_judged_by_the_judge(Job.objects.get(kind="evaluate_app"), run, judge)
    unknown = signed_in.post(url, {"model": "loop", "judge": "gpt-9"}, headers=HX)
    assert unknown.status_code == 400
    assert unknown.content.decode() == "No judge model named 'gpt-9'. Configured: loop, referee."
    # Scripted (no model): the picker's value is not sent with the job.
    signed_in.post(url, {"model": "", "judge": "referee"}, headers=HX)
    scripted = Job.objects.order_by("-created_at").first()
    assert "model" not in scripted.params and "judge" not in scripted.params
