"""The versions API: save and list versions, labels, the app at a version or label, restore."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from agents import services
from agents.services import exchange, versions

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(user):
    client = APIClient()
    client.force_login(user)
    return client


@pytest.fixture
def bob(other_user):
    client = APIClient()
    client.force_login(other_user)
    return client


def fields(response) -> set[str]:
    return {d["field"] for d in response.json()["diagnostics"]}


def test_save_list_and_read_versions(api, bank):
    created = api.post(
        f"/api/apps/{bank.pk}/versions/", {"name": "First", "note": "n"}, format="json"
    )
    assert created.status_code == 201
    assert created["Location"] == f"/api/apps/{bank.pk}/versions/1/"
    assert created.json()["number"] == 1
    assert created.json()["created_by"] == "ada"
    api.post(f"/api/apps/{bank.pk}/versions/", {"name": "Second"}, format="json")
    listed = api.get(f"/api/apps/{bank.pk}/versions/").json()
    assert listed["count"] == 2
    assert [v["number"] for v in listed["results"]] == [2, 1]
    assert "document" not in listed["results"][0]
    one = api.get(f"/api/apps/{bank.pk}/versions/1/").json()
    assert one["document"] == exchange.app_export_native(bank)


def test_an_invalid_version_name_is_a_400_naming_the_field(api, bank):
    missing = api.post(f"/api/apps/{bank.pk}/versions/", {}, format="json")
    assert missing.status_code == 400 and fields(missing) == {"name"}
    api.post(f"/api/apps/{bank.pk}/versions/", {"name": "Taken"}, format="json")
    taken = api.post(f"/api/apps/{bank.pk}/versions/", {"name": "Taken"}, format="json")
    assert taken.status_code == 400
    assert taken.json()["diagnostics"][0]["code"] == "SC004"


def test_labels_via_the_api_and_reading_the_app_at_a_label(api, bank, user):
    versions.version_create(app=bank, user=user, name="Live")
    services.app_update(app=bank, description="newer")
    versions.version_create(app=bank, user=user, name="Next")
    put = api.put(f"/api/apps/{bank.pk}/labels/production/", {"version": 1}, format="json")
    assert put.status_code == 200
    assert put.json() | {"created_at": None, "updated_at": None} == {
        "name": "production",
        "version": 1,
        "version_name": "Live",
        "moved_by": "ada",
        "created_at": None,
        "updated_at": None,
    }
    at_label = api.get(f"/api/apps/{bank.pk}/", {"label": "production"})
    assert at_label.status_code == 200
    body = at_label.json()
    assert body["app"] == bank.pk
    assert body["version"]["number"] == 1 and body["version"]["labels"] == ["production"]
    assert body["document"]["app"]["description"] != "newer"
    # Move the label: the same request now answers the other version.
    api.put(f"/api/apps/{bank.pk}/labels/production/", {"version": 2}, format="json")
    moved = api.get(f"/api/apps/{bank.pk}/", {"label": "production"}).json()
    assert moved["document"]["app"]["description"] == "newer"
    at_version = api.get(f"/api/apps/{bank.pk}/", {"version": "1"}).json()
    assert at_version["version"]["name"] == "Live"
    labels = api.get(f"/api/apps/{bank.pk}/labels/").json()
    assert [(label["name"], label["version"]) for label in labels["results"]] == [("production", 2)]
    assert api.delete(f"/api/apps/{bank.pk}/labels/production/").status_code == 204
    assert api.get(f"/api/apps/{bank.pk}/labels/production/").status_code == 404
    # Without parameters the working copy comes back, as before.
    assert "variables" in api.get(f"/api/apps/{bank.pk}/").json()


def test_wrong_version_and_label_parameters(api, bank, user):
    versions.version_create(app=bank, user=user, name="One")
    not_a_number = api.get(f"/api/apps/{bank.pk}/", {"version": "abc"})
    assert not_a_number.status_code == 400 and fields(not_a_number) == {"version"}
    assert api.get(f"/api/apps/{bank.pk}/", {"version": "9"}).status_code == 404
    unknown = api.get(f"/api/apps/{bank.pk}/", {"label": "nope"})
    assert unknown.status_code == 404
    assert "No label 'nope'" in unknown.json()["detail"]
    both = api.get(f"/api/apps/{bank.pk}/", {"label": "x", "version": "1"})
    assert both.status_code == 400
    bad_label = api.put(f"/api/apps/{bank.pk}/labels/Bad Label/", {"version": 1}, format="json")
    assert bad_label.status_code == 400 and fields(bad_label) == {"name"}
    no_version = api.put(f"/api/apps/{bank.pk}/labels/staging/", {"version": 5}, format="json")
    assert no_version.status_code == 404
    wrong_shape = api.put(f"/api/apps/{bank.pk}/labels/staging/", {"version": "x"}, format="json")
    assert wrong_shape.status_code == 400 and fields(wrong_shape) == {"version"}


def test_restore_through_the_api(api, bank, user):
    version = versions.version_create(app=bank, user=user, name="Good")
    services.agent_create(app=bank, display_name="Extra")
    response = api.post(f"/api/apps/{bank.pk}/versions/1/restore")
    assert response.status_code == 200
    assert [a["display_name"] for a in response.json()["agents"]] == ["banking_agent"]
    assert exchange.app_export_native(bank) == version.document


def test_permissions(api, bob, bank, user, other_user):
    versions.version_create(app=bank, user=user, name="One")
    base = f"/api/apps/{bank.pk}"
    assert bob.get(f"{base}/versions/").status_code == 404  # a stranger
    services.app_share(app=bank, user=other_user, role="viewer")
    assert bob.get(f"{base}/versions/").status_code == 200
    assert bob.get(f"{base}/", {"version": 1}).status_code == 200
    assert bob.post(f"{base}/versions/", {"name": "x"}, format="json").status_code == 403
    assert bob.put(f"{base}/labels/x/", {"version": 1}, format="json").status_code == 403
    assert bob.post(f"{base}/versions/1/restore").status_code == 403
    assert bob.delete(f"{base}/versions/1/").status_code == 403
    services.app_share(app=bank, user=other_user, role="editor")
    assert bob.post(f"{base}/versions/", {"name": "x"}, format="json").status_code == 201
    assert bob.put(f"{base}/labels/x/", {"version": 2}, format="json").status_code == 200
    assert bob.post(f"{base}/versions/1/restore").status_code == 200
    assert bob.delete(f"{base}/versions/1/").status_code == 403
    labelled = api.delete(f"{base}/versions/2/")
    assert labelled.status_code == 400 and fields(labelled) == {"labels"}
    assert api.delete(f"{base}/versions/1/").status_code == 204
    assert list(bank.versions.values_list("number", flat=True)) == [2]


def test_openapi_documents_the_versions_endpoints(api):
    schema = api.get("/api/schema/", {"format": "json"}).json()
    assert "/api/apps/{app_id}/versions/" in schema["paths"]
    assert "/api/apps/{app_id}/labels/{name}/" in schema["paths"]
    parameters = {p["name"] for p in schema["paths"]["/api/apps/{app_id}/"]["get"]["parameters"]}
    assert {"version", "label"} <= parameters
