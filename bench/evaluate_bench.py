"""`manage.py evaluate` of Google's bella_notte, cold, as CI runs it (docs/benchmarks/evaluate.md).

Run on purpose (not part of the test suite):

    .venv/bin/python bench/evaluate_bench.py [--repeats 3] [--jobs 1] [--results FILE]
        [--project DIR ...]

Imports bella_notte (28 goldens, from the CX corpus cache, tests/cx_corpus.py) into a
throwaway SQLite database, then times ``manage.py evaluate <app>`` in a fresh process for
each ``--jobs`` value (cold: a new process, no memo, the sandbox started from nothing).
``--project DIR`` (repeatable) times the ``manage.py`` of another checkout instead, on the
same database, interleaved run by run with the others (``git archive main | tar -x -C
/tmp/main``, then ``--project /tmp/main --project .``): a before/after pair under the same
load. Its modules are compiled first, as ``make bytecode`` compiles this one's.

Beside each run, in the same run and interleaved with it, the reference the goal is stated
in: ``python3 -c "sum(range(10**7))"`` as a fresh process (its start included), so the
figures read as ratios on a loaded or a faster machine (the goal: evaluate <= 20x it).
``python3`` is the interpreter itself: where the one on the PATH is a shell script (pyenv's
shim, which adds 0.1-0.3 s of bash to every start and would flatter the ratio), the
interpreter this bench runs on (its base installation, not the venv) stands in, and the
line says so.

It prints what decides the figures, so a figure is never quoted without them: the load
average before and after each run, the byte-code state (PYTHONDONTWRITEBYTECODE, whether
the project's and the installed packages' modules have compiled .pyc files, see the
Makefile's ``bytecode`` target and ``uv sync --compile-bytecode``), Python's and the main
dependencies' versions, the commit. ``--results FILE`` writes the verdict lines of the last
run (PASS/FAIL/MODEL/STOP per golden and the totals) to compare two commits' verdicts with
``diff``.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def reference_python() -> tuple[str, str]:
    """(the python3 to time, a note when the one on the PATH is not it)."""
    found = shutil.which("python3")
    if found:
        with open(found, "rb") as head:
            if head.read(2) != b"#!":
                return found, ""
    base = Path(sys.base_prefix) / "bin" / "python3"
    return str(base), f" (python3 on the PATH, {found}, is a script: not timed)" if found else ""


REFERENCE_PYTHON, REFERENCE_NOTE = reference_python()
REFERENCE = [REFERENCE_PYTHON, "-c", "sum(range(10**7))"]
VERDICTS = ("PASS ", "FAIL ", "MODEL ", "STOP ", "---- ")
DEPENDENCIES = ("django", "RestrictedPython", "jsonschema", "djangorestframework", "rpds-py")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command: list[str], **kwargs) -> tuple[float, float, subprocess.CompletedProcess]:
    """(wall seconds, CPU seconds of the process and the children it reaped, the result)."""
    cpu = _children_cpu()
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False, **kwargs)
    return time.perf_counter() - started, _children_cpu() - cpu, done


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def compiled(folder: Path) -> str:
    """How many of `folder`'s modules have an up-to-date .pyc of this Python."""
    tag = sys.implementation.cache_tag
    sources = [p for p in folder.rglob("*.py") if "__pycache__" not in p.parts]
    fresh = 0
    for source in sources:
        pyc = source.parent / "__pycache__" / f"{source.stem}.{tag}.pyc"
        if pyc.exists() and pyc.stat().st_mtime >= source.stat().st_mtime:
            fresh += 1
    return f"{fresh}/{len(sources)}"


def machine_state() -> list[str]:
    site = Path(sysconfig.get_paths()["purelib"])
    versions = []
    for name in DEPENDENCIES:
        try:
            versions.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            versions.append(f"{name} -")
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return [
        f"machine: {os.cpu_count()} cores, load {load()} (1/5/15 min); commit {commit}",
        f"python {sys.version.split()[0]} ({sys.executable}); reference {REFERENCE[0]}"
        f"{REFERENCE_NOTE}",
        "bytecode: PYTHONDONTWRITEBYTECODE="
        f"{os.environ.get('PYTHONDONTWRITEBYTECODE', '(unset)')}; compiled .pyc: project "
        f"agents/ {compiled(ROOT / 'agents')}, designer/ {compiled(ROOT / 'designer')}; "
        f"packages django/ {compiled(site / 'django')}, rest_framework/ "
        f"{compiled(site / 'rest_framework')}, jsonschema/ {compiled(site / 'jsonschema')}",
        "dependencies: " + ", ".join(versions),
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--jobs", default="1")
    parser.add_argument("--results", help="write the last run's verdict lines to this file")
    parser.add_argument(
        "--project",
        action="append",
        help="time this checkout's manage.py (repeatable; default: this one)",
    )
    args = parser.parse_args()
    projects = [Path(p).resolve() for p in args.project or [ROOT]]
    for project in projects:
        if project != ROOT:
            subprocess.run(
                [sys.executable, "-m", "compileall", "-q", "-j", "0", "agents", "designer"],
                cwd=project,
                capture_output=True,
                check=False,
            )
    workdir = tempfile.mkdtemp(prefix="statecraft-bench-")
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{workdir}/bench.sqlite3",
        "DJANGO_SETTINGS_MODULE": "tests.settings",
    }
    os.environ.update(env)
    for line in machine_state():
        print(line)
    script = shutil.which("python3")
    if REFERENCE_NOTE and script:
        # What the wrapper would add to the reference (and take off every ratio), once.
        wrapped, _, _ = timed([script, *REFERENCE[1:]])
        plain, _, _ = timed(REFERENCE)
        print(
            f"reference through {script}: {wrapped * 1000:.0f} ms against {plain * 1000:.0f} ms"
            " for the interpreter itself (not used: its start is a shell script's)"
        )
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from agents.core.cx.app import zip_bytes
    from agents.demo import ensure_demo_user
    from agents.models import Scenario
    from agents.services import exchange
    from tests.cx_corpus import cx_corpus_root
    from tests.cx_tree import folder_files

    user = ensure_demo_user()
    files = folder_files(cx_corpus_root() / "examples" / "bella_notte")
    app, _, _ = exchange.app_import_file(owner=user, data=zip_bytes(files))
    Scenario.objects.filter(agent__app=app).update(now="2026-06-01T12:00:00")
    print(f"bella_notte: {Scenario.objects.filter(agent__app=app).count()} scenarios")
    last = ""
    for jobs in args.jobs.split(","):
        figures: dict[Path, dict[str, list[float]]] = {
            p: {"ratios": [], "walls": [], "cpus": [], "refs": []} for p in projects
        }
        for repeat in range(args.repeats):
            for project in projects:
                before = load()
                ref, _, _ = timed(REFERENCE)
                wall, cpu, done = timed(
                    [sys.executable, "manage.py", "evaluate", str(app.pk), "--jobs", jobs],
                    cwd=project,
                    env=env,
                )
                ref_after, _, _ = timed(REFERENCE)
                reference = (ref + ref_after) / 2
                if project == projects[-1]:
                    last = done.stdout
                summary = next(
                    (x for x in reversed(done.stdout.splitlines()) if "without expectations" in x),
                    "?",
                )
                for key, value in (
                    ("ratios", wall / reference),
                    ("walls", wall),
                    ("cpus", cpu),
                    ("refs", reference),
                ):
                    figures[project][key].append(value)
                name = "" if len(projects) == 1 else f" {project}"
                print(
                    f"run {repeat + 1}{name} --jobs {jobs}: {wall:.2f} s, CPU {cpu:.2f} s (the"
                    f" command and the children it reaped; the jail's processes mostly"
                    f" uncounted); reference {ref * 1000:.0f}/{ref_after * 1000:.0f} ms ->"
                    f" {wall / reference:.1f}x; load {before} -> {load()}; exit"
                    f" {done.returncode}; {summary}",
                    flush=True,
                )
        for project in projects:
            f = figures[project]
            name = "" if len(projects) == 1 else f" {project}"
            ratio = statistics.median(f["ratios"])
            print(
                f"evaluate{name} --jobs {jobs}: median {statistics.median(f['walls']):.2f} s ="
                f" {ratio:.1f}x the reference (median {statistics.median(f['refs']):.3f} s);"
                f" best {min(f['ratios']):.1f}x; CPU median {statistics.median(f['cpus']):.2f} s;"
                f" goal <= 20x: {'met' if ratio <= 20 else 'NOT met'}"
            )
    if args.results:
        lines = [x for x in last.splitlines() if x.startswith(VERDICTS) or "without exp" in x]
        Path(args.results).write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"verdicts of the last run: {args.results}")


if __name__ == "__main__":
    main()
