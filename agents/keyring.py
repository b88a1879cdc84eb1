"""Model API keys at rest: encrypted with Fernet (``cryptography``), never shown again.

The Fernet key is derived with HKDF-SHA256 from ``MODEL_KEYS_SECRET`` when it is set (so
SECRET_KEY can rotate without losing the stored keys), else from ``SECRET_KEY``. A stored
key is decrypted only to call its model; an admin form shows whether a key is set, never
the key; exports, versions and the audit trail never include the endpoint table.
"""

from __future__ import annotations

import base64

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings


def _fernet() -> Fernet:
    secret = getattr(settings, "MODEL_KEYS_SECRET", "") or settings.SECRET_KEY
    derived = HKDF(
        algorithm=hashes.SHA256(), length=32, salt=b"statecraft", info=b"model api keys"
    ).derive(secret.encode("utf-8"))
    return Fernet(base64.urlsafe_b64encode(derived))


def encrypt(key: str) -> str:
    return _fernet().encrypt(key.encode("utf-8")).decode("ascii") if key else ""


def decrypt(token: str) -> str:
    """The key, or "" when there is none or it cannot be decrypted (the secret changed)."""
    if not token:
        return ""
    try:
        return _fernet().decrypt(token.encode("ascii")).decode("utf-8")
    except (InvalidToken, ValueError):
        return ""
