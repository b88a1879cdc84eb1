"""Delete what has expired: sessions (Django's clearsessions) and ended rate-limit windows."""

from __future__ import annotations

from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand

from agents import ratelimit


class Command(BaseCommand):
    help = "Delete expired sessions and the counts of ended rate-limit windows (run daily)."

    def handle(self, *args: Any, **options: Any) -> None:
        call_command("clearsessions")
        deleted = ratelimit.purge_expired()
        self.stdout.write(f"Deleted expired sessions and {deleted} ended rate-limit counts.")
