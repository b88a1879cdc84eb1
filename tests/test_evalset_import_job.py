"""The ADK evalset import past a size (issue 32, item 10): a large evalset is a job on the
jobs queue (202 with the job, as the app import's), the job creates the scenarios; an
evalset over the case limit (IMPORT_MAX_OBJECTS) is refused at once, naming the field and
the limit, and creates nothing. Through the URL conf, jobs run as a worker runs them."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.test import APIClient

from agents import services
from agents.models import AppShare, Job, Scenario

pytestmark = pytest.mark.django_db


def _evalset(cases: int) -> bytes:
    return json.dumps(
        {
            "eval_set_id": "big",
            "eval_cases": [
                {
                    "eval_id": f"case {n}",
                    "conversation": [{"user_content": {"parts": [{"text": f"hello {n}"}]}}],
                }
                for n in range(cases)
            ],
        }
    ).encode()


@pytest.fixture
def api(user):
    client = APIClient()
    client.force_login(user)
    return client


def _upload(data: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile("big.evalset.json", data, content_type="application/json")


def _scenarios(app) -> int:
    return Scenario.objects.filter(agent__app=app).count()


def test_a_large_evalset_answers_202_and_its_job_creates_the_scenarios(
    api, bank, settings, run_jobs
):
    settings.IMPORT_EVALSET_JOB_MIN_CASES = 5
    before = _scenarios(bank)
    url = reverse("api:app-import-evalset", args=[bank.pk])
    response = api.post(url, {"file": _upload(_evalset(6))}, format="multipart")
    assert response.status_code == 202, response.content
    assert _scenarios(bank) == before  # nothing written in the request
    job = Job.objects.get(kind="import_evalset")
    assert response["Location"].endswith(reverse("api:job-detail", args=[job.pk]))
    run_jobs()
    body = api.get(response["Location"]).json()
    assert body["status"] == "succeeded", body
    assert [s["name"] for s in body["result"]["scenarios"]] == [f"case {n}" for n in range(6)]
    assert _scenarios(bank) == before + 6
    assert "document" not in Job.objects.get(pk=job.pk).params  # the upload is not kept


def test_a_small_evalset_is_imported_in_the_request(api, bank):
    before = _scenarios(bank)
    url = reverse("api:app-import-evalset", args=[bank.pk])
    response = api.post(url, {"file": _upload(_evalset(2))}, format="multipart")
    assert response.status_code == 201, response.content
    assert len(response.json()["scenarios"]) == 2 and _scenarios(bank) == before + 2
    assert not Job.objects.exists()


def test_an_evalset_over_the_case_limit_is_refused_naming_the_field_and_creates_nothing(
    api, bank, settings
):
    settings.IMPORT_MAX_OBJECTS = 10
    settings.IMPORT_EVALSET_JOB_MIN_CASES = 5  # it would be a job: refused before that
    before = _scenarios(bank)
    url = reverse("api:app-import-evalset", args=[bank.pk])
    response = api.post(url, {"file": _upload(_evalset(11))}, format="multipart")
    assert response.status_code == 400, response.content
    (problem,) = response.json()["diagnostics"]
    assert problem["field"] == "eval_cases"
    assert "11 eval cases" in problem["message"] and "IMPORT_MAX_OBJECTS" in problem["message"]
    assert "at most 10" in problem["message"]
    assert _scenarios(bank) == before and not Job.objects.exists()


def test_the_designer_follows_a_large_evalset_to_its_job_then_the_designer(
    signed_in, bank, settings, run_jobs
):
    settings.IMPORT_EVALSET_JOB_MIN_CASES = 5
    before = _scenarios(bank)
    response = signed_in.post(
        reverse("app-import-evalset", args=[bank.pk]), {"evalset": _upload(_evalset(5))}
    )
    job = Job.objects.get(kind="import_evalset")
    follow = reverse("app-import-evalset-job", args=[bank.pk, job.pk])
    assert (response.status_code, response["Location"]) == (302, follow)
    page = signed_in.get(follow)
    assert page.status_code == 200 and "big.evalset.json" in page.content.decode()
    run_jobs()
    done = signed_in.get(follow)
    assert (done.status_code, done["Location"]) == (302, reverse("app-designer", args=[bank.pk]))
    assert _scenarios(bank) == before + 5


def test_the_designer_refuses_an_evalset_over_the_case_limit_and_creates_nothing(
    signed_in, bank, settings
):
    settings.IMPORT_MAX_OBJECTS = 3
    before = _scenarios(bank)
    response = signed_in.post(
        reverse("app-import-evalset", args=[bank.pk]), {"evalset": _upload(_evalset(4))}
    )
    assert response.status_code == 400
    assert "IMPORT_MAX_OBJECTS" in response.content.decode()
    assert _scenarios(bank) == before and not Job.objects.exists()


def test_an_evalset_job_of_an_editor_whose_share_was_revoked_meanwhile_creates_nothing(
    bank, user, other_user, settings, run_jobs
):
    settings.IMPORT_EVALSET_JOB_MIN_CASES = 5
    services.app_share(app=bank, user=other_user, role="editor", actor=user)
    editor = APIClient()
    editor.force_login(other_user)
    url = reverse("api:app-import-evalset", args=[bank.pk])
    response = editor.post(url, {"file": _upload(_evalset(5))}, format="multipart")
    assert response.status_code == 202, response.content
    before = _scenarios(bank)
    services.app_unshare(app=bank, user=other_user, actor=user)
    run_jobs()
    job = Job.objects.get(kind="import_evalset")
    assert job.status in ("cancelled", "failed"), job.status  # unsharing cancels it
    assert _scenarios(bank) == before
    # And a job that a worker had already taken finds the right gone when it starts.
    services.app_share(app=bank, user=other_user, role="editor", actor=user)
    response = editor.post(url, {"file": _upload(_evalset(5))}, format="multipart")
    assert response.status_code == 202, response.content
    AppShare.objects.filter(app=bank, user=other_user).delete()  # as a race leaves it
    run_jobs()
    job = Job.objects.filter(kind="import_evalset").latest("created_at")
    assert job.status == "failed" and "no longer edit" in job.error
    assert _scenarios(bank) == before


def test_the_polled_fragment_of_an_evalset_job_moves_then_sends_the_page_on(
    signed_in, bank, settings, run_jobs
):
    settings.IMPORT_EVALSET_JOB_MIN_CASES = 5
    signed_in.post(reverse("app-import-evalset", args=[bank.pk]), {"evalset": _upload(_evalset(5))})
    job = Job.objects.get(kind="import_evalset")
    follow = reverse("app-import-evalset-job", args=[bank.pk, job.pk])
    fragment = signed_in.get(follow, headers={"HX-Request": "true"})
    assert fragment.status_code == 200
    text = fragment.content.decode()
    assert 'id="evalset-job"' in text and "hx-get" in text and "<html" not in text
    run_jobs()
    done = signed_in.get(follow, headers={"HX-Request": "true"})
    assert (done.status_code, done["HX-Redirect"]) == (204, follow)
