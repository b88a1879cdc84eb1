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

from agents import exchange
from agents.core.cx.app import read_zip
from agents.models import AgentApp
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
