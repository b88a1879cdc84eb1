"""What every table of an app shares: timestamps and the optimistic-lock version."""

from __future__ import annotations

import hashlib

from django.db import models
from django.utils.translation import gettext_lazy as _


def instructions_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


class TimestampedModel(models.Model):
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))
    # Optimistic locking: a save names the version it read; services refuse a stale one.
    version = models.PositiveIntegerField(default=1, verbose_name=_("version"))

    class Meta:
        abstract = True
