"""The jobs of the API: GET a job (status, progress, result), POST its cancel.

Jobs are submitted by the action endpoints (evaluate...), which answer 202 with the job's
url. A job is visible to whoever submitted it; anyone else gets 404.
"""

from __future__ import annotations

from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers
from rest_framework.request import Request
from rest_framework.response import Response

from agents.api import serializers as io
from agents.api.base import ERRORS, ApiView
from agents.api.json_boundary import json_data_response
from agents.api.serializers import DiagnosticOut, MessageField
from agents.models import Job
from agents.services import jobs

# ---------------------------------------------------------------- shapes


class ExpectationResultOut(serializers.Serializer):
    step = serializers.IntegerField(help_text=_("Index of the expectation's step (from 0)."))
    turn = serializers.IntegerField()
    kind = serializers.CharField(help_text=_("state, call, response, no calls, transfer, agent."))
    line = serializers.CharField(help_text=_("The expectation as its script line."))
    note = serializers.CharField()
    status = serializers.ChoiceField(choices=["passed", "failed", "needs_model", "stopped"])
    message = MessageField()
    expected = serializers.JSONField(allow_null=True)
    actual = serializers.JSONField(allow_null=True)
    differences = serializers.ListField(child=serializers.CharField())


class ScenarioEvaluationOut(serializers.Serializer):
    scenario = serializers.IntegerField()
    name = serializers.CharField()
    agent = serializers.IntegerField()
    agent_name = serializers.CharField()
    status = serializers.ChoiceField(
        choices=["passed", "failed", "needs_model", "stopped", "none"],
        help_text=_(
            "stopped: a time limit (or another bound) stopped the run; the checks from that "
            "turn on were not judged."
        ),
    )
    passed = serializers.IntegerField()
    failed = serializers.IntegerField()
    needs_model = serializers.IntegerField()
    stopped = serializers.IntegerField(required=False)
    results = ExpectationResultOut(many=True)
    diagnostics = DiagnosticOut(
        many=True, help_text=_("The simulation's step errors and warnings.")
    )


class JobProgressOut(serializers.Serializer):
    done = serializers.IntegerField()
    total = serializers.IntegerField()


class JobOut(serializers.Serializer):
    id = serializers.UUIDField()
    kind = serializers.CharField(help_text=_("evaluate_app, evaluate_scenario, version_diff..."))
    url = serializers.URLField()
    status = serializers.ChoiceField(
        choices=["queued", "running", "succeeded", "failed", "cancelled"]
    )
    progress = JobProgressOut()
    current = serializers.CharField(help_text=_("What runs now (agent / scenario), or empty."))
    result = serializers.JSONField(
        allow_null=True,
        help_text=_(
            "evaluate_app: {ok, summary, scenarios}; `scenarios` (each as "
            "ScenarioEvaluationOut) fill in while it runs. evaluate_scenario: one "
            "ScenarioEvaluationOut. Null while nothing finished."
        ),
    )
    error = serializers.CharField(help_text=_("Why it failed or was cancelled; empty otherwise."))
    attempts = serializers.IntegerField(
        help_text=_("Runs so far (a job whose worker died is retried).")
    )
    caps = serializers.JSONField(
        help_text=_("max_steps, max_code_calls, max_seconds, max_model_calls, max_tokens.")
    )
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


JOB_ERRORS = {
    401: ERRORS[401],
    404: OpenApiResponse(io.ErrorOut, description=_("No such job of yours.")),
}


class JobView(ApiView):
    queryset = Job.objects.none()

    def load_job(self, job_id: object) -> Job:
        try:
            return jobs.job_for_user(self.request.user, job_id)
        except Job.DoesNotExist:
            raise exceptions.NotFound(_("No such job (or not one of yours).")) from None

    def body(self, job: Job) -> Response:
        url = self.request.build_absolute_uri(reverse("api:job-detail", args=[job.pk]))
        return json_data_response(self.output(JobOut, jobs.job_data(job, url=url)))


class JobDetailView(JobView):
    """A job: its status, progress and result (poll it until it is finished)."""

    @extend_schema(
        description=_("A job: its status, progress and result (poll it until it is finished)."),
        tags=["jobs"],
        operation_id="jobs_retrieve",
        summary=_("A job's status, progress {done, total} and result"),
        responses={200: JobOut, **JOB_ERRORS},
    )
    def get(self, request: Request, job_id: object) -> Response:
        return self.body(self.load_job(job_id))


class JobCancelView(JobView):
    """Cancel a job: a queued one at once, a running one at its next code call."""

    @extend_schema(
        description=_("Cancel a job: a queued one at once, a running one at its next code call."),
        tags=["jobs"],
        operation_id="jobs_cancel",
        summary=_("Cancel the job (finished scenarios are kept); a finished job is unchanged"),
        request=None,
        responses={200: JobOut, **JOB_ERRORS},
    )
    def post(self, request: Request, job_id: object) -> Response:
        return self.body(jobs.job_cancel(job=self.load_job(job_id)))
