"""The Evaluations page and a run's matrix (issue 31), through the real URL conf."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from agents import services
from agents.models import EvaluationRun
from agents.services import evaluation

pytestmark = pytest.mark.django_db


@pytest.fixture
def client_for():
    def make(user) -> Client:
        client = Client()
        client.force_login(user)
        return client

    return make


def _runs(bank, user, run_jobs, count: int = 2) -> list[EvaluationRun]:
    for _ in range(count):
        evaluation.run_all_submit(app=bank, actor=user, repeat=2)
        run_jobs()
    return list(EvaluationRun.objects.filter(app=bank))


def test_the_history_draws_the_pass_rate_chart_and_each_goldens_strip(
    bank, user, run_jobs, client_for
):
    runs = _runs(bank, user, run_jobs)
    page = client_for(user).get(reverse("app-evaluations", args=[bank.pk]))
    text = page.content.decode()
    assert page.status_code == 200
    assert '<svg class="chart"' in text and text.count('<circle class="point"') == len(runs)
    assert "<polyline" in text  # two runs: a line between them
    golden = bank.agents.get().scenarios.first().name
    assert golden in text and text.count("mark mark-passed") >= len(runs)
    assert reverse("evaluation-run", args=[bank.pk, runs[0].pk]) in text


def test_a_runs_page_shows_its_matrix_and_exports_it(bank, user, run_jobs, client_for):
    (run,) = _runs(bank, user, run_jobs, 1)
    client = client_for(user)
    page = client.get(reverse("evaluation-run", args=[bank.pk, run.pk])).content.decode()
    assert 'class="table matrix-table"' in page and "offline@current" not in page
    assert page.count('class="mark mark-passed"') >= 2  # two repetitions of a golden
    csv = client.get(reverse("evaluation-run-export", args=[bank.pk, run.pk]), {"format": "csv"})
    assert csv["Content-Type"].startswith("text/csv") and b"golden,agent,scenario" in csv.content
    data = client.get(reverse("evaluation-run-export", args=[bank.pk, run.pk]), {"format": "json"})
    assert data.json()["repeat"] == 2


def test_a_runs_json_download_is_what_the_api_answers(bank, user, run_jobs, client_for):
    """The page's JSON is the API's (its dates were `2026-12-04 03:09:00+00:00` there, ISO
    in the API)."""
    (run,) = _runs(bank, user, run_jobs, 1)
    client = client_for(user)
    download = client.get(
        reverse("evaluation-run-export", args=[bank.pk, run.pk]), {"format": "json"}
    )
    api = client.get(reverse("api:evaluation-run-detail", args=[bank.pk, run.pk]))
    assert download.json() == api.json()


def test_an_experiment_with_a_wrong_repeat_names_the_field_and_keeps_the_form(
    bank, user, client_for, settings
):
    settings.EVALUATION_MAX_REPEAT = 4
    page = client_for(user).post(
        reverse("evaluation-start", args=[bank.pk]), {"repeat": "9", "threshold": "80"}
    )
    text = page.content.decode()
    assert page.status_code == 400 and "Repeat: a whole number from 1 to 4, not “9”." in text
    assert 'value="9"' in text and 'value="80"' in text  # what was typed is kept
    assert not EvaluationRun.objects.exists()


def test_a_wrong_repeat_and_threshold_are_refused_together_as_typed(bank, user, client_for):
    """The form asks for a percentage: its refusal speaks of one, quotes what was typed,
    and names both fields at once."""
    page = client_for(user).post(
        reverse("evaluation-start", args=[bank.pk]), {"repeat": "abc", "threshold": "150"}
    )
    text = page.content.decode()
    assert page.status_code == 400
    assert "Repeat: a whole number from 1 to 20, not “abc”." in text
    assert "Pass threshold: a percentage from 0 to 100, not “150”." in text
    assert not EvaluationRun.objects.exists()


def test_an_experiment_starts_and_opens_its_run(bank, user, client_for):
    response = client_for(user).post(
        reverse("evaluation-start", args=[bank.pk]),
        {"repeat": "3", "threshold": "100", "versions": [""]},
    )
    run = EvaluationRun.objects.get(app=bank)
    assert response.status_code == 302
    assert response["Location"] == reverse("evaluation-run", args=[bank.pk, run.pk])
    assert run.repeat == 3 and run.status == "queued"


def test_a_viewer_reads_the_history_but_cannot_start_one(
    bank, user, other_user, run_jobs, client_for
):
    _runs(bank, user, run_jobs, 1)
    services.app_share(app=bank, user=other_user, role="viewer", actor=user)
    viewer = client_for(other_user)
    page = viewer.get(reverse("app-evaluations", args=[bank.pk])).content.decode()
    assert '<svg class="chart"' in page and "New experiment" not in page
    refused = viewer.post(reverse("evaluation-start", args=[bank.pk]), {"repeat": "1"})
    assert refused.status_code in (403, 404)


def test_a_stranger_reads_404(bank, user, other_user, run_jobs, client_for):
    (run,) = _runs(bank, user, run_jobs, 1)
    stranger = client_for(other_user)
    assert stranger.get(reverse("evaluation-run", args=[bank.pk, run.pk])).status_code == 404
    assert stranger.get(reverse("app-evaluations", args=[bank.pk])).status_code == 404


def test_a_run_going_is_cancelled_from_its_page_by_who_started_it(
    bank, user, other_user, client_for
):
    """The run's page has a Cancel button while it goes: it ends the run (kept, with what
    was done); an editor who did not start it gets 404 and the run goes on."""
    evaluation.run_all_submit(app=bank, actor=user, repeat=2)
    run = EvaluationRun.objects.get(app=bank)
    page = reverse("evaluation-run", args=[bank.pk, run.pk])
    cancel = reverse("evaluation-run-cancel", args=[bank.pk, run.pk])
    services.app_share(app=bank, user=other_user, role="editor", actor=user)
    editor = client_for(other_user)
    assert cancel not in editor.get(page).content.decode()
    assert editor.post(cancel).status_code == 404
    owner = client_for(user)
    assert cancel in owner.get(page).content.decode()
    response = owner.post(cancel)
    assert response.status_code == 302 and response["Location"] == page
    run.refresh_from_db()
    assert run.status == "cancelled"


def test_goldens_no_repetition_judged_say_why_and_are_counted_apart(user, run_jobs, client_for):
    """A golden that needs a model (scripted, the calls that decide it left to the model)
    says so in its cell, and the column's totals count it apart from passed and failed."""
    from agents.core.cx.app import zip_bytes
    from agents.services import exchange
    from tests.sandbox.test_cx_runtime_fidelity import ROUTED, UNROUTED, WRONG, routing_files

    app, _, _ = exchange.app_import_file(
        owner=user, data=zip_bytes(routing_files(ROUTED, UNROUTED, WRONG))
    )
    evaluation.run_all_submit(app=app, actor=user)
    run_jobs()
    run = EvaluationRun.objects.get(app=app)
    text = client_for(user).get(reverse("evaluation-run", args=[app.pk, run.pk])).content.decode()
    assert '<span class="small muted">needs a model</span>' in text
    assert "1 passed · 1 failed · 0 flaky" in text and "1 golden not judged" in text


def test_a_label_starting_with_a_digit_is_not_read_as_a_version_number(
    bank, user, run_jobs, client_for
):
    """A column of the label `2fa-fix` is `2fa-fix` (it read `v2fa-fix`); of version 1, `v1`."""
    from agents.services import versions

    first = versions.version_create(app=bank, name="first", user=user)
    versions.label_set(app=bank, version=first, name="2fa-fix", user=user)
    evaluation.run_all_submit(app=bank, actor=user, versions=["2fa-fix", "1"])
    run_jobs()
    run = EvaluationRun.objects.get(app=bank)
    text = client_for(user).get(reverse("evaluation-run", args=[bank.pk, run.pk])).content.decode()
    assert ">scripted · 2fa-fix</option>" in text and "v2fa-fix" not in text
    assert '<div class="muted small">v1</div>' in text
