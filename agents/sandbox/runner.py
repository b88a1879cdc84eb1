"""Child-process side of the sandbox: runs untrusted tool and callback code.

This file is executed as a *script* by :mod:`agents.sandbox.host`::

    python -P -s -S -B /path/to/runner.py

with an environment of its own (``oneshot.CHILD_ENV``: ``PATH``, ``LC_ALL`` and a fixed
``PYTHONHASHSEED``, so sets of text iterate alike in every session child). ``-P`` and
``-s`` keep the script's directory and the user site off ``sys.path``, ``-S`` skips
``site`` (no ``.pth`` hooks, no site-packages), ``-B`` writes no byte code.  The parent passes
the directory that holds ``RestrictedPython`` in its first frame and the child appends that
single directory to ``sys.path``.  Nothing here imports Django or any other part of the project.

Protocol (a *session*): frames in both directions, each a one-line JSON header
``{"size": n, ...}`` then exactly *n* bytes of JSON body.

1. host -> child, once: ``{"rp_path": "...", "limits": {...}}``; the child imports everything
   the user code may need (nothing can be imported from disk later), enters new
   network/IPC/UTS namespaces and ``chroot``s into the empty working directory, then answers
   ``{"protections": [...]}``.  This *session child* never runs user code.
2. host -> child, per call: ``{"code", "entry", "kind", "args", "state", "declared",
   "context_values"}``.  Each call runs in its own *call process*, ``fork``ed from the
   session child ahead of its request (the first one when the session starts, each next one
   while the call before runs, once the session child holds no request or answer): it
   becomes ``nobody``, sets the resource limits (its CPU counters start at zero: the CPU
   limit is per call), installs its seccomp filter, then reads the request frame from the
   host's pipe itself (the session child reads none after the hello) and closes that pipe.
   Before running anything of the user's, it tells the session child, in a first frame on
   its answer pipe, what the session child lacks for the next call processes (the code, when
   it is not compiled yet; the app's tools, when they came in full); the call's deadline
   starts there.  It runs the call under RestrictedPython, writes its result to that pipe
   and exits.  The session child reads it (bounded, killing the call process at the
   wall-clock limit + ``CALL_KILL_GRACE_S``), reaps it and answers with header
   ``{"size", "status", "timed_out", "too_large"}`` and the call's result as body::

       {"ok": ..., "return_value": ..., "writes": [[n, v]], "removed": [...], "state": {...},
        "stdout": "...", "stdout_truncated": bool, "undeclared": [...], "protections": [...],
        "error": null | {"kind", "message", "line", "traceback"}, "duration_ms": ...}

   (no ``"state"`` when the request says ``"state_back": false``: a simulation reads the
   writes, the in-place changes among them, never that copy of the whole state).

   Every call starts from a copy of the pristine session child, so nothing one call does
   (module state such as ``decimal.setcontext``, user classes, garbage with finalizers...)
   can reach a later call.
3. End of input: the session child exits.

The session child's parts, each a module beside this script (the jail shows this
directory as ``/sandbox``; they are imported as top-level modules, standard library and
RestrictedPython only): ``protocol.py`` (the frames), ``process.py`` (jail, privilege drop,
seccomp, the fork of each call process), ``policy.py`` (what the language layer allows),
``guards.py`` (the :class:`Sandbox` that applies it at run time), ``call_context.py`` (what
the code sees: ``context``, state, printed output, JSON values), ``clock.py`` (the session
clock), ``cx_objects.py`` (CX's objects).  This script runs a call and serves the session.

See ``agents/sandbox/__init__.py`` for the whole security model.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import os
import random
import resource
import signal
import sys
import time

# The modules beside this script (the jail shows them in /sandbox): ``-P`` leaves the
# script's directory off sys.path.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import call_context
from call_context import (
    Context,
    Forbidden,
    ForbiddenOperation,
    NotSerializable,
    PrintSink,
    Recorder,
    SandboxTimeout,
    State,
    to_json_value,
)
from chance import seed_chance
from clock import CLOCK_KEY, freeze_clock
from guards import Sandbox
from policy import CURRENT_CONTEXT, WITHHELD_BUILTINS
from process import CALL_KILL_GRACE_S, collect, enter_jail, fork_call_process, prepare_seccomp
from protocol import read_frame_fd, write_frame

USER_FILENAME_PREFIX = {"tool": "tool", "callback": "callback"}
# What a call process's first frame may carry (code, or the app's tools once).
MAX_REQUEST_BYTES = 64 * 1024 * 1024


# ------------------------------------------------------------------------ running a call


def _on_timeout(signum, frame):
    raise SandboxTimeout(
        "CPU time limit exceeded"
        if signum in (signal.SIGXCPU, signal.SIGPROF)
        else "time limit exceeded"
    )


def user_traceback(tb, filename, source_lines):
    """Return (line, text) for the frames of *tb* that belong to the user code."""
    frames = []
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename == filename:
            frames.append((tb.tb_lineno, code.co_name))
        tb = tb.tb_next
    if not frames:
        return None, ""
    out = ["Traceback (most recent call last):"]
    for lineno, name in frames[-20:]:
        out.append(f'  File "{filename}", line {lineno}, in {name}')
        if lineno and 0 < lineno <= len(source_lines):
            out.append("    " + source_lines[lineno - 1].strip())
    return frames[-1][0], "\n".join(out)


def innermost_tool_frame(tb, filename):
    """(tool name, line) of the innermost frame of *tb* in the code of another tool of the
    app (``<tool:name>``), when the failure happened there; else None."""
    found = None
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if type(name) is str and name.startswith("<tool:") and name != filename:
            found = (name[6:-1], tb.tb_lineno)
        elif name == filename:
            found = None
        tb = tb.tb_next
    return found


def describe(exc):
    if type(exc) is NameError and getattr(exc, "name", None) in WITHHELD_BUILTINS:
        return f"NameError: {exc.name!r} is not available in the sandbox"
    try:
        text = str(exc)
    except BaseException:  # user-defined __str__ may do anything
        text = ""
    name = type(exc).__name__
    return f"{name}: {text}" if text else name


def classify(exc):
    if isinstance(exc, SandboxTimeout):
        return "timeout"
    if isinstance(exc, MemoryError):
        return "memory"
    if isinstance(exc, Forbidden):
        return "forbidden"
    if isinstance(exc, NotSerializable):
        return "serialization"
    if type(exc) is NameError and getattr(exc, "name", None) in WITHHELD_BUILTINS:
        return "forbidden"
    return "exception"


def cx_callback_arguments(args, params, cx):
    """CX's and ADK's callback signatures from the simulation's arguments.

    CX: ``before_tool_callback(tool, input, callback_context)``,
    ``after_tool_callback(tool, input, callback_context, tool_response)``,
    ``before_model_callback(callback_context, llm_request)``,
    ``after_model_callback(callback_context, llm_response)``; ADK names the input ``args``
    (and some CX code ``tool_input``).  ``tool`` is a ``Tool`` with ``.name``.
    """
    out = dict(args)
    tool = args.get("tool")
    if "tool" in params and isinstance(tool, str):
        out["tool"] = cx.Tool(name=tool, description="")
    given = args.get("args")
    for alias in ("input", "tool_input"):
        if alias in params and alias not in args:
            # The same dict under every name: a change in place is seen by the host.
            out[alias] = given if isinstance(given, dict) else {}
    if "llm_request" in params and not isinstance(args.get("llm_request"), cx.LlmRequest):
        request = args.get("llm_request")
        request = request if isinstance(request, dict) else {}
        config = request.get("config") if isinstance(request.get("config"), dict) else {}
        out["llm_request"] = cx.LlmRequest(
            model=request.get("model"),
            contents=[cx.content_from(c, "user") for c in request.get("contents") or ()],
            config=cx.GenerateContentConfig(system_instruction=config.get("system_instruction")),
        )
    if "llm_response" in params and not isinstance(args.get("llm_response"), cx.LlmResponse):
        out["llm_response"] = cx.LlmResponse(content=cx.content_from(args.get("llm_response")))
    return out


def request_instruction(request):
    """The text of an ``LlmRequest``'s system instruction (a string, or a Content's parts)."""
    if request is None or request.config is None:
        return None
    instruction = request.config.system_instruction
    if instruction is None or type(instruction) is str:
        return instruction
    parts = getattr(instruction, "parts", None) or ()
    return "".join(str(getattr(p, "text", "") or "") for p in parts)


def request_changes(request, given_instruction):
    """What a model callback changed in its ``llm_request``, or None: the system
    instruction (when it differs) and the tools it hid (``config.hide_tool``)."""
    if request is None or request.config is None:
        return None
    out = {}
    instruction = request_instruction(request)
    if instruction != given_instruction and type(instruction) is str:
        out["system_instruction"] = instruction
    hidden = request.config.excluded_tools
    if hidden:
        out["hidden_tools"] = [str(name) for name in hidden]
    return out or None


def call_arguments(func, kind, args, context, cx=None):
    """Keyword arguments for *func*: tools get **args; callbacks get what they declare."""
    kwargs = dict(args)
    code = getattr(func, "__code__", None)
    if code is None:
        return kwargs
    params = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
    accepts_any = bool(code.co_flags & 0x08)  # CO_VARKEYWORDS
    for name in ("tool_context", "callback_context"):
        if name in params and name not in kwargs:
            kwargs[name] = context
    if kind == "callback" and cx is not None:
        kwargs = cx_callback_arguments(kwargs, params, cx)
    if kind == "callback":
        if not accepts_any:
            kwargs = {k: v for k, v in kwargs.items() if k in params}
        defaults = len(func.__defaults__ or ())
        required = params[: code.co_argcount - defaults]
        for name in required:
            kwargs.setdefault(name, None)
    return kwargs


def run_call(sandbox, call, state_data, declared, context_values, limits):
    kind = call.get("kind", "tool")
    entry = call["entry"]
    code_text = call["code"]
    filename = f"<{USER_FILENAME_PREFIX.get(kind, 'code')}:{entry}>"
    recorder = Recorder(state_data)
    state = State(state_data, recorder)
    context = Context(state, context_values)
    sink = call_context.SINK = PrintSink(limits["max_print_chars"])
    result = {
        "ok": False,
        "return_value": None,
        "error": None,
        "tool_calls": [],
    }
    started = time.perf_counter()
    # The call's own limit counts its CPU (user + system), not the wall clock: what a loaded
    # machine stretches is not the code's doing. The session child kills a call that is
    # still running at the wall-clock limit + CALL_KILL_GRACE_S (the host calls that a time
    # stop, not the code's failure).
    signal.setitimer(signal.ITIMER_PROF, min(limits["wall_time_s"], limits["cpu_time_s"]))
    try:
        code_object = COMPILED.get((filename, code_text))
        try:
            tree = ast.parse(code_text, filename, "exec") if code_object is None else None
        except SyntaxError as exc:
            result["error"] = {
                "kind": "syntax",
                "message": f"{type(exc).__name__}: {exc.msg}",
                "line": exc.lineno,
                "traceback": "",
            }
            raise _Done from None
        compiled = (
            sandbox.compile_restricted_exec(tree, filename, policy=sandbox.policy)
            if code_object is None
            else None
        )
        if compiled is not None and compiled.errors:
            first = compiled.errors[0]
            line = None
            if first.startswith("Line "):
                head = first[5:].split(":", 1)[0]
                line = int(head) if head.isdigit() else None
            result["error"] = {
                "kind": "forbidden",
                "message": "; ".join(compiled.errors),
                "line": line,
                "traceback": "",
            }
            raise _Done
        namespace = sandbox.globals_for(filename, context)
        namespace["tools"] = sandbox.cx.Tools([], None)  # replaced before the entry is called
        exec(code_object if compiled is None else compiled.code, namespace)
        func = namespace.get(entry)
        if not callable(func):
            result["error"] = {
                "kind": "entry_not_found",
                "message": f"the code does not define a function named {entry!r}",
                "line": None,
                "traceback": "",
            }
            raise _Done
        CURRENT_CONTEXT[0] = context
        tool_codes = call.get("tools") or {}
        compiled_tools = {}
        nested = result["tool_calls"] = []  # [name, ok] of each tools.<name>(...) call

        def call_tool(name, arguments):
            record = [name, False]
            nested.append(record)
            value = run_tool(name, arguments)
            record[1] = True
            return value

        def run_tool(name, arguments):
            if name not in compiled_tools:
                tool_code = COMPILED.get((f"<tool:{name}>", tool_codes[name]))
                if tool_code is None:
                    result = sandbox.compile_restricted_exec(
                        tool_codes[name], f"<tool:{name}>", policy=sandbox.policy
                    )
                    if result.errors:
                        raise ForbiddenOperation(f"tool {name}: " + "; ".join(result.errors))
                    tool_code = result.code
                tool_namespace = sandbox.globals_for(f"<tool:{name}>", context)
                tool_namespace["tools"] = namespace["tools"]
                exec(tool_code, tool_namespace)
                compiled_tools[name] = tool_namespace.get(name)
            tool_func = compiled_tools[name]
            if not callable(tool_func):
                raise NameError(f"the code of tool {name!r} defines no function {name!r}")
            return tool_func(**call_arguments(tool_func, "tool", arguments, context))

        namespace["tools"] = sandbox.cx.Tools(
            [n for n in tool_codes if type(n) is str and type(tool_codes[n]) is str], call_tool
        )
        given_args = (call.get("args") or {}).get("args") if kind == "callback" else None
        before_args = _canonical(given_args) if isinstance(given_args, dict) else None
        kwargs = call_arguments(func, kind, call.get("args") or {}, context, sandbox.cx)
        request = kwargs.get("llm_request")
        request = request if isinstance(request, sandbox.cx.LlmRequest) else None
        given_instruction = request_instruction(request)
        value = func(**kwargs)
        signal.setitimer(signal.ITIMER_PROF, 0)
        try:
            result["return_value"] = to_json_value(value, "the return value")
            if before_args is not None and _canonical(given_args) != before_args:
                # A tool callback changed the call's arguments in place: ADK's tool gets them.
                result["args"] = to_json_value(given_args, "the tool arguments")
            changed = request_changes(request, given_instruction)
            if changed is not None:
                # A model callback changed the request (CX's system instruction, the tools
                # it hid): ADK's model gets the request as the callback left it.
                result["request"] = to_json_value(changed, "the model request")
            result["ok"] = True
        except NotSerializable as exc:
            result["error"] = {
                "kind": "serialization",
                "message": str(exc),
                "line": None,
                "traceback": "",
            }
    except _Done:
        pass
    except BaseException as exc:
        signal.setitimer(signal.ITIMER_PROF, 0)
        line, trace = user_traceback(exc.__traceback__, filename, code_text.splitlines())
        message = describe(exc)
        inner = innermost_tool_frame(exc.__traceback__, filename)
        if inner is not None:
            # It failed inside another tool called through tools.<name>(...): say where.
            message = f"{message} (in tool {inner[0]}, line {inner[1]})"
        result["error"] = {
            "kind": classify(exc),
            "message": message,
            "line": line,
            "traceback": trace,
        }
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
    result["duration_ms"] = round((time.perf_counter() - started) * 1000, 3)
    result["stdout"] = sink.text()
    result["stdout_truncated"] = sink.truncated
    result["writes"] = recorder.writes
    result["removed"] = recorder.removed
    written = [name for name, _ in recorder.writes]
    result["undeclared"] = (
        sorted({n for n in written if n not in declared}) if declared is not None else []
    )
    return result


class _Done(Exception):
    """Internal: stop processing a call whose error is already recorded."""


def final_state(state_data):
    out = {}
    for name, value in state_data.items():
        try:
            out[name] = to_json_value(value, name)
        except NotSerializable:
            out[name] = None
    return out


def _canonical(value):
    return json.dumps(value, sort_keys=True, default=repr)


def add_in_place_writes(result, given):
    """A value the code changed in place (``sm = context.state["sm"]; sm["filled"].update(
    ...)``, as Bella Notte's tools do) is a write too: the runtime's state holds the same
    object, so the change persists there. Each such variable gets one write of its final
    value, after the code's own writes, when it differs from the value last written (or
    given)."""
    last = dict(given)
    for name, value in result["writes"]:
        last[name] = _canonical(value)
    removed = set(result["removed"])
    for name, value in result["state"].items():
        if name in last and name not in removed and last[name] != _canonical(value):
            result["writes"].append([name, value])


# The session child's caches, inherited by each forked call process (which never writes
# back): code objects compiled by the same RestrictedPython policy, keyed by (file name,
# source), so a callback file is compiled once per session, not once per call; and the
# app's tools (``tools.<name>``'s code, ~175 KB for bella_notte) by the host's digest, so
# the host sends them once per session child and a reference after that.
COMPILED = {}
COMPILED_MAX = 1024
TOOLS = {}
TOOLS_MAX = 4


def precompile(sandbox, request, tools_sent):
    """Compile the call's code (and, when the tools came in full, each tool's) in the
    session child, before the fork, when it has not been: only a clean compile is kept (a
    syntax error or a refused construct is left to the call process, which reports it as
    today). Compiling runs no user code. True when something new was compiled (a call
    process forked before lacks it)."""
    new = False
    code_text = request.get("code")
    entry = request.get("entry")
    if type(code_text) is str and type(entry) is str:
        kind = request.get("kind", "tool")
        filename = f"<{USER_FILENAME_PREFIX.get(kind, 'code')}:{entry}>"
        new = compile_once(sandbox, filename, code_text)
    tools = request.get("tools") if tools_sent else None
    if type(tools) is dict:
        for name, tool_code in tools.items():
            if type(name) is str and type(tool_code) is str:
                new = compile_once(sandbox, f"<tool:{name}>", tool_code) or new
    return new


def compile_once(sandbox, filename, code_text):
    """Compile and keep *code_text* unless kept already; True when it was added."""
    key = (filename, code_text)
    if key in COMPILED:
        return False
    try:
        compiled = sandbox.compile_restricted_exec(
            ast.parse(code_text, filename, "exec"), filename, policy=sandbox.policy
        )
    except BaseException:
        return False
    if compiled.errors or compiled.code is None:
        return False
    if len(COMPILED) >= COMPILED_MAX:
        COMPILED.pop(next(iter(COMPILED)))
    COMPILED[key] = compiled.code
    return True


def resolve_tools(request):
    """The request's tools: sent in full (kept under their digest), or by reference to a
    digest sent before. Returns an error message when the reference is unknown."""
    digest = request.pop("tools_digest", None)
    if not digest:
        return None
    if request.get("tools_ref"):
        tools = TOOLS.get(digest)
        if tools is None:
            return "the sandbox session does not hold the app's tools it was referred to"
        request["tools"] = tools
        return None
    if digest not in TOOLS and len(TOOLS) >= TOOLS_MAX:
        TOOLS.pop(next(iter(TOOLS)))
    TOOLS[digest] = request.get("tools") or {}
    return None


def seed_random(request, state_data, canonical=None):
    """`random` seeded from what the call receives (its kind, function, arguments and the
    session state): the same call on the same state draws the same values, so a replay
    of an unchanged app gives back what its live run drew (no drift), and a verdict does
    not depend on chance. A call process is forked per call (Python reseeds `random` in
    a fork from the system's entropy), so nothing carries from one call to the next.

    *canonical* maps each state name to its value's :func:`_canonical` text, already made
    for the in-place writes: the text hashed is then put together from them, the same
    bytes as the whole list encoded at once (``_seed_text``), without encoding the state
    a second time."""
    head = [request.get("kind"), request.get("entry"), request.get("args")]
    if canonical is None or any(type(name) is not str for name in state_data):
        text = json.dumps([*head, state_data], sort_keys=True, default=repr, ensure_ascii=True)
    else:
        text = _seed_text(head, canonical)
    random.seed(int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big"))


def _seed_text(head, canonical):
    """``json.dumps([*head, state], sort_keys=True, default=repr)`` from the state's values
    already encoded so (*canonical*: name -> text): the list's and the dict's separators
    and the keys in sorted order, as the encoder writes them."""
    items = ", ".join(f"{json.dumps(name)}: {canonical[name]}" for name in sorted(canonical))
    first = json.dumps(head, sort_keys=True, default=repr, ensure_ascii=True)
    return f"{first[:-1]}, {{{items}}}]"


def call_result(sandbox, request, limits, protections):
    """Run one call (in the call process); return its answer as JSON bytes."""
    state_data = dict(request.get("state") or {})
    declared = request.get("declared")
    declared = set(declared) if declared is not None else None
    context_values = dict(request.get("context_values") or {})
    now = context_values.pop(CLOCK_KEY, None)
    if isinstance(now, str) and now:
        freeze_clock(sandbox, now)
    # The values as given, to find the ones the code changed in place (below), and the
    # random seed's text.
    given = {name: _canonical(value) for name, value in state_data.items()}
    seed_random(request, state_data, given)
    seed_chance(sandbox)
    cap = limits["max_output_bytes"]
    try:
        result = run_call(sandbox, request, state_data, declared, context_values, limits)
        result["state"] = final_state(state_data)
        if result.get("ok"):
            add_in_place_writes(result, given)
        if request.get("state_back") is False:
            # The caller reads the writes (the in-place ones included), not this copy.
            del result["state"]
        result["protections"] = protections
        # ensure_ascii (the default): a lone surrogate ("\ud800") in a user string must not
        # make the encoding fail.
        payload = json.dumps(result).encode("ascii")
    except BaseException as exc:
        result = failed_result(classify(exc), describe(exc))
        result["protections"] = protections
        payload = json.dumps(result).encode("ascii")
    if len(payload) > cap:
        # Too large to send back: no effects at all (the parent keeps the given state).
        result = failed_result(
            "output_too_large",
            f"the result is {len(payload)} bytes, more than the {cap} allowed",
            stdout=result["stdout"][:1000],
        )
        result["protections"] = protections
        payload = json.dumps(result).encode("ascii")
    return payload


def serve_request(sandbox, limits, jail, protections, body):
    """In a call process forked ahead of its request: answer the request the host sent
    (*body*, read by this process itself), as JSON bytes.

    Before anything of the user's runs, it reports to the session child (its first frame
    on the answer pipe) what the session child lacks for the next call processes: this
    call's code when it is not compiled yet, the app's tools when they came in full. The
    call's deadline starts when that frame arrives."""
    request = json.loads(body)
    del body
    tools_sent = not request.get("tools_ref")
    digest = request.get("tools_digest")
    problem = resolve_tools(request)
    code_text, entry = request.get("code"), request.get("entry")
    learn = {}
    if type(code_text) is str and type(entry) is str:
        kind = request.get("kind", "tool")
        key = (f"<{USER_FILENAME_PREFIX.get(kind, 'code')}:{entry}>", code_text)
        if key not in COMPILED:
            learn.update(code=code_text, entry=entry, kind=kind)
    if problem is None and tools_sent and digest:
        learn.update(tools_digest=digest, tools=request.get("tools"))
    write_frame(1, json.dumps(learn).encode("ascii"))
    del learn
    if problem is not None:
        failed = failed_result("internal", problem)
        failed["protections"] = jail
        return json.dumps(failed).encode("ascii")
    return call_result(sandbox, request, limits, protections)


def receive_request():
    """In a call process: the host's next request frame, from the session child's standard
    input (None at its end: the host closed the session)."""
    header, body = read_frame_fd(0)
    return body if header is not None else None


def main():
    """The session child: set up once, then one fresh call process per request, each
    forked ahead of its request (:func:`serve_one`)."""
    header, body = read_frame_fd(0)  # unbuffered: each call process reads its own frame
    if header is None:
        os._exit(0)
    hello = json.loads(body)
    rp_path = hello.get("rp_path")
    if rp_path:
        sys.path.append(rp_path)
    limits = hello["limits"]

    import gc
    import warnings

    warnings.simplefilter("ignore")
    sandbox = Sandbox()
    setup = {
        "uid": hello.get("sandbox_uid"),
        "filter": prepare_seccomp(bytes.fromhex(hello.get("filter") or "")),
    }
    # Started by bubblewrap, the namespaces and the read-only root are already in place.
    jail = list(hello["jail"]) if hello.get("jail") is not None else enter_jail()
    del header, hello, body
    gc.collect()
    gc.freeze()  # fewer copy-on-write pages touched in each forked call process
    write_frame(1, json.dumps({"protections": jail}).encode("ascii"))
    session = (sandbox, limits, jail, setup)
    spare = next_call_process(*session)  # the first call's, while the host goes on
    while spare is not None:
        spare = serve_one(session, spare)
    os._exit(0)


def next_call_process(sandbox, limits, jail, setup):
    """Fork a call process for the next request (:func:`process.fork_call_process`)."""
    work = functools.partial(serve_request, sandbox, limits, jail)
    return fork_call_process(work, receive_request, limits, jail, setup, _on_timeout)


def serve_one(session, spare):
    """Answer the next request with *spare*, the call process forked for it (it reads the
    request from the host itself); return the call process for the request after (None
    when the host closed the session).

    The session child waits for the call process's first frame (what it lacks: new code
    to compile, the tools sent in full), learns it, then forks the next call process while
    this call runs, holding no request and no answer; reads the answer, reaps the call
    process and sends the answer on."""
    sandbox, limits = session[0], session[1]
    learned = spare.first_frame(max_bytes=MAX_REQUEST_BYTES)
    if learned is None:
        # Ended without reading a whole request: the host closed the session (or the process
        # died reading it, and what is left of that frame would reach the next one): done.
        spare.reap()
        return None
    deadline = time.monotonic() + limits["wall_time_s"] + CALL_KILL_GRACE_S
    learned = json.loads(learned)
    if learned.get("tools_digest"):
        resolve_tools(learned)
    precompile(sandbox, learned, True)
    del learned
    following = next_call_process(*session)
    answer_header, answer = collect(spare, deadline, limits)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    answer_header["session_cpu_s"] = round(usage.ru_utime + usage.ru_stime, 6)
    write_frame(1, answer, **answer_header)
    return following


def failed_result(kind, message, stdout=""):
    return {
        "ok": False,
        "return_value": None,
        "error": {"kind": kind, "message": message, "line": None, "traceback": ""},
        "writes": [],
        "removed": [],
        "stdout": stdout,
        "stdout_truncated": bool(stdout),
        "undeclared": [],
        "duration_ms": None,
    }


if __name__ == "__main__":
    main()
