"""Unrestricted Python that tries every way out of the jail; run by the escape tests.

``probe(host_pids, host_paths)`` is the tool's entry point: it returns, for each attempt,
``"blocked: <why>"`` or ``"ALLOWED: <what it got>"``.  Shared by the root and the
ordinary-user tests (the ordinary-user test runs the host in a subprocess).
"""

PROBE = r"""
import errno, os, signal, socket


def probe(host_pids, host_paths):
    report = {"uid": os.getuid(), "pid": os.getpid()}

    def attempt(name, fn):
        try:
            report[name] = "ALLOWED: " + repr(fn())[:200]
        except BaseException as exc:
            report[name] = "blocked: " + type(exc).__name__ + ": " + str(exc)[:120]

    def list_proc():
        return os.listdir("/proc")

    attempt("list_processes", list_proc)
    for pid in host_pids:
        attempt(f"signal_{pid}", lambda pid=pid: os.kill(pid, 0))
    for path in host_paths:
        attempt(f"read_{path}", lambda path=path: open(path, "rb").read(64))
    attempt("read_proc_1_environ", lambda: open("/proc/1/environ", "rb").read())
    attempt("read_etc_passwd", lambda: open("/etc/passwd").read(64))
    attempt("list_root", lambda: sorted(os.listdir("/")))

    def tcp():
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(1)
        s.connect(("127.0.0.1", 5432))
        return "connected"

    def unix():
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect("/var/run/postgresql/.s.PGSQL.5432")
        return "connected"

    attempt("socket_tcp", tcp)
    attempt("socket_unix", unix)

    def write(path):
        with open(path, "w") as f:
            f.write("x")
            f.flush()
        return path

    for path in ("/escape.txt", "/tmp/escape.txt", "/sandbox/escape.txt", "/dev/shm/x"):
        attempt(f"write_{path}", lambda path=path: write(path))

    def fork():
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        return pid

    attempt("fork", fork)
    attempt("posix_spawn", lambda: os.posix_spawn("/bin/true", ["true"], {}))
    attempt("setuid_0", lambda: os.setuid(0))
    attempt("unshare_user", lambda: os.unshare(os.CLONE_NEWUSER))
    attempt("unshare_net", lambda: os.unshare(os.CLONE_NEWNET))

    def ptrace_parent():
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.ptrace(16, os.getppid(), 0, 0) != 0:  # PTRACE_ATTACH
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
        return "attached"

    attempt("ptrace_parent", ptrace_parent)

    # The session child: as an ordinary user it has this process's uid (issue 22, item 17).
    import fcntl, resource
    attempt("signal_parent", lambda: os.kill(os.getppid(), 0))
    def stop_parent():
        os.kill(os.getppid(), signal.SIGSTOP)
        os.kill(os.getppid(), signal.SIGCONT)  # (if it worked: let the session go on)
        return "stopped"

    attempt("stop_parent", stop_parent)
    attempt("prlimit_parent", lambda: resource.prlimit(os.getppid(), resource.RLIMIT_NOFILE))
    attempt("pidfd_parent", lambda: os.pidfd_open(os.getppid()))

    def sigio_owner():
        read_end, _ = os.pipe()
        return fcntl.fcntl(read_end, fcntl.F_SETOWN, os.getppid())

    attempt("sigio_owner_parent", sigio_owner)

    def mount_tmpfs():
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.mount(b"none", b"/sandbox", b"tmpfs", 0, None) != 0:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
        return "mounted"

    attempt("mount", mount_tmpfs)
    attempt("big_alloc", lambda: len(bytearray(1024 * 2**20)))
    return report
"""

# Signal everything this process can see (its own jail at most; it may kill its session).
KILL_ALL = r"""
import os, signal


def kill_all():
    os.kill(-1, signal.SIGKILL)
    return "sent"
"""

RUNAWAY = r"""
import signal, time


def runaway():
    signal.signal(signal.SIGALRM, signal.SIG_IGN)  # no polite timer any more
    signal.signal(signal.SIGXCPU, signal.SIG_IGN)
    time.sleep(3600)
"""

SPIN = r"""
import signal


def spin():
    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    signal.signal(signal.SIGXCPU, signal.SIG_IGN)
    while True:
        pass
"""


def assert_contained(report, host_pids, host_paths, interpreter):
    """Every attempt of PROBE was blocked (the uid is checked by the caller).

    *interpreter* is the real path of the Python the jail runs: its top directory is the
    one host directory the jail's root may show (``/root`` for pyenv's Python)."""
    allowed = {k: v for k, v in report.items() if isinstance(v, str) and v.startswith("ALLOWED")}
    # Listing / works, but shows the jail's minimal root, not the host's.
    listing = allowed.pop("list_root")
    top = interpreter.strip("/").split("/")[0]
    for host_dir in ("etc", "home", "proc", "tmp", "work", "var", "dev", "root", "run"):
        if host_dir != top:
            assert f"'{host_dir}'" not in listing, listing
    assert allowed == {}, allowed
    for pid in host_pids:
        assert report[f"signal_{pid}"].startswith("blocked: ProcessLookupError"), report
    for path in host_paths:
        assert report[f"read_{path}"].startswith("blocked: FileNotFoundError"), report
    assert "PermissionError" in report["socket_tcp"], report
    assert "PermissionError" in report["fork"], report
