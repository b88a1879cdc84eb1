"""Rate-limit counts kept in the database when no Redis is configured."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from agents.core.rules import RATE_LIMIT_KEY_MAX_LENGTH


class RateLimitCount(models.Model):
    """One window's count of one scope and requester (server/ratelimit.py), when no Redis is
    configured: every gunicorn worker counts in the same row (an atomic UPDATE), so a limit
    holds across workers. `expires_at` is ratelimit.now() seconds; old rows are purged."""

    key = models.CharField(
        max_length=RATE_LIMIT_KEY_MAX_LENGTH, primary_key=True, verbose_name=_("key")
    )  # sha256 of scope, who, window
    count = models.PositiveIntegerField(default=0, verbose_name=_("count"))
    expires_at = models.FloatField(db_index=True, verbose_name=_("expires at"))

    class Meta:
        verbose_name = _("rate-limit count")
        verbose_name_plural = _("rate-limit counts")

    def __str__(self) -> str:
        return f"{self.key[:12]}… = {self.count}"
