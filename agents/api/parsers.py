"""The API's JSON parser: DRF's, with a body nested too deeply to parse a 400, not a 500."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_lazy
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


class DepthSafeJSONParser(JSONParser):
    """DRF's JSON parser; JSON too deep for Python's parser (a RecursionError) is refused
    as a parse error naming it. (What a field may hold is the field's check: a scenario's
    values at most 100 levels deep.)"""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError(
                gettext_lazy("JSON parse error - the JSON is nested too deeply.")
            ) from None
