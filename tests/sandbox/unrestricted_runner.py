"""Test-only session child: the real runner with the language layer taken away.

Copied next to a copy of ``agents/sandbox/runner.py`` and the modules it loads
(``oneshot.CHILD_FILES``), and started by the host in place of it
(``SandboxSession(script=...)``), it runs each call's code as plain, unrestricted CPython in
the call process, after the call process has dropped everything the OS layer takes away.
So the escape tests start where an attacker who defeated RestrictedPython would stand.
Never imported by production code.
"""

import sys

sys.path.insert(0, "/sandbox")  # inside the jail this script and runner.py sit in /sandbox
sys.path.insert(0, sys.argv[0].rsplit("/", 1)[0])  # outside it (the home-made fallback)

# A stronger attacker than any real one: everything useful for an escape is already
# imported (a call process running as root's sandbox uid could not read it from disk).
import ctypes  # noqa: F401
import errno  # noqa: F401
import fcntl  # noqa: F401
import resource  # noqa: F401
import socket  # noqa: F401
import threading  # noqa: F401

import runner


def run_unrestricted(sandbox, call, state_data, declared, context_values, limits):
    result = {
        "ok": False,
        "return_value": None,
        "error": None,
        "writes": [],
        "removed": [],
        "stdout": "",
        "stdout_truncated": False,
        "undeclared": [],
        "duration_ms": 0,
    }
    try:
        namespace = {"__name__": "escape"}
        exec(compile(call["code"], "<escape>", "exec"), namespace)  # no RestrictedPython
        result["return_value"] = namespace[call["entry"]](**(call.get("args") or {}))
        result["ok"] = True
    except BaseException as exc:  # report it, as the real runner does
        result["error"] = {
            "kind": "exception",
            "message": f"{type(exc).__name__}: {exc}",
            "line": None,
            "traceback": "",
        }
    return result


runner.run_call = run_unrestricted
runner.main()
