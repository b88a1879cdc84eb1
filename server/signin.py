"""Sign-in throttling: failed passwords are counted per account and per client address.

The authentication backend enforces it, so the sign-in page, the admin's sign-in and any
other password check are covered alike; the forms check first to say why and for how long.
A successful sign-in clears its account's count (not its address's: one valid account must
not reset an attacker's address).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from server import ratelimit

ACCOUNT = "signin-account"
ADDRESS = "signin-address"


def _keys(request: HttpRequest | None, username: str | None) -> list[tuple[str, str]]:
    keys = []
    if username:
        keys.append((ACCOUNT, f"username:{username.strip().casefold()}"))
    if request is not None:
        keys.append((ADDRESS, f"address:{ratelimit.client_address(request)}"))
    return keys


def lockout(request: HttpRequest | None, username: str | None) -> ratelimit.Verdict | None:
    """The exhausted limit that refuses this sign-in now, if any."""
    for scope, who in _keys(request, username):
        verdict = ratelimit.peek(scope, who)
        if not verdict.allowed:
            return verdict
    return None


def lockout_message(verdict: ratelimit.Verdict) -> str:
    return gettext(
        "Too many failed sign-ins for this account or from this address "
        "(at most %(rate)s). Try again in %(wait)s."
    ) % {"rate": verdict.rate.describe(), "wait": ratelimit.wait_text(verdict.retry_after)}


class ThrottledModelBackend(ModelBackend):
    """Django's backend, refusing locked-out sign-ins and counting failed ones."""

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> Any:
        if username is None:
            username = kwargs.get(get_user_model().USERNAME_FIELD)
        if lockout(request, username) is not None:
            raise PermissionDenied(
                gettext("Too many failed sign-ins.")
            )  # no other backend is tried
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is None:
            for scope, who in _keys(request, username):
                ratelimit.hit(scope, who)
        elif username:
            ratelimit.reset(ACCOUNT, f"username:{username.strip().casefold()}")
        return user


class _ThrottledFormMixin:
    error_messages = {
        "invalid_login": _("That username and password do not match. Check both and try again."),
        "inactive": _("This account is inactive."),
    }

    def clean(self) -> dict[str, Any]:
        verdict = lockout(self.request, self.data.get("username"))  # type: ignore[attr-defined]
        if verdict is not None:
            raise forms.ValidationError(lockout_message(verdict), code="throttled")
        return super().clean()  # type: ignore[misc]


class SignInForm(_ThrottledFormMixin, AuthenticationForm):
    """The sign-in page's form."""


class AdminSignInForm(_ThrottledFormMixin, AdminAuthenticationForm):
    """The admin's sign-in form (staff only, as Django's)."""

    error_messages = {
        **AdminAuthenticationForm.error_messages,
        "invalid_login": _("That username and password do not match a staff account."),
    }
