"""Rate limits shared by every worker: the one helper behind every throttle of the app.

A rate is "N/period" (`30/m`, `5/15m`, `1000/h`); the scopes and their rates are the
`RATE_LIMITS` setting. Counts live in fixed windows of the period, keyed by scope and by
who asks (the user, else the client address). `now` is the clock: tests replace it to
move time forward instead of sleeping.

Where the counts live is `RATE_LIMIT_STORE`: "database" (the default without Redis: one
row per window, incremented with an atomic UPDATE, so several gunicorn workers count
together) or "cache" (Redis, whose INCR is atomic across workers; a per-process cache
would let each worker count on its own).

Redis away (the "cache" store unreachable): every scope counts in the database meanwhile
(the same rows as the "database" store), so no limit fails open (sign-in guessing stays
limited) and none fails closed (no one is locked out for an outage that is not theirs).
Counts start again in the other store when it switches, at most one window's worth.
"""

from __future__ import annotations

import hashlib
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any

from django.conf import settings
from django.core.cache import caches
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.http import HttpRequest, HttpResponse
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from agents.core.defaults import DEFAULTS

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_RATE = re.compile(r"^\s*(\d+)\s*/\s*(\d*)\s*([smhd])\s*$")
_UNIT_WORDS = {
    1: _("%(limit)s a second"),
    60: _("%(limit)s a minute"),
    3600: _("%(limit)s an hour"),
    86400: _("%(limit)s a day"),
}
# What a limit counts (the designer's and the import's rate_limited views), as words.
_WHAT = {
    "imports": _("imports"),
    "previews": _("previews"),
    "example values": _("example values"),
    "simulations": _("simulations"),
}


def now() -> float:
    """The clock of every window (tests monkeypatch `server.ratelimit.now`)."""
    return time.time()


@dataclass(frozen=True)
class Rate:
    limit: int
    period: int  # seconds

    @classmethod
    def parse(cls, text: str) -> Rate:
        match = _RATE.match(text)
        if not match:
            raise ImproperlyConfigured(
                f"Rate {text!r} is not N/period: write e.g. 30/m, 5/15m, 1000/h or 10/d."
            )
        count, multiple, unit = match.groups()
        return cls(limit=int(count), period=int(multiple or 1) * _UNITS[unit])

    def describe(self) -> str:
        """'300 a minute', '5 per 15 minutes'."""
        if self.period in _UNIT_WORDS:
            return _UNIT_WORDS[self.period] % {"limit": self.limit}
        if self.period % 60 == 0:
            return gettext("%(limit)s per %(minutes)s minutes") % {
                "limit": self.limit,
                "minutes": self.period // 60,
            }
        return gettext("%(limit)s per %(seconds)s seconds") % {
            "limit": self.limit,
            "seconds": self.period,
        }


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    count: int
    rate: Rate
    retry_after: int  # seconds until the current window ends


def rate_for(scope: str) -> Rate:
    rates = getattr(settings, "RATE_LIMITS", {})
    if scope not in rates:
        raise ImproperlyConfigured(f"RATE_LIMITS has no rate for the scope {scope!r}.")
    return Rate.parse(rates[scope])


def client_address(request: HttpRequest) -> str:
    """The client's address: REMOTE_ADDR, or X-Forwarded-For behind NUM_PROXIES proxies."""
    proxies = getattr(settings, "NUM_PROXIES", DEFAULTS["NUM_PROXIES"]) or 0
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if proxies and forwarded:
        hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
        if hops:
            return hops[-min(proxies, len(hops))]
    return request.META.get("REMOTE_ADDR", "") or "unknown"


def requester_key(request: HttpRequest) -> str:
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return f"user:{user.pk}"
    return f"address:{client_address(request)}"


def _window(rate: Rate) -> tuple[int, int]:
    moment = now()
    window = int(moment // rate.period)
    return window, max(1, math.ceil((window + 1) * rate.period - moment))


def _key(scope: str, who: str, window: int) -> str:
    return f"ratelimit:{scope}:{who}:{window}"


def _cache() -> Any:
    return caches[getattr(settings, "RATE_LIMIT_CACHE", "default")]


def _in_database() -> bool:
    return getattr(settings, "RATE_LIMIT_STORE", "database") == "database"


def _row_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def _db_hit(key: str, rate: Rate) -> int:
    """One atomic statement on SQLite and PostgreSQL alike: insert the window's row or add
    one to it, and read the count back (a constant number of queries per request)."""
    from agents.models import RateLimitCount

    quote = connection.ops.quote_name
    table, key_, count, expires = (
        quote(name) for name in (RateLimitCount._meta.db_table, "key", "count", "expires_at")
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} ({key_}, {count}, {expires}) VALUES (%s, 1, %s) "
            f"ON CONFLICT ({key_}) DO UPDATE SET {count} = {table}.{count} + 1 "
            f"RETURNING {count}",
            [_row_key(key), now() + rate.period + 1],
        )
        return int(cursor.fetchone()[0])


def purge_expired() -> int:
    """Delete the counts of windows that have ended (`manage.py purge_expired`, daily)."""
    from agents.models import RateLimitCount

    deleted, _ = RateLimitCount.objects.filter(expires_at__lt=now()).delete()
    return deleted


def _db_count(key: str) -> int:
    from agents.models import RateLimitCount

    found = RateLimitCount.objects.filter(key=_row_key(key)).values_list("count", flat=True)
    return found.first() or 0


def hit(scope: str, who: str, rate: Rate | None = None) -> Verdict:
    """Count one request of `who` in `scope`; allowed while the window holds at most the limit."""
    rate = rate or rate_for(scope)
    window, retry_after = _window(rate)
    key = _key(scope, who, window)
    if _in_database():
        return Verdict((count := _db_hit(key, rate)) <= rate.limit, count, rate, retry_after)
    cache = _cache()
    try:
        cache.add(key, 0, timeout=rate.period + 1)
        try:
            count = cache.incr(key)
        except ValueError:  # expired between add and incr (or the add was dropped)
            cache.set(key, 1, timeout=rate.period + 1)
            count = 1
    except Exception as exc:
        if not _cache_outage(exc):
            raise
        count = _db_hit(key, rate)  # Redis away: the database counts meanwhile
    return Verdict(count <= rate.limit, count, rate, retry_after)


def _cache_outage(exc: Exception) -> bool:
    """The cache's Redis unreachable (server.cache.CacheUnavailable, or redis' own
    connection and timeout errors from a plain RedisCache)."""
    from server.cache import CacheUnavailable, _is_outage

    return isinstance(exc, CacheUnavailable) or _is_outage(exc)


def peek(scope: str, who: str, rate: Rate | None = None) -> Verdict:
    """Whether one more would be allowed, without counting it."""
    rate = rate or rate_for(scope)
    window, retry_after = _window(rate)
    key = _key(scope, who, window)
    if _in_database():
        count = _db_count(key)
    else:
        try:
            count = _cache().get(key, 0)
        except Exception as exc:
            if not _cache_outage(exc):
                raise
            count = 0
        if getattr(_cache(), "available", True) is False:
            count = _db_count(key)  # Redis away: the database counts meanwhile
    return Verdict(count < rate.limit, count, rate, retry_after)


def reset(scope: str, who: str, rate: Rate | None = None) -> None:
    from agents.models import RateLimitCount

    rate = rate or rate_for(scope)
    window, _ = _window(rate)
    key = _key(scope, who, window)
    if _in_database():
        RateLimitCount.objects.filter(key=_row_key(key)).delete()
    else:
        _cache().delete(key)


def wait_text(seconds: int) -> str:
    if seconds < 60:
        return ngettext("%(count)s second", "%(count)s seconds", seconds) % {"count": seconds}
    minutes = math.ceil(seconds / 60)
    return ngettext("%(count)s minute", "%(count)s minutes", minutes) % {"count": minutes}


def too_many_response(what: str, verdict: Verdict) -> HttpResponse:
    response = HttpResponse(
        gettext("Too many %(what)s: at most %(rate)s. Try again in %(wait)s.")
        % {
            "what": _WHAT.get(what, what),
            "rate": verdict.rate.describe(),
            "wait": wait_text(verdict.retry_after),
        },
        status=429,
        content_type="text/plain; charset=utf-8",
    )
    response["Retry-After"] = str(verdict.retry_after)
    return response


def rate_limited(
    scope: str, what: str, *, methods: tuple[str, ...] = ()
) -> Callable[[Callable[..., HttpResponse]], Callable]:
    """Decorate a view: each request (of `methods`, default all) counts for the user in
    `scope`; over the rate, a 429 naming the limit and when to retry (`what` names what
    was limited: "previews")."""

    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if methods and request.method not in methods:
                return view(request, *args, **kwargs)
            verdict = hit(scope, requester_key(request))
            if not verdict.allowed:
                return too_many_response(what, verdict)
            return view(request, *args, **kwargs)

        return wrapper

    return decorator


class SimulationsBusyMiddleware:
    """A simulation refused because this process already runs ``SIMULATION_MAX_CONCURRENT``
    of them (`sandbox_door.SimulationsBusy`) answers 429 with the message naming the limit
    and a ``Retry-After``: plain text for the pages (the designer shows it in the panel),
    ``{"detail": ...}`` under /api/. Refused at once, so no thread waits for a slot."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exc: Exception) -> HttpResponse | None:
        from agents.services.sandbox_door import SimulationsBusy

        if not isinstance(exc, SimulationsBusy):
            return None
        from agents.i18n import localize

        message = localize(exc.message)  # in the reader's language
        if request.path.startswith("/api/"):
            from django.http import JsonResponse

            response: HttpResponse = JsonResponse({"detail": message}, status=429)
        else:
            response = HttpResponse(message, status=429, content_type="text/plain; charset=utf-8")
        response["Retry-After"] = str(exc.retry_after)
        return response
