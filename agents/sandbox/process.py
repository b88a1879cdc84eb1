"""The process part of the session child: the jail it enters, the call process it forks.

:func:`enter_jail` (namespaces and chroot, once per session child, when bubblewrap did
not), and per call a fresh ``fork`` whose child drops to its own uid with fresh resource
limits (:func:`drop_privileges`), installs the call's seccomp filter
(:func:`install_seccomp`, prepared once by :func:`prepare_seccomp`), runs the call and
writes its answer to a pipe the session child reads, bounded and with a deadline: forked
ahead of its request, which it reads itself (:func:`fork_call_process`, then
:func:`collect`), or with it (:func:`run_forked`).

Standard library only, no sibling import (the tests load it on its own).
"""

from __future__ import annotations

import os
import resource
import select
import signal
import time

NOBODY = 65534
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
# The session child kills a call process that outlives its wall-clock limit by this much
# (user code that swallows the timer's exception).
CALL_KILL_GRACE_S = 0.5
MAX_FD = 1 << 20  # os.closerange's end: close_range(2) makes the span free


def enter_jail():
    """Namespaces and chroot: done once per process (the session child, before any call)."""
    active = []
    # Network (and IPC, hostname) namespaces: a fresh network namespace has only a
    # loopback interface that is down, so no connection can be made, not even to localhost.
    netns = False
    flags = os.CLONE_NEWNET | os.CLONE_NEWIPC | os.CLONE_NEWUTS
    try:
        os.unshare(flags)
        netns = True
    except (OSError, AttributeError):
        try:  # unprivileged: a user namespace lets us create the others
            os.unshare(os.CLONE_NEWUSER | flags)
            netns = True
        except (OSError, AttributeError):
            pass
    if netns:
        active.append("netns")

    # Needs privileges (root, or the capabilities a new user namespace gives); without
    # them it simply fails and is not reported.
    try:
        os.chroot(".")  # the parent made cwd a fresh, empty, root-owned 0700 directory
        os.chdir("/")
        active.append("chroot")
    except OSError:
        pass
    return active


def drop_privileges(limits, n_calls=1, uid=NOBODY):
    """Become *uid* and set the resource limits: done in the process that runs user code.

    The CPU limit counts from the CPU time already used (plus up to 1 s of rounding), so in
    a freshly forked call process, whose counters start at zero, it applies to that call alone.
    """
    active = []
    is_root = os.geteuid() == 0
    if is_root:
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            active.append("uid_nobody" if uid == NOBODY else "unique_uid")
        except OSError:
            pass

    cpu_used = sum(resource.getrusage(resource.RUSAGE_SELF)[:2])
    cpu_soft = int(cpu_used + limits["cpu_time_s"] * n_calls + 1)
    rlimits = [
        ("rlimit_cpu", resource.RLIMIT_CPU, cpu_soft, cpu_soft + 1),
        ("rlimit_as", resource.RLIMIT_AS, limits["memory_bytes"], limits["memory_bytes"]),
        ("rlimit_fsize", resource.RLIMIT_FSIZE, 0, 0),
        (
            "rlimit_nofile",
            resource.RLIMIT_NOFILE,
            limits["max_open_files"],
            limits["max_open_files"],
        ),
        ("rlimit_core", resource.RLIMIT_CORE, 0, 0),
    ]
    if hasattr(resource, "RLIMIT_NPROC"):
        rlimits.append(("rlimit_nproc", resource.RLIMIT_NPROC, 0, 0))
    for label, which, soft, hard in rlimits:
        try:
            resource.setrlimit(which, (soft, hard))
        except (OSError, ValueError):
            continue
        # RLIMIT_NPROC is not enforced for (real) root, even inside a user namespace.
        if label == "rlimit_nproc" and is_root and len(active) == 0:
            continue
        active.append(label)
    return active


def prepare_seccomp(program):
    """Everything installing the call filter needs, built once in the session child (so a
    call process only makes two prctl calls); None without a filter."""
    if not program:
        return None
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = SockFprog(len(program) // 8, ctypes.addressof(buffer))
    return libc, ctypes.byref(fprog), buffer  # the buffer must outlive the pointer


def install_seccomp(prepared):
    """Install the call filter after ``no_new_privs``; the labels of what is in place."""
    if prepared is None:
        return []
    libc, fprog, _ = prepared
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return []
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, fprog, 0, 0) != 0:
        return ["no_new_privs"]
    return ["no_new_privs", "seccomp"]


def call_process(work, limits, jail, result_fd, setup=None, on_timeout=None, receive=None):
    """The forked call process: drop privileges, run the call, write the answer, exit.

    With *receive* (a call process forked ahead of its request, :func:`fork_call_process`)
    the request is ``receive()``, read after the privileges are dropped and the filter is
    in place (None: the host closed the session, nothing to answer); the answer is
    ``work(protections, request)``.  Without it, ``work(protections)`` (the request came
    with the fork).

    Never returns (``os._exit`` in ``finally``): an exception here must not fall back into
    the session loop of the parent process image.
    """
    try:
        if result_fd != 1:
            os.dup2(result_fd, 1)  # the answer goes to the session child, not to the host
            os.close(result_fd)
        if receive is None:
            os.close(0)  # the next requests are none of this call's business
        if on_timeout is not None:
            signal.signal(signal.SIGALRM, on_timeout)
            signal.signal(signal.SIGPROF, on_timeout)
            signal.signal(signal.SIGXCPU, on_timeout)
        setup = setup or {}
        protections = [
            *jail,
            *drop_privileges(limits, uid=setup.get("uid") or NOBODY),
            *install_seccomp(setup.get("filter")),
            "restricted_python",
        ]
        if receive is None:
            payload = work(protections)
        else:
            request = receive()
            os.close(0)  # one request, read whole: the next ones are none of its business
            if request is None:
                return
            payload = work(protections, request)
        view = memoryview(payload)
        while view:
            view = view[os.write(1, view) :]
    finally:
        os._exit(0)


class Spare:
    """A call process forked ahead of its request (:func:`fork_call_process`): already
    ``nobody`` (or its own uid), its rlimits set and its seccomp filter installed, blocked
    reading the host's next request. It serves exactly one request, then is reaped."""

    __slots__ = ("answer_fd", "pid")

    def __init__(self, pid, answer_fd):
        self.pid, self.answer_fd = pid, answer_fd

    def first_frame(self, max_bytes):
        """What the call process reports before it runs anything of the user's: one frame
        ``{"size": n}\n`` + *n* bytes (see ``runner.serve_request``), waited for as long as
        the host takes to send the request.  None when the process ended without one (the
        host closed the session, or it died reading the request).  Not a byte past it is
        read: the answer that follows must not sit in the session child while the next
        call process is forked."""
        head = bytearray()
        while not head.endswith(b"\n"):
            if len(head) > 64:
                return None
            byte = os.read(self.answer_fd, 1)
            if not byte:
                return None
            head += byte
        size = int(head[9:-2]) if head.startswith(b'{"size": ') else -1
        if not 0 <= size <= max_bytes:
            return None
        body = bytearray()
        while len(body) < size:
            chunk = os.read(self.answer_fd, size - len(body))
            if not chunk:
                return None
            body += chunk
        return bytes(body)

    def reap(self):
        """Kill and reap it (after :meth:`first_frame` said None)."""
        os.close(self.answer_fd)
        os.kill(self.pid, signal.SIGKILL)  # not reaped yet, so the pid cannot have been reused
        os.waitpid(self.pid, 0)


def fork_call_process(work, receive, limits, jail, setup=None, on_timeout=None):
    """Fork the call process of a request not received yet: the fork, the privilege drop
    and the filter then happen off the call's path, and it reads the request from the host
    itself (``receive()``, the session child's standard input, which the session child no
    longer reads).  Forked from the session child (never from a call process) at a point
    where it holds no request and no answer, so it holds nothing of any call but what the
    session child keeps (the compiled code and the tools of this one user's session);
    every file descriptor but the host's pipe, its answer pipe and stderr is closed.
    *work* is ``work(protections, request) -> answer bytes``."""
    answer_r, answer_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the forked process
        try:
            os.dup2(answer_w, 1)
            os.closerange(3, MAX_FD)  # another call process's pipe among them
        except BaseException:
            os._exit(0)
        call_process(work, limits, jail, 1, setup, on_timeout, receive=receive)
    os.close(answer_w)
    return Spare(pid, answer_r)


def collect(spare, deadline, limits):
    """The rest of *spare*'s output after its first frame: ``(header, body)`` as
    :func:`run_forked` (read bounded until *deadline*, then the process is killed and
    reaped)."""
    return _answer(spare.pid, spare.answer_fd, deadline, limits)


def run_forked(work, limits, jail, setup=None, on_timeout=None):
    """Fork a call process that answers ``work(protections)`` (JSON bytes); read its answer
    (bounded, with a deadline), reap it."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the forked process
        os.close(read_fd)
        call_process(work, limits, jail, write_fd, setup, on_timeout)
    os.close(write_fd)
    deadline = time.monotonic() + limits["wall_time_s"] + CALL_KILL_GRACE_S
    return _answer(pid, read_fd, deadline, limits)


def _answer(pid, read_fd, deadline, limits):
    """Read the call process's answer from *read_fd* (closed after), kill and reap it."""
    cap = limits["max_output_bytes"] + 64 * 1024
    chunks, size = [], 0
    timed_out = too_large = False
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([read_fd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(read_fd, 65536)
            if not chunk:
                break
            size += len(chunk)
            if size > cap:
                too_large = True
                break
            chunks.append(chunk)
    finally:
        os.close(read_fd)
    # At end of file the process is exiting (its answer is complete, or it crashed: its exit
    # status is already decided); otherwise it overran.  Either way it must be gone before
    # the next call, so kill and reap it.
    os.kill(pid, signal.SIGKILL)  # not reaped yet, so the pid cannot have been reused
    _, status, usage = os.wait4(pid, 0)
    body = b"" if (timed_out or too_large) else b"".join(chunks)
    header = {
        "status": os.waitstatus_to_exitcode(status),
        "timed_out": timed_out,
        "too_large": too_large,
        # The call process's CPU time as the kernel counted it (not what the process says):
        # what a simulation's time cap counts (docs/designer/sandbox.md).
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 6),
    }
    return header, body
