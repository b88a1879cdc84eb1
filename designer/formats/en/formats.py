"""Dates and numbers as an English reader sees them (docs/operations/languages.md):
ISO-like dates."""

DATETIME_FORMAT = "Y-m-d H:i:s"
SHORT_DATETIME_FORMAT = "Y-m-d H:i"
