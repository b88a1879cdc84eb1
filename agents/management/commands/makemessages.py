"""Django's makemessages, which also extracts the core's diagnostic templates.

The core (pure Python, no Django) marks a diagnostic's message template by building a
``Message("... %(name)s ...", name=...)``; xgettext is told that `Message` is a keyword, so
those templates land in the catalog beside the templates', forms' and admin's strings.
Run: ``python manage.py makemessages -l fr -l de`` and ``-d djangojs`` for the front end
(docs/operations/languages.md).
"""

from __future__ import annotations

from django.core.management.commands import makemessages


class Command(makemessages.Command):
    xgettext_options = [*makemessages.Command.xgettext_options, "--keyword=Message"]
    # A new string is untranslated until someone translates it (the i18n test says so),
    # never silently given the translation of a similar one.
    msgmerge_options = [*makemessages.Command.msgmerge_options, "--no-fuzzy-matching"]
