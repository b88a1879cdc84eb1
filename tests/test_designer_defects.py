"""Server-side regression tests of the designer defects of issue 22 (items 1-10)."""

from __future__ import annotations

import pytest
from django.http import QueryDict

from designer.forms import ScenarioForm

pytestmark = pytest.mark.django_db


def _scenario_data(**extra: str) -> QueryDict:
    data = QueryDict(mutable=True)
    data.update(
        {
            "name": "S",
            "steps_script": "user: hi\n",
            "channel": "web",
            "modality": "text",
            "session_id": "s",
            "project_id": "p",
            "project_number": "1",
            "location": "l",
            "token_budget": "8000",
        }
    )
    for key, value in extra.items():
        data.appendlist(key, value)
    return data


@pytest.mark.parametrize(
    ("values", "ticked"), [([], False), (["off"], False), (["off", "on"], True), (["on"], True)]
)
def test_a_hidden_off_is_not_read_as_a_ticked_box(values, ticked):
    data = _scenario_data()
    for value in values:
        data.appendlist("use_mocks", value)
    form = ScenarioForm(data)
    assert form.is_valid(), form.errors
    assert form.cleaned_data["use_mocks"] is ticked
