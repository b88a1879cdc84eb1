"""A simulation is a bounded job: caps, rate limit, required protections, distrust of the child."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.urls import reverse

from agents import checks, services
from agents.core.simulate import CodeCall
from agents.sandbox import Limits, host
from agents.sandbox import code_runner as memo
from agents.services import sandbox_door
from server import ratelimit

pytestmark = pytest.mark.django_db
HX = {"HX-Request": "true"}
# Half a second of CPU per call, whatever the machine and its load: it watches its CPU time.
SLOW_TOOL = (
    "import time\n"
    "def LookupBalance(account_id=''):\n"
    "    start = time.process_time()\n"
    "    while time.process_time() - start < 0.5:\n"
    "        pass\n"
    "    return {'balance': 1}\n"
)


@pytest.fixture(autouse=True)
def fresh_rate_limit():
    cache.clear()
    memo.clear_cache()


def slow_scenario(bank, steps: int):
    tool = bank.tools.get()
    services.tool_update(tool=tool, python_code=SLOW_TOOL)
    agent = bank.agents.get()
    script = "\n".join(
        ["user: hi", *[f'tool: LookupBalance {{"account_id": "{i}"}}' for i in range(steps)]]
    )
    scenario = services.scenario_save(agent=agent, name="Slow", steps_script=script)
    return agent, scenario


def test_many_slow_steps_end_within_the_time_cap(signed_in, bank, settings):
    settings.SIMULATION_MAX_SECONDS = 2
    agent, scenario = slow_scenario(bank, 20)
    response = signed_in.get(
        reverse("agent-simulate", args=[bank.pk, agent.pk]), {"scenario": scenario.pk}, headers=HX
    )
    body = response.content.decode()
    assert response.status_code == 200
    assert "The simulation was stopped: the simulation reached its time limit of 2 s of CPU" in body
    # Counted, not timed: each call uses at least 0.5 s of CPU, so at most 5 of the 20 start
    # before the 2 s cap (20 unbounded steps would take 10 s, 200 would take 100 s).
    assert body.count("not run: the simulation reached its time limit") >= 15


def test_code_calls_are_capped(bank, settings):
    settings.SIMULATION_MAX_CODE_CALLS = 2
    tool = bank.tools.get()
    services.tool_update(tool=tool, python_code="def LookupBalance(account_id=''):\n    return 1\n")
    agent = bank.agents.get()
    script = "\n".join(f'tool: LookupBalance {{"account_id": "{i}"}}' for i in range(5))
    scenario = services.scenario_save(agent=agent, name="Many", steps_script=script)
    result = sandbox_door.simulate_bounded(
        bank.to_spec(), scenario.to_spec(app_id=f"apps/{bank.pk}")
    )
    codes = [d.code for d in result.diagnostics]
    assert codes[0] == "SC472" and "cap of 2 code calls" in result.diagnostics[0].message
    refused = [d for d in result.diagnostics if "not run: the simulation reached" in d.message]
    assert len(refused) == 3


def test_steps_are_capped(bank, settings):
    settings.SIMULATION_MAX_STEPS = 3
    agent = bank.agents.get()
    scenario = services.scenario_save(
        agent=agent, name="Long", steps_script="\n".join(f"user: hello {i}" for i in range(7))
    )
    result = sandbox_door.simulate_bounded(
        bank.to_spec(), scenario.to_spec(app_id=f"apps/{bank.pk}")
    )
    assert result.diagnostics[0].code == "SC470"
    assert "7 steps; only the first 3" in result.diagnostics[0].message
    users = [e for e in result.events if e.kind == "user"]
    assert [e.text for e in users] == ["hello 0", "hello 1", "hello 2"]


def test_designer_simulations_are_rate_limited_per_user(signed_in, bank, settings, monkeypatch):
    settings.RATE_LIMITS = {**settings.RATE_LIMITS, "simulate": "2/m"}
    # A fixed clock: the counting window must not roll over between the requests.
    monkeypatch.setattr(ratelimit, "now", lambda: 1_000_000.0)
    agent = bank.agents.get()
    url = reverse("agent-simulate", args=[bank.pk, agent.pk])
    for _ in range(2):
        assert "turn 0" in signed_in.get(url, headers=HX).content.decode()
    response = signed_in.get(url, headers=HX)
    assert response.status_code == 429  # the page shows the text where the answer went
    assert "Too many simulations: at most 2" in response.content.decode()
    assert int(response["Retry-After"]) >= 1


def test_missing_required_protection_refuses_to_run_code(bank, settings, monkeypatch):
    monkeypatch.setattr(
        sandbox_door, "missing_protections", lambda: {"seccomp": "libseccomp is missing"}
    )
    settings.SANDBOX_REQUIRED_PROTECTIONS = ["seccomp"]
    agent = bank.agents.get()
    result = sandbox_door.simulate_bounded(
        bank.to_spec(), agent.scenarios.get().to_spec(app_id=f"apps/{bank.pk}")
    )
    first = result.diagnostics[0]
    assert first.code == "SC471"
    assert "seccomp (libseccomp is missing)" in first.message
    assert not any(e.kind == "tool_response" for e in result.events)
    monkeypatch.setattr(checks, "missing_protections", sandbox_door.missing_protections)
    (warning,) = checks.sandbox_protections()
    assert warning.id == "statecraft.W001" and "'seccomp'" in warning.msg
    assert "Simulations will not run Python code" in warning.msg


def test_the_system_check_is_clean_on_this_machine_and_names_unknown_protections(settings):
    call_command("check")  # raises on an error; this machine gives every protection
    assert sandbox_door.missing_protections() == {}
    settings.SANDBOX_REQUIRED_PROTECTIONS = ["seccomp", "magic"]
    errors = [m for m in checks.sandbox_protections() if m.id == "statecraft.E001"]
    assert len(errors) == 1 and "'magic'" in errors[0].msg


# ------------------------------------------------------------------ the host trusts nothing

FAKE_ANSWER = r"""
import json, sys
def frame():
    header = json.loads(sys.stdin.buffer.readline())
    return sys.stdin.buffer.read(header["size"])
def send(body):
    sys.stdout.buffer.write(b'{"size": %d}\n' % len(body) + body)
    sys.stdout.flush()
frame()
send(b'{}')
frame()
send(BODY)
sys.stdin.read()
"""


@pytest.mark.parametrize(
    "body, expected",
    [
        (b'{"ok": true, "return_value": NaN}', "NaN"),
        (b'{"ok": true, "return_value": -Infinity}', "-Infinity"),
        (b'{"ok": true, "return_value": ' + b"[" * 5000 + b"]" * 5000 + b"}", "nested too deeply"),
        (b'{"ok": true, "writes": [[1, 2]]}', "'writes'"),
        (b'{"ok": true, "writes": "x"}', "'writes'"),
        (b'{"ok": true, "removed": [null]}', "'removed'"),
        (b'{"ok": false, "error": {"kind": "x", "message": 3}}', "'error'"),
        (b'{"ok": true, "state": [1]}', "'state'"),
        (b'{"ok": true, "stdout": {"a": 1}}', "'stdout'"),
        (b"[1, 2]", "exited"),
    ],
    ids=[
        "nan",
        "infinity",
        "deep",
        "write-name",
        "writes-text",
        "removed",
        "error",
        "state",
        "stdout",
        "not-object",
    ],
)
def test_odd_answers_from_the_child_are_an_error_not_a_crash(tmp_path, body, expected):
    script = tmp_path / "fake.py"
    script.write_text(FAKE_ANSWER.replace("BODY", repr(body)))
    with host.SandboxSession(limits=Limits(wall_time_s=2), script=script) as session:
        result = session.run("def t():\n    return 1\n", entry="t", kind="tool", state={"a": 1})
    assert not result.ok
    assert result.error is not None and result.error.kind == "internal", result
    assert expected in result.error.message, result.error.message
    assert result.state == {"a": 1}


def test_the_memo_cache_keeps_to_its_byte_budget(monkeypatch):
    monkeypatch.setattr(memo, "CACHE_MAX_BYTES", 200_000)
    with host.open_session() as session:
        run = memo.sandbox_runner(session)
        for i in range(40):
            call = CodeCall(
                code=f"def t(n):\n    return 'x' * 10_000 + str({i})\n",
                entry="t",
                kind="tool",
                args={"n": i},
                state={},
                filename="<t>",
            )
            assert run(call).ok
    assert 0 < memo.cache_bytes() <= 200_000
    assert len(memo._RESULTS) < 40
    # A single result larger than an eighth of the budget is not kept at all.
    memo.clear_cache()
    big = CodeCall("def t():\n    return 'y' * 50_000\n", "t", "tool", {}, {}, "<t>")
    with host.open_session() as session:
        assert memo.sandbox_runner(session)(big).ok
    assert memo.cache_bytes() == 0


def test_a_callback_calls_a_tool_of_the_app_in_a_simulation(bank):
    services.tool_update(
        tool=bank.tools.get(),
        python_code="def LookupBalance(account_id=''):\n    return {'balance': 7}\n",
    )
    agent = bank.agents.get()
    services.callback_create(
        agent=agent,
        kind="before_model",
        code=(
            "def before_model_callback(callback_context, llm_request):\n"
            "    got = tools.LookupBalance({'account_id': 'x'}).json()['result']\n"
            "    callback_context.state['current_account_balance'] = got['balance']\n"
        ),
    )
    scenario = services.scenario_save(agent=agent, name="Cx", steps_script="user: hi\nagent: Hello")
    result = sandbox_door.simulate_bounded(
        bank.to_spec(), scenario.to_spec(app_id=f"apps/{bank.pk}")
    )
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics
    assert result.final_state["current_account_balance"] == 7
