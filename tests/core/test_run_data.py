"""A job's stored evaluation reads back as it was computed: every count, the stopped ones
too (a live run cut by its time limit is 'stopped', not passed and not failed)."""

from __future__ import annotations

from agents.core.evaluate import ExpectationResult, ScenarioEvaluation
from agents.core.run_data import evaluation_data, evaluation_from_data


def test_a_stopped_evaluation_reads_back_stopped():
    row = ExpectationResult(
        step=2, turn=1, kind="call", line="expect call: X", note="", status="stopped",
        message="not run: the run reached its time cap of 1 s",
    )  # fmt: skip
    evaluation = ScenarioEvaluation(results=(row,), status="stopped", stopped=1)
    back = evaluation_from_data(evaluation_data(evaluation))
    assert (back.status, back.stopped, back.results[0].status) == ("stopped", 1, "stopped")
