"""What code draws by chance is the same in every session child and every replay (issue 30):
``random`` (seeded per call), ``uuid``, ``random.Random()``/``SystemRandom``, the order a
set of strings iterates in and ``hash()`` (a fixed PYTHONHASHSEED), and the whole clock
when the session has one."""

from __future__ import annotations

import subprocess
import sys

from agents.core.simulate import CodeCall
from agents.sandbox.code_runner import sandbox_runner
from agents.sandbox.oneshot import CHILD_ENV

DRAWS = '''
import random
import time
import uuid


def draws(word: str = "x") -> dict:
    """Everything a call can draw by chance."""
    own = random.Random()
    random.seed()
    return {
        "uuid4": str(uuid.uuid4()),
        "uuid1": str(uuid.uuid1()),
        "random": random.random(),
        "own": own.random(),
        "system": random.SystemRandom().randint(0, 10**9),
        "set": list({"guest_name", "party_size", "selected_time", "date", "phone", word}),
        "hash": hash("bella notte"),
        "monotonic": time.monotonic(),
        "perf": time.perf_counter_ns(),
        "stamp": time.strftime("%Y-%m-%d %H:%M"),
        "local": list(time.localtime())[:5],
    }
'''


def draw(now: str = "2026-06-01T12:00:00", word: str = "x") -> dict:
    run = sandbox_runner(memoise=False)
    call = CodeCall(
        code=DRAWS,
        entry="draws",
        kind="tool",
        args={"word": word},
        state={},
        filename="<t>",
        now=now,
    )
    result = run(call)
    assert result.ok, result.error
    return result.return_value


def test_the_same_call_draws_the_same_and_another_call_draws_otherwise() -> None:
    first, again = draw(), draw()
    assert first == again
    other = draw(word="y")
    assert other["uuid4"] != first["uuid4"] and other["random"] != first["random"]
    assert first["uuid4"][14] == "4" and first["uuid1"][14] == "1"  # the UUIDs' versions


def test_the_clock_stands_still_in_every_function_that_reads_it() -> None:
    drawn = draw("2026-06-01T12:00:00")
    assert drawn["stamp"] == "2026-06-01 12:00" and drawn["local"] == [2026, 6, 1, 12, 0]
    assert drawn["monotonic"] == 1780315200.0 and drawn["perf"] == 1780315200 * 10**9


def test_sets_of_text_iterate_as_in_any_process_with_the_fixed_hash_seed() -> None:
    """A fresh interpreter with the sandbox's environment orders the set and hashes the
    text as the sandbox did: the order does not depend on which process ran the call."""
    script = (
        'word = "x";'
        'print(list({"guest_name", "party_size", "selected_time", "date", "phone", word}));'
        'print(hash("bella notte"))'
    )
    out = subprocess.run(
        [sys.executable, "-c", script], env=dict(CHILD_ENV), capture_output=True, text=True
    ).stdout.splitlines()
    drawn = draw()
    assert out == [repr(drawn["set"]), str(drawn["hash"])]
