"""CX Agent Studio's own linter (``cxas lint``, cxas-scrapi 1.10.0) on Statecraft's CX exports.

Issue #10, item 4: the export of every demo app has no structural or variable finding
(``tests/cx_lint.py`` says which rules count), and what CX rejects in instructions
(``{{list.0}}``) is an error of the export before CX sees it. The linter runs in its own
virtualenv, built once per machine (``tests/cx_lint.py``); all tests of this module run
on one xdist worker (``--dist loadgroup``), so that build holds up one worker only.
"""

from __future__ import annotations

import io
import json
import os
import zipfile

import pytest
from django.urls import reverse

from agents import services
from agents.core.cx.app import to_cx_files
from agents.core.diagnostics import Severity
from agents.core.spec import AgentSpec, AppSpec, ToolKind, ToolSpec, VariableSpec, VariableType
from agents.models import AgentApp
from agents.services import exchange
from tests.cx_corpus import cx_corpus  # noqa: F401 - the fixture
from tests.cx_lint import (
    CxasUnavailable,
    Finding,
    baseline,
    corpus_apps_by_name,
    counting,
    counts,
    cxas,  # noqa: F401 - the fixture
    cxas_lint_files,
    cxas_lint_files_many,
    cxas_lint_many,
    cxas_venv,
    new_findings,
    venv_dir,
)
from tests.cx_tree import folder_files
from tests.test_cx_corpus_apps import BROKEN

pytestmark = pytest.mark.xdist_group("cxas")


def _unzipped(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def _shown(findings: list[Finding]) -> str:
    return "\n".join(str(f) for f in findings)


# ---------------------------------------------------------------- which findings count


def test_structural_and_variable_rules_count_prompt_style_opinions_do_not():
    for rule_id in ("A002", "V100", "V104", "I008", "I012", "I013", "T012", "S002", "S007"):
        assert counts(rule_id), rule_id
    for rule_id in ("V001", "V003", "V007"):  # the schema rules: each file as CX's proto
        assert counts(rule_id), rule_id
    for rule_id in ("I001", "I014", "A005", "T001"):  # opinions on prompt style
        assert not counts(rule_id), rule_id
    for rule_id in ("I007", "V105", "C001", "T007", "E003"):  # not on the list
        assert not counts(rule_id), rule_id


def test_new_findings_are_counting_ones_beyond_what_was_there():
    def finding(rule_id: str, file: str = "app.json", message: str = "m") -> Finding:
        return Finding(rule_id, "error", file, message)

    before = [finding("V100"), finding("I001")]
    after = [finding("V100"), finding("V100"), finding("I001"), finding("I001"), finding("A002")]
    assert new_findings(before, after) == [finding("V100"), finding("A002")]
    assert new_findings(after, before) == []


def test_without_a_package_index_the_linter_is_unavailable_and_nothing_is_left(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("STATECRAFT_CACHE", str(tmp_path))
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # no index from a pip.conf
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple/")  # nothing listens
    with pytest.raises(CxasUnavailable, match=r"http://127.0.0.1:9/simple/ cannot be reached"):
        cxas_venv()
    assert venv_dir() == tmp_path / "cxas-venv-1.10.0"
    assert not venv_dir().exists()  # no half-built virtualenv for the next run to trust
    assert (tmp_path / "cxas-venv-1.10.0.lock").exists()


# ---------------------------------------------------------------- the demo apps


@pytest.mark.django_db
def test_every_demo_app_exports_what_cx_lint_accepts(cxas, demo_apps):  # noqa: F811
    assert len(demo_apps) == 2
    exports = [_unzipped(exchange.app_export_cx(app)[0]) for app in demo_apps]
    for app, findings in zip(demo_apps, cxas_lint_files_many(exports), strict=True):
        assert counting(findings) == [], f"{app.name}:\n{_shown(counting(findings))}"
        # The linter read the app: its opinions on the instructions' style are there.
        assert {"I001", "A005"} <= {f.rule_id for f in findings}, _shown(findings)
        assert any(f.file.endswith("/instruction.txt") for f in findings)


@pytest.mark.django_db
def test_an_index_into_a_list_is_an_export_error_where_cx_lint_rejects_it(cxas, demo_apps):  # noqa: F811
    shop = next(app for app in demo_apps if app.name == "Shopping assistant")
    root = shop.agents.get(is_root=True)
    services.agent_update(
        agent=root, instructions=root.instructions + "Answer in {{languages.0}}.\n"
    )
    data, diagnostics = exchange.app_export_cx(shop)
    ours = [d for d in diagnostics if d.code == "SC324"]
    assert [(d.severity, d.subject, d.field) for d in ours] == [
        (Severity.ERROR, "agents/Shopping_Assistant/instruction.txt", "instruction")
    ]
    assert "Reference the whole list, `{{languages}}`" in ours[0].message
    theirs = counting(cxas_lint_files(_unzipped(data)))
    assert [(f.rule_id, f.file, f.line) for f in theirs] == [
        ("V104", "agents/Shopping_Assistant/instruction.txt", ours[0].line)
    ]
    assert "'languages' is not an OBJECT" in theirs[0].message


@pytest.mark.django_db
def test_the_designer_shows_an_index_into_a_list_while_typing(signed_in, shop):
    agent = shop.agents.get()
    body = signed_in.post(
        reverse("agent-preview", args=[shop.pk, agent.pk]),
        {"instructions": "Answer in {{languages.0}}."},
        headers={"HX-Request": "true"},
    ).content.decode()
    assert body.lstrip().startswith('<div id="preview-panel"')
    assert "SC324" in body  # in the problem list and as a squiggle of the editor
    assert "CX Agent Studio does not accept an index into a list" in body


@pytest.mark.django_db
def test_the_linter_reports_what_the_export_fixed(cxas, demo_apps):  # noqa: F811
    """The check can fail: the export as it was (no app name, no tool description)."""
    bank = next(app for app in demo_apps if app.name == "Bank demo")
    files = _unzipped(exchange.app_export_cx(bank)[0])
    app_json = json.loads(files["app.json"])
    del app_json["name"]
    files["app.json"] = json.dumps(app_json).encode()
    path = "tools/LookupBalance/LookupBalance.json"
    tool = json.loads(files[path])
    tool["pythonFunction"]["description"] = ""
    files[path] = json.dumps(tool).encode()
    found = {(f.rule_id, f.file) for f in counting(cxas_lint_files(files))}
    assert found == {("A002", "app.json"), ("T012", path)}


SPARE = 'def spare() -> dict:\n    """Spare."""\n    return {}\n'


def test_what_the_export_reports_is_what_cx_lint_rejects(cxas):  # noqa: F811
    """Each export error about the app's content has CX's counting finding beside it."""
    app = AppSpec(
        name="Tree",
        variables=(VariableSpec("tags", VariableType.LIST, [], "Tags", VariableType.TEXT),),
        tools=(
            ToolSpec("lookup", ToolKind.PYTHON, python_code="def lookup():\n    return {}\n"),
            ToolSpec("spare", ToolKind.PYTHON, python_code=SPARE),
            ToolSpec("end_session", ToolKind.PLATFORM),
        ),
        agents=(
            AgentSpec(
                "Root",
                "Use {@TOOL: lookup}.",
                tools=("lookup", "end_session"),
                children=("Helper", "Other"),
                is_root=True,
            ),
            AgentSpec("Other", "First tag: {{tags.0}}.", tools=("spare",), children=("Helper",)),
            AgentSpec("Helper", "Help."),
        ),
    )
    files, diagnostics = to_cx_files(app)
    codes = ("SC312", "SC324", "SC625", "SC626")
    ours = {(d.code, d.severity, d.subject) for d in diagnostics if d.code in codes}
    assert ours == {
        ("SC312", Severity.WARNING, "agents/Other/Other.json"),
        ("SC324", Severity.ERROR, "agents/Other/instruction.txt"),
        ("SC625", Severity.WARNING, "tools/lookup/lookup.json"),
        ("SC626", Severity.ERROR, "agents/Helper/Helper.json"),
    }
    theirs = {(f.rule_id, f.file) for f in counting(cxas_lint_files(files))}
    assert theirs == {
        ("I012", "agents/Other/Other.json"),
        ("V104", "agents/Other/instruction.txt"),
        ("T012", "tools/lookup/lookup.json"),
        ("S007", "agents/Helper/Helper.json"),
    }


# ---------------------------------------------------------------- the corpus, as shipped


def test_corpus_apps_as_shipped_lint_as_the_baseline_records(cxas, cx_corpus):  # noqa: F811
    apps = corpus_apps_by_name(cx_corpus)
    recorded = baseline()
    assert "examples/bella_notte" in apps
    assert sorted(apps) == sorted(recorded)
    for name, findings in zip(apps, cxas_lint_many(apps.values()), strict=True):
        assert findings == recorded[name], name
    assert counting(recorded["examples/bella_notte"])  # Google's own example has findings


@pytest.mark.django_db
def test_a_round_trip_of_every_corpus_app_adds_no_counting_finding(cxas, cx_corpus, user):  # noqa: F811
    """Issue #10's acceptance: import each app as the import page does, export it again,
    and ``cxas lint`` finds nothing that counts beyond what the app had as shipped."""
    apps = corpus_apps_by_name(cx_corpus)
    exports: dict[str, dict[str, bytes]] = {}
    for name, folder in apps.items():
        try:
            app, _, _ = exchange.app_import_file(owner=user, data=_zipped(folder))
        except exchange.ImportRefused:
            assert name in BROKEN, name  # CX itself would refuse it
            continue
        exports[name] = _unzipped(exchange.app_export_cx(AgentApp.objects.get(pk=app.pk))[0])
    assert len(exports) == len(apps) - len(BROKEN)
    recorded = baseline()
    found = cxas_lint_files_many(exports.values())
    for name, findings in zip(exports, found, strict=True):
        assert new_findings(recorded[name], findings) == [], name
    # Not vacuous: the re-exports still have the counting findings the apps came with.
    bella = found[list(exports).index("examples/bella_notte")]
    assert {"V100", "I012"} <= {f.rule_id for f in counting(bella)}


def _zipped(folder) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, data in sorted(folder_files(folder).items()):
            archive.writestr(f"{folder.name}/{path}", data)
    return buffer.getvalue()
