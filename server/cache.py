"""A Redis cache that degrades instead of failing (docs/operations/production.md).

Redis holds what can be rebuilt: each app's spec and evaluation memos, the designer's
panes, the session cache in front of the database (`cached_db`). When Redis is away,
`ForgivingRedisCache` answers as an empty cache (a read misses, a write is dropped, both
logged once per outage) instead of raising into the request: pages render from the
database, sessions are read from their rows, nothing answers 500. After an error it does
not ask Redis again for ``CACHE_RETRY_SECONDS`` (5 s), so an outage costs one failed
connection per process and interval, not one per cache call.

Two calls stay strict, for the callers that must know: `incr` (the rate limiter counts in
the database while Redis is away, server/ratelimit.py) and `ping` (`/healthz`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.redis import RedisCache

from agents.core.defaults import DEFAULTS

logger = logging.getLogger("designer.cache")


class ForgivingRedisCache(RedisCache):
    """Django's RedisCache, answering as an empty cache while Redis is unreachable."""

    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._down_until = 0.0
        self._lock = threading.Lock()

    # The outage's state ---------------------------------------------------------

    @property
    def available(self) -> bool:
        """False for ``CACHE_RETRY_SECONDS`` after a failed call."""
        return time.monotonic() >= self._down_until

    def _failed(self, exc: Exception) -> None:
        with self._lock:
            first = self.available
            self._down_until = time.monotonic() + float(
                getattr(settings, "CACHE_RETRY_SECONDS", DEFAULTS["CACHE_RETRY_SECONDS"])
            )
        if first:
            logger.warning("cache: Redis is unreachable (%s); serving without it", exc)

    def _forgive(self, call: Callable[[], Any], fallback: Any) -> Any:
        if not self.available:
            return fallback
        try:
            return call()
        except Exception as exc:  # redis' ConnectionError, TimeoutError, a refused socket
            if not _is_outage(exc):
                raise
            self._failed(exc)
            return fallback

    # Strict: the callers handle the error ------------------------------------

    def ping(self) -> bool:
        """Ask Redis (raises when it is away): `/healthz`."""
        client = self._cache.get_client(write=True)
        ok = bool(client.ping())
        self._down_until = 0.0
        return ok

    def incr(self, key: Any, delta: int = 1, version: Any = None) -> int:
        if not self.available:
            raise CacheUnavailable("Redis is unreachable")
        try:
            return super().incr(key, delta, version)
        except Exception as exc:
            if not _is_outage(exc):
                raise
            self._failed(exc)
            raise CacheUnavailable(str(exc)) from exc

    # Forgiving: an outage is a miss --------------------------------------------

    def add(
        self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: Any = None
    ) -> bool:
        return self._forgive(
            lambda: super(ForgivingRedisCache, self).add(key, value, timeout, version), False
        )

    def get(self, key: Any, default: Any = None, version: Any = None) -> Any:
        return self._forgive(
            lambda: super(ForgivingRedisCache, self).get(key, default, version), default
        )

    def set(
        self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: Any = None
    ) -> None:
        self._forgive(
            lambda: super(ForgivingRedisCache, self).set(key, value, timeout, version), None
        )

    def touch(self, key: Any, timeout: Any = DEFAULT_TIMEOUT, version: Any = None) -> bool:
        return self._forgive(
            lambda: super(ForgivingRedisCache, self).touch(key, timeout, version), False
        )

    def delete(self, key: Any, version: Any = None) -> bool:
        return self._forgive(lambda: super(ForgivingRedisCache, self).delete(key, version), False)

    def get_many(self, keys: Any, version: Any = None) -> dict[Any, Any]:
        return self._forgive(lambda: super(ForgivingRedisCache, self).get_many(keys, version), {})

    def has_key(self, key: Any, version: Any = None) -> bool:
        return self._forgive(lambda: super(ForgivingRedisCache, self).has_key(key, version), False)

    def set_many(self, data: Any, timeout: Any = DEFAULT_TIMEOUT, version: Any = None) -> list[Any]:
        return self._forgive(
            lambda: super(ForgivingRedisCache, self).set_many(data, timeout, version), list(data)
        )

    def delete_many(self, keys: Any, version: Any = None) -> None:
        self._forgive(lambda: super(ForgivingRedisCache, self).delete_many(keys, version), None)

    def clear(self) -> None:
        self._forgive(lambda: super(ForgivingRedisCache, self).clear(), None)


class CacheUnavailable(Exception):
    """The cache's Redis is unreachable (raised by the strict calls)."""


def _is_outage(exc: Exception) -> bool:
    """Redis unreachable or timing out (not a programming error such as a bad key)."""
    try:
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import TimeoutError as RedisTimeoutError
    except ImportError:  # pragma: no cover - redis is installed with the app
        return isinstance(exc, OSError)
    return isinstance(exc, RedisConnectionError | RedisTimeoutError | OSError)
