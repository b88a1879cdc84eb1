"""bella_notte's offline Run all, pinned golden by golden (issue 31: a faster evaluate must
not change a verdict or a word).

``manage.py evaluate`` of the imported app, through the real sandbox; every golden's
status, every check's status and message, and a digest of everything else it reports (every
check's differences, values, i18n, whether left to the model; the run's diagnostics) are
compared with ``bella_notte_verdicts.json``, written from the commit before the explanation
search and the sandbox sessions were made cheaper.
``STATECRAFT_PIN_VERDICTS=1`` writes the file again from the code as it is (then read the
diff: every changed line is a changed verdict or message).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from agents.models import Job, Scenario
from tests.cx_corpus import cx_corpus  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db

PINNED = Path(__file__).with_name("bella_notte_verdicts.json")
KEPT = ("name", "status", "passed", "failed", "needs_model", "stopped", "results", "diagnostics")


def verdicts() -> dict[str, dict]:
    """Each piece's outcome as the command gathered it, without what a run may vary (its
    seconds, its spending, the row ids): its status, each check's, and a digest of all."""
    out = {}
    for job in Job.objects.filter(kind="evaluate_piece"):
        data = job.result or {}
        kept = {key: data.get(key) for key in KEPT}
        text = json.dumps(kept, sort_keys=True, ensure_ascii=False).encode("utf-8")
        out[data["name"]] = {
            "status": data["status"],
            "checks": [
                f"{r['step']} {r['status']}: {r['message']}" for r in data.get("results", [])
            ],
            "sha256": hashlib.sha256(text).hexdigest(),
        }
    return dict(sorted(out.items()))


def test_bella_notte_offline_verdicts_are_the_pinned_ones(user, cx_corpus, settings):  # noqa: F811
    from agents.core.cx.app import zip_bytes
    from agents.services import exchange
    from tests.cx_tree import folder_files

    files = folder_files(cx_corpus / "examples" / "bella_notte")
    app, _, _ = exchange.app_import_file(owner=user, data=zip_bytes(files))
    Scenario.objects.filter(agent__app=app).update(now="2026-06-01T12:00:00")
    # A cap hit on a busy machine would be a timing artefact, not a verdict.
    settings.SIMULATION_MAX_SECONDS = 120
    with pytest.raises(CommandError):
        call_command("evaluate", str(app.pk), stdout=io.StringIO())
    found = verdicts()
    if os.environ.get("STATECRAFT_PIN_VERDICTS"):
        PINNED.write_text(json.dumps(found, indent=1, ensure_ascii=False) + "\n", "utf-8")
    pinned = json.loads(PINNED.read_text("utf-8"))
    assert list(found) == list(pinned)
    for name, outcome in pinned.items():
        assert found[name] == outcome, name
