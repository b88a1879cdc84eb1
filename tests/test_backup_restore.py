"""Backup and restore (issue 32): what docs/operations/health-and-backups.md says to do,
done. An app with versions, a live run's recording and an admin endpoint whose key is
stored encrypted with MODEL_KEYS_SECRET; ``pg_dump`` of the test's PostgreSQL database,
``pg_restore`` into a fresh database, then a real ``manage.py shell`` on the restored
database (with the same secret) reads the apps and versions, replays the recording and
decrypts the key. Skipped where pg_dump/pg_restore are not installed (Debian/Ubuntu:
``apt-get install postgresql-client``) or the tests run on SQLite.

And ``manage.py dumpdata`` dumps everything there is: django-rq's dashboard model, which
has no table, is left out rather than stopping it."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection

from agents import services
from agents.models import ModelEndpoint
from agents.services import versions
from agents.services.live_models import endpoint_save
from agents.services.live_runs import run_live
from tests.llm_server import openai_call, openai_text
from tests.test_live_runs import bank_app  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent
SECRET = "backup-test-model-keys-secret-0123456789"
STORED_KEY = "sk-stored-in-the-admin-5150"

on_postgresql = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="pg_dump needs PostgreSQL (CI's second pass)"
)
with_pg_tools = pytest.mark.skipif(
    not (shutil.which("pg_dump") and shutil.which("pg_restore")),
    reason="pg_dump/pg_restore not installed (apt-get install postgresql-client)",
)

CHECK = """
import json
from django.test import override_settings
from agents import keyring
from agents.models import AgentApp, LiveRun, ModelEndpoint
from agents.services import versions
from agents.services.live_replays import replay_live

app = AgentApp.objects.get(name="Live bank")
specs = [versions.version_specs(v)[0] for v in app.versions.order_by("number")]
run = LiveRun.objects.get(app=app)
replayed = replay_live(run=run, record=False)
token = ModelEndpoint.objects.get(name="stored").api_key_encrypted
with override_settings(MODEL_KEYS_SECRET="not-the-backed-up-secret"):
    other = keyring.decrypt(token)
print(json.dumps({
    "apps": sorted(AgentApp.objects.values_list("name", flat=True)),
    "versions": [v.number for v in app.versions.order_by("number")],
    "version_descriptions": [s.description for s in specs],
    "recorded_calls": run.model_calls,
    "replay": {"error": replayed.error, "drift": replayed.drift,
               "status": replayed.evaluation.status},
    "key": keyring.decrypt(token),
    "key_with_another_secret": other,
}))
"""


def _database_url(name: str) -> str:
    s = connection.settings_dict
    user = s.get("USER") or "postgres"
    password = f":{s['PASSWORD']}" if s.get("PASSWORD") else ""
    return (
        f"postgres://{user}{password}@{s.get('HOST') or '127.0.0.1'}:{s.get('PORT') or 5432}/{name}"
    )


@pytest.mark.django_db(transaction=True)
@on_postgresql
@with_pg_tools
def test_a_restored_dump_has_the_apps_versions_recordings_and_stored_keys(
    bank_app,  # noqa: F811
    user,
    server,
    settings,
    tmp_path,
):
    settings.MODEL_KEYS_SECRET = SECRET
    app, agent, scenario = bank_app
    versions.version_create(app=app, name="first", user=user)
    services.app_update(app=app, description="second", actor=user)
    versions.version_create(app=app, name="second", user=user)
    endpoint_save(
        endpoint=ModelEndpoint(
            name="stored", kind="openai", model="test-model", base_url=f"{server.url}/v1"
        ),
        api_key=STORED_KEY,
    )
    server.script(
        openai_call("LookupBalance", {"account_id": "primary"}),
        openai_text("Your balance is 1,250 EUR."),
    )
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="stored", actor=user)
    assert not outcome.error and outcome.run is not None
    assert server.seen[0].headers["authorization"] == f"Bearer {STORED_KEY}"

    dump = tmp_path / "statecraft.dump"
    source = _database_url(connection.settings_dict["NAME"])
    subprocess.run(
        ["pg_dump", "--format=custom", "--no-owner", f"--file={dump}", f"--dbname={source}"],
        check=True,
        timeout=120,
    )
    restored = f"{connection.settings_dict['NAME']}_restored_{uuid.uuid4().hex[:8]}"
    with connection.cursor() as cursor:
        cursor.execute(f'CREATE DATABASE "{restored}"')
    try:
        target = _database_url(restored)
        subprocess.run(
            ["pg_restore", "--no-owner", f"--dbname={target}", str(dump)],
            check=True,
            timeout=120,
        )
        env = {
            **os.environ,
            "DATABASE_URL": target,
            "MODEL_KEYS_SECRET": SECRET,
            "STATECRAFT_MODELS": "",
        }
        manage = [sys.executable, "manage.py"]
        migrate = subprocess.run(
            [*manage, "migrate", "--check", "--settings=tests.settings"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert migrate.returncode == 0, migrate.stdout + migrate.stderr  # schema whole
        checked = subprocess.run(
            [*manage, "shell", "--settings=tests.settings", "-c", CHECK],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert checked.returncode == 0, checked.stderr
        found = json.loads(checked.stdout.strip().splitlines()[-1])
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{restored}" WITH (FORCE)')
    assert found["apps"] == ["Live bank"]
    assert found["versions"] == [1, 2]
    assert found["version_descriptions"][1] == "second"
    assert found["recorded_calls"] == 2
    replay = found["replay"]  # the recording replays: no model, no drift, the same verdict
    assert (replay["error"], replay["drift"], replay["status"]) == ("", [], "passed"), replay
    assert found["key"] == STORED_KEY
    assert found["key_with_another_secret"] == ""  # without the secret, the key is lost


@pytest.mark.django_db
def test_dumpdata_leaves_out_django_rqs_table_less_model_and_dumps_the_rest(bank):
    out, err = io.StringIO(), io.StringIO()
    call_command("dumpdata", stdout=out, stderr=err)
    rows = json.loads(out.getvalue())
    assert any(r["model"] == "agents.agentapp" and r["fields"]["name"] == "Bank demo" for r in rows)
    assert "django_rq.Dashboard" in err.getvalue()
