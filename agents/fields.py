"""A JSON field that keeps object keys in the order they were written.

PostgreSQL's jsonb (Django's JSONField there) reorders object keys, but the
spec renders objects "with keys in stored order" and designers expect their
schema's properties to stay where they put them. This field stores the JSON
text itself, on every database.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.db import models
from django.utils import translation
from django.utils.translation import gettext_lazy as _


class JSONFormField(forms.JSONField):
    """Django's JSON form field, whose refusal says where and what went wrong, and how JSON
    writes each kind of value (Django's own says only "Enter a valid JSON.")."""

    def to_python(self, value: Any) -> Any:
        if isinstance(value, str) and value.strip() and not self.disabled:
            from agents.core.diagnostics import render
            from agents.core.form_text import parse_json

            _value, problem = parse_json(value)
            if problem is not None:
                raise forms.ValidationError(
                    _(
                        "Not valid JSON: %(problem)s. In JSON a text is written in double "
                        'quotes ("abc"), a list in brackets ([1, 2]), an object in braces '
                        '({"name": "value"}); yes/no is true or false.'
                    ),
                    code="invalid",
                    params={"problem": render(problem, translation.gettext)},
                )
        return super().to_python(value)


class OrderedJSONField(models.TextField):
    description = "JSON, stored as text so object keys keep their order"

    def from_db_value(self, value: str | None, expression: Any, connection: Any) -> Any:
        return None if value is None else json.loads(value)

    def to_python(self, value: Any) -> Any:
        # In Python the value is already decoded JSON: a str is a JSON string, not JSON text.
        return value

    def get_prep_value(self, value: Any) -> str | None:
        if value is None:
            return None
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))

    def value_to_string(self, obj: models.Model) -> Any:
        # Serializers (dumpdata) embed the value as JSON, like Django's JSONField does.
        return self.value_from_object(obj)

    def formfield(self, **kwargs: Any) -> forms.Field:
        # The model's default is the add form's initial value ({} for default=dict), as in
        # Django's own fields: an admin add page showed "null", which a dict field refuses.
        initial = self.get_default() if self.has_default() else None
        return JSONFormField(
            required=not self.blank,
            label=kwargs.get("label") or self.verbose_name.capitalize(),
            help_text=self.help_text,
            initial=kwargs.get("initial", initial),
        )
