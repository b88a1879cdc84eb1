"""What every write shares: refusals as diagnostics, optimistic locking, the audit record.

Every service function takes the acting user (`actor`; None only for the system,
e.g. the demo loader), runs in one transaction, and ends with `changed()`, which
records who did what (before/after) and bumps the app's revision (the key of its
cached spec).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import F, Model

from agents.core import rules
from agents.core.diagnostics import Diagnostic, Message, Severity
from agents.core.rename import RenameKind, rename_references
from agents.i18n import localize
from agents.models import Agent, AgentApp, AuditEvent

logger = logging.getLogger("agents.services")

CODES = rules.CODES
UNSET: Any = object()
Actor = AbstractBaseUser | None


class ServiceError(Exception):
    """A write was refused; `diagnostics` say which field and why."""

    def __init__(self, diagnostics: Sequence[Diagnostic]) -> None:
        self.diagnostics = tuple(diagnostics)
        super().__init__("; ".join(d.message for d in self.diagnostics))

    def field_errors(self) -> dict[str, list[str]]:
        """Each field's messages, in the reader's language (the active one)."""
        errors: dict[str, list[str]] = {}
        for diagnostic in self.diagnostics:
            errors.setdefault(diagnostic.field or "__all__", []).append(
                localize(diagnostic.message)
            )
        return errors

    def localized(self) -> str:
        """The messages joined, in the reader's language (`str(error)` is English)."""
        return "; ".join(localize(d.message) for d in self.diagnostics)


class StaleObjectError(ServiceError):
    """Someone else saved the object since it was read: the save is refused, nothing is lost."""


def error(field: str, message: str, code: str = "SC001") -> Diagnostic:
    return Diagnostic(code=code, severity=Severity.ERROR, message=message, field=field)


def raise_if(diagnostics: Iterable[Diagnostic]) -> None:
    errors = [d for d in diagnostics if d.severity is Severity.ERROR]
    if errors:
        logger.info("refused save: %s", "; ".join(f"{d.field}: {d.message}" for d in errors))
        raise ServiceError(errors)


def errors_only(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    return [d for d in diagnostics if d.severity is Severity.ERROR]


def on_field(diagnostics: Iterable[Diagnostic], field: str) -> list[Diagnostic]:
    """Name the form field that core diagnostics concern (their message keeps the inner path)."""
    return [replace(d, field=field) for d in diagnostics]


def check_version(obj: Model, expected_version: int | None) -> None:
    if expected_version is not None and obj.version != expected_version:
        label = obj._meta.verbose_name
        logger.info("refused stale save of %s %s", label, obj.pk)
        raise StaleObjectError(
            [
                error(
                    "__all__",
                    Message(
                        "This %(label)s was changed by someone else while you were "
                        "editing it (you edited version %(expected_version)s, it is "
                        "now at version %(version)s). Reload to see their change, "
                        "then apply yours again.",
                        label=label,
                        expected_version=expected_version,
                        version=obj.version,
                    ),
                    code="SC002",
                )
            ]
        )


def _nul_problems(obj: Model) -> list[Diagnostic]:
    """Text that a database cannot store: PostgreSQL refuses the NUL character."""
    problems = []
    for field in obj._meta.concrete_fields:
        value = getattr(obj, field.attname, None)
        if isinstance(value, str) and "\x00" in value:
            message = Message("This text contains a NUL character (\\x00), which cannot be saved.")
            problems.append(error(field.name, message))
    return problems


def save(obj: Model) -> None:
    """Save and bump the version; a concurrent unique-constraint hit becomes a ServiceError,
    text with a NUL character a refusal naming the field (on every database alike)."""
    raise_if(_nul_problems(obj))
    if obj.pk is not None:
        obj.version += 1
    try:
        with transaction.atomic():
            obj.save()
    except IntegrityError as exc:
        raise ServiceError(
            [
                error(
                    "name",
                    Message(
                        "That name was just taken by another save in this app; choose another."
                    ),
                )
            ]
        ) from exc


def unique(model: type[Model], obj: Any, *, what: str) -> list[Diagnostic]:
    if obj.app_id is None:  # a new app in the admin: nothing to clash with yet
        return []
    clash = model.objects.filter(app_id=obj.app_id, name=obj.name).exclude(pk=obj.pk)
    if obj.name and clash.exists():
        return [
            error(
                "name",
                Message(
                    "A %(what)s named '%(name)s' already exists in this app.",
                    what=what,
                    name=obj.name,
                ),
                "SC004",
            )
        ]
    return []


def locked(model: type[Model], pk: int) -> Any:
    return model.objects.select_for_update().get(pk=pk)


def changed(
    *,
    app: AgentApp | int,
    actor: Actor,
    action: str,
    name: str = "",
    before: Any = None,
    after: Any = None,
) -> None:
    """Record one write in the app's history and bump its revision (cached specs expire)."""
    app_id = app if isinstance(app, int) else app.pk
    AgentApp.objects.filter(pk=app_id).update(revision=F("revision") + 1)
    app_name = app.name if isinstance(app, AgentApp) else ""
    if not app_name:
        app_name = AgentApp.objects.filter(pk=app_id).values_list("name", flat=True).first() or ""
    AuditEvent.objects.create(
        app_id=app_id,
        app_name=app_name,
        actor=actor if actor is not None and actor.is_authenticated else None,
        actor_name=actor.get_username() if actor is not None and actor.is_authenticated else "",
        action=action,
        object_type=action.split(".", 1)[0],
        object_name=name[: rules.DISPLAY_NAME_MAX_LENGTH],
        before=before,
        after=after,
    )


# What a tool and a scenario have besides their name, as the services take them.
TOOL_FIELDS = (
    "kind",
    "description",
    "python_code",
    "openapi_spec",
    "mcp_url",
    "mcp_headers",
    "mock_enabled",
    "mock_state",
    "mock_response",
)
SCENARIO_FIELDS = (
    "name",
    "steps_script",
    "session_values",
    "channel",
    "modality",
    "session_id",
    "project_id",
    "project_number",
    "location",
    "now",
    "token_budget",
    "use_mocks",
)

# The fields of each kind of object that its history shows before and after a change.
_SNAPSHOT_FIELDS: dict[str, tuple[str, ...]] = {
    "agentapp": ("name", "description"),
    "schema": ("name", "description", "json_schema"),
    "variable": ("name", "type", "item_type", "schema_id", "default", "description"),
    "tool": ("name", *TOOL_FIELDS),
    "agent": ("display_name", "description", "instructions", "is_root"),
    "callback": ("kind", "order", "code"),
    "scenario": tuple(f for f in SCENARIO_FIELDS if f != "steps_script"),
}


def snapshot(obj: Model | None) -> dict[str, Any] | None:
    """The object's audited fields as JSON-ready values (None for "did not exist")."""
    if obj is None:
        return None
    fields = _SNAPSHOT_FIELDS[obj._meta.model_name]
    return {field: getattr(obj, field) for field in fields}


def rewrite_text_field(
    *,
    app_id: int,
    objects: Iterable[Model],
    field: str,
    rewrite: Callable[[str], str],
    action: str,
    name_of: Callable[[Any], str],
    actor: Actor,
) -> None:
    """Apply `rewrite` to `field` of each object (locked by the caller's queryset); save and
    audit those it changes: a rename reaching into instructions or code."""
    for obj in objects:
        before = getattr(obj, field)
        after = rewrite(before)
        if after != before:
            setattr(obj, field, after)
            save(obj)
            changed(
                app=app_id,
                actor=actor,
                action=action,
                name=name_of(obj),
                before={field: before},
                after={field: after},
            )


def rewrite_instructions(
    *, app_id: int, kind: RenameKind, old: str, new: str, actor: Actor
) -> None:
    """Every agent's instructions with references to the renamed object updated (locked)."""
    rewrite_text_field(
        app_id=app_id,
        objects=Agent.objects.select_for_update().filter(app_id=app_id),
        field="instructions",
        rewrite=lambda text: rename_references(text, kind, old, new),
        action="agent.instructions",
        name_of=lambda agent: agent.display_name,
        actor=actor,
    )
