"""The jobs of the API: GET a job (status, progress, result), POST its cancel.

Jobs are submitted by the action endpoints (evaluate...), which answer 202 with the job's
url. A job is visible to whoever submitted it; anyone else gets 404.
"""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions
from rest_framework.request import Request
from rest_framework.response import Response

from agents.api import serializers as io
from agents.api.json_boundary import json_data_response
from agents.api.views import ERRORS, ApiView
from agents.models import Job
from agents.services import jobs

JOB_ERRORS = {
    401: ERRORS[401],
    404: OpenApiResponse(io.ErrorOut, description="No such job of yours."),
}


class JobView(ApiView):
    queryset = Job.objects.none()

    def load_job(self, job_id: object) -> Job:
        try:
            return jobs.job_for_user(self.request.user, job_id)
        except Job.DoesNotExist:
            raise exceptions.NotFound("No such job (or not one of yours).") from None

    def body(self, job: Job) -> Response:
        url = self.request.build_absolute_uri(reverse("api:job-detail", args=[job.pk]))
        return json_data_response(self.output(io.JobOut, jobs.job_data(job, url=url)))


class JobDetailView(JobView):
    """A job: its status, progress and result (poll it until it is finished)."""

    @extend_schema(
        tags=["jobs"],
        operation_id="jobs_retrieve",
        summary="A job's status, progress {done, total} and result",
        responses={200: io.JobOut, **JOB_ERRORS},
    )
    def get(self, request: Request, job_id: object) -> Response:
        return self.body(self.load_job(job_id))


class JobCancelView(JobView):
    """Cancel a job: a queued one at once, a running one at its next code call."""

    @extend_schema(
        tags=["jobs"],
        operation_id="jobs_cancel",
        summary="Cancel the job (finished scenarios are kept); a finished job is unchanged",
        request=None,
        responses={200: io.JobOut, **JOB_ERRORS},
    )
    def post(self, request: Request, job_id: object) -> Response:
        return self.body(jobs.job_cancel(job=self.load_job(job_id)))
