"""Versions of an app: save a named snapshot, label it, diff two, restore one, delete one.

A version stores the app's native document (agents/core/formats.py, written by
`exchange.app_export_native`), so a version is exactly what an export of the
app gave at that moment, and reads back through the same `from_native`.
Writes are keyword-only, atomic and take the acting user; reads that pages and
the API need are here too (`version_list`, `version_for_app`, `app_diff`).

Permissions (checked by the views and the API through `selectors.app_for_user`,
and by `may_delete_versions`): a viewer sees, diffs and exports versions; an
editor saves versions, moves labels and restores; only the app's owner (or
staff) deletes a version.
"""

from __future__ import annotations

import contextlib
import re
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import Max, Prefetch, QuerySet
from django.utils.translation import gettext

from agents.core.cx.app import to_cx_files, zip_bytes
from agents.core.diagnostics import Diagnostic, Message, Severity
from agents.core.diff import AppDiff, diff_apps
from agents.core.formats import from_native
from agents.core.rules import WORKING_COPY_NAMES
from agents.core.simulation.values import joined
from agents.core.spec import AppSpec, ScenarioSpec
from agents.models import (
    LABEL_MAX_LENGTH,
    LABEL_PATTERN,
    Agent,
    AgentApp,
    AppLabel,
    AppVersion,
    AuditEvent,
    Callback,
    LiveRun,
    Scenario,
    ScenarioResult,
    ScenarioStep,
    Schema,
    Tool,
    Variable,
)
from agents.selectors import Access
from agents.services import exchange
from agents.services.apps import app_update
from agents.services.common import ServiceError, app_write, changed
from agents.services.sandbox_door import BoundedRunner, batch_runner

VERSION_NAME_MAX_LENGTH = 200
_LABEL_RE = re.compile(LABEL_PATTERN)


def _error(field: str, message: str, code: str = "SC001") -> Diagnostic:
    return Diagnostic(code=code, severity=Severity.ERROR, message=message, field=field)


# ---------------------------------------------------------------- the history (audit trail)


def _record_history(
    *, actor: AbstractBaseUser, app: AgentApp, action: str, details: Mapping[str, Any]
) -> None:
    """The one place versions write to the app's history (and expire its cached spec).

    Called inside the transaction of `version_create`, `version_restore`,
    `version_delete`, `label_set` and `label_delete`.
    """
    name = str(details.get("name") or details.get("label") or "")
    changed(
        app=app,
        actor=actor,
        action=f"version.{action.removeprefix('version_')}",
        name=name,
        after=dict(details),
    )


# ---------------------------------------------------------------- reads


def version_list(app: AgentApp) -> QuerySet[AppVersion]:
    """The app's versions, newest first, without their documents, with labels and author."""
    return (
        AppVersion.objects.filter(app=app)
        .defer("document")
        .select_related("created_by")
        .prefetch_related(Prefetch("labels", queryset=AppLabel.objects.order_by("name")))
        .order_by("-number")
    )


def label_list(app: AgentApp) -> QuerySet[AppLabel]:
    return (
        AppLabel.objects.filter(app=app)
        .select_related("moved_by")
        .select_related("version")
        .defer("version__document")
        .order_by("name")
    )


def version_for_app(
    app: AgentApp, *, number: int | str | None = None, label: str | None = None
) -> AppVersion:
    """The version `number` of the app, or the one `label` points at; a ServiceError names the
    parameter when there is no such version or label."""
    if label is not None:
        found = (
            AppVersion.objects.filter(app=app, labels__name=label).select_related("created_by")
        ).first()
        if found is None:
            known = ", ".join(app.labels.order_by("name").values_list("name", flat=True))
            hint = f" Labels of this app: {known}." if known else " This app has no labels yet."
            raise ServiceError(
                [
                    _error(
                        "label",
                        Message(
                            "No label '%(label)s' on this app.%(hint)s", label=label, hint=hint
                        ),
                    )
                ]
            )
        return found
    try:
        wanted = int(str(number))
    except ValueError:
        raise ServiceError(
            [
                _error(
                    "version",
                    Message(
                        "version must be a version number (1, 2, ...), not '%(number)s'.",
                        number=number,
                    ),
                )
            ]
        ) from None
    found = AppVersion.objects.filter(app=app, number=wanted).select_related("created_by").first()
    if found is None:
        raise ServiceError(
            [_error("version", Message("This app has no version %(wanted)s.", wanted=wanted))]
        )
    return found


# Versions never change, so what a stored document reads back as can be kept (per process).
_SPECS: OrderedDict[tuple[int, int, str], tuple[AppSpec, tuple[ScenarioSpec, ...]]] = OrderedDict()
_SPECS_KEPT = 8


def version_specs(version: AppVersion) -> tuple[AppSpec, tuple[ScenarioSpec, ...]]:
    """The app and scenarios stored in a version (read back as an import reads the file)."""
    key = (version.pk, version.number, version.created_at.isoformat())
    if key in _SPECS:
        _SPECS.move_to_end(key)
        return _SPECS[key]
    read = _read_specs(version)
    _SPECS[key] = read
    while len(_SPECS) > _SPECS_KEPT:
        _SPECS.popitem(last=False)
    return read


def _read_specs(version: AppVersion) -> tuple[AppSpec, tuple[ScenarioSpec, ...]]:
    spec, scenarios, diagnostics = from_native(version.document)
    if spec is None:
        raise ServiceError(
            [
                _error(
                    "document",
                    Message(
                        "Version %(number)s cannot be read: %(problems)s",
                        number=version.number,
                        problems=joined(d.message for d in diagnostics),
                    ),
                )
            ]
        )
    return spec, scenarios


def version_export_cx(version: AppVersion) -> tuple[bytes, tuple[Diagnostic, ...]]:
    """The CX Agent Studio ZIP of a version and what CX has no place for."""
    spec, scenarios = version_specs(version)
    files, diagnostics = to_cx_files(spec, scenarios)
    return zip_bytes(files), diagnostics


def may_delete_versions(user: AbstractBaseUser, access: Access | None) -> bool:
    return bool(user.is_staff or (access is not None and access.is_owner))


@dataclass(frozen=True)
class DiffSide:
    """One side of a diff: a saved version, or the working copy (`version` None)."""

    version: AppVersion | None
    spec: AppSpec
    scenarios: tuple[ScenarioSpec, ...]

    @property
    def title(self) -> str:
        if self.version is None:
            return gettext("working copy")
        return f"v{self.version.number} · {self.version.name}"


def diff_side(app: AgentApp, version: AppVersion | None) -> DiffSide:
    if version is None:
        spec, scenarios = exchange.app_export_specs(app)
        return DiffSide(None, spec, scenarios)
    spec, scenarios = version_specs(version)
    return DiffSide(version, spec, scenarios)


def app_diff(
    app: AgentApp,
    before: DiffSide,
    after: DiffSide,
    *,
    values: Mapping[str, Any] | None = None,
    channel: str = "web",
    modality: str = "text",
    simulate_scenarios: bool = True,
    runner: BoundedRunner | None = None,
) -> AppDiff:
    """The three-layer diff; scenarios are simulated through the one door (bounded: caps,
    required protections), on the batch's `runner` when given."""
    app_id = f"apps/{app.pk}"
    scenarios_before = tuple(_with_app_id(s, app_id) for s in before.scenarios)
    scenarios_after = tuple(_with_app_id(s, app_id) for s in after.scenarios)
    if not simulate_scenarios or not (scenarios_before and scenarios_after):
        return diff_apps(
            before.spec,
            after.spec,
            before_scenarios=scenarios_before,
            after_scenarios=scenarios_after,
            values=values,
            channel=channel,
            modality=modality,
            simulate_scenarios=simulate_scenarios,
        )
    with batch_runner() if runner is None else contextlib.nullcontext(runner) as bounded:
        return diff_apps(
            before.spec,
            after.spec,
            before_scenarios=scenarios_before,
            after_scenarios=scenarios_after,
            values=values,
            channel=channel,
            modality=modality,
            simulator=bounded.simulate,
        )


def _with_app_id(scenario: ScenarioSpec, app_id: str) -> ScenarioSpec:
    return replace(scenario, session=replace(scenario.session, app_id=app_id))


# ---------------------------------------------------------------- writes


@transaction.atomic
def version_create(
    *, app: AgentApp, user: AbstractBaseUser, name: str, note: str = ""
) -> AppVersion:
    """Save the whole app as it is now as version N+1 named `name`."""
    name = (name or "").strip()
    if not name:
        raise ServiceError(
            [_error("name", Message("Give the version a name, e.g. 'Before tone change'."))]
        )
    for field, text in (("name", name), ("note", note or "")):
        if "\x00" in text:
            raise ServiceError(
                [
                    _error(
                        field,
                        Message("The %(field)s contains a NUL character; remove it.", field=field),
                    )
                ]
            )
    if len(name) > VERSION_NAME_MAX_LENGTH:
        raise ServiceError(
            [
                _error(
                    "name",
                    Message(
                        "The name is too long: at most %(version_name_max_length)s characters.",
                        version_name_max_length=VERSION_NAME_MAX_LENGTH,
                    ),
                )
            ]
        )
    # Lock the app: two saves at once get consecutive numbers, and no edit slips in between.
    app = AgentApp.objects.select_for_update().get(pk=app.pk)
    if AppVersion.objects.filter(app=app, name=name).exists():
        raise ServiceError(
            [
                _error(
                    "name",
                    Message("This app already has a version named '%(name)s'.", name=name),
                    "SC004",
                )
            ]
        )
    number = (AppVersion.objects.filter(app=app).aggregate(n=Max("number"))["n"] or 0) + 1
    version = AppVersion.objects.create(
        app=app,
        number=number,
        name=name,
        note=note or "",
        document=exchange.app_export_native(app),
        created_by=user,
    )
    _record_history(
        actor=user, app=app, action="version_create", details={"number": number, "name": name}
    )
    return version


def _ids_to_keep(
    app: AgentApp, staging: AgentApp
) -> tuple[dict[int, int], dict[int, int], dict[int, list[int]]]:
    """Which restored rows take the id of the row they replace, so that links to an agent or
    a scenario that still exists keep answering: {new id: old id} for agents (same display
    name) and scenarios (same agent and name), and the live runs of each kept scenario."""
    old_agents = dict(Agent.objects.filter(app=app).values_list("display_name", "pk"))
    kept_agents = {
        new: old_agents[name]
        for name, new in Agent.objects.filter(app=staging).values_list("display_name", "pk")
        if name in old_agents
    }
    old_scenarios = {
        (agent, name): pk
        for agent, name, pk in Scenario.objects.filter(agent__app=app).values_list(
            "agent__display_name", "name", "pk"
        )
    }
    kept_scenarios = {}
    for agent, name, pk in Scenario.objects.filter(agent__app=staging).values_list(
        "agent__display_name", "name", "pk"
    ):
        if (agent, name) in old_scenarios:
            kept_scenarios[pk] = old_scenarios.pop((agent, name))
    live_runs: dict[int, list[int]] = {}
    for run, scenario in LiveRun.objects.filter(
        scenario_id__in=list(kept_scenarios.values())
    ).values_list("pk", "scenario_id"):
        live_runs.setdefault(scenario, []).append(run)
    return kept_agents, kept_scenarios, live_runs


def _pins_of(scenarios: Mapping[int, int]) -> dict[int, int]:
    """{old scenario id: its pinned recording} for the scenarios a restore keeps: the pin is
    the designer's choice of recording, not part of a version, so a restore keeps it."""
    return dict(
        Scenario.objects.filter(
            pk__in=list(scenarios.values()), pinned_run__isnull=False
        ).values_list("pk", "pinned_run_id")
    )


def _take_old_ids(
    agents: Mapping[int, int], scenarios: Mapping[int, int], live_runs: Mapping[int, list[int]]
) -> None:
    """Give restored rows the ids of the deleted rows they replace (see _ids_to_keep), with
    every reference to them (foreign keys are checked at commit)."""
    tools_through = Agent.tools.through
    children_through = Agent.children.through
    for new, old in agents.items():
        Agent.objects.filter(pk=new).update(id=old)
        Callback.objects.filter(agent_id=new).update(agent_id=old)
        Scenario.objects.filter(agent_id=new).update(agent_id=old)
        tools_through.objects.filter(agent_id=new).update(agent_id=old)
        children_through.objects.filter(from_agent_id=new).update(from_agent_id=old)
        children_through.objects.filter(to_agent_id=new).update(to_agent_id=old)
    for new, old in scenarios.items():
        Scenario.objects.filter(pk=new).update(id=old)
        ScenarioStep.objects.filter(scenario_id=new).update(scenario_id=old)
        ScenarioResult.objects.filter(scenario_id=new).update(scenario_id=old)
        LiveRun.objects.filter(pk__in=live_runs.get(old, [])).update(scenario_id=old)


@app_write
def version_restore(*, version: AppVersion, user: AbstractBaseUser) -> AgentApp:
    """Replace the working copy with the version: one atomic change (id, owner, shares kept).

    The version's document goes through the import (`exchange.app_import`: the same
    checks and services as an uploaded file) into a staging app of the same owner;
    the app's content is then replaced by the staging app's rows, and the staging
    app, empty by then, is deleted. Everything or nothing: one transaction.
    """
    spec, scenarios = version_specs(version)
    app = AgentApp.objects.select_for_update().get(pk=version.app_id)
    staging = exchange.app_import(
        owner=app.owner, spec=spec, scenarios=scenarios, name=f"{spec.name} (restoring)"
    )
    kept_agents, kept_scenarios, live_runs = _ids_to_keep(app, staging)
    pins = _pins_of(kept_scenarios)
    # Variables protect their schema; remove them first (as app_delete does).
    Variable.objects.filter(app=app).delete()
    for model in (Agent, Tool, Schema):
        model.objects.filter(app=app).delete()
    for model in (Schema, Variable, Tool, Agent):  # callbacks and scenarios follow their agent
        model.objects.filter(app=staging).update(app=app)
    _take_old_ids(kept_agents, kept_scenarios, live_runs)
    for scenario, run in pins.items():
        Scenario.objects.filter(pk=scenario).update(pinned_run_id=run)
    # The staging app's own history (its import, object by object) is not the app's.
    AuditEvent.objects.filter(app=staging).delete()
    AgentApp.objects.filter(pk=staging.pk).delete()
    AgentApp.objects.filter(pk=app.pk).update(cx=spec.cx)  # what a CX import kept, as then
    app = app_update(app=app, name=spec.name, description=spec.description, actor=user)
    _record_history(
        actor=user,
        app=app,
        action="version_restore",
        details={"number": version.number, "name": version.name},
    )
    return app


@transaction.atomic
def version_delete(*, version: AppVersion, user: AbstractBaseUser) -> None:
    """Delete a version; refused while a label points at it (move the label first)."""
    labels = list(version.labels.order_by("name").values_list("name", flat=True))
    if labels:
        names = ", ".join(labels)
        raise ServiceError(
            [
                _error(
                    "labels",
                    Message(
                        "Version %(number)s is labelled %(names)s: move or remove the "
                        "label%(value)s first.",
                        number=version.number,
                        names=names,
                        value="s" if len(labels) > 1 else "",
                    ),
                )
            ]
        )
    _record_history(
        actor=user,
        app=version.app,
        action="version_delete",
        details={"number": version.number, "name": version.name},
    )
    version.delete()


def label_problems(name: str) -> list[Diagnostic]:
    if not name:
        return [_error("name", Message("Give the label a name, e.g. production or staging."))]
    if len(name) > LABEL_MAX_LENGTH:
        return [
            _error(
                "name",
                Message(
                    "The label is too long: at most %(label_max_length)s characters.",
                    label_max_length=LABEL_MAX_LENGTH,
                ),
            )
        ]
    if not _LABEL_RE.fullmatch(name):
        return [
            _error(
                "name",
                Message(
                    "'%(name)s' is not a valid label: use lower-case letters, "
                    "digits, '-', '_' and '.', starting with a letter or digit "
                    "(for example production).",
                    name=name,
                ),
            )
        ]
    if name.isdigit() or name in WORKING_COPY_NAMES:
        # An experiment's `versions` and `--version` read 3 as version 3, current as the
        # working copy: a label of that name could never be picked there.
        return [
            _error(
                "name",
                Message(
                    "'%(name)s' names a version number or the working copy where a version "
                    "is asked for: give the label a name that has a letter and is none of "
                    "%(reserved)s (for example production or v%(name)s).",
                    name=name,
                    reserved=", ".join(WORKING_COPY_NAMES),
                ),
            )
        ]
    return []


@transaction.atomic
def label_set(*, app: AgentApp, version: AppVersion, name: str, user: AbstractBaseUser) -> AppLabel:
    """Point the label `name` at `version` (creating the label, or moving it)."""
    name = (name or "").strip()
    problems = label_problems(name)
    if problems:
        raise ServiceError(problems)
    if version.app_id != app.pk:
        raise ServiceError([_error("version", Message("That version belongs to another app."))])
    try:
        with transaction.atomic():
            label, created = AppLabel.objects.select_for_update().get_or_create(
                app=app, name=name, defaults={"version": version, "moved_by": user}
            )
    except IntegrityError as exc:  # a concurrent save created it first
        raise ServiceError(
            [
                _error(
                    "name",
                    Message(
                        "The label '%(name)s' was just created by someone else; try again.",
                        name=name,
                    ),
                )
            ]
        ) from exc
    previous = None if created else label.version_id
    if not created and label.version_id != version.pk:
        label.version = version
        label.moved_by = user
        label.save(update_fields=["version", "moved_by", "updated_at"])
    _record_history(
        actor=user,
        app=app,
        action="label_set",
        details={"label": name, "number": version.number, "previous_version_id": previous},
    )
    return label


@transaction.atomic
def label_delete(*, app: AgentApp, name: str, user: AbstractBaseUser) -> None:
    deleted, _ = AppLabel.objects.filter(app=app, name=name).delete()
    if not deleted:
        raise ServiceError([_error("name", Message("No label '%(name)s' on this app.", name=name))])
    _record_history(actor=user, app=app, action="label_delete", details={"label": name})
