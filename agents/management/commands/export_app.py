"""manage.py export_app APP --format cx|json|yaml|adk [-o FILE]: export for pipelines.

APP is the app's id or its name (``--owner USERNAME`` picks among apps of one name).

The same exports as the designer's Export page. Exit status 0; 1 when the app does
not exist or the file cannot be written. What the CX or ADK export cannot carry is listed
on stderr; the files are still written (as the page's download is).

``--format adk -o DIR`` writes the ADK package into DIR (``DIR/<package>/agent.py``…,
replacing the package's folder when it is there); ``-o NAME.zip`` or ``-o -`` writes it as
the ZIP the Export page downloads.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from django.core.management.base import CommandError, CommandParser
from django.utils.formats import number_format
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from agents.core.diagnostics import Severity
from agents.core.formats import dumps_native
from agents.i18n import localize, word
from agents.management.language import LocalizedCommand
from agents.models import AgentApp
from agents.services import exchange


class Command(LocalizedCommand):
    help = (
        "Export an app as a Statecraft JSON/YAML file, a CX Agent Studio ZIP, or an ADK "
        "package (a directory, or a ZIP)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "app",
            metavar="APP",
            help="the app's id, or its name (with --owner when several apps have that name)",
        )
        parser.add_argument(
            "--owner", default=None, help="username of the app's owner (to pick an app by name)"
        )
        parser.add_argument(
            "--format",
            choices=("cx", "json", "yaml", "adk"),
            default="json",
            help="json or yaml: a Statecraft file; cx: a CX Agent Studio ZIP; adk: an ADK "
            "package (default: json)",
        )
        parser.add_argument(
            "-o",
            "--output",
            default="-",
            help="file to write (- for stdout); with --format adk a directory, or NAME.zip",
        )

    def find_app(self, given: str, owner: str | None) -> AgentApp:
        """The app `given` names: an id, else a name (unique among `owner`'s apps, or all)."""
        apps = AgentApp.objects.all()
        if owner is not None:
            apps = apps.filter(owner__username=owner)
        if given.isdigit():
            app = apps.filter(pk=int(given)).first()
            if app is not None:
                return app
        named = list(apps.filter(name=given).order_by("pk")[:10])
        if len(named) == 1:
            return named[0]
        if named:
            raise CommandError(
                _("Several apps are named %(name)s (ids %(ids)s): give the id, or --owner.")
                % {"name": repr(given), "ids": ", ".join(str(a.pk) for a in named)}
            )
        if given.isdigit():
            raise CommandError(_("No app with id %(id)s.") % {"id": given})
        raise CommandError(_("No app with id or name %(name)s.") % {"name": repr(given)})

    def handle(self, *args: object, **options: object) -> None:
        app = self.find_app(str(options["app"]), options["owner"])
        fmt = str(options["format"])
        output = str(options["output"])
        if fmt == "adk" and output != "-" and not output.endswith(".zip"):
            self.write_package(app, Path(output))
            return
        if fmt == "adk":
            data, _package, diagnostics = exchange.app_export_adk(app)
            self.report(diagnostics)
        elif fmt == "cx":
            data, diagnostics = exchange.app_export_cx(app)
            self.report(diagnostics)
        else:
            data = dumps_native(exchange.app_export_native(app), fmt).encode("utf-8")
        if output == "-":
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
            return
        try:
            Path(output).write_bytes(data)
        except OSError as exc:
            raise CommandError(f"{output}: {exc.strerror or exc}") from exc
        self.stderr.write(
            self.style.SUCCESS(
                ngettext(
                    "Wrote %(file)s (%(size)s byte).", "Wrote %(file)s (%(size)s bytes).", len(data)
                )
                % {"file": output, "size": number_format(len(data), force_grouping=True)}
            )
        )

    def report(self, diagnostics) -> None:
        for d in diagnostics:
            if d.severity is not Severity.INFO:
                self.stderr.write(f"{word(d.severity.value)}: {localize(d.message)} [{d.code}]")

    def write_package(self, app: AgentApp, folder: Path) -> None:
        files, diagnostics = exchange.app_export_adk_files(app)
        self.report(diagnostics)
        package = next(iter(files)).split("/", 1)[0]
        try:
            if (folder / package).is_dir():
                shutil.rmtree(folder / package)
            for path, data in files.items():
                target = folder / path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
        except OSError as exc:
            raise CommandError(f"{folder}: {exc.strerror or exc}") from exc
        evalsets = sum(1 for p in files if p.endswith(".evalset.json"))
        self.stderr.write(
            self.style.SUCCESS(
                _(
                    "Wrote the ADK package %(package)s (%(files)s files, %(evalsets)s "
                    "evalset(s)). Run it: %(command)s"
                )
                % {
                    "package": folder / package,
                    "files": len(files),
                    "evalsets": evalsets,
                    "command": f"cd {folder} && adk run {package}",
                }
            )
        )
