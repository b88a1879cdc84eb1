"""What every write shares: refusals as diagnostics, optimistic locking, the audit record.

Every service function takes the acting user (`actor`; None only for the system,
e.g. the demo loader), runs in one transaction, and ends with `changed()`, which
records who did what (before/after) and bumps the app's revision (the key of its
cached spec).
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.db import IntegrityError, OperationalError, connection, transaction
from django.db.models import F, ForeignKey, Model, UniqueConstraint

from agents.core import rules
from agents.core.defaults import DEFAULTS
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
    """Someone else saved the object since it was read: the save is refused, nothing is lost.

    `current_version` is the version saved meanwhile (None when unknown), so a form can
    offer to save over it without a reload that would drop what was typed."""

    def __init__(self, diagnostics: Any, current_version: int | None = None) -> None:
        super().__init__(diagnostics)
        self.current_version = current_version


def setting(name: str) -> Any:
    """The operator setting `name`, else its one default (``agents.core.defaults``)."""
    return getattr(settings, name, DEFAULTS[name])


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
            ],
            current_version=obj.version,
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


def save(obj: Model, update_fields: Iterable[str] | None = None) -> None:
    """Save and bump the version; a concurrent unique-constraint hit becomes a ServiceError,
    text with a NUL character a refusal naming the field (on every database alike).

    `update_fields` writes only those columns (and the version and `updated_at`)."""
    raise_if(_nul_problems(obj))
    if obj.pk is not None:
        obj.version += 1
    if update_fields is not None:
        update_fields = [*update_fields, "version", "updated_at"]
    try:
        with transaction.atomic():
            obj.save(update_fields=update_fields)
    except IntegrityError as exc:
        raise ServiceError([integrity_problem(obj, exc)]) from exc


_SQLITE_UNIQUE = re.compile(r"UNIQUE constraint failed: (.+)")
_SQLITE_CHECK = re.compile(r"CHECK constraint failed: (\w+)")
_SQLITE_INDEX = re.compile(r"index '(\w+)'")


def _constraint_name(obj: Model, exc: IntegrityError) -> str | None:
    """The name of the database constraint a save hit: PostgreSQL says it (diag), SQLite
    names a check constraint or an expression index, and the columns of a unique one."""
    cause = exc.__cause__
    diag = getattr(cause, "diag", None)
    if diag is not None and getattr(diag, "constraint_name", None):
        return str(diag.constraint_name)
    text = str(exc)
    match = _SQLITE_CHECK.search(text) or _SQLITE_INDEX.search(text)
    if match:
        return match.group(1)
    match = _SQLITE_UNIQUE.search(text)
    if match:
        table = obj._meta.db_table
        columns = {part.strip().removeprefix(f"{table}.") for part in match.group(1).split(",")}
        for constraint in obj._meta.constraints:
            fields = getattr(constraint, "fields", ())
            if fields and {obj._meta.get_field(f).column for f in fields} == columns:
                return constraint.name
    return None


def _fields_of(constraint: Any) -> list[str]:
    fields = list(getattr(constraint, "fields", ()) or ())
    for expression in getattr(constraint, "expressions", ()) or ():
        fields.extend(getattr(source, "name", "") for source in expression.get_source_expressions())
        fields.append(getattr(expression, "name", ""))
    condition = getattr(constraint, "condition", None)
    if condition is not None and not fields:
        for child in condition.children:
            if isinstance(child, tuple):
                fields.append(child[0].split("__")[0])
    return [f for f in fields if f]


def integrity_problem(obj: Model, exc: IntegrityError) -> Diagnostic:
    """A refused save that the database caught (a concurrent save, or a rule the form did
    not check): the diagnostic names the constraint and the field it concerns."""
    name = _constraint_name(obj, exc)
    constraint = next((c for c in obj._meta.constraints if c.name == name), None)
    label = obj._meta.verbose_name
    if constraint is None:
        detail = f" ({name})" if name else ""
        message = Message(
            "The database refused this %(label)s%(detail)s: %(exc)s. "
            "Reload and apply your change again.",
            label=label,
            detail=detail,
            exc=exc,
        )
        return error("__all__", message)
    fields = _fields_of(constraint)
    own = [f for f in fields if not isinstance(obj._meta.get_field(f), ForeignKey)]
    field = own[-1] if own else "__all__"
    if isinstance(constraint, UniqueConstraint):
        scope = [obj._meta.get_field(f).verbose_name for f in fields if f not in own]
        within = f" in this {scope[0]}" if scope else ""
        values = ", ".join(f"{f} {getattr(obj, f, '')!r}" for f in own)
        message = Message(
            "Another %(label)s with %(values)s was just saved%(within)s "
            "(database rule %(name)s); choose another %(value)s.",
            label=label,
            values=values,
            within=within,
            name=constraint.name,
            value=own[-1] if own else "value",
        )
        return error(field, message, "SC004" if field == "name" else "SC001")
    value = getattr(obj, field, "") if field != "__all__" else ""
    message = Message(
        "The database refused %(field)s %(value)s of this %(label)s "
        "(database rule %(name)s); change the value to one the form "
        "accepts.",
        field=field,
        value=repr(value),
        label=label,
        name=constraint.name,
    )
    return error(field, message)


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
    """The row, locked (its app's row first, the one lock order: `lock_app`). Gone
    meanwhile (deleted, or replaced by a version restore): a `StaleObjectError` (409)."""
    app_id = _app_id_of(model, pk)
    if app_id is not None:
        lock_app(app_id)
    try:
        return model.objects.select_for_update().get(pk=pk)
    except model.DoesNotExist:
        label = model._meta.verbose_name
        raise StaleObjectError(
            [
                error(
                    "__all__",
                    Message(
                        "This %(label)s was deleted or replaced by someone else (a version "
                        "restored?) while you were editing it. Reload, then apply your "
                        "change again.",
                        label=label,
                    ),
                    code="SC002",
                )
            ]
        ) from None


# ---------------------------------------------------------------- one lock order

# Every write that touches an app and its objects locks the app's row first, then the
# objects (`app_write`, `locked`): two writes of one app queue on its row instead of each
# holding what the other waits for (a version restore deletes the objects an edit locked).
WRITE_ATTEMPTS = 3
_APP_PATHS = {
    "Scenario": "agent__app_id",
    "Callback": "agent__app_id",
    "ScenarioStep": "scenario__agent__app_id",
}


def _app_id_of(model: type[Model], pk: Any) -> int | None:
    if model is AgentApp:
        return pk
    path = _APP_PATHS.get(model.__name__)
    if path is None:
        if not any(f.name == "app" for f in model._meta.get_fields()):
            return None
        path = "app_id"
    return model.objects.filter(pk=pk).values_list(path, flat=True).first()


def lock_app(app_id: int) -> None:
    """Lock the app's row (SELECT … FOR UPDATE) in the current transaction."""
    AgentApp.objects.select_for_update().filter(pk=app_id).values_list("pk").first()


def _app_of_call(kwargs: Mapping[str, Any]) -> int | None:
    """The app a service call writes to, from its keyword arguments."""
    for name in ("app", "version"):
        value = kwargs.get(name)
        if isinstance(value, AgentApp):
            return value.pk
        if isinstance(value, int) and name == "app":
            return value
        if value is not None and getattr(value, "app_id", None):
            return value.app_id
    for name in ("variable", "schema", "tool", "agent", "attach_to", "scenario", "callback"):
        value = kwargs.get(name)
        if isinstance(value, Model) and value.pk is not None:
            return _app_id_of(type(value), value.pk)
    return None


def is_conflict(exc: BaseException) -> bool:
    """A deadlock or a serialization failure (PostgreSQL 40P01 / 40001): retrying the
    whole transaction is the cure."""
    cause = exc.__cause__
    code = getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None)
    return code in ("40P01", "40001") or "deadlock detected" in str(exc)


def app_write[**P, R](func: Callable[P, R]) -> Callable[P, R]:
    """A write service of an app's objects: one transaction that locks the app's row first
    (the one lock order), retried up to ``WRITE_ATTEMPTS`` times on a deadlock or a
    serialization failure when it is the outermost transaction (inside another, the error
    rises to the caller's: a 503 with Retry-After, designer/errors.py)."""

    @functools.wraps(func)
    def write(*args: P.args, **kwargs: P.kwargs) -> R:
        attempts = 1 if connection.in_atomic_block else WRITE_ATTEMPTS
        for attempt in range(1, attempts + 1):
            try:
                with transaction.atomic():
                    app_id = _app_of_call(kwargs)
                    if app_id is not None:
                        lock_app(app_id)
                    return func(*args, **kwargs)
            except OperationalError as exc:
                if attempt >= attempts or not is_conflict(exc):
                    raise
                logger.warning("%s: %s; retried (%s)", func.__name__, exc, attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    return write


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


def _same(current: Any, new: Any) -> bool:
    """Equal, and of one type and key order (a JSON object whose keys moved has changed)."""
    if type(current) is not type(new) or current != new:
        return False
    return not isinstance(new, dict | list) or repr(current) == repr(new)


def model_update[M: Model](
    *,
    instance: M,
    fields: Iterable[str],
    data: Mapping[str, Any],
    actor: Actor,
    action: str,
    expected_version: int | None = None,
    lock: bool = True,
    problems: Callable[[M], Iterable[Diagnostic]] | None = None,
    state: Callable[[M], Any] = snapshot,
    before: Any = UNSET,
    name: Callable[[M], str] = str,
    app: AgentApp | int | None = None,
    on_save: Callable[[M], None] | None = None,
) -> tuple[M, bool]:
    """Every service's update, once (HackSoft's `model_update`, with what our writes add).

    Locks the row and refuses a stale `expected_version` (`lock` False: the caller has
    locked and checked it), sets those of `fields` that `data` gives and that differ,
    refuses what `problems` finds, saves only the changed columns with the version bumped,
    runs `on_save` (links, steps) and records the write in the app's history (`state`
    before and after, bumping the app's revision). Like every service write it saves, bumps
    and audits even when nothing differed. Returns the saved instance and whether any
    field changed."""
    if lock:
        instance = locked(type(instance), instance.pk)
        check_version(instance, expected_version)
    if before is UNSET:
        before = state(instance)
    changed_fields = []
    for field in fields:
        if field in data and not _same(getattr(instance, field), data[field]):
            setattr(instance, field, data[field])
            changed_fields.append(field)
    if problems is not None:
        raise_if(problems(instance))
    save(instance, update_fields=changed_fields)
    if on_save is not None:
        on_save(instance)
    if app is None:
        app = instance if isinstance(instance, AgentApp) else instance.app_id
    changed(
        app=app,
        actor=actor,
        action=action,
        name=name(instance),
        before=before,
        after=state(instance),
    )
    return instance, bool(changed_fields)
