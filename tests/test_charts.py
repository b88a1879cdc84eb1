"""The pass-rate chart of the Evaluations page (designer/charts.py), drawn from runs."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from django.utils import translation

from agents.models import EvaluationRun
from designer.charts import colours, pass_rate_series, pass_rate_svg


def _run(when: datetime, rates: dict[str, float]) -> EvaluationRun:
    """A run (newest first, as the history lists them) with one column per model."""
    keys = {model: f"{model}@current" for model in rates}
    matrix = {
        "columns": [{"key": keys[m], "model": m, "version": ""} for m in rates],
        "totals": {keys[m]: {"pass_rate": rate} for m, rate in rates.items()},
    }
    return EvaluationRun(created_at=when, matrix=matrix)


def _at(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 12, day, hour, minute, tzinfo=UTC)


def test_a_model_keeps_its_colour_when_another_model_joins_the_chart():
    """Colours came from the models' order: a new model repainted the others."""
    before = colours(["gpt-4o", "gemini-2.5-flash"])
    after = colours(["gpt-4o", "gemini-2.5-flash", "claude"])
    assert before == {name: after[name] for name in before}
    assert len(set(after.values())) == 3  # three models, three colours


def test_runs_of_one_day_are_told_apart_by_their_time(settings):
    settings.TIME_ZONE = "UTC"
    runs = [_run(_at(4, 11, 30).replace(second=7), {"a": 1}), _run(_at(4, 11, 30), {"a": 1})]
    runs.append(_run(_at(4, 9, 5), {"a": 1}))
    assert pass_rate_series(runs)[0] == ["09:05", "11:30", "11:30:07"]


def test_a_days_first_run_shows_the_day_in_the_readers_language(settings):
    settings.TIME_ZONE = "UTC"
    runs = [_run(_at(4, 8), {"a": 1}), _run(_at(3, 17), {"a": 1}), _run(_at(3, 9), {"a": 1})]
    with translation.override("fr"):
        labels = pass_rate_series(runs)[0]
    assert labels == ["3 déc.", "17:00", "4 déc."]


def test_two_models_at_the_same_rates_draw_lines_told_apart():
    """Lines on one another: each has its own dash, and one's points are hollow."""
    runs = [_run(_at(4, 10), {"a": 0.5, "b": 0.5}), _run(_at(3, 10), {"a": 1, "b": 1})]
    svg = str(pass_rate_svg(runs))
    dashes = re.findall(r'<polyline[^>]*stroke-dasharray="([^"]*)"', svg)
    fills = set(re.findall(r'<circle class="point"[^>]*fill="([^"]*)"', svg))
    assert len(set(dashes)) == 2 and "#fff" in fills and len(fills) == 2
