"""Delete what has expired: sessions (Django's clearsessions) and ended rate-limit windows."""

from __future__ import annotations

from typing import Any

from django.core.management import call_command
from django.utils.translation import ngettext

from agents.management.language import LocalizedCommand
from server import ratelimit


class Command(LocalizedCommand):
    help = "Delete expired sessions and the counts of ended rate-limit windows (run daily)."

    def handle(self, *args: Any, **options: Any) -> None:
        call_command("clearsessions")
        deleted = ratelimit.purge_expired()
        self.stdout.write(
            ngettext(
                "Deleted expired sessions and %(count)s ended rate-limit count.",
                "Deleted expired sessions and %(count)s ended rate-limit counts.",
                deleted,
            )
            % {"count": deleted}
        )
