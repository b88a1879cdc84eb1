"""The warm sandbox session: many calls, one session child, one fresh call process each.

Run alone with: .venv/bin/python -m pytest tests/sandbox -q -p no:django
"""

from __future__ import annotations

import gc
import os
import resource
import signal
import sys
import textwrap
from pathlib import Path

import pytest

from agents.sandbox import Limits, SandboxCall, open_session, run_many
from agents.sandbox import host as sandbox_host

FAST = Limits(wall_time_s=0.5, cpu_time_s=1)

INC = "def inc(by):\n    context.state['n'] = context.state.get('n', 0) + by\n    return by\n"
OK = "def t():\n    return 'ok'\n"


def run(session, code: str, name: str = "t", **kwargs):
    kwargs.setdefault("kind", "tool")
    return session.run(textwrap.dedent(code), entry=name, **kwargs)


def gone(pid: int) -> bool:
    """True when *pid* no longer exists at all (neither running nor a zombie)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(c) for c in path.read_text().split()] if path.exists() else []


def descendants(pid: int) -> list[int]:
    """Every process below *pid* (bubblewrap's init and the session child included)."""
    found = []
    for child in children(pid):
        found += [child, *descendants(child)]
    return found


def jail_processes(pid: int) -> tuple[list[int], list[int]]:
    """The processes below *pid* that stay between calls (bubblewrap's init, the session
    child), and the call processes (the session child's children: between calls, at most
    the one forked ahead for the next request)."""
    below = descendants(pid)
    # The first Python below bubblewrap's processes (its call processes are Python too).
    argv0 = {p: Path(f"/proc/{p}/cmdline").read_bytes().split(b"\0")[0] for p in below}
    session_child = next(p for p in below if b"python" in argv0[p].rsplit(b"/", 1)[-1])
    calls = children(session_child)
    return [p for p in below if p not in calls], calls


@pytest.fixture(scope="module")
def shared():
    """One session for the parametrized tests (as in a simulation)."""
    with open_session(limits=FAST) as session:
        yield session


# --------------------------------------------------------------------------- happy path


def test_calls_in_a_session_use_the_given_state_each_time():
    with open_session(context_values={"session_id": "s-1", "turn_index": 0}) as session:
        first = session.run(INC, entry="inc", kind="tool", args={"by": 2}, state={"n": 1})
        pid = session.pid
        assert first.ok, first.error
        assert first.writes == (("n", 3),) and first.state == {"n": 3}
        assert first.return_value == 2
        # The caller's state is authoritative: not the state the previous call left.
        second = session.run(INC, entry="inc", kind="tool", args={"by": 1}, state={"n": 10})
        assert second.state == {"n": 11}
        third = session.run(INC, entry="inc", kind="tool", args={"by": 1})
        assert third.state == {"n": 1}
        values = run(
            session,
            "def t():\n    return [context.session_id, context.turn_index]\n",
            context_values={"turn_index": 4},
        )
        assert values.return_value == ["s-1", 4]  # call values merged over the session's
        callback = session.run(
            "def before_model_callback(callback_context):\n"
            "    callback_context.state['calls'] = 1\n",
            entry="before_model_callback",
            kind="callback",
            state={"a": 1},
            variables_declared=["a"],
        )
        assert callback.ok and callback.undeclared == ("calls",)
        assert session.pid == pid and session.starts == 1
        assert "restricted_python" in callback.protections


def test_errors_are_reported_as_with_run_code():
    with open_session(limits=FAST) as session:
        result = run(
            session, "def helper(d):\n    return d['x']\n\ndef t():\n    return helper({})\n"
        )
        assert result.error.kind == "exception" and result.error.line == 2
        assert '"<tool:t>", line 5' in result.error.traceback
        assert run(session, "def t(:\n").error.kind == "syntax"
        assert run(session, "import os\ndef t():\n    pass\n").error.kind == "forbidden"
        assert run(session, "def u():\n    pass\n").error.kind == "entry_not_found"
        assert run(session, OK, "_t").error.kind == "invalid_request"
        assert run(session, OK, args={"x": {1, 2}}).error.kind == "invalid_request"
        big = run(session, "def t():\n    context.state['b'] = 'y' * 2_000_000\n", state={"a": 1})
        assert big.error.kind == "output_too_large" and big.state == {"a": 1}
        printed = run(session, "def t():\n    print('x' * 10**6)\n    return 1\n")
        assert printed.ok and printed.stdout_truncated
        assert run(session, OK).return_value == "ok"
        assert session.starts == 1


def test_calls_after_the_first_reuse_the_warm_session_child():
    """What makes a later call cheap (~2 ms): no new session child, no new jail, counted
    rather than timed."""
    with open_session() as session:
        assert run(session, OK).ok
        pid = session.pid
        for _ in range(20):
            assert run(session, OK).ok
        assert (session.starts, session.pid) == (1, pid)


def test_each_call_process_serves_one_call_and_is_gone_when_its_answer_arrives():
    """Between calls the session child holds exactly one call process, forked ahead for
    the next request (already dropped to its uid, its filter installed); the call takes it,
    and by the time the answer is back it is reaped and another one waits."""
    with open_session() as session:
        assert run(session, OK).ok
        seen = []
        for _ in range(5):
            _, calls = jail_processes(session.pid)
            assert len(calls) == 1 and calls[0] not in seen
            seen.append(calls[0])
            assert run(session, OK).ok
            assert gone(seen[-1])
        assert session.starts == 1


def test_no_process_until_the_first_call():
    with open_session() as session:
        assert session.pid is None and session.starts == 0


# ------------------------------------------------------------------------------ isolation

POISON = """
import decimal, json, math, string
class Box:
    pass
leftover = "from call 1"
def t():
    decimal.setcontext(decimal.Context(prec=3))
    decimal.getcontext().clear_traps()
    decimal.DefaultContext.clear_traps()
    decimal.BasicContext.clear_flags()
    for attempt in (
        lambda: setattr(json, "dumps", None),
        lambda: setattr(math, "pi", 3),
        lambda: setattr(string.Template, "delimiter", "#"),
        lambda: setattr(Box, "shared", 1),
    ):
        try:
            attempt()
        except Exception:
            pass
    context.state["items"].append("in place")  # not a write: must not reach the caller
    context.state["leak"] = 1
    print("call 1 output")
    return decimal.getcontext().prec
"""

CHECK = """
import decimal, json, math, string
def t():
    try:
        leftover
        seen = "global survived"
    except NameError:
        seen = "no global"
    try:
        decimal.Decimal(1) / decimal.Decimal(0)
        traps = "no traps"
    except decimal.DivisionByZero:
        traps = "traps"
    return {
        "third": str(decimal.Decimal(1) / decimal.Decimal(3)),
        "traps": traps,
        "new_context_traps": len([t for t, on in decimal.Context().traps.items() if on]),
        "default": str(decimal.DefaultContext),
        "dumps": json.dumps([1]),
        "pi": math.pi,
        "delimiter": string.Template.delimiter,
        "seen": seen,
        "state": context.state.to_dict(),
    }
"""


def _check_pristine(result):
    assert result.ok, result.error
    value = result.return_value
    assert value["third"] == "0.3333333333333333333333333333"
    assert value["traps"] == "traps" and value["new_context_traps"] == 3
    assert "traps=[InvalidOperation, DivisionByZero, Overflow]" in value["default"]
    assert value["dumps"] == "[1]" and value["pi"] == pytest.approx(3.14159265)
    assert value["delimiter"] == "$" and value["seen"] == "no global"
    assert value["state"] == {"items": []}
    assert result.stdout == ""


def test_a_call_cannot_poison_a_later_call():
    with open_session() as session:
        poison = run(session, POISON, state={"items": []})
        assert poison.ok, poison.error
        assert poison.return_value == 3  # the poisoning did happen inside call 1
        assert poison.state == {"items": ["in place"], "leak": 1}
        _check_pristine(run(session, CHECK, state={"items": []}))
        assert session.starts == 1


def test_run_many_threads_state_but_not_module_state():
    results = run_many(
        [SandboxCall(textwrap.dedent(POISON), "t"), SandboxCall(textwrap.dedent(CHECK), "t")],
        state={"items": []},
    )
    assert results[0].ok and results[0].return_value == 3
    value = results[1].return_value
    assert value["third"] == "0.3333333333333333333333333333" and value["traps"] == "traps"
    assert value["state"] == {"items": ["in place"], "leak": 1}  # run_many threads the state


# ----------------------------------------------------------------------- failures mid-way


@pytest.mark.parametrize(
    "bad, kind",
    [
        ("def t():\n    while True:\n        pass\n", "timeout"),  # the timer stops it
        (  # swallows the timer's exception: the session child kills the call process
            "def t():\n    while True:\n        try:\n            while True:\n"
            "                pass\n        except BaseException:\n            pass\n",
            "timeout",
        ),
        ("def t():\n    data = 'x' * 10**10\n    return len(data)\n", "memory"),
        ("def t():\n    xs = []\n    while True:\n        xs.append('x' * 10**6)\n", "memory"),
    ],
    ids=["timeout", "swallowed-timeout", "memory-bomb", "memory-growth"],
)
def test_failing_call_2_of_4_leaves_calls_3_and_4_working(bad, kind):
    with open_session(limits=FAST) as session:
        assert session.run(INC, entry="inc", kind="tool", args={"by": 1}).ok
        pid = session.pid
        idle, before = jail_processes(pid)  # the jail's processes between calls
        failed = run(session, bad, state={"n": 5})
        assert not failed.ok and failed.error.kind in (kind, "timeout"), failed.error
        assert failed.state == {"n": 5}
        third = session.run(INC, entry="inc", kind="tool", args={"by": 1}, state={"n": 5})
        fourth = session.run(INC, entry="inc", kind="tool", args={"by": 2}, state=third.state)
        assert third.ok and fourth.ok and fourth.state == {"n": 8}
        # The call process took the blow; the session child is the same, and it reaped it:
        # only the call process forked ahead for the next request is left, a new one.
        assert session.pid == pid and session.starts == 1
        stays, calls = jail_processes(pid)
        assert stays == idle and len(calls) == 1 and calls != before
        assert all(gone(p) for p in before)


def test_cpu_limit_is_per_call():
    # The wall limit far above the CPU one: a loaded machine gives 1 s of CPU late, not never.
    limits = Limits(wall_time_s=30, cpu_time_s=1)
    with open_session(limits=limits) as session:
        result = run(session, "def t():\n    while True: pass\n")
        assert result.error.kind == "timeout" and "CPU" in result.error.message
        assert result.error.line == 2
        assert run(session, OK).ok


def test_stuck_session_child_is_killed_and_replaced():
    with open_session(limits=FAST) as session:
        assert run(session, OK).ok
        pid = session.pid
        for process in [pid, *descendants(pid)]:  # a session child that stopped answering
            os.kill(process, signal.SIGSTOP)
        result = run(session, OK)
        # The host's own deadline (the child never answered), not the child's kill.
        assert (result.error.kind, result.error.message) == ("timeout", "time limit exceeded")
        assert gone(pid)
        again = run(session, OK)
        assert again.ok and session.pid not in (None, pid) and session.starts == 2


def test_dead_session_child_is_replaced_transparently():
    with open_session() as session:
        assert run(session, OK).ok
        pid = session.pid
        os.kill(pid, signal.SIGKILL)
        session._proc.wait(timeout=10)  # dead before the next call (no sleep)
        assert run(session, OK).ok  # died between calls: not this call's fault
        assert session.starts == 2 and gone(pid)


FAKE_CHILD = """
import json, os, signal, sys
def read_frame():
    header = json.loads(sys.stdin.buffer.readline())
    return sys.stdin.buffer.read(header["size"])
read_frame()
sys.stdout.buffer.write(b'{"size": 2}\\n{}')
sys.stdout.flush()
read_frame()
sys.stderr.write("about to crash")
sys.stderr.flush()
os.kill(os.getpid(), signal.SIGSEGV)
"""


def test_session_child_dying_mid_call_is_reported(tmp_path):
    script = tmp_path / "dies.py"
    script.write_text(FAKE_CHILD)
    with sandbox_host.SandboxSession(limits=FAST, script=script) as session:
        result = run(session, OK)
        assert result.error is not None and result.error.kind == "internal", result.error
        assert "SIGSEGV" in result.error.message
        assert session.pid is None
        assert run(session, OK).error.kind == "internal"  # a new (fake) child each time
        assert session.starts == 2


@pytest.mark.parametrize(
    "answer",
    [
        "sys.stdout.buffer.write(b'x' * 10**8)",  # no header, endless
        "sys.stdout.buffer.write(b'{\"size\": 1000000000}\\n' + b'x' * 10**7)",  # too large
        'sys.stdout.buffer.write(b\'{"size": 2}\\n{}{"size": 2}\\n{}\')',  # out of turn
        "sys.stdout.buffer.write(b'[1, 2]\\n')",  # malformed header
    ],
    ids=["flood", "huge-size", "extra-frame", "bad-header"],
)
def test_host_reads_are_bounded(tmp_path, answer):
    script = tmp_path / "bad.py"
    script.write_text(f"import sys\n{answer}\nsys.stdout.flush()\nsys.stdin.read()\n")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with sandbox_host.SandboxSession(limits=FAST, script=script) as session:
        result = run(session, OK)
        pid = session.pid
    assert result.error is not None and result.error.kind == "internal", result.error
    assert pid is None  # killed at once
    growth_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert growth_kib < 50 * 1024


# ------------------------------------------------------------------------------- closing


def test_closing_the_session_kills_and_reaps_the_child():
    with open_session() as session:
        assert run(session, OK).ok
        pid = session.pid
        assert pid is not None and not gone(pid)
        workdir = os.readlink(f"/proc/{pid}/cwd") if sys.platform == "linux" else None
    assert gone(pid)  # not even a zombie
    if workdir is not None:
        assert "statecraft-sandbox-" in workdir and not Path(workdir).exists()
    refused = run(session, OK)
    assert refused.error.kind == "invalid_request" and gone(pid)
    session.close()  # idempotent


def test_a_forgotten_session_is_killed_when_collected():
    session = open_session()
    assert run(session, OK).ok
    pid = session.pid
    del session
    gc.collect()
    assert gone(pid)


# ------------------------------------------------------------------------ escape attempts


@pytest.mark.parametrize(
    "body",
    [
        "import os",
        "import socket",
        "__import__('os')",
        "open('/etc/passwd').read()",
        "().__class__.__subclasses__()",
        "getattr(t, '__globals__')",
        "'{0.__class__}'.format(1)",
        "(x for x in []).gi_frame.f_back.f_globals",
        "exec('import os')",
        "getattr(json, 'decoder')",
        "string.Formatter().format('{0.__class__}', 1)",
        "context.state = {}",
        "json.dumps = None",
    ],
)
def test_escape_attempts_are_refused_in_a_session(shared, body):
    code = f"import json, re, statistics, string\ndef t():\n    {body}\n    return 'escaped'\n"
    result = run(shared, code)
    assert not result.ok, (body, result)
    assert result.error.kind in ("forbidden", "exception"), (body, result.error)
    assert run(shared, OK).ok
    assert shared.starts == 1


def test_call_process_cannot_fork_or_touch_the_host(shared):
    for body in ("import os\n    os.fork()", "import posix\n    posix.fork()"):
        assert run(shared, f"def t():\n    {body}\n").error.kind == "forbidden"
    result = run(shared, OK)
    if os.geteuid() == 0 and sys.platform == "linux":
        assert {
            "pid_namespace",
            "network_namespace",
            "readonly_minimal_root",
            "unique_uid",
            "seccomp",
            "rlimit_nproc",
        } <= set(result.protections)


class _Recording(sandbox_host.SandboxSession):
    """A real session that records the size of each request frame it sends."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.sent: list[int] = []

    def _roundtrip(self, request, deadline):
        self.sent.append(len(request))
        return super()._roundtrip(request, deadline)


CALLS_A_TOOL = "def t():\n    return tools.double({'n': 21}).json()['result']\n"
BIG_TOOLS = {
    "double": "def double(n):\n    return {'twice': n * 2}\n",
    "padding": "def padding():\n    return " + repr("x" * 50_000) + "\n",
}


def test_the_tools_go_once_per_session_child_then_by_reference():
    with _Recording() as session:
        first = run(session, CALLS_A_TOOL, tools=BIG_TOOLS)
        second = run(session, CALLS_A_TOOL, tools=BIG_TOOLS)
        # The hello frame, then the calls: only the first call carries the 50 KB of tools.
        assert (first.return_value, second.return_value) == ({"twice": 42}, {"twice": 42})
        assert session.sent[1] > 50_000 > session.sent[2]


def test_a_replaced_session_child_gets_the_tools_again():
    with open_session() as session:
        assert run(session, CALLS_A_TOOL, tools=BIG_TOOLS).return_value == {"twice": 42}
        os.kill(session.pid, signal.SIGKILL)
        session._proc.wait(timeout=10)
        again = run(session, CALLS_A_TOOL, tools=BIG_TOOLS)
        assert again.error is None and again.return_value == {"twice": 42}


def test_code_compiled_once_per_session_still_gets_the_language_layer_checks():
    refused = "def t():\n    return ().__class__.__base__\n"
    with open_session() as session:
        results = [run(session, code) for code in (OK, refused, OK, refused)]
    assert [r.error.kind if r.error else None for r in results] == [
        None,
        "forbidden",
        None,
        "forbidden",
    ]


def test_a_session_whose_child_was_reaped_never_signals_that_pid_again():
    """A reaped child's pid is free: the kernel may give it to any process at once (pid_max
    is 32,768 here). Closing the session must not kill that process's group — it once
    killed a test's worker process in the parallel suite."""
    import subprocess

    echo = "import sys\nfor line in sys.stdin:\n    print(line, end='', flush=True)\n"
    reused = subprocess.Popen(  # the process that got the freed pid: it answers while alive
        [sys.executable, "-c", echo],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )

    def answers() -> bool:
        try:
            reused.stdin.write("alive?\n")
            reused.stdin.flush()
        except BrokenPipeError:
            return False
        return reused.stdout.readline() == "alive?\n"

    try:
        assert answers()
        session = open_session(limits=FAST)
        assert run(session, OK).ok
        os.kill(session.pid, signal.SIGKILL)
        session._proc.wait(timeout=10)  # reaped: its pid is anybody's now...
        session._proc.pid = reused.pid  # ...and the kernel gave it to `reused`
        session.close()
        assert answers()  # a SIGKILL sent to it lands before it can read the question
    finally:
        reused.kill()
        reused.wait()
