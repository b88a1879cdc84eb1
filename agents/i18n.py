"""The reader's language: diagnostics rendered in it, and the language a user chose.

The core speaks English and hands out `Message` values (a template with named parameters);
this adapter renders them with Django's gettext in the active language: the template is
translated, then the same parameters are filled in, so names, lines and types stay as they
are and the codes never change. `UserLanguageMiddleware` activates the language a signed-in
user chose (the header's switcher); without one, Django's LocaleMiddleware has already
taken the language cookie or the request's Accept-Language.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils import formats, translation
from django.utils.translation import gettext_lazy as _
from django.utils.translation import gettext_noop

from agents.core.diagnostics import Diagnostic, Message, message_data, message_from_data, render

LANGUAGE_CODES = tuple(code for code, _ in settings.LANGUAGES)


def localize(message: Any) -> str:
    """A message (a core `Message`, or any text) in the active language."""
    if message is None:
        return ""
    return render(message, translation.gettext) if isinstance(message, str) else str(message)


def diagnostic_dict(diagnostic: Diagnostic) -> dict[str, object]:
    """A diagnostic as JSON data with its message in the active language (same code)."""
    return diagnostic.to_dict(translate=translation.gettext)


def diagnostic_dicts(diagnostics: Iterable[Diagnostic]) -> list[dict[str, object]]:
    return [diagnostic_dict(d) for d in diagnostics]


# Words the pages show for values that are identifiers in the data (a severity, a change, a
# kind of object): the data keeps the identifier, the page shows the word in the language.
_WORDS = {
    "error": _("error"),
    "warning": _("warning"),
    "info": _("info"),
    "added": _("added"),
    "removed": _("removed"),
    "changed": _("changed"),
    "renamed": _("renamed"),
    "same": _("same"),
    "app": _("app"),
    "variable": _("variable"),
    "schema": _("schema"),
    "tool": _("tool"),
    "agent": _("agent"),
    "callback": _("callback"),
    "scenario": _("scenario"),
    "label": _("label"),
    "version": _("version"),
    "share": _("share"),
    "viewer": _("viewer"),
    "editor": _("editor"),
    # An evaluation's verdicts (the Evaluations page's marks and comparisons).
    "passed": _("passed"),
    "failed": _("failed"),
    "flaky": _("flaky"),
    "absent": _("absent"),
    "cancelled": _("cancelled"),
    "needs_model": _("needs a model"),
    "stopped": _("stopped"),
    "no_expectations": _("without expectations"),
}


def word(value: Any) -> str:
    """An identifier of the data (`error`, `added`, `variable`) as a word of the language."""
    key = str(value)
    return str(_WORDS.get(key, key))


def action_words(action: str) -> str:
    """A history action (`variable.update`) in the reader's language (English: as stored)."""
    from agents.models.audit import action_label  # the model owns its vocabulary

    return action_label(action)


SESSION_KEY = "statecraft_language"


def localized_report(report: dict[str, Any]) -> dict[str, Any]:
    """An import report (`exchange.import_report`) with its messages in the active language."""
    files = [
        {
            **group,
            "diagnostics": [
                {**row, "message": localize(row["message"])} for row in group["diagnostics"]
            ],
        }
        for group in report.get("files", [])
    ]
    return {**report, "files": files}


def with_i18n(data: dict[str, Any], *fields: str) -> dict[str, Any]:
    """`data` (about to be stored as JSON) with the templates and parameters of its message
    `fields` (a message, or a list of them) kept beside the English under ``i18n``, so that
    `localized_data` shows them in the reader's language later (a job's stored result)."""
    kept: dict[str, Any] = {}
    for name in fields:
        value = data.get(name)
        if isinstance(value, Message):
            kept[name] = message_data(value)
        elif isinstance(value, list | tuple) and any(isinstance(v, Message) for v in value):
            kept[name] = [message_data(v) for v in value]
    return {**data, "i18n": kept} if kept else data


def localized_data(data: Any) -> Any:
    """Stored JSON data with every message `with_i18n` kept rendered in the active language
    (and the ``i18n`` keys gone); data without them (stored before) is left in English."""
    if isinstance(data, list):
        return [localized_data(item) for item in data]
    if not isinstance(data, dict):
        return data
    out = {k: localized_data(v) for k, v in data.items() if k != "i18n"}
    kept = data.get("i18n")
    if isinstance(kept, dict) and "template" in kept:  # the history's form: the message's
        kept = {"message": kept}
    if isinstance(kept, dict):
        for name, stored in kept.items():
            english = data.get(name)
            if isinstance(stored, list) and isinstance(english, list):
                out[name] = [
                    localize(message_from_data(s, str(e)))
                    for s, e in zip(stored, english, strict=False)
                ]
            elif name in data:
                out[name] = localize(message_from_data(stored, str(english)))
    return out


def decimal_comma() -> bool:
    """Whether the reader's language writes decimals with a comma (`1,5`: French, German)."""
    return formats.get_format("DECIMAL_SEPARATOR") == ","


def shown_value(value: Any) -> str:
    """A value where a person reads it (the sidebar, the state table): a Yes/No as the word
    of the reader's language (Yes/No, Oui/Non, Ja/Nein), a Number in the reader's form
    (`1,5` in French and German), anything else as the compiled prompt writes it
    (`render_value`: a list or an object is JSON, its numbers keep the point, as JSON is
    typed). Data views (JSON, the exported files) never use it."""
    from agents.core.render import render_value
    from agents.core.types import is_number

    if value is None:
        return ""
    if isinstance(value, bool):
        return str(_("Yes") if value else _("No"))
    if is_number(value) and decimal_comma():
        # As the prompt writes it (`39`, not `39.0`: `render_value`), with the reader's comma.
        return render_value(value).replace(".", ",")
    return render_value(value)


def number_grouping() -> str:
    """The thousands separators the reader types in a Number (`1 234,5`, `1.234,5`): their
    language's own (Django's THOUSAND_SEPARATOR) and the spaces (U+0020, U+00A0, U+202F);
    none for a reader who writes `1.5` (English keeps refusing `1,000`)."""
    if not decimal_comma():
        return ""
    own = str(formats.get_format("THOUSAND_SEPARATOR"))
    return "".join(dict.fromkeys(own + " \u00a0\u202f"))


def user_language(user: Any) -> str:
    """The language `user` chose in the header ("" when they never chose one)."""
    if not getattr(user, "is_authenticated", False):
        return ""
    from agents.models import UserSettings

    language = (
        UserSettings.objects.filter(user=user).values_list("language", flat=True).first() or ""
    )
    return language if language in LANGUAGE_CODES else ""


def remember_on_sign_in(sender: Any, request: HttpRequest, user: Any, **kwargs: Any) -> None:
    """`user_logged_in`: the user's chosen language goes into their session (read once)."""
    language = user_language(user)
    if language and request is not None and hasattr(request, "session"):
        request.session[SESSION_KEY] = language


class UserLanguageMiddleware:
    """After LocaleMiddleware and AuthenticationMiddleware: a signed-in user's chosen language
    (copied into the session at sign-in, so no query per request) wins over the cookie and
    Accept-Language, so it follows them to another browser. API clients (tokens) have no
    session: they say their language with Accept-Language."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith("/api/"):  # the API speaks the request's Accept-Language
            return self.get_response(request)
        session = getattr(request, "session", None)
        language = session.get(SESSION_KEY) if session is not None else None
        if language in LANGUAGE_CODES and language != translation.get_language():
            translation.activate(language)
            request.LANGUAGE_CODE = language
        return self.get_response(request)


# Words of Django 6, Django REST framework and drf-spectacular that their own catalogs lack
# yet, shown in the admin: "Run" (the actions button), "- Select an option -" (an empty
# choice), and the token app's names on the admin index. They are in ours (LOCALE_PATHS
# come first).
DJANGO_GAPS = (
    gettext_noop("Run"),
    gettext_noop("- Select an option -"),
    gettext_noop("Auth Token"),
    gettext_noop("Token"),
    gettext_noop("Tokens"),
    # drf-spectacular's, in the API schema (it has no French or German catalog).
    gettext_noop("No response body"),
    gettext_noop('Token-based authentication with required prefix "%s"'),
)
