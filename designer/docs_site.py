"""The documentation site (``make docs`` builds ``docs/`` into ``DOCS_SITE_DIR``) served at
``/docs/`` by WhiteNoise, from the app: no CDN, no other server.

It sits before the Content-Security-Policy middleware: the site is MkDocs Material's static
pages, whose theme script reads its configuration from an inline script, which the app's
own policy (scripts only from files) would refuse. Nothing of the app runs on these pages:
no session, no form, no user data.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils.html import escape
from django.utils.translation import get_language
from whitenoise.base import WhiteNoise
from whitenoise.middleware import WhiteNoiseMiddleware

PREFIX = "/docs/"
# The languages the site is built in besides English (mkdocs.yml's i18n plugin: /docs/fr/…).
SITE_LANGUAGES = ("fr", "de")


def docs_url(page: str = "", language: str | None = None) -> str:
    """The URL of a page of the site (``"designer/live-models"``, ``""`` for the home) in
    the reader's language: French and German have their own tree, English is the root."""
    language = (language or get_language() or "en").split("-")[0]
    base = PREFIX + (f"{language}/" if language in SITE_LANGUAGES else "")
    page = page.strip("/")
    if not page:
        return base
    path, _, anchor = page.partition("#")
    # MkDocs' directory URLs: designer/index.md is /docs/designer/.
    path = path.removesuffix("index").rstrip("/")
    return base + (f"{path}/" if path else "") + (f"#{anchor}" if anchor else "")


class DocsSiteMiddleware(WhiteNoise):
    def __init__(self, get_response):
        self.get_response = get_response
        self.root = Path(settings.DOCS_SITE_DIR)
        super().__init__(
            application=None,
            # Development: a rebuilt site shows at the next request; production reads once.
            autorefresh=settings.DEBUG,
            max_age=0 if settings.DEBUG else 300,
            index_file=True,
        )
        if self.root.is_dir() or self.autorefresh:
            self.add_files(str(self.root), prefix=PREFIX)

    def __call__(self, request: HttpRequest) -> HttpResponse:
        path = request.path_info
        if path != PREFIX.rstrip("/") and not path.startswith(PREFIX):
            return self.get_response(request)
        found = self.find_file(path) if self.autorefresh else self.files.get(path)
        if found is not None:
            return WhiteNoiseMiddleware.serve(found, request)
        if not (self.root / "index.html").is_file():
            return not_built()
        return self.get_response(request)


def not_built() -> HttpResponse:
    """/docs/ before ``make docs``: say so and how, rather than a bare 404."""
    body = (
        "<!doctype html><meta charset='utf-8'><title>Statecraft documentation</title>"
        "<body style='font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:3rem auto'>"
        "<h1>The documentation is not built here</h1>"
        "<p>Build it with <code>make docs</code> (it writes "
        f"<code>{escape(str(settings.DOCS_SITE_DIR))}</code>), then reload this page. "
        "The same pages are the Markdown files of <code>docs/</code> in the repository.</p>"
    )
    return HttpResponse(body, status=404)
