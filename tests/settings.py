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
