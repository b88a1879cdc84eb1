"""Every operator limit's default, written once (issue 29).

``DEFAULTS`` maps each setting's name to its default value. The Django settings read the
environment through `from_env` (an unset or empty variable is the default, converted to the
default's type); services read a setting through ``agents.services.common.setting``,
which falls back to the same default when a test's settings leave it out; the core's
dataclasses take their defaults from here. ``tests/test_defaults.py`` fails when a default is
written a second time (a literal beside a setting's name in ``getattr(settings, …)`` or
``os.environ.get(…)``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

DEFAULTS: dict[str, Any] = {
    # Databases and caches
    "CONN_MAX_AGE": 60,
    "CACHE_RETRY_SECONDS": 5.0,
    "APP_SPEC_CACHE_SECONDS": 3600,
    "DESIGNER_PANE_CACHE_SECONDS": 3600,
    "NUM_PROXIES": 0,
    # Imports
    "IMPORT_MAX_OBJECTS": 1000,
    "IMPORT_MAX_INSTRUCTIONS_BYTES": 2 * 1024 * 1024,
    "IMPORT_MAX_YAML_BYTES": 512 * 1024,
    "IMPORT_JOB_MIN_BYTES": 256 * 1024,
    "IMPORT_EVALSET_JOB_MIN_CASES": 100,
    # The simulation (one run, in its sandbox)
    "SIMULATION_MAX_STEPS": 300,
    "SIMULATION_MAX_CODE_CALLS": 300,
    "SIMULATION_MAX_SECONDS": 10.0,
    "SIMULATION_MAX_WALL_SECONDS": 20.0,
    "SIMULATION_MAX_CONCURRENT": 2,
    "SANDBOX_POOL_SIZE": 2,
    # Live runs (one run against a model)
    "LIVE_MAX_MODEL_CALLS": 40,
    "LIVE_MAX_CALLS_PER_TURN": 10,
    "LIVE_MAX_TOKENS": 200_000,
    "LIVE_MAX_SECONDS": 120.0,
    "LIVE_MAX_ANSWER_BYTES": 256 * 1024,
    # Jobs
    "JOBS_MAX_ACTIVE_PER_USER": 4,
    "JOBS_MAX_RUNNING_PER_USER": 4,
    "JOBS_YIELD_SECONDS": 1.0,
    "JOBS_MAX_SECONDS": 600.0,
    "JOBS_MAX_CODE_CALLS": 20000,
    "JOBS_MAX_MODEL_CALLS": 1000,
    "JOBS_MAX_TOKENS": 2_000_000,
    "JOBS_HEARTBEAT_SECONDS": 5.0,
    "JOBS_STALE_SECONDS": 60.0,
    "JOBS_MAX_ATTEMPTS": 2,
    "JOBS_REQUEUE_SECONDS": 60.0,
    "JOBS_RETRY_BACKOFF_SECONDS": 5.0,
    "JOBS_DB_RETRY_SECONDS": 30.0,
    "JOBS_PICKUP_SECONDS": 10.0,
    # Evaluation runs
    "EVALUATION_THREADS": 2,
    "EVALUATION_THREADS_LIVE": 8,
    "EVALUATION_EXPLAIN_AT_ONCE": 1,
    "EVALUATION_MAX_REPEAT": 20,
    "EVALUATION_RUNS_KEPT": 200,
}


def from_env(name: str, environ: Mapping[str, str]) -> Any:
    """The setting `name` from the environment: the variable converted to the default's
    type, or the default when it is unset or empty."""
    default = DEFAULTS[name]
    raw = (environ.get(name) or "").strip()
    if not raw:
        return default
    return type(default)(raw)
