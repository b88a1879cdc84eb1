"""Every real CX app of the corpus imports, and comes back semantically equal from export.

The corpus is Google's ``cxas-scrapi`` 1.10.0 sdist (``tests/cx_corpus.py``): Bella Notte,
the agent-foundry template and the skill-eval apps. Nothing here knows one app from
another: the same import (through the service and the database, as the import page
does) and the same comparison (``tests/cx_tree.py``) run on each.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from agents.core.cx.app import read_zip
from agents.models import AgentApp
from agents.services import exchange
from tests.cx_corpus import CorpusUnavailable, cx_corpus_root
from tests.cx_tree import corpus_apps, cx_tree, folder_files

pytestmark = pytest.mark.django_db

# The one real app that CX itself would refuse: its rootAgent names no agent it has.
BROKEN = {
    "skill_eval/scenarios/mock_integration_testing/mock_integration_testing": (
        "app.json: rootAgent: no agent 'payment_root_agent' in the ZIP"
    ),
}


def _apps() -> list:
    try:
        root = cx_corpus_root()
    except (CorpusUnavailable, OSError) as exc:
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"no CX corpus: {exc}"))]
    return [pytest.param(p, id=str(p.relative_to(root))) for p in corpus_apps(root)]


def _zip(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, data in sorted(folder_files(folder).items()):
            archive.writestr(f"{folder.name}/{path}", data)
    return buffer.getvalue()


def _relative(folder: Path) -> str:
    return str(folder.relative_to(cx_corpus_root()))


def test_the_corpus_has_the_apps_the_issue_names():
    apps = {_relative(p) for p in corpus_apps(cx_corpus_root())}
    assert "examples/bella_notte" in apps
    assert any("project-template" in a for a in apps)
    assert sum(a.startswith("skill_eval/scenarios/") for a in apps) >= 10


@pytest.mark.parametrize("folder", _apps())
def test_a_real_app_imports_and_round_trips(folder, user):
    broken = BROKEN.get(_relative(folder))
    if broken:
        before = AgentApp.objects.count()
        with pytest.raises(exchange.ImportRefused) as refused:
            exchange.app_import_file(owner=user, data=_zip(folder))
        assert [d.message for d in refused.value.diagnostics] == [broken]
        assert AgentApp.objects.count() == before  # nothing written
        return
    app, kind, _notes = exchange.app_import_file(owner=user, data=_zip(folder))
    assert kind == "cx"
    data, _ = exchange.app_export_cx(AgentApp.objects.get(pk=app.pk))
    exported, problems = read_zip(data)
    assert exported is not None, problems
    original = cx_tree(folder_files(folder))
    again = cx_tree(exported)
    assert sorted(again) == sorted(original)
    for key in original:
        assert json.dumps(again[key], sort_keys=True, default=str) == json.dumps(
            original[key], sort_keys=True, default=str
        ), key


def _snake(key: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in key)


def _yaml_layout(folder: Path, *, snake: bool) -> dict[str, bytes]:
    """The app in CX's YAML layout: every object file as ``.yaml`` (keys in snake_case
    at the object's top level when `snake`, as some CX YAML exports write them)."""
    import yaml

    out = {}
    for path, data in folder_files(folder).items():
        parts = path.split("/")
        is_object = path == "app.json" or (
            len(parts) == 3 and parts[2] == f"{parts[1]}.json" and parts[0] != "evaluations"
        )
        if not is_object:
            out[path] = data
            continue
        value = json.loads(data)
        if snake and (path == "app.json" or parts[0] in ("agents", "tools")):
            value = {_snake(k): v for k, v in value.items()}
        out[path[: -len(".json")] + ".yaml"] = yaml.safe_dump(
            value, allow_unicode=True, sort_keys=False
        ).encode("utf-8")
    return out


@pytest.mark.parametrize("snake", [False, True], ids=["camelCase", "snake_case"])
@pytest.mark.parametrize("folder", _apps())
def test_the_yaml_layout_imports_like_the_json_one(folder, snake, user):
    if BROKEN.get(_relative(folder)):
        return
    files = _yaml_layout(folder, snake=snake)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, data in sorted(files.items()):
            archive.writestr(path, data)
    app, _, _ = exchange.app_import_file(owner=user, data=buffer.getvalue())
    data, _ = exchange.app_export_cx(AgentApp.objects.get(pk=app.pk))
    exported, _ = read_zip(data)
    original = cx_tree(folder_files(folder))
    again = cx_tree(exported)
    if snake:  # the objects kept verbatim (toolsets, datasets) keep their snake_case keys
        original, again = _camel_top(original), _camel_top(again)
    assert json.dumps(again, sort_keys=True, default=str) == json.dumps(
        original, sort_keys=True, default=str
    )


def _camel_top(tree: dict) -> dict:
    def camel(key: str) -> str:
        head, *rest = key.split("_")
        return key if key.startswith("_") else head + "".join(w.capitalize() for w in rest)

    return {
        name: {camel(k): v for k, v in value.items()} if isinstance(value, dict) else value
        for name, value in tree.items()
    }


def _bella(root: Path) -> Path:
    return root / "examples" / "bella_notte"


def test_the_import_page_reports_every_diagnostic_grouped_by_file(signed_in, user, settings):
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.urls import reverse

    settings.IMPORT_JOB_MIN_BYTES = 10**9  # in the request (a large upload is a job: test_exchange)

    from agents.core.cx.app import from_cx_files

    folder = _bella(cx_corpus_root())
    _, diagnostics = from_cx_files(folder_files(folder))
    assert len(diagnostics) > 5  # more than the page used to show
    response = signed_in.post(
        reverse("app-import"), {"file": SimpleUploadedFile("bella.zip", _zip(folder))}
    )
    app = AgentApp.objects.get(owner=user)
    assert response.status_code == 302
    assert response["Location"] == reverse("app-import-report", args=[app.pk])
    page = signed_in.get(response["Location"]).content.decode()
    files = {d.subject for d in diagnostics}
    for file in files:
        assert f"<code>{file}</code>" in page
    kept = page.count('<li class="diag-info" data-code="SC607">')
    assert page.count('<tr class="diag-') + kept == len(diagnostics)
    assert kept > 10  # the evaluations, datasets and notes, kept verbatim


def test_the_api_imports_with_the_full_report_and_refuses_the_broken_app(client, user, settings):
    from rest_framework.authtoken.models import Token

    settings.IMPORT_JOB_MIN_BYTES = 10**9  # in the request (a large upload is a job: test_api)

    root = cx_corpus_root()
    token = Token.objects.create(user=user)
    auth = {"HTTP_AUTHORIZATION": f"Token {token.key}"}
    upload = io.BytesIO(_zip(_bella(root)))
    upload.name = "bella.zip"
    response = client.post("/api/apps/import", {"file": upload}, **auth)
    assert response.status_code == 201, response.content
    body = response.json()
    app = AgentApp.objects.get(pk=body["app"]["id"])
    assert app.tools.filter(kind="platform", name="end_session").exists()
    rows = [row for group in body["report"]["files"] for row in group["diagnostics"]]
    assert len(rows) == sum(body["report"]["counts"].values()) > 5
    assert {g["file"] for g in body["report"]["files"]} >= {"app.json"}

    broken = next(p for p in corpus_apps(root) if _relative(p) in BROKEN)
    upload = io.BytesIO(_zip(broken))
    upload.name = "broken.zip"
    before = AgentApp.objects.count()
    response = client.post("/api/apps/import", {"file": upload}, **auth)
    assert response.status_code == 400
    assert AgentApp.objects.count() == before
    messages = [
        row["message"] for g in response.json()["report"]["files"] for row in g["diagnostics"]
    ]
    assert messages == ["no agent 'payment_root_agent' in the ZIP"]
    assert response.json()["diagnostics"][0]["message"] == BROKEN[_relative(broken)]


def test_an_edit_changes_the_export_only_where_it_was_made(user):
    from agents import services

    folder = _bella(cx_corpus_root())
    app, _, _ = exchange.app_import_file(owner=user, data=_zip(folder))
    host = app.agents.get(display_name="Bella_Notte_Host")
    services.agent_update(agent=host, instructions="Greet the guest.", actor=user)
    variable = app.variables.get(name="event_data")
    services.variable_update(variable=variable, description="Prefill data.", actor=user)
    data, _ = exchange.app_export_cx(AgentApp.objects.get(pk=app.pk))
    original, again = cx_tree(folder_files(folder)), cx_tree(read_zip(data)[0])
    changed = {
        k
        for k in original
        if json.dumps(original[k], sort_keys=True) != json.dumps(again.get(k), sort_keys=True)
    }
    assert changed == {"app", "agents/Bella_Notte_Host"}
    assert again["agents/Bella_Notte_Host"]["instruction"] == "Greet the guest."
    # every other field of the agent (callbacks with their descriptions) is as it was
    rest = {k: v for k, v in again["agents/Bella_Notte_Host"].items() if k != "instruction"}
    assert rest == {
        k: v for k, v in original["agents/Bella_Notte_Host"].items() if k != "instruction"
    }
    declared = {d["name"]: d for d in again["app"]["variableDeclarations"]}
    assert declared["event_data"]["description"] == "Prefill data."
    assert {k: v for k, v in again["app"].items() if k != "variableDeclarations"} == {
        k: v for k, v in original["app"].items() if k != "variableDeclarations"
    }
