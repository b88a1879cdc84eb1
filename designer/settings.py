"""Settings, read from the environment (12-factor); see docs/operations/configuration.md."""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP
from django.utils.translation import gettext_lazy

from agents.core.defaults import from_env

BASE_DIR = Path(__file__).resolve().parent.parent
# The built documentation site (`make docs`), served at /docs/.
DOCS_SITE_DIR = Path(os.environ.get("DOCS_SITE_DIR") or BASE_DIR / "site")


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


DEBUG = env_bool("DEBUG", default=False)

SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. Set SECRET_KEY to a long random string in production, "
            "or DEBUG=true for local development (which uses a throwaway development key)."
        )
    SECRET_KEY = "django-insecure-statecraft-development-key-do-not-use-in-production"

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]" if DEBUG else "")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    # Django's widget templates, for the project's form renderer (designer.forms).
    "django.forms",
    "django_htmx",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_tasks_db",
    "django_rq",
    "agents",
    "designer",
    # The processes' concerns around the domain (rate limits, sign-in throttling, the
    # workers' RQ class and wake-up): server/, below both web adapters.
    "server",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # The documentation site at /docs/ (static pages, before the app's CSP: designer/docs_site.py).
    "designer.docs_site.DocsSiteMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # The reader's language: the language cookie (the header's switcher), else Accept-Language;
    # then, for a signed-in user, the language they chose (remembered per user).
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "agents.i18n.UserLanguageMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # A simulation over SIMULATION_MAX_CONCURRENT in this process: a 429 naming the limit.
    "server.ratelimit.SimulationsBusyMiddleware",
    # The database restarting, a deadlock, a lock timeout: a 503 with Retry-After, not a 500.
    "designer.errors.TransientErrorMiddleware",
]

ROOT_URLCONF = "designer.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.template.context_processors.i18n",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = "designer.wsgi.application"

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{BASE_DIR / 'db.sqlite3'}",
        conn_max_age=from_env("CONN_MAX_AGE", os.environ),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the preview read while a save writes; a busy timeout instead of "database is locked".
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
    }
    DATABASES["default"]["CONN_MAX_AGE"] = 0

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# The cache holds each app's spec and evaluation memos, keyed by the app's revision (so a
# per-process cache is never stale): per process by default; `CACHE_URL=redis://host:6379/0`
# shares one Redis among the workers. What must be the same on every worker never lives in
# a per-process cache: without Redis, sessions are rows of the database (signing out ends a
# session on every worker) and rate-limit counts are rows too (server/ratelimit.py: one
# atomic UPDATE per request); with Redis, sessions are read from Redis (written through to
# the database) and counts are Redis INCRs. Redis away is not an outage
# (docs/operations/production.md): the cache answers as an empty one (server/cache.py),
# sessions are read from their rows, rate limits count in the database meanwhile.
CACHE_URL = os.environ.get("CACHE_URL", "")
# After a failed call the cache leaves Redis alone this long (one failed connection per
# process and interval during an outage, not one per cache call).
CACHE_RETRY_SECONDS = from_env("CACHE_RETRY_SECONDS", os.environ)
if CACHE_URL.startswith(("redis://", "rediss://", "unix://")):
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    CACHES = {
        "default": {
            "BACKEND": "server.cache.ForgivingRedisCache",
            "LOCATION": CACHE_URL,
            # Seconds, not redis-py's default retries with backoff (up to ~7 s a call).
            "OPTIONS": {
                "socket_connect_timeout": 1.0,
                "socket_timeout": 2.0,
                "retry": Retry(NoBackoff(), 1),
            },
        }
    }
    SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"
    RATE_LIMIT_STORE = "cache"
else:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": "statecraft",
            "OPTIONS": {"MAX_ENTRIES": 20000},
        }
    }
    SESSION_ENGINE = "django.contrib.sessions.backends.db"
    RATE_LIMIT_STORE = "database"
APP_SPEC_CACHE_SECONDS = from_env("APP_SPEC_CACHE_SECONDS", os.environ)
# The designer page's side and editor panes, rendered once per app revision (0: never
# cached, every view renders them; the tests' default, whose ORM writes bump no revision).
DESIGNER_PANE_CACHE_SECONDS = from_env("DESIGNER_PANE_CACHE_SECONDS", os.environ)

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# Sign-in goes through a backend that counts failed passwords per account and per address.
AUTHENTICATION_BACKENDS = ["server.signin.ThrottledModelBackend"]

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "app-list"
LOGOUT_REDIRECT_URL = "login"

# The designer speaks English, French and German (docs/operations/languages.md); URLs are
# the same in every language. The catalogs are locale/<lang>/LC_MESSAGES/django.{po,mo}
# (both committed).
LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("fr", "Français"), ("de", "Deutsch")]
LOCALE_PATHS = [BASE_DIR / "locale"]
LANGUAGE_COOKIE_NAME = "statecraft_language"
LANGUAGE_COOKIE_AGE = 365 * 24 * 3600
LANGUAGE_COOKIE_SAMESITE = "Lax"
# Dates and numbers where a person reads them follow the language (designer/formats/<lang>);
# exports, the API's JSON and stored data never do.
FORMAT_MODULE_PATH = ["designer.formats"]
TIME_ZONE = os.environ.get("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", BASE_DIR / "staticfiles"))
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

# Requests through this many reverse proxies: the client address is then read from
# X-Forwarded-For (per-address sign-in throttling and anonymous API throttling use it).
NUM_PROXIES = from_env("NUM_PROXIES", os.environ)


def rate_limits(defaults: dict[str, str]) -> dict[str, str]:
    """The built-in rates, overridden by RATE_LIMITS="preview=100/m,signin-account=5/15m"."""
    rates = dict(defaults)
    for item in env_list("RATE_LIMITS"):
        scope, _, rate = item.partition("=")
        if scope.strip() not in rates or not rate.strip():
            raise ImproperlyConfigured(
                f"RATE_LIMITS: {item!r} is not scope=rate with a scope among "
                f"{', '.join(sorted(rates))} (e.g. preview=100/m)."
            )
        rates[scope.strip()] = rate.strip()
    return rates


# Requests per user (per address when signed out) and window; see server/ratelimit.py.
RATE_LIMITS = rate_limits(
    {
        "signin-account": "5/15m",  # failed passwords for one username
        "signin-address": "20/15m",  # failed passwords from one client address
        "preview": "300/m",
        "simulate": "60/m",
        "compile": "300/m",
        "import": "30/h",
        "example": "120/m",
        "api-user": "3000/h",  # every API request of a signed-in integrator
        "api-anon": "60/h",  # every API request without credentials
    }
)

REST_FRAMEWORK = {
    # Integrators send `Authorization: Token <key>`; the browser (docs page) uses its
    # session with CSRF. No HTTP Basic: a browser would replay cached credentials on a
    # cross-site form post.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.TokenAuthentication",
    ],
    # JSON only: the browsable API is replaced by the docs page at /api/docs/.
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # DRF's parsers, the JSON one refusing JSON too deep to parse with a 400 (not a 500).
    "DEFAULT_PARSER_CLASSES": [
        "agents.api.parsers.DepthSafeJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_THROTTLE_CLASSES": [
        "agents.api.throttles.APIUserThrottle",
        "agents.api.throttles.APIAnonThrottle",
    ],
    "NUM_PROXIES": NUM_PROXIES or None,
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # `?limit=` capped at 1000 and `?offset=` bounded (past 2**63 it answered 500);
    # OPTIONS describes every view (agents/api/paging.py).
    "DEFAULT_PAGINATION_CLASS": "agents.api.paging.BoundedLimitOffsetPagination",
    "DEFAULT_METADATA_CLASS": "agents.api.paging.SafeMetadata",
    "PAGE_SIZE": 100,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Statecraft API",
    # Translated: /api/schema/ answers in the request's language (Accept-Language, ?lang=).
    "DESCRIPTION": gettext_lazy(
        "Apps, variables, schemas, tools and agents of AI agents; compile and lint."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # The docs page's JavaScript and CSS are served by the app itself (no CDN).
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Several "kind" fields: each choice set gets its own name.
    "ENUM_NAME_OVERRIDES": {
        "ToolKindEnum": "agents.models.ToolKind",
        "UploadKindEnum": [("native", "native"), ("cx", "cx")],
    },
    # The API's ids (agents/api/urls.py IdConverter): integers of at most 18 digits.
    "PATH_CONVERTER_OVERRIDES": {
        "id": {"type": "integer", "minimum": 0, "maximum": 999_999_999_999_999_999}
    },
}

# Production hardening; `manage.py check --deploy` is clean when DEBUG is off.
if not DEBUG:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", default=True)
    SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
    SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "31536000"))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    LANGUAGE_COOKIE_SECURE = True

SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"

# Content-Security-Policy (Django's own middleware): scripts and styles only from the app,
# no inline script or style, no framing, forms post only to the app. JSON data enters
# pages through `json_script` (type="application/json", never executed).
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "font-src": [CSP.SELF],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
}

# Limits of one import (native file or CX ZIP); an import over them is refused, naming them.
# The defaults live with the check (agents/core/limits.py).
IMPORT_MAX_OBJECTS = from_env("IMPORT_MAX_OBJECTS", os.environ)
IMPORT_MAX_INSTRUCTIONS_BYTES = from_env("IMPORT_MAX_INSTRUCTIONS_BYTES", os.environ)
IMPORT_MAX_YAML_BYTES = from_env("IMPORT_MAX_YAML_BYTES", os.environ)
# An upload of at least this many bytes imports as a job (a progress page; the API answers
# 202); smaller ones import in the request. 0: every import is a job.
IMPORT_JOB_MIN_BYTES = from_env("IMPORT_JOB_MIN_BYTES", os.environ)
# An ADK evalset of at least this many eval cases (one scenario each) imports as a job too.
IMPORT_EVALSET_JOB_MIN_CASES = from_env("IMPORT_EVALSET_JOB_MIN_CASES", os.environ)

LOG_LEVEL = os.environ.get("LOG_LEVEL", "INFO").upper()
# The HTTP clients' request lines ("HTTP Request: POST https://…") at DEBUG only: a line per
# model call buries a CI log (`manage.py evaluate --model`), and a base_url may carry
# credentials. LOG_LEVEL=DEBUG shows them.
HTTP_CLIENT_LOG_LEVEL = "DEBUG" if LOG_LEVEL == "DEBUG" else "WARNING"
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # Every line with URL credentials and bearer tokens masked (agents/llm/masking.py).
    "filters": {"redact": {"()": "agents.llm.masking.RedactCredentials"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["redact"]}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        # Refused saves, imports, sandbox start and code-runner failures: what an operator needs.
        "agents": {"level": LOG_LEVEL, "propagate": True},
        # Django's own default config gives "django" a console handler of its own: without
        # this, every line it logs (the reloader's banner, request errors) printed twice.
        "django": {"handlers": ["console"], "level": "INFO", "propagate": False},
        "httpx": {"level": HTTP_CLIENT_LOG_LEVEL},
        "httpcore": {"level": HTTP_CLIENT_LOG_LEVEL},
    },
}

# The sandbox and bounded simulations (docs/designer/sandbox.md).
# Protections production refuses to run tool/callback code without (the system check
# `statecraft.W001` lists every missing one); empty under DEBUG so a laptop without
# bubblewrap still simulates.
SANDBOX_REQUIRED_PROTECTIONS = env_list(
    "SANDBOX_REQUIRED_PROTECTIONS",
    ""
    if DEBUG
    else "pid_namespace,network_namespace,mount_namespace,readonly_minimal_root,"
    "unique_uid,no_new_privs,seccomp",
)
SIMULATION_MAX_STEPS = from_env("SIMULATION_MAX_STEPS", os.environ)
SIMULATION_MAX_CODE_CALLS = from_env("SIMULATION_MAX_CODE_CALLS", os.environ)
SIMULATION_MAX_SECONDS = from_env("SIMULATION_MAX_SECONDS", os.environ)  # of CPU
SIMULATION_MAX_WALL_SECONDS = from_env("SIMULATION_MAX_WALL_SECONDS", os.environ)
# Simulations at once per web process (the designer's, the API's simulate): keep it below
# gunicorn's --threads (4) so /healthz and the pages always find a thread; 0: no cap.
SIMULATION_MAX_CONCURRENT = from_env("SIMULATION_MAX_CONCURRENT", os.environ)

# Live models (docs/designer/live-models.md). STATECRAFT_MODELS is read from the environment
# when a run starts (agents/services/live_models.py) and checked at start (statecraft.E010);
# MODEL_KEYS_SECRET, when set, derives the key that encrypts the admin's stored API keys
# (else SECRET_KEY does). Caps of one live run:
MODEL_KEYS_SECRET = os.environ.get("MODEL_KEYS_SECRET", "")
LIVE_MAX_MODEL_CALLS = from_env("LIVE_MAX_MODEL_CALLS", os.environ)
LIVE_MAX_CALLS_PER_TURN = from_env("LIVE_MAX_CALLS_PER_TURN", os.environ)
LIVE_MAX_TOKENS = from_env("LIVE_MAX_TOKENS", os.environ)
LIVE_MAX_SECONDS = from_env("LIVE_MAX_SECONDS", os.environ)
LIVE_MAX_ANSWER_BYTES = from_env("LIVE_MAX_ANSWER_BYTES", os.environ)
# Jobs (docs/operations/jobs.md): long work runs in worker processes through Django's Tasks
# framework.
# TASKS_BACKEND=database (default): a queue in the app's own database (django-tasks-db), no
# broker, `make run` on SQLite just works. TASKS_BACKEND=rq: Redis-backed RQ workers
# (django-tasks-rq) on any number of machines, REDIS_URL naming the Redis.
# TASKS_BACKEND=immediate runs a job inside the request that submits it (tests, debugging).
TASKS_BACKEND = os.environ.get("TASKS_BACKEND", "database").strip().lower()
REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
_TASK_BACKENDS = {
    "database": "django_tasks_db.DatabaseBackend",
    "rq": "django_tasks_rq.RQBackend",
    "immediate": "django.tasks.backends.immediate.ImmediateBackend",
}
if TASKS_BACKEND not in _TASK_BACKENDS:
    raise ImproperlyConfigured(
        f"TASKS_BACKEND={TASKS_BACKEND!r}: use one of {', '.join(_TASK_BACKENDS)}."
    )
TASKS = {"default": {"BACKEND": _TASK_BACKENDS[TASKS_BACKEND], "QUEUES": ["default"]}}
RQ_QUEUES = {"default": {"URL": REDIS_URL, "DEFAULT_TIMEOUT": 3600}}
# At most this many queued + running jobs per user (a 429 names the limit beyond it).
JOBS_MAX_ACTIVE_PER_USER = from_env("JOBS_MAX_ACTIVE_PER_USER", os.environ)
# A Run all fans out into one job per golden x repetition x model x version (its pieces,
# agents.services.evaluation_runs): a worker runs this many pieces at once in threads,
# scripted or live (a live piece waits on its model), beside the other workers.
EVALUATION_THREADS = from_env("EVALUATION_THREADS", os.environ)
EVALUATION_THREADS_LIVE = from_env("EVALUATION_THREADS_LIVE", os.environ)
EVALUATION_EXPLAIN_AT_ONCE = from_env("EVALUATION_EXPLAIN_AT_ONCE", os.environ)
# The fair queue: a user's Run-all pieces taken from the queue while that user already has
# this many running give their turn to another user's waiting job (0: no limit), coming
# back after JOBS_YIELD_SECONDS.
JOBS_MAX_RUNNING_PER_USER = from_env("JOBS_MAX_RUNNING_PER_USER", os.environ)
JOBS_YIELD_SECONDS = from_env("JOBS_YIELD_SECONDS", os.environ)
# An evaluation run repeats each golden at most this many times.
EVALUATION_MAX_REPEAT = from_env("EVALUATION_MAX_REPEAT", os.environ)
# The newest evaluation runs kept per app (the history); 0 keeps every one.
EVALUATION_RUNS_KEPT = from_env("EVALUATION_RUNS_KEPT", os.environ)
# A job's own caps over all its scenarios (per-simulation caps still apply to each).
JOBS_MAX_SECONDS = from_env("JOBS_MAX_SECONDS", os.environ)
JOBS_MAX_CODE_CALLS = from_env("JOBS_MAX_CODE_CALLS", os.environ)
JOBS_MAX_MODEL_CALLS = from_env("JOBS_MAX_MODEL_CALLS", os.environ)
JOBS_MAX_TOKENS = from_env("JOBS_MAX_TOKENS", os.environ)
# A running job whose worker sent no heartbeat for this long is taken as lost: it is queued
# again (up to JOBS_MAX_ATTEMPTS runs in all) or marked failed with the reason.
JOBS_HEARTBEAT_SECONDS = from_env("JOBS_HEARTBEAT_SECONDS", os.environ)
JOBS_STALE_SECONDS = from_env("JOBS_STALE_SECONDS", os.environ)
JOBS_MAX_ATTEMPTS = from_env("JOBS_MAX_ATTEMPTS", os.environ)
# A queued job whose queue entry is gone (Redis restarted without its data, a task the
# queue failed) is enqueued again by a worker's reaper after this long.
JOBS_REQUEUE_SECONDS = from_env("JOBS_REQUEUE_SECONDS", os.environ)
# A transient error (database or Redis away, disk full, lock timeout) queues the job again
# after this long, doubling with each attempt (up to JOBS_MAX_ATTEMPTS runs in all).
JOBS_RETRY_BACKOFF_SECONDS = from_env("JOBS_RETRY_BACKOFF_SECONDS", os.environ)
# How long a worker retries a claim or a job's final write while the database is away.
JOBS_DB_RETRY_SECONDS = from_env("JOBS_DB_RETRY_SECONDS", os.environ)
# Queued longer than this, a job's page says why it waits (no worker seen, or all busy).
JOBS_PICKUP_SECONDS = from_env("JOBS_PICKUP_SECONDS", os.environ)
# Where the database queue's workers of this machine keep the sockets a queued job wakes
# them by (server/wakeup.py; PostgreSQL uses LISTEN/NOTIFY instead). Empty: a folder per
# database under the system's temporary folder.
JOBS_WAKE_DIR = os.environ.get("JOBS_WAKE_DIR", "")
# Warm sandbox sessions a worker keeps between jobs (each serves one user; 0: none).
SANDBOX_POOL_SIZE = from_env("SANDBOX_POOL_SIZE", os.environ)
