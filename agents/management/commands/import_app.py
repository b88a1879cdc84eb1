"""manage.py import_app FILE --owner USERNAME [--name NAME]: import for pipelines.

``manage.py import_app X.evalset.json --owner USERNAME --evalset-into APP_ID`` adds an ADK
evalset's eval cases to an existing app as scenarios of its root agent instead
(`exchange.app_import_evalset`); it prints the new scenarios' ids on stdout, one a line
(for scripts), and on stderr what they are.

The same use case as the import page (`exchange.app_import_file`): everything is checked
first and nothing is created unless all of it is valid. Exit status 0 and the new app's
id on stdout; 1 with every problem on stderr (`file: field: message [code]`) otherwise.
"""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError, CommandParser
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from agents.core.diagnostics import strip_prefix
from agents.i18n import localize, word
from agents.management.language import LocalizedCommand
from agents.services import exchange


def _at(where: str, message: str) -> str:
    """``file: message``, the file named once: the evalset's messages (and "x.zip is not a
    ZIP file") start with it already."""
    message = strip_prefix(message, f"{where}: ")
    text = localize(message)
    return text if text.startswith(where) else f"{where}: {text}"


class Command(LocalizedCommand):
    help = (
        "Import a Statecraft JSON/YAML file or a CX Agent Studio ZIP as a new app, or "
        "(--evalset-into) an ADK evalset's cases as scenarios of an app."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "file",
            help="a .json/.yaml export or a CX Agent Studio .zip (with --evalset-into: an ADK "
            ".evalset.json)",
        )
        parser.add_argument("--owner", required=True, help="username of the app's owner")
        parser.add_argument("--name", default=None, help="the new app's name (default: the file's)")
        parser.add_argument(
            "--evalset-into",
            type=int,
            default=None,
            metavar="APP_ID",
            help="read FILE as an ADK evalset and add its eval cases to this app as scenarios "
            "(stdout: the new scenarios' ids, one a line)",
        )

    def handle(self, *args: object, **options: object) -> None:
        owner = get_user_model().objects.filter(username=options["owner"]).first()
        if owner is None:
            raise CommandError(
                _("--owner: no user named %(name)s.") % {"name": repr(options["owner"])}
            )
        path = Path(str(options["file"]))
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise CommandError(f"{path}: {exc.strerror or exc}") from exc
        if options["evalset_into"] is not None:
            self.import_evalset(owner, int(options["evalset_into"]), path, data)
            return
        try:
            app, kind, notes = exchange.app_import_file(
                owner=owner, data=data, name=options["name"] or None, filename=path.name
            )
        except exchange.ImportRefused as exc:
            for d in exc.diagnostics:
                where = d.subject if exc.kind == "cx" and d.subject else path.name
                self.stderr.write(f"{_at(where, d.message)} [{d.code}]")
            count = len(exc.diagnostics)
            raise CommandError(
                ngettext(
                    "%(file)s: not imported (%(count)s problem); nothing was created.",
                    "%(file)s: not imported (%(count)s problems); nothing was created.",
                    count,
                )
                % {"file": path.name, "count": count}
            ) from exc
        for d in notes:
            self.stderr.write(f"{word(d.severity.value)}: {localize(d.message)} [{d.code}]")
        self.stdout.write(str(app.pk))
        self.stderr.write(
            self.style.SUCCESS(
                _("Imported %(kind)s file as “%(name)s” (id %(id)s).")
                % {"kind": kind, "name": app.name, "id": app.pk}
            )
        )

    def import_evalset(self, owner, app_id: int, path: Path, data: bytes) -> None:
        from agents import selectors
        from agents.models import AgentApp

        app = AgentApp.objects.filter(pk=app_id).first()
        if app is None:
            raise CommandError(_("--evalset-into: no app with id %(id)s.") % {"id": app_id})
        access = selectors.app_access(owner, app)
        if access is None or not access.can_edit:
            raise CommandError(
                _("--evalset-into: %(user)s may not edit app %(id)s.")
                % {"user": owner.get_username(), "id": app_id}
            )
        try:
            created, notes = exchange.app_import_evalset(
                app=app, actor=owner, data=data, filename=path.name
            )
        except exchange.ImportRefused as exc:
            for d in exc.diagnostics:
                self.stderr.write(f"{_at(path.name, d.message)} [{d.code}]")
            raise CommandError(
                _("%(file)s: not imported; nothing was created.") % {"file": path.name}
            ) from exc
        for d in notes:
            self.stderr.write(f"{word(d.severity.value)}: {localize(d.message)} [{d.code}]")
        for scenario in created:
            self.stdout.write(str(scenario.pk))
        self.stderr.write(
            self.style.SUCCESS(
                ngettext(
                    "Added %(count)s scenario to “%(name)s” (app id %(id)s); its id is on "
                    "stdout: %(ids)s.",
                    "Added %(count)s scenarios to “%(name)s” (app id %(id)s); their ids are "
                    "on stdout: %(ids)s.",
                    len(created),
                )
                % {
                    "count": len(created),
                    "name": app.name,
                    "id": app.pk,
                    "ids": ", ".join(str(s.pk) for s in created) or "-",
                }
            )
        )
