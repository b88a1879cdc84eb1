"""Reads that pages and the API need, permission-checked, in a fixed number of queries."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Prefetch, Q, QuerySet
from django.http import Http404
from django.utils.translation import gettext as _

from agents.core.spec import AppSpec, ScenarioSpec
from agents.models import (
    JOB_ACTIVE,
    Agent,
    AgentApp,
    AppShare,
    AuditEvent,
    Job,
    JobStatus,
    Scenario,
    Tool,
    Variable,
)


@dataclass(frozen=True)
class Access:
    """What a user may do with one app."""

    role: str  # "owner", "editor" or "viewer"

    @property
    def can_edit(self) -> bool:
        return self.role in ("owner", "editor")

    @property
    def is_owner(self) -> bool:
        return self.role == "owner"


def apps_visible_to(user: AbstractBaseUser) -> QuerySet[AgentApp]:
    """Apps the user owns or that were shared with them."""
    return (
        AgentApp.objects.filter(Q(owner=user) | Q(shares__user=user))
        .distinct()
        .select_related("owner")
    )


def app_list(user: AbstractBaseUser, *, search: str = "") -> QuerySet[AgentApp]:
    apps = apps_visible_to(user).annotate(
        variable_count=Count("variables", distinct=True),
        agent_count=Count("agents", distinct=True),
    )
    if search:
        apps = apps.filter(Q(name__icontains=search) | Q(description__icontains=search))
    return apps.order_by("-updated_at", "id")


def app_access(user: AbstractBaseUser, app: AgentApp) -> Access | None:
    if app.owner_id == user.pk:
        return Access("owner")
    share = AppShare.objects.filter(app=app, user=user).values_list("role", flat=True).first()
    return Access(share) if share else None


def app_for_user(
    user: AbstractBaseUser, app_id: int, *, edit: bool = False, queryset: QuerySet | None = None
) -> tuple[AgentApp, Access]:
    """The app if the user may see it (404 otherwise) — and may edit it when `edit` (403)."""
    if not user.is_authenticated:
        raise PermissionDenied(_("Sign in first."))
    # What a CX import kept (`cx`) is read only by the exports, which load it themselves.
    queryset = queryset if queryset is not None else AgentApp.objects.defer("cx")
    app = queryset.filter(pk=app_id).first()
    if app is None:
        raise Http404(_("No such app."))
    access = app_access(user, app)
    if access is None:
        raise Http404(_("No such app."))
    if edit and not access.can_edit:
        raise PermissionDenied(
            _("You can view this app but not change it; ask its owner for editor access.")
        )
    return app, access


def agent_for_user(
    user: AbstractBaseUser, app_id: int, agent_id: int, *, with_scenarios: bool = False
) -> tuple[AgentApp, Agent, Access]:
    """One agent and its app in one query, if the user may see the app (404 otherwise).

    What the live preview reads on every keystroke; the rest of the app comes from
    `app_spec` (cached by revision)."""
    if not user.is_authenticated:
        raise PermissionDenied(_("Sign in first."))
    agents = Agent.objects.select_related("app").filter(pk=agent_id, app_id=app_id)
    if with_scenarios:
        scenarios = Scenario.objects.prefetch_related("steps")
        agents = agents.prefetch_related(Prefetch("scenarios", queryset=scenarios))
    agent = agents.first()
    if agent is None:
        if not AgentApp.objects.filter(pk=app_id).exists():
            raise Http404(_("No such app."))
        app_for_user(user, app_id)  # 404 for a stranger; the agent is not in this app
        raise Http404(_("No such agent in this app."))
    access = app_access(user, agent.app)
    if access is None:
        raise Http404(_("No such app."))
    return agent.app, agent, access


def app_with_everything(app_id: int, *, carry: bool = False) -> QuerySet[AgentApp]:
    """An app and every row the designer shows, in a constant number of queries (`carry`:
    with what a CX import kept at the app level, which only exports read)."""
    apps = AgentApp.objects.filter(pk=app_id)
    return (
        (apps if carry else apps.defer("cx"))
        .select_related("owner")
        .prefetch_related(
            Prefetch("variables", queryset=Variable.objects.select_related("schema")),
            "schemas",
            Prefetch("tools", queryset=Tool.objects.all()),
            Prefetch(
                "agents",
                queryset=Agent.objects.prefetch_related(
                    Prefetch("tools", queryset=Tool.objects.only("id", "name", "app_id", "cx")),
                    Prefetch(
                        "children", queryset=Agent.objects.only("id", "display_name", "app_id")
                    ),
                    "callbacks",
                    Prefetch("scenarios", queryset=Scenario.objects.prefetch_related("steps")),
                ),
            ),
            Prefetch("shares", queryset=AppShare.objects.select_related("user")),
        )
    )


def app_specs(app: AgentApp) -> tuple[AppSpec, tuple[ScenarioSpec, ...]]:
    """The app and its scenarios as the core sees them, read in a fixed number of queries."""
    loaded = app_with_everything(app.pk, carry=True).get()
    scenarios = tuple(
        scenario.to_spec(app_id=str(loaded.pk))
        for agent in loaded.agents.all()
        for scenario in agent.scenarios.all()
    )
    return loaded.to_spec(), scenarios


def app_spec(app: AgentApp) -> AppSpec:
    """The app as the core sees it, cached by the app's revision (without the app-level CX
    carry, which only exports need: `app_specs` has it).

    Every service write bumps `AgentApp.revision`, so a cached spec is never stale:
    an unchanged app costs no query beyond the one that read `app`; a changed one
    is read once (in a fixed number of queries) and cached again. The cache is
    Django's (locmem per process by default, Redis with `CACHE_URL`).
    """
    # The creation time too: a restored database or a test rollback can give another app
    # the same id and revision.
    memo = getattr(app, "_spec_memo", None)
    if memo is not None and memo[0] == app.revision:
        return memo[1]  # already read in this request
    key = f"statecraft:appspec:{app.pk}:{app.revision}:{app.created_at.timestamp()}"
    spec = cache.get(key)
    if spec is None:
        loaded = app if _is_prefetched(app) else app_with_everything(app.pk).get()
        spec = loaded.to_spec(carry=False)
        cache.set(key, spec, timeout=settings.APP_SPEC_CACHE_SECONDS)
    app._spec_memo = (app.revision, spec)
    return spec


def app_scenario_specs(app: AgentApp) -> tuple[ScenarioSpec, ...]:
    """The app's scenarios as the core sees them, cached by the app's revision as
    `app_spec` (a scenario's save bumps it); read in two queries (scenarios, steps)."""
    key = f"statecraft:scenariospecs:{app.pk}:{app.revision}:{app.created_at.timestamp()}"
    cached = cache.get(key)
    if cached is not None:
        return cached
    scenarios = (
        Scenario.objects.filter(agent__app=app)
        .select_related("agent")
        .prefetch_related("steps")
        .order_by("-agent__is_root", "agent__display_name", "agent_id", "pk")
    )
    specs = tuple(s.to_spec(app_id=str(app.pk)) for s in scenarios)
    cache.set(key, specs, timeout=settings.APP_SPEC_CACHE_SECONDS)
    return specs


def _is_prefetched(app: AgentApp) -> bool:
    cached = getattr(app, "_prefetched_objects_cache", {})
    return all(name in cached for name in ("variables", "schemas", "tools", "agents"))


def app_was_imported(app: AgentApp) -> bool:
    """Whether an import made the app (it then has an import report)."""
    return app.audit_events.filter(action="app.import").exists()


def app_history(app: AgentApp, *, limit: int = 200) -> QuerySet[AuditEvent]:
    """The app's most recent changes, newest first."""
    return app.audit_events.select_related("actor").order_by("-created_at", "-id")[:limit]


def app_cx_settings(app: AgentApp) -> AppSpec:
    """The app with only its app-level CX carry (``app.json`` as imported): what a golden's
    check reads from it (``extraToolCallBehavior``). Reads only the carry column, once per
    app object and revision (Run all asks for each scenario)."""
    memo = getattr(app, "_cx_settings_memo", None)
    if memo is not None and memo[0] == app.revision:
        return memo[1]
    carry = AgentApp.objects.filter(pk=app.pk).values_list("cx", flat=True).first() or {}
    spec = AppSpec(name=app.name, cx=carry)
    app._cx_settings_memo = (app.revision, spec)  # type: ignore[attr-defined]
    return spec


def app_needs_model_evaluations(app: AgentApp) -> list[tuple[str, str]]:
    """The CX evaluations of the scenario kind an imported app carries, (name, file): they
    need a model, so they are listed, never run. Reads only the app's carry column."""
    from agents.core.cx.evaluations import needs_model_evaluations

    carry = AgentApp.objects.filter(pk=app.pk).values_list("cx", flat=True).first() or {}
    return needs_model_evaluations(AppSpec(name=app.name, cx=carry))


def app_has_rubrics(app: AgentApp) -> bool:
    """Whether a live Run all of the app judges rubrics: one of its CX evaluations of the
    scenario kind has a rubric (the judge picker acts only then)."""
    import json

    from agents.core.cx.evaluations import needs_model_evaluations
    from agents.core.user_sim import read_scenario

    carry = AgentApp.objects.filter(pk=app.pk).values_list("cx", flat=True).first() or {}
    files = carry.get("files") if isinstance(carry, dict) else None
    for _name, path in needs_model_evaluations(AppSpec(name=app.name, cx=carry)):
        try:
            scenario = read_scenario(json.loads(files[path]), path)
        except (ValueError, TypeError, KeyError, RecursionError):
            continue
        if scenario is not None and scenario.rubrics:
            return True
    return False


def latest_run_all(app: AgentApp) -> Job | None:
    """The app's latest Run all that finished with its results (whoever ran it; an
    ``evaluate_app`` job of the whole app that succeeded, not one of the parts
    ``manage.py evaluate`` splits it into), or None."""
    return (
        Job.objects.filter(app=app, kind="evaluate_app", status=JobStatus.SUCCEEDED)
        .exclude(params__has_key="scenarios")
        .select_related("owner")
        .order_by("-finished_at", "-created_at")
        .first()
    )


def active_run_all(user: AbstractBaseUser, app: AgentApp) -> Job | None:
    """The user's queued or running Run all of the app (the newest), or None."""
    if user is None or not user.pk:
        return None
    return (
        Job.objects.filter(owner=user, app=app, kind="evaluate_app", status__in=JOB_ACTIVE)
        .order_by("-created_at")
        .first()
    )
