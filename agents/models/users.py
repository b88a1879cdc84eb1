"""What a user chose for themselves."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from agents.core.rules import LANGUAGE_CODE_MAX_LENGTH

# The designer's right-pane sections a user may fold (issue 33, item 11).
PANE_SECTIONS = ("preview", "problems", "goldens", "conversation")


class UserSettings(models.Model):
    """What a user chose for themselves: the language the designer speaks to them in."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="statecraft_settings",
        verbose_name=_("user"),
    )
    language = models.CharField(
        _("language"), max_length=LANGUAGE_CODE_MAX_LENGTH, choices=settings.LANGUAGES, blank=True
    )
    # The designer's right-pane sections the user folded (PANE_SECTIONS), kept for every app.
    collapsed = models.JSONField(_("collapsed sections"), default=list, blank=True)

    class Meta:
        verbose_name = _("user settings")
        verbose_name_plural = _("user settings")

    def __str__(self) -> str:
        return f"{self.user} · {self.language or '-'}"
