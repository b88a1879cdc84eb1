"""A user's API token: create (replacing the old one) and revoke."""

from __future__ import annotations

import logging

from django.db import transaction
from rest_framework.authtoken.models import Token

from agents.services.common import Actor

logger = logging.getLogger("agents.services")


@transaction.atomic
def api_token_create(*, user: Actor) -> Token:
    """A new key for `user`; the old one stops working at once."""
    Token.objects.filter(user=user).delete()
    token = Token.objects.create(user=user)
    logger.info("API token created for %s", user.get_username())
    return token


@transaction.atomic
def api_token_revoke(*, user: Actor) -> None:
    Token.objects.filter(user=user).delete()
    logger.info("API token revoked for %s", user.get_username())
