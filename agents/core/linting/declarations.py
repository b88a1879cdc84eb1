"""Lint of the declarations: names, variables (defaults, types, schemas), schemas, and
variables nothing uses (``agents.core.usage``).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

from agents.core import rules
from agents.core.diagnostics import Diagnostic, Message
from agents.core.linting.index import SNAKE_CASE, E, Index, W
from agents.core.schemas import check_schema
from agents.core.spec import AppSpec, VariableType
from agents.core.types import validate_value
from agents.core.usage import unused_variables


def lint_names(app: AppSpec) -> Iterable[Diagnostic]:
    for collection, items in (
        ("variables", app.variables),
        ("tools", app.tools),
        ("agents", app.agents),
        ("schemas", app.schemas),
    ):
        seen: set[str] = set()
        reported: set[str] = set()
        for item in items:
            if item.name in seen and item.name not in reported:
                reported.add(item.name)
                yield Diagnostic(
                    "SC332",
                    E,
                    Message(
                        "Two %(collection)s are named `%(name)s`: names must be unique in an app.",
                        collection=collection,
                        name=item.name,
                    ),
                    field=f"{collection}.{item.name}.name",
                    subject=item.name,
                )
            seen.add(item.name)


def lint_variables(index: Index) -> Iterable[Diagnostic]:
    schemas = index.schemas
    for variable in index.app.variables:
        name = variable.name
        prefix = f"variables.{name}"
        if rules.name_problems(name):
            yield Diagnostic(
                "SC331",
                E,
                Message(
                    "`%(name)s` is not a valid variable name: use letters, digits "
                    "and underscores, not starting with a digit, at most "
                    "%(name_max_length)s characters.",
                    name=name,
                    name_max_length=rules.NAME_MAX_LENGTH,
                ),
                field=f"{prefix}.name",
                subject=name,
            )
        elif not SNAKE_CASE.fullmatch(name):
            yield Diagnostic(
                "SC330",
                W,
                Message(
                    "`%(name)s` is not snake_case (the convention is `%(snake)s`).",
                    name=name,
                    snake=_snake(name),
                ),
                field=f"{prefix}.name",
                subject=name,
            )
        if not (variable.description or "").strip():
            yield Diagnostic(
                "SC333",
                W,
                Message(
                    "`%(name)s` has no description: CX Agent Studio requires one "
                    "on export, and the model reads it to understand the "
                    "variable.",
                    name=name,
                ),
                field=f"{prefix}.description",
                subject=name,
            )
        needs_schema = variable.type is VariableType.OBJECT or (
            variable.type is VariableType.LIST and variable.item_type is VariableType.OBJECT
        )
        if needs_schema and variable.schema not in schemas:
            what = Message("A list of objects")
            if variable.type is VariableType.OBJECT:
                what = Message("A custom object")
            if variable.schema:
                message = Message(
                    "`%(name)s` uses the schema `%(schema)s`, which the app does not have.",
                    name=name,
                    schema=variable.schema,
                )
            else:
                message = Message(
                    "%(what)s needs a schema: choose one for `%(name)s`.", what=what, name=name
                )
            yield Diagnostic("SC320", E, message, field=f"{prefix}.schema", subject=name)
        if variable.default is not None:
            for diagnostic in validate_value(variable.default, variable, schemas):
                if diagnostic.code != "SC206":  # SC320 above says it in lint's words
                    yield diagnostic


def _snake(name: str) -> str:
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name)
    snake = re.sub(r"_+", "_", spaced.lower()).strip("_")
    return snake or name.lower()


def lint_schemas(app: AppSpec) -> Iterable[Diagnostic]:
    for schema in app.schemas:
        where = f"schemas.{schema.name}"
        for diagnostic in check_schema(schema.schema):
            inner = diagnostic.field
            yield dataclasses.replace(
                diagnostic,
                field=(f"{where}{inner}" if inner.startswith("#") else f"{where}.{inner}")
                if inner
                else where,
                subject=diagnostic.subject or schema.name,
            )


def lint_unused(app: AppSpec) -> Iterable[Diagnostic]:
    for name in unused_variables(app):
        yield Diagnostic(
            "SC311",
            W,
            Message(
                "`%(name)s` is never used: no instructions reference it "
                "(`{{%(name)s}}`, `{%(name)s}` or in a condition), no tool "
                "reads or updates it.",
                name=name,
            ),
            field=f"variables.{name}",
            subject=name,
        )
