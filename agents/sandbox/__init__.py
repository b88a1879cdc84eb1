"""Sandbox for the untrusted Python code of tools and callbacks (SPEC §1, §4).

Usage (from the simulation)::

    from agents.sandbox import run_code

    result = run_code(code, entry="set_balance", kind="tool", args={"amount": 3},
                      state={"current_account_balance": 0},
                      variables_declared=["current_account_balance"])
    result.ok, result.return_value, result.writes, result.error

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
2. Process level: a separate ``python -I -S -B agents/sandbox/runner.py`` process (run as a
   script by path, not ``-m``: with ``-I`` neither cwd nor PYTHONPATH is on sys.path, and
   ``-S`` keeps site-packages and its ``.pth`` hooks out; the child appends only the
   directory holding RestrictedPython) with an environment holding only
   ``PATH`` (no ``DJANGO_*``, ``DATABASE_URL``, ``SECRET_KEY``), no inherited file
   descriptors, its own session/process group (killed as a group), cwd = a fresh empty
   temp directory.  The parent enforces a hard deadline and a cap on what it reads.
3. OS level, each applied when permitted and reported in ``result.protections``:
   ``netns`` (new network namespace: no interface up, so no connection even to
   localhost), ``chroot`` (into the empty temp dir: no file system at all),
   ``uid_nobody`` (drops root), ``rlimit_cpu``, ``rlimit_as`` (memory),
   ``rlimit_fsize`` (=0: no file writes), ``rlimit_nofile``, ``rlimit_core``,
   ``rlimit_nproc`` (=0, only reported when not root: root ignores it).

Limits (:class:`Limits`): wall clock 2 s per call (a timer in the child raises at the
user's line; the parent kills the process group at the limit + 1 s if the code swallows
it), CPU 2 s, address space 256 MB, answer 1 MB (``output_too_large``), printed text 64 K
characters (then ``stdout_truncated``).

Warm path: :func:`run_many` runs several calls in one child, threading the state (about
1-2 ms per call instead of ~35-55 ms for a process per call).

Error kinds: see :data:`agents.sandbox.host.ErrorKind`.
"""

from agents.sandbox.host import (
    Limits,
    SandboxCall,
    SandboxError,
    SandboxResult,
    run_code,
    run_many,
)

__all__ = ["Limits", "SandboxCall", "SandboxError", "SandboxResult", "run_code", "run_many"]
