"""``manage.py dumpdata``: Django's, leaving out the models that have no table.

django-rq registers a model for its admin dashboard (``django_rq.Dashboard``) that is not
managed and has no table: Django's own dumpdata then stops with *relation
"django_rq_dashboard" does not exist*. This one excludes every unmanaged model whose
table the database lacks (named on stderr), so a plain ``manage.py dumpdata`` dumps
everything there is. The backup of record is still ``pg_dump`` (docs/operations/
health-and-backups.md): a dump of JSON is for moving data between database engines.
"""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.core.management.commands import dumpdata
from django.db import connections
from django.utils.translation import gettext as _


def tableless_models(using: str = "default") -> list[str]:
    """``app_label.ModelName`` of each unmanaged model whose table the database lacks."""
    tables = set(connections[using].introspection.table_names())
    return sorted(
        model._meta.label
        for model in apps.get_models()
        if not model._meta.managed and not model._meta.proxy and model._meta.db_table not in tables
    )


class Command(dumpdata.Command):
    help = dumpdata.Command.help + " Models without a table (django-rq's dashboard) are left out."

    def handle(self, *app_labels: str, **options: Any) -> None:
        skipped = [
            label
            for label in tableless_models(options.get("database") or "default")
            if label not in options["exclude"]
        ]
        if skipped:
            self.stderr.write(_("Left out (no table): %(models)s") % {"models": ", ".join(skipped)})
            options["exclude"] = [*options["exclude"], *skipped]
        return super().handle(*app_labels, **options)
