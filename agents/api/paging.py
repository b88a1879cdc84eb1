"""Paging and OPTIONS for every API endpoint (designer/settings.py's REST_FRAMEWORK).

`BoundedLimitOffsetPagination`: `?limit=` is capped at `MAX_LIMIT` and `?offset=` at
`MAX_OFFSET`, so a number past what the database's integers hold (2⁶³) never reaches the
query (it answered 500). `SafeMetadata`: `OPTIONS` on an action view without a serializer
class describes the view without its POST body, instead of DRF's assertion (a 500)."""

from __future__ import annotations

from typing import Any

from rest_framework.metadata import SimpleMetadata
from rest_framework.pagination import LimitOffsetPagination

MAX_LIMIT = 1000
MAX_OFFSET = 2**31


class BoundedLimitOffsetPagination(LimitOffsetPagination):
    max_limit = MAX_LIMIT

    def get_offset(self, request: Any) -> int:
        return min(super().get_offset(request), MAX_OFFSET)


class SafeMetadata(SimpleMetadata):
    def determine_actions(self, request: Any, view: Any) -> dict[str, Any]:
        try:
            return super().determine_actions(request, view)
        except AssertionError:  # a view whose body has no serializer class
            return {}
