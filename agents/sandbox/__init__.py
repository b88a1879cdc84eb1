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
  ``string`` (their ``__all__``, without submodules; nothing is pre-imported).
  ``random`` is left out on purpose: a simulation must be repeatable.  ``str.format`` is
  refused (attribute walking through format strings); f-strings and ``%`` work.

Security model (defence in depth)
---------------------------------
1. Language level (RestrictedPython, in the child): no names or attributes starting with
   ``_``, no inspect attributes (``gi_frame``, ``f_globals``...), no attribute whose value
   is a module/frame/code/traceback, no ``str.format``, no ``open``/``eval``/``exec``/
   ``globals``/``type``/``vars``, an import allow-list.
2. Process level: a separate ``python -I -S -B agents/sandbox/runner.py`` process, the
   *session child* (run as a script by path, not ``-m``: with ``-I`` neither cwd nor
   PYTHONPATH is on sys.path, and ``-S`` keeps site-packages and its ``.pth`` hooks out; the
   child appends only the directory holding RestrictedPython) with an environment holding
   only ``PATH`` (no ``DJANGO_*``, ``DATABASE_URL``, ``SECRET_KEY``), no inherited file
   descriptors, its own session/process group (killed as a group), cwd = a fresh empty
   temp directory.  It never runs user code: for each call it forks a *call process*, so
   every call starts from the same pristine image and nothing a call does (module state
   such as ``decimal.setcontext``, leftovers of any kind) can reach a later call.  The call
   process cannot read the next requests nor write to the host (its stdin is closed and
   its stdout is a pipe to the session child).  The host enforces a hard deadline and a
   cap on what it reads (length-prefixed frames).
3. OS level, each applied when permitted and reported in ``result.protections``:
   ``netns`` (new network namespace: no interface up, so no connection even to
   localhost) and ``chroot`` (into the empty temp dir: no file system at all), both for
   the whole session; then, in each call process, ``uid_nobody`` (drops root),
   ``rlimit_cpu``, ``rlimit_as`` (memory), ``rlimit_fsize`` (=0: no file writes),
   ``rlimit_nofile``, ``rlimit_core``, ``rlimit_nproc`` (=0: no fork; only reported when
   not root: root ignores it).

Limits (:class:`Limits`), all per call: wall clock 2 s (a timer in the call process
raises at the user's line; the session child kills the call process at the limit + 0.5 s
if the code swallows it, and the host kills the whole session child at the limit + 1.5 s
if no answer comes, then starts a new one at the next call), CPU 2 s (``RLIMIT_CPU``,
counted from zero in each call process, rounded up, + 1 s), address space 256 MB, answer
1 MB (``output_too_large``), printed text 64 K characters (then ``stdout_truncated``).

Cost: starting a session child takes ~40 ms (Python + RestrictedPython); each call in a
session then takes ~2 ms (fork, compile, run, answer).  :func:`run_code` is a one-call
session; :func:`run_many` runs several calls in one session, threading the state.

Error kinds: see :data:`agents.sandbox.host.ErrorKind`.
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
