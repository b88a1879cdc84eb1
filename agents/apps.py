"""Django app config for the domain."""

from django.apps import AppConfig


class AgentsConfig(AppConfig):
    name = "agents"
    verbose_name = "Agent apps"

    def ready(self) -> None:
        from agents import checks  # noqa: F401 - registers the sandbox's system check
        from agents.services import job_kinds  # noqa: F401 - registers the built-in job kinds
