"""The sandbox for tool and callback code: happy paths and real escape attempts.

Every escape attempt must come back as an error result; the test process must survive.
Run alone with: .venv/bin/python -m pytest tests/sandbox -q -p no:django
"""

from __future__ import annotations

import json
import os
import resource
import sys
import textwrap
from pathlib import Path

import pytest

from agents.sandbox import Limits, SandboxCall, oneshot, run_code, run_many
from agents.sandbox import host as sandbox_host

FAST = Limits(wall_time_s=0.5, cpu_time_s=1)


def tool(code: str, name: str = "t", **kwargs):
    kwargs.setdefault("kind", "tool")
    return run_code(textwrap.dedent(code), entry=name, **kwargs)


def assert_blocked(result, *kinds: str):
    kinds = kinds or ("forbidden",)
    assert not result.ok, result
    assert result.error is not None
    assert result.error.kind in kinds, result.error


# --------------------------------------------------------------------------- happy paths


def test_tool_sets_state_and_returns_value():
    result = tool(
        '''
        def set_balance(amount):
            """Sets the balance."""
            context.state["current_account_balance"] = 1250
            return {"status": "ok", "amount": amount}
        ''',
        "set_balance",
        args={"amount": 3},
        state={"current_account_balance": 0},
        variables_declared=["current_account_balance"],
    )
    assert result.ok, result.error
    assert result.return_value == {"status": "ok", "amount": 3}
    assert result.writes == (("current_account_balance", 1250),)
    assert result.state == {"current_account_balance": 1250}
    assert result.undeclared == ()
    assert result.error is None
    assert "restricted_python" in result.protections


def test_context_variable_api_and_write_order():
    result = tool(
        """
        def t():
            assert context.variables is context.state
            a = context.get_variable("a")
            missing = context.get_variable("nope", "dflt")
            context.set_variable("b", a + 1)
            context.state["c"] = [1, 2]
            context.state["n"] += 5
            context.remove_variable("a")
            seen = ("a" in context.state, "b" in context.state, context.state.get("zz", 7))
            return [a, missing, seen]
        """,
        state={"a": 1, "n": 10},
        variables_declared=["a", "b", "n"],
    )
    assert result.ok, result.error
    assert result.return_value == [1, "dflt", [False, True, 7]]
    assert result.writes == (("b", 2), ("c", [1, 2]), ("n", 15), ("a", None))
    assert result.removed == ("a",)
    assert result.state == {"n": 15, "b": 2, "c": [1, 2]}
    assert result.undeclared == ("c",)


def test_allowed_imports_work():
    result = tool(
        """
        import json, math, re, datetime
        from decimal import Decimal
        def t():
            d = datetime.date(2024, 2, 29) + datetime.timedelta(days=1)
            parsed = datetime.datetime.strptime("2024-01-02", "%Y-%m-%d")
            return {
                "json": json.dumps({"a": 1}),
                "sqrt": math.sqrt(9),
                "re": re.findall(r"\\d+", "a1b22"),
                "date": d.isoformat(),
                "parsed": parsed.day,
                "dec": str(Decimal("1.10") + Decimal("2.20")),
                "fstr": f"{math.pi:.2f}",
            }
        """
    )
    assert result.ok, result.error
    assert result.return_value == {
        "json": '{"a": 1}',
        "sqrt": 3.0,
        "re": ["1", "22"],
        "date": "2024-03-01",
        "parsed": 2,
        "dec": "3.30",
        "fstr": "3.14",
    }


def test_print_output_is_captured():
    result = tool(
        """
        def t():
            print("hello", 42)
            print("second line")
        """
    )
    assert result.ok, result.error
    assert result.stdout == "hello 42\nsecond line\n"
    assert result.return_value is None


def test_classes_comprehensions_and_augmented_assignment():
    result = tool(
        """
        class Counter:
            def __init__(self):
                self.n = 0
            def bump(self, by=1):
                self.n += by
                return self
        def t(items):
            c = Counter().bump().bump(2)
            d = {}
            d["k"] = 1
            d["k"] += 1
            pairs = [(i, v) for i, v in enumerate(items)]
            a, (b, e) = 1, (2, 3)
            return [c.n, d, pairs, sorted(items), a + b + e, sum(x for x in items)]
        """,
        args={"items": [3, 1, 2]},
    )
    assert result.ok, result.error
    assert result.return_value == [3, {"k": 2}, [[0, 3], [1, 1], [2, 2]], [1, 2, 3], 6, 6]


def test_callback_gets_callback_context_and_declared_arguments():
    code = """
        def before_model_callback(callback_context, llm_request):
            callback_context.state["turns"] = callback_context.state.get("turns", 0) + 1
            context.set_variable("seen_request", llm_request)
            return None
    """
    result = run_code(
        textwrap.dedent(code),
        entry="before_model_callback",
        kind="callback",
        args={"llm_request": {"contents": []}, "unused": 1},
        state={"turns": 2},
    )
    assert result.ok, result.error
    # CX's LlmRequest, written to state as its JSON.
    assert result.writes == (("turns", 3), ("seen_request", {"contents": [], "config": {}}))


def test_callback_missing_optional_arguments_get_none():
    result = run_code(
        "def after_tool_callback(tool, args, tool_context, tool_response):\n"
        "    tool_context.state['r'] = [tool.name, tool_response]\n",
        entry="after_tool_callback",
        kind="callback",
        args={"tool": "lookup"},
    )
    assert result.ok, result.error
    assert result.writes == (("r", ["lookup", None]),)


def test_context_values_are_exposed():
    result = tool(
        "def t():\n    return [context.session_id, context.turn_index]\n",
        context_values={"session_id": "s-1", "turn_index": 3},
    )
    assert result.return_value == ["s-1", 3]


def test_run_many_threads_state_between_calls():
    inc = "def inc(by):\n    context.state['n'] = context.state.get('n', 0) + by\n    return by\n"
    bad = "def bad():\n    context.state['n'] = 100\n    raise ValueError('nope')\n"
    results = run_many(
        [
            SandboxCall(inc, "inc", "tool", {"by": 2}),
            SandboxCall(bad, "bad"),
            SandboxCall(inc, "inc", "tool", {"by": 1}),
        ],
        state={"n": 1},
    )
    assert [r.ok for r in results] == [True, False, True]
    assert results[0].state == {"n": 3}
    assert results[1].error.kind == "exception"
    assert results[1].state == {"n": 100}  # writes before the failure are kept
    assert results[2].state == {"n": 101}


# ------------------------------------------------------------------------ error reporting


def test_syntax_error_reports_its_line():
    result = tool("def t():\n    x = 1\n    return (x +\n\ny = ]\n")
    assert_blocked(result, "syntax")
    assert result.error.line == 5  # where the parser gives up: the unclosed bracket


def test_exception_reports_user_code_line():
    result = tool(
        "def helper(d):\n    return d['missing']\n\ndef t():\n    x = 1\n    return helper({})\n"
    )
    assert_blocked(result, "exception")
    assert result.error.line == 2
    assert "KeyError" in result.error.message
    assert '"<tool:t>", line 6' in result.error.traceback
    assert "runner.py" not in result.error.traceback


def test_missing_entry_function():
    result = tool("def other():\n    pass\n", "t")
    assert_blocked(result, "entry_not_found")


def test_non_json_write_and_return_are_reported():
    result = tool("def t():\n    x = 1\n    context.state['s'] = {1, 2}\n")
    assert_blocked(result, "serialization")
    assert result.error.line == 3
    result = tool("def t():\n    return {'a': len}\n")
    assert_blocked(result, "serialization")
    result = tool("def t():\n    return float('nan')\n")
    assert_blocked(result, "serialization")


def test_undeclared_args_are_a_type_error():
    result = tool("def t(a):\n    return a\n", args={"b": 1})
    assert_blocked(result, "exception")
    assert "TypeError" in result.error.message


# ------------------------------------------------------------------------ escape attempts


MISSING_OR_READ_ONLY = {
    "getattr(json, 'decoder')",
    "getattr(json, 'codecs')",
    "getattr(re, 'enum')",
    "getattr(statistics, 'random')",
    "setattr(context, 'state', 1)",
    "context.state = {}",
    "json.dumps = None",
}


@pytest.mark.parametrize(
    "body",
    [
        "import os",
        "import subprocess",
        "import socket",
        "import sys",
        "import ctypes",
        "import importlib",
        "import os.path",
        "from os import system",
        "import json.decoder",
        "__import__('os')",
        "open('/etc/passwd').read()",
        "().__class__.__subclasses__()",
        "type.__subclasses__(object)",
        "getattr((), '__class__')",
        "getattr(t, '__globals__')",
        "getattr(context, '_recorder')",
        "'{0.__class__}'.format(1)",
        "str.format('{0.__class__}', 1)",
        "'{a.__class__}'.format_map({'a': 1})",
        "f'{t.__globals__}'",
        "(x for x in []).gi_frame.f_back.f_globals",
        "getattr((x for x in []), 'gi_frame')",
        "eval('__import__(\"os\")')",
        "exec('import os')",
        "compile('__import__(\"os\")', 'x', 'eval')",
        "eval('().__class__')",
        "eval(compile('x.__class__', 'x', 'eval'), {'x': 1})",
        "globals()",
        "vars()",
        "dir()",
        "type('X', (), {})",
        "type(1).__bases__",
        "__builtins__['__import__']('os')",
        "getattr(__builtins__, '__import__')('os')",
        "context.state.__class__",
        "context.set_variable.__self__",
        "getattr(getattr(context, 'get_variable'), '__func__')",
        "getattr(context.state, '_data')",
        "getattr(json, 'decoder')",
        "getattr(json, 'codecs')",
        "getattr(re, 'enum')",
        "getattr(statistics, 'random')",
        "string.Formatter().format('{0.__class__}', 1)",
        "string.Formatter().format('{0.__globals__}', t)",
        "'{0.gi_frame}'.format((x for x in []))",
        "breakpoint()",
        "input()",
        "setattr(context, 'state', 1)",
        "context.state = {}",
        "json.dumps = None",
    ],
)
def test_escape_attempts_are_refused(body):
    code = f"import json, re, statistics, string\ndef t():\n    {body}\n    return 'escaped'\n"
    result = tool(code)
    assert not result.ok, (body, result)
    # A plain exception only where the thing simply does not exist or cannot be assigned.
    expected = "exception" if body in MISSING_OR_READ_ONLY else "forbidden"
    assert result.error.kind == expected, (body, result.error)
    if result.error.kind == "exception":
        # A plain exception is fine only when the thing simply does not exist.
        assert any(
            e in result.error.message
            for e in ("NameError", "TypeError", "AttributeError", "KeyError")
        ), (body, result.error)


def test_subclass_walk_finding_popen_is_refused():
    code = """
    def t():
        for cls in ().__class__.__bases__[0].__subclasses__():
            if cls.__name__ == "Popen":
                return cls(["id"]).communicate()
    """
    assert_blocked(tool(code))


def test_fork_attempts_are_refused():
    for body in (
        "__import__('os').fork()",
        "import os\n    os.fork()",
        "import posix\n    posix.fork()",
        "import _posixsubprocess",
        "import multiprocessing",
        "import pty",
    ):
        result = tool(f"def t():\n    {body}\n")
        assert_blocked(result)


def test_environment_is_unreachable():
    for body in (
        "import os\n    return os.environ['DJANGO_SETTINGS_MODULE']",
        "import os\n    return dict(os.environ)",
        "import sys\n    return sys.modules",
    ):
        assert_blocked(tool(f"def t():\n    {body}\n"))


def test_socket_to_postgres_is_refused():
    code = """
    def t():
        import socket
        s = socket.create_connection(("127.0.0.1", 5432), timeout=1)
        return "connected"
    """
    assert_blocked(tool(code))


def test_file_write_is_refused():
    code = "def t():\n    with open('x.txt', 'w') as f:\n        f.write('x')\n"
    result = tool(code)
    assert_blocked(result, "forbidden")
    assert "'open' is not available in the sandbox" in result.error.message


def test_caught_forbidden_import_is_still_contained():
    code = """
    def t():
        try:
            import os
        except ImportError:
            return "no os"
    """
    result = tool(code)
    assert result.ok and result.return_value == "no os"


# ------------------------------------------------------------------------------ resources


def test_infinite_loop_times_out_with_line():
    # The call's own limit counts CPU: the wall-clock backstop far above it, as a loaded
    # machine gives 1 s of CPU late, not never.
    limits = Limits(wall_time_s=30, cpu_time_s=1)
    result = tool("def t():\n    x = 0\n    while True: x += 1\n", limits=limits)
    assert_blocked(result, "timeout")
    assert result.error.line == 3 and "CPU" in result.error.message


def test_loop_that_swallows_the_timeout_is_killed_by_the_parent():
    code = """
    def t():
        while True:
            try:
                while True:
                    pass
            except BaseException:
                pass
    """
    result = tool(code, limits=FAST)
    assert_blocked(result, "timeout")
    assert "was killed" in result.error.message  # the parent's kill, not the code's own stop


@pytest.mark.parametrize("expr", ["'x' * 10**10", "[0] * 10**9", "bytearray(10**9)"])
def test_memory_bombs_are_contained(expr):
    result = tool(f"def t():\n    data = {expr}\n    return len(data)\n")
    assert_blocked(result, "memory")
    assert result.error.line == 2


def test_gradual_memory_growth_is_contained():
    code = "def t():\n    xs = []\n    while True:\n        xs.append('x' * 10**6)\n"
    result = tool(code)  # the default time limit: the memory limit is reached first
    assert_blocked(result, "memory")


def test_huge_print_is_truncated():
    result = tool("def t():\n    print('x' * 10**7)\n    return 1\n")
    assert result.ok, result.error
    assert result.stdout_truncated
    assert len(result.stdout) <= Limits().max_print_chars
    result = tool("def t():\n    for i in range(10**5):\n        print('line', i)\n")
    assert result.ok and result.stdout_truncated


def test_huge_return_value_is_output_too_large():
    result = tool("def t():\n    return 'x' * (5 * 10**6)\n")
    assert_blocked(result, "output_too_large")


def test_huge_write_is_output_too_large():
    result = tool("def t():\n    context.state['big'] = ['y' * 1000] * 5000\n", state={"a": 1})
    assert_blocked(result, "output_too_large")
    assert result.state == {"a": 1}


def test_parent_caps_what_it_reads(tmp_path):
    script = tmp_path / "flood.py"
    script.write_text("import sys\nsys.stdout.write('x' * 10**8)\n")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    outcome = oneshot.run_child(b"{}", 10, 1024 * 1024, script=script)
    assert outcome.error is not None and outcome.error.kind == "output_too_large"
    growth_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert growth_kib < 50 * 1024


def test_child_crash_is_reported(tmp_path):
    script = tmp_path / "crash.py"
    script.write_text("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    outcome = oneshot.run_child(b"{}", 10, 1024, script=script)
    assert outcome.error is not None and outcome.error.kind == "internal"


def test_code_too_long_is_refused_without_a_process():
    result = tool("x = 1\n" * 50_000)
    assert_blocked(result, "invalid_request")


def test_recursion_is_an_exception():
    result = tool("def t():\n    return t()\n")
    assert_blocked(result, "exception")
    assert "RecursionError" in result.error.message


# ------------------------------------------------------------------------------ OS level

PROBE = r"""
import json, os, socket, sys, importlib.util
spec = importlib.util.spec_from_file_location("process", PROCESS)
process = importlib.util.module_from_spec(spec)
spec.loader.exec_module(process)
env = dict(os.environ)
limits = {"cpu_time_s": 2, "memory_bytes": 256 * 2**20, "max_open_files": 16}
active = [*process.enter_jail(), *process.drop_privileges(limits, 1), "restricted_python"]
report = {"active": active, "env": env}

def attempt(name, fn):
    try:
        report[name] = "ALLOWED: " + repr(fn())
    except BaseException as exc:
        report[name] = "blocked: " + type(exc).__name__

def connect():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(1)
    s.connect(("127.0.0.1", 5432))
    return "connected"
def write(path):
    with open(path, "w") as f:
        f.write("x")
        f.flush()
    return path
attempt("connect", connect)
attempt("read_passwd", lambda: open("/etc/passwd").read(10))
attempt("write_file", lambda: write("/tmp/escape.txt"))
attempt("write_cwd", lambda: write("escape.txt"))
def fork():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid
attempt("fork", fork)
attempt("big_alloc", lambda: len(bytearray(512 * 2**20)))
sys.stdout.write(json.dumps(report))
"""


def _full_root() -> bool:
    """Root with CAP_SYS_ADMIN on Linux (the project's machines and CI)."""
    if os.geteuid() != 0 or sys.platform != "linux":
        return False
    status = Path("/proc/self/status").read_text()
    cap_eff = int(next(ln for ln in status.splitlines() if ln.startswith("CapEff")).split()[1], 16)
    return bool(cap_eff & (1 << 21))


def test_os_level_protections(tmp_path, monkeypatch):
    """The OS layer alone (no RestrictedPython) stops network, files, fork and memory."""
    monkeypatch.setenv("DJANGO_SETTINGS_MODULE", "designer.settings")
    monkeypatch.setenv("SECRET_KEY", "s3cret")
    monkeypatch.setenv("DATABASE_URL", "postgres://u:p@127.0.0.1:5432/db")
    script = tmp_path / "probe.py"
    script.write_text(
        PROBE.replace("PROCESS", repr(str(sandbox_host.RUNNER.with_name("process.py"))))
    )
    outcome = oneshot.run_child(b"", 10, 1024 * 1024, script=script)
    assert outcome.error is None, (outcome.error, outcome.stderr)
    report = json.loads(outcome.stdout)
    # Nothing of the server's: the fixed hash seed (docs/designer/replay.md) is no secret.
    assert set(report["env"]) <= {"PATH", "LC_ALL", "LC_CTYPE", "PYTHONHASHSEED"}, report["env"]
    active = set(report["active"])
    assert {"rlimit_as", "rlimit_fsize", "rlimit_cpu"} <= active
    assert report["big_alloc"].startswith("blocked"), report
    if "netns" in active:
        assert report["connect"].startswith("blocked"), report
    if "chroot" in active:
        assert report["read_passwd"].startswith("blocked"), report
    assert report["write_file"].startswith("blocked"), report
    assert report["write_cwd"].startswith("blocked"), report
    if "rlimit_nproc" in active:
        assert report["fork"].startswith("blocked"), report
    if _full_root():
        # On this project's machines (root, Linux) every layer is expected to be active.
        assert {"netns", "chroot", "uid_nobody", "rlimit_nproc"} <= active, active
    assert not Path("/tmp/escape.txt").exists()


def test_protections_are_reported():
    result = tool("def t():\n    return 1\n")
    assert result.ok
    if _full_root():
        assert {"pid_namespace", "network_namespace", "readonly_minimal_root"} <= set(
            result.protections
        )


def test_tricky_values_are_reported_not_crashing():
    result = tool("def t():\n    return 10 ** 5000\n")
    assert_blocked(result, "serialization")
    result = tool("def t():\n    return '\\ud800'\n")
    assert result.ok and result.return_value == "\ud800"
    code = """
    class Sneaky(dict):
        def items(self):
            while True:
                pass
    def t():
        d = Sneaky()
        d["a"] = 1
        context.state["x"] = d
        return d
    """
    result = tool(code, limits=FAST)
    assert result.ok, result.error
    assert result.return_value == {"a": 1} and result.writes == (("x", {"a": 1}),)


def test_user_class_setattr_and_underscore_setattr():
    code = """
    class Box:
        pass
    def t():
        b = Box()
        setattr(b, "value", 3)
        b.other = 4
        try:
            setattr(b, "__class__", dict)
        except AttributeError:
            return [b.value, b.other, "refused"]
    """
    result = tool(code)
    assert result.ok, result.error
    assert result.return_value == [3, 4, "refused"]


def test_print_order_across_functions():
    code = """
    print("module")
    def inner():
        print("inner")
    def t():
        print("a")
        inner()
        print("b", end="!")
    """
    result = tool(code)
    assert result.stdout == "module\na\ninner\nb!"


def test_state_object_cannot_be_patched():
    for body in (
        "context.state.get = len",
        "setattr(context.state, 'keys', len)",
        "context.get_variable = len",
    ):
        result = tool(f"def t():\n    {body}\n")
        assert_blocked(result, "exception")  # the object refuses: AttributeError, TypeError


def test_private_entry_names_are_refused():
    result = run_code("x = 1", entry="_getattr_", kind="tool")
    assert_blocked(result, "invalid_request")


def test_what_the_child_writes_on_stderr_cannot_forge_a_log_line(caplog):
    """Issue 22 item 17: escaped code writes on the stderr it inherits; the host quotes it."""
    from agents.sandbox import answers, host
    from agents.sandbox.code_runner import to_code_result

    forged = b"oops\n[2026-12-01 10:00:00 +0000] [1] [INFO] Booting worker\r\x1b[2Kroot signed in"
    error = answers.crash_error(1, forged)
    caplog.set_level("ERROR", logger="agents.sandbox")
    to_code_result(host.SandboxResult(ok=False, error=error))
    (record,) = caplog.records
    line = record.getMessage()
    assert "\n" not in line and "\r" not in line and "\x1b" not in line
    assert '"oops\\n[2026-12-01' in line  # shown, as one quoted string


def test_the_jails_libraries_read_from_the_elf_files_are_what_ldd_finds():
    """The session start reads the libraries from the ELF files (milliseconds) instead of
    running ldd (a loader per file): the same set, here."""
    from agents.sandbox import jail

    objects = jail._jail_objects()
    from_elf = jail._elf_libraries(objects)
    assert from_elf is not None and from_elf == jail._ldd_libraries(objects)
    assert jail._shared_libraries() == from_elf
