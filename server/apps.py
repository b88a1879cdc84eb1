"""Django app config for the processes' concerns (``server``)."""

from django.apps import AppConfig


class ServerConfig(AppConfig):
    name = "server"

    def ready(self) -> None:
        from django.tasks.signals import task_enqueued

        from server.wakeup import wake_workers

        # A queued job wakes the idle database-queue workers (server/wakeup.py).
        task_enqueued.connect(wake_workers, dispatch_uid="statecraft-wake-workers")
