"""Issue 18: what a before_model callback changed in a model call's request (the system
instruction it appended to or rewrote, the tools it hid) shows at that model call in the
designer's timeline, scripted and live; a scripted call of a hidden tool (SC422) shows at
its step. Through the designer's URLs, the real sandbox, and for the live run a real
model server on loopback (tests/llm_server.py)."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from agents import services
from designer.views.conversation import CHANGE_DETAIL_CHARS
from tests.llm_server import openai_stream_text
from tests.test_live_api_and_secrets import configured, live_job  # noqa: F401
from tests.test_live_runs import bank_app  # noqa: F401

pytestmark = pytest.mark.django_db
HX = {"HX-Request": "true"}
DIRECTIVE = "\n<system_directive>Ask which account.</system_directive>"


def callback(change: str, hide: str | None = "LookupBalance") -> str:
    hiding = f"    llm_request.config.hide_tool({hide!r})\n" if hide else ""
    return (
        "def before_model_callback(callback_context, llm_request):\n"
        f"{hiding}"
        "    si = llm_request.config.system_instruction\n"
        f"    llm_request.config.system_instruction = {change}\n"
        "    return None\n"
    )


def events(html: str, turn: int = 0) -> list[tuple[str, str]]:
    """The turn's timeline rows as (kind, text without tags), in order."""
    start = html.index(f'data-turn="{turn}"')
    end = html.find('<details class="state"', start)
    rows = re.findall(
        r'<li class="event event-([a-z_]+)[^"]*"[^>]*>(.*?)</li>', html[start:end], re.S
    )
    return [
        (kind, re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body)).strip()) for kind, body in rows
    ]


def simulated(client, app, agent) -> str:
    response = client.get(reverse("agent-simulate", args=[app.pk, agent.pk]), headers=HX)
    assert response.status_code == 200
    return response.content.decode()


def test_the_timeline_shows_what_the_callback_appended_and_hid_and_sc422_at_its_step(
    signed_in, bank
):
    agent = bank.agents.get()
    services.callback_create(agent=agent, kind="before_model", code=callback(f"si + {DIRECTIVE!r}"))
    rows = events(simulated(signed_in, bank, agent))
    kinds = [kind for kind, _ in rows]
    # Turn 0: the callback ran, then the request it changed, the note, the scripted call.
    at = kinds.index("request")
    assert kinds[at - 1 : at + 3] == ["callback", "request", "note", "tool_call"]
    request = rows[at][1]
    assert "callback appended to the system instruction:" in request
    assert "&lt;system_directive&gt;Ask which account.&lt;/system_directive&gt;" in request
    assert "hidden from the model for this call: LookupBalance" in request
    note = rows[at + 1][1]
    assert "the scripted call of LookupBalance runs, but the before_model callback" in note
    # The reply's model call (the second of the turn) was changed the same way.
    assert kinds.count("request") == 2 and kinds[-2:] == ["request", "agent"]


def test_a_rewritten_instruction_shows_as_a_diff_and_a_long_one_is_cut(signed_in, bank):
    agent = bank.agents.get()
    services.callback_create(
        agent=agent,
        kind="before_model",
        code=callback('si.replace("Always", "Never")', hide=None),
    )
    agent.refresh_from_db()
    services.agent_update(agent=agent, instructions="Be brief.\nAlways greet the user.\nBye.")
    html = simulated(signed_in, bank, agent)
    (request,) = {text for kind, text in events(html) if kind == "request"}
    assert (
        "callback changed the system instruction (+1 \N{MINUS SIGN}1 lines): Never greet the user."
        in request
    )
    assert "-Always greet the user. +Never greet the user." in request
    assert "hidden from the model" not in request
    # A directive of 12 KB: a preview and at most CHANGE_DETAIL_CHARS of it, never all.
    long = "\n" + "Rule: confirm before booking. " * 400
    callback_row = agent.callbacks.get()
    services.callback_update(callback=callback_row, code=callback(f"si + {long!r}", hide=None))
    html = simulated(signed_in, bank, agent)
    (request,) = {text for kind, text in events(html) if kind == "request"}
    assert "callback appended to the system instruction: Rule: confirm before booking." in request
    assert long.strip() not in html and len(request) < CHANGE_DETAIL_CHARS + 300


def test_a_callback_that_changes_nothing_adds_no_row(signed_in, bank):
    agent = bank.agents.get()
    services.callback_create(agent=agent, kind="before_model", code=callback("si", hide=None))
    assert "request" not in [kind for kind, _ in events(simulated(signed_in, bank, agent))]


def test_a_live_runs_timeline_shows_the_request_the_model_received(
    signed_in,
    configured,  # noqa: F811
    bank_app,  # noqa: F811
    run_jobs,
):
    app, agent, scenario = bank_app
    services.callback_create(agent=agent, kind="before_model", code=callback(f"si + {DIRECTIVE!r}"))
    configured.script(openai_stream_text("Which account: ", "current or savings?"))
    data = {"scenario": scenario.pk, "model": "loop", "live": "1"}
    html = live_job(signed_in, run_jobs, app, agent, data).content.decode()
    assert 'id="live-summary"' in html
    rows = events(html)
    (request,) = [text for kind, text in rows if kind == "request"]
    assert "callback appended to the system instruction:" in request
    assert "hidden from the model for this call: LookupBalance" in request
    kinds = [kind for kind, _ in rows]
    assert kinds[kinds.index("request") + 1] == "agent"  # just before the model's answer
    assert "note" not in [kind for kind, _ in rows]  # a live model was not offered it
    # What the model received is what the row says.
    assert configured.seen[0].body["messages"][0]["content"].endswith(DIRECTIVE)
    assert "LookupBalance" not in str(configured.seen[0].body.get("tools") or [])
