"""A black-box tester's report on the ADK exchange, the CLI and the designer (adkpolish).

Each test fails on the code before its fix: an expected call of a tool no agent has
(evalset import, lint, scenario save), the export's turn numbers against the designer's,
the CLI's help and output."""

# ruff: noqa: F811 - the live runs' fixtures, imported below, are the tests' parameters
from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from agents.core.adk.evalsets import scenarios_from_evalset
from agents.core.adk.package import to_adk_files
from agents.core.evaluate import step_turns
from agents.core.lint import lint_app
from agents.core.script import parse_script
from agents.core.spec import AgentSpec, AppSpec, ScenarioSpec, ToolKind, ToolSpec
from agents.models import Scenario
from tests.test_live_runs import bank_app, models_env  # noqa: F401 - the fixtures

HX = {"HX-Request": "true"}

APP = AppSpec(
    name="x",
    tools=(ToolSpec("LookupBalance", ToolKind.PYTHON), ToolSpec("Transfer", ToolKind.PYTHON)),
    agents=(AgentSpec("a", is_root=True, tools=("LookupBalance", "Transfer")),),
)


def _evalset(tool: str) -> bytes:
    case = {
        "eval_id": "bad",
        "conversation": [
            {
                "user_content": {"parts": [{"text": "hi"}]},
                "intermediate_data": {"tool_uses": [{"name": tool}]},
            }
        ],
    }
    return json.dumps({"eval_cases": [case]}).encode()


# --------------------------------------------------------------- 1. a call of no agent's tool


def test_an_evalset_expecting_a_tool_the_agent_lacks_is_imported_with_a_warning():
    scenarios, notes = scenarios_from_evalset(_evalset("LookupBalanse"), APP, "bad2.evalset.json")
    assert [s.name for s in scenarios] == ["bad"]  # a warning: it is still imported
    assert [(n.code, n.severity.value, n.field) for n in notes] == [
        ("SC012", "warning", "eval_cases[0].conversation")
    ]
    assert notes[0].message == (
        "bad2.evalset.json: eval_cases[0] (bad): no agent of the app has a tool "
        "'LookupBalanse', so no run can call it (the tools of a: LookupBalance, Transfer). "
        "Did you mean 'LookupBalance'?"
    )
    # A tool the agent has, and a transfer, are no warning.
    assert scenarios_from_evalset(_evalset("Transfer"), APP)[1] == ()
    assert scenarios_from_evalset(_evalset("transfer_to_agent"), APP)[1] == ()


def test_lint_lists_a_scenario_expecting_or_scripting_a_tool_no_agent_has():
    steps = parse_script(
        "user: hi\nexpect call: NoSuchTool {}\ntool: Transfer {}\ntool: Transferr {}\n"
    ).steps
    scenario = ScenarioSpec(name="s1", agent="a", steps=steps)
    found = [d for d in lint_app(APP, (scenario,)) if d.code == "SC012"]
    assert [(d.field, d.subject, d.severity.value) for d in found] == [
        ("agents.a.scenarios.s1.steps", "a", "warning"),
        ("agents.a.scenarios.s1.steps", "a", "warning"),
    ]
    assert "'NoSuchTool'" in found[0].message and "Did you mean" not in found[0].message
    assert found[1].message.endswith("Did you mean 'Transfer'?")
    assert found[1].message.startswith("scenario s1: no agent of the app has a tool 'Transferr'")


@pytest.mark.django_db
def test_import_app_evalset_into_warns_of_the_tool_and_the_api_lint_lists_it(
    bank, user, tmp_path, client
):
    path = tmp_path / "bad2.evalset.json"
    path.write_bytes(_evalset("NoSuchTool"))
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "import_app",
        str(path),
        "--evalset-into",
        str(bank.pk),
        "--owner",
        user.username,
        stdout=out,
        stderr=err,
    )
    root = bank.agents.get(is_root=True)
    scenario = root.scenarios.get(name="bad")
    assert out.getvalue().split() == [str(scenario.pk)]
    assert (
        "warning: bad2.evalset.json: eval_cases[0] (bad): no agent of the app has a tool "
        "'NoSuchTool', so no run can call it (the tools of banking_agent: LookupBalance)."
        " [SC012]"
    ) in err.getvalue()
    # The summary says what the number on stdout is.
    assert f"its id is on stdout: {scenario.pk}." in err.getvalue()
    client.force_login(user)
    diagnostics = client.get(f"/api/apps/{bank.pk}/lint").json()["diagnostics"]
    assert [d["field"] for d in diagnostics if d["code"] == "SC012"] == [
        "agents.banking_agent.scenarios.bad.steps"
    ]


@pytest.mark.django_db
def test_a_scenario_saved_with_a_tool_no_agent_has_warns_on_the_steps_field(signed_in, bank):
    agent = bank.agents.get(is_root=True)
    form = {
        "name": "Typo",
        "steps_script": "user: hi\nexpect call: LookupBalanse {}\n",
        "session_values": "",
        "channel": "web",
        "modality": "text",
        "session_id": "s",
        "project_id": "p",
        "project_number": "1",
        "location": "eu",
        "token_budget": "500",
    }
    response = signed_in.post(reverse("scenario-new", args=[bank.pk, agent.pk]), form, headers=HX)
    body = response.content.decode()
    scenario = Scenario.objects.get(agent=agent, name="Typo")  # saved: a warning, not an error
    assert 'id="steps-script-warning"' in body
    assert "Did you mean &#x27;LookupBalance&#x27;?" in body
    # The editor stays open on the saved scenario (its edit form, the script in it).
    assert reverse("scenario-edit", args=[bank.pk, agent.pk, scenario.pk]) in body
    # A save without the problem closes the editor as before.
    fine = {**form, "steps_script": "user: hi\n", "version": scenario.version}
    body = signed_in.post(
        reverse("scenario-edit", args=[bank.pk, agent.pk, scenario.pk]), fine, headers=HX
    ).content.decode()
    assert 'id="steps-script-warning"' not in body


# --------------------------------------------------------------- 2. turns as the designer counts


def test_the_adk_exports_turn_numbers_are_the_designers():
    steps = parse_script("user: hi\nagent: hello\nuser: and now?\nexpect no calls\n").steps
    app = AppSpec(name="x", agents=(AgentSpec("a", is_root=True),))
    _files, notes = to_adk_files(app, (ScenarioSpec(name="quiet", agent="a", steps=steps),))
    no_calls = next(n for n in notes if n.code == "SC656")
    expect_at = next(i for i, s in enumerate(steps) if s.expectation is not None)
    designer_turn = step_turns(ScenarioSpec(name="quiet", agent="a", steps=steps))[expect_at]
    assert designer_turn == 1
    assert "turn 1 expects no calls" in no_calls.message


def test_steps_before_the_first_user_step_count_as_the_designers_turn_0():
    steps = parse_script("agent: welcome\nuser: hi\nexpect no calls\n").steps
    app = AppSpec(name="x", agents=(AgentSpec("a", is_root=True),))
    _files, notes = to_adk_files(app, (ScenarioSpec(name="w", agent="a", steps=steps),))
    assert "turn 1 expects no calls" in next(n for n in notes if n.code == "SC656").message


# --------------------------------------------------------------- 7. the CLI


def test_export_app_help_names_every_format_and_what_app_is(capsys):
    from agents.management.commands.export_app import Command

    text = Command().create_parser("manage.py", "export_app").format_help()
    assert "ADK" in text and "directory" in text
    assert "the app's id, or its name" in text


@pytest.mark.django_db
def test_export_app_takes_the_apps_name(shop, tmp_path, other_user):
    target = tmp_path / "shop.json"
    call_command("export_app", shop.name, "-o", str(target), stderr=io.StringIO())
    assert json.loads(target.read_text())["app"]["name"] == shop.name
    from agents import services

    services.app_create(owner=other_user, name=shop.name)
    with pytest.raises(CommandError, match="Several apps are named"):
        call_command("export_app", shop.name, "-o", str(target), stderr=io.StringIO())
    call_command(
        "export_app",
        shop.name,
        "--owner",
        shop.owner.username,
        "-o",
        str(target),
        stderr=io.StringIO(),
    )
    with pytest.raises(CommandError, match="No app with id or name 'nope'"):
        call_command("export_app", "nope", stderr=io.StringIO())


@pytest.mark.django_db
def test_an_evalset_refused_names_its_file_once(bank, user, tmp_path):
    path = tmp_path / "bad.evalset.json"
    path.write_bytes(b'{"eval_set_id": "x"}')
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command(
            "import_app",
            str(path),
            "--evalset-into",
            str(bank.pk),
            "--owner",
            user.username,
            stdout=io.StringIO(),
            stderr=err,
        )
    assert err.getvalue().splitlines()[0] == (
        "bad.evalset.json: eval_cases: an ADK evalset holds a list eval_cases [SC660]"
    )


# --------------------------------------------------------------- 3. a capped call has no number


@pytest.mark.django_db
def test_the_per_turn_cap_numbers_no_call_that_was_never_made(server, models_env, bank_app):
    from agents import services
    from agents.core.live import Caps
    from agents.services.live_runs import run_live
    from tests.llm_server import openai_call

    models_env()
    app, agent, scenario = bank_app
    scenario = services.scenario_save(
        agent=agent,
        scenario=scenario,
        steps_script="user: my balance?\nuser: and again?\n",
    )
    server.repeat_last = True
    server.script(openai_call("LookupBalance", {}))
    caps = Caps(max_calls=50, max_calls_per_turn=4, max_tokens=10**6, max_seconds=999)
    outcome = run_live(app=app, agent=agent, scenario=scenario, model="loop", caps=caps)
    assert len(server.seen) == outcome.run.model_calls == 8  # 4 a turn were made
    capped = [d.message for d in outcome.result.diagnostics if d.code == "SC421"]
    assert len(capped) == 2
    # Before: "model call 5 failed (cap)" and "model call 10 failed (cap)", calls never made.
    assert not [m for m in capped if "model call 5" in m or "model call 10" in m]
    assert capped[0].startswith("no further model call (cap): the model called tools 4 times")


# --------------------------------------------------------------- 4./5. the live summary


def _live_panel(client, run_jobs, app, agent, data) -> str:
    from tests.test_live_api_and_secrets import live_job

    return live_job(client, run_jobs, app, agent, data).content.decode()


def _summary(html: str) -> str:
    import re

    start = html.index('id="live-summary"')
    text = html[start : html.index("</p>", start)]
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", text))


@pytest.mark.django_db
def test_a_replay_groups_identical_drift_and_names_the_run_it_replayed(
    signed_in, server, models_env, bank_app, run_jobs
):
    from agents import services
    from agents.models import LiveRun
    from tests.llm_server import openai_text

    models_env()
    app, agent, scenario = bank_app
    services.scenario_save(
        agent=agent,
        scenario=scenario,
        steps_script="user: one\nuser: two\nuser: three\nuser: four\n",
    )
    server.script(*(openai_text(f"answer {n}") for n in range(4)))
    data = {"scenario": scenario.pk, "model": "loop", "live": "1"}
    _live_panel(signed_in, run_jobs, app, agent, data)
    recorded = LiveRun.objects.get(mode="live")
    assert recorded.model_calls == 4
    changed = {
        "scenario": scenario.pk,
        "replay": str(recorded.pk),
        "instructions": "Be brief.\n" + agent.instructions,
    }
    html = _live_panel(signed_in, run_jobs, app, agent, changed)
    start = html.index('id="drift-list"')
    drift = html[start : html.index("</ul>", start)]
    # One line for the one change (four lines before, one a call).
    assert drift.count("<li>") == 1
    assert "calls 1\u20134 (turns 0\u20133): <code>system_instruction, instructions line 1" in drift
    from django.utils import formats

    when = formats.date_format(recorded.created_at, "SHORT_DATETIME_FORMAT")
    assert f"of the run with loop on {when}" in _summary(html)


@pytest.mark.django_db
def test_an_endpoint_without_a_price_shows_no_price_not_a_zero_cost(
    signed_in, server, models_env, bank_app, run_jobs
):
    from tests.llm_server import openai_text

    models_env()  # "test-model": not in the price table, no price_in/price_out
    app, agent, scenario = bank_app
    server.script(openai_text("It is 1,250 EUR."))
    data = {"scenario": scenario.pk, "model": "loop", "live": "1"}
    html = _live_panel(signed_in, run_jobs, app, agent, data)
    assert "no price" in _summary(html) and "0.000000" not in html
    assert "Last live run: loop" in html and "1 call, no price" in html


@pytest.mark.parametrize(
    ("language", "cost", "shown"),
    [
        ("en", 0.0055, "≈ $0.0055"),
        ("en", 0.000123, "≈ $0.00012"),
        ("en", 1.234, "≈ $1.23"),
        ("en", 0.0, "≈ $0.00"),
        ("fr", 0.0055, "≈ 0,0055 $"),  # French writes the sign after the amount
    ],
)
def test_a_cost_is_formatted_one_way_in_the_languages_number_format(language, cost, shown):
    from django.utils import translation

    from designer.templatetags.designer_tags import cost_estimate

    with translation.override(language):
        assert cost_estimate(cost, True) == shown
        assert cost_estimate(cost, None) == shown  # an endpoint no longer configured
    assert cost_estimate(cost, False) == "no price"


def test_every_cost_of_the_designer_goes_through_the_one_format():
    """The running fragment and the summary wrote the cost each its own way ("≈ 0,000000 $"
    and "≈ $0,000000" on one French screen): both now use `cost_estimate`."""
    from pathlib import Path

    template = (Path(__file__).parent.parent / "templates/agents/app_designer.html").read_text()
    assert "floatformat:6" not in template and "${{" not in template
    assert template.count("|cost_estimate:") == 5


# --------------------------------------------------------------- 6. plurals


@pytest.mark.django_db
def test_one_passed_expectation_is_not_plural_in_french(signed_in, bank):
    """The golden summary read "Attentes : 1 réussies" (a blocktranslate with, no count)."""
    import re

    from agents import services

    agent = bank.agents.get(is_root=True)
    scenario = services.scenario_save(
        agent=agent, name="One", steps_script="user: hi\nexpect no calls\n"
    )
    signed_in.cookies["statecraft_language"] = "fr"
    html = signed_in.get(
        reverse("agent-simulate", args=[bank.pk, agent.pk]),
        {"scenario": scenario.pk},
        headers=HX,
    ).content.decode()
    start = html.index('id="golden-summary"')
    summary = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html[start : html.index("</p>", start)]))
    assert "1 réussies" not in summary and "0 échouées" not in summary
    assert re.search(r"\b1 (passed|réussie)\b", summary)


def test_the_evaluate_commands_counts_agree_with_their_number():
    from agents.management.commands.evaluate import _counts

    assert _counts("scenarios", 1, 0, 1, 1) == (
        "1 passed, 0 failed, 1 needs a model, 1 without expectations"
    )
    assert _counts("expectations", 2, 3, 2) == "2 passed, 3 failed, 2 need a model"


# --------------------------------------------------------------- 8. the viewer's editor


@pytest.mark.django_db
def test_a_viewers_read_only_editor_does_not_say_ctrl_s_saves(client, bank, other_user):
    from agents import services
    from agents.models import ShareRole

    services.app_share(app=bank, user=other_user, role=ShareRole.VIEWER)
    client.force_login(other_user)
    html = client.get(reverse("app-designer", args=[bank.pk])).content.decode()
    start = html.index('id="editor-help"')
    help_text = html[start : html.index("</p>", start)]
    assert "<kbd>S</kbd> saves" not in help_text
    assert "You may view this app but not change it." in help_text
    client.force_login(bank.owner)
    html = client.get(reverse("app-designer", args=[bank.pk])).content.decode()
    assert "<kbd>S</kbd> saves" in html


@pytest.mark.django_db
def test_a_file_that_is_not_a_zip_is_named_once(user, tmp_path):
    path = tmp_path / "cx.zip"
    path.write_bytes(b"not a zip")
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command(
            "import_app", str(path), "--owner", user.username, stdout=io.StringIO(), stderr=err
        )
    first = err.getvalue().splitlines()[0]
    assert first.startswith("cx.zip is not a ZIP file") and first.count("cx.zip") == 1
