"""Versions: snapshots, restore, labels and delete rules (services), and their pages."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
import yaml
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from agents import services
from agents.models import AgentApp, AppLabel, AppVersion, Job
from agents.services import ServiceError, exchange, versions

pytestmark = pytest.mark.django_db


def _change_everything(app: AgentApp) -> None:
    """Edit every kind of object, so a restore has something to undo."""
    root = app.agents.get(is_root=True)
    variable = app.variables.order_by("pk").first()
    services.variable_rename(variable=variable, new_name="renamed_variable")
    services.variable_create(app=app, name="added_later", type="text", default="x")
    services.agent_save_instructions(agent=root, instructions="Completely new instructions.")
    services.agent_create(app=app, display_name="Helper", instructions="I help.")
    services.tool_delete(tool=app.tools.get())
    services.scenario_save(agent=root, name="Another", steps_script="user: hello")
    services.app_update(app=app, name="Bank demo, edited", description="edited")


# ---------------------------------------------------------------- services


def test_a_version_is_the_apps_native_document_numbered_per_app(bank, shop, user):
    first = versions.version_create(app=bank, user=user, name="First", note="why")
    assert first.document == exchange.app_export_native(bank)
    assert (first.number, first.name, first.note, first.created_by) == (1, "First", "why", user)
    second = versions.version_create(app=bank, user=user, name="Second")
    other = versions.version_create(app=shop, user=user, name="First")
    assert (second.number, other.number) == (2, 1)


def test_restore_gives_back_exactly_the_version(bank, user, other_user):
    services.app_share(app=bank, user=other_user, role="editor")
    version = versions.version_create(app=bank, user=user, name="Before")
    versions.label_set(app=bank, version=version, name="production", user=user)
    _change_everything(bank)
    assert exchange.app_export_native(bank) != version.document

    apps_before = set(AgentApp.objects.values_list("pk", flat=True))
    restored = versions.version_restore(version=version, user=other_user)
    assert set(AgentApp.objects.values_list("pk", flat=True)) == apps_before  # no staging left

    # Snapshot equality: the export of the restored app is the version's document.
    assert exchange.app_export_native(restored) == version.document
    bank.refresh_from_db()
    assert (restored.pk, bank.owner, bank.name) == (bank.pk, user, "Bank demo")
    assert list(bank.shares.values_list("user__username", "role")) == [("bob", "editor")]
    assert list(bank.versions.values_list("number", flat=True)) == [1]
    assert list(bank.labels.values_list("name", flat=True)) == ["production"]


def test_restore_keeps_the_ids_of_agents_and_scenarios_that_still_exist(bank, user):
    version = versions.version_create(app=bank, user=user, name="Before")
    agents_before = dict(bank.agents.values_list("display_name", "pk"))
    scenarios_before = sorted(bank.agents.values_list("scenarios__name", "scenarios__pk"))
    _change_everything(bank)
    restored = versions.version_restore(version=version, user=user)
    assert dict(restored.agents.values_list("display_name", "pk")) == agents_before
    assert sorted(restored.agents.values_list("scenarios__name", "scenarios__pk")) == (
        scenarios_before
    )
    connection.check_constraints()  # every reference follows the kept ids
    assert exchange.app_export_native(restored) == version.document


def test_restore_of_an_unreadable_version_changes_nothing(bank, user):
    version = versions.version_create(app=bank, user=user, name="Broken")
    document = json.loads(json.dumps(version.document))
    document["app"]["variables"][0]["type"] = "number"
    document["app"]["variables"][0]["default"] = "not a number"
    AppVersion.objects.filter(pk=version.pk).update(document=document)
    version.refresh_from_db()
    services.app_update(app=bank, description="edited after the version")
    before = exchange.app_export_native(bank)
    with pytest.raises(ServiceError) as refused:
        versions.version_restore(version=version, user=user)
    assert "variables.authenticated.default" in str(refused.value)
    assert exchange.app_export_native(bank) == before


def test_restore_refused_when_the_name_is_taken_changes_nothing(bank, shop, user):
    version = versions.version_create(app=bank, user=user, name="Named")
    services.app_update(app=bank, name="Bank renamed")
    services.app_update(app=shop, name="Bank demo")  # the version's name, now another app's
    before = exchange.app_export_native(bank)
    with pytest.raises(ServiceError) as refused:
        versions.version_restore(version=version, user=user)
    assert refused.value.diagnostics[0].field == "name"
    assert "You already have an app named 'Bank demo'" in str(refused.value)
    assert exchange.app_export_native(bank) == before


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "Give the version a name"),
        ("x" * 201, "at most 200"),
        ("Taken", "already has"),
        ("a\x00b", "NUL character"),
    ],
)
def test_version_names_are_required_and_unique(bank, user, name, message):
    versions.version_create(app=bank, user=user, name="Taken")
    with pytest.raises(ServiceError) as refused:
        versions.version_create(app=bank, user=user, name=name)
    assert refused.value.diagnostics[0].field == "name"
    assert message in str(refused.value)


def test_labels_are_set_moved_and_checked(bank, shop, user):
    one = versions.version_create(app=bank, user=user, name="One")
    two = versions.version_create(app=bank, user=user, name="Two")
    label = versions.label_set(app=bank, version=one, name="production", user=user)
    moved = versions.label_set(app=bank, version=two, name="production", user=user)
    assert moved.pk == label.pk
    assert AppLabel.objects.get(app=bank, name="production").version == two
    for bad in ("", "Production", "prod uction", "-x"):
        with pytest.raises(ServiceError) as refused:
            versions.label_set(app=bank, version=one, name=bad, user=user)
        assert refused.value.diagnostics[0].field == "name"
    elsewhere = versions.version_create(app=shop, user=user, name="Shop")
    with pytest.raises(ServiceError, match="another app"):
        versions.label_set(app=bank, version=elsewhere, name="staging", user=user)
    versions.label_delete(app=bank, name="production", user=user)
    assert not bank.labels.exists()


def test_a_labelled_version_cannot_be_deleted(bank, user):
    version = versions.version_create(app=bank, user=user, name="Live")
    versions.label_set(app=bank, version=version, name="production", user=user)
    with pytest.raises(ServiceError, match="labelled production: move or remove the label"):
        versions.version_delete(version=version, user=user)
    versions.label_delete(app=bank, name="production", user=user)
    versions.version_delete(version=version, user=user)
    assert not bank.versions.exists()


# ---------------------------------------------------------------- pages


def test_designer_header_links_to_the_versions_page(signed_in, bank):
    page = signed_in.get(reverse("app-designer", args=[bank.pk])).content.decode()
    assert f'href="{reverse("app-versions", args=[bank.pk])}"' in page


def test_versions_page_lists_who_when_note_and_labels(signed_in, bank, user):
    version = versions.version_create(app=bank, user=user, name="Friendly", note="Warmer tone")
    versions.label_set(app=bank, version=version, name="staging", user=user)
    response = signed_in.get(reverse("app-versions", args=[bank.pk]))
    assert response.status_code == 200
    page = response.content.decode()
    row = page[page.index('id="version-1"') :]
    row = row[: row.index("</tr>")]
    for expected in ("v1", "Friendly", "Warmer tone", "ada", "staging", "just now"):  # < 1 min
        assert expected in row


def test_versions_page_queries_do_not_grow_with_versions(signed_in, bank, user):
    url = reverse("app-versions", args=[bank.pk])
    for i in range(2):
        v = versions.version_create(app=bank, user=user, name=f"v{i}")
        versions.label_set(app=bank, version=v, name=f"label-{i}", user=user)
    with CaptureQueriesContext(connection) as few:
        assert signed_in.get(url).status_code == 200
    for i in range(2, 12):
        v = versions.version_create(app=bank, user=user, name=f"v{i}")
        versions.label_set(app=bank, version=v, name=f"label-{i}", user=user)
    with CaptureQueriesContext(connection) as many:
        assert signed_in.get(url).status_code == 200
    assert len(many.captured_queries) == len(few.captured_queries)
    # The list never loads the documents.
    assert not any('"document"' in q["sql"] for q in many.captured_queries if "SELECT" in q["sql"])


def test_save_version_plain_post_redirects(signed_in, bank):
    url = reverse("version-create", args=[bank.pk])
    response = signed_in.post(url, {"name": "Plain", "note": "a note"})
    assert response.status_code == 302
    assert response["Location"] == reverse("app-versions", args=[bank.pk])
    assert bank.versions.get().name == "Plain"


def test_save_version_by_htmx_returns_the_panel(signed_in, bank):
    url = reverse("version-create", args=[bank.pk])
    response = signed_in.post(url, {"name": "Quick"}, headers={"HX-Request": "true"})
    assert response.status_code == 200
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="versions-panel"')
    assert "<html" not in body
    assert "Saved version 1 · Quick." in body and 'id="version-1"' in body


def test_an_invalid_save_keeps_the_form_and_names_the_field(signed_in, bank):
    url = reverse("version-create", args=[bank.pk])
    htmx = signed_in.post(url, {"name": "  ", "note": "kept"}, headers={"HX-Request": "true"})
    assert htmx.status_code == 200
    assert "Give the version a name" in htmx.content.decode()
    assert ">kept</textarea>" in htmx.content.decode()
    plain = signed_in.post(url, {"name": ""})
    assert plain.status_code == 400
    assert not bank.versions.exists()


def test_labels_through_the_page(signed_in, bank, user):
    one = versions.version_create(app=bank, user=user, name="One")
    versions.version_create(app=bank, user=user, name="Two")
    url = reverse("label-set", args=[bank.pk])
    assert signed_in.post(url, {"label": "production", "version": "1"}).status_code == 302
    assert AppLabel.objects.get(name="production").version == one
    moved = signed_in.post(
        url, {"label": "production", "version": "2"}, headers={"HX-Request": "true"}
    )
    assert moved.status_code == 200
    assert AppLabel.objects.get(name="production").version.number == 2
    bad = signed_in.post(
        url, {"label": "Not Valid", "version": "1"}, headers={"HX-Request": "true"}
    )
    assert bad.status_code == 200
    assert "&#x27;Not Valid&#x27; is not a valid label" in bad.content.decode()
    assert 'value="Not Valid"' in bad.content.decode()  # what was typed stays
    unknown = signed_in.post(url, {"label": "staging", "version": "9"})
    assert unknown.status_code == 400
    assert "This app has no version 9." in unknown.content.decode()
    remove = reverse("label-delete", args=[bank.pk, "production"])
    assert signed_in.post(remove).status_code == 302
    assert not AppLabel.objects.exists()


@pytest.mark.parametrize("name", ["3", "current", "working-copy"])
def test_a_label_that_would_read_as_a_number_or_the_working_copy_is_refused(
    signed_in, bank, user, name
):
    """An experiment's versions read 3 as version 3 and current as the working copy: a
    label of that name could never be picked, so it is refused, saying what to name it."""
    versions.version_create(app=bank, user=user, name="One")
    url = reverse("label-set", args=[bank.pk])
    bad = signed_in.post(url, {"label": name, "version": "1"}, headers={"HX-Request": "true"})
    assert f"&#x27;{name}&#x27; names a version number or the working copy" in bad.content.decode()
    assert not AppLabel.objects.exists()


def test_restore_asks_then_restores(signed_in, bank, user):
    version = versions.version_create(app=bank, user=user, name="Good")
    _change_everything(bank)
    url = reverse("version-restore", args=[bank.pk, 1])
    confirm = signed_in.get(url)
    assert confirm.status_code == 200
    assert "Restore version 1 · “Good”?" in confirm.content.decode()
    assert exchange.app_export_native(bank) != version.document  # GET changed nothing
    response = signed_in.post(url)
    assert response.status_code == 302
    assert response["Location"] == reverse("app-designer", args=[bank.pk])
    assert exchange.app_export_native(bank) == version.document


def test_delete_asks_and_refuses_a_labelled_version(signed_in, bank, user):
    version = versions.version_create(app=bank, user=user, name="Live")
    versions.label_set(app=bank, version=version, name="production", user=user)
    url = reverse("version-delete", args=[bank.pk, 1])
    assert "Delete version 1" in signed_in.get(url).content.decode()
    refused = signed_in.post(url)
    assert refused.status_code == 400
    assert "move or remove the label first" in refused.content.decode()
    versions.label_delete(app=bank, name="production", user=user)
    assert signed_in.post(url).status_code == 302
    assert not bank.versions.exists()


def test_every_version_exports_in_every_format(signed_in, bank, user):
    version = versions.version_create(app=bank, user=user, name="Export me")
    _change_everything(bank)  # the export is of the version, not of the working copy
    native = reverse("version-export-native", args=[bank.pk, 1])
    as_json = signed_in.get(native)
    assert as_json.status_code == 200
    assert "bank-demo-v1.statecraft.json" in as_json["Content-Disposition"]
    assert json.loads(as_json.content) == version.document
    as_yaml = signed_in.get(native, {"format": "yaml"})
    assert yaml.safe_load(as_yaml.content) == version.document
    assert signed_in.get(native, {"format": "xml"}).status_code == 400
    cx = signed_in.get(reverse("version-export-cx", args=[bank.pk, 1]))
    assert cx["Content-Type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(cx.content)) as archive:
        app_json = json.loads(archive.read("app.json"))
    assert app_json["displayName"] == "Bank demo"
    assert signed_in.get(reverse("version-export-cx", args=[bank.pk, 7])).status_code == 404


def test_diff_page_shows_three_layers(signed_in, bank, user, run_jobs):
    versions.version_create(app=bank, user=user, name="Before")
    variable = bank.variables.get(name="authenticated")
    services.variable_update(variable=variable, default=True)
    root = bank.agents.get(is_root=True)
    services.agent_save_instructions(agent=root, instructions=root.instructions + "\nBe brief.")
    response = signed_in.get(reverse("version-diff", args=[bank.pk]))
    assert response.status_code == 200
    page = response.content.decode()
    for section in ("diff-declarations", "diff-instructions", "diff-prompts"):
        assert f'id="{section}"' in page
    assert "v1 · Before</strong> → <strong>working copy" in page
    assert "<code>default</code>" in page and "<code>false</code>" in page
    assert "Be brief." in page
    # The scenarios are simulated by a job: the page answers at once and polls for them.
    job = Job.objects.get(kind="version_diff")
    fragment = reverse("version-diff-scenarios", args=[bank.pk, job.pk])
    assert f'hx-get="{fragment}"' in page and "Simulating the scenarios" in page
    assert signed_in.get(reverse("version-diff", args=[bank.pk])).status_code == 200
    assert Job.objects.filter(kind="version_diff").count() == 1  # a reload reuses the job
    run_jobs()
    results = signed_in.get(fragment, HTTP_HX_REQUEST="true").content.decode()
    assert 'id="scenario-results"' in results and "Balance question" in results
    assert "hx-get" not in results


def test_diff_page_between_two_versions_and_values(signed_in, bank, user):
    versions.version_create(app=bank, user=user, name="A")
    services.app_update(app=bank, description="changed")
    versions.version_create(app=bank, user=user, name="B")
    url = reverse("version-diff", args=[bank.pk])
    page = signed_in.get(url, {"from": "1", "to": "2", "values": "{}"}).content.decode()
    assert "v1 · A</strong> → <strong>v2 · B" in page
    assert "1 declaration change " in page
    same = signed_in.get(url, {"from": "2", "to": "2"}).content.decode()
    assert "no differences." in same


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"from": "abc"}, "from must be a version number"),
        ({"to": "99"}, "This app has no version 99."),
        ({"channel": "fax"}, "channel must be one of web, api, telephony."),
        ({"modality": "smell"}, "modality must be one of text, voice."),
        ({"values": "[1]"}, "values must be a JSON object"),
        (
            {"values": "{"},
            "values must be a JSON object: line 1, column 2: the text ends too early",
        ),
    ],
)
def test_diff_page_names_the_wrong_parameter(signed_in, bank, params, message):
    response = signed_in.get(reverse("version-diff", args=[bank.pk]), params)
    assert response.status_code == 400
    assert message in response.content.decode()


# ---------------------------------------------------------------- permissions


@pytest.fixture
def as_role(client, bank, other_user):
    def login(role: str | None):
        if role:
            services.app_share(app=bank, user=other_user, role=role)
        client.force_login(other_user)
        return client

    return login


def _urls(app: AgentApp) -> dict[str, str]:
    return {
        "list": reverse("app-versions", args=[app.pk]),
        "diff": reverse("version-diff", args=[app.pk]) + "?from=1&to=working",
        "export": reverse("version-export-native", args=[app.pk, 1]),
        "export_cx": reverse("version-export-cx", args=[app.pk, 1]),
        "create": reverse("version-create", args=[app.pk]),
        "label": reverse("label-set", args=[app.pk]),
        "restore": reverse("version-restore", args=[app.pk, 1]),
        "delete": reverse("version-delete", args=[app.pk, 1]),
    }


def test_viewer_sees_diffs_and_exports_but_changes_nothing(as_role, bank, user):
    versions.version_create(app=bank, user=user, name="One")
    client, urls = as_role("viewer"), _urls(bank)
    for name in ("list", "diff", "export", "export_cx"):
        assert client.get(urls[name]).status_code == 200, name
    page = client.get(urls["list"]).content.decode()
    assert "Save version" not in page and "Restore…" not in page and "Delete…" not in page
    assert client.post(urls["create"], {"name": "Mine"}).status_code == 403
    assert client.post(urls["label"], {"label": "x", "version": "1"}).status_code == 403
    assert client.get(urls["restore"]).status_code == 403
    assert client.post(urls["restore"]).status_code == 403
    assert client.post(urls["delete"]).status_code == 403
    assert bank.versions.count() == 1 and not bank.labels.exists()


def test_editor_saves_labels_and_restores_but_does_not_delete(as_role, bank, user):
    versions.version_create(app=bank, user=user, name="One")
    client, urls = as_role("editor"), _urls(bank)
    assert client.post(urls["create"], {"name": "Mine"}).status_code == 302
    assert bank.versions.get(number=2).created_by.username == "bob"
    assert client.post(urls["label"], {"label": "staging", "version": "2"}).status_code == 302
    assert client.post(urls["restore"]).status_code == 302
    assert "Delete…" not in client.get(urls["list"]).content.decode()
    assert client.get(urls["delete"]).status_code == 403
    assert client.post(urls["delete"]).status_code == 403
    assert bank.versions.count() == 2


def test_only_the_owner_deletes(signed_in, bank, user):
    versions.version_create(app=bank, user=user, name="One")
    assert "Delete…" in signed_in.get(_urls(bank)["list"]).content.decode()
    assert signed_in.post(_urls(bank)["delete"]).status_code == 302
    assert not bank.versions.exists()


def test_strangers_get_404_everywhere(as_role, bank, user):
    versions.version_create(app=bank, user=user, name="One")
    client, urls = as_role(None), _urls(bank)
    for name in ("list", "diff", "export", "export_cx", "restore", "delete"):
        assert client.get(urls[name]).status_code == 404, name
    for name in ("create", "label", "restore", "delete"):
        assert client.post(urls[name], {"name": "x"}).status_code == 404, name


def test_mutating_version_urls_refuse_get_and_need_sign_in(client, signed_in, bank, user):
    versions.version_create(app=bank, user=user, name="One")
    urls = _urls(bank)
    for name in ("create", "label"):
        assert signed_in.get(urls[name]).status_code == 405, name
    assert signed_in.get(reverse("label-delete", args=[bank.pk, "x"])).status_code == 405
    client.logout()
    for name, url in urls.items():
        response = client.get(url)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"], name


# Junk posted to the versions' forms: what each answers.
# Measured: create and label answer 400 (a page) or 200 (htmx) with the message; restore
# redirects; delete redirects (htmx) or is a 404 once the version is gone.
VERSION_ANSWERS = {
    "create": {200, 400},
    "label": {200, 400},
    "restore": {302},
    "delete": {302, 404},
}
JUNK = ["", "0", "-1", "99999999999999999999", "null", "[]", "{", "\x00", "9" * 400, "ü", "a b"]


@pytest.mark.parametrize("junk", JUNK)
def test_garbage_never_crashes(signed_in, bank, user, junk):
    versions.version_create(app=bank, user=user, name="One")
    urls = _urls(bank)
    data = {"name": junk, "note": junk, "label": junk, "version": junk}
    for name in ("create", "label", "restore", "delete"):
        for htmx in (True, False):
            headers = {"HX-Request": "true"} if htmx else {}
            status = signed_in.post(urls[name], data, headers=headers).status_code
            assert status in VERSION_ANSWERS[name], (name, htmx, status)
    params = {"from": junk, "to": junk, "values": junk, "channel": junk, "modality": junk}
    assert signed_in.get(reverse("version-diff", args=[bank.pk]), params).status_code in {200, 400}
    # The delete above may have removed the version: its export is then a 404.
    assert signed_in.get(urls["export"], {"format": junk}).status_code in {200, 404}


# ---------------------------------------------------------------- admin


@pytest.fixture
def admin_client_signed(client, staff):
    client.force_login(staff)
    return client


def test_admin_shows_versions_and_labels_read_only_and_searchable(admin_client_signed, bank, user):
    version = versions.version_create(app=bank, user=user, name="Searchable", note="n")
    versions.label_set(app=bank, version=version, name="production", user=user)
    for model, shown in (("appversion", "Searchable"), ("applabel", "production")):
        changelist = reverse(f"admin:agents_{model}_changelist")
        found = admin_client_signed.get(changelist, {"q": "Bank demo"})
        assert found.status_code == 200
        assert shown in found.content.decode()  # the version's name; the label's
        assert admin_client_signed.get(reverse(f"admin:agents_{model}_add")).status_code == 403
    change = admin_client_signed.get(reverse("admin:agents_appversion_change", args=[version.pk]))
    assert change.status_code == 200
    page = change.content.decode()
    assert "statecraft.app" in page  # the document is shown
    assert 'name="name"' not in page  # … and nothing can be edited
    missing = admin_client_signed.get(reverse("admin:agents_appversion_changelist"), {"q": "zzz"})
    assert "0 app versions" in missing.content.decode()


def test_admin_staff_deletes_an_unlabelled_version(admin_client_signed, bank, user):
    version = versions.version_create(app=bank, user=user, name="Old")
    url = reverse("admin:agents_appversion_delete", args=[version.pk])
    assert admin_client_signed.post(url, {"post": "yes"}).status_code == 302
    assert not AppVersion.objects.exists()
