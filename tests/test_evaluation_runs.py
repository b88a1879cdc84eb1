"""Evaluation at scale (issue 31): a Run all fans out into one job per golden x repetition x
model x version, gathered into an evaluation run with its matrix, kept as the app's history.

Models are real HTTP servers on loopback (tests/llm_server.py) answering from what they
receive; jobs run as a worker runs them (``run_jobs``), or in real worker processes.
"""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from agents import services
from agents.models import EvaluationRun, Job, JobItem, ScenarioResult
from agents.services import evaluation, evaluation_runs, jobs, versions
from agents.services.jobs import JobContext
from tests.llm_server import ModelServer, Reply, configure_models, openai_call, openai_text
from tests.test_live_runs import bank_app  # noqa: F401
from tests.workers import slow_app

pytestmark = pytest.mark.django_db

RIGHT = "Your balance is 1,250 EUR."


def _opens(seen) -> bool:
    """The first request of a conversation: nothing but the system and the user's turn."""
    roles = [m.get("role") for m in (seen.body or {}).get("messages", [])]
    return "tool" not in roles and "assistant" not in roles


def right_in(runs: set[int]) -> ModelServer:
    """A model that calls LookupBalance (as the golden expects) in the conversations whose
    number (0, 1, ...) is in `runs`, and answers without calling it in the others."""
    server = ModelServer()
    count = [-1]

    def answer(seen) -> Reply:
        if _opens(seen):
            count[0] += 1
            if count[0] not in runs:
                return openai_text("I cannot look that up.")
            return openai_call("LookupBalance", {"account_id": "primary"})
        return openai_text(RIGHT)

    server.answer = answer
    return server


@pytest.fixture
def api(user):
    client = APIClient()
    client.force_login(user)
    return client


def _finished(api, response, run_jobs):
    assert response.status_code == 202, response.content
    run_jobs()
    body = api.get(response["Location"]).json()
    assert body["status"] == "succeeded", body["error"]
    return body["result"]


def test_a_golden_right_three_times_in_five_is_flaky_at_60_percent(
    monkeypatch,
    bank_app,  # noqa: F811
    api,
    run_jobs,
):
    app, _, scenario = bank_app
    server = right_in({0, 2, 4})
    try:
        configure_models(monkeypatch, {"loop": {"server": server}})
        url = reverse("api:app-evaluate", args=[app.pk])
        result = _finished(
            api, api.post(url, {"model": "loop", "repeat": 5}, format="json"), run_jobs
        )
    finally:
        server.close()
    (golden,) = [s for s in result["scenarios"] if s["scenario"] == scenario.pk]
    assert golden["repetitions"] == ["passed", "failed", "passed", "failed", "passed"]
    assert (golden["pass_rate"], golden["flaky"]) == (0.6, True)
    assert result["summary"]["flaky"] == 1 and result["ok"] is False
    cell = result["matrix"]["rows"][0]["cells"]["loop@current"]
    assert cell["status"] == "flaky" and cell["first_failing_repetition"] == 1
    assert cell["first_failure"]["kind"] == "call"
    # Each repetition is a live run of its own, one click away.
    assert len(cell["live_runs"]) == 5 and all(cell["live_runs"])


def test_a_pass_threshold_of_60_percent_passes_that_golden(
    monkeypatch,
    bank_app,  # noqa: F811
    api,
    run_jobs,
):
    app, _, _ = bank_app
    server = right_in({0, 2, 4})
    try:
        configure_models(monkeypatch, {"loop": {"server": server}})
        url = reverse("api:app-evaluate", args=[app.pk])
        body = {"model": "loop", "repeat": 5, "threshold": 0.6}
        result = _finished(api, api.post(url, body, format="json"), run_jobs)
    finally:
        server.close()
    assert result["ok"] is True and result["summary"]["flaky"] == 1
    run = EvaluationRun.objects.get(app=app)
    page = api.get(reverse("evaluation-run", args=[app.pk, run.pk])).content.decode()
    assert "cell-flaky cell-meets" in page and ">meets threshold</span>" in page


def test_two_models_by_two_versions_make_a_matrix_with_its_csv_and_comparison(
    monkeypatch,
    bank_app,  # noqa: F811
    api,
    user,
    run_jobs,
):
    app, agent, _ = bank_app
    versions.version_create(app=app, name="first", user=user)
    services.scenario_save(
        agent=agent,
        name="Balance again",
        steps_script="user: My balance, please.\nexpect call: LookupBalance\n",
    )
    good, bad = right_in(set(range(100))), right_in(set())
    try:
        configure_models(monkeypatch, {"good": {"server": good}, "bad": {"server": bad}})
        url = reverse("api:app-evaluate", args=[app.pk])
        body = {"models": ["good", "bad"], "versions": ["1", "current"]}
        result = _finished(api, api.post(url, body, format="json"), run_jobs)
    finally:
        good.close()
        bad.close()
    matrix = result["matrix"]
    keys = [c["key"] for c in matrix["columns"]]
    assert keys == ["good@1", "bad@1", "good@current", "bad@current"]
    cells = {row["name"]: row["cells"] for row in matrix["rows"]}
    assert set(cells["Balance live"]) == set(keys)
    assert set(cells["Balance again"]) == {"good@current", "bad@current"}  # not in version 1
    assert [cells["Balance live"][k]["status"] for k in keys] == ["passed", "failed"] * 2
    assert matrix["totals"]["good@current"]["pass_rate"] == 1.0
    assert matrix["totals"]["bad@current"]["pass_rate"] == 0.0
    assert matrix["totals"]["good@current"]["tokens_in"] > 0

    run = EvaluationRun.objects.get(app=app)
    assert run.models_used == ["good", "bad"] and run.versions == ["1", ""]
    detail = api.get(reverse("api:evaluation-run-detail", args=[app.pk, run.pk])).json()
    assert detail["matrix"]["columns"] == matrix["columns"]

    text = api.get(reverse("api:evaluation-run-csv", args=[app.pk, run.pk])).content.decode()
    lines = list(csv.DictReader(io.StringIO(text)))
    assert len(lines) == 6  # 2 goldens x 2 models in the working copy, 1 x 2 in version 1
    bad_line = next(x for x in lines if x["model"] == "bad" and x["version"] == "1")
    assert (bad_line["scenario"], bad_line["status"], bad_line["pass_rate"]) == (
        "Balance live",
        "failed",
        "0.0",
    )

    compare = reverse("api:evaluation-run-compare", args=[app.pk, run.pk])
    changed = api.get(compare, {"a": "good@current", "b": "bad@current"}).json()
    assert sorted(c["golden"] for c in changed) == [
        "banking_agent / Balance again",
        "banking_agent / Balance live",
    ]
    assert changed[0]["a"] == "passed" and changed[0]["b_first_failure"]["kind"] == "call"
    refused = api.get(compare, {"a": "good@current", "b": "nope"})
    assert refused.status_code == 400 and "nope" in refused.content.decode()


def test_a_repeat_over_the_limit_is_refused_naming_the_field(api, bank, settings):
    settings.EVALUATION_MAX_REPEAT = 5
    response = api.post(reverse("api:app-evaluate", args=[bank.pk]), {"repeat": 6}, format="json")
    assert response.status_code == 400
    assert "repeat" in response.content.decode() and "EVALUATION_MAX_REPEAT" in (
        response.content.decode()
    )
    assert not Job.objects.exists()


def test_an_unknown_version_is_refused_naming_it(api, bank):
    response = api.post(
        reverse("api:app-evaluate", args=[bank.pk]), {"versions": ["7"]}, format="json"
    )
    assert response.status_code == 400 and "no version 7" in response.content.decode()


def test_cancelling_a_run_all_cancels_every_queued_piece(user, bank):
    slow_app(bank, 3)
    parent = evaluation.run_all_submit(app=bank, actor=user, repeat=2, enqueue=False)
    _, pairs = evaluation.app_scenarios(bank)
    evaluation_runs.spawn(JobContext(parent, "test"), evaluation_runs.plan(parent, pairs))
    assert Job.objects.filter(parent=parent, status="queued").count() == 2 * len(pairs)
    jobs.job_cancel(job=parent)
    assert set(Job.objects.filter(parent=parent).values_list("status", flat=True)) == {"cancelled"}


def test_pieces_count_once_against_the_users_job_limit(api, bank, settings, run_jobs):
    settings.JOBS_MAX_ACTIVE_PER_USER = 2
    slow_app(bank, 2)
    url = reverse("api:app-evaluate", args=[bank.pk])
    assert api.post(url, {"repeat": 3}, format="json").status_code == 202
    parent = Job.objects.get(parent=None)
    _, pairs = evaluation.app_scenarios(bank)
    evaluation_runs.spawn(JobContext(parent, "test"), evaluation_runs.plan(parent, pairs))
    assert Job.objects.filter(status="queued").count() > 2  # its pieces are queued too
    scenario = bank.agents.get().scenarios.first()
    agent = bank.agents.get()
    one = reverse("api:scenario-evaluate", args=[bank.pk, agent.pk, scenario.pk])
    assert api.post(one).status_code == 202  # the second of two jobs, not the eighth


def test_the_history_lists_runs_newest_first_and_prunes_the_oldest(api, bank, settings, run_jobs):
    settings.EVALUATION_RUNS_KEPT = 2
    url = reverse("api:app-evaluate", args=[bank.pk])
    for _ in range(3):
        _finished(api, api.post(url), run_jobs)
    listed = api.get(reverse("api:evaluation-run-list", args=[bank.pk])).json()
    assert len(listed) == 2 and listed[0]["id"] > listed[1]["id"]
    assert listed[0]["totals"]["goldens"] == bank.agents.get().scenarios.count()
    assert listed[0]["status"] == "succeeded" and "matrix" not in listed[0]


def test_another_users_run_reads_404(api, bank, other_user, run_jobs):
    _finished(api, api.post(reverse("api:app-evaluate", args=[bank.pk])), run_jobs)
    run = EvaluationRun.objects.get()
    stranger = APIClient()
    stranger.force_login(other_user)
    url = reverse("api:evaluation-run-detail", args=[bank.pk, run.pk])
    assert stranger.get(url).status_code == 404


@pytest.mark.django_db(transaction=True)
@pytest.mark.xdist_group("workers")
def test_two_workers_share_a_run_all_and_a_killed_one_loses_nothing(workers, user, bank):
    """Two real workers on the database queue: the pieces run on both; one SIGKILLed mid-run
    has its pieces queued again and run once; every golden is counted once."""
    total = slow_app(bank, 6, calls=3)
    pair = [workers(), workers()]
    job = evaluation.run_all_submit(app=bank, actor=user)
    for worker in pair:  # each runs pieces: the parent's worker in its threads, the other
        worker.wait_for("(evaluate_piece) started by")  # from the queue
    job.refresh_from_db()
    parents = [w for w in pair if job.worker.endswith(f":{w.proc.pid}")]
    (keeper,) = parents
    (other,) = [w for w in pair if w is not keeper]
    other.kill()  # mid-piece: the parent's worker queues its piece again and runs it
    keeper.wait_for(f"job {job.pk} (evaluate_app) succeeded")
    job.refresh_from_db()
    assert job.status == "succeeded" and job.progress_done == total
    pieces = Job.objects.filter(parent=job)
    assert pieces.count() == total and set(pieces.values_list("status", flat=True)) == {"succeeded"}
    # The piece the killed worker was running ran again here, once.
    assert sorted(p.attempts for p in pieces)[-1] == 2
    keys = list(JobItem.objects.filter(job=job).values_list("key", flat=True))
    assert len(keys) == total == len(set(keys))
    assert ScenarioResult.objects.filter(scenario__agent__app=bank).count() == total
    assert len(job.result["scenarios"]) == total


def test_evaluate_writes_one_junit_case_per_golden_model_and_version_and_exits_1(
    monkeypatch,
    bank_app,  # noqa: F811
    user,
    tmp_path,
):
    import xml.etree.ElementTree as ET

    from django.core.management import call_command
    from django.core.management.base import CommandError

    app, _, _ = bank_app
    versions.version_create(app=app, name="first", user=user)
    good, flaky = right_in(set(range(100))), right_in({1})
    out = io.StringIO()
    junit = tmp_path / "out.xml"
    try:
        configure_models(monkeypatch, {"good": {"server": good}, "flaky": {"server": flaky}})
        with pytest.raises(CommandError) as stopped:
            call_command(
                "evaluate",
                str(app.pk),
                "--model=good,flaky",
                "--version=1,current",
                "--repeat=2",
                "--threshold=0.5",
                f"--junit={junit}",
                stdout=out,
            )
    finally:
        good.close()
        flaky.close()
    assert stopped.value.returncode == 1
    assert "1 golden is below the pass threshold of 0.5." in str(stopped.value)
    cases = ET.parse(junit).getroot().findall(".//testcase")
    names = sorted(c.get("name") for c in cases)
    assert names == [
        "Balance live [flaky@1]",
        "Balance live [flaky@current]",
        "Balance live [good@1]",
        "Balance live [good@current]",
    ]
    failing = [c.get("name") for c in cases if c.find("failure") is not None]
    # flaky's conversations in turn: version 1 wrong then right (50 %: at the threshold),
    # the working copy wrong twice (0 %: below it).
    assert failing == ["Balance live [flaky@current]"]
    text = out.getvalue()
    assert "FLAKY" in text and "[flaky@1]" in text and "TOTAL" in text


def test_a_users_pieces_give_their_turn_when_another_user_waits(user, other_user, bank, settings):
    """The fair queue: ada's piece taken from the queue while she already has the most
    running pieces goes back on the queue if bob's job waits; it runs when nobody waits."""
    settings.JOBS_MAX_RUNNING_PER_USER = 1
    slow_app(bank, 2)
    parent = evaluation.run_all_submit(app=bank, actor=user, enqueue=False)
    _, pairs = evaluation.app_scenarios(bank)
    first, second, *_ = evaluation_runs.spawn(
        JobContext(parent, "test"), evaluation_runs.plan(parent, pairs)
    )
    Job.objects.filter(pk=first.pk).update(status="running", worker="elsewhere:1")
    services.app_share(app=bank, user=other_user, role="editor", actor=user)
    bobs = evaluation.run_all_submit(app=bank, actor=other_user, enqueue=False)
    jobs.run_job.call(str(second.pk))
    second.refresh_from_db()
    assert second.status == "queued" and second.attempts == 0  # bob's turn first
    jobs.job_cancel(job=bobs)
    jobs.run_job.call(str(second.pk))
    second.refresh_from_db()
    assert second.status == "succeeded" and second.attempts == 1


def test_a_worker_takes_the_slowest_goldens_of_the_last_run_all_first(user, bank):
    """Longest first, so a worker's threads end together: by each golden's seconds in the
    app's last Run all; a golden that run did not have goes first, by its steps."""
    slow_app(bank, 2, calls=1)
    _, pairs = evaluation.app_scenarios(bank)
    steps = {s.pk: len(s.steps.all()) for _, s in pairs}
    last = evaluation.run_all_submit(app=bank, actor=user, enqueue=False)
    children = evaluation_runs.spawn(JobContext(last, "test"), evaluation_runs.plan(last, pairs))
    seconds = {"Slow 0": 0.5, "Slow 1": 3.0}  # the demo's own golden: not in that run
    for child in children:
        name = child.params["name"]
        if name in seconds:
            Job.objects.filter(pk=child.pk).update(
                status="succeeded", result={"seconds": seconds[name]}
            )
    now = evaluation.run_all_submit(app=bank, actor=user, enqueue=False)
    pieces = evaluation_runs.spawn(JobContext(now, "test"), evaluation_runs.plan(now, pairs))
    order = evaluation_runs.longest_first(now, pieces, steps)
    names = [Job.objects.get(pk=pk).params["name"] for pk in order]
    demo = bank.agents.get().scenarios.exclude(name__startswith="Slow").get().name
    assert names == [demo, "Slow 1", "Slow 0"]


@pytest.mark.parametrize(
    ("language", "words"),
    [
        ("fr", "Le scénario a été supprimé avant son tour."),
        ("de", "Das Szenario wurde gelöscht, bevor es an der Reihe war."),
    ],
)
def test_an_error_cell_of_the_matrix_reads_in_the_readers_language(user, bank, language, words):
    """A piece whose golden was deleted before its turn is an error cell; its reason is
    stored with its template, so the run's page and API say it in the reader's language."""
    from django.utils import translation

    from agents.i18n import localized_data
    from agents.models import Scenario
    from agents.services import evaluation_matrix

    parent = evaluation.run_all_submit(app=bank, actor=user, repeat=2, enqueue=False)
    _, pairs = evaluation.app_scenarios(bank)
    children = evaluation_runs.spawn(
        JobContext(parent, "test"), evaluation_runs.plan(parent, pairs)
    )
    child = children[0]
    Scenario.objects.filter(pk=child.params["scenario"]).delete()
    jobs.job_run(str(child.pk))
    child.refresh_from_db()
    outcome = evaluation_runs.piece_outcome(child)
    matrix = evaluation_matrix.matrix_of(
        [outcome], evaluation_runs.columns_of(parent.params), threshold=1.0
    )
    with translation.override(language):
        shown = localized_data(matrix)
    (cell,) = shown["rows"][0]["cells"].values()
    assert cell["first_failure"]["message"] == words


def _outcome(name: str, column: str, status: str, repetition: int = 0, seconds: float = 1.0):
    return {
        "golden": f"agent / {name}",
        "agent_name": "agent",
        "name": name,
        "column": column,
        "repetition": repetition,
        "status": status,
        "seconds": seconds,
        "results": [],
    }


def test_the_csv_never_hands_a_spreadsheet_a_formula():
    """Names come from editors: a golden, agent or model named like a formula is written as
    text (a leading apostrophe), so opening the export runs nothing."""
    from agents.services import evaluation_matrix

    columns = [evaluation_runs.Column("=1+2", "")]
    matrix = evaluation_matrix.matrix_of(
        [_outcome('=HYPERLINK("http://evil","x")', "=1+2@current", "passed")], columns, 1.0
    )
    rows = list(csv.reader(io.StringIO(evaluation_matrix.matrix_csv(matrix))))[1:]
    golden, _, scenario, model = rows[0][:4]
    assert golden == 'agent / =HYPERLINK("http://evil","x")'
    assert scenario == '\'=HYPERLINK("http://evil","x")' and model == "'=1+2"
    for cell in rows[0]:
        assert not cell.startswith(("=", "+", "-", "@", "|")), cell


def test_the_matrix_rows_keep_one_order_and_unrun_pieces_take_no_time():
    from agents.services import evaluation_matrix

    columns = [evaluation_runs.Column("m", "")]
    outcomes = [
        _outcome("b", "m@current", "passed", seconds=2.0),
        _outcome("a", "m@current", "passed", seconds=2.0),
        _outcome("a", "m@current", "cancelled", repetition=1, seconds=0.0),
    ]
    one = evaluation_matrix.matrix_of(outcomes, columns, 1.0)
    other = evaluation_matrix.matrix_of(list(reversed(outcomes)), columns, 1.0)
    assert [r["name"] for r in one["rows"]] == [r["name"] for r in other["rows"]] == ["a", "b"]
    assert one["rows"][0]["cells"]["m@current"]["latency_p50"] == 2.0
    assert one["totals"]["m@current"]["latency_p50"] == 2.0


def test_the_history_counts_a_golden_flaky_in_two_columns_once(user, bank):
    from agents.services import evaluation_history, evaluation_matrix

    job = evaluation.run_all_submit(app=bank, actor=user, repeat=2, enqueue=False)
    evaluation_history.run_started(job)
    columns = [evaluation_runs.Column("", ""), evaluation_runs.Column("", "1")]
    outcomes = [
        _outcome("g", column.key, status, repetition=i)
        for column in columns
        for i, status in enumerate(("passed", "failed"))
    ]
    matrix = evaluation_matrix.matrix_of(outcomes, columns, 1.0)
    run = evaluation_history.run_finished(job, "succeeded", matrix)
    assert sum(t["flaky"] for t in matrix["totals"].values()) == 2
    assert run.totals["flaky"] == 1


def test_a_model_named_twice_is_one_column(monkeypatch, bank_app, api):  # noqa: F811
    from tests.llm_server import ModelServer

    app, _, _ = bank_app
    server = ModelServer()
    try:
        configure_models(monkeypatch, {"flash": {"server": server}})
        response = api.post(
            reverse("api:app-evaluate", args=[app.pk]),
            {"models": ["flash", "flash"], "repeat": 2},
            format="json",
        )
    finally:
        server.close()
    assert response.status_code == 202, response.content
    job = Job.objects.get(parent__isnull=True, app=app)
    assert evaluation_runs.columns_of(job.params) == [evaluation_runs.Column("flash", "")]


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"repeat": 10**9}, "repeat", "EVALUATION_MAX_REPEAT"),
        ({"repeat": 0}, "repeat", "EVALUATION_MAX_REPEAT"),
        ({"threshold": 2}, "threshold", "from 0 to 1"),
        ({"versions": ["99"]}, "versions", "no version 99"),
    ],
)
def test_an_out_of_range_experiment_is_refused_the_same_way(api, bank, body, field, words):
    response = api.post(reverse("api:app-evaluate", args=[bank.pk]), body, format="json")
    assert response.status_code == 400
    text = response.content.decode()
    assert f'"{field}"' in text and words in text, text
    assert not Job.objects.exists()


def test_a_run_all_cancelled_before_it_ran_is_cancelled_in_the_history(api, bank):
    """Superseded by the next Run all before a worker took it: its history row does not
    stay queued (the page would poll it forever)."""
    url = reverse("api:app-evaluate", args=[bank.pk])
    first = api.post(url, {"repeat": 2}, format="json")
    second = api.post(url, {"repeat": 2}, format="json")
    assert first.status_code == second.status_code == 202
    runs = api.get(reverse("api:evaluation-run-list", args=[bank.pk])).json()
    by_job = {r["job"]: r["status"] for r in runs}
    assert Job.objects.get(pk=first.json()["id"]).status == "cancelled"
    assert by_job[str(first.json()["id"])] == "cancelled"
    assert by_job[str(second.json()["id"])] == "queued"


def test_a_missing_run_and_a_marks_verdict_read_in_german(api, bank):
    from django.utils import translation

    from agents.i18n import word

    missing = api.get(
        reverse("api:evaluation-run-detail", args=[bank.pk, 999]), HTTP_ACCEPT_LANGUAGE="de"
    )
    assert missing.status_code == 404
    assert missing.json()["detail"] == "Kein solcher Bewertungslauf für diese App."
    with translation.override("de"):
        assert word("needs_model") == "braucht ein Modell"


def test_a_runs_page_names_its_columns_and_marks_the_goldens_below_its_threshold(
    monkeypatch,
    bank_app,  # noqa: F811
    api,
    user,
    run_jobs,
):
    """Under a threshold of 80 %, a golden right 3 times in 5 is below it: its cell and the
    column's total say so. The comparison names columns as the matrix does (`good ·
    working copy`), not by their keys (`good@current`)."""
    app, _, _ = bank_app
    flaky, bad = right_in({0, 2, 4}), right_in(set())
    try:
        configure_models(monkeypatch, {"good": {"server": flaky}, "bad": {"server": bad}})
        url = reverse("api:app-evaluate", args=[app.pk])
        body = {"models": ["good", "bad"], "repeat": 5, "threshold": 0.8}
        _finished(api, api.post(url, body, format="json"), run_jobs)
    finally:
        flaky.close()
        bad.close()
    run = EvaluationRun.objects.get(app=app)
    text = api.get(reverse("evaluation-run", args=[app.pk, run.pk])).content.decode()
    assert text.count("cell-flaky cell-below") == 1
    assert text.count(">below threshold</span>") == 2  # the flaky golden and the failing one
    assert text.count("1 below the threshold") == 2
    assert '<option value="good@current" selected>good · working copy</option>' in text
    assert '<th scope="col">bad · working copy</th>' in text


def test_a_cells_live_runs_are_in_the_order_of_its_repetitions():
    """The pieces end in any order (several workers): the cell lists its live runs as its
    marks, repetition by repetition (the page showed #4, #3, #1, #7, #6)."""
    from agents.services.evaluation_matrix import matrix_of

    column = evaluation_runs.Column("loop", "")
    outcomes = [
        {"golden": "a / b", "agent_name": "a", "name": "b", "column": column.key,
         "repetition": rep, "status": status, "live": {"run": run}}
        for rep, status, run in ((2, "passed", 4), (0, "failed", 9), (1, "passed", 1))
    ]  # fmt: skip
    cell = matrix_of(outcomes, [column], 1.0)["rows"][0]["cells"][column.key]
    assert (cell["runs"], cell["live_runs"]) == (["failed", "passed", "passed"], [9, 1, 4])


def test_a_run_stopped_part_way_keeps_every_golden_in_its_matrix(user, bank, settings, run_jobs):
    """Stopped by a cap after 3 of its 8 pieces: the pieces it never ran are cancelled
    cells of the matrix (their goldens were missing from it, as if the app had fewer)."""
    settings.JOBS_MAX_CODE_CALLS = 2
    goldens = slow_app(bank, 3)
    job = evaluation.run_all_submit(app=bank, actor=user, repeat=2)
    run_jobs()
    run = EvaluationRun.objects.get(app=bank)
    cells = [row["cells"]["offline@current"] for row in run.matrix["rows"]]
    assert run.status == "failed" and len(cells) == goldens
    assert sum(c["runs"].count("cancelled") for c in cells) == 5
    # The designer's Run all panel has a row for each golden too (its first repetition).
    assert JobItem.objects.filter(job=job).count() == goldens
