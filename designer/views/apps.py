"""The app list, creating, duplicating, deleting, sharing an app, its history."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from agents import selectors, services
from agents.core import rules
from agents.i18n import word
from designer.views.common import int_or_none


@login_required
@require_GET
def app_list(request: HttpRequest) -> HttpResponse:
    search = request.GET.get("q", "").strip()
    apps = selectors.app_list(request.user, search=search)
    template = "agents/app_list.html#app-table" if request.htmx else "agents/app_list.html"
    return render(
        request,
        template,
        {
            "apps": apps,
            "search": search,
            "form_errors": {},
            "name_max_length": rules.APP_NAME_MAX_LENGTH,
        },
    )


@login_required
@require_POST
def app_create(request: HttpRequest) -> HttpResponse:
    name = request.POST.get("name", "")
    description = request.POST.get("description", "")
    try:
        app = services.app_create(
            actor=request.user, owner=request.user, name=name, description=description
        )
    except services.ServiceError as exc:
        return render(
            request,
            "agents/app_list.html",
            {
                "apps": selectors.app_list(request.user),
                "search": "",
                "form_errors": exc.field_errors(),
                "typed": {"name": name, "description": description},
                "name_max_length": rules.APP_NAME_MAX_LENGTH,
            },
            status=200 if request.htmx else 400,
        )
    return redirect("app-designer", app_id=app.pk)


@login_required
@require_POST
def app_duplicate(request: HttpRequest, app_id: int) -> HttpResponse:
    app, _access = selectors.app_for_user(request.user, app_id)
    copy = services.app_duplicate(actor=request.user, app=app, owner=request.user)
    messages.success(
        request,
        _("Duplicated “%(name)s” as “%(copy)s”.") % {"name": app.name, "copy": copy.name},
    )
    return redirect("app-list")


@login_required
@require_http_methods(["GET", "POST"])
def app_delete(request: HttpRequest, app_id: int) -> HttpResponse:
    app, access = selectors.app_for_user(request.user, app_id)
    if not access.is_owner:
        raise PermissionDenied(_("Only the owner can delete an app."))
    if request.method == "POST":
        name = app.name
        services.app_delete(actor=request.user, app=app)
        messages.success(request, _("Deleted “%(name)s”.") % {"name": name})
        return redirect("app-list")
    return render(request, "agents/app_delete.html", {"app": app})


@login_required
@require_http_methods(["GET", "POST"])
def app_share(request: HttpRequest, app_id: int) -> HttpResponse:
    """Owner shares the app with other users as viewer or editor (SPEC §6)."""
    app, access = selectors.app_for_user(request.user, app_id)
    errors: dict[str, list[str]] = {}
    typed = {"username": "", "role": "viewer"}
    if request.method == "POST":
        if not access.is_owner:
            raise PermissionDenied(_("Only the owner can share this app."))
        User = get_user_model()
        if "remove" in request.POST:
            user = User.objects.filter(pk=int_or_none(request.POST.get("remove"))).first()
            if user is not None:
                services.app_unshare(actor=request.user, app=app, user=user)
            return redirect("app-share", app_id=app.pk)
        typed = {
            "username": request.POST.get("username", "").strip(),
            "role": request.POST.get("role", "viewer"),
        }
        # Known and unknown usernames get the same answer: the form reveals no account.
        try:
            services.app_share_by_username(
                app=app, username=typed["username"], role=typed["role"], actor=request.user
            )
        except services.ServiceError as exc:
            errors = exc.field_errors()
        else:
            messages.success(request, _share_message(typed["username"], typed["role"]))
            return redirect("app-share", app_id=app.pk)
    shares = app.shares.select_related("user").order_by("user__username")
    return render(
        request,
        "agents/app_share.html",
        {"app": app, "access": access, "shares": shares, "errors": errors, "typed": typed},
        status=400 if errors else 200,
    )


@login_required
@require_GET
def app_history(request: HttpRequest, app_id: int) -> HttpResponse:
    """Who changed what in the app, and when (viewers too: they see the app)."""
    app, access = selectors.app_for_user(request.user, app_id)
    events = selectors.app_history(app)
    return render(
        request, "agents/app_history.html", {"app": app, "access": access, "events": events}
    )


def _share_message(username: str, role: str) -> str:
    return _(
        "If “%(username)s” is a Statecraft user, they can now open this app as %(role)s; "
        "the list below shows everyone it is shared with."
    ) % {"username": username, "role": word(role)}
