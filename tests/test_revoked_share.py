"""A user whose access to an app ends (issue 31, item 6): their queued jobs on the app are
cancelled and they no longer read the app's job results (the API answers 404).

The share is removed as the owner removes it, through the designer's page (the URL conf);
the admin's deletion of a share goes through the same service.
"""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from agents import services
from agents.models import Job
from tests.test_jobs import run_queue

pytestmark = pytest.mark.django_db


@pytest.fixture
def bob_api(other_user):
    client = APIClient()
    client.force_login(other_user)
    return client


def _evaluate(api, app, capture) -> str:
    with capture(execute=True):
        response = api.post(reverse("api:app-evaluate", args=[app.pk]))
    assert response.status_code == 202, response.content
    return response["Location"]


def test_a_revoked_shares_queued_job_is_cancelled_and_its_results_read_404(
    signed_in, bob_api, bank, other_user, django_capture_on_commit_callbacks
):
    services.app_share(app=bank, user=other_user, role="editor")
    finished = _evaluate(bob_api, bank, django_capture_on_commit_callbacks)
    run_queue()
    assert bob_api.get(finished).json()["status"] == "succeeded"
    queued = _evaluate(bob_api, bank, django_capture_on_commit_callbacks)
    assert bob_api.get(queued).json()["status"] == "queued"

    signed_in.post(reverse("app-share", args=[bank.pk]), {"remove": other_user.pk})

    assert not bank.shares.exists()
    job = Job.objects.get(pk=queued.rstrip("/").rsplit("/", 1)[-1])
    assert job.status == "cancelled" and job.finished_at is not None
    assert run_queue() == 1 and Job.objects.get(pk=job.pk).attempts == 0  # never ran
    assert bob_api.get(queued).status_code == 404
    assert bob_api.get(finished).status_code == 404
    assert bob_api.post(queued + "cancel").status_code == 404


def test_shared_again_the_jobs_read_again_and_the_owners_jobs_are_untouched(
    bob_api, bank, user, other_user, django_capture_on_commit_callbacks
):
    owner_api = APIClient()
    owner_api.force_login(user)
    services.app_share(app=bank, user=other_user, role="editor")
    bobs = _evaluate(bob_api, bank, django_capture_on_commit_callbacks)
    owners = _evaluate(owner_api, bank, django_capture_on_commit_callbacks)

    services.app_unshare(app=bank, user=other_user, actor=user)

    assert owner_api.get(owners).json()["status"] == "queued"
    assert bob_api.get(bobs).status_code == 404
    services.app_share(app=bank, user=other_user, role="viewer")
    assert bob_api.get(bobs).json()["status"] == "cancelled"
