"""Template filters of the designer: values rendered as the prompt would show them."""

from __future__ import annotations

import math
import re
from typing import Any

from django import template
from django.utils.formats import number_format
from django.utils.html import escape
from django.utils.safestring import mark_safe
from django.utils.translation import gettext as _
from django.utils.translation import pgettext

from agents import i18n
from agents.core import rules
from agents.core.cx.carry import kept_summary
from agents.core.render import render_value
from agents.i18n import localize
from agents.models import Job

register = template.Library()


@register.simple_tag
def limit(name: str) -> int:
    """A length limit of the rule set, for a template's `maxlength` (`{% limit
    'APP_NAME_MAX_LENGTH' %}`): the one number the models, forms and API use too."""
    if not name.endswith("_MAX_LENGTH"):
        raise template.TemplateSyntaxError(f"{name!r} is not a length limit of the rule set")
    return int(getattr(rules, name))


@register.filter
def cost_estimate(amount: Any, priced: Any = True) -> str:
    """A run's or a call's estimated cost, one way everywhere: ``≈ $0.0055`` in the
    language's number format, two significant digits below a cent (at least two decimals,
    at most six); "no price" when the endpoint has none (`priced` False: cost_of counts
    such a model as 0, which is not a price)."""
    if priced is False:
        return _("no price")
    value = float(amount or 0)
    decimals = 2 if value == 0 else min(6, max(2, 1 - math.floor(math.log10(abs(value)))))
    return _("≈ $%(amount)s") % {"amount": number_format(round(value, decimals), decimals)}


@register.filter
def rendered(value: Any) -> str:
    """A variable value as it appears in a compiled prompt (`3`, `true`, `{"a": 1}`)."""
    return "" if value is None else render_value(value)


@register.filter
def shown(value: Any) -> str:
    """A value as the reader reads it (`1,5` in French): `i18n.shown_value`."""
    return i18n.shown_value(value)


_NAME_BREAK = re.compile(r"(?=\.)|(?<=_)")


@register.filter
def name_breaks(name: Any) -> str:
    """A dotted or snake_case name (`$context.project_id`) with a line-break opportunity
    before each dot and after each underscore (escaped, `<wbr>`): a narrow column breaks it
    there, never mid-word (`$context.projec` / `t_id`)."""
    parts = _NAME_BREAK.split(str(name))
    return mark_safe("<wbr>".join(escape(p) for p in parts if p))


@register.filter
def get_item(mapping: Any, key: str) -> Any:
    return mapping.get(key) if mapping else None


@register.filter
def undeclared_name(diagnostic: Any) -> str:
    from designer.views.preview import undeclared_name as name_of

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


@register.filter
def stored_message(value: Any) -> str:
    """A stored message in the reader's language: a job's error (given the `Job`: its
    `error_message`, kept as its template and parameters) or a `Message`; a row stored
    before its template was kept, as stored."""
    if isinstance(value, Job):
        value = value.error_message
    return localize(value)


@register.filter
def word(value: Any) -> str:
    """An identifier of the data (`error`, `added`, `variable`) as a word of the language."""
    return i18n.word(value)


severity_word = register.filter("severity_word", word)


@register.filter
def action_words(action: str) -> str:
    """A history action (`variable.update`) in the reader's language (English: as stored)."""
    return i18n.action_words(action)


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


@register.simple_tag
def app_imported(app: Any) -> bool:
    """Whether an import made `app` (the header then links its import report)."""
    from agents.selectors import app_was_imported

    return app_was_imported(app)


@register.filter
def values_placeholder(app: Any) -> str:
    """A JSON object placeholder naming this app's own variables (the forms' own)."""
    from designer.forms import values_placeholder as placeholder

    return placeholder(app)


_HISTORY_ROWS = 60


def _flat(value: Any, prefix: str, out: dict[str, Any], depth: int = 0) -> None:
    if isinstance(value, dict) and value and depth < 3:
        for key, item in value.items():
            _flat(item, f"{prefix}.{key}" if prefix else str(key), out, depth + 1)
    else:
        out[prefix or "(value)"] = value


def _history_text(value: Any, present: bool) -> str:
    import json

    if not present:
        return "—"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


@register.filter
def history_changes(event: Any) -> dict[str, Any]:
    """What a history event changed, field by field: `rows` of (field, before, after, diff)
    for the fields that differ (nested objects by dotted path, "—" where a side has none;
    `diff` a line diff, `agents.core.diff.line_diff`, where a side is text of several lines,
    such as instructions or code, else None) and how many more were left out (`more`). An
    event that changed nothing (a save of the same values) has no rows."""
    from agents.core.diff import line_diff

    before: dict[str, Any] = {}
    after: dict[str, Any] = {}
    if event.before is not None:
        _flat(event.before, "", before)
    if event.after is not None:
        _flat(event.after, "", after)
    rows = []
    for key in dict.fromkeys([*before, *after]):
        old, new = before.get(key, ...), after.get(key, ...)
        if old == new:
            continue
        old_text = _history_text(before.get(key), key in before)
        new_text = _history_text(after.get(key), key in after)
        texts = [v for v in (old, new) if isinstance(v, str)]
        multi_line = texts and any("\n" in v for v in texts)
        if multi_line and all(isinstance(v, str) or v is ... or v is None for v in (old, new)):
            diff = line_diff(
                old if isinstance(old, str) else "", new if isinstance(new, str) else ""
            )
        else:
            diff = None
        rows.append((key, old_text, new_text, diff))
    return {"rows": rows[:_HISTORY_ROWS], "more": max(0, len(rows) - _HISTORY_ROWS)}


@register.filter
def ago(moment: Any) -> str:
    """How long ago `moment` was, in the reader's language: "just now" under a minute (not
    "0 minutes ago"), else "3 minutes ago" (Django's timesince)."""
    if not moment:
        return ""
    from django.utils import timezone
    from django.utils.timesince import timesince

    if (timezone.now() - moment).total_seconds() < 60:
        return pgettext("time", "just now")
    return pgettext("time", "%(since)s ago") % {"since": timesince(moment)}


@register.filter
def history_object(name: Any) -> str:
    """A history row's object name as shown (an old English callback name in today's form)."""
    from agents.models.audit import object_name_shown

    return object_name_shown(str(name or ""))


@register.simple_tag
def docs_url(page: str = "") -> str:
    """The documentation site's page in the reader's language (``/docs/fr/designer/…/``)."""
    from designer.docs_site import docs_url as url

    return url(page)


@register.inclusion_tag("_help_link.html")
def help_link(page: str, topic: str) -> dict[str, str]:
    """A small "?" beside a heading that opens the guide's page about it, in a new tab."""
    from designer.docs_site import docs_url as url

    return {"href": url(page), "topic": topic}
