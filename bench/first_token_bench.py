"""A live run's first streamed token: the page against the raw SDK (issue 31).

A loopback model server (tests/llm_server.py) answers every chat completion as a stream
whose first byte leaves after a fixed delay (``--delay``, default 0.5 s: a real model's
time to first token). Measured in alternation, ``--rounds`` times each:

- **raw**: the openai SDK (a client made once, warm) asks the server with ``stream=True``;
  the time until its first chunk with text;
- **page**: what the designer does: a POST of Run live (``/apps/A/agents/B/simulate``,
  through gunicorn and the real URL conf), answered with the job's fragment; a real
  ``manage.py worker`` process takes the job from the queue and runs it; the time from
  the POST until the job's ``current`` (``/api/jobs/ID/``, read every 5 ms) first holds
  text.

With ``--as-the-page``, the page's time is instead when the fragment, polled as the
designer's htmx polls it (its own ``hx-get`` after its own delay), first shows the text.

Prints the median of each and their ratio (the acceptance: page <= 1.5 x raw), the
queue's part (the job's created_at -> started_at), the machine's load and the versions.
The database is a throwaway SQLite unless DATABASE_URL names one (PostgreSQL: the worker
is woken by LISTEN/NOTIFY). Run on purpose: .venv/bin/python bench/first_token_bench.py
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from datetime import datetime

from web_server import PY, ROOT, env_for, sign_in, start_gunicorn, wait_until_up

sys.path.insert(0, str(ROOT))
from tests.llm_server import ModelServer, openai_stream_text

KEY = "sk-bench-first-token"
AS_THE_PAGE = "--as-the-page" in sys.argv  # poll the fragment as htmx does, not the API
ARRIVED: list[float] = []  # when the model server got the page's run's first request
SETUP = """
from agents.models import AgentApp, Scenario
app = AgentApp.objects.get(name="Bank demo")
scenario = Scenario.objects.filter(agent__app=app, name="Balance question").get()
print(app.pk, scenario.agent_id, scenario.pk)
"""


def raw_first_token(client, model: str) -> float:
    start = time.perf_counter()
    stream = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "Hi"}], stream=True
    )
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            elapsed = time.perf_counter() - start
            stream.close()
            return elapsed
    raise RuntimeError("the stream carried no text")


def page_first_token(opener, jar, base: str, app: int, agent: int, scenario: int) -> tuple:
    token = next(c.value for c in jar if c.name == "csrftoken")
    form = urllib.parse.urlencode(
        {"scenario": scenario, "live": "1", "model": "loop", "csrfmiddlewaretoken": token}
    ).encode()
    request = urllib.request.Request(
        f"{base}/apps/{app}/agents/{agent}/simulate",
        data=form,
        headers={"HX-Request": "true", "X-CSRFToken": token, "Referer": base + "/"},
    )
    ARRIVED.clear()
    wall = time.time()
    start = time.perf_counter()
    page = opener.open(request).read().decode()
    answered = time.perf_counter() - start
    job = re.search(r"live-jobs/([0-9a-f-]{36})", page).group(1)
    # One or the other: the API read every 5 ms (the job's `current`), or the fragment as
    # the designer's htmx polls it.
    seen = elapsed = float("nan")
    if AS_THE_PAGE:
        seen = _as_the_page_polls(opener, base, page, start)
    while not AS_THE_PAGE:
        data = json.loads(opener.open(f"{base}/api/jobs/{job}/").read())
        said = [i.get("text") for i in (data.get("result") or {}).get("scenarios") or []]
        if data["current"] or any(said):  # the text streaming now, or a finished call's
            elapsed = time.perf_counter() - start
            break
        if data["status"] not in ("queued", "running"):
            raise RuntimeError(f"the job ended without text: {data['status']} {data['error']}")
        time.sleep(0.005)
    data = json.loads(opener.open(f"{base}/api/jobs/{job}/").read())
    while data["status"] in ("queued", "running"):  # the next round starts on an idle worker
        time.sleep(0.05)
        data = json.loads(opener.open(f"{base}/api/jobs/{job}/").read())
    started = datetime.fromisoformat(data["started_at"].replace("Z", "+00:00"))
    asked = ARRIVED[0] - start if ARRIVED else float("nan")
    return elapsed, started.timestamp() - wall, answered, asked, seen


def _as_the_page_polls(opener, base: str, fragment: str, start: float) -> float:
    """The fragment polled as htmx polls it (its own ``hx-get`` after its ``delay``) until
    it shows the model's text: when the designer's reader sees the first token."""
    while "Your balance" not in fragment:
        url = re.search(r'hx-get="([^"]*live-jobs/[^"]+)"', fragment)
        if url is None:
            raise RuntimeError("the live fragment stopped polling without the model's text")
        delay = int(re.search(r"load delay:(\d+)ms", fragment).group(1))
        time.sleep(delay / 1000)
        fragment = (
            opener.open(urllib.request.Request(base + url.group(1), headers={"HX-Request": "true"}))
            .read()
            .decode()
        )
    return time.perf_counter() - start


def versions() -> str:
    import django
    import openai

    python = sys.version.split()[0]
    return f"Python {python}, Django {django.get_version()}, openai {openai.__version__}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=0.5, help="seconds to the first byte")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--as-the-page", action="store_true", help="also poll as htmx does")
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8767")))
    args = parser.parse_args()

    server = ModelServer(strict=False)
    server.answer = lambda seen: openai_stream_text("Your balance", " is 1,250 EUR.")

    def hold(seen) -> None:
        ARRIVED.append(time.perf_counter())
        time.sleep(args.delay)

    server.before_answer = hold
    workdir = tempfile.mkdtemp(prefix="statecraft-first-token-")
    models = {
        "loop": {
            "kind": "openai",
            "model": "bench-model",
            "base_url": f"{server.url}/v1",
            "api_key_env": "BENCH_KEY",
        }
    }
    env = env_for(workdir, {"STATECRAFT_MODELS": json.dumps(models), "BENCH_KEY": KEY})
    manage = [PY, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "--no-input"], env=env, check=True, capture_output=True)
    subprocess.run([*manage, "load_demo"], env=env, check=True, capture_output=True)
    out = subprocess.run(
        [*manage, "shell", "-c", SETUP], env=env, check=True, capture_output=True, text=True
    ).stdout.split()
    app, agent, scenario = (int(x) for x in out[-3:])
    base = f"http://127.0.0.1:{args.port}"
    procs = [start_gunicorn(env, args.port)]
    procs.append(
        subprocess.Popen(
            [*manage, "worker"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    )
    try:
        wait_until_up(base)
        opener, jar = sign_in(base)
        opener.open(f"{base}/apps/{app}/").read()  # the csrftoken cookie
        import openai

        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=KEY, max_retries=0)
        raw_first_token(client, "bench-model")  # warm: the SDK's imports, the connection
        page_first_token(opener, jar, base, app, agent, scenario)  # warm: the worker's
        raws, pages, queued, posts, asks, shown = [], [], [], [], [], []
        for _ in range(args.rounds):
            raws.append(raw_first_token(client, "bench-model"))
            elapsed, waited, answered, asked, seen = page_first_token(
                opener, jar, base, app, agent, scenario
            )
            pages.append(elapsed)
            queued.append(waited)
            posts.append(answered)
            asks.append(asked)
            shown.append(seen)
        raw = statistics.median(raws)
        chosen = shown if AS_THE_PAGE else pages
        page = statistics.median(chosen)
        print(f"first byte delay {args.delay:.2f} s, {args.rounds} rounds; {versions()}")
        print(
            f"load average {os.getloadavg()[0]:.2f}; database {env['DATABASE_URL'].split(':')[0]}"
        )
        print(f"raw SDK first token   median {raw * 1000:7.1f} ms  (min {min(raws) * 1000:.1f})")
        what = "page (htmx polls)  " if AS_THE_PAGE else "page (job current) "
        print(f"{what}   median {page * 1000:7.1f} ms  (min {min(chosen) * 1000:.1f})")
        print(f"  the POST answered   median {statistics.median(posts) * 1000:7.1f} ms")
        print(f"  the job started at  median {statistics.median(queued) * 1000:7.1f} ms")
        print(f"  the model asked at  median {statistics.median(asks) * 1000:7.1f} ms")
        print(f"ratio page / raw      {page / raw:.2f}x  (acceptance: <= 1.5x)")
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(10)
        server.close()


if __name__ == "__main__":
    main()
