"""manage.py import_app / export_app: the pipeline's import and export, with exit codes."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from agents.models import AgentApp
from agents.services import exchange


def test_export_then_import_native_round_trips(tmp_path, user, shop):
    target = tmp_path / "shop.json"
    call_command("export_app", shop.pk, "--format", "json", "-o", str(target))
    document = json.loads(target.read_text(encoding="utf-8"))
    assert document["app"]["name"] == "Shopping assistant"
    out = io.StringIO()
    call_command("import_app", str(target), "--owner", user.username, "--name", "Copy", stdout=out)
    copy = AgentApp.objects.get(pk=int(out.getvalue().strip()))
    assert copy.name == "Copy" and copy.owner == user
    original, imported = exchange.app_export_native(shop), exchange.app_export_native(copy)
    original["app"].pop("name"), imported["app"].pop("name")
    assert imported == original


def test_export_cx_writes_a_zip_with_app_json(tmp_path, shop):
    target = tmp_path / "shop.zip"
    call_command("export_app", shop.pk, "--format", "cx", "-o", str(target))
    with zipfile.ZipFile(target) as archive:
        assert any(name.endswith("app.json") for name in archive.namelist())


def test_import_of_a_broken_file_exits_1_and_creates_nothing(tmp_path, user):
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": "statecraft.app", "version": 1, "app": {"name": 3}}')
    before = AgentApp.objects.count()
    err = io.StringIO()
    with pytest.raises(CommandError, match="not imported"):
        call_command("import_app", str(broken), "--owner", user.username, stderr=err)
    assert AgentApp.objects.count() == before
    assert "broken.json" in err.getvalue() and "[SC5" in err.getvalue()


def test_unknown_owner_file_and_app_are_clear_errors(tmp_path, user):
    with pytest.raises(CommandError, match="--owner: no user named 'nobody'"):
        call_command("import_app", str(tmp_path / "x.json"), "--owner", "nobody")
    with pytest.raises(CommandError, match=r"x\.json"):
        call_command("import_app", str(tmp_path / "x.json"), "--owner", user.username)
    with pytest.raises(CommandError, match="No app with id 999999"):
        call_command("export_app", 999999)


def test_commands_exit_with_status_1_on_failure(tmp_path, migrated_sqlite_url):
    """The exit code a pipeline reads, through a real process."""

    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "DATABASE_URL": migrated_sqlite_url}
    manage = [sys.executable, "manage.py"]
    settings = "--settings=tests.settings"
    done = subprocess.run(
        [*manage, "export_app", "999999", settings],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
    assert done.returncode == 1 and "No app with id 999999" in done.stderr
