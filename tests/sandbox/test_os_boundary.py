"""The OS layer holds on its own: unrestricted Python inside the call process stays jailed.

Each test starts the session child with ``unrestricted_runner.py`` instead of the real
runner, so the code below runs as plain CPython (no RestrictedPython) after the call
process dropped what the OS layer takes away.  Tested with the host as root (this machine,
CI) and, in a subprocess, as a throwaway ordinary user.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from agents.sandbox import Limits, jail, oneshot
from agents.sandbox import host as sandbox_host
from tests.sandbox.escape_probe import KILL_ALL, PROBE, RUNAWAY, SPIN, assert_contained

HERE = Path(__file__).parent
REPO = HERE.parent.parent
FAST = Limits(wall_time_s=1.0, cpu_time_s=1)
HOST_PATHS = [
    str(REPO / "db.sqlite3"),
    str(REPO / "designer" / "settings.py"),
    str(REPO / "manage.py"),
    "/etc/hostname",
]

pytestmark = pytest.mark.skipif(
    jail.bwrap_works() is not None, reason=f"no OS jail here: {jail.bwrap_works()}"
)


ALIVE = "def t():\n    return 'alive'\n"


def unrestricted_dir() -> Path:
    """A world-readable directory with the real runner and the test-only runner."""
    directory = Path(tempfile.mkdtemp(prefix="statecraft-escape-"))
    directory.chmod(0o755)
    for name in oneshot.CHILD_FILES:  # the runner and the modules it loads beside it
        shutil.copy(sandbox_host.RUNNER.with_name(name), directory / name)
    shutil.copy(HERE / "unrestricted_runner.py", directory / "unrestricted_runner.py")
    return directory


@pytest.fixture
def unrestricted():
    directory = unrestricted_dir()
    yield directory / "unrestricted_runner.py"
    shutil.rmtree(directory, ignore_errors=True)


def run(session, code: str, entry: str, **args):
    return session.run(code, entry=entry, kind="tool", args=args)


def test_unrestricted_python_cannot_leave_the_jail_as_root(unrestricted):
    sibling = subprocess.Popen(["sleep", "60"])  # stands for a gunicorn worker
    other = sandbox_host.SandboxSession(limits=FAST)  # another user's simulation
    try:
        assert run(other, "def t():\n    return 1\n", "t").ok
        host_pids = [os.getpid(), sibling.pid, other.pid]
        with sandbox_host.SandboxSession(limits=FAST, script=unrestricted) as session:
            result = run(session, PROBE, "probe", host_pids=host_pids, host_paths=HOST_PATHS)
            assert result.ok, result.error
            report = result.return_value
            assert_contained(report, host_pids, HOST_PATHS, os.path.realpath(sys.executable))
            if os.geteuid() == 0:
                # A uid of its own, no account, no file: not root, not nobody.
                assert report["uid"] >= jail.SANDBOX_UID_BASE, report
            assert report["pid"] < 10, report  # its own PID namespace
            assert {"pid_namespace", "seccomp", "readonly_minimal_root"} <= set(result.protections)
            # kill(-1) reaches the jail at most; the next call is served.
            run(session, KILL_ALL, "kill_all")
            assert run(session, ALIVE, "t").return_value == "alive"
        # The server, its sibling and another user's simulation survived.
        assert sibling.poll() is None
        assert run(other, "def t():\n    return 2\n", "t").return_value == 2
        assert other.starts == 1
    finally:
        sibling.kill()
        sibling.wait()
        other.close()


@pytest.mark.parametrize("entry, code", [("runaway", RUNAWAY), ("spin", SPIN)])
def test_unrestricted_code_cannot_outlive_its_time(unrestricted, entry, code):
    with sandbox_host.SandboxSession(limits=FAST, script=unrestricted) as session:
        result = run(session, code, entry)
        assert result.error is not None and result.error.kind in ("timeout", "memory")
        assert run(session, ALIVE, "t").return_value == "alive"


ORDINARY_USER_HOST = r"""
import json, subprocess, sys
sys.path.insert(0, {repo!r})
from agents.sandbox import Limits, jail
from agents.sandbox import host
sys.path.insert(0, {tests!r})
from escape_probe import KILL_ALL, PROBE

sibling = subprocess.Popen(["sleep", "60"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
with host.SandboxSession(limits=Limits(wall_time_s=2.0), script={script!r}) as session:
    result = session.run(PROBE, entry="probe", kind="tool",
                         args={{"host_pids": [sibling.pid], "host_paths": {paths!r}}})
    session.run(KILL_ALL, entry="kill_all", kind="tool")
    again = session.run("def t():\n    return 'alive'\n", entry="t", kind="tool")
print(json.dumps({{
    "ok": result.ok, "error": str(result.error), "report": result.return_value,
    "protections": result.protections, "again": again.return_value,
    "sibling_alive": sibling.poll() is None, "bwrap": jail.bwrap_works(),
}}))
sibling.kill()
"""


def test_unrestricted_python_cannot_leave_the_jail_as_an_ordinary_user():
    if os.geteuid() != 0 or shutil.which("setpriv") is None or shutil.which("unshare") is None:
        pytest.skip("needs root to start a throwaway user (setpriv, unshare)")
    directory = unrestricted_dir()
    try:
        script = ORDINARY_USER_HOST.format(
            repo=str(REPO),
            tests=str(HERE),
            script=str(directory / "unrestricted_runner.py"),
            paths=HOST_PATHS,
        )
        (directory / "host.py").write_text(script)
        uid = 1_800_000_000 + os.getpid() % 1000  # nobody else's uid
        python = sys.executable  # the virtualenv's, which finds RestrictedPython
        prefix = os.path.realpath(sys.base_prefix)
        # The interpreter may live in root's 0700 home (pyenv): show the user that one
        # directory through a private mount namespace, nothing else of /root.
        view = directory / "root-view"
        shell = (
            "set -e; "
            f'if [ -d /root ] && [ "${{1#/root/}}" != "$1" ]; then '
            f"mkdir -p {view}{os.path.dirname(prefix)[len('/root') :]} {view}{prefix[len('/root') :]}; "
            f"mount --bind {prefix} {view}{prefix[len('/root') :]}; "
            f"mount --rbind {view} /root; fi; "
            f"exec setpriv --reuid {uid} --regid {uid} --clear-groups --inh-caps=-all "
            f"env -i PATH=/usr/bin:/bin HOME=/nonexistent {python} -I {directory / 'host.py'}"
        )
        done = subprocess.run(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", shell, "sh", prefix],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        outcome = json.loads(done.stdout.strip().splitlines()[-1])
        assert outcome["bwrap"] is None, outcome["bwrap"]
        assert outcome["ok"], outcome["error"]
        report = outcome["report"]
        assert_contained(report, [], HOST_PATHS, os.path.realpath(sys.executable))
        sibling_key = next(k for k in report if k.startswith("signal_"))
        assert report[sibling_key].startswith("blocked: ProcessLookupError"), report
        assert report["uid"] == 65534, report  # mapped through a user namespace
        assert report["pid"] < 10, report
        assert outcome["sibling_alive"], "kill(-1) reached a process of the server's user"
        assert outcome["again"] == "alive"
        assert {"pid_namespace", "unique_uid", "seccomp"} <= set(outcome["protections"])
    finally:
        subprocess.run(["rm", "-rf", str(directory)], check=False)


# Planted by one call (its arguments, its answer, its module state) and
# looked for by the next with unrestricted Python: every object the call process can reach
# (the garbage collector's containers and what they hold, and every frame up its stack).
PLANT = """
import builtins, json
def plant(secret):
    builtins.planted = secret
    json.planted = secret
    return {"echo": secret, "again": [secret] * 3}
"""

SEARCH = """
import builtins, gc, json, sys
def search(parts):
    marker = "".join(parts)
    marks = (marker, marker.encode())
    def holds(value):
        if value is marker or value is marks[1]:
            return False
        if isinstance(value, str):
            return marker in value
        if isinstance(value, (bytes, bytearray, memoryview)):
            return marks[1] in bytes(value)
        return False
    found = []
    for obj in gc.get_objects():
        for ref in gc.get_referents(obj):
            if holds(ref):
                found.append(type(obj).__name__)
    frame = sys._getframe()
    while frame is not None:
        for name, value in list(frame.f_locals.items()):
            if holds(value):
                found.append(f"{frame.f_code.co_name}.{name}")
        frame = frame.f_back
    for module in (builtins, json):
        if hasattr(module, "planted"):
            found.append(module.__name__)
    return found
"""


def test_the_next_call_process_holds_nothing_of_the_previous_call(unrestricted):
    """Each call process is forked ahead of its request from the session child, between
    calls: nothing of the call before (its request, its answer) is there to be found."""
    with sandbox_host.SandboxSession(limits=FAST, script=unrestricted) as session:
        for _ in range(3):  # the first call process was forked at the start, the next ones after
            planted = run(session, PLANT, "plant", secret="MARKER-" + "7f3a9c")
            assert planted.ok and planted.return_value["echo"] == "MARKER-7f3a9c"
            found = run(session, SEARCH, "search", parts=["MARKER-", "7f3a9c"])
            assert found.ok, found.error
            assert found.return_value == []
        assert session.starts == 1
