"""The API's last check before JSON goes out: a value JSON cannot carry is a 400, not a 500."""

from __future__ import annotations

from typing import Any

from rest_framework import status
from rest_framework.response import Response

from agents.core.formats import not_json_data
from agents.i18n import localize


def json_data_response(body: Any) -> Response:
    """200 with `body` if it is plain JSON data; else a 400 naming where (NaN, infinity) and why.

    Saved data is checked when it is written; this catches what a run produces from it
    (a tool's answer, a state value) so the response never fails while being rendered.
    """
    problem = not_json_data(body)
    if problem is None:
        return Response(body)
    diagnostic = {
        "code": "SC209",
        "severity": "error",
        "message": localize(problem.message),
        "line": None,
        "column": None,
        "start": None,
        "end": None,
        "field": problem.field,
        "subject": None,
    }
    return Response(
        {
            "detail": "The result holds a value JSON cannot carry (NaN, infinity); fix the "
            "tool, mock or scenario that produces it.",
            "diagnostics": [diagnostic],
        },
        status=status.HTTP_400_BAD_REQUEST,
    )
