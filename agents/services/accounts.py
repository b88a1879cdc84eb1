"""A user's API token: create (replacing the old one) and revoke."""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import transaction
from rest_framework.authtoken.models import Token

from agents.core.diagnostics import Message
from agents.services.common import Actor, ServiceError, error

logger = logging.getLogger("agents.services")


@transaction.atomic
def api_token_create(*, user: Actor) -> Token:
    """A new key for `user`; the old one stops working at once."""
    Token.objects.filter(user=user).delete()
    token = Token.objects.create(user=user)
    logger.info("API token created for %s", user.get_username())
    return token


@transaction.atomic
def user_collapsed_set(*, user: Actor, sections: list[str]) -> list[str]:
    """Remember which of the designer's right-pane sections `user` folded (any of
    `PANE_SECTIONS`, in that order; others are refused)."""
    from agents.models import UserSettings
    from agents.models.users import PANE_SECTIONS

    unknown = [s for s in sections if s not in PANE_SECTIONS]
    if unknown:
        raise ServiceError(
            [
                error(
                    "sections",
                    Message("Choose among %(sections)s.", sections=", ".join(PANE_SECTIONS)),
                )
            ]
        )
    kept = [s for s in PANE_SECTIONS if s in sections]
    UserSettings.objects.update_or_create(user=user, defaults={"collapsed": kept})
    return kept


def user_collapsed(user: Actor) -> list[str]:
    """The right-pane sections `user` folded ([] for none, or no settings yet)."""
    from agents.models import UserSettings

    if user is None or not user.pk:
        return []
    found = UserSettings.objects.filter(user=user).values_list("collapsed", flat=True).first()
    return list(found) if isinstance(found, list) else []


@transaction.atomic
def user_language_set(*, user: Actor, language: str) -> None:
    """Remember the language `user` chose ("" forgets it: Accept-Language decides again)."""
    from agents.models import UserSettings

    codes = {code for code, _ in settings.LANGUAGES}
    if language and language not in codes:
        raise ServiceError(
            [
                error(
                    "language",
                    Message("Choose one of %(languages)s.", languages=", ".join(sorted(codes))),
                )
            ]
        )
    UserSettings.objects.update_or_create(user=user, defaults={"language": language})
    logger.info("language of %s set to %r", user.get_username(), language)


@transaction.atomic
def api_token_revoke(*, user: Actor) -> None:
    Token.objects.filter(user=user).delete()
    logger.info("API token revoked for %s", user.get_username())
