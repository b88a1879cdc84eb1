"""When a failed model call is asked again, and how long to wait first.

One policy for every protocol, the OpenAI SDK's own (``openai._base_client``), counted here
because the SDKs' own retries are off (google-genai's would not honour ``Retry-After``, and
neither SDK could tell how many attempts a call took, nor wait on an injected clock):

- a 408, 409, 429 or 5xx answer, or a connection error, is asked again, up to the
  endpoint's ``max_retries`` times (attempts = 1 + retries; ``ModelAnswer.retries`` counts
  them exactly); a timeout is not (it already waited the call's ``timeout``);
- the server's ``Retry-After`` (or ``retry-after-ms``; seconds, or an HTTP date) is the
  wait when it asks for at most ``MAX_RETRY_AFTER`` seconds; a longer one is not waited
  for: the call fails at once (a run has a time cap of its own);
- otherwise the wait is ``backoff * 2**n`` seconds (n = retries so far), at most
  ``MAX_DELAY``, times a jitter in ``(0.75, 1]`` (so clients that failed together do not
  come back together);
- the wait goes through the injected `sleeper` in slices of at most ``WAIT_SLICE`` seconds,
  asking the run's watch (``agents.core.model.call_watch``: its time cap, a Cancel)
  between them.
"""

from __future__ import annotations

import email.utils
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

INITIAL_DELAY = 0.5
MAX_DELAY = 8.0
MAX_RETRY_AFTER = 120.0
WAIT_SLICE = 1.0

Sleeper = Callable[[float], None]


def retry_after(headers: Any) -> float | None:
    """The wait a response's headers ask for, in seconds (None when they ask none)."""
    if headers is None:
        return None
    try:
        return float(headers.get("retry-after-ms")) / 1000
    except (TypeError, ValueError):
        pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        pass
    try:
        when = email.utils.parsedate_tz(value)
        return None if when is None else float(email.utils.mktime_tz(when) - time.time())
    except (TypeError, ValueError, OverflowError):
        return None


def retry_after_of(exc: BaseException) -> float | None:
    """The ``Retry-After`` of the HTTP response an SDK's exception carries, if any."""
    response = getattr(exc, "response", None)
    return retry_after(getattr(response, "headers", None))


@dataclass
class RetryPolicy:
    """How many times a call is asked again (`max_retries`) and how long to wait first."""

    max_retries: int
    backoff: float = INITIAL_DELAY
    max_delay: float = MAX_DELAY
    jitter: Callable[[], float] = field(default=random.random)

    def may_retry(self, attempt: int, asked_wait: float | None) -> bool:
        """Whether retry number `attempt` + 1 is allowed (a wait asked for too long: no)."""
        if attempt >= self.max_retries:
            return False
        return asked_wait is None or not math.isfinite(asked_wait) or asked_wait <= MAX_RETRY_AFTER

    def delay(self, attempt: int, asked_wait: float | None) -> float:
        """The seconds to wait before retry number `attempt` + 1."""
        if (
            asked_wait is not None
            and math.isfinite(asked_wait)
            and 0 < asked_wait <= MAX_RETRY_AFTER
        ):
            return asked_wait
        base = min(self.backoff * 2.0 ** min(attempt, 1000), self.max_delay)
        return max(0.0, base * (1 - 0.25 * self.jitter()))


def wait(seconds: float, sleeper: Sleeper, watch: Callable[[], Any] | None) -> Any:
    """Sleep `seconds` in slices, asking `watch` between them; what it said to stop for
    (then the wait ends at once), else None."""
    left = seconds
    while left > 0:
        piece = min(left, WAIT_SLICE)
        sleeper(piece)
        left -= piece
        stop = watch() if watch is not None else None
        if stop:
            return stop
    return None
