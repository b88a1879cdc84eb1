"""Settings for the test suite: production settings with a test key and no HTTPS redirect."""

import os

os.environ.setdefault("SECRET_KEY", "tests-only-not-secret")
os.environ.setdefault("SECURE_SSL_REDIRECT", "false")

from designer.settings import *  # noqa: F403

STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
SESSION_COOKIE_SECURE = False
CSRF_COOKIE_SECURE = False

if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":  # noqa: F405
    # A file, not ":memory:": the browser tests' live server thread and the test thread then
    # each get their own connection (a shared in-memory connection breaks under concurrency).
    import tempfile
    from pathlib import Path as _Path

    DATABASES["default"]["TEST"] = {  # noqa: F405
        # One file per test process, so two suites running at once never share one.
        "NAME": str(_Path(tempfile.gettempdir()) / f"statecraft-tests-{os.getpid()}.sqlite3")
    }

# The tests write rows with the ORM (no revision bump): the designer page renders its panes
# on every view, except in the tests of the pane cache, which turn it on.
DESIGNER_PANE_CACHE_SECONDS = 0
