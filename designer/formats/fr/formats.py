"""Dates and numbers as a French reader sees them: 01/12/2026 09:45, 1,5 (Django's separators)."""

DATETIME_FORMAT = "d/m/Y H:i:s"
SHORT_DATETIME_FORMAT = "d/m/Y H:i"
