"""Per-simulation and per-call cost of the sandbox: session start, then warm calls.

Run: .venv/bin/python bench/sandbox_overhead_bench.py [PROJECT_ROOT]
(PROJECT_ROOT defaults to this checkout; point it at an export of another commit, e.g.
``git archive main | tar -x -C /tmp/main``, to compare before and after under the same
load.) Prints medians of 5 sessions: start + first call, and the mean of 30 warm calls.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

root = sys.argv[1] if len(sys.argv) > 1 else str(Path(__file__).resolve().parent.parent)
sys.path.insert(0, root)

from agents.sandbox import open_session  # noqa: E402

CODE = "def t():\n    return 1\n"


def main() -> None:
    starts, per_call = [], []
    for _ in range(5):
        with open_session() as session:
            started = time.perf_counter()
            session.run(CODE, entry="t", kind="tool")
            starts.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            for _ in range(30):
                session.run(CODE, entry="t", kind="tool")
            per_call.append((time.perf_counter() - started) / 30 * 1000)
    print(
        f"{root}: session start + first call median {statistics.median(starts):.0f} ms, "
        f"per call median {statistics.median(per_call):.1f} ms (best {min(per_call):.1f})"
    )


if __name__ == "__main__":
    main()
