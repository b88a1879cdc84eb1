"""A version restore racing edits of the same app, on PostgreSQL (issue 32): restore locked
the app and then deleted its variables while an edit locked a variable and then bumped the
app's revision (opposite orders: a deadlock, answered 500). One lock order now (the app's
row first, `services.common.app_write`) and a retry on a deadlock: no 500, no lost write.

Real threads, each its own database connection, through the API as clients call it."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections
from django.test import Client

from agents.models import AuditEvent, Variable
from agents.services import versions

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="row locks need PostgreSQL (CI's second pass)"
    ),
]
RESTORES = 5
EDITS = 13  # per editor
EDITORS = 2


def test_restores_and_variable_edits_racing_answer_no_500_and_lose_no_write(user, bank):
    versions.version_create(app=bank, user=user, name="Good")
    url = f"/api/apps/{bank.pk}/variables/current_account_balance/"
    restore = f"/api/apps/{bank.pk}/versions/1/restore"
    barrier = threading.Barrier(1 + EDITORS)
    answers: dict[str, list[tuple[int, str]]] = {}

    def run(name: str, calls: list[tuple[str, str, dict | None]]) -> None:
        client = Client(raise_request_exception=False)
        client.force_login(user)
        got: list[tuple[int, str]] = []
        try:
            barrier.wait(timeout=30)
            for method, path, body in calls:
                if method == "post":
                    response = client.post(path)
                else:
                    response = client.patch(path, body, content_type="application/json")
                got.append((response.status_code, (body or {}).get("description", "")))
        finally:
            answers[name] = got
            connections.close_all()

    plans = {"restorer": [("post", restore, None)] * RESTORES}
    for e in range(EDITORS):
        plans[f"editor-{e}"] = [
            ("patch", url, {"description": f"edit {e}-{i}"}) for i in range(EDITS)
        ]
    threads = [threading.Thread(target=run, args=item) for item in plans.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=240)
    assert not any(thread.is_alive() for thread in threads)

    statuses = [status for got in answers.values() for status, _ in got]
    assert len(statuses) == RESTORES + EDITORS * EDITS
    assert all(status < 500 for status in statuses), answers
    assert all(status == 200 for status, _ in answers["restorer"]), answers["restorer"]
    # An edit answers 200, or 409 when a restore replaced the variable it read (reload).
    edits = [got for name, got in answers.items() if name != "restorer"]
    assert all(status in (200, 409) for got in edits for status, _ in got), edits
    # No lost write: every edit answered 200 is in the app's history, once.
    saved = [text for got in edits for status, text in got if status == 200]
    assert saved, "some edits went through"
    recorded = AuditEvent.objects.filter(app=bank, action="variable.update")
    assert recorded.count() == len(saved)
    # And the last answer of each editor is either still there or undone by a later
    # restore (the variable then holds the version's text).
    final = Variable.objects.get(app=bank, name="current_account_balance").description
    version_text = versions.version_specs(bank.versions.get(number=1))[0]
    assert final in {*saved, *(v.description for v in version_text.variables)}
