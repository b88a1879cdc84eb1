"""What "Run all" costs, and what re-running the goldens after a one-character edit costs.

Run on purpose (not part of the test suite):

    .venv/bin/python bench/goldens_bench.py [--repeats 5]

It migrates a throwaway SQLite database, loads the demo apps, builds an app with 32
goldens (the shopping demo with 32 scenarios of different quantities, each checking
the call, the response and the cart total), imports Google's bella_notte example (28
goldens, 18 tools, 10 callbacks; when the corpus is in the cache) and times, per app,
``services.app_evaluate`` (what "Run all", the API and ``manage.py evaluate`` call:
simulate every scenario with the real sandbox, check its expectations, store the
results):

- cold: no memo at all (evaluation memo and the sandbox's per-call memo cleared);
- unchanged: run again (every scenario's outcome is memoised by app revision);
- instructions +1 char: one character added to the agent's instructions and saved (a new
  revision: every scenario is simulated again, the sandbox memo answers the code calls);
- tool code +1 char: one character added to a tool's code (a comment), saved (the calls of
  that tool run again in the sandbox).

Prints the median of the repeats (ms) and checks that every outcome is what it was.
"""

from __future__ import annotations

import argparse
import os
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
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    workdir = tempfile.mkdtemp(prefix="statecraft-bench-")
    os.environ["DATABASE_URL"] = f"sqlite:///{workdir}/bench.sqlite3"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    warnings.filterwarnings("ignore", message="No directory at")
    import django

    django.setup()
    from django.core.cache import cache
    from django.core.management import call_command
    from django.test.utils import setup_test_environment

    setup_test_environment()
    call_command("migrate", verbosity=0)
    from agents import services
    from agents.demo import ensure_demo_user, load_demo
    from agents.models import AgentApp, Tool
    from agents.sandbox import code_runner
    from agents.services import exchange

    user = ensure_demo_user()
    apps = load_demo(user)
    many = services.app_duplicate(app=apps[0], owner=user, actor=user, name="Shop, 32 goldens")
    root = many.agents.get()
    for quantity in range(1, 32):
        total = 19.5 * quantity
        services.scenario_save(
            agent=root,
            actor=user,
            name=f"Golden {quantity:02d}",
            steps_script=(
                f"user: {quantity} pairs of the blue running shoes, please.\n"
                f'expect call: AddToCart {{"product_id": "shoe-blue-42", "quantity": {quantity}}}\n'
                f'expect response: AddToCart {{"quantity": {quantity}, "cart_total": {total}}}\n'
                f'expect state [Check_Total]: {{"cart_total": {total}}}\n'
                "agent: Done.\n"
                "user: Thanks.\n"
                "expect no calls\n"
            ),
        )
    apps.append(AgentApp.objects.get(pk=many.pk))
    try:
        from agents.core.cx.app import zip_bytes
        from tests.cx_corpus import cx_corpus_root
        from tests.cx_tree import folder_files

        files = folder_files(cx_corpus_root() / "examples" / "bella_notte")
        bella, _, _ = exchange.app_import_file(owner=user, data=zip_bytes(files))
        apps.append(bella)
    except Exception as exc:  # the corpus is optional here
        print(f"(bella_notte skipped: {exc})")

    def run(app: AgentApp) -> tuple[float, list[str]]:
        app = AgentApp.objects.get(pk=app.pk)
        started = time.perf_counter()
        runs = services.app_evaluate(app=app, actor=user)
        elapsed = (time.perf_counter() - started) * 1000
        return elapsed, [r.evaluation.status for r in runs]

    def edit_instructions(app: AgentApp, n: int) -> None:
        agent = AgentApp.objects.get(pk=app.pk).agents.order_by("pk").first()
        services.agent_save_instructions(
            agent=agent, actor=user, instructions=agent.instructions + ("." if n % 2 else " ")
        )

    def edit_tool(app: AgentApp, n: int) -> None:
        tool = Tool.objects.filter(app_id=app.pk).exclude(python_code="").order_by("pk").first()
        services.tool_update(tool=tool, actor=user, python_code=tool.python_code + f"\n#{n}")

    print(
        f"{'app':<40} {'scenarios':>9} {'cold':>8} {'unchanged':>10} {'instr +1':>9} {'tool +1':>8}"
    )
    for app in apps:
        cold, same, instr, tool = [], [], [], []
        baseline = None
        for n in range(args.repeats):
            cache.clear()
            code_runner.clear_cache()
            ms, statuses = run(app)
            cold.append(ms)
            baseline = baseline or statuses
            assert statuses == baseline, (app.name, statuses, baseline)
            ms, statuses = run(app)
            same.append(ms)
            assert statuses == baseline
            edit_instructions(app, n)
            ms, statuses = run(app)
            instr.append(ms)
            assert statuses == baseline
            edit_tool(app, n)
            ms, statuses = run(app)
            tool.append(ms)
            assert statuses == baseline
        med = statistics.median
        print(
            f"{app.name[:40]:<40} {len(baseline or []):>9} {med(cold):>8.0f} {med(same):>10.1f} "
            f"{med(instr):>9.0f} {med(tool):>8.0f}"
        )


if __name__ == "__main__":
    main()
