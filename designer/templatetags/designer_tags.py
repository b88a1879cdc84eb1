"""Template filters of the designer: values rendered as the prompt would show them."""

from __future__ import annotations

import re
from typing import Any

from django import template
from django.utils.html import escape
from django.utils.safestring import mark_safe

from agents.core.render import render_value

register = template.Library()


@register.filter
def rendered(value: Any) -> str:
    """A variable value as it appears in a compiled prompt (`3`, `true`, `{"a": 1}`)."""
    return "" if value is None else render_value(value)


@register.filter
def field_errors(form: Any, name: str) -> list[str]:
    return list(form.errors.get(name, [])) if form is not None and form.is_bound else []


@register.filter
def get_item(mapping: Any, key: str) -> Any:
    return mapping.get(key) if mapping else None


@register.filter
def current(form: Any, name: str) -> Any:
    """What a form field shows: the typed value when bound, else its initial value."""
    return form.current(name) if hasattr(form, "current") else _plain_current(form, name)


def _plain_current(form: Any, name: str) -> Any:
    if form.is_bound:
        if name in form.fields and form.fields[name].widget.__class__.__name__ == "CheckboxInput":
            return form.data.get(name) in ("on", "true", "1", True)
        return form.data.get(name, "")
    value = form.initial.get(name, form.fields[name].initial if name in form.fields else "")
    return "" if value is None else value


@register.filter
def make_list_words(value: str) -> list[str]:
    return value.split()


@register.filter
def undeclared_name(diagnostic: Any) -> str:
    from designer.preview import undeclared_name as name_of

    return name_of(diagnostic)


_TICKED = re.compile(r"`([^`\n]+)`")


@register.filter
def ticks(message: str) -> str:
    """A diagnostic message with its `quoted` names shown as code (escaped first)."""
    return mark_safe(_TICKED.sub(r"<code>\1</code>", escape(message)))


@register.filter
def squiggles(diagnostics: Any) -> list[dict[str, Any]]:
    """Where the editor underlines problems: the data for `json_script`, never hand-built JSON."""
    return [
        {
            "start": d.start,
            "end": d.end if d.end is not None else d.start,
            "severity": str(d.severity),
        }
        for d in diagnostics or ()
        if d.start is not None
    ]
