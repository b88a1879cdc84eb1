"""The signed-in user's API token: see whether one exists, create (or replace) it, revoke it."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods
from rest_framework.authtoken.models import Token

from agents import services


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
            messages.success(request, "Your API token is revoked; requests using it now get 401.")
            return redirect("api-token")
        return render(
            request,
            "agents/api_token.html",
            {"token": token, "error": "Choose Create a token or Revoke."},
            status=400,
        )
    return render(request, "agents/api_token.html", {"token": token})
