"""Django app config for the domain."""

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AgentsConfig(AppConfig):
    name = "agents"
    verbose_name = _("Agent apps")

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_in

        from agents import checks  # noqa: F401 - registers the sandbox's system check
        from agents.i18n import remember_on_sign_in
        from agents.services import job_kinds  # noqa: F401 - registers the built-in job kinds

        user_logged_in.connect(remember_on_sign_in, dispatch_uid="statecraft-user-language")
