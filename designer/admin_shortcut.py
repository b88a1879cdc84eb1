"""The admin's "view on site" shortcut (`/admin/r/<content type>/<id>/`) that never answers
500: a content type without a table (django-rq's dashboard model) or an object without a
page is a 404, as Django's shortcut answers for an unknown object."""

from __future__ import annotations

from typing import Any

from django.contrib.contenttypes import views as contenttype_views
from django.db import DatabaseError, transaction
from django.http import Http404, HttpRequest, HttpResponse


def shortcut(request: HttpRequest, content_type_id: Any, object_id: Any) -> HttpResponse:
    try:
        # In a savepoint: the failed query of a table-less model leaves the request's
        # transaction usable (PostgreSQL aborts the whole transaction otherwise).
        with transaction.atomic():
            return contenttype_views.shortcut(request, content_type_id, object_id)
    except (DatabaseError, AttributeError, ValueError, TypeError) as exc:
        raise Http404("No page for this object.") from exc
