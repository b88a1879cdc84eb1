"""Versions of a large app: save, read back, diff (core and whole page) and restore.

Run on purpose (not part of the test suite):

    .venv/bin/python bench/version_diff_bench.py [--runs 15]

It migrates a throwaway SQLite database and builds, through the services, an
app with 300 variables (text, number, yes/no; one reference about every 100
bytes) and 1 MB of instructions over 4 agents (256 KB each). Version 1 is
saved; then 5 defaults change, one variable is renamed (its references
rewritten), one changes type, 20 instruction lines are edited; version 2 is
saved. It times (median and max over the runs):

- `version_create` (export of the whole app into the native document + insert),
- reading a stored version back (`from_native`: JSON Schema + app checks; the
  pages keep the last 8 read per process, versions being immutable),
- the pure three-layer diff of the two specs (`agents.core.diff.diff_apps`),
- the diff page through Django's test client (v1 → v2, and v1 → working copy),
- `version_restore` of version 1 (replace the working copy in one transaction),

and checks the diff found what was changed.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

VARIABLES = 300
AGENTS = 4
AGENT_BYTES = 256 * 1024
WORDS = [
    "the",
    "customer",
    "asks",
    "about",
    "an",
    "order",
    "and",
    "the",
    "agent",
    "answers",
    "politely",
    "with",
    "care",
]


def _instructions(rng: random.Random, names: list[str], size: int) -> str:
    lines: list[str] = []
    total = 0
    while total < size:
        words = [rng.choice(WORDS) for _ in range(14)]
        line = " ".join(words) + f" {{{{{rng.choice(names)}}}}}."
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines)


def _time(fn: Callable[[], object], runs: int) -> tuple[float, float]:
    fn()  # warm imports and caches
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples), max(samples)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()

    workdir = tempfile.mkdtemp(prefix="statecraft-bench-")
    os.environ["DATABASE_URL"] = f"sqlite:///{workdir}/bench.sqlite3"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    warnings.filterwarnings("ignore", message="No directory at")
    import django

    django.setup()
    from django.core.management import call_command
    from django.test import Client
    from django.test.utils import setup_test_environment
    from django.urls import reverse

    setup_test_environment()
    call_command("migrate", verbosity=0)
    from agents import services
    from agents.core.diff import diff_apps
    from agents.core.formats import dumps_native, from_native
    from agents.demo import ensure_demo_user
    from agents.services import versions

    rng = random.Random(14)
    user = ensure_demo_user()
    built = time.perf_counter()
    app = services.app_create(owner=user, name="Large app")
    names = [f"var_{i:03d}" for i in range(VARIABLES)]
    for i, name in enumerate(names):
        kind = ("text", "number", "boolean")[i % 3]
        default = {"text": f"value {i}", "number": i * 1.5, "boolean": i % 2 == 0}[kind]
        services.variable_create(
            app=app, name=name, type=kind, default=default, description=f"Variable {i}."
        )
    root = app.agents.get(is_root=True)
    services.agent_save_instructions(
        agent=root, instructions=_instructions(rng, names, AGENT_BYTES)
    )
    for n in range(1, AGENTS):
        services.agent_create(
            app=app,
            display_name=f"Agent {n}",
            instructions=_instructions(rng, names, AGENT_BYTES),
        )
    total_bytes = sum(len(a.instructions.encode()) for a in app.agents.all())
    print(
        f"app: {VARIABLES} variables, {AGENTS} agents, {total_bytes / 1024:,.0f} KB of "
        f"instructions (built in {time.perf_counter() - built:.1f} s)"
    )

    v1 = versions.version_create(app=app, user=user, name="v1")
    for i in range(0, 15, 3):  # five text defaults change
        variable = app.variables.get(name=names[i])
        services.variable_update(variable=variable, default=f"changed {i}")
    services.variable_rename(variable=app.variables.get(name=names[1]), new_name="renamed_var")
    services.variable_update(
        variable=app.variables.get(name=names[4]), type="text", default="now text"
    )
    for agent in app.agents.all():
        lines = agent.instructions.split("\n")
        for k in range(5):
            index = (k + 1) * len(lines) // 6
            lines[index] = "An edited line of instructions, " + lines[index]
        services.agent_save_instructions(agent=agent, instructions="\n".join(lines))
    v2 = versions.version_create(app=app, user=user, name="v2")
    document_bytes = len(dumps_native(v2.document).encode())

    spec1, _ = versions.version_specs(v1)
    spec2, _ = versions.version_specs(v2)
    diff = diff_apps(spec1, spec2)
    kinds = sorted((c.kind, c.change, c.name) for c in diff.declarations)
    renamed = [c for c in diff.declarations if c.change == "renamed"]
    assert [(c.old_name, c.name) for c in renamed] == [(names[1], "renamed_var")], renamed
    assert len(kinds) == 7, kinds  # 5 defaults + 1 type change + 1 rename
    # 5 edited lines per agent, plus the lines whose reference was renamed.
    assert len(diff.instructions) == AGENTS and all(i.diff.added >= 5 for i in diff.instructions)
    assert len(diff.changed_prompts) == AGENTS

    client = Client()
    client.force_login(user)
    url = reverse("version-diff", args=[app.pk])
    page = client.get(url, {"from": "1", "to": "2"})
    assert page.status_code == 200 and b"renamed_var" in page.content
    page_bytes = len(page.content)

    counter = iter(range(10_000))
    rows = [
        (
            "version_create (export + insert)",
            _time(
                lambda: versions.version_create(app=app, user=user, name=f"run {next(counter)}"),
                args.runs,
            ),
        ),
        (
            "read a version back (from_native, cold)",
            _time(lambda: from_native(v2.document), args.runs),
        ),
        ("core diff_apps v1 → v2 (3 layers)", _time(lambda: diff_apps(spec1, spec2), args.runs)),
        (
            "diff page v1 → v2 (whole request)",
            _time(lambda: client.get(url, {"from": "1", "to": "2"}), args.runs),
        ),
        (
            "diff page v1 → working copy",
            _time(lambda: client.get(url, {"from": "1", "to": "working"}), args.runs),
        ),
        (
            "version_restore v1 (one transaction)",
            _time(lambda: versions.version_restore(version=v1, user=user), args.runs),
        ),
    ]
    print(
        f"native document: {document_bytes / 1024:,.0f} KB; diff page: {page_bytes / 1024:,.0f} KB"
    )
    print(f"{'operation':<40} {'median ms':>10} {'max ms':>8}")
    for label, (median, worst) in rows:
        print(f"{label:<40} {median:>10.1f} {worst:>8.1f}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS: {peak:.0f} MB")


if __name__ == "__main__":
    main()
