"""manage.py import_app FILE --owner USERNAME [--name NAME]: import for pipelines.

The same use case as the import page (`exchange.app_import_file`): everything is checked
first and nothing is created unless all of it is valid. Exit status 0 and the new app's
id on stdout; 1 with every problem on stderr (`file: field: message [code]`) otherwise.
"""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents import exchange


class Command(BaseCommand):
    help = "Import a Statecraft JSON/YAML file or a CX Agent Studio ZIP as a new app."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="a .json/.yaml export or a CX Agent Studio .zip")
        parser.add_argument("--owner", required=True, help="username of the app's owner")
        parser.add_argument("--name", default=None, help="the new app's name (default: the file's)")

    def handle(self, *args: object, **options: object) -> None:
        owner = get_user_model().objects.filter(username=options["owner"]).first()
        if owner is None:
            raise CommandError(f"--owner: no user named {options['owner']!r}.")
        path = Path(str(options["file"]))
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise CommandError(f"{path}: {exc.strerror or exc}") from exc
        try:
            app, kind, notes = exchange.app_import_file(
                owner=owner, data=data, name=options["name"] or None, filename=path.name
            )
        except exchange.ImportRefused as exc:
            for d in exc.diagnostics:
                where = d.subject if exc.kind == "cx" and d.subject else path.name
                self.stderr.write(f"{where}: {d.message} [{d.code}]")
            count = len(exc.diagnostics)
            raise CommandError(
                f"{path.name}: not imported ({count} problem(s)); nothing was created."
            ) from exc
        for d in notes:
            self.stderr.write(f"{d.severity.value}: {d.message} [{d.code}]")
        self.stdout.write(str(app.pk))
        self.stderr.write(
            self.style.SUCCESS(f"Imported {kind} file as “{app.name}” (id {app.pk}).")
        )
