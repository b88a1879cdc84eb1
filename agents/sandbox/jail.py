"""The OS boundary of the sandbox: bubblewrap namespaces, a minimal read-only root, seccomp.

The session child (``runner.py``) is started through ``bwrap`` (Debian's ``bubblewrap``):

* new PID, network, IPC, UTS, cgroup and mount namespaces: the child sees no host process
  (``kill(-1, ...)`` reaches only its own jail), has no network interface up (not even
  loopback), and sees only what is bound into its root;
* a minimal read-only root: the interpreter, its shared libraries, the standard library
  (with ``site-packages`` hidden), RestrictedPython, and the runner script; no ``/proc``,
  no ``/etc``, no ``/tmp``, no home, no project file, no database socket;
* a seccomp filter (built with libseccomp through ``pyseccomp``, handed to ``bwrap
  --seccomp``) refusing what code never needs: ``ptrace``, ``mount``, ``kexec``, ``keyctl``,
  ``bpf``, ``perf_event_open``, new namespaces, kernel modules…; each call process adds a
  second, stricter filter (no ``socket``, no ``fork``/``clone`` of a process, no ``exec``);
* a uid no other process uses: when the server runs as root, each session's call processes
  drop to ``SANDBOX_UID_BASE + <the session's host pid>`` (a uid with no account and no
  file); when it runs as an ordinary user, a user namespace maps it to ``nobody`` inside,
  with no capability outside.

Everything here is pure standard library plus ``pyseccomp`` (optional: without it the
seccomp protections are reported missing).  :func:`available_protections` says which
protections this host can give; Django's system check reports the missing ones.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from agents.sandbox.oneshot import CHILD_ENV, CHILD_FLAGS

# The session child's call processes run as SANDBOX_UID_BASE + (host pid of the session)
# when the server is root: outside every range Debian gives to accounts and containers'
# subordinate ids (100000-165535 by default), and + pid_max (2**22) stays below 2**31
# (user-namespace uid maps refuse larger ids).
SANDBOX_UID_BASE = 1_900_000_000
SANDBOX_DIR = "/sandbox"  # where the runner script and its helpers appear in the jail
PACKAGES_DIR = "/pylib"  # where the few third-party packages the runner imports appear
# Every protection the sandbox knows, in the order the system check lists them.
ALL_PROTECTIONS = (
    "pid_namespace",
    "network_namespace",
    "mount_namespace",
    "readonly_minimal_root",
    "unique_uid",
    "no_new_privs",
    "seccomp",
    "rlimits",
    "restricted_python",
)
# Syscalls no tool or callback ever needs: refused for the whole session (session filter).
SESSION_DENIED = (
    *("ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd"),
    *("mount", "umount2", "pivot_root", "chroot", "mount_setattr", "move_mount"),
    *("open_tree", "fsopen", "fsconfig", "fsmount", "fspick", "swapon", "swapoff"),
    *("kexec_load", "kexec_file_load", "reboot", "init_module", "finit_module"),
    *("delete_module", "keyctl", "add_key", "request_key", "bpf", "perf_event_open"),
    *("unshare", "setns", "userfaultfd", "io_uring_setup", "io_uring_enter"),
    *("io_uring_register", "acct", "quotactl", "syslog", "settimeofday", "clock_settime"),
    *("clock_adjtime", "adjtimex", "iopl", "ioperm", "lookup_dcookie", "fanotify_init"),
    *("open_by_handle_at", "name_to_handle_at", "personality", "uselib", "vhangup"),
    *("sethostname", "setdomainname", "nfsservctl", "mbind", "migrate_pages", "move_pages"),
)
# Refused on top of that in each call process (the process that runs user code).
CALL_DENIED = (
    *("socket", "socketpair", "connect", "bind", "listen", "accept", "accept4"),
    *("fork", "vfork", "execve", "execveat", "setuid", "setgid", "setreuid"),
    *("setregid", "setresuid", "setresgid", "setgroups", "setfsuid", "setfsgid"),
    *("chmod", "fchmod", "fchmodat", "chown", "fchown", "lchown", "fchownat", "mknod"),
    *("mknodat", "link", "linkat", "symlink", "symlinkat", "rename", "renameat"),
    *("renameat2", "unlink", "unlinkat", "mkdir", "mkdirat", "rmdir", "truncate"),
    *("ftruncate", "memfd_create", "prctl", "seccomp", "msgget", "semget", "shmget"),
    # Another process's scheduling: as an ordinary user the call process has its session
    # child's uid (a user namespace maps one uid), so the uid check would not stop it.
    *("setpriority", "sched_setscheduler", "sched_setparam", "sched_setaffinity"),
    *("sched_setattr", "ioprio_set", "process_madvise", "process_mrelease"),
)
# Signals from a call process, to anyone: answered "no such process" (ESRCH), as for a pid
# outside the jail. With the server as an ordinary user the call process shares its session
# child's uid, and could otherwise signal or stop it. (The session child's timers are its own.)
CALL_NO_SIGNALS = (
    *("kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo"),
    *("pidfd_open", "pidfd_send_signal"),
)
F_SETOWN, F_SETOWN_EX = 8, 15  # fcntl: a signal to another process on I/O
FIOSETOWN, SIOCSPGRP = 0x8901, 0x8902  # ioctl: the same
ESRCH = 3
# C modules of the standard library whose libraries stay out of the jail (a GUI, terminals,
# databases): nothing the sandbox imports needs them.
NOT_IN_JAIL_MODULES = ("_tkinter", "_curses", "readline", "_dbm", "_gdbm", "_sqlite3", "nis")
CLONE_NEW_FLAGS = 0x7E020000  # CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET
CLONE_THREAD = 0x00010000
ENOSYS = 38
EPERM = 1


@dataclass(frozen=True)
class JailCommand:
    """How to start a session child: argv, file descriptors to pass, what it provides."""

    argv: list[str]
    pass_fds: tuple[int, ...]
    protections: tuple[str, ...]  # OS protections the command itself puts in place
    sandbox_uid: int | None  # uid the call processes drop to (root server); None: as is
    cleanup: tuple[str, ...] = ()  # files to remove once the child has started


def bwrap_path() -> str | None:
    return shutil.which("bwrap") or (
        "/usr/bin/bwrap" if os.access("/usr/bin/bwrap", os.X_OK) else None
    )


def _interpreter() -> Path:
    return Path(os.path.realpath(sys.executable))


def _stdlib_dir() -> Path:
    return Path(sysconfig.get_paths()["stdlib"]).resolve()


@cache
def _shared_libraries() -> tuple[str, ...]:
    """Every shared library the interpreter and the standard library's C modules load.

    Read from the ELF files themselves (their ``DT_NEEDED`` entries, resolved as the
    dynamic loader does: :func:`_elf_libraries`), which takes milliseconds; ``ldd`` (a
    loader run per file, ~70 processes: 0.3 s on a quiet machine, over 1 s under load, at
    every session start of a new server process) only when a file is not a plain 64-bit
    little-endian ELF or a library is not found that way. Both give the same set
    (``tests/sandbox/test_sandbox.py``)."""
    objects = _jail_objects()
    libraries = _elf_libraries(objects)
    return libraries if libraries is not None else _ldd_libraries(objects)


def _jail_objects() -> list[str]:
    stdlib = _stdlib_dir()
    objects = [str(_interpreter())]
    dynload = stdlib / "lib-dynload"
    if dynload.is_dir():
        objects += [
            str(p)
            for p in sorted(dynload.glob("*.so"))
            if not p.name.startswith(NOT_IN_JAIL_MODULES)
        ]
    return objects


def _ldd_libraries(objects: Sequence[str]) -> tuple[str, ...]:
    libs: set[str] = set()
    ldd = shutil.which("ldd")
    if ldd is None:  # pragma: no cover - glibc systems have it
        return ()
    for start in range(0, len(objects), 50):
        out = subprocess.run(
            [ldd, *objects[start : start + 50]],
            capture_output=True,
            text=True,
            check=False,
            env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"},
        ).stdout
        for line in out.splitlines():
            line = line.strip()
            path = line.split("=>", 1)[1].strip() if "=>" in line else line
            path = path.split(" (", 1)[0].strip()
            if path.startswith("/") and os.path.exists(path):
                libs.add(path)
    return tuple(sorted(libs))


# The loader's own search list after RPATH/RUNPATH: /etc/ld.so.conf's directories (what
# its cache holds, in that order), then the built-in ones.
_DEFAULT_LIBRARY_DIRS = (
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/lib/aarch64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/lib64",
    "/usr/lib64",
    "/lib",
    "/usr/lib",
)


def _ld_so_conf_dirs(path: str = "/etc/ld.so.conf", depth: int = 0) -> list[str]:
    dirs: list[str] = []
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return dirs
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if line.startswith("include") and depth < 4:
            pattern = line.split(None, 1)[1] if " " in line else ""
            for included in sorted(Path("/").glob(pattern.lstrip("/"))) if pattern else ():
                dirs += _ld_so_conf_dirs(str(included), depth + 1)
        elif line.startswith("/"):
            dirs.append(line)
    return dirs


def _elf_dynamic(path: str) -> tuple[list[str], list[str], list[str], str | None] | None:
    """(needed, rpath, runpath, interpreter) of a 64-bit little-endian ELF file; None for
    anything else (the caller falls back to ldd)."""
    import mmap
    import struct

    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            if m[:4] != b"\x7fELF" or m[4] != 2 or m[5] != 1:
                return None
            (phoff,) = struct.unpack_from("<Q", m, 0x20)
            phentsize, phnum = struct.unpack_from("<HH", m, 0x36)
            loads, dynamic, interpreter = [], None, None
            for i in range(phnum):
                p_type, _, offset, vaddr, _, filesz = struct.unpack_from(
                    "<IIQQQQ", m, phoff + i * phentsize
                )
                if p_type == 1:  # PT_LOAD
                    loads.append((vaddr, offset, filesz))
                elif p_type == 2:  # PT_DYNAMIC
                    dynamic = (offset, filesz)
                elif p_type == 3:  # PT_INTERP
                    interpreter = m[offset : offset + filesz].split(b"\0", 1)[0].decode()
            if dynamic is None:
                return [], [], [], interpreter
            entries: list[tuple[int, int]] = []
            for at in range(dynamic[0], dynamic[0] + dynamic[1] - 15, 16):
                tag, value = struct.unpack_from("<qQ", m, at)
                if tag == 0:  # DT_NULL
                    break
                entries.append((tag, value))
            strtab = next((v for t, v in entries if t == 5), None)  # DT_STRTAB (an address)
            base = next(
                (off + strtab - va for va, off, size in loads if va <= (strtab or -1) < va + size),
                None,
            )
            if base is None:
                return None

            def text(offset: int) -> str:
                end = m.find(b"\0", base + offset)
                return m[base + offset : end].decode()

            needed = [text(v) for t, v in entries if t == 1]  # DT_NEEDED
            rpath = [d for t, v in entries if t == 15 for d in text(v).split(":") if d]
            runpath = [d for t, v in entries if t == 29 for d in text(v).split(":") if d]
            return needed, rpath, runpath, interpreter
    except (OSError, ValueError, struct.error, UnicodeDecodeError):
        return None


def _elf_libraries(objects: Sequence[str]) -> tuple[str, ...] | None:
    """The libraries *objects* load, transitively, resolved as the dynamic loader does
    (RPATH when there is no RUNPATH, then RUNPATH, /etc/ld.so.conf's directories, the
    built-in ones; ``$ORIGIN`` is the file's directory); None when a file cannot be read
    that way or a library is not found (then ldd decides)."""
    system_dirs = [*_ld_so_conf_dirs(), *_DEFAULT_LIBRARY_DIRS]
    # The loader itself (the executable's PT_INTERP) is loaded first: a library that
    # needs it by name (libc does) gets that one.
    loaded: dict[str, str] = {}
    found: set[str] = set()
    queue, seen = list(objects), set(objects)
    while queue:
        path = queue.pop(0)  # the executable first (its loader)
        dynamic = _elf_dynamic(path)
        if dynamic is None:
            return None
        needed, rpath, runpath, interpreter = dynamic
        origin = os.path.dirname(path)
        own = [
            d.replace("$ORIGIN", origin).replace("${ORIGIN}", origin)
            for d in ([] if runpath else rpath) + runpath
        ]
        if "$" in "".join(own):
            return None  # $LIB, $PLATFORM: ldd knows
        if interpreter:
            loaded.setdefault(os.path.basename(interpreter), interpreter)
        libraries = [interpreter] if interpreter else []
        for name in needed:
            if name in loaded:
                libraries.append(loaded[name])
                continue
            if "/" in name:
                if not os.path.exists(name):
                    return None
                libraries.append(name)
                continue
            library = next(
                (f"{d}/{name}" for d in (*own, *system_dirs) if os.path.exists(f"{d}/{name}")),
                None,
            )
            if library is None:
                return None
            libraries.append(library)
        for library in libraries:
            found.add(library)
            if library not in seen:
                seen.add(library)
                queue.append(library)
    return tuple(sorted(found))


def _root_binds(script: Path, packages: Sequence[str]) -> list[str]:
    """The ``--ro-bind`` arguments of the minimal root."""
    args: list[str] = []
    interpreter = _interpreter()
    stdlib = _stdlib_dir()
    seen: set[str] = set()

    def bind(source: str | Path, dest: str | Path | None = None) -> None:
        dest = str(dest or source)
        if dest in seen:
            return
        seen.add(dest)
        args.extend(["--ro-bind", str(source), dest])

    bind(interpreter)
    for lib in _shared_libraries():
        bind(lib)
        real = os.path.realpath(lib)
        if real != lib:
            bind(real)
    bind(stdlib)
    if (stdlib / "site-packages").is_dir():  # third-party packages stay out of the jail
        args.extend(["--tmpfs", str(stdlib / "site-packages")])
        args.extend(["--remount-ro", str(stdlib / "site-packages")])
    for package in packages:  # only the package itself, not its site-packages
        bind(package, f"{PACKAGES_DIR}/{Path(package).name}")
    bind(script.parent, SANDBOX_DIR)
    return args


@cache
def _filters() -> tuple[bytes, bytes] | None:
    """(session filter, call filter) as raw BPF programs, or None without libseccomp."""
    try:
        import pyseccomp as seccomp
    except (ImportError, OSError, RuntimeError):
        return None
    try:
        session = seccomp.SyscallFilter(seccomp.ALLOW)
        _deny(seccomp, session, SESSION_DENIED)
        # clone3 cannot be inspected (its flags are behind a pointer): libc falls back to
        # clone, whose flags can.  No new namespace from inside, ever.
        session.add_rule(seccomp.ERRNO(ENOSYS), "clone3")
        _deny_clone_flags(seccomp, session, CLONE_NEW_FLAGS)
        call = seccomp.SyscallFilter(seccomp.ALLOW)
        _deny(seccomp, call, SESSION_DENIED + CALL_DENIED)
        call.add_rule(seccomp.ERRNO(ENOSYS), "clone3")
        # A thread is fine (CLONE_THREAD set); a new process is not.
        call.add_rule(
            seccomp.ERRNO(EPERM), "clone", seccomp.Arg(0, seccomp.MASKED_EQ, CLONE_THREAD, 0)
        )
        _deny(seccomp, call, CALL_NO_SIGNALS, ESRCH)
        # Limits of another process (prlimit64 with a pid; setrlimit passes 0), and owners
        # that would receive SIGIO.
        call.add_rule(seccomp.ERRNO(EPERM), "prlimit64", seccomp.Arg(0, seccomp.NE, 0))
        for command in (F_SETOWN, F_SETOWN_EX):
            call.add_rule(seccomp.ERRNO(EPERM), "fcntl", seccomp.Arg(1, seccomp.EQ, command))
        for request in (FIOSETOWN, SIOCSPGRP):
            call.add_rule(seccomp.ERRNO(EPERM), "ioctl", seccomp.Arg(1, seccomp.EQ, request))
        return _export(session), _export(call)
    except (OSError, RuntimeError, ValueError):  # pragma: no cover - broken libseccomp
        return None


def _deny(seccomp, syscall_filter, names: Sequence[str], errno: int = EPERM) -> None:  # type: ignore[no-untyped-def]
    for name in names:
        try:
            syscall_filter.add_rule(seccomp.ERRNO(errno), name)
        except (ValueError, RuntimeError, OSError):
            continue  # a syscall this architecture does not have


def _deny_clone_flags(seccomp, syscall_filter, flags: int) -> None:  # type: ignore[no-untyped-def]
    bit = 1
    while bit <= flags:
        if flags & bit:
            syscall_filter.add_rule(
                seccomp.ERRNO(EPERM), "clone", seccomp.Arg(0, seccomp.MASKED_EQ, bit, bit)
            )
            syscall_filter.add_rule(
                seccomp.ERRNO(EPERM), "unshare", seccomp.Arg(0, seccomp.MASKED_EQ, bit, bit)
            )
        bit <<= 1


def _export(syscall_filter) -> bytes:  # type: ignore[no-untyped-def]
    with tempfile.TemporaryFile() as out:
        syscall_filter.export_bpf(out)
        out.seek(0)
        return out.read()


def call_filter() -> bytes | None:
    """The BPF program each call process installs before running user code."""
    filters = _filters()
    return filters[1] if filters else None


@cache
def bwrap_works() -> str | None:
    """None when bubblewrap can build the jail here, else why not (for the system check)."""
    bwrap = bwrap_path()
    if bwrap is None:
        return "bubblewrap is not installed (apt-get install bubblewrap)"
    probe = _base_argv(bwrap, user_namespace=os.geteuid() != 0)
    probe += ["--ro-bind", "/", "/", "/bin/true"]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap cannot run: {exc}"
    if done.returncode != 0:
        reason = done.stderr.decode("utf-8", "replace").strip()[-300:]
        return f"bubblewrap cannot create the namespaces here: {reason}"
    return None


def _base_argv(bwrap: str, *, user_namespace: bool) -> list[str]:
    argv = [
        bwrap,
        *("--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts"),
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--clearenv",
        *(arg for name, value in CHILD_ENV.items() for arg in ("--setenv", name, value)),
        *("--hostname", "sandbox"),
    ]
    if user_namespace:
        # An ordinary user: the user namespace maps the server's uid to nobody inside, with
        # no capability outside it.
        argv += ["--unshare-user", "--uid", "65534", "--gid", "65534", "--cap-drop", "ALL"]
    else:
        # Root: no user namespace (it would map root outside); the session child keeps only
        # what it needs to drop its call processes to a uid of their own.
        argv += ["--cap-drop", "ALL"]
        argv += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_KILL"]
    return argv


def jail_command(script: Path, packages: Sequence[str], host_pid: int) -> JailCommand | None:
    """The command starting *script* in the jail, or None when bubblewrap cannot be used.

    *packages* are package directories (RestrictedPython's) bound read-only into
    :data:`PACKAGES_DIR`.
    """
    if bwrap_works() is not None:
        return None
    bwrap = bwrap_path()
    assert bwrap is not None
    is_root = os.geteuid() == 0
    argv = _base_argv(bwrap, user_namespace=not is_root)
    argv += _root_binds(script, packages)
    # Nothing writable anywhere: the root bubblewrap builds (a tmpfs) becomes read-only too,
    # and there is no /dev, /proc or /tmp at all.
    argv += ["--remount-ro", "/", "--chdir", "/"]
    protections = [
        "pid_namespace",
        "network_namespace",
        "mount_namespace",
        "readonly_minimal_root",
    ]
    pass_fds: list[int] = []
    filters = _filters()
    if filters is not None:
        read_fd, write_fd = os.pipe()
        # A BPF program of a few hundred bytes fits in the pipe buffer: no deadlock.
        os.write(write_fd, filters[0])
        os.close(write_fd)
        argv += ["--seccomp", str(read_fd)]
        pass_fds.append(read_fd)
    argv += [str(_interpreter()), *CHILD_FLAGS, f"{SANDBOX_DIR}/{script.name}"]
    sandbox_uid = SANDBOX_UID_BASE + host_pid if is_root else None
    if not is_root:
        protections.append("unique_uid")  # mapped through the user namespace
    return JailCommand(
        argv=argv,
        pass_fds=tuple(pass_fds),
        protections=tuple(protections),
        sandbox_uid=sandbox_uid,
    )


def available_protections() -> dict[str, str | None]:
    """Each protection of :data:`ALL_PROTECTIONS` -> None if this host gives it, else why not."""
    missing: dict[str, str | None] = dict.fromkeys(ALL_PROTECTIONS)
    reason = bwrap_works()
    if reason is not None:
        for name in ("pid_namespace", "mount_namespace", "readonly_minimal_root"):
            missing[name] = reason
        if os.geteuid() != 0:
            missing["unique_uid"] = reason
            missing["network_namespace"] = reason
    if _filters() is None:
        why = "libseccomp2 (apt) or pyseccomp (pip) is missing"
        missing["seccomp"] = why
        missing["no_new_privs"] = why
    if sys.platform != "linux":  # pragma: no cover
        for name in missing:
            missing[name] = missing[name] or "the sandbox's OS layer needs Linux"
        missing["restricted_python"] = None
    return missing
