"""Sandbox for the untrusted Python code of tools and callbacks (SPEC §1, §4).

Usage (from the simulation)::

    from agents.sandbox import run_code

    result = run_code(code, entry="set_balance", kind="tool", args={"amount": 3},
                      state={"current_account_balance": 0},
                      variables_declared=["current_account_balance"])
    result.ok, result.return_value, result.writes, result.error

    # Many calls (a whole simulation): one warm session, ~2 ms per call after the first.
    from agents.sandbox import open_session

    with open_session(context_values={"session_id": "s-1"}) as session:
        for call in calls:
            result = session.run(call.code, entry=call.entry, kind=call.kind,
                                 args=call.args, state=current_state)

Calling convention
------------------
* A **tool**'s code defines a function whose name is the tool name (``entry``); it is
  called with the tool arguments as keyword arguments (``**args``).  If it declares a
  parameter ``tool_context`` it receives the context too (as in ADK).
* A **callback**'s code defines a function named after its kind, as in CX Agent Studio:
  ``before_agent_callback``, ``after_agent_callback``, ``before_model_callback``,
  ``after_model_callback``, ``before_tool_callback``, ``after_tool_callback`` (``entry``).
  It is called with the keyword arguments it declares: ``callback_context`` (the context)
  and any of ``args`` (``llm_request``, ``llm_response``, ``tool``, ``args``,
  ``tool_response``...); a declared parameter that is not supplied gets ``None``.
* In both, the global ``context`` is available: ``context.state[name]`` read / write /
  ``del`` / ``in`` / ``.get(name, default)``; ``context.variables`` is the same object;
  ``context.get_variable(name, default=None)``, ``context.set_variable(name, value)``,
  ``context.remove_variable(name)``.  Extra read-only attributes (``session_id``...) come
  from ``context_values``.  Every write is recorded in order; values must be JSON
  (checked at the write, so the error points at the line).  Changing a stored list or
  dict in place without assigning it again is not a write (as in ADK).
* Importable: ``json``, ``math``, ``re``, ``datetime``, ``decimal``, ``statistics``,
  ``string``, ``typing``, ``hashlib``, ``hmac``, ``base64``, ``uuid``, ``random``,
  ``itertools``, ``functools``, ``collections``, ``dataclasses``, ``enum``, ``time``,
  ``copy``, ``ast``, ``operator``, ``logging`` (records go to the printed output); each a
  read-only copy of its public names without submodules (see ``runner.MODULE_EXCLUSIONS``).
  ``str.format`` and ``string.Formatter`` go through a formatter whose fields pass the
  attribute guard.  CX's globals (``LlmRequest``, ``LlmResponse``, ``Content``, ``Part``...,
  ``tools.<name>(args)``) and callback signatures are provided (``cx_objects.py``).
  ``context_values["events"]`` (``[{"author", "content"}]``) becomes CX's
  ``callback_context.events`` (``Event`` objects), ``user_content`` and
  ``get_last_user_input()``/``get_last_agent_output()``; each ``tools.<name>(...)`` call is
  reported in ``SandboxResult.tool_calls`` (name, returned), and a failure inside the
  called tool names that tool and its line.

Security model: the OS is the boundary, the language filter is defence in depth
---------------------------------------------------------------------------------
1. OS level (``jail.py``): the session child is started by bubblewrap in new PID, network,
   IPC, UTS, cgroup and mount namespaces, on a minimal read-only root (interpreter, its
   libraries, the standard library, RestrictedPython, the runner), under a seccomp filter
   (no ptrace, mount, kexec, keyctl, bpf, perf, new namespaces...).  Each call process
   drops to a uid of its own (root server) or runs as ``nobody`` mapped through a user
   namespace (ordinary user), sets its rlimits and installs a stricter filter (no socket,
   no fork/exec, no setuid, no file changes).  Without bubblewrap the home-made layer
   below is used and the missing protections are reported (Django check
   ``statecraft.W001``; ``SANDBOX_REQUIRED_PROTECTIONS`` refuses to run code without them).
2. Process level: a separate ``python -I -S -B runner.py`` process, the *session child*,
   with an environment holding only ``PATH``/``LC_ALL``, no inherited file descriptors,
   its own session/process group (killed as a group).  It never runs user code: for each
   call it forks a *call process*, so every call starts from the same pristine image and
   nothing a call does can reach a later call.  The call process is forked ahead of its
   request (while the call before runs, when the session child holds no request or
   answer), drops its privileges, installs its filter, then reads the request from the host
   itself; it serves one call and is reaped before that call's answer goes back.  The host
   enforces a hard deadline, caps what it reads (length-prefixed frames) and trusts
   nothing in the answer (NaN, depth, shapes are an ``internal`` error).
3. Language level (RestrictedPython, in the call process): no dunder names or attributes
   (but ``__name__``), ``_private`` ones only on the code's own objects, no frames, code
   objects, tracebacks or modules reached as attributes, no ``open``/``exec``/``globals``,
   ``eval``/``compile`` only of RestrictedPython-compiled expressions, an import allow-list.
   Every check takes ``type(x) is str`` and the base methods: a ``str`` subclass cannot
   answer for itself.
   Home-made OS fallback (no bubblewrap): ``netns`` and ``chroot`` for the session, then
   ``uid_nobody`` and the rlimits in each call process.

Limits (:class:`Limits`), all per call: CPU 2 s (a CPU timer, ``ITIMER_PROF``, in the
call process raises at the user's line; ``RLIMIT_CPU``, counted from zero in each call
process, rounded up, + 1 s, if the code swallows it), wall clock 5 s as a backstop for
code that waits (the session child kills the call process at the limit + 0.5 s, and the
host kills the whole session child at the limit + 1.5 s if no answer comes, then starts a
new one at the next call; the simulation reports such a kill as a time stop, never as the
code's failure, since a loaded machine can reach it), address space 256 MB, answer
1 MB (``output_too_large``), printed text 64 K characters (then ``stdout_truncated``).

Cost: starting a session child takes ~40 ms (Python + RestrictedPython); each call in a
session then takes ~2 ms (fork, compile, run, answer).  :func:`run_code` is a one-call
session; :func:`run_many` runs several calls in one session, threading the state.

Error kinds: see :data:`agents.sandbox.limits.ErrorKind`.

Modules.  Host side (imported by the server): ``host`` (sessions: start, feed, bound, restart
the session child), ``limits`` (``Limits``, the call and result types, the checks before any
process starts), ``answers`` (the child's answer read as untrusted), ``oneshot`` (starting
and killing children, the one-shot run the tests probe the OS layer with), ``jail``
(bubblewrap, the minimal root, the seccomp filters), ``code_runner`` (the simulation's
bounded, memoised runner).  Session child (run as ``runner.py``, see its docstring):
``runner``, ``protocol``, ``process``, ``policy``, ``guards``, ``call_context``, ``clock``,
``cx_objects``; ``protocol`` and ``clock`` are read by both sides.
"""

from agents.sandbox.host import (
    Limits,
    SandboxCall,
    SandboxError,
    SandboxResult,
    SandboxSession,
    open_session,
    run_code,
    run_many,
)

__all__ = [
    "Limits",
    "SandboxCall",
    "SandboxError",
    "SandboxResult",
    "SandboxSession",
    "open_session",
    "run_code",
    "run_many",
]
