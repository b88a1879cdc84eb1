"""Run all fanned out over workers (issue 31): live against a slow model, and offline.

- **live**: ``--goldens`` goldens (default 28), each one model call that calls a tool and one
  that answers, against a loopback model (tests/llm_server.py) whose every answer leaves
  after ``--delay`` seconds (default 0.5). Two ``manage.py worker`` processes; the Run all
  is POSTed to the API through gunicorn and read until it ends. The figure: its wall time
  against the sum of its model calls' delays (the time one worker asking one golden after
  another would wait), and /healthz's p99 read every 50 ms meanwhile.
- **offline**: the same goldens scripted, each with ``--calls`` slow tool calls (0.3 s of
  work each, in the sandbox), Run all with one worker, then with two: the ratio.

Acceptance (docs/benchmarks): live <= 0.2 x the sequential time, /healthz p99 < 1 s; offline,
two workers <= 0.65 x one. Prints the machine's load and the versions. The database is a
throwaway SQLite unless DATABASE_URL names one. Run on purpose:
.venv/bin/python bench/fanout_bench.py [--skip-offline] [--skip-live]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from web_server import PY, ROOT, env_for, sign_in, start_gunicorn, wait_until_up

sys.path.insert(0, str(ROOT))
from tests.llm_server import ModelServer, openai_call, openai_text
from tests.workers import SLOW_TOOL

KEY = "sk-bench-fanout"
SETUP = """
from agents import services
from agents.models import AgentApp
app = AgentApp.objects.get(name="Bank demo")
agent = app.agents.get()
services.tool_update(tool=app.tools.get(), python_code=%(code)s)
for old in agent.scenarios.all():
    old.delete()
for i in range(%(goldens)d):
    calls = "\\n".join(
        'tool: LookupBalance {"account_id": "%%s-%%s"}' %% (i, c) for c in range(%(calls)d)
    )
    script = "user: What is my balance? (%%s)\\n" %% i + (calls if %(offline)r else
        "expect call: LookupBalance")
    services.scenario_save(agent=agent, name="Golden %%02d" %% i, steps_script=script)
print(app.pk)
"""


def _opens(seen) -> bool:
    roles = [m.get("role") for m in (seen.body or {}).get("messages", [])]
    return "tool" not in roles


def versions() -> str:
    import django

    return f"Python {sys.version.split()[0]}, Django {django.get_version()}"


def prepare(env: dict[str, str], goldens: int, calls: int, offline: bool) -> int:
    manage = [PY, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "--no-input"], env=env, check=True, capture_output=True)
    subprocess.run([*manage, "load_demo"], env=env, check=True, capture_output=True)
    # Offline: 0.3 s of work per tool call; live: the demo's own tool (the model is slow).
    tool = repr(SLOW_TOOL) if offline else "__import__('agents.demo').demo.LOOKUP_BALANCE_CODE"
    code = SETUP % {"code": tool, "goldens": goldens, "calls": calls, "offline": offline}
    out = subprocess.run(
        [*manage, "shell", "-c", code], env=env, check=True, capture_output=True, text=True
    )
    return int(out.stdout.split()[-1])


def workers(env: dict[str, str], count: int) -> list[subprocess.Popen]:
    """`count` workers, returned once each says it is up (a deployment's workers are
    running before the Run all comes; their start is not the Run all's time)."""
    procs = [
        subprocess.Popen(
            [PY, str(ROOT / "manage.py"), "worker"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        for _ in range(count)
    ]
    for proc in procs:
        line = proc.stdout.readline()
        if " on the " not in line:
            raise RuntimeError(f"a worker did not start: {line!r}")
        # Its stdout read on, so it never blocks on a full pipe.
        threading.Thread(target=proc.stdout.read, daemon=True).start()
    return procs


def run_all(opener, jar, base: str, app: int, body: dict) -> tuple[float, dict]:
    """POST the Run all, read the job until it ends: its wall time and its last state."""
    token = next(c.value for c in jar if c.name == "csrftoken")
    request = urllib.request.Request(
        f"{base}/api/apps/{app}/evaluate",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "X-CSRFToken": token, "Referer": base},
    )
    start = time.perf_counter()
    location = opener.open(request).headers["Location"]
    while True:
        data = json.loads(opener.open(location).read())
        if data["status"] not in ("queued", "running"):
            return time.perf_counter() - start, data
        time.sleep(0.1)


def healthz_watch(base: str, stop: threading.Event, seen: list[float]) -> None:
    while not stop.is_set():
        start = time.perf_counter()
        try:
            urllib.request.urlopen(f"{base}/healthz", timeout=5).read()
            seen.append(time.perf_counter() - start)
        except OSError:
            seen.append(5.0)
        stop.wait(0.05)


def p99(values: list[float]) -> float:
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[98]


TIMELINE = """
from agents.models import Job
parent = Job.objects.filter(kind="evaluate_app").latest("created_at")
t0 = parent.created_at
pieces = list(Job.objects.filter(parent=parent).order_by("started_at"))
def s(t):
    return f"{(t - t0).total_seconds():.2f}" if t else "-"
by = {}
for p in pieces:
    by.setdefault(p.worker, []).append(p)
print(f"  timeline (s after the POST's job was created): parent started {s(parent.started_at)},"
      f" ended {s(parent.finished_at)}")
for worker, mine in sorted(by.items()):
    last = max(p.finished_at for p in mine)
    print(f"    {worker}: {len(mine)} pieces, first started {s(mine[0].started_at)},"
          f" last started {s(mine[-1].started_at)}, last ended {s(last)}")
    spans = sorted((p.finished_at - p.started_at).total_seconds() for p in mine)
    most = max(
        sum(1 for q in mine if q.started_at <= p.started_at < q.finished_at) for p in mine
    )
    print(f"      a piece's wall time: median {spans[len(spans) // 2]:.2f} s,"
          f" max {spans[-1]:.2f} s; at most {most} at once")
"""


def timeline(env: dict[str, str]) -> str:
    """Where the wall time went: when the parent and each worker's pieces started and ended."""
    out = subprocess.run(
        [PY, str(ROOT / "manage.py"), "shell", "-c", TIMELINE],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return out.stdout.rstrip() or out.stderr.strip()[-500:]


def live(args) -> None:
    server = ModelServer(strict=False)
    asked = [0]
    lock = threading.Lock()

    def answer(seen):
        if _opens(seen):
            return openai_call("LookupBalance", {"account_id": "primary"})
        return openai_text("Your balance is 1,250 EUR.")

    def hold(seen) -> None:
        with lock:
            asked[0] += 1
        time.sleep(args.delay)

    server.answer, server.before_answer = answer, hold
    models = {
        "loop": {
            "kind": "openai",
            "model": "bench-model",
            "base_url": f"{server.url}/v1",
            "api_key_env": "BENCH_KEY",
        }
    }
    workdir = tempfile.mkdtemp(prefix="statecraft-fanout-live-")
    env = env_for(workdir, {"STATECRAFT_MODELS": json.dumps(models), "BENCH_KEY": KEY})
    app = prepare(env, args.goldens, 1, offline=False)
    base = f"http://127.0.0.1:{args.port}"
    procs = [start_gunicorn(env, args.port), *workers(env, 2)]
    try:
        wait_until_up(base)
        opener, jar = sign_in(base)
        opener.open(f"{base}/apps/{app}/").read()  # the csrftoken cookie
        stop, seen = threading.Event(), []
        watcher = threading.Thread(target=healthz_watch, args=(base, stop, seen))
        watcher.start()
        wall, data = run_all(opener, jar, base, app, {"model": "loop"})
        stop.set()
        watcher.join()
        summary = (data.get("result") or {}).get("summary")
        sequential = asked[0] * args.delay
        print(f"live: {args.goldens} goldens, {asked[0]} model calls of {args.delay:.2f} s")
        print(f"  status {data['status']}, summary {summary}")
        print(f"  wall {wall:.2f} s; sequential (sum of the delays) {sequential:.2f} s")
        print(f"  ratio {wall / sequential:.3f}x  (acceptance: <= 0.2x)")
        print(f"  /healthz p99 {p99(seen) * 1000:.0f} ms over {len(seen)} reads (< 1 s)")
        print(timeline(env))
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(20)
        server.close()


def offline(args) -> None:
    times = {}
    for count in (1, 2):
        workdir = tempfile.mkdtemp(prefix=f"statecraft-fanout-offline-{count}-")
        env = env_for(workdir, {})
        app = prepare(env, args.goldens, args.calls, offline=True)
        base = f"http://127.0.0.1:{args.port}"
        procs = [start_gunicorn(env, args.port), *workers(env, count)]
        try:
            wait_until_up(base)
            opener, jar = sign_in(base)
            opener.open(f"{base}/apps/{app}/").read()
            wall, data = run_all(opener, jar, base, app, {})
            times[count] = wall
            print(f"offline, {count} worker(s): {wall:.2f} s ({data['status']})")
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                proc.wait(20)
    print(f"  ratio two / one {times[2] / times[1]:.3f}x  (acceptance: <= 0.65x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--goldens", type=int, default=28)
    parser.add_argument("--delay", type=float, default=0.5)
    parser.add_argument("--calls", type=int, default=2, help="slow tool calls per golden")
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8768")))
    parser.add_argument("--skip-live", action="store_true")
    parser.add_argument("--skip-offline", action="store_true")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores; {versions()}")
    if not args.skip_live:
        live(args)
    if not args.skip_offline:
        offline(args)


if __name__ == "__main__":
    main()
