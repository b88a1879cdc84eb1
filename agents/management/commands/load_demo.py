"""manage.py load_demo: the seeds' demo apps and a demo sign-in (safe to run twice)."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from agents.demo import DEMO_PASSWORD, DEMO_USERNAME, ensure_demo_user, load_demo


class Command(BaseCommand):
    help = "Load the demo apps (shopping assistant, bank demo) and ensure the demo sign-in exists."

    def handle(self, *args: object, **options: object) -> None:
        user = ensure_demo_user()
        apps = load_demo(user)
        self.stdout.write(self.style.SUCCESS(f"Demo apps ready: {', '.join(a.name for a in apps)}"))
        self.stdout.write(f"Sign in with  username: {DEMO_USERNAME}   password: {DEMO_PASSWORD}")
