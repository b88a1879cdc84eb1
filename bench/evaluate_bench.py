"""`manage.py evaluate` of Google's bella_notte, cold, as CI runs it (docs/benchmarks/evaluate.md).

Run on purpose (not part of the test suite):

    .venv/bin/python bench/evaluate_bench.py [--repeats 3] [--jobs 1] [--results FILE]

Imports bella_notte (28 goldens, from the CX corpus cache, tests/cx_corpus.py) into a
throwaway SQLite database, then times ``manage.py evaluate <app>`` in a fresh process for
each ``--jobs`` value (cold: a new process, no memo, the sandbox started from nothing).

Beside each run, in the same run and interleaved with it, the reference the goal is stated
in: ``python3 -c "sum(range(10**7))"`` as a fresh process (its start included), so the
figures read as ratios on a loaded or a faster machine (the goal: evaluate <= 20x it).

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

REFERENCE = [shutil.which("python3") or sys.executable, "-c", "sum(range(10**7))"]
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
        f"python {sys.version.split()[0]} ({sys.executable}); reference {REFERENCE[0]}",
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
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="statecraft-bench-")
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{workdir}/bench.sqlite3",
        "DJANGO_SETTINGS_MODULE": "tests.settings",
    }
    os.environ.update(env)
    for line in machine_state():
        print(line)
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
        ratios, walls, cpus, refs = [], [], [], []
        for repeat in range(args.repeats):
            before = load()
            ref, _, _ = timed(REFERENCE)
            wall, cpu, done = timed(
                [sys.executable, "manage.py", "evaluate", str(app.pk), "--jobs", jobs],
                cwd=ROOT,
                env=env,
            )
            ref_after, _, _ = timed(REFERENCE)
            reference = (ref + ref_after) / 2
            last = done.stdout
            summary = next(
                (x for x in reversed(last.splitlines()) if "without expectations" in x), "?"
            )
            ratios.append(wall / reference)
            walls.append(wall)
            cpus.append(cpu)
            refs.append(reference)
            print(
                f"run {repeat + 1} --jobs {jobs}: {wall:.2f} s, CPU {cpu:.2f} s (the command and"
                f" the children it reaped; the jail's processes mostly uncounted); reference"
                f" {ref * 1000:.0f}/{ref_after * 1000:.0f} ms -> {wall / reference:.1f}x;"
                f" load {before} -> {load()}; exit {done.returncode}; {summary}",
                flush=True,
            )
        print(
            f"evaluate --jobs {jobs}: median {statistics.median(walls):.2f} s = "
            f"{statistics.median(ratios):.1f}x the reference (median {statistics.median(refs):.3f}"
            f" s); best {min(ratios):.1f}x; CPU median {statistics.median(cpus):.2f} s;"
            f" goal <= 20x: {'met' if statistics.median(ratios) <= 20 else 'NOT met'}"
        )
    if args.results:
        lines = [x for x in last.splitlines() if x.startswith(VERDICTS) or "without exp" in x]
        Path(args.results).write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"verdicts of the last run: {args.results}")


if __name__ == "__main__":
    main()
