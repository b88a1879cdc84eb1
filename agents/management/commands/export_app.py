"""manage.py export_app APP_ID --format cx|json|yaml [-o FILE]: export for pipelines.

The same exports as the designer's Export page. Exit status 0; 1 when the app does
not exist or the file cannot be written. What the CX export cannot carry is listed on
stderr; the file is still written (as the page's download is).
"""

from __future__ import annotations

import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents import exchange
from agents.core.diagnostics import Severity
from agents.core.formats import dumps_native
from agents.models import AgentApp


class Command(BaseCommand):
    help = "Export an app as a CX Agent Studio ZIP or a Statecraft JSON/YAML file."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("app_id", type=int, help="the app's id")
        parser.add_argument("--format", choices=("cx", "json", "yaml"), default="json")
        parser.add_argument("-o", "--output", default="-", help="file to write (- for stdout)")

    def handle(self, *args: object, **options: object) -> None:
        app = AgentApp.objects.filter(pk=options["app_id"]).first()
        if app is None:
            raise CommandError(f"No app with id {options['app_id']}.")
        fmt = str(options["format"])
        if fmt == "cx":
            data, diagnostics = exchange.app_export_cx(app)
            for d in diagnostics:
                if d.severity is not Severity.INFO:
                    self.stderr.write(f"{d.severity.value}: {d.message} [{d.code}]")
        else:
            data = dumps_native(exchange.app_export_native(app), fmt).encode("utf-8")
        output = str(options["output"])
        if output == "-":
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
            return
        try:
            Path(output).write_bytes(data)
        except OSError as exc:
            raise CommandError(f"{output}: {exc.strerror or exc}") from exc
        self.stderr.write(self.style.SUCCESS(f"Wrote {output} ({len(data):,} bytes)."))
