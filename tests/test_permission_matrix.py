"""Every URL of the URL conf, every method, and six users: anonymous to owner, and staff.

The routes are enumerated from the URL conf, so a new URL is covered without being
listed; its access level comes from the rules below (by name and method). Each request
runs in a transaction rolled back afterwards, so a DELETE by one role does not hide the
object from the next. No answer may mention an object of another app.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from django.core.cache import cache
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from agents import services
from agents.models import ShareRole

METHODS = ("get", "post", "put", "patch", "delete")
ROLES = ("anonymous", "stranger", "viewer", "editor", "owner", "staff")
RANK = {"view": 1, "edit": 2, "owner": 3}
SECRET = "zz_other_app_secret"


@dataclass(frozen=True)
class Route:
    pattern: str
    name: str
    api: bool


def _walk(patterns, prefix="", namespace=""):
    for p in patterns:
        if isinstance(p, URLResolver):
            if str(p.pattern).startswith("admin/"):
                continue
            ns = p.namespace or namespace
            yield from _walk(p.url_patterns, prefix + str(p.pattern), ns)
        elif isinstance(p, URLPattern):
            yield Route(prefix + str(p.pattern), p.name, prefix.startswith("api/"))


ROUTES = list(_walk(get_resolver().url_patterns))
pytestmark = [pytest.mark.django_db]
# The routes in PARTS xdist groups: each group's worker builds the world once (a module
# fixture), and the ~3,300 requests are shared by as many workers instead of one.
PARTS = 3


def _routes() -> list:
    return [
        pytest.param(
            route,
            id=f"{route.name}:{route.pattern}",
            marks=pytest.mark.xdist_group(f"permission-matrix-{n % PARTS + 1}"),
        )
        for n, route in enumerate(ROUTES)
    ]


# The language switcher and the JavaScript catalog serve the sign-in page too.
PUBLIC = {
    "healthz",
    "favicon",
    "login",
    "logout",
    "schema",
    "docs",
    "set-language",
    "javascript-catalog",
}
SIGNED_IN = {  # not about one app
    "app-list",
    "app-create",
    "app-import",
    "api-token",
    "model-list",
    "set-collapsed",
}
VIEW_ACTIONS = {  # POSTs that only read: previews, simulations, examples, copies, diffs
    "agent-preview",
    "agent-simulate",
    "schema-example",
    "app-duplicate",
    "agent-compile",
    "scenario-simulate",
    "version-diff",
    "app-evaluate",  # runs the goldens (stores the last result, changes no app content)
    "scenario-evaluate",
    "app-run-all",
    "evaluation-run-cancel",  # its starter's, as the job's Cancel (a run without a job: no-op)
}
# A replay is a live run's (issue 21): like a run with a model it needs edit rights (a
# viewer's 403), though it calls no model; it falls to "edit" below.


# A job is its submitter's alone (whatever their role in the app): anyone else gets 404.
JOB_ROUTES = {
    "job-detail",
    "job-cancel",
    "app-run-all-job",
    "app-run-all-cancel",
    "app-import-job",
    "app-import-evalset-job",
    "version-diff-scenarios",
    "live-job",
    "live-job-cancel",
}


def required(route: Route, method: str) -> str:
    """What a user needs for `method` on `route`: public, signed-in, view, edit, owner, or
    job (the job's submitter)."""
    if route.name in PUBLIC:
        return "public"
    if route.name in JOB_ROUTES:
        return "job"
    if route.name in SIGNED_IN and "<int:app_id>" not in route.pattern:
        return "signed-in"
    if route.name == "app-delete" or (route.name == "app-share" and method == "post"):
        return "owner"
    if route.api and route.name in ("app-detail", "version-detail") and method == "delete":
        return "owner"
    if route.name == "version-delete":
        return "owner"
    if route.name == "version-restore":
        return "edit"
    if route.name in VIEW_ACTIONS:
        return "view"
    if route.name.endswith(("-new", "-edit", "-delete", "default-field", "default-check")):
        return "edit"
    return "view" if method == "get" else "edit"


def _build_world():
    """The bank demo with a callback, and users of every role; another app with a secret."""
    from django.contrib.auth import get_user_model

    from agents.demo import load_demo
    from agents.services import versions

    django_user_model = get_user_model()
    user = django_user_model.objects.create_user(username="ada", password="pw-ada-123456")
    bank = next(a for a in load_demo(user) if a.name == "Bank demo")
    agent = bank.agents.get()
    callback = services.callback_create(
        agent=agent, kind="before_agent", code="def before_agent_callback(c):\n    pass\n"
    )
    viewer = django_user_model.objects.create_user("viewer", password="pw-viewer-1234")
    editor = django_user_model.objects.create_user("editor", password="pw-editor-1234")
    stranger = django_user_model.objects.create_user("stranger", password="pw-stranger-12")
    staff = django_user_model.objects.create_superuser("staffer", "s@example.com", "pw-staff-12")
    services.app_share(app=bank, user=viewer, role=ShareRole.VIEWER)
    services.app_share(app=bank, user=editor, role=ShareRole.EDITOR)
    outsider = django_user_model.objects.create_user("outsider", password="pw-outsider-12")
    other = services.app_create(owner=outsider, name=f"{SECRET}_app")
    services.variable_create(app=other, name=SECRET, type="text", default=SECRET)
    schema = services.schema_create(
        app=bank, name="Account", json_schema={"type": "object", "properties": {}}
    )
    version = versions.version_create(app=bank, name="first", note="", user=user)
    label = versions.label_set(app=bank, version=version, name="production", user=user)
    from agents.models import LiveRun

    scenario = agent.scenarios.get()
    live_run = LiveRun.objects.create(
        app=bank,
        scenario=scenario,
        scenario_name=scenario.name,
        agent_name=agent.display_name,
        model_name="recorded",
        script="user: Hi!",
    )
    from agents.services import jobs

    job = jobs.job_submit(kind="version_diff", owner=user, app=bank, enqueue=False)
    import_job = jobs.job_submit(
        kind="import_app", owner=user, params={"filename": "x.json"}, enqueue=False
    )
    evalset_job = jobs.job_submit(
        kind="import_evalset", owner=user, app=bank, params={"filename": "e.json"}, enqueue=False
    )
    live_params = {"agent": agent.pk, "scenario": scenario.pk, "model": "recorded"}
    live_job = jobs.job_submit(
        kind="live_run", owner=user, app=bank, params=live_params, enqueue=False
    )
    from agents.models import EvaluationRun

    evaluation_run = EvaluationRun.objects.create(app=bank, owner=user, status="succeeded")
    users = {
        "stranger": stranger,
        "viewer": viewer,
        "editor": editor,
        "owner": user,
        "staff": staff,
    }
    ids = {
        "app_id": bank.pk,
        "agent_id": agent.pk,
        "variable_id": bank.variables.first().pk,
        "schema_id": schema.pk,
        "tool_id": bank.tools.get().pk,
        "callback_id": callback.pk,
        "scenario_id": agent.scenarios.get().pk,
        "name": bank.variables.first().name,
        "number": version.number,
        "label": label.name,
        "run_id": live_run.pk,
        "job_id": job.pk,
        "import_job_id": import_job.pk,
        "evalset_job_id": evalset_job.pk,
        "live_job_id": live_job.pk,
        "evaluation_id": evaluation_run.pk,
    }
    return users, ids


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    """Built once for the module (the demo load is most of a test's cost), inside a
    transaction rolled back after the module's last test. Each test's own transaction
    (`django_db`) is a savepoint inside it, and each request of a test is rolled back too,
    so no test sees another's writes."""
    with django_db_blocker.unblock(), transaction.atomic():
        yield _build_world()
        transaction.set_rollback(True)


def _url(route: Route, ids: dict) -> str:
    def fill(match: re.Match) -> str:
        name = match.group(2)
        if name == "import_job_id" and route.name == "app-import-evalset-job":
            return str(ids["evalset_job_id"])
        if name == "name" and "labels/" in route.pattern:
            return ids["label"]
        if route.api and name == "name":
            if "tools/" in route.pattern:
                return "LookupBalance"
            if "schemas/" in route.pattern:
                return "Account"
        return str(ids[name])

    return "/" + re.sub(r"<(?:(\w+):)?(\w+)>", fill, route.pattern)


def _expect_refusal(route: Route, role: str, level: str, method: str) -> int | None:
    """The status that refuses `role`, or None when the role may do it."""
    if level == "public":
        return None
    if role == "anonymous":
        return 401 if route.api else 302
    if level == "signed-in":
        return None
    if level == "job":
        return None if role == "owner" else 404
    if role in ("stranger", "staff"):
        return 404
    rank = {"viewer": 1, "editor": 2, "owner": 3}[role]
    if rank >= RANK[level]:
        return None
    return 403


@pytest.mark.parametrize("route", _routes())
def test_every_url_allows_and_refuses_as_the_rules_say(route, world):
    users, ids = world
    path = _url(route, ids)
    failures = []
    for method in METHODS:
        level = required(route, method)
        for role in ROLES:
            client = Client()
            if role != "anonymous":
                client.force_login(users[role])
            with transaction.atomic():
                response = getattr(client, method)(path)
                transaction.set_rollback(True)
            cache.clear()
            status = response.status_code
            body = b"" if response.streaming else response.content
            if SECRET.encode() in body:
                failures.append(f"{method} as {role}: leaks another app ({status})")
            if status >= 500:
                failures.append(f"{method} as {role}: {status}")
                continue
            if status == 405:
                continue  # the method is not served to anyone (checked below)
            refusal = _expect_refusal(route, role, level, method)
            if refusal is None and status in (401, 403, 404):
                failures.append(f"{method} as {role}: refused {status}, needs {level}")
            elif refusal is not None and status != refusal:
                failures.append(f"{method} as {role}: {status}, expected {refusal} ({level})")
    assert not failures, f"{path}: " + "; ".join(failures)


@pytest.mark.parametrize("route", _routes())
def test_a_method_a_view_does_not_serve_is_405_for_its_owner(route, world):
    users, ids = world
    client = Client()
    client.force_login(users["owner"])
    served = []
    for method in METHODS:
        with transaction.atomic():
            status = getattr(client, method)(_url(route, ids)).status_code
            transaction.set_rollback(True)
        cache.clear()
        if status != 405:
            served.append(method)
    assert served, f"{route.pattern} serves no method at all"
    assert "get" in served or "post" in served


def test_every_admin_page_is_for_staff_only(world):
    from django.contrib import admin

    users, _ = world
    staff, owner = Client(), Client()
    staff.force_login(users["staff"])
    owner.force_login(users["owner"])
    paths = ["/admin/"] + [
        f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
        for model in admin.site._registry
    ]
    for path in paths:
        assert staff.get(path).status_code == 200, path
        assert owner.get(path).status_code == 302, path
        assert Client().get(path).status_code == 302, path


def test_ids_of_another_app_are_404_even_for_the_owner(world, django_user_model):
    """An object is always looked up inside the app of the URL (no IDOR through ids)."""
    users, ids = world
    outsider_app = services.app_create(
        owner=django_user_model.objects.get(username="outsider"), name="elsewhere"
    )
    foreign_agent = outsider_app.agents.get()
    client = Client()
    client.force_login(users["owner"])
    for path in (
        f"/apps/{ids['app_id']}/agents/{foreign_agent.pk}/edit",
        f"/apps/{ids['app_id']}/agents/{foreign_agent.pk}/preview",
        f"/api/apps/{ids['app_id']}/agents/{foreign_agent.pk}/",
    ):
        assert client.get(path).status_code == 404, path
