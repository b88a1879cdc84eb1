"""WSGI entry point (gunicorn designer.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "designer.settings")
application = get_wsgi_application()
