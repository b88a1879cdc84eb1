"""The signed-in user's API token (see, create or replace, revoke) and their language."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import translation
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods
from rest_framework.authtoken.models import Token

from agents import i18n, services
from agents.services.common import ServiceError


@never_cache  # the page shows a new key once: no browser or proxy may keep a copy
@login_required
@require_http_methods(["GET", "POST"])
def api_token(request: HttpRequest) -> HttpResponse:
    """POST action=create makes a new key (replacing the old one) and shows it once;
    POST action=revoke deletes it. Operators manage every user's token in the admin."""
    token = Token.objects.filter(user=request.user).first()
    if request.method == "POST":
        action = request.POST.get("action", "")
        if action == "create":
            token = services.api_token_create(user=request.user)
            return render(request, "agents/api_token.html", {"token": token, "new_key": token.key})
        if action == "revoke":
            services.api_token_revoke(user=request.user)
            messages.success(
                request, _("Your API token is revoked; requests using it now get 401.")
            )
            return redirect("api-token")
        return render(
            request,
            "agents/api_token.html",
            {"token": token, "error": _("Choose Create a token or Revoke.")},
            status=400,
        )
    return render(request, "agents/api_token.html", {"token": token})


@login_required
@require_http_methods(["POST"])
def set_collapsed(request: HttpRequest) -> HttpResponse:
    """The designer's fold buttons: POST sections=preview,goldens (the right pane's sections
    folded, remembered for the user on every app and browser). 204; 400 on an unknown one."""
    sections = [s for s in request.POST.get("sections", "").split(",") if s]
    try:
        services.user_collapsed_set(user=request.user, sections=sections)
    except ServiceError as exc:
        return HttpResponseBadRequest(str(exc))
    return HttpResponse(status=204)


@require_http_methods(["POST"])
def set_language(request: HttpRequest) -> HttpResponse:
    """The header's language switcher: POST language=en|fr|de (next= the page to return to).

    The choice goes into the language cookie (Django's LocaleMiddleware reads it) and, for a
    signed-in user, into their settings and session, so it follows them to another browser.
    URLs stay the same in every language."""
    language = request.POST.get("language", "")
    codes = [code for code, _ in settings.LANGUAGES]
    target = request.POST.get("next") or request.headers.get("referer") or ""
    if not url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        target = reverse("app-list")
    if language not in codes:
        return HttpResponseBadRequest(
            _("Choose one of %(languages)s.") % {"languages": ", ".join(codes)}
        )
    if request.user.is_authenticated:
        services.user_language_set(user=request.user, language=language)
        request.session[i18n.SESSION_KEY] = language
    translation.activate(language)
    response = redirect(target)
    response.set_cookie(
        settings.LANGUAGE_COOKIE_NAME,
        language,
        max_age=settings.LANGUAGE_COOKIE_AGE,
        samesite=settings.LANGUAGE_COOKIE_SAMESITE,
        secure=getattr(settings, "LANGUAGE_COOKIE_SECURE", False),
        httponly=False,
    )
    return response
