"""The REST API against its own OpenAPI schema (issue 32): schemathesis generates requests
for every operation of /api/schema/ and sends them with a token, in-process (WSGI); no
answer may be a 5xx, and every answer must match the schema (status documented, body of
the documented shape). A bounded number of examples per operation keeps it a CI test
(derandomized: the same examples every run); `SCHEMA_FUZZ_EXAMPLES=200` explores further.

Left out: schemathesis' "schema-valid request rejected" check (a name's pattern and the
import's required file are refused with a documented 400 the schema does not describe
in full), and its anonymous-request check (tests/test_permission_matrix.py covers it)."""

from __future__ import annotations

import os

import pytest
import schemathesis
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from schemathesis.specs.openapi.checks import ignored_auth, positive_data_acceptance

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.xdist_group("schema-fuzz")]
EXAMPLES = int(os.environ.get("SCHEMA_FUZZ_EXAMPLES", "4"))


def test_every_operation_answers_no_5xx_and_matches_its_schema(user, demo_apps, settings):
    from rest_framework.authtoken.models import Token

    from designer.wsgi import application

    settings.DEBUG = False
    settings.ALLOWED_HOSTS = ["*"]
    # Generated requests are many: no rate limit may turn them into 429s.
    settings.RATE_LIMITS = {scope: "1000000/m" for scope in settings.RATE_LIMITS}
    token = Token.objects.create(user=user)
    schema = schemathesis.openapi.from_wsgi("/api/schema/", application)
    failures: dict[str, list[str]] = {}
    operations = 0
    for loaded in schema.get_all_operations():
        operations += 1
        _fuzz(loaded.ok(), token.key, failures)
    assert operations >= 50, operations
    assert not failures, "\n\n".join(f"{label}:\n{f[0]}" for label, f in failures.items())


def _fuzz(operation, token: str, failures: dict[str, list[str]]) -> None:
    @given(case=operation.as_strategy())
    @hypothesis_settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    def check(case) -> None:
        response = case.call(headers={"Authorization": f"Token {token}"})
        if response.status_code >= 500:
            failures.setdefault(operation.label, []).append(
                f"{response.status_code}: {response.text[:300]}"
            )
            return
        try:
            # Anonymous requests are the permission matrix's (tests/test_permission_matrix.py).
            # A schema-valid body may still be refused with a documented 400 (a name's
            # pattern, a required upload the schema cannot say): not a schema violation.
            case.validate_response(
                response, excluded_checks=[ignored_auth, positive_data_acceptance]
            )
        except BaseException as exc:  # schemathesis' FailureGroup: what broke the schema
            failures.setdefault(operation.label, []).append(str(exc)[:600])

    check()
