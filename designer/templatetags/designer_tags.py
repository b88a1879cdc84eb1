"""Template filters of the designer: values rendered as the prompt would show them."""

from __future__ import annotations

import re
from typing import Any

from django import template
from django.utils.html import escape
from django.utils.safestring import mark_safe
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from agents.core import rules
from agents.core.cx.carry import kept_summary
from agents.core.render import render_value
from agents.i18n import localize

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
    """A diagnostic message in the reader's language, its `quoted` names shown as code
    (escaped first)."""
    return mark_safe(_TICKED.sub(r"<code>\1</code>", escape(localize(message))))


@register.filter
def localized(message: Any) -> str:
    """A core message (`Message`) in the reader's language; other text as it is."""
    return localize(message)


# Words the pages show for values that are identifiers in the data (a severity, a change, a
# kind of object): the data keeps the identifier, the page shows the word in the language.
_WORDS = {
    "error": _("error"),
    "warning": _("warning"),
    "info": _("info"),
    "added": _("added"),
    "removed": _("removed"),
    "changed": _("changed"),
    "renamed": _("renamed"),
    "same": _("same"),
    "app": _("app"),
    "variable": _("variable"),
    "schema": _("schema"),
    "tool": _("tool"),
    "agent": _("agent"),
    "callback": _("callback"),
    "scenario": _("scenario"),
    "label": _("label"),
    "version": _("version"),
    "share": _("share"),
}


@register.filter
def word(value: Any) -> str:
    """An identifier of the data (`error`, `added`, `variable`) as a word of the language."""
    key = str(value)
    return str(_WORDS.get(key, key))


severity_word = register.filter("severity_word", word)

# The history's actions (AuditEvent.action): identifiers in the data; shown translated.
_ACTIONS = {
    "app.create": pgettext_lazy("history action", "app.create"),
    "app.update": pgettext_lazy("history action", "app.update"),
    "app.delete": pgettext_lazy("history action", "app.delete"),
    "variable.create": pgettext_lazy("history action", "variable.create"),
    "variable.update": pgettext_lazy("history action", "variable.update"),
    "variable.rename": pgettext_lazy("history action", "variable.rename"),
    "variable.delete": pgettext_lazy("history action", "variable.delete"),
    "schema.create": pgettext_lazy("history action", "schema.create"),
    "schema.update": pgettext_lazy("history action", "schema.update"),
    "schema.delete": pgettext_lazy("history action", "schema.delete"),
    "tool.create": pgettext_lazy("history action", "tool.create"),
    "tool.update": pgettext_lazy("history action", "tool.update"),
    "tool.rename": pgettext_lazy("history action", "tool.rename"),
    "tool.delete": pgettext_lazy("history action", "tool.delete"),
    "agent.create": pgettext_lazy("history action", "agent.create"),
    "agent.update": pgettext_lazy("history action", "agent.update"),
    "agent.rename": pgettext_lazy("history action", "agent.rename"),
    "agent.delete": pgettext_lazy("history action", "agent.delete"),
    "agent.instructions": pgettext_lazy("history action", "agent.instructions"),
    "agent.attach_tool": pgettext_lazy("history action", "agent.attach_tool"),
    "callback.create": pgettext_lazy("history action", "callback.create"),
    "callback.update": pgettext_lazy("history action", "callback.update"),
    "callback.delete": pgettext_lazy("history action", "callback.delete"),
    "scenario.create": pgettext_lazy("history action", "scenario.create"),
    "scenario.update": pgettext_lazy("history action", "scenario.update"),
    "scenario.delete": pgettext_lazy("history action", "scenario.delete"),
    "share.set": pgettext_lazy("history action", "share.set"),
    "share.remove": pgettext_lazy("history action", "share.remove"),
    "version.create": pgettext_lazy("history action", "version.create"),
    "version.restore": pgettext_lazy("history action", "version.restore"),
    "version.delete": pgettext_lazy("history action", "version.delete"),
    "version.label_set": pgettext_lazy("history action", "version.label_set"),
    "version.label_delete": pgettext_lazy("history action", "version.label_delete"),
}


@register.filter
def action_words(action: str) -> str:
    """A history action (`variable.update`) in the reader's language (English: as stored)."""
    return str(_ACTIONS.get(action, action))


@register.filter
def pretty_json(value: Any) -> str:
    """A history value as indented JSON (escaped by the template like any text)."""
    import json

    return "—" if value is None else json.dumps(value, indent=2, ensure_ascii=False, default=str)


@register.simple_tag
def platform_tool_names() -> list[str]:
    """The tools CX Agent Studio provides (the rule set's list)."""
    return list(rules.PLATFORM_TOOLS)


@register.simple_tag
def cx_kept(agent: Any) -> list[tuple[str, str]]:
    """What the agent's CX import kept without editing (`carry.kept_summary`)."""
    if not agent.cx:
        return []
    tools = [
        n
        for t in agent.tools.all()
        for n in (t.name, t.cx.get("name"), t.cx.get("displayName"))
        if n
    ]
    return kept_summary(agent.cx, tools)
