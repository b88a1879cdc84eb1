"""The pass-rate chart of the Evaluations page (designer/charts.py), drawn from runs."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from django.utils import translation

from agents.models import EvaluationRun
from designer.charts import pass_rate_series, pass_rate_svg, styles


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


def test_a_model_keeps_its_look_when_another_model_joins_the_chart():
    """Colours came from the models' order: a new model repainted the others (o3 and the
    scripted simulation, "", changed when gpt-4o joined)."""
    before = styles(["o3", ""])
    after = styles(["o3", "", "gpt-4o"])
    assert before == {model: after[model] for model in before}
    assert len(set(after.values())) == 3  # three models, three looks


def test_the_scripted_line_looks_the_same_in_every_language():
    with translation.override("fr"):
        french = styles(["", "gpt-4o"])
    assert french == styles(["", "gpt-4o"])


def test_runs_of_one_day_are_told_apart_by_their_time(settings):
    settings.TIME_ZONE = "UTC"
    runs = [_run(_at(4, 11, 30).replace(second=7), {"a": 1}), _run(_at(4, 11, 30), {"a": 1})]
    runs.append(_run(_at(4, 9, 5), {"a": 1}))
    assert pass_rate_series(runs)[0] == ["09:05", "11:30:00", "11:30:07"]


def test_a_days_first_run_keeps_its_date_when_labels_are_thinned(settings):
    """26 runs over two days: every other label is drawn, and the second day's first run,
    at an odd place, still shows its day (its runs read as the first day's)."""
    settings.TIME_ZONE = "UTC"
    runs = [_run(_at(day, 8 + hour), {"a": 1}) for day in (3, 4) for hour in range(13)]
    runs.reverse()  # newest first, as the history lists them
    svg = str(pass_rate_svg(runs))
    assert ">3 Dec.</text>" in svg and ">4 Dec.</text>" in svg


def test_a_days_first_run_shows_the_day_in_the_readers_language(settings):
    settings.TIME_ZONE = "UTC"
    runs = [_run(_at(4, 8), {"a": 1}), _run(_at(3, 17), {"a": 1}), _run(_at(3, 9), {"a": 1})]
    with translation.override("fr"):
        labels = pass_rate_series(runs)[0]
    assert labels == ["3 déc.", "17:00", "4 déc."]


def test_models_at_the_same_rates_draw_lines_told_apart():
    """Lines on one another: each model its colour, dash or points, even when their names
    would give them the same look (the second's dash then differs)."""
    models = [f"model-{n}" for n in range(20)]
    runs = [
        _run(_at(4, 10), dict.fromkeys(models, 0.5)),
        _run(_at(3, 10), dict.fromkeys(models, 1)),
    ]
    svg = str(pass_rate_svg(runs))
    lines = re.findall(r'<polyline[^>]*stroke="([^"]*)" stroke-dasharray="([^"]*)"', svg)
    fills = re.findall(r'<circle class="point"[^>]*fill="([^"]*)"', svg)[::2]
    looks = {(stroke, dash, fill) for (stroke, dash), fill in zip(lines, fills, strict=True)}
    assert len(looks) == len(models)
