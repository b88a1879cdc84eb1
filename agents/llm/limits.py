"""What an endpoint lets its callers do at once: the operator's limits per model, and a
backoff shared by every caller after a 429.

Each attempt of a model call (``agents.llm.registry.Client``) passes `EndpointGate.enter`
before its HTTP request and `leave` after its answer is read. The gate of an endpoint is
one per process (`gate_for`: keyed by the endpoint's name, base URL and model), shared by
every thread that calls it — several goldens run at once in one worker — and waits while:

- ``max_concurrent`` requests are in flight (0: no limit): a thread waits for one to end
  (a condition variable: woken by `leave`, not by polling);
- ``requests_per_minute`` requests started in the last 60 seconds (None: no limit);
- ``tokens_per_minute`` tokens (in + out) were answered in the last 60 seconds (None: no
  limit); a call is let in while the last minute's tokens are under the limit, and its
  own tokens count when it answers (nobody knows them before);
- the endpoint asked every caller to wait: after a 429, the wait it asked for
  (``Retry-After``, else the retry policy's backoff) is the endpoint's *not before* time,
  and every caller's next request waits for it, not only the one that got the 429.

The concurrency and per-minute limits count in the process: with W worker processes, an
endpoint sees at most W times ``max_concurrent`` requests at once (docs/operations: divide the
provider's quota by the workers). The *not before* time lives in the cache (``CACHES``):
with Redis (``CACHE_URL``), one 429 slows every worker on every machine (one cache read
per attempt, against a model call's seconds); with the per-process cache, the threads of
one process. The cache away, each caller honours only its own 429.

Every wait goes in slices through the caller's `sleeper` (or the condition's timed wait),
asking the run's watch (its time cap, a Cancel) between them: what the watch said to stop
for is returned and the call ends with it.
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agents.llm.retries import MAX_RETRY_AFTER, WAIT_SLICE, Sleeper, wait

logger = logging.getLogger("agents.llm")

WINDOW = 60.0  # seconds of the per-minute limits


@dataclass(frozen=True)
class Limits:
    """An endpoint's limits (``agents.llm.endpoints.Endpoint``'s fields)."""

    max_concurrent: int = 0
    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None


def limits_of(endpoint: Any) -> Limits:
    return Limits(
        max_concurrent=int(getattr(endpoint, "max_concurrent", 0) or 0),
        requests_per_minute=getattr(endpoint, "requests_per_minute", None) or None,
        tokens_per_minute=getattr(endpoint, "tokens_per_minute", None) or None,
    )


def _shared() -> Any:
    """The cache the *not before* times live in; None without Django's settings."""
    try:
        from django.core.cache import caches

        return caches["default"]
    except Exception:  # no settings (a script), or no such cache
        return None


class EndpointGate:
    """One endpoint's limits and shared backoff in this process (see the module docstring)."""

    def __init__(self, key: str):
        self.key = key
        self.cache_key = f"llm:not-before:{key}"
        self.condition = threading.Condition()
        self.in_flight = 0
        self.most_in_flight = 0
        self.starts: deque[float] = deque()  # when each request of the window started
        self.tokens: deque[tuple[float, int]] = deque()  # (when answered, tokens)
        self.not_before = 0.0  # wall-clock seconds; the cache's when it is shared

    # ------------------------------------------------------------- the shared backoff

    def shared_not_before(self) -> float:
        """The endpoint's *not before* (``time.time()`` seconds; 0 for none)."""
        cache = _shared()
        if cache is not None:
            try:
                value = cache.get(self.cache_key)
            except Exception:  # Redis away: this process's own
                value = None
            if isinstance(value, int | float) and math.isfinite(value):
                with self.condition:
                    self.not_before = max(self.not_before, float(value))
        return self.not_before

    def back_off(self, seconds: float) -> float:
        """A 429 asked every caller to wait `seconds`: the endpoint's *not before* moves
        to then (never earlier). Returns that time when this call set it (the caller
        waits `seconds` itself), else 0."""
        if not 0 < seconds <= MAX_RETRY_AFTER:
            return 0.0
        target = time.time() + seconds
        if target <= self.shared_not_before():
            return 0.0
        with self.condition:
            self.not_before = max(self.not_before, target)
        cache = _shared()
        if cache is not None:
            # Redis away: this process's threads still share it.
            with contextlib.suppress(Exception):
                cache.set(self.cache_key, target, timeout=math.ceil(seconds) + 1)
        logger.info("model endpoint %s asked for %.1f s: every caller waits", self.key, seconds)
        return target

    # ------------------------------------------------------------- entering, leaving

    def enter(
        self,
        limits: Limits,
        *,
        sleeper: Sleeper,
        clock: Callable[[], float],
        watch: Callable[[], Any] | None,
        waited: set[float],
    ) -> Any:
        """Wait for the endpoint's turn, then count a request in flight; what the watch
        said to stop for (nothing is counted then), else None. `waited` holds the *not
        before* times this call already waited for (its own 429's wait among them)."""
        while True:
            target = self.shared_not_before()
            left = target - time.time()
            if left > 0 and target not in waited:
                waited.add(target)
                stop = wait(min(left, MAX_RETRY_AFTER), sleeper, watch)
                if stop:
                    return stop
                continue
            delay = self._window_wait(limits, clock)
            if delay > 0:
                stop = wait(delay, sleeper, watch)
                if stop:
                    return stop
                continue
            with self.condition:
                if limits.max_concurrent and self.in_flight >= limits.max_concurrent:
                    self.condition.wait(WAIT_SLICE)
                    stop = watch() if watch is not None else None
                    if stop:
                        return stop
                    continue
                if self._window_wait(limits, clock) > 0:
                    continue  # another thread took the window's room meanwhile
                self.in_flight += 1
                self.most_in_flight = max(self.most_in_flight, self.in_flight)
                if limits.requests_per_minute:
                    self.starts.append(clock())
                return None

    def leave(self, tokens: int, clock: Callable[[], float]) -> None:
        """A request's answer was read (or it failed): its place is free; its `tokens`
        count in the tokens-per-minute window."""
        with self.condition:
            self.in_flight = max(0, self.in_flight - 1)
            if tokens > 0:
                self.tokens.append((clock(), tokens))
            self.condition.notify()

    def _window_wait(self, limits: Limits, clock: Callable[[], float]) -> float:
        """Seconds until the per-minute windows have room (0: now)."""
        with self.condition:
            now = clock()
            while self.starts and self.starts[0] <= now - WINDOW:
                self.starts.popleft()
            while self.tokens and self.tokens[0][0] <= now - WINDOW:
                self.tokens.popleft()
            delay = 0.0
            rpm = limits.requests_per_minute
            if rpm and len(self.starts) >= rpm:
                delay = self.starts[len(self.starts) - rpm] + WINDOW - now
            tpm = limits.tokens_per_minute
            if tpm and sum(n for _, n in self.tokens) >= tpm:
                spent, out = sum(n for _, n in self.tokens), 0.0
                for when, count in self.tokens:  # until enough leave the window
                    spent -= count
                    out = when + WINDOW - now
                    if spent < tpm:
                        break
                delay = max(delay, out)
            return max(delay, 0.0)


_gates: dict[str, EndpointGate] = {}
_gates_lock = threading.Lock()


def gate_key(endpoint: Any) -> str:
    return f"{endpoint.name}|{endpoint.base_url}|{endpoint.model}"


def gate_for(endpoint: Any) -> EndpointGate:
    """The process's gate of `endpoint` (made at its first call)."""
    key = gate_key(endpoint)
    with _gates_lock:
        gate = _gates.get(key)
        if gate is None:
            gate = _gates[key] = EndpointGate(key)
        return gate
