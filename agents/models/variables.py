"""An app's variables and the JSON Schemas its custom objects use."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from agents.core import spec
from agents.core.rules import (
    NAME_MAX_LENGTH,
    NAME_PATTERN,
    VARIABLE_TYPE_MAX_LENGTH,
)
from agents.core.types import type_label
from agents.fields import OrderedJSONField
from agents.models.app import AgentApp
from agents.models.base import TimestampedModel


class VariableType(models.TextChoices):
    TEXT = spec.VariableType.TEXT, _("Text")
    NUMBER = spec.VariableType.NUMBER, _("Number")
    BOOLEAN = spec.VariableType.BOOLEAN, _("Yes/No")
    OBJECT = spec.VariableType.OBJECT, _("Custom object")
    LIST = spec.VariableType.LIST, _("List")


class Schema(TimestampedModel):
    """A JSON Schema (draft 2020-12) for custom objects, reusable by the app's variables."""

    app = models.ForeignKey(
        AgentApp, on_delete=models.CASCADE, related_name="schemas", verbose_name=_("app")
    )
    name = models.CharField(max_length=NAME_MAX_LENGTH, verbose_name=_("name"))
    description = models.TextField(blank=True, verbose_name=_("description"))
    json_schema = OrderedJSONField(default=dict, verbose_name=_("json schema"))

    class Meta:
        verbose_name = _("schema")
        verbose_name_plural = _("schemas")
        ordering = ["name", "id"]
        constraints = [
            models.UniqueConstraint(fields=["app", "name"], name="schema_unique_name_per_app"),
            models.CheckConstraint(
                condition=models.Q(name__regex=NAME_PATTERN), name="schema_name_valid"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def to_spec(self) -> spec.SchemaSpec:
        return spec.SchemaSpec(
            name=self.name, schema=self.json_schema, description=self.description
        )


class Variable(TimestampedModel):
    app = models.ForeignKey(
        AgentApp, on_delete=models.CASCADE, related_name="variables", verbose_name=_("app")
    )
    name = models.CharField(max_length=NAME_MAX_LENGTH, verbose_name=_("name"))
    type = models.CharField(
        max_length=VARIABLE_TYPE_MAX_LENGTH,
        choices=VariableType.choices,
        default=VariableType.TEXT,
        verbose_name=_("type"),
    )
    item_type = models.CharField(
        max_length=VARIABLE_TYPE_MAX_LENGTH,
        choices=[c for c in VariableType.choices if c[0] != VariableType.LIST],
        blank=True,
        help_text=_("For a list: the type of its items."),
        verbose_name=_("item type"),
    )
    schema = models.ForeignKey(
        Schema,
        on_delete=models.PROTECT,
        related_name="variables",
        null=True,
        blank=True,
        help_text=_("For a custom object, or a list of custom objects."),
        verbose_name=_("schema"),
    )
    # None means "no default"; any other JSON value is the default.
    default = OrderedJSONField(null=True, blank=True, verbose_name=_("default"))
    description = models.TextField(blank=True, verbose_name=_("description"))
    cx = OrderedJSONField(
        default=dict,
        blank=True,
        editable=False,
        help_text=_("What a CX import kept verbatim (CX fields Statecraft does not edit)."),
        verbose_name=_("cx"),
    )

    class Meta:
        verbose_name = _("variable")
        verbose_name_plural = _("variables")
        ordering = ["name", "id"]
        constraints = [
            models.UniqueConstraint(fields=["app", "name"], name="variable_unique_name_per_app"),
            models.CheckConstraint(
                condition=models.Q(name__regex=NAME_PATTERN), name="variable_name_valid"
            ),
            models.CheckConstraint(
                condition=models.Q(type__in=VariableType.values), name="variable_type_valid"
            ),
            models.CheckConstraint(
                condition=(
                    models.Q(type=VariableType.LIST, item_type__in=VariableType.values)
                    & ~models.Q(item_type=VariableType.LIST)
                )
                | (~models.Q(type=VariableType.LIST) & models.Q(item_type="")),
                name="variable_item_type_only_for_lists",
            ),
            models.CheckConstraint(
                condition=models.Q(type=VariableType.OBJECT, schema__isnull=False)
                | models.Q(
                    type=VariableType.LIST, item_type=VariableType.OBJECT, schema__isnull=False
                )
                | (
                    models.Q(schema__isnull=True)
                    & ~models.Q(type=VariableType.OBJECT)
                    & ~models.Q(item_type=VariableType.OBJECT)
                ),
                name="variable_schema_only_for_objects",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def type_label(self) -> str:
        """`Number`, `Customer`, `List of Text` (reads `schema`: select_related it)."""
        return type_label(
            spec.VariableType(self.type),
            spec.VariableType(self.item_type) if self.item_type else None,
            self.schema.name if self.schema_id else None,
        )

    def to_spec(self, schema_names: dict[int, str] | None = None) -> spec.VariableSpec:
        if self.schema_id is None:
            schema_name = None
        elif schema_names is not None:
            schema_name = schema_names[self.schema_id]
        else:
            schema_name = self.schema.name
        return spec.VariableSpec(
            name=self.name,
            type=spec.VariableType(self.type),
            default=self.default,
            description=self.description,
            item_type=spec.VariableType(self.item_type) if self.item_type else None,
            schema=schema_name,
            cx=dict(self.cx or {}),
        )
