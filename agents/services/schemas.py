"""JSON Schemas of custom objects: every default that uses one is checked when it changes."""

from __future__ import annotations

from typing import Any

from agents.core import rules
from agents.core import schemas as core_schemas
from agents.core import types as core_types
from agents.core.diagnostics import Diagnostic, Severity
from agents.models import AgentApp, Schema
from agents.services.common import (
    UNSET,
    Actor,
    ServiceError,
    app_write,
    changed,
    error,
    errors_only,
    model_update,
    on_field,
    raise_if,
    save,
    snapshot,
    unique,
)


def schema_map(app: AgentApp, override: Schema | None = None) -> dict[str, dict]:
    mapping = {s.name: s.json_schema for s in app.schemas.all()}
    if override is not None:
        mapping[override.name] = override.json_schema
    return mapping


def schema_problems(schema: Schema) -> list[Diagnostic]:
    """Name, uniqueness, the metaschema, and every default that uses the schema."""
    diagnostics = rules.name_problems(schema.name)
    diagnostics += unique(Schema, schema, what="schema")
    schema_diagnostics = on_field(core_schemas.check_schema(schema.json_schema), "json_schema")
    diagnostics += schema_diagnostics
    if schema.pk is None or errors_only(schema_diagnostics):
        return diagnostics
    schemas = schema_map(schema.app, override=schema)
    for variable in schema.variables.all():
        variable.schema = schema
        for d in core_types.validate_value(variable.default, variable.to_spec(), schemas):
            if d.severity is Severity.ERROR:
                diagnostics.append(
                    error(
                        "json_schema",
                        f"The default of variable '{variable.name}' would no longer fit: "
                        f"{d.message}",
                        d.code,
                    )
                )
    return diagnostics


@app_write
def schema_create(
    *, app: AgentApp, name: str, json_schema: Any, description: str = "", actor: Actor = None
) -> Schema:
    schema = Schema(app=app, name=name, json_schema=json_schema, description=description)
    raise_if(schema_problems(schema))
    save(schema)
    changed(app=app, actor=actor, action="schema.create", name=name, after=snapshot(schema))
    return schema


@app_write
def schema_update(
    *,
    schema: Schema,
    name: str | None = None,
    json_schema: Any = UNSET,
    description: str | None = None,
    expected_version: int | None = None,
    actor: Actor = None,
) -> Schema:
    data: dict[str, Any] = {}
    if name is not None:
        data["name"] = name
    if json_schema is not UNSET:
        data["json_schema"] = json_schema
    if description is not None:
        data["description"] = description
    schema, _ = model_update(
        instance=schema,
        fields=("name", "json_schema", "description"),
        data=data,
        expected_version=expected_version,
        problems=schema_problems,
        actor=actor,
        action="schema.update",
        name=lambda s: s.name,
    )
    return schema


@app_write
def schema_delete(*, schema: Schema, actor: Actor = None) -> None:
    users = list(schema.variables.values_list("name", flat=True))
    if users:
        raise ServiceError(
            [
                error(
                    "__all__",
                    f"Schema '{schema.name}' is used by {', '.join(users)}; "
                    "change or delete those variables first.",
                )
            ]
        )
    changed(
        app=schema.app_id,
        actor=actor,
        action="schema.delete",
        name=schema.name,
        before=snapshot(schema),
    )
    schema.delete()
