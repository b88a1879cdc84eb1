"""The operator's language for the management commands (`import_app`, `export_app`,
`evaluate`).

A command speaks, in this order: the language of ``--language fr|de|en``; else the one the
environment names the way gettext reads it (``LANGUAGE``, then ``LC_ALL``, ``LC_MESSAGES``,
``LANG``: ``LANG=de_DE.UTF-8`` is German, ``C``/``POSIX`` is English); else ``LANGUAGE_CODE``
(English). What it says to a person is in that language: its messages, the diagnostics
(their codes unchanged). What a program reads is not: the ids on stdout, the exit status,
the status words ``PASS``/``FAIL``/``MODEL`` at the start of `evaluate`'s lines, the files
it writes (exports, JUnit XML) and the arguments' names.
"""

from __future__ import annotations

import os
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser
from django.utils import translation

ENVIRONMENT = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")


def _supported(value: str) -> str | None:
    """`fr` for ``fr_FR.UTF-8``, ``fr-CA`` or ``fr``; None for C/POSIX or a language we lack."""
    code = value.split(".", 1)[0].split("@", 1)[0].replace("_", "-").strip().lower()
    if not code or code in {"c", "posix"}:
        return None
    try:
        return translation.get_supported_language_variant(code)
    except LookupError:
        return None


def environment_language(environ: Any = None) -> str | None:
    """The language the environment names (the first variable set decides; ``LANGUAGE`` may
    list several, ``fr:de``, the first we have wins), or None."""
    environ = os.environ if environ is None else environ
    for name in ENVIRONMENT:
        value = environ.get(name, "")
        if not value:
            continue
        if name == "LANGUAGE":
            found = next((c for c in map(_supported, value.split(":")) if c), None)
            if found:
                return found
            continue
        return _supported(value)
    return None


class LocalizedCommand(BaseCommand):
    """A command that speaks the operator's language (module docstring)."""

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        parser.add_argument(
            "--language",
            choices=[code for code, _ in settings.LANGUAGES],
            help="the language of the messages (default: LANGUAGE, LC_ALL, LC_MESSAGES, LANG, "
            "else LANGUAGE_CODE)",
        )
        return parser

    def execute(self, *args: Any, **options: Any) -> Any:
        language = options.get("language") or environment_language() or settings.LANGUAGE_CODE
        with translation.override(language):
            return super().execute(*args, **options)
