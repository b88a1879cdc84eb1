"""manage.py load_demo: the seeds' demo apps and a demo sign-in (safe to run twice)."""

from __future__ import annotations

from django.utils.translation import gettext as _

from agents.demo import DEMO_PASSWORD, DEMO_USERNAME, ensure_demo_user, load_demo
from agents.management.language import LocalizedCommand


class Command(LocalizedCommand):
    help = "Load the demo apps (shopping assistant, bank demo) and ensure the demo sign-in exists."

    def handle(self, *args: object, **options: object) -> None:
        user = ensure_demo_user()
        apps = load_demo(user)
        names = ", ".join(a.name for a in apps)
        self.stdout.write(self.style.SUCCESS(_("Demo apps ready: %(names)s") % {"names": names}))
        self.stdout.write(
            _("Sign in with  username: %(username)s   password: %(password)s")
            % {"username": DEMO_USERNAME, "password": DEMO_PASSWORD}
        )
