"""The session clock: the code's ``datetime``/``time`` read the simulated moment.

Standard library only: the session child loads it beside ``runner.py``; the host reads
:data:`CLOCK_KEY` as ``agents.sandbox.clock``.
"""

from __future__ import annotations

# The key of ``context_values`` that carries the session clock (an ISO date-time): taken
# out before the code's ``context`` is built.
CLOCK_KEY = "__session_now__"


def freeze_clock(sandbox, now):
    """Make the code's clock read `now` (an ISO date-time; without an offset, UTC):
    ``datetime.date.today()``, ``datetime.datetime.now()``/``today()``/``utcnow()``,
    ``time.time()``/``time_ns()``, ``time.localtime()``/``gmtime()``/``ctime()``/
    ``asctime()``/``strftime(format)`` without a time, and the interval clocks
    (``monotonic``, ``perf_counter``, ``process_time``, ``thread_time`` and their
    ``_ns``). Only the call process's module proxies change (it is a fork of its own),
    so the host and other calls keep the real clock. The clock stands
    still during the call: the simulation is deterministic."""
    import datetime as real

    moment = real.datetime.fromisoformat(now)
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=real.UTC)
    wall = moment.replace(tzinfo=None)  # the local time the session lives in
    stamp = aware.timestamp()

    class date(real.date):
        @classmethod
        def today(cls):
            return cls(wall.year, wall.month, wall.day)

    class datetime(real.datetime):
        @classmethod
        def now(cls, tz=None):
            value = wall if tz is None else aware.astimezone(tz)
            return cls(
                value.year, value.month, value.day, value.hour, value.minute, value.second,
                value.microsecond, tzinfo=value.tzinfo,
            )  # fmt: skip

        @classmethod
        def today(cls):
            return cls.now()

        @classmethod
        def utcnow(cls):
            return cls.now(real.UTC).replace(tzinfo=None)

    for cls in (date, datetime):
        cls.__module__ = "datetime"
    modules = sandbox.modules
    proxy = type(modules["datetime"])  # policy.SandboxModule (not imported: the host loads this)
    attributes = dict(modules["datetime"].__dict__)
    attributes.pop("_SandboxModule__name", None)
    attributes.update(date=date, datetime=datetime)
    modules["datetime"] = proxy("datetime", attributes)
    attributes = dict(modules["time"].__dict__)
    attributes.pop("_SandboxModule__name", None)
    import time as real_time

    nanoseconds = int(stamp * 1_000_000_000)
    wall_struct = real_time.gmtime(wall.replace(tzinfo=real.UTC).timestamp())
    utc_struct = real_time.gmtime(stamp)

    def now_or(default):
        return lambda t=None: default if t is None else real_time.gmtime(t)

    def strftime(format, t=None):
        return real_time.strftime(format, wall_struct if t is None else t)

    def asctime(t=None):
        return real_time.asctime(wall_struct if t is None else t)

    def ctime(secs=None):
        return real_time.asctime(wall_struct if secs is None else real_time.gmtime(secs))

    attributes.update(
        time=lambda: stamp,
        time_ns=lambda: nanoseconds,
        localtime=now_or(wall_struct),
        gmtime=now_or(utc_struct),
        strftime=strftime,
        asctime=asctime,
        ctime=ctime,
    )
    for name in ("monotonic", "perf_counter", "process_time", "thread_time"):
        attributes[name] = lambda: stamp
        attributes[f"{name}_ns"] = lambda: nanoseconds
    modules["time"] = proxy("time", attributes)
