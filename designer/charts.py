"""Charts drawn by the server as SVG (no script, no CDN): the pass rate of an app's
evaluation runs over time, one line per model, the versions marked under their runs."""

from __future__ import annotations

import zlib
from collections import Counter
from dataclasses import dataclass
from typing import Any

from django.utils import timezone
from django.utils.formats import date_format
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _

# Colour-blind-safe (Okabe-Ito), readable on white; a model keeps its colour in the legend.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
# Lines that lie on one another (two models at the same rates) still show each: each model its
# dash, and its points filled or hollow.
DASHES = ("", "7 4", "2 3", "10 3 2 3")
WIDTH, HEIGHT = 1100, 250
LEFT, RIGHT, TOP, BOTTOM = 44, 16, 14, 44


@dataclass(frozen=True)
class Style:
    colour: str
    dash: str  # SVG stroke-dasharray, "none" for a solid line
    hollow: bool  # its points drawn as rings


STYLES = len(DASHES) * 2


def styles(models: list[str]) -> dict[str, Style]:
    """Each model's colour, dash and points, from its name ("" the scripted simulation,
    whatever the reader's language): the same in every chart, whichever other models are
    drawn beside it. Two models of one chart that would look alike in every way (their
    names meet in all three) are told apart by the dash of the second, by name."""
    chosen: dict[str, Style] = {}
    for model in sorted(models):
        digest = zlib.crc32(model.encode())
        colour, rest = PALETTE[digest % len(PALETTE)], digest // len(PALETTE)
        taken = {(c.colour, c.dash, c.hollow) for c in chosen.values()}
        for step in range(STYLES):
            index = (rest + step) % STYLES
            style = Style(colour, DASHES[index % len(DASHES)] or "none", index >= len(DASHES))
            if (style.colour, style.dash, style.hollow) not in taken:
                break
        chosen[model] = style
    return chosen


def colours(models: list[str]) -> dict[str, str]:
    """Each model's colour (``styles``)."""
    return {model: style.colour for model, style in styles(models).items()}


def _x_labels(times: list[Any]) -> tuple[list[str], list[bool]]:
    """Each run's label under the chart, and whether it is a day's first run: its day (in
    the reader's language) for a day's first run, its time for the next ones of that day
    (to the second when a minute has several runs); times only when every run is of one
    day."""
    local = [timezone.localtime(t) for t in times]
    one_day = len({t.date() for t in local}) == 1
    minutes = Counter(t.strftime("%Y-%m-%d %H:%M") for t in local)
    labels, starts = [], []
    for i, when in enumerate(local):
        first_of_day = not one_day and (i == 0 or when.date() != local[i - 1].date())
        shared = minutes[when.strftime("%Y-%m-%d %H:%M")] > 1
        labels.append(date_format(when, "j N" if first_of_day else "H:i:s" if shared else "H:i"))
        starts.append(first_of_day)
    return labels, starts


@dataclass(frozen=True)
class Point:
    run: int  # index of the run, oldest first
    rate: float
    label: str  # what the point's tooltip says


def pass_rate_series(
    runs: list[Any],
) -> tuple[list[str], dict[str, list[Point]], list[str], list[bool]]:
    """From runs (newest first, as listed): the x labels (oldest first), one series per
    model ("" the scripted simulation), the versions of each run (marked under it), and
    which runs are a day's first. A model's point in a run is its column of the run's
    newest version (the working copy when it is one)."""
    ordered = list(reversed(runs))
    series: dict[str, list[Point]] = {}
    marks = []
    for index, run in enumerate(ordered):
        matrix = run.matrix or {}
        columns = matrix.get("columns", [])
        versions = list(dict.fromkeys(c["version"] for c in columns))
        marks.append(
            ", ".join(("v" + v if v.isdigit() else v) for v in versions if v)
            if versions != [""]
            else ""
        )
        newest = "" if "" in versions else (versions[-1] if versions else "")
        for column in columns:
            if column["version"] != newest:
                continue
            rate = ((matrix.get("totals") or {}).get(column["key"]) or {}).get("pass_rate")
            if rate is None:
                continue
            model = column["model"] or ""
            version = column["version"] or _("working copy")
            tip = _("%(name)s, %(date)s: %(rate)s passed") % {
                "name": f"{_model_name(model)} @ {version}",
                "date": date_format(timezone.localtime(run.created_at), "SHORT_DATETIME_FORMAT"),
                "rate": f"{rate:.0%}",
            }
            series.setdefault(model, []).append(Point(index, float(rate), tip))
    labels, starts = _x_labels([run.created_at for run in ordered])
    return labels, series, marks, starts


def _model_name(model: str) -> str:
    return model or _("scripted")


def pass_rate_svg(runs: list[Any]) -> SafeString:
    """The pass rate over the runs (newest first as given; drawn oldest to newest)."""
    labels, series, marks, starts = pass_rate_series(runs)
    title = _("Pass rate over evaluation runs")
    if not labels:
        return mark_safe("")
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    count = len(labels)

    def x(i: int) -> float:
        return LEFT + (plot_w * (i + 0.5) / count)

    def y(rate: float) -> float:
        return TOP + plot_h * (1 - rate)

    parts = [
        format_html(
            '<svg class="chart" viewBox="0 0 {} {}" role="img" aria-labelledby="chart-title">'
            '<title id="chart-title">{}</title>',
            WIDTH,
            HEIGHT,
            title,
        )
    ]
    for rate in (0, 0.25, 0.5, 0.75, 1):
        parts.append(
            format_html(
                '<line class="grid" x1="{}" x2="{}" y1="{}" y2="{}"/>'
                '<text class="axis" x="{}" y="{}" text-anchor="end">{}</text>',
                LEFT,
                WIDTH - RIGHT,
                f"{y(rate):.1f}",
                f"{y(rate):.1f}",
                LEFT - 6,
                f"{y(rate) + 4:.1f}",
                f"{rate:.0%}",
            )
        )
    step = max(1, count // 12)
    for i, label in enumerate(labels):
        if i % step and i != count - 1 and not marks[i] and not starts[i]:
            continue
        parts.append(
            format_html(
                '<text class="axis" x="{}" y="{}" text-anchor="middle">{}</text>',
                f"{x(i):.1f}",
                HEIGHT - BOTTOM + 16,
                label,
            )
        )
        if marks[i]:
            parts.append(
                format_html(
                    '<text class="version-mark" x="{}" y="{}" text-anchor="middle">{}</text>',
                    f"{x(i):.1f}",
                    HEIGHT - BOTTOM + 32,
                    marks[i],
                )
            )
    drawn = styles(list(series))
    order = sorted(series, key=lambda model: _model_name(model).casefold())
    for model in order:
        points, style = series[model], drawn[model]
        colour, hollow = style.colour, style.hollow
        coords = " ".join(f"{x(p.run):.1f},{y(p.rate):.1f}" for p in points)
        if len(points) > 1:
            parts.append(
                format_html(
                    '<polyline class="series" points="{}" stroke="{}" stroke-dasharray="{}"/>',
                    coords,
                    colour,
                    style.dash,
                )
            )
        for p in points:
            parts.append(
                format_html(
                    '<circle class="point" cx="{}" cy="{}" r="{}" fill="{}" stroke="{}">'
                    "<title>{}</title></circle>",
                    f"{x(p.run):.1f}",
                    f"{y(p.rate):.1f}",
                    "3.5" if hollow else "4",
                    "#fff" if hollow else colour,
                    colour,
                    p.label,
                )
            )
    parts.append(mark_safe("</svg>"))
    legend = [  # each model's line and point as drawn
        format_html(
            '<li><svg class="swatch" viewBox="0 0 24 10" aria-hidden="true">'
            '<line x1="0" y1="5" x2="24" y2="5" stroke="{}" stroke-width="2" '
            'stroke-dasharray="{}"/><circle cx="12" cy="5" r="3" fill="{}" stroke="{}"/>'
            "</svg>{}</li>",
            drawn[model].colour,
            drawn[model].dash,
            "#fff" if drawn[model].hollow else drawn[model].colour,
            drawn[model].colour,
            escape(_model_name(model)),
        )
        for model in order
    ]
    parts.append(
        format_html(
            '<ul class="chart-legend" aria-label="{}">{}</ul>',
            _("Models"),
            mark_safe("".join(legend)),
        )
    )
    return mark_safe("".join(parts))
