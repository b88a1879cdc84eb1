"""Server time of the live preview and simulation fragments for the demo apps.

Run on purpose (not part of the test suite):

    .venv/bin/python bench/preview_bench.py [--runs 200]

It migrates a throwaway SQLite database, loads the demo apps, signs in, and
times complete requests through Django's test client (URL routing, session,
permission checks, queries, compile, lint, template rendering), i.e. the
server's share of a keystroke. Prints median, p95 and max per fragment.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()

    workdir = tempfile.mkdtemp(prefix="statecraft-bench-")
    os.environ["DATABASE_URL"] = f"sqlite:///{workdir}/bench.sqlite3"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    # Measure the work, not the per-user rate limits (README, Web security).
    os.environ["RATE_LIMITS"] = "preview=10000000/m,simulate=10000000/m"
    warnings.filterwarnings("ignore", message="No directory at")
    import django

    django.setup()
    from django.core.management import call_command
    from django.test import Client
    from django.test.utils import setup_test_environment
    from django.urls import reverse

    setup_test_environment()
    call_command("migrate", verbosity=0)
    from agents.demo import ensure_demo_user, load_demo
    from agents.sandbox import code_runner

    user = ensure_demo_user()
    apps = load_demo(user)
    client = Client()
    client.force_login(user)

    print(f"{'fragment':<46} {'median ms':>10} {'p95 ms':>8} {'max ms':>8}")
    for app in apps:
        agent = app.agents.get(is_root=True)
        cases = {
            f"preview  · {app.name}": (
                reverse("agent-preview", args=[app.pk, agent.pk]),
                {"instructions": agent.instructions, "channel": "web", "modality": "text"},
            ),
            f"simulate · {app.name} (sandbox, cold)": (
                reverse("agent-simulate", args=[app.pk, agent.pk]),
                {"instructions": agent.instructions},
            ),
            f"simulate · {app.name} (sandbox, memoised)": (
                reverse("agent-simulate", args=[app.pk, agent.pk]),
                {"instructions": agent.instructions},
            ),
            f"simulate · {app.name} (tool mocks)": (
                reverse("agent-simulate", args=[app.pk, agent.pk]),
                {"instructions": agent.instructions, "use_mocks": "on"},
            ),
        }
        for label, (url, data) in cases.items():
            runs = args.runs if label.startswith("preview") else max(10, args.runs // 10)
            client.post(url, data, headers={"HX-Request": "true"})  # warm caches and imports
            timings = []
            for run in range(runs):
                sent = data
                if "cold" in label:
                    # Nothing memoised: the code runner's results are dropped, and the
                    # instructions differ per run (an invisible trailing line break), so
                    # the memo of the whole simulation (its key names the text) misses too.
                    code_runner.clear_cache()
                    sent = {**data, "instructions": data["instructions"] + "\n" * (run + 1)}
                start = time.perf_counter()
                response = client.post(url, sent, headers={"HX-Request": "true"})
                timings.append((time.perf_counter() - start) * 1000)
                assert response.status_code == 200, response.status_code
            timings.sort()
            p95 = timings[int(len(timings) * 0.95) - 1]
            print(
                f"{label:<46} {statistics.median(timings):>10.2f} {p95:>8.2f} {timings[-1]:>8.2f}"
            )
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS of this process (Django, both demo apps, all runs): {peak_mb:.0f} MB")


if __name__ == "__main__":
    main()
