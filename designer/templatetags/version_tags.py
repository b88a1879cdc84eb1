"""Template filters of the diff page: a line diff as HTML rows, built in one pass.

A diff of a large app has thousands of lines; rendering them with a template
loop costs more than computing the diff, so the rows are joined here (every
text escaped).
"""

from __future__ import annotations

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext

from agents.core.diff import TextDiff
from agents.i18n import word

register = template.Library()

_SIGNS = {"added": "+", "removed": "\u2212", "same": " "}  # a minus sign, as wide as +


@register.filter
def line_diff_rows(diff: TextDiff) -> SafeString:
    """The rows of `diff` for a `.line-diff` box: line numbers before and after, sign, text."""
    rows = []
    gap = escape(gettext("⋯ unchanged lines"))
    for line in diff.lines:
        if line.kind == "gap":
            rows.append(
                '<div class="dl dl-gap" role="row"><span class="dl-no" role="cell"></span>'
                '<span class="dl-no" role="cell"></span>'
                '<span class="dl-text" role="cell">' + gap + "</span></div>"
            )
            continue
        before = "" if line.before_line is None else line.before_line
        after = "" if line.after_line is None else line.after_line
        kind = escape(word(line.kind))  # the sign's name, read out in the reader's language
        rows.append(
            f'<div class="dl dl-{line.kind}" role="row">'
            f'<span class="dl-no" role="cell">{before}</span>'
            f'<span class="dl-no" role="cell">{after}</span>'
            f'<span class="dl-text" role="cell"><span class="dl-sign" aria-label="{kind}">'
            f"{_SIGNS[line.kind]}</span>{escape(line.text)}</span></div>"
        )
    return mark_safe("".join(rows))  # every text above is escaped
