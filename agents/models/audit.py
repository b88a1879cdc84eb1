"""The app's history: one row per write."""

from __future__ import annotations

import re

from django.conf import settings
from django.db import models
from django.utils.translation import gettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from agents.core.rules import (
    APP_NAME_MAX_LENGTH,
    AUDIT_ACTION_MAX_LENGTH,
    AUDIT_OBJECT_TYPE_MAX_LENGTH,
    DISPLAY_NAME_MAX_LENGTH,
    USERNAME_MAX_LENGTH,
)
from agents.fields import OrderedJSONField
from agents.models.app import AgentApp

# The history's actions (AuditEvent.action): identifiers in the data, shown translated
# (English: as stored).
ACTION_LABELS = {
    "app.create": pgettext_lazy("history action", "app.create"),
    "app.update": pgettext_lazy("history action", "app.update"),
    "app.delete": pgettext_lazy("history action", "app.delete"),
    "app.import": pgettext_lazy("history action", "app.import"),
    "variable.create": pgettext_lazy("history action", "variable.create"),
    "variable.update": pgettext_lazy("history action", "variable.update"),
    "variable.rename": pgettext_lazy("history action", "variable.rename"),
    "variable.delete": pgettext_lazy("history action", "variable.delete"),
    "schema.create": pgettext_lazy("history action", "schema.create"),
    "schema.update": pgettext_lazy("history action", "schema.update"),
    "schema.delete": pgettext_lazy("history action", "schema.delete"),
    "tool.create": pgettext_lazy("history action", "tool.create"),
    "tool.update": pgettext_lazy("history action", "tool.update"),
    "tool.rename": pgettext_lazy("history action", "tool.rename"),
    "tool.delete": pgettext_lazy("history action", "tool.delete"),
    "agent.create": pgettext_lazy("history action", "agent.create"),
    "agent.update": pgettext_lazy("history action", "agent.update"),
    "agent.rename": pgettext_lazy("history action", "agent.rename"),
    "agent.delete": pgettext_lazy("history action", "agent.delete"),
    "agent.instructions": pgettext_lazy("history action", "agent.instructions"),
    "agent.attach_tool": pgettext_lazy("history action", "agent.attach_tool"),
    "callback.create": pgettext_lazy("history action", "callback.create"),
    "callback.update": pgettext_lazy("history action", "callback.update"),
    "callback.delete": pgettext_lazy("history action", "callback.delete"),
    "scenario.create": pgettext_lazy("history action", "scenario.create"),
    "scenario.update": pgettext_lazy("history action", "scenario.update"),
    "scenario.delete": pgettext_lazy("history action", "scenario.delete"),
    "scenario.pin": pgettext_lazy("history action", "scenario.pin"),
    "share.set": pgettext_lazy("history action", "share.set"),
    "share.remove": pgettext_lazy("history action", "share.remove"),
    "version.create": pgettext_lazy("history action", "version.create"),
    "version.restore": pgettext_lazy("history action", "version.restore"),
    "version.delete": pgettext_lazy("history action", "version.delete"),
    "version.label_set": pgettext_lazy("history action", "version.label_set"),
    "version.label_delete": pgettext_lazy("history action", "version.label_delete"),
}


# A callback's name in the history before it had no English in it: "before_model #0 of root".
_OLD_CALLBACK_NAME = re.compile(r"^(?P<kind>[a-z_]+) #(?P<order>\d+) of (?P<agent>.+)$")


def object_name_shown(name: str) -> str:
    """A history object's name as shown: an old English callback name in today's form."""
    found = _OLD_CALLBACK_NAME.match(name)
    if found is None:
        return name
    return f"{found['agent']} / {found['kind']} #{found['order']}"


# An operator's write in the admin (`agents.admin.writes.record`): `<model>.admin_<verb>`.
ADMIN_ACTION_LABELS = {
    "add": pgettext_lazy("history action", "%(object)s added in the admin"),
    "change": pgettext_lazy("history action", "%(object)s changed in the admin"),
    "delete": pgettext_lazy("history action", "%(object)s deleted in the admin"),
}


def action_label(action: str) -> str:
    """A history action (`variable.update`) in the reader's language (English: as stored)."""
    if action in ACTION_LABELS:
        return str(ACTION_LABELS[action])
    model_name, _dot, verb = action.partition(".admin_")
    if verb in ADMIN_ACTION_LABELS:
        from django.apps import apps

        try:
            model = apps.get_model("agents", model_name)
        except LookupError:
            return action
        return str(ADMIN_ACTION_LABELS[verb]) % {"object": model._meta.verbose_name}
    return action


class AuditEvent(models.Model):
    """Who changed what in an app, and when: one row per write (the app's history).

    `before`/`after` hold the changed object's fields (instructions, defaults,
    schemas, code…) as JSON; the app and the user may be deleted later, so their
    names are kept too.
    """

    app = models.ForeignKey(
        AgentApp,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="audit_events",
        verbose_name=_("app"),
    )
    app_name = models.CharField(max_length=APP_NAME_MAX_LENGTH, verbose_name=_("app name"))
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="audit_events",
        verbose_name=_("actor"),
    )
    actor_name = models.CharField(
        max_length=USERNAME_MAX_LENGTH, blank=True, verbose_name=_("actor name")
    )
    action = models.CharField(
        max_length=AUDIT_ACTION_MAX_LENGTH,
        help_text=_("e.g. variable.update"),
        verbose_name=_("action"),
    )
    object_type = models.CharField(
        max_length=AUDIT_OBJECT_TYPE_MAX_LENGTH, verbose_name=_("object type")
    )
    object_name = models.CharField(
        max_length=DISPLAY_NAME_MAX_LENGTH, blank=True, verbose_name=_("object name")
    )
    before = OrderedJSONField(null=True, blank=True, verbose_name=_("before"))
    after = OrderedJSONField(null=True, blank=True, verbose_name=_("after"))
    created_at = models.DateTimeField(
        auto_now_add=True, db_index=True, verbose_name=_("created at")
    )

    class Meta:
        verbose_name = _("history event")
        verbose_name_plural = _("history events")
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["app", "-created_at"], name="audit_app_recent")]

    def __str__(self) -> str:
        who = self.actor_name or gettext("system")
        return f"{who}: {action_label(self.action)} {object_name_shown(self.object_name)}".strip()
